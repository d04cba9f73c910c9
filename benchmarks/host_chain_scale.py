"""The host C engine's chain (and the PNG decode beside it) in N processes at once: why a decode
worker's chain takes longer on a 16-core host than alone (issue 13).

    python benchmarks/host_chain_scale.py [--procs 1 4 8 12 16] [--rounds 4] [--sizes 2048x2048 1537x1999]
                                          [--per-level] [--module SO ...] [--straight] [--kernels K]
    python benchmarks/host_chain_scale.py --kinds --module MAIN NEW

Each of N processes (forked after the imports, no GPU) decodes a photo-like PNG and makes its
chain with ``gputex.mips.cpu.host_chain`` on one thread (weighted alpha, the CLI's default, as a
batch's decode worker makes it; ``--straight``: straight alpha, what it measured in the H200 calls
of ``results/peer-ktx-h200-8d26dde.txt``, 1.8x faster than weighted at 8d26dde on the 2-core
machine), ``--rounds`` times, all starting together; per size it prints the median (and worst) time of the first round (a fresh process's
first chain: its pages new) and of the later ones, with minor page faults, user and system time per
chain, and two probes taken in each process just before each chain: ``spin`` (a fixed pure-Python
loop: the core's speed, so frequency and SMT, with no memory traffic) and ``copy`` (GB/s of a
32 MB numpy copy: the memory bandwidth one process gets while the others work). Also prints the
machine's cores, SMT siblings and transparent huge page settings. ``--module``: each build in
turn at each process count (the children load it after the fork); ``--json FILE``: one line per
(module, processes, size, first/later).
``--per-level``: instead, in this process, the best of 6 of the chain cut at levels 2, 3, 4 and
whole (where the time goes by level), for each ``--module`` (other builds of ``gputex/_mipcpu.c``,
e.g. other compiler flags or main's; default: the one gputex imports; a module named more than
once runs again in turn; a ``_mipcpu128`` build, the 128-bit sums, serves the sizes over 2^24
texels and leaves the others to the default), then each build's whole chain as a ratio to the first one's.
``--kinds``: every other kind of chain the engine serves (1, 2 and 4 channels, 8-bit sRGB and
linear, 16-bit linear, RGBA8 sRGB at 4096^2 and 4095x4097, an odd two-channel size, tiny sizes),
random opaque codes, weighted and straight, each ``--module`` in turn (best of 5, or of 200 for
the small ones), with each build's time as a ratio to the first's and whether their bytes agree.
``--alternate N`` (``--levels L``): the builds of ``--module`` alternated chain by chain in this
process, N chains each (cut at L levels), by the thread's CPU time: their best and median, and the
ratio of bests (for a machine that others load: h13odd's measurements).
``--kernels avx512|portable|generic``: the engine's RGBA8 kernels without VBMI, without AVX-512, or none
(``cpu.host_chain(kernels=)``; builds from before the option refuse it). Prints whether this CPU
runs the AVX-512 kernels (``cpu.simd()``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def _facts() -> str:
    out = [f"cores {os.cpu_count()}, affinity {len(os.sched_getaffinity(0))}"]
    try:
        sib = open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list").read().strip()
        out.append(f"cpu0 SMT siblings {sib}")
    except OSError:
        pass
    for name in ("enabled", "defrag"):
        try:
            out.append(f"THP {name}: {open(f'/sys/kernel/mm/transparent_hugepage/{name}').read().strip()}")
        except OSError:
            pass
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
        out.append(model)
    except (OSError, StopIteration):
        pass
    return "; ".join(out)


def _spin() -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(100000):
        x += i & 7
    return time.perf_counter() - t0


def _copy_gbs(src, dst) -> float:
    import numpy as np

    t0 = time.perf_counter()
    np.copyto(dst, src)
    return src.nbytes / (time.perf_counter() - t0) / 1e9


def _child(args) -> list[tuple]:
    paths, rounds, start, tag, weighted, so = args
    import numpy as np

    from gputex.decode import decode
    from gputex.layout import mip_count
    from gputex.mips import cpu

    if so:
        _use(cpu, so)
    src, dst = np.ones(4 << 20, np.uint64), np.zeros(4 << 20, np.uint64)  # 32 MB, pages mapped before the start
    dst[:] = 1
    while time.time() < start:  # all processes begin together
        time.sleep(0.0005)
    rows = []
    for r in range(rounds):
        for path in paths:
            t0 = time.perf_counter()
            img = decode(path)
            t1 = time.perf_counter()
            spin, gbs = _spin(), _copy_gbs(src, dst)
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            t2 = time.perf_counter()
            h, w = img.pixels.shape[:2]
            cpu.host_chain(img.pixels.reshape(h, -1), 4, 8, True, weighted, mip_count(w, h), nthreads=1)
            t3 = time.perf_counter()
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            rows.append((tag, r, f"{w}x{h}", t1 - t0, t3 - t2, ru1.ru_minflt - ru0.ru_minflt, ru1.ru_stime - ru0.ru_stime,
                         ru1.ru_utime - ru0.ru_utime, spin, gbs))
    return rows


def _load(so: str):
    """The build ``so`` of the engine: ``gputex._mipcpu``, or ``gputex._mipcpu128`` (the 128-bit
    sums, bases over 2^24 texels) where its file name says so."""
    import importlib.machinery
    import importlib.util

    name = "gputex._mipcpu128" if "_mipcpu128" in os.path.basename(so) else "gputex._mipcpu"
    loader = importlib.machinery.ExtensionFileLoader(name, so)
    spec = importlib.util.spec_from_file_location(name, so, loader=loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _use(cpu, so: str) -> None:
    """``cpu.host_chain`` on the build ``so`` (:func:`_load`): a 128-bit build serves the sizes over
    2^24 texels, any other the rest."""
    mod = _load(so)
    setattr(cpu, "_mipcpu128" if mod.__name__.endswith("128") else "_mipcpu", mod)


def _name(so: str) -> str:
    return os.path.relpath(so) if so else "gputex._mipcpu"


def per_level(sizes: list[str], modules: list[str], weighted: bool = True, kernels: str = "simd") -> None:
    from batch import photo

    from gputex.layout import mip_count
    from gputex.mips import cpu

    imgs = {}
    for i, s in enumerate(sizes):
        w, h = map(int, s.split("x"))
        imgs[(w, h)] = photo(h, w, i + 1)
    whole: dict[tuple[str, int, int], list[float]] = {}
    for so in modules or [""]:
        if so:
            _use(cpu, so)
        for (w, h), img in imgs.items():
            res = []
            for lv in (2, 3, 4, mip_count(w, h)):
                best = 1e9
                for _ in range(6):
                    t0 = time.perf_counter()
                    cpu.host_chain(img.reshape(h, -1), 4, 8, True, weighted, lv, nthreads=1, kernels=kernels)
                    best = min(best, time.perf_counter() - t0)
                res.append(f"{lv} levels {best * 1e3:6.1f} ms")
            whole.setdefault((so, w, h), []).append(best)
            print(f"{_name(so)} {w}x{h}: " + ", ".join(res), flush=True)
    if len(set(modules)) > 1:  # each build's whole chain (median of its passes) against the first one's
        first = modules[0]
        for (w, h) in imgs:
            ref = statistics.median(whole[(first, w, h)])
            print(f"{w}x{h} whole chain / {_name(first)}'s: " + ", ".join(
                f"{_name(so)} {statistics.median(whole[(so, w, h)]) / ref:.2f}"
                for so in dict.fromkeys(modules) if so != first), flush=True)


def alternate(sizes: list[str], modules: list[str], weighted: bool, count: int, levels: int | None) -> None:
    """``--alternate N``: in this process, each size's chain (cut at ``--levels``) with each build in
    turn, build after build, N times (the order reversed every other time), timed by this thread's CPU
    time (a chain on one thread: another process's load takes none of it); prints each build's best and
    median and its best as a ratio to the first build's, and whether their bytes agree."""
    import types

    import numpy as np
    from batch import photo

    from gputex.layout import mip_count
    from gputex.mips import cpu

    # each build's chain function taken as it is loaded: a build loaded later under the same module name
    # from a path already imported (the tree's own) updates the dict of the module object last loaded
    mods = [(so, types.SimpleNamespace(chain=_load(so).chain)) for so in modules]
    for i, s in enumerate(sizes):
        w, h = map(int, s.split("x"))
        img = photo(h, w, i + 1).reshape(h, -1)
        lv = levels or mip_count(w, h)
        times: dict[str, list[float]] = {so: [] for so, _ in mods}
        outs = {}
        for r in range(count):
            for so, m in (mods if r % 2 == 0 else mods[::-1]):
                cpu._mipcpu = m  # type: ignore[assignment]
                t0 = time.thread_time()
                outs[so] = cpu.host_chain(img, 4, 8, True, weighted, lv, nthreads=1)
                times[so].append(time.thread_time() - t0)
        first = mods[0][0]
        same = all(np.array_equal(a, b) for so, _ in mods for a, b in zip(outs[first], outs[so]))
        print(f"{s}, {lv} levels: " + ", ".join(
            f"{_name(so)} best {min(t) * 1e3:.1f} ms, median {statistics.median(t) * 1e3:.1f} ({min(t) / min(times[first]):.2f})"
            for so, t in times.items()) + ("" if same else "  BYTES DIFFER"), flush=True)


KINDS = [(2048, 2048, 1, 8, True), (2048, 2048, 2, 8, False), (1024, 1024, 4, 16, False), (2048, 2048, 4, 8, False),
         (4096, 4096, 4, 8, True), (4095, 4097, 4, 8, True), (1537, 1999, 2, 8, True), (61, 37, 4, 8, True),
         (2, 2, 4, 8, True), (3, 5, 4, 8, True)]


def kinds(modules: list[str]) -> None:
    """Each kind's whole chain with each build in turn (``--kinds``)."""
    import numpy as np

    from gputex.layout import mip_count
    from gputex.mips import cpu

    mods = [_load(so) for so in modules] if modules else [cpu._mipcpu]
    names = [_name(so) for so in modules] or ["gputex._mipcpu"]
    rng = np.random.default_rng(5)
    for w, h, ch, bits, srgb in KINDS:
        a = rng.integers(0, 1 << bits, (h, w, ch), np.uint8 if bits == 8 else np.uint16)
        if ch in (2, 4):
            a[..., -1] = (1 << bits) - 1
        lin, q = cpu._tables(bits, srgb)
        lv = mip_count(w, h)
        n = sum(max(1, w >> k) * max(1, h >> k) for k in range(1, lv)) * ch * bits // 8
        outs = [np.empty(n, np.uint8) for _ in mods]
        for weighted in (True, False):
            best = [1e9] * len(mods)
            for _ in range(5 if w * h > 1 << 20 else 200):
                for i, m in enumerate(mods):
                    t0 = time.perf_counter()
                    m.chain(a.view(np.uint8).reshape(-1), outs[i], w, h, lv, ch, bits, srgb, weighted, lin, q, 1)
                    best[i] = min(best[i], time.perf_counter() - t0)
            same = all(np.array_equal(outs[0], o) for o in outs)
            print(f"{w}x{h} {ch} channels {bits}-bit {'sRGB' if srgb else 'linear'} "
                  f"{'weighted' if weighted else 'straight'}: " + ", ".join(
                      f"{nm} {b * 1e3:.3f} ms ({b / best[0]:.2f})" for nm, b in zip(names, best))
                  + ("" if same else "  BYTES DIFFER"), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 4, 8, 12, 16])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--sizes", nargs="+", default=["2048x2048", "1537x1999"])
    ap.add_argument("--per-level", action="store_true")
    ap.add_argument("--kinds", action="store_true", help="every other kind of chain, each --module in turn")
    ap.add_argument("--alternate", type=int, default=0, metavar="N",
                    help="each --module in turn, chain after chain, N times, by this thread's CPU time")
    ap.add_argument("--levels", type=int, default=0, help="--alternate: the chain cut at this many levels")
    ap.add_argument("--module", nargs="+", default=[])
    ap.add_argument("--straight", action="store_true", help="straight alpha (default: weighted, as the CLI)")
    ap.add_argument("--json", help="also write one JSON line per result to this file")
    ap.add_argument("--kernels", default="simd", choices=["simd", "avx512", "portable", "generic"],
                    help="--per-level: the engine's kernels (cpu.host_chain(kernels=); new builds only)")
    args = ap.parse_args()
    print(f"alpha: {'straight' if args.straight else 'weighted'}", flush=True)
    if args.kinds:
        print(_facts(), flush=True)
        kinds(args.module)
        return
    if args.alternate:
        print(_facts(), flush=True)
        alternate(args.sizes, args.module, not args.straight, args.alternate, args.levels or None)
        return
    if args.per_level:
        from gputex.mips import cpu

        print(_facts() + f"; AVX-512 kernels: {cpu.simd()}; kernels {args.kernels}", flush=True)
        per_level(args.sizes, args.module, not args.straight, args.kernels)
        return
    import multiprocessing

    import fpng
    from batch import photo

    print(_facts(), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, s in enumerate(args.sizes):
            w, h = map(int, s.split("x"))
            p = os.path.join(tmp, f"{s}.png")
            with open(p, "wb") as f:
                f.write(fpng.from_ndarray(photo(h, w, i + 1)))
            paths.append(p)
        import gputex.decode  # noqa: F401  (imported before the fork, as the early server does)
        import gputex.mips.cpu  # noqa: F401

        ctx = multiprocessing.get_context("fork")
        out = open(args.json, "a") if args.json else None
        for n in args.procs:
            for so in args.module or [""]:  # (each build in turn at each count)
                with ctx.Pool(n) as pool:
                    start = time.time() + 0.3
                    rows = [r for part in pool.map(_child, [(paths, args.rounds, start, i, not args.straight, so)
                                                             for i in range(n)]) for r in part]
                name = _name(so)
                for size in args.sizes:
                    for label, pick in (("first", lambda r: r[1] == 0), ("later", lambda r: r[1] > 0)):
                        sel = [r for r in rows if r[2] == size and pick(r)]
                        if not sel:
                            continue
                        med = {k: statistics.median(r[i] for r in sel) for k, i in
                               (("decode", 3), ("chain", 4), ("faults", 5), ("sys", 6), ("user", 7), ("spin", 8), ("gbs", 9))}
                        print(f"{name} procs {n:2d} {size:>9} {label}: decode median {med['decode'] * 1e3:6.1f} ms, "
                              f"chain median {med['chain'] * 1e3:6.1f} ms (max {max(r[4] for r in sel) * 1e3:6.1f}; "
                              f"user {med['user'] * 1e3:.1f}, sys {med['sys'] * 1e3:.1f} ms, faults {med['faults']:.0f}), "
                              f"spin {med['spin'] * 1e3:.2f} ms, copy {med['gbs']:.1f} GB/s", flush=True)
                        if out:
                            out.write(json.dumps({"module": name, "procs": n, "size": size, "which": label,
                                                  "chains": len(sel), **{k: round(v, 6) for k, v in med.items()},
                                                  "alpha": "straight" if args.straight else "weighted"}) + "\n")
        if out:
            out.close()


if __name__ == "__main__":
    main()
