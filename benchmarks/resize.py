"""GPU resize (``--resize``) against CPU implementations, measured in the same run.

    python benchmarks/resize.py [--size 4096] [--targets 1000 2731 6000] [--repeat 3]

gputex: ``gputex.resize_texture`` of an uploaded rgba8unorm-srgb image (sRGB data filtered
in linear light, weighted alpha: the defaults), box and lanczos; wall time from the call to
the resized level being done on the GPU (``session.wait``), upload and capture excluded.
Baselines, same image, same target sizes:

* numpy float64, the same filter (separable box / lanczos matrices, linear light,
  alpha-weighted colour, rounded to nearest) - equivalent (gputex's float64 reference);
* Pillow ``Image.resize`` with ``BOX`` / ``LANCZOS`` - NOT equivalent: sRGB codes filtered
  as they are (gamma space), no alpha weighting.

Prints one line per (filter, target) with the times and gputex's speed-up over each baseline.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import numpy as np  # noqa: E402

import gputex  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_resize(a: np.ndarray, w: int, h: int, filt: str) -> np.ndarray:
    from reference import _finish, apply, box_matrix, kernel_matrix, to_canonical

    H, W = a.shape[:2]
    My, Mx = (box_matrix(H, h), box_matrix(W, w)) if filt == "box" else \
        (kernel_matrix(H, h, filt, "clamp"), kernel_matrix(W, w, filt, "clamp"))
    lin = to_canonical(a / 255, 4, True, "weighted")
    pm = apply(My, np.concatenate([lin[..., :3] * lin[..., 3:], lin[..., 3:]], -1), Mx)
    pl = apply(My, lin, Mx)
    al = pm[..., 3:]
    val = np.concatenate([np.where(al > 0, pm[..., :3] / np.where(al > 0, al, 1), pl[..., :3]), al], -1)
    return np.floor(np.clip(_finish(val, 4, True, False), 0, 1) * 255 + 0.5).astype(np.uint8)


def main() -> None:
    import wgpu
    from PIL import Image

    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096, help="source image side")
    ap.add_argument("--targets", type=int, nargs="+", default=[1000, 2731, 6000], help="target sides")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-numpy", action="store_true", help="the float64 reference is slow at large sizes")
    args = ap.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}")
    rng = np.random.default_rng(0)
    n = args.size
    a = rng.integers(0, 256, (n, n, 4), np.uint8)
    a[..., 3] = np.where(rng.random((n, n)) < 0.2, 0, 255)
    src = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb",
                        usage=wgpu.TextureUsage.TEXTURE_BINDING)
    pil = Image.fromarray(a)
    for filt, pil_filter in (("box", Image.BOX), ("lanczos", Image.LANCZOS)):
        for t in args.targets:
            def gpu_resize():
                out = gputex.resize_texture(src, t, t, filter=filt)
                gpu.wait()
                out.destroy()

            gpu_resize()  # compile the pipelines once
            g = best(gpu_resize, args.repeat)
            p = best(lambda: pil.resize((t, t), pil_filter), args.repeat)
            line = (f"{n}^2 -> {t}^2 {filt:8} gputex {g * 1000:9.2f} ms   Pillow {p * 1000:9.2f} ms "
                    f"({p / g:6.2f}x, not equivalent)")
            if not args.skip_numpy:
                r = best(lambda: numpy_resize(a, t, t, filt), 1)
                line += f"   numpy float64 {r * 1000:10.1f} ms ({r / g:7.1f}x, equivalent)"
            print(line, flush=True)
    src.destroy()


if __name__ == "__main__":
    main()
