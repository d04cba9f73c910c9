"""The host C engine's chain (and the PNG decode beside it) in N processes at once: why a decode
worker's chain takes longer on a 16-core host than alone (issue 13).

    python benchmarks/host_chain_scale.py [--procs 1 4 8 12 16] [--rounds 4] [--sizes 2048x2048 1537x1999]
                                          [--per-level] [--module SO ...] [--straight]

Each of N processes (forked after the imports, no GPU) decodes a photo-like PNG and makes its
chain with ``gputex.mips.cpu.host_chain`` on one thread (weighted alpha, the CLI's default, as a
batch's decode worker makes it; ``--straight``: straight alpha, what it measured in the H200 calls
of ``results/peer-ktx-h200-8d26dde.txt``, 1.8x faster than weighted at 8d26dde on the 2-core
machine), ``--rounds`` times, all starting together; per size it prints the median (and worst) time of the first round (a fresh process's
first chain: its pages new) and of the later ones, with minor page faults and system time per
chain. Also prints the machine's cores, SMT siblings and transparent huge page settings.
``--per-level``: instead, in this process, the best of 6 of the chain cut at levels 2, 3, 4 and
whole (where the time goes by level), for each ``--module`` (other builds of ``gputex/_mipcpu.c``,
e.g. other compiler flags; default: the one gputex imports).
"""

from __future__ import annotations

import argparse
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


def _child(args) -> list[tuple]:
    paths, rounds, start, tag, weighted = args
    from gputex.decode import decode
    from gputex.layout import mip_count
    from gputex.mips.cpu import host_chain

    while time.time() < start:  # all processes begin together
        time.sleep(0.0005)
    rows = []
    for r in range(rounds):
        for path in paths:
            t0 = time.perf_counter()
            img = decode(path)
            t1 = time.perf_counter()
            ru0 = resource.getrusage(resource.RUSAGE_SELF)
            h, w = img.pixels.shape[:2]
            host_chain(img.pixels.reshape(h, -1), 4, 8, True, weighted, mip_count(w, h), nthreads=1)
            ru1 = resource.getrusage(resource.RUSAGE_SELF)
            t2 = time.perf_counter()
            rows.append((tag, r, f"{w}x{h}", t1 - t0, t2 - t1, ru1.ru_minflt - ru0.ru_minflt, ru1.ru_stime - ru0.ru_stime))
    return rows


def _load(so: str):
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader("gputex._mipcpu", so)
    spec = importlib.util.spec_from_file_location("gputex._mipcpu", so, loader=loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def per_level(sizes: list[str], modules: list[str], weighted: bool = True) -> None:
    from batch import photo

    from gputex.layout import mip_count
    from gputex.mips import cpu

    imgs = {}
    for i, s in enumerate(sizes):
        w, h = map(int, s.split("x"))
        imgs[(w, h)] = photo(h, w, i + 1)
    for so in modules or [""]:
        if so:
            cpu._mipcpu = _load(so)
        for (w, h), img in imgs.items():
            res = []
            for lv in (2, 3, 4, mip_count(w, h)):
                best = 1e9
                for _ in range(6):
                    t0 = time.perf_counter()
                    cpu.host_chain(img.reshape(h, -1), 4, 8, True, weighted, lv, nthreads=1)
                    best = min(best, time.perf_counter() - t0)
                res.append(f"{lv} levels {best * 1e3:6.1f} ms")
            print(f"{os.path.basename(so) or 'gputex._mipcpu'} {w}x{h}: " + ", ".join(res), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 4, 8, 12, 16])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--sizes", nargs="+", default=["2048x2048", "1537x1999"])
    ap.add_argument("--per-level", action="store_true")
    ap.add_argument("--module", nargs="+", default=[])
    ap.add_argument("--straight", action="store_true", help="straight alpha (default: weighted, as the CLI)")
    args = ap.parse_args()
    print(f"alpha: {'straight' if args.straight else 'weighted'}", flush=True)
    if args.per_level:
        print(_facts(), flush=True)
        per_level(args.sizes, args.module, not args.straight)
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
        for n in args.procs:
            with ctx.Pool(n) as pool:
                start = time.time() + 0.3
                rows = [r for part in pool.map(_child, [(paths, args.rounds, start, i, not args.straight) for i in range(n)]) for r in part]
            for size in [s.split("x")[0] + "x" + s.split("x")[1] for s in args.sizes]:
                for label, pick in (("first", lambda r: r[1] == 0), ("later", lambda r: r[1] > 0)):
                    sel = [r for r in rows if r[2] == size and pick(r)]
                    if not sel:
                        continue
                    dec = [r[3] * 1e3 for r in sel]
                    ch = [r[4] * 1e3 for r in sel]
                    print(f"procs {n:2d} {size:>9} {label}: decode median {statistics.median(dec):6.1f} ms "
                          f"(max {max(dec):6.1f}), chain median {statistics.median(ch):6.1f} ms (max {max(ch):6.1f}), "
                          f"faults/chain {statistics.median(r[5] for r in sel):.0f}, "
                          f"sys/chain {statistics.median(r[6] for r in sel) * 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
