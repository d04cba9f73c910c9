"""Where a batch's wall time went, from a ``GPUTEX_TRACE`` file.

    GPUTEX_TRACE=/tmp/t.jsonl gputex capture ... ; python benchmarks/timeline.py /tmp/t.jsonl

Prints the time from process start to the first GPU step and to the end, the GPU thread's
busy share, the core-seconds of decodes and encodes, and how many codec tasks ran at once in
each tenth of the run (the cores left idle are what a faster schedule could win).
"""

from __future__ import annotations

import collections
import json
import os
import sys


def summary(path: str, cores: int | None = None) -> str:
    ev = [json.loads(ln) for ln in open(path)]
    t_start = min(e["t0"] for e in ev)
    t_end = max(e["t1"] for e in ev)
    wall = t_end - t_start
    by = collections.defaultdict(list)
    for e in ev:
        by[e["what"]].append(e)
    lines = [f"wall {wall:.3f} s (first span start to last span end)"]
    order = ["startup", "spawn", "preload", "device", "warm-types", "warm", "rehearsal", "worker-warm", "decode", "gpu",
             "encode", "workers-stop"]
    for what in order + sorted(set(by) - set(order)):
        es = by.get(what, [])
        if not es:
            continue
        busy = sum(e["t1"] - e["t0"] for e in es)
        cpu = sum(e.get("cpu", 0.0) for e in es)
        first = min(e["t0"] for e in es) - t_start
        last = max(e["t1"] for e in es) - t_start
        lines.append(f"{what:>15}: n {len(es):3d}, sum {busy:7.3f} s (thread cpu {cpu:7.3f}), "
                     f"mean {busy / len(es) * 1e3:7.1f} ms, first start {first:6.3f} s, last end {last:6.3f} s")
    cores = cores or os.cpu_count() or 1
    for k in range(10):
        a, b = t_start + wall * k / 10, t_start + wall * (k + 1) / 10
        busy = collections.Counter()
        for e in ev:
            if e["what"] in ("decode", "encode", "worker-warm", "gpu"):
                busy[e["what"]] += max(0.0, min(b, e["t1"]) - max(a, e["t0"])) / (b - a)
        lines.append(f"  {k / 10:.1f}-{(k + 1) / 10:.1f}: " + ", ".join(f"{w} {busy[w]:5.2f}" for w in
                     ("worker-warm", "decode", "gpu", "encode")) + f"  (of {cores} cores)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None))
