"""GPU mip chain against CPU implementations, measured in the same run.

    python benchmarks/mips.py [--sizes 4096 8192] [--repeat 3]
    python benchmarks/mips.py --paths [--formats r8unorm rg8unorm rgb10a2unorm r16float rg16float]

gputex: box filter, sRGB data filtered in linear light, weighted alpha (the defaults),
GPU time from timestamp queries where the adapter has them, and wall time to the
chain being done. Baselines:

* numpy, the same filter (exact for power-of-two sizes: 2x2 means in linear light,
  alpha-weighted colour, rounded to nearest) - equivalent;
* Pillow ``reduce(2)`` chain and OpenCV ``INTER_AREA`` chain (if installed) -
  NOT equivalent: gamma space, no alpha weighting, no odd-size weights.

``--paths`` times, for formats that are renderable but not storage-capable, the compute path
(reduce pass + pack into a buffer + ``copy_buffer_to_texture``) against the render path
(fragment shader drawing each level into the texture), same chain, same run
(``GPUTEX_MIPS_PATH`` picks the path; the default is set from these numbers).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.mips import generate_mips  # noqa: E402


def numpy_chain(a: np.ndarray) -> list[np.ndarray]:
    """Box mips, linear light, weighted alpha, in numpy (power-of-two sizes)."""
    lut = np.where(np.arange(256) / 255 <= 0.04045, np.arange(256) / 255 / 12.92,
                   ((np.arange(256) / 255 + 0.055) / 1.055) ** 2.4).astype(np.float32)
    alpha = a[..., 3:].astype(np.float32) / 255
    lin = np.concatenate([lut[a[..., :3]] * alpha, alpha], -1)
    out = []
    while lin.shape[0] > 1 or lin.shape[1] > 1:
        h, w = lin.shape[:2]
        lin = lin.reshape(max(1, h // 2), min(2, h), max(1, w // 2), min(2, w), 4).mean(axis=(1, 3))
        al = lin[..., 3:]
        rgb = np.divide(lin[..., :3], al, out=np.zeros_like(lin[..., :3]), where=al > 0)
        srgb = np.where(rgb <= 0.0031308, rgb * 12.92, 1.055 * np.power(rgb, 1 / 2.4) - 0.055)
        out.append(np.floor(np.concatenate([srgb, al], -1) * 255 + 0.5).astype(np.uint8))
    return out


def pillow_chain(a: np.ndarray) -> None:
    from PIL import Image

    im = Image.fromarray(a)
    while im.width > 1 or im.height > 1:
        im = im.reduce(2)


def opencv_chain(a: np.ndarray):
    import cv2

    img = a
    while img.shape[0] > 1 or img.shape[1] > 1:
        img = cv2.resize(img, (max(1, img.shape[1] // 2), max(1, img.shape[0] // 2)), interpolation=cv2.INTER_AREA)


def best(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        t.append(time.perf_counter() - t0)
    return min(t), r


def sample(fmt, n: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    channels = 4 if fmt.packed else fmt.channels
    if fmt.kind == "float":
        return rng.random((n, n, channels), np.float32)
    return rng.integers(0, 256, (n, n, channels), np.uint8)


def compare_paths(gpu, formats: list[str], sizes: list[int], repeat: int) -> None:
    from gputex.formats import get_format

    for name in formats:
        fmt = get_format(name)
        for n in sizes:
            a = sample(fmt, n)
            line = f"{name:>14} {n}x{n}:"
            first = None
            for path in ("compute", "render"):
                os.environ["GPUTEX_MIPS_PATH"] = path
                tex = gputex.upload(gpu, gputex.from_array(a), name, mips=True)  # warms pipelines

                def chain():
                    r = generate_mips(tex, measure=True)
                    gpu.wait()
                    return r

                wall, report = best(chain, repeat)
                reports = [chain() for _ in range(repeat)] if report.gpu_ns is not None else []
                got = [gputex.capture(tex, lv).tobytes() for lv in range(1, tex.levels)]
                first = first or got
                line += (f"  {path} wall {wall * 1e3:7.2f} ms" +
                         (f" GPU {min(r.gpu_ns for r in reports) / 1e6:.3f} ms" if reports else "") +
                         ("" if got == first else " (LEVELS DIFFER)"))
                tex.destroy()
            print(line, flush=True)
    os.environ.pop("GPUTEX_MIPS_PATH", None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-numpy", action="store_true")
    ap.add_argument("--format", default="rgba8unorm-srgb",
                    help="rgba16unorm times the float64 path (no CPU baselines then)")
    ap.add_argument("--paths", action="store_true", help="compute against render path (see above)")
    ap.add_argument("--formats", nargs="+",
                    default=["r8unorm", "rg8unorm", "rgb10a2unorm", "r16float", "rg16float"])
    args = ap.parse_args()
    eight = args.format.startswith(("rgba8", "bgra8"))
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; timestamp queries: {gpu.has_feature('timestamp-query')}")
    if args.paths:
        compare_paths(gpu, args.formats, args.sizes, args.repeat)
        return
    for n in args.sizes:
        rng = np.random.default_rng(1)
        a = rng.integers(0, 256 if eight else 65536, (n, n, 4), np.uint8 if eight else np.uint16)
        tex = gputex.upload(gpu, gputex.from_array(a), args.format, mips=True)  # warms pipelines

        def chain():
            r = generate_mips(tex, measure=True)
            gpu.wait()
            return r

        wall, report = best(chain, args.repeat)
        reports = [chain() for _ in range(args.repeat)] if report.gpu_ns is not None else []
        print(f"\n{n}x{n} {args.format}, {tex.levels} levels" + (" (float64 path)" if report.exact else ""))
        print(f"  gputex GPU chain       wall {wall * 1e3:9.2f} ms" +
              (f"   GPU time {min(r.gpu_ns for r in reports) / 1e6:.3f} ms (timestamps, best of {len(reports)})"
               if reports else ""))
        if reports:
            r = min(reports, key=lambda r: r.gpu_ns)
            inside = sum(r.pass_ns)
            print(f"    inside compute passes {inside / 1e6:.3f} ms (per pass, ms: "
                  + " ".join(f"{p / 1e6:.3f}" for p in r.pass_ns[:6]) + " ...); "
                  f"copies and barriers between passes {(r.gpu_ns - inside) / 1e6:.3f} ms")
        if not eight:
            tex.destroy()
            continue
        if not args.skip_numpy:
            t_np, levels = best(lambda: numpy_chain(a), 1)
            got = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
            worst = max(int(np.abs(g.astype(int) - r.astype(int)).max()) for g, r in zip(got, levels))
            print(f"  numpy, same filter     wall {t_np * 1e3:9.2f} ms   -> gputex is {t_np / wall:7.1f}x faster "
                  f"(max difference {worst} LSB)")
        t_pil, _ = best(lambda: pillow_chain(a), 1)
        print(f"  Pillow reduce(2) chain wall {t_pil * 1e3:9.2f} ms   (NOT equivalent: gamma space, no alpha weighting)")
        try:
            t_cv, _ = best(lambda: opencv_chain(a), 1)
            print(f"  OpenCV INTER_AREA      wall {t_cv * 1e3:9.2f} ms   (NOT equivalent: gamma space, no alpha weighting)")
        except ImportError:
            print("  OpenCV: not installed")
        tex.destroy()


if __name__ == "__main__":
    main()
