"""Kaiser and Lanczos mip chains: GPU time against the box chain and the speed of light, same run.

    python benchmarks/mips_kernels.py [--sizes 4096 8192 4095x4097] [--filters kaiser lanczos]
                                      [--repeat 7] [--json OUT.json]
    python benchmarks/mips_kernels.py --quality [--sizes 257x131 1000x999] [--wraps clamp mirror]

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
bytes (to compare two commits' outputs). ``--shaders`` also times the float64 chain with each
of its shaders forced (``GPUTEX_MIPS_KERNEL``: ``sep``, ``mip_exact_sep.wgsl``; ``2d``, the
2D-footprint ``mip_exact_kernel.wgsl`` that ran everywhere before);
``--with-float32`` the float32 chain (``mip_reduce.wgsl``, what runs without ``shader-f64``): by
separable tiles where a level's rows fit (``f32``, the default) and by each texel's 2D footprint
(``f32 2d``, ``mips.chain.TILES`` False; trees from before the tiles have only the latter), and
with its work textures kept for the next chain whatever their size (``f32 keep``:
``mips.chain.REUSE_MAX_BYTES`` unbounded; by default those over 1 GiB are made for each chain,
over 64 MB before the thirteenth session).

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

    for fn in (exact.kernel_taps, filters.kernel_taps, getattr(filters, "axis_words", None)):
        getattr(fn, "cache_clear", lambda: None)()


def timings(gpu, args) -> list[dict]:
    """Each size's chains (what the module docstring says); the float32 variants' settings
    (``mips.chain.TILES``, ``REUSE_MAX_BYTES``) are set back afterwards."""
    from gputex.mips import chain as mchain

    saved = getattr(mchain, "TILES", None), mchain.REUSE_MAX_BYTES
    try:
        return _timings(gpu, args, saved[1])
    finally:
        if hasattr(mchain, "TILES"):
            mchain.TILES = saved[0]
        mchain.REUSE_MAX_BYTES = saved[1]


def _timings(gpu, args, reuse: int) -> list[dict]:
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
        from gputex.mips import chain as mchain
        from gputex.mips import exact

        shaders = getattr(exact, "KERNEL_SHADERS", ())
        variants = [("box", "box", None, "exact")] + [(f, f, None, "exact") for f in args.filters]
        if args.shaders:  # each float64 kernel shader, whatever the adapter's default
            variants += [(f, f"{f} {sh}", sh, "exact") for sh in shaders for f in args.filters]
        if args.with_float32:
            variants += [(f, f + " f32", None, "float32") for f in args.filters]
            if hasattr(mchain, "TILES"):  # the float32 chain's 2D footprint, where it has tiles
                variants += [(f, f + " f32 2d", "f32-2d", "float32") for f in args.filters]
            # its work textures kept for the next chain whatever their size (REUSE_MAX_BYTES)
            variants += [(f, f + " f32 keep", "f32-keep", "float32") for f in args.filters]
        for filt, label, shader, precision in variants:
            if hasattr(mchain, "TILES"):
                mchain.TILES = False if shader == "f32-2d" else None
            mchain.REUSE_MAX_BYTES = 1 << 40 if shader == "f32-keep" else reuse
            if shader and not shader.startswith("f32-"):
                os.environ["GPUTEX_MIPS_KERNEL"] = shader
            clear_taps()
            t0 = time.perf_counter()
            report = generate_mips(tex, filter=filt, precision=precision)
            gpu.wait()
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            generate_mips(tex, filter=filt, precision=precision)
            gpu.wait()
            warm = time.perf_counter() - t0
            sol.warm()
            ns = gpu_median(gpu, sol, lambda: generate_mips(tex, filter=filt, precision=precision), args.repeat,
                            warm)
            box_ns = box_ns or ns
            timed = generate_mips(tex, filter=filt, precision=precision, measure=True)  # per pass, where the chain times them
            gpu.wait()
            digest = level_hash(tex)
            os.environ.pop("GPUTEX_MIPS_KERNEL", None)
            print(f"  {label:>14} ({report.precision:>7}) GPU {ns / 1e6:9.4f} ms  {ns / sol_ns:7.1f}x speed of light  "
                  f"{ns / box_ns:6.1f}x box   wall first {first * 1e3:8.1f} ms, warm {warm * 1e3:7.1f} ms   "
                  f"levels {digest}", flush=True)
            if timed.pass_ns and filt != "box":
                print(f"{'':18}passes (ms): {' '.join(f'{t / 1e6:.4f}' for t in timed.pass_ns)}", flush=True)
            rows.append({"size": [w, h], "filter": label, "path": report.precision, "gpu_ms": ns / 1e6,
                         "sol_ms": sol_ns / 1e6, "ratio_to_sol": ns / sol_ns, "ratio_to_box": ns / box_ns,
                         "wall_first_ms": first * 1e3, "wall_warm_ms": warm * 1e3, "levels_sha256": digest,
                         "pass_ms": [t / 1e6 for t in timed.pass_ns]})
        sol.destroy()
        tex.destroy()
    return rows


def quality(gpu, args) -> None:
    """Per size, filter and level, for the chain as it is and (where the separable shader exists)
    for the 2D-footprint shader it replaced, on the same image: max / mean |code - exact| (LSB),
    texels not the reference rounded to nearest, and texels where the two differ."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from gputex.mips import exact

    from reference import filter_levels

    def levels(a, filt, wrap, fmt):
        tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), fmt, mips=True, filter=filt, wrap=wrap)
        try:
            return [gputex.capture(tex, lv).astype(np.float64) for lv in range(1, tex.levels)]
        finally:
            tex.destroy()

    def stats(g, exact_):
        d = np.abs(g - exact_)
        return f"{d.max():.4f} / {d.mean():.4f}, {int((g != np.floor(exact_ + 0.5)).sum())}"

    sep = hasattr(exact, "KERNEL_SHADERS")
    os.environ["GPUTEX_MIPS_KERNEL"] = "sep"  # "now": the separable shader, whatever the adapter's default
    print("| size, filter, wrap, level | separable: max / mean LSB, not rounded to nearest |"
          + (" 2D footprint | texels that differ |" if sep else ""))
    for text in args.sizes:
        w, h = bm.parse_size(text)
        a = image(w, h)
        for filt in args.filters:
            for wrap in args.wraps:
                got = levels(a, filt, wrap, args.format)
                before = None
                if sep:
                    os.environ["GPUTEX_MIPS_KERNEL"] = "2d"
                    try:
                        before = levels(a, filt, wrap, args.format)
                    finally:
                        os.environ["GPUTEX_MIPS_KERNEL"] = "sep"
                ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted", filter=filt, wrap_mode=wrap)
                for lv, r in enumerate(ref, start=1):
                    e = np.clip(r, 0, 1) * 255
                    line = f"| {w}x{h} {filt} {wrap} {lv} | {stats(got[lv - 1], e)} |"
                    if before is not None:
                        line += f" {stats(before[lv - 1], e)} | {int((before[lv - 1] != got[lv - 1]).sum())} |"
                    print(line, flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", nargs="+", default=["4096", "8192", "4095x4097"])
    p.add_argument("--filters", nargs="+", default=["kaiser", "lanczos"])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json")
    p.add_argument("--quality", action="store_true")
    p.add_argument("--shaders", action="store_true",
                   help="also time each float64 kernel shader (sep, 2d) whatever the adapter's default")
    p.add_argument("--with-float32", action="store_true", help="also time the float32 chain (precision='float32')")
    p.add_argument("--wraps", nargs="+", default=["clamp"], help="--quality: wrap modes")
    p.add_argument("--format", default="rgba8unorm-srgb", help="--quality: texture format (8-bit rgba/bgra)")
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
