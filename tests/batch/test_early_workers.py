"""A batch's codec workers forked from the server ``gputex`` starts at its first moment
(:mod:`gputex.early`): the same output bytes as spawned workers, a wrong guess or a miss of the
command-line heuristic changes nothing but where the workers come from, the server is gone
when the command is, and Ctrl-C stops the batch as before."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from gputex.early import host_likely, looks_like_batch
from gputex.texfile import read_texture_file

from factory import write

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("GPUTEX_PORTABLE", "GPUTEX_WORKERS", "GPUTEX_TRACE")}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _gputex(args: list[str], trace, **env: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    p = subprocess.run([sys.executable, "-m", "gputex", *args], capture_output=True, text=True, timeout=300,
                       env=_env(GPUTEX_TRACE=str(trace), **env))
    spans = [json.loads(line) for line in open(trace)] if os.path.exists(trace) else []
    return p, spans


def _hashes(folder) -> dict[str, str]:
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in sorted(os.listdir(folder))}


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie: an orphan that init reaps late)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _children(pid: int) -> dict[int, bytes]:
    """pid -> command line of each process whose parent is ``pid``."""
    out = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                out[int(entry)] = open(f"/proc/{entry}/cmdline", "rb").read()
        except (OSError, ValueError, IndexError):
            pass
    return out


def _inputs(rng, folder) -> list[str]:
    """RGBA, RGB and grey PNGs, power-of-two and odd sizes, one 16-bit."""
    return [write(folder / "a.png", rng.integers(0, 256, (64, 64, 4), np.uint8)),
            write(folder / "b.png", rng.integers(0, 256, (37, 53, 4), np.uint8)),
            write(folder / "c.png", rng.integers(0, 256, (32, 16, 3), np.uint8)),
            write(folder / "d.png", rng.integers(0, 256, (29, 45, 1), np.uint8)),
            write(folder / "e.png", rng.integers(0, 65536, (16, 24, 4), np.uint16))]


@pytest.mark.parametrize("argv, cpus, env, expected", [
    (["upload", "a.png", "b.png", "--mips", "-o", "out"], 16, {}, True),
    (["upload", "a.png", "b.png", "--mips", "-oout"], 16, {}, True),
    (["upload", "a.png", "b.png", "--mips", "--out=out"], 16, {}, True),
    (["capture", "a.png", "b.png", "-o", "out"], 16, {}, True),
    (["capture", "img/*.png", "-o", "out"], 16, {}, True),  # a glob the shell did not expand
    (["capture", "@list.txt", "-o", "out"], 16, {}, True),
    (["upload", "a.png", "-o", "a.ktx2"], 16, {}, False),  # one input: no workers
    (["upload", "a.png", "b.png", "--mips"], 16, {}, False),  # upload without -o: no workers
    (["upload", "--mips", "-o", "out", "a.png", "b.png"], 16, {}, False),  # options first: a miss
    (["upload", "a.png", "b.png", "-o", "out", "--help"], 16, {}, False),
    (["info", "a.png", "b.png"], 16, {}, False),
    (["capture", "a.png", "b.png", "-o", "out"], 2, {}, False),  # 2 jobs by default: codecs in threads
    (["capture", "a.png", "b.png", "-o", "out", "--jobs", "2"], 16, {}, False),
    (["upload", "a.png", "b.png", "--mips", "-o", "out"], 2, {}, True),  # the split's 2 processes (on demand)
    (["upload", "a.png", "b.png", "--mips", "-o", "out", "-j2"], 16, {}, True),
    (["upload", "a.png", "b.png", "-o", "out", "--jobs", "2"], 16, {}, False),  # no --mips: no split
    (["upload", "a.png", "b.png", "--mips", "-o", "out", "--jobs", "1"], 16, {}, False),
    (["capture", "a.png", "b.png", "-o", "out", "-j2"], 16, {}, False),
    (["capture", "a.png", "b.png", "-o", "out", "--jobs=3"], 2, {}, True),
    (["capture", "a.png", "b.png", "-o", "out", "--workers", "0"], 16, {}, False),
    (["capture", "a.png", "b.png", "-o", "out", "--workers", "2", "--jobs", "1"], 2, {}, True),
    (["capture", "a.png", "b.png", "-o", "out"], 16, {"GPUTEX_WORKERS": "0"}, False),
    (["capture", "a.png", "b.png", "-o", "out"], 2, {"GPUTEX_WORKERS": "4"}, True),
    (["capture", "a.png", "b.png", "-o", "out", "--threads", "5"], 16, {}, False),  # cap_jobs: codecs in threads
    (["capture", "a.png", "b.png", "-o", "out", "--threads", "6"], 16, {}, True),
    (["capture", "a.png", "b.png", "-o", "out"], 16, {"GPUTEX_PORTABLE": "forkserver"}, False),
    (["capture", "a.png", "b.png", "-o", "out"], 16, {"GPUTEX_PORTABLE": "all"}, False),
])
def test_the_heuristic(argv, cpus, env, expected, monkeypatch):
    for name in ("GPUTEX_PORTABLE", "GPUTEX_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert looks_like_batch(argv, cpus=cpus) is expected


def test_a_folder_is_a_batch(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUTEX_WORKERS", raising=False)
    assert looks_like_batch(["capture", str(tmp_path), "-o", "out"], cpus=16) is True
    assert looks_like_batch(["capture", str(tmp_path / "x.png"), "-o", "out"], cpus=16) is False


def test_early_server_same_bytes_and_gone_after(gpu, rng, tmp_path):
    """``upload --mips -o DIR`` (the chains split between the GPU and the workers) and ``capture
    --mips --level all``: workers forked from the early server (itself forked from gputex, or
    started as a fresh interpreter: ``GPUTEX_PORTABLE=serverfork``), and spawned ones
    (``GPUTEX_PORTABLE=forkserver``), write the same bytes; the server is gone when the command is."""
    files = _inputs(rng, tmp_path / "src")
    for command, extra in (("upload", ["--mips"]), ("capture", ["--mips", "--level", "all"])):
        runs = {}
        for how, env in (("early", {}), ("exec", {"GPUTEX_PORTABLE": "serverfork"}),
                         ("tasks", {"GPUTEX_PRESPAWN": "0"}),  # processes asked for by the first tasks
                         ("spawned", {"GPUTEX_PORTABLE": "forkserver"})):
            out = tmp_path / f"{command}-{how}"
            p, spans = _gputex([command, *files, *extra, "-o", str(out), "--jobs", "3"],
                               tmp_path / f"{command}-{how}.jsonl", **env)
            assert p.returncode == 0, p.stderr
            assert p.stderr == ""
            main = {s["pid"] for s in spans if s["what"] == "startup"}
            servers = [s["server"] for s in spans if s["what"] == "forkserver"]
            parents = {s["parent"] for s in spans if s["what"] == "worker-warm"}
            assert len(main) == 1 and parents, spans
            if how != "spawned":
                assert len(servers) == 1 and parents == set(servers), (servers, parents)
                assert _gone(servers[0])  # stopped and reaped by gputex before it exited
                assert [s["forked"] for s in spans if s["what"] == "forkserver"] == [how != "exec"]
            else:
                assert servers == [] and parents == main
            runs[how] = _hashes(out)
        assert runs["early"] == runs["exec"] == runs["tasks"] == runs["spawned"] and len(runs["early"]) >= len(files), runs


def test_a_miss_and_a_wrong_guess(gpu, rng, tmp_path):
    """Options before the inputs (a miss: workers spawned) and a folder of one image (a wrong
    guess: the server starts, no worker is ever forked) write what the early server's batch
    writes; the idle server is gone with the command."""
    files = _inputs(rng, tmp_path / "src")
    early, spans = _gputex(["upload", *files, "--mips", "-o", str(tmp_path / "early"), "--jobs", "3"],
                           tmp_path / "early.jsonl")
    assert early.returncode == 0, early.stderr
    assert [s for s in spans if s["what"] == "forkserver"]
    miss, spans = _gputex(["upload", "--mips", "-o", str(tmp_path / "miss"), "--jobs", "3", *files],
                          tmp_path / "miss.jsonl")
    assert miss.returncode == 0, miss.stderr
    assert not [s for s in spans if s["what"] == "forkserver"]
    assert {s["parent"] for s in spans if s["what"] == "worker-warm"} == {s["pid"] for s in spans
                                                                          if s["what"] == "startup"}
    assert _hashes(tmp_path / "miss") == _hashes(tmp_path / "early")

    one = tmp_path / "one"
    one.mkdir()
    os.link(files[1], one / "b.png")
    wrong, spans = _gputex(["upload", str(one), "-r", "--mips", "-o", str(tmp_path / "wrong"), "--jobs", "3"],
                           tmp_path / "wrong.jsonl")
    assert wrong.returncode == 0, wrong.stderr
    servers = [s["server"] for s in spans if s["what"] == "forkserver"]
    assert len(servers) == 1 and _gone(servers[0])
    assert not [s for s in spans if s["what"] == "worker-warm"]  # one input: no workers
    assert _hashes(tmp_path / "wrong") == {"b.ktx2": _hashes(tmp_path / "early")["b.ktx2"]}


def test_ctrl_c_in_an_early_started_batch(gpu, tmp_path):
    """Ctrl-C to the process group while forked workers write files: exit 130 with the summary
    line only, every file written whole, and no server or worker left."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (384, 384, 4), np.uint8)
    files = [write(tmp_path / "src" / f"img{i:03d}.png", np.roll(a, i, axis=0)) for i in range(40)]
    out, trace = tmp_path / "out", tmp_path / "t.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "gputex", "upload", *files, "--mips", "-o", str(out), "--jobs", "3"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=_env(GPUTEX_MIPS_ENGINE="cpu", GPUTEX_TRACE=str(trace)))
    deadline = time.time() + 120
    while time.time() < deadline and not (out.exists() and [n for n in os.listdir(out) if n.endswith(".ktx2")]):
        time.sleep(0.01)
    helpers = _children(p.pid)  # the fork server and multiprocessing's resource tracker
    os.killpg(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr
    m = re.fullmatch(r"gputex: interrupted after (\d+) of 40 inputs \((\d+) ok, 0 failed\); every output written "
                     r"is complete", stderr.strip())
    assert m and m.group(1) == m.group(2), stderr
    names = sorted(os.listdir(out))
    assert not [n for n in names if n.startswith(".")] and 0 < len(names) == int(m.group(1)) < 40, names
    for name in names:
        assert bytes(read_texture_file(str(out / name)).levels[0]) == np.roll(a, int(name[3:6]), axis=0).tobytes()
    spans = [json.loads(line) for line in open(trace)]
    servers = [s["server"] for s in spans if s["what"] == "forkserver"]
    workers = {s["pid"] for s in spans if s["what"] == "worker-warm"}
    assert len(servers) == 1 and workers and {s["parent"] for s in spans if s["what"] == "worker-warm"} == set(servers)
    assert set(servers) < set(helpers) and any(b"resource_tracker" in cmd for cmd in helpers.values()), helpers
    left = [*helpers, *workers]
    deadline = time.time() + 5  # (the tracker ends once it reads the end of gputex's pipe)
    while time.time() < deadline and not all(map(_gone, left)):
        time.sleep(0.05)
    assert all(map(_gone, left)), [pid for pid in left if not _gone(pid)]


def test_forked_workers_get_the_command_environment(monkeypatch):
    """The server keeps the environment it started with; a worker forked from it gets the
    command's (``--threads`` sets ``GPUTEX_THREADS`` after the server started) and is the
    server's child."""
    from functools import partial

    from gputex import early, workers

    for name in ("GPUTEX_PORTABLE", "GPUTEX_WORKERS", "GPUTEX_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert early.start(["capture", "a.png", "b.png", "-o", "out", "--jobs", "3"])
    try:
        server = early._server_pid()
        monkeypatch.setenv("GPUTEX_THREADS", "7")
        with workers.codec_workers(2, ("decode",)):
            pool = workers._POOLS["decode"]
            got = pool.submit(partial(os.getenv, "GPUTEX_THREADS")).result(timeout=60)
            parent = pool.submit(os.getppid).result(timeout=60)
        assert (got, parent) == ("7", server)
    finally:
        early.stop()
    assert early.context() is None and _gone(server)


def test_kill_9_leaves_no_worker_or_server(gpu, tmp_path):
    """gputex killed with SIGKILL (no handler, no atexit) mid-batch: its forked workers see the
    pipe from it close and end, then the server and the resource tracker do."""
    rng = np.random.default_rng(8)
    a = rng.integers(0, 256, (384, 384, 4), np.uint8)
    files = [write(tmp_path / "src" / f"img{i:03d}.png", np.roll(a, i, axis=1)) for i in range(40)]
    out, trace = tmp_path / "out", tmp_path / "t.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "gputex", "upload", *files, "--mips", "-o", str(out), "--jobs", "3"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=_env(GPUTEX_MIPS_ENGINE="cpu", GPUTEX_TRACE=str(trace)))
    deadline = time.time() + 120
    while time.time() < deadline and not (out.exists() and [n for n in os.listdir(out) if n.endswith(".ktx2")]):
        time.sleep(0.01)
    helpers = _children(p.pid)
    started = [s["server"] for s in map(json.loads, open(trace)) if s["what"] == "forkserver"]
    forked = set(_children(started[0])) if started else set()  # the workers (their warm-up may not have run yet)
    p.kill()
    p.wait()
    spans = [json.loads(line) for line in open(trace)]
    servers = [s["server"] for s in spans if s["what"] == "forkserver"]
    workers = forked | {s["pid"] for s in spans if s["what"] == "worker-warm"}
    assert len(servers) == 1 and servers[0] in helpers and workers, (servers, helpers, workers)
    left = [*helpers, *workers]
    deadline = time.time() + 10  # (each worker's watch wakes at once; the server ends after them)
    while time.time() < deadline and not all(map(_gone, left)):
        time.sleep(0.05)
    assert all(map(_gone, left)), [pid for pid in left if not _gone(pid)]


def test_a_server_forked_in_place_leaves_its_lock_free(tmp_path):
    """The server forked from gputex itself copies multiprocessing's fork-server lock while the
    parent holds it (it starts the server under it): the server and every worker it forks must
    get it free, as an exec'd server has it, or a fork server asked for inside a worker hangs."""
    trace = tmp_path / "trace.jsonl"
    script = (
        "from gputex import early, workers\n"
        "assert early.start(['capture', 'a.png', 'b.png', '-o', 'out', '--jobs', '3'])\n"
        "expr = \"__import__('multiprocessing.forkserver').forkserver._forkserver._lock.locked()\"\n"
        "with workers.codec_workers(2, ('decode',)):\n"
        "    print(workers._POOLS['decode'].submit(eval, expr).result(timeout=60))\n"
        "early.stop()\n")
    for portable, forked in (("", True), ("serverfork", False)):
        trace.unlink(missing_ok=True)
        env = _env(GPUTEX_TRACE=str(trace), **({"GPUTEX_PORTABLE": portable} if portable else {}))
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
        assert (p.returncode, p.stdout.strip()) == (0, "False"), p.stderr
        spans = [json.loads(line) for line in open(trace)]
        assert [s["forked"] for s in spans if s["what"] == "forkserver"] == [forked]


def test_host_likely(tmp_path, monkeypatch):
    """``upload X.png --mips -o OUT`` with 8-bit PNGs of at most 2^24 texels looks like the host
    engine's work (the CLI then does not begin wgpu at once); anything that wants a device does not."""
    import numpy as np

    from gputex.mips.cpu import MAX_TEXELS
    from gputex.warmup import HOST_MAX_TEXELS

    assert HOST_MAX_TEXELS == MAX_TEXELS
    for name in ("GPUTEX_ADAPTER", "GPUTEX_BACKEND", "GPUTEX_SPLIT_DEVICE", "GPUTEX_MIPS_ENGINE"):
        monkeypatch.delenv(name, raising=False)
    eight = write(tmp_path / "a.png", np.zeros((4, 6, 4), np.uint8))
    deep = write(tmp_path / "d.png", np.zeros((4, 6, 4), np.uint16))
    assert host_likely(["upload", eight, "--mips", "-o", "a.ktx2"]) is True
    assert host_likely(["upload", eight, eight, "--mips", "-o", "out/"]) is True
    assert host_likely(["upload", eight, "-o", "a.ktx2"]) is False  # no mips
    assert host_likely(["upload", eight, "--mips"]) is False  # no file
    assert host_likely(["upload", eight, "--mips", "-o", "a.ktx2", "--verify"]) is False
    assert host_likely(["upload", eight, "--mips", "-o", "a.ktx2", "--adapter", "x"]) is False
    assert host_likely(["upload", deep, "--mips", "-o", "d.ktx2"]) is False  # 16-bit: the GPU step
    assert host_likely(["upload", eight, deep, "--mips", "-o", "out/"]) is False
    assert host_likely(["upload", str(tmp_path / "none.png"), "--mips", "-o", "x.ktx2"]) is False
    assert host_likely(["capture", eight, "--mips", "-o", "out/"]) is False
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")
    assert host_likely(["upload", eight, "--mips", "-o", "a.ktx2"]) is False
