"""Temporary trace marks for a batch's start, applied to a COPY of the gputex tree (issue 13).

    cp -r gputex setup.py pyproject.toml build/x1/ && python3 benchmarks/start_marks.py build/x1
    python3 benchmarks/batch_variants.py OUT 5 x1=TREE:build/x1   # OUT/traces/x1-ROUND.jsonl

Adds ``GPUTEX_TRACE`` marks named ``T-...`` along the main process's way to the workers' first
decodes (its imports, the CLI's import and parse, ``run.run``'s setup, each submit to the process
pool and how long it took) and ``T-server-ready`` when the early fork server has imported what it
preloads (a module appended to ``gputex.early.WORKER_MODULES``). Used for
``benchmarks/results/batch-start-h200-s31.txt``; the marks are not in gputex itself.
"""
import os
import sys

MARK = "import time as _t\n{pad}from .trace import mark\n{pad}mark({name!r}, _t.time())\n"


def _mark(name: str, pad: str) -> str:
    return pad + MARK.format(pad=pad, name=name)


# (file, the line the mark goes before or after, the mark's name, before?)
EDITS = [
    ("gputex/start.py", "    start(sys.argv[1:])  # before", "T-imports", True),
    ("gputex/start.py", "    from .cli import console as run\n", "T-readahead", True),
    ("gputex/start.py", "    from .cli import console as run\n", "T-cli-imported", False),
    ("gputex/cli.py", "    try:\n        main()\n    except _Done as e:", "T-main", True),
    ("gputex/run.py", "    n = worker_count(jobs, len(items), workers) if steps.encode is not None else 0\n", "T-a", False),
    ("gputex/run.py", "    demand = _demand(split, session, adapter, backend, [item.path for item in items])\n", "T-prepared", True),
    ("gputex/run.py", "    demand = _demand(split, session, adapter, backend, [item.path for item in items])\n", "T-demand", False),
    ("gputex/run.py", "            start_processes(wait=split and _spawn_first())\n", "T-begin", True),
    ("gputex/workers.py", "    _SUBMITTED.wait(0.2)\n", "T-seen", False),
]


def main() -> None:
    root = sys.argv[1]
    for rel, line, name, before in EDITS:
        path = os.path.join(root, rel)
        text = open(path).read()
        assert line in text, (rel, line)
        pad = line[:len(line) - len(line.lstrip())]
        text = text.replace(line, _mark(name, pad) + line if before else line + _mark(name, pad), 1)
        open(path, "w").write(text)
    path = os.path.join(root, "gputex/run.py")  # after the pools are made
    text = open(path).read()
    line = "    with codec_workers(n, steps.pools, split=split, later=True):\n"
    text = text.replace(line, line + _mark("T-pools", " " * 8), 1)
    open(path, "w").write(text)
    path = os.path.join(root, "gputex/workers.py")  # each submit to the process pool, timed
    text = open(path).read()
    line = "        with spawn_shielded():  # submit may start a worker process\n            fut = pool.submit(fn, *args)\n"
    assert line in text
    text = text.replace(line, "        import time as _t\n        _t0 = _t.time()\n" + line +
                        "        from .trace import mark\n        mark('T-psub', _t0)\n", 1)
    open(path, "w").write(text)
    with open(os.path.join(root, "gputex/_xready.py"), "w") as f:
        f.write("import time\n\nfrom .trace import enabled, mark\n\nif enabled():\n    mark('T-server-ready', time.time())\n")
    path = os.path.join(root, "gputex/early.py")
    text = open(path).read()
    assert '"gputex.worker_warm",' in text or '"gputex._mipcpu",' in text
    anchor = '"gputex.worker_warm",' if '"gputex.worker_warm",' in text else '"gputex._mipcpu",'
    open(path, "w").write(text.replace(anchor, anchor + ' "gputex._xready",', 1))
    print("marked", root)


if __name__ == "__main__":
    main()
