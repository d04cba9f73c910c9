"""The 48-image batch of ``peer_ktx.py`` (2048², every sixth 1537x1999 -> KTX2, ``--jobs 16``) under
several environments, alternating for ROUNDS rounds (the H200 host's run-to-run noise is ~10%), each
run traced (``OUT/traces/NAME-ROUND.jsonl``), with the codecs alone each round (traced too:
``OUT/traces/codecs-ROUND.jsonl``) and ``ktx create``
(16 at a time) twice in the same run; prints every time, the median and best, the best's ratio to
ktx and to the codecs alone (and the codecs alone's time over each run's, round by round), and whether each
configuration wrote the same files as the first.

    python3 benchmarks/batch_variants.py [--jobs 16] [--count 48] [--size 2048] OUT ROUNDS NAME=ENV ...

``--jobs``, ``--count``, ``--size``: the batch's ``--jobs`` (also the codecs alone's and ``ktx
create``'s processes at a time), its number of images and their size (every sixth odd-sized),
e.g. ``--jobs 2 --count 16`` on the 2-core machine.

ENV: ``K:V;K:V`` (``-`` for none; ``TREE:PATH`` runs another checkout), e.g.
``ready=- start=GPUTEX_GPU_SLOTS_AT:start w15=GPUTEX_WORKERS:15``.
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_ktx import (  # noqa: E402
    ROOT,
    batch_command,
    codecs_alone,
    compile_all,
    find_ktx,
    ktx_batch,
    make_corpus,
    timed,
)


def main():
    args = sys.argv[1:]
    opt = {"--jobs": 16, "--count": 48, "--size": 2048}
    while args and args[0] in opt:
        opt[args[0]] = int(args[1])
        args = args[2:]
    jobs, count, size = opt["--jobs"], opt["--count"], opt["--size"]
    out, rounds = args[0], int(args[1])
    configs = {}
    for a in args[2:]:
        name, _, env = a.partition("=")
        configs[name] = {} if env in ("", "-") else dict(kv.split(":", 1) for kv in env.split(";"))
    os.makedirs(out + "/traces", exist_ok=True)
    compile_all([ROOT] + [c["TREE"] for c in configs.values() if "TREE" in c])
    tmp = tempfile.mkdtemp(prefix="gputex-variants-")
    try:
        os.makedirs(tmp + "/batch")
        paths = make_corpus(tmp + "/batch", count, size, jobs)
        times = {n: [] for n in configs}
        times["codecs"] = []
        digests = {}
        for r in range(rounds):
            for name, env in configs.items():
                o = tmp + "/o_" + name
                shutil.rmtree(o, ignore_errors=True)
                os.makedirs(o)
                e = dict(os.environ)
                root = env.get("TREE", ROOT)
                e["PYTHONPATH"] = os.path.abspath(root) + os.pathsep + e.get("PYTHONPATH", "")
                e.update({k: v for k, v in env.items() if k != "TREE"})
                e["GPUTEX_TRACE"] = f"{out}/traces/{name}-{r}.jsonl"
                t = timed(batch_command(paths, o, "ktx2", jobs), env=e, cwd=tmp)
                times[name].append(t)
                if r == 0:
                    digests[name] = {n: hashlib.sha256(open(os.path.join(o, n), "rb").read()).hexdigest() for n in os.listdir(o)}
                print(f"round {r} {name}: {t:.3f} s", flush=True)
            c = tmp + "/codecs"
            shutil.rmtree(c, ignore_errors=True)
            os.makedirs(c)
            times["codecs"].append(codecs_alone(paths, c, jobs, trace=f"{out}/traces/codecs-{r}.jsonl"))
            print(f"round {r} codecs alone: {times['codecs'][-1]:.3f} s", flush=True)
        ktx = find_ktx(os.path.join(ROOT, ".gpu", "peer", "ktx") if os.path.exists(os.path.join(ROOT, ".gpu")) else None)
        kt = []
        if ktx:
            for r in range(2):
                k = os.path.join(tmp, f"k{r}")
                os.makedirs(k)
                kt.append(ktx_batch(ktx, paths, k, jobs))
        first = next(iter(digests.values()))
        print("\nconfig        runs (s)                     median (upper)  best   ktx/best  best/codecs  same files as first")
        best_c = min(times["codecs"])
        for n, ts in times.items():
            s = sorted(ts)
            med = s[len(s) // 2]
            ratio = min(kt) / min(ts) if kt else float("nan")
            extra = "" if n == "codecs" else f"  {ratio:6.2f}    {best_c / min(ts):6.2f}      {digests.get(n) == first}"
            print(f"{n:12s} {' '.join(f'{t:.3f}' for t in ts):28s} {med:.3f} {min(ts):.3f}{extra}")
        print(f"ktx create, {jobs} at a time: {' '.join(f'{t:.2f}' for t in kt)}")
        for n, ts in times.items():  # the codecs alone's time over each run of the same round
            if n != "codecs":
                per = sorted(c / t for c, t in zip(times["codecs"], ts))
                print(f"{n}: codecs / run, round by round: {' '.join(f'{x:.2f}' for x in per)}; median {per[len(per) // 2]:.2f}; "
                      f"median / median {sorted(times['codecs'])[len(ts) // 2] / sorted(ts)[len(ts) // 2]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    json.dump({"times": times, "ktx": kt}, open(out + "/alt.json", "w"))


if __name__ == "__main__":
    main()
