"""Compare two textures already on the GPU against numpy on the same host, same run.

    python benchmarks/compare.py [--size 8192] [--repeat 3]

Both compute the same definitions: per-channel max |d|, MAE, MSE, PSNR, differing texel
count, and SSIM of luminance (Gaussian 11x11, sigma 1.5; numpy uses scipy.ndimage when
installed, else a separable filter of its own). The GPU figure includes the readback of
the summary (a few hundred bytes), nothing else.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.compare import compare  # noqa: E402


def gaussian(img: np.ndarray) -> np.ndarray:
    try:
        from scipy.ndimage import gaussian_filter

        return gaussian_filter(img, sigma=1.5, truncate=3.5, mode="reflect")
    except ImportError:
        w = np.exp(-np.arange(-5, 6) ** 2 / 4.5)
        w /= w.sum()
        p = np.pad(img, 5, mode="symmetric")
        rows = sum(w[i] * p[:, i:i + img.shape[1]] for i in range(11))
        return sum(w[i] * rows[i:i + img.shape[0], :] for i in range(11))


def numpy_compare(a: np.ndarray, b: np.ndarray) -> dict:
    d = np.abs(a.astype(np.int32) - b.astype(np.int32))
    flat = d.reshape(-1, d.shape[2]).astype(np.float64)
    mse = (flat ** 2).mean(0)
    res = {"max": flat.max(0), "mae": flat.mean(0), "mse": mse,
           "psnr": [10 * math.log10(255 ** 2 / m) if m else None for m in mse],
           "count": int((d != 0).any(2).sum())}
    x = (a[..., :3].astype(np.float64) / 255) @ [0.299, 0.587, 0.114]
    y = (b[..., :3].astype(np.float64) / 255) @ [0.299, 0.587, 0.114]
    mx, my = gaussian(x), gaussian(y)
    vx, vy, vxy = gaussian(x * x) - mx * mx, gaussian(y * y) - my * my, gaussian(x * y) - mx * my
    s = ((2 * mx * my + 1e-4) * (2 * vxy + 9e-4)) / ((mx * mx + my * my + 1e-4) * (vx + vy + 9e-4))
    res["ssim"] = float(s[5:-5, 5:-5].mean())
    return res


def main() -> None:
    import wgpu

    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.size
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n, 4), np.uint8)
    b = a.copy()
    b[::7, ::3] = rng.integers(0, 256, b[::7, ::3].shape, np.uint8)
    tb = wgpu.TextureUsage.TEXTURE_BINDING
    ta = gputex.upload(gpu, gputex.from_array(a, "linear"), "rgba8unorm", usage=tb)
    tbb = gputex.upload(gpu, gputex.from_array(b, "linear"), "rgba8unorm", usage=tb)
    compare(ta, tbb)  # warm: pipelines
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        r = compare(ta, tbb)
        times.append(time.perf_counter() - t0)
    t_gpu = min(times)
    t0 = time.perf_counter()
    ref = numpy_compare(a, b)
    t_np = time.perf_counter() - t0
    print(f"{n}x{n} RGBA8: gputex compare {t_gpu * 1e3:.1f} ms (read back {r.readback_bytes} bytes); "
          f"numpy {t_np * 1e3:.0f} ms -> {t_np / t_gpu:.1f}x")
    print(f"  gputex: max {r.max_abs_diff} MAE {[round(x, 6) for x in r.mae]} PSNR {r.psnr_all:.2f} dB, "
          f"{r.differing_texels} differ, SSIM {r.ssim:.6f}")
    print(f"  numpy:  max {[float(x) for x in ref['max']]} MAE {[round(float(x), 6) for x in ref['mae']]}, "
          f"{ref['count']} differ, "
          f"SSIM {ref['ssim']:.6f}")


if __name__ == "__main__":
    main()
