"""Box mips of float formats: the float-float chain (``mip_ff.wgsl``, correctly rounded without
float64) against the float32 chain (the named baseline) and the float64 chain, same run.

    python benchmarks/mips_float.py [--sizes 2048 4096 4095x4097] [--formats rgba32float rgba16float]
                                    [--repeat 5] [--json OUT.json]
    python benchmarks/mips_float.py --hashes OUT.json [--against lavapipe.json]

For each size and format, a noise image in [0, 1) with 30% transparent texels (weighted alpha)
is uploaded; each chain is timed as ``benchmarks/mips_kernels.py`` times one (queued behind
speed-of-light work, two timestamp passes around it, median of ``--repeat``). Printed per chain:
the path the report names, GPU ms (``--wall``: the median wall time of a chain and a wait, for CPU
adapters, where the speed-of-light queue would hold seconds of work), the ratio to the float32 chain (``float32``: ``precision=
"float32"``) and to the speed of light, and a hash of every level's bytes. ``float-float``
runs with ``GPUTEX_MIPS_F64=0`` (what a device without ``shader-f64`` runs for 32-bit floats;
16-bit floats take it everywhere); ``float64`` where the device has ``shader-f64`` (32-bit).

``--hashes`` writes the float-float chains' level hashes for a matrix of formats, sizes and
alpha modes (what "the same bytes on every adapter" is checked by: run it on two adapters and
``--against`` the other's file). ``--loop-limit N`` runs with another chunk size of the footprints
(``mips.exact.EXACT_LOOP_LIMIT``; the float-float bytes may then differ where a value lies near a
midpoint).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.mips import generate_mips  # noqa: E402


@functools.cache
def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, "benchmarks", f"{name}.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def image(w: int, h: int, fmt: str, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = 4 if fmt.startswith("rgba") else (2 if fmt.startswith("rg") else 1)
    a = rng.random((h, w, c)).astype(np.float32)
    if c > 1:
        a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, a[..., -1])
    if "16float" in fmt:
        a = a.astype(np.float16).astype(np.float32)
    return a


def level_hash(tex) -> str:
    """``mips_kernels.py``'s hash of every level >= 1."""
    return _load("mips_kernels").level_hash(tex)


def wall_median(gpu, run, repeat: int) -> float:
    """Median wall ns of ``run()`` then a wait for the GPU (``--wall``: CPU adapters, where the
    speed-of-light queue would hold seconds of work)."""
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        gpu.wait()
        out.append((time.perf_counter() - t0) * 1e9)
    return sorted(out)[len(out) // 2]


def timings(gpu, args) -> list[dict]:
    mk = _load("mips_kernels")
    bm = mk.bm
    rows = []
    for text in args.sizes:
        w, h = bm.parse_size(text)
        for fmt in args.formats:
            a = image(w, h, fmt)
            tex = gputex.upload(gpu, gputex.from_array(a, "linear"), fmt, mips=True, precision="float32")
            sol = None if args.wall else bm.SpeedOfLight(gpu, tex)
            sol_ns = bm.speed_of_light(gpu, sol, args.repeat)["median"] if sol else float("nan")
            print(f"\n{w}x{h} {fmt}, weighted alpha, {tex.levels} levels; speed of light {sol_ns / 1e6:.4f} ms",
                  flush=True)
            variants = [("float32", "float32", "1"), ("float-float", "exact", "0")]
            if fmt.endswith("32float") and gpu.has_feature("shader-f64"):
                variants.append(("float64", "exact", "1"))
            base_ns = None
            for label, precision, f64 in variants:
                os.environ["GPUTEX_MIPS_F64"] = f64
                t0 = time.perf_counter()
                report = generate_mips(tex, precision=precision)
                gpu.wait()
                first = time.perf_counter() - t0
                t0 = time.perf_counter()
                generate_mips(tex, precision=precision)
                gpu.wait()
                warm = time.perf_counter() - t0
                if sol:
                    sol.warm()
                    ns = mk.gpu_median(gpu, sol, lambda: generate_mips(tex, precision=precision), args.repeat, warm)
                else:
                    ns = wall_median(gpu, lambda: generate_mips(tex, precision=precision), args.repeat)
                base_ns = base_ns or ns
                digest = level_hash(tex)
                print(f"  {label:>12} ({report.precision:>11}) {'wall' if args.wall else 'GPU'} {ns / 1e6:9.4f} ms  {ns / base_ns:6.2f}x float32  "
                      f"{ns / sol_ns:7.1f}x speed of light   wall first {first * 1e3:8.1f} ms, warm "
                      f"{warm * 1e3:7.1f} ms   levels {digest}", flush=True)
                rows.append({"size": [w, h], "format": fmt, "chain": label, "path": report.precision,
                             "gpu_ms": ns / 1e6, "ratio_to_float32": ns / base_ns, "sol_ms": sol_ns / 1e6,
                             "wall_first_ms": first * 1e3, "wall_warm_ms": warm * 1e3, "levels_sha256": digest})
            os.environ.pop("GPUTEX_MIPS_F64", None)
            if sol:
                sol.destroy()
            tex.destroy()
    return rows


HASH_FORMATS = ("rgba32float", "rg32float", "r32float", "rgba16float", "rg16float")
HASH_SIZES = ((1, 1), (2, 3), (7, 13), (61, 37), (64, 64), (255, 2), (257, 131), (1000, 999))


def hashes(gpu) -> dict[str, str]:
    os.environ["GPUTEX_MIPS_F64"] = "0"
    out = {}
    for fmt in HASH_FORMATS:
        for w, h in HASH_SIZES:
            for alpha in ("weighted", "straight"):
                a = image(w, h, fmt, seed=w * 7919 + h)
                tex = gputex.upload(gpu, gputex.from_array(a, "linear"), fmt, mips=True, alpha=alpha, precision="exact")
                out[f"{fmt} {w}x{h} {alpha}"] = level_hash(tex)
                tex.destroy()
    os.environ.pop("GPUTEX_MIPS_F64", None)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="+", default=["2048", "4096", "4095x4097"])
    p.add_argument("--formats", nargs="+", default=["rgba32float", "rgba16float"])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--wall", action="store_true", help="time each chain by its wall time, no speed-of-light queue "
                   "(CPU adapters such as lavapipe)")
    p.add_argument("--loop-limit", type=int, help="mips.exact.EXACT_LOOP_LIMIT for this run (texels an invocation "
                   "sums before the footprint goes in chunks)")
    p.add_argument("--hashes", metavar="OUT", help="write the float-float chains' level hashes here, and stop")
    p.add_argument("--against", help="with --hashes: another adapter's file to compare with")
    args = p.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}", flush=True)
    if args.loop_limit:
        from gputex.mips import exact

        exact.EXACT_LOOP_LIMIT = args.loop_limit
        print(f"EXACT_LOOP_LIMIT {args.loop_limit}", flush=True)
    if args.hashes:
        got = hashes(gpu)
        with open(args.hashes, "w") as f:
            json.dump({"adapter": gpu.name, "cases": got}, f, indent=1, sort_keys=True)
        if args.against:
            with open(args.against) as f:
                other = json.load(f)["cases"]
            same = [k for k in got if other.get(k) == got[k]]
            print(f"{len(same)} of {len(got)} cases identical to {args.against}")
            for k in sorted(set(got) - set(same)):
                print(f"  differs: {k}")
        else:
            print(f"{len(got)} cases written to {args.hashes}")
        return
    rows = timings(gpu, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
