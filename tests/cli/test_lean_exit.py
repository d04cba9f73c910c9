"""The end of a CLI run: the lean exit (``gputex.cli._lean_exit``: atexit handlers, then
``os._exit``) runs after an image large enough for the threaded copies of gputex.parallel."""

from __future__ import annotations

import os
import subprocess
import sys

from factory import noise, write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Runs the CLI with os._exit and gputex.parallel._get_pool watched, noting in the file $LOG
# (stderr is the CLI's): "pool" once the copy pool is made, "lean-exit <code>" where the run
# ends through os._exit.
_CHILD = (
    "import os, sys\n"
    "def note(line):\n"
    "    with open(os.environ['LOG'], 'a') as f: f.write(line + '\\n')\n"
    "real = os._exit\n"
    "def watched(code):\n"
    "    note(f'lean-exit {code}'); real(code)\n"
    "os._exit = watched\n"
    "import gputex.parallel as p\n"
    "get = p._get_pool\n"
    "def pool():\n"
    "    note('pool') if p._pool is None else None\n"
    "    return get()\n"
    "p._get_pool = pool\n"
    "from gputex.cli import console\n"
    "sys.argv = ['gputex'] + sys.argv[1:]\n"
    "console()\n"
)


def test_lean_exit_runs_after_threaded_copies(gpu, rng, tmp_path):
    """A 2048x1024 RGBA8 image (8 MiB, every level's copy split over the pool's threads) with
    mips to a KTX2 file: the copy pool is used, its idle threads are stopped, and the run still
    ends through the lean exit with code 0 and a whole output."""
    src = write(tmp_path / "big.png", noise(rng, 1024, 2048, 4))
    out = tmp_path / "big.ktx2"
    log = tmp_path / "log"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), GPUTEX_COPY_THREADS="2",
               LOG=str(log), GPUTEX_SPLIT_DEVICE="start")  # (the GPU's copies: not the host engine's file)
    env.pop("GPUTEX_THREADS", None)  # a thread cap of 1 would leave the pool unused
    done = subprocess.run([sys.executable, "-c", _CHILD, "upload", src, "--mips", "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # the threaded copies ran (the case this is about), then the lean exit
    assert log.read_text().splitlines() == ["pool", "lean-exit 0"], done.stderr[-2000:]
    data = out.read_bytes()
    assert data[:12] == b"\xabKTX 20\xbb\r\n\x1a\n" and len(data) > 8 << 20


def test_parallel_shutdown_stops_the_pool_threads_and_a_later_copy_starts_anew(monkeypatch):
    import threading

    from gputex import parallel

    monkeypatch.delenv("GPUTEX_THREADS", raising=False)  # a cap of 1 would run the tasks inline

    def pool_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("gputex-copy") and t.is_alive()]

    seen: list[int] = []
    parallel.run_all([lambda i=i: seen.append(i) for i in range(4)], threads=2)
    assert sorted(seen) == [0, 1, 2, 3] and pool_threads()
    parallel.shutdown()
    assert pool_threads() == []
    parallel.run_all([lambda i=i: seen.append(i) for i in range(4, 8)], threads=2)
    assert sorted(seen) == list(range(8))
    parallel.shutdown()
    assert pool_threads() == []


def test_main_called_by_a_program_returns_to_it(gpu, rng, tmp_path):
    """``gputex.cli.main()`` (not the console entry) ends with an ordinary SystemExit after the
    same kind of run, so the calling program goes on: the lean exit is the command's alone."""
    src = write(tmp_path / "big.png", noise(rng, 1024, 2048, 4))
    out = tmp_path / "big.ktx2"
    code = ("import sys\nfrom gputex.cli import main\nsys.argv = ['gputex'] + sys.argv[1:]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    print('returned', e.code)\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), GPUTEX_COPY_THREADS="2")
    done = subprocess.run([sys.executable, "-c", code, "upload", src, "--mips", "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "returned 0"
    assert out.read_bytes()[:12] == b"\xabKTX 20\xbb\r\n\x1a\n"
