"""CPU cost of the exact mip chain on a software adapter (lavapipe), trees compared in one run.

    python benchmarks/mips_cpu.py [--trees BEFORE_DIR .] [--sizes 2048 2047] [--runs 5] [--rounds 3]
        [--variants base noround ...] [--engines shader cpu]

On lavapipe the "GPU" is the CPU: every integer operation of ``mip_spd.wgsl`` / ``mip_odd.wgsl``
costs CPU time the rest of a conversion needs (issue 13: one 2048^2 image against ``ktx
create``). Each tree (a folder holding a ``gputex`` package: e.g. ``git archive`` of main
unpacked in /tmp, and this checkout) is measured in a fresh process, the trees alternating
``--rounds`` times so machine load hits them alike. A process uploads a random rgba8unorm-srgb
image (weighted alpha, 40% of the texels transparent as in the hash matrix), makes its chain
once (pipelines, tables, self-check), then times ``--runs`` chains: wall seconds and process
CPU seconds (every lavapipe thread) to the chain being done, the median kept. ``--variants``
cut parts out of ``mip_spd.wgsl`` as ``benchmarks/mip_spd_variants.py`` does (wrong bytes; for
profiling). ``--engines shader cpu`` runs each tree once per mip engine (``GPUTEX_MIPS_ENGINE``:
the shader against the host's C engine, :mod:`gputex.mips.cpu`; the same bytes), alternating
too. Printed: each tree's median of its rounds' medians and the ratio to the first row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def child(size: str, runs: int, variant: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    import numpy as np

    import gputex
    from gputex.mips import generate_mips

    gpu = gputex.Session()
    if variant != "base":
        sys.path.insert(0, here)
        import mip_spd_variants as mv

        import gputex.kernels as kernels
        import gputex.mips.spd as spd

        mv.CUTS["emptynocopy"] = mv.CUTS["empty"]
        mv.VARIANT["name"] = variant
        kernels.load_wgsl = mv.load_wgsl
        spd.self_check = lambda *a, **k: (True, "")
        if variant in ("nocopy", "emptynocopy"):  # the levels are not copied into the texture
            type(gpu.device.create_command_encoder()).copy_buffer_to_texture = lambda *a, **k: None
    w, _, h = size.partition("x")
    w, h = int(w), int(h or w)
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (h, w, 4), np.uint8)
    a[..., 3] = np.where(rng.random((h, w)) < 0.4, 0, a[..., 3])
    tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, store_levels=True)
    r = generate_mips(tex)
    gpu.wait()
    walls, cpus = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        generate_mips(tex)
        gpu.wait()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    print(json.dumps({"wall": statistics.median(walls), "cpu": statistics.median(cpus),
                      "precision": r.precision, "engine": getattr(r, "engine", "shader"), "sources": r.sources[:3]}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs="+", default=["."])
    ap.add_argument("--sizes", nargs="+", default=["2048"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", nargs="+", default=["base"])
    ap.add_argument("--engines", nargs="+", default=[None], choices=["auto", "shader", "cpu"],
                    help="GPUTEX_MIPS_ENGINE values to run each tree with (default: as set)")
    ap.add_argument("--child", nargs=3, metavar=("SIZE", "RUNS", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    here = os.path.abspath(__file__)
    for size in args.sizes:
        res: dict[tuple[str, str, str], list[dict]] = {}
        for _ in range(args.rounds):
            for tree in args.trees:
                for variant in args.variants:
                    for engine in args.engines:
                        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
                        if engine:
                            env["GPUTEX_MIPS_ENGINE"] = engine
                        out = subprocess.run([sys.executable, here, "--child", size, str(args.runs), variant],
                                             env=env, capture_output=True, text=True, cwd=os.path.abspath(tree))
                        if out.returncode:
                            sys.exit(f"{tree} {variant}: {out.stderr.strip().splitlines()[-1:]}")
                        res.setdefault((tree, variant, engine or ""), []).append(
                            json.loads(out.stdout.strip().splitlines()[-1]))
        first = None
        for (tree, variant, _), rows in res.items():
            cpu = statistics.median(r["cpu"] for r in rows)
            wall = statistics.median(r["wall"] for r in rows)
            first = first or cpu
            print(f"{size} {tree} {variant}: CPU {cpu * 1e3:.0f} ms, wall {wall * 1e3:.0f} ms "
                  f"(rounds: {' '.join(str(round(r['cpu'] * 1e3)) for r in rows)}), {cpu / first:.2f}x the first; "
                  f"{rows[0]['precision']} ({rows[0].get('engine', 'shader')}) {rows[0]['sources']}", flush=True)


if __name__ == "__main__":
    main()
