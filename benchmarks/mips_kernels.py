"""Kaiser and Lanczos mip chains: GPU time against the box chain and the speed of light, same run.

    python benchmarks/mips_kernels.py [--sizes 4096 8192 4095x4097] [--filters kaiser lanczos]
                                      [--repeat 7] [--json OUT.json]
    python benchmarks/mips_kernels.py --quality [--sizes 257x131 1000x999]

For each size, an ``rgba8unorm-srgb`` noise image with random alpha (weighted alpha, the
default, so the float64 chain carries the premultiplied and the plain colour) is uploaded and
timed with ``benchmarks/mips.py``'s machinery: ``WARM_MS`` of speed-of-light dispatches
(``mip_sol.wgsl``: read level 0 once, write every level once) first, then every measured chain is
queued behind enough speed-of-light dispatches that the GPU is still busy when the CPU has
encoded and submitted it; a timestamp pass just before and one just after the chain's submission
bound it (``B.begin - A.end``: every pass and copy of the chain). The figure is the median of
``--repeat`` chains. Printed per chain: the path (``float64``: ``mip_exact_kernel.wgsl``'s
family; ``float``: the float32 chain), GPU ms, the ratio to the speed of light and to the box
chain (default precision: the integer chain), the wall time of the first chain of that size
(the CPU computes the taps: what one image costs) and of a warm one, and a hash of every level's
bytes (to compare two commits' outputs).

``--quality`` prints, per size, filter and level, max / mean |code - exact| in LSB against the
float64 reference (``tests/reference.py``) and the texels that are not the reference rounded to
nearest, for the same images (small sizes: the reference is a dense numpy matrix product).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.mips import generate_mips  # noqa: E402


def _bench_mips():
    spec = importlib.util.spec_from_file_location("bench_mips", os.path.join(ROOT, "benchmarks", "mips.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bm = _bench_mips()


def image(w: int, h: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (h, w, 4), np.uint8)
    a[..., 3] = np.where(rng.random((h, w)) < 0.2, 0, a[..., 3])  # transparent texels too
    return a


def level_hash(tex) -> str:
    h = hashlib.sha256()
    for lv in range(1, tex.levels):
        h.update(gputex.capture(tex, lv).tobytes())
    return h.hexdigest()[:16]


def gpu_median(gpu, sol, run, repeat: int, encode_s: float) -> float:
    """Median GPU ns of ``run()`` (which records and submits a chain), bounded by two timestamp
    passes, queued behind speed-of-light work that outlasts the CPU's encoding."""
    from gputex.kernels import timestamps

    out = []
    for _ in range(repeat):
        sol.rewarm(max(bm.REWARM_MS, 2e3 * encode_s))
        q = timestamps(gpu, 2)
        bm.marker(gpu, q)
        run()
        bm.marker(gpu, q)
        enc = gpu.device.create_command_encoder()
        q.resolve(enc)
        gpu.device.queue.submit([enc.finish()])
        total, each = q.read()
        out.append(total - sum(each))
    return statistics.median(out)


def cache_taps() -> None:
    """Keep each axis's taps once computed (a commit whose ``kernel_taps`` does not cache them
    spends seconds of CPU per 8192 axis in it), so the warm figures time the GPU and the encoding."""
    import functools

    from gputex.mips import exact

    if not hasattr(exact.kernel_taps, "cache_info"):
        exact.kernel_taps = functools.lru_cache(maxsize=None)(exact.kernel_taps)


def clear_taps() -> None:
    """Forget the cached taps: the first chain of a size computes its own (what one image costs)."""
    from gputex.mips import exact, filters

    for fn in (exact.kernel_taps, filters.kernel_taps):
        getattr(fn, "cache_clear", lambda: None)()


def timings(gpu, args) -> list[dict]:
    rows = []
    for text in args.sizes:
        w, h = bm.parse_size(text)
        a = image(w, h)
        tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True)
        sol = bm.SpeedOfLight(gpu, tex)
        s = bm.speed_of_light(gpu, sol, args.repeat)
        sol_ns = s["median"]
        print(f"\n{w}x{h} rgba8unorm-srgb, weighted alpha, {tex.levels} levels; speed of light "
              f"{sol_ns / 1e6:.4f} ms", flush=True)
        box_ns = None
        for filt in ["box"] + args.filters:
            clear_taps()
            t0 = time.perf_counter()
            report = generate_mips(tex, filter=filt)
            gpu.wait()
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            generate_mips(tex, filter=filt)
            gpu.wait()
            warm = time.perf_counter() - t0
            sol.warm()
            ns = gpu_median(gpu, sol, lambda: generate_mips(tex, filter=filt), args.repeat, warm)
            box_ns = box_ns or ns
            digest = level_hash(tex)
            print(f"  {filt:>8} ({report.precision:>7}) GPU {ns / 1e6:9.4f} ms  {ns / sol_ns:7.1f}x speed of light  "
                  f"{ns / box_ns:6.1f}x box   wall first {first * 1e3:8.1f} ms, warm {warm * 1e3:7.1f} ms   "
                  f"levels {digest}", flush=True)
            rows.append({"size": [w, h], "filter": filt, "path": report.precision, "gpu_ms": ns / 1e6,
                         "sol_ms": sol_ns / 1e6, "ratio_to_sol": ns / sol_ns, "ratio_to_box": ns / box_ns,
                         "wall_first_ms": first * 1e3, "wall_warm_ms": warm * 1e3, "levels_sha256": digest})
        sol.destroy()
        tex.destroy()
    return rows


def quality(gpu, args) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference import filter_levels

    for text in args.sizes:
        w, h = bm.parse_size(text)
        a = image(w, h)
        for filt in args.filters:
            tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, filter=filt)
            got = [gputex.capture(tex, lv).astype(np.float64) for lv in range(1, tex.levels)]
            tex.destroy()
            ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted", filter=filt)
            for lv, (g, r) in enumerate(zip(got, ref), start=1):
                exact = np.clip(r, 0, 1) * 255
                d = np.abs(g - exact)
                off = int((g != np.floor(exact + 0.5)).sum())
                print(f"{w}x{h} {filt:>8} level {lv:2}: max {d.max():.4f} mean {d.mean():.4f} LSB, "
                      f"{off} of {g.size} not rounded to nearest", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", nargs="+", default=["4096", "8192", "4095x4097"])
    p.add_argument("--filters", nargs="+", default=["kaiser", "lanczos"])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json")
    p.add_argument("--quality", action="store_true")
    args = p.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; shader-f64: {gpu.has_feature('shader-f64')}; commit {bm.commit()}", flush=True)
    if args.quality:
        quality(gpu, args)
        return
    if not gpu.has_feature("timestamp-query"):
        sys.exit("needs timestamp queries")
    cache_taps()
    rows = timings(gpu, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": bm.commit(), "adapter": gpu.name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
