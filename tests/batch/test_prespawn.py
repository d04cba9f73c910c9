"""A batch's start (issue 13): worker processes asked for as their pool is made, with no task
(:func:`gputex.workers._prespawn`); the code tables built in the fork server
(:mod:`gputex.worker_warm`); a PNG input decoded without the containers' registry."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest

from gputex.workers import _can_prespawn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_processes_started_before_any_task(method):
    """In a fresh interpreter (a multiprocessing fork server is one per process: tests before this
    one may have started and stopped this process's): the pool's processes exist and live before
    any task, ``_prespawn`` never makes more than the pool's number, and the tasks then run in
    those processes."""
    code = f"""
import multiprocessing, os
from concurrent.futures import ProcessPoolExecutor
from gputex.workers import _can_prespawn, _prespawn

if __name__ == "__main__":
    pool = ProcessPoolExecutor(3, mp_context=multiprocessing.get_context({method!r}))
    assert _can_prespawn([pool])
    _prespawn([pool], 3)
    started = set(pool._processes)
    alive = all(p.is_alive() for p in pool._processes.values())
    _prespawn([pool], 3)
    again = set(pool._processes) == started
    pids = {{f.result() for f in [pool.submit(os.getpid) for _ in range(12)]}}
    print(len(started), alive, again, pids <= started, set(pool._processes) == started)
    pool.shutdown()
    idle = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context({method!r}))
    _prespawn([idle], 2)  # a pool that never gets a task: shutdown still stops its processes
    procs = list(idle._processes.values())
    idle.shutdown(wait=True)
    print(len(procs), any(p.is_alive() for p in procs))
"""
    assert _fresh_script(code).split("\n") == ["3 True True True True", "2 False"]


def test_prespawn_off(monkeypatch):
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"))
    try:
        monkeypatch.setenv("GPUTEX_PRESPAWN", "0")
        assert not _can_prespawn([pool])
        monkeypatch.setenv("GPUTEX_PRESPAWN", "1")
        assert _can_prespawn([pool])
        assert not _can_prespawn([pool, object()])  # not CPython's executor: the tasks ask
    finally:
        pool.shutdown()


def _fresh_script(code: str) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        env.pop("GPUTEX_PRESPAWN", None)
        return subprocess.run([sys.executable, f.name], capture_output=True, text=True, env=env, check=True,
                              timeout=120).stdout.strip()
    finally:
        os.unlink(f.name)


def _fresh(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                          timeout=120).stdout.strip()


def test_the_tables_built_by_the_server_last():
    from gputex.early import WORKER_MODULES

    assert WORKER_MODULES[-1] == "gputex.worker_warm"
    out = _fresh("import gputex.worker_warm\nfrom gputex.mips import cpu, intbox\nimport numpy as np\n"
                 "lin, q = cpu._tables(8, True)\n"
                 "print(cpu._tables.cache_info().hits, cpu.available(),"
                 " lin == np.array(intbox.lin_table(8, True), np.uint64).tobytes())")
    hits, available, same = out.split()
    assert same == "True"
    assert hits == ("1" if available == "True" else "0")  # built at import, found by the first chain


def test_a_png_decoded_without_the_containers(tmp_path):
    import numpy as np

    from factory import write

    path = write(tmp_path / "a.png", np.arange(4 * 5 * 4, dtype=np.uint8).reshape(4, 5, 4))
    out = _fresh("import sys\nfrom gputex.pipeline import Options, Result, decode_input\n"
                 f"img = decode_input({str(path)!r}, Options(), Result(source='a'))\n"
                 "print(img.pixels.shape, 'gputex.containers' in sys.modules)")
    assert out == "(4, 5, 4) False"


def test_no_container_can_look_like_a_png():
    from gputex.containers import containers
    from gputex.png import SIGNATURE

    for c in containers():  # (a PNG's first bytes are never taken for a texture file's)
        assert c.magic and not SIGNATURE.startswith(c.magic) and not c.magic.startswith(SIGNATURE), c.name
