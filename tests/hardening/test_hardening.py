"""Hardening: the bad-input corpus, bombs under a memory bound, kill -9 and Ctrl-C mid-batch,
a full disk, unreadable files, GPU out-of-memory and device loss, awkward file names."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import wgpu
from PIL import Image
from typer.testing import CliRunner

import gputex
from gputex.cli import app

from factory import noise, write

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "bad_inputs")
CASES = json.load(open(os.path.join(CORPUS, "cases.json")))
runner = CliRunner()


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_corpus_case(gpu, case):
    path = os.path.join(CORPUS, "files", case["file"])
    r = runner.invoke(app, ["upload", path])
    assert r.exit_code == case["exit"]
    assert r.stderr.splitlines() == [f"gputex: {path}: {case['message']}"]


def test_corpus_as_one_batch_goes_on(gpu, tmp_path):
    good = write(tmp_path / "good.png", np.zeros((5, 7, 3), np.uint8))
    paths = [os.path.join(CORPUS, "files", c["file"]) for c in CASES]
    r = runner.invoke(app, ["capture", *paths[:10], str(good), *paths[10:], "-o", str(tmp_path / "out")])
    assert r.exit_code == 1
    assert len(r.stderr.splitlines()) == len(CASES)
    assert os.listdir(tmp_path / "out") == ["good.png"]


def test_bombs_stay_under_200_mb():
    bombs = [os.path.join(CORPUS, "files", c["file"]) for c in CASES if c["file"].startswith("bomb")]
    # VmHWM of the child's own memory map (its ru_maxrss would include pytest's peak at fork)
    code = ("import sys, gputex\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n        gputex.decode(p)\n        print('decoded', p)\n"
            "    except gputex.LimitError:\n        pass\n    except gputex.DecodeError:\n        pass\n"
            "print(int([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]) // 1024)")
    out = subprocess.run([sys.executable, "-c", code, *bombs], capture_output=True, text=True, check=True)
    lines = out.stdout.split()
    assert "decoded" not in lines
    assert int(lines[-1]) < 200, f"peak RSS {lines[-1]} MB"


def _batch(tmp_path, n=60, size=384):
    src = tmp_path / "src"
    src.mkdir()
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (size, size, 4), np.uint8)
    for i in range(n):
        Image.fromarray(np.roll(a, i, axis=1)).save(src / f"img{i:03d}.png", compress_level=1)
    return src, a


def _check_outputs(out, a):
    names = sorted(os.listdir(out))
    assert not [n for n in names if n.startswith(".gputex-")], names
    for name in names:
        i = int(name[3:6])
        got = np.asarray(Image.open(out / name))
        assert np.array_equal(got, np.roll(a, i, axis=1)), name


def test_kill_9_leaves_no_partial_output(gpu, tmp_path):
    src, a = _batch(tmp_path)
    out = tmp_path / "out"
    files = sorted(str(p) for p in src.iterdir())
    for delay in (0.3, 0.8, 1.5, 2.5):
        p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *files, "-o", str(out),
                              "--png-compression", "9"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline and not (out.exists() and os.listdir(out)):
            time.sleep(0.01)
        time.sleep(delay * 0.1)
        p.send_signal(signal.SIGKILL)
        p.wait()
        _check_outputs(out, a)


def test_ctrl_c_exits_130_with_a_summary(gpu, tmp_path):
    src, a = _batch(tmp_path)
    out = tmp_path / "out"
    files = sorted(str(p) for p in src.iterdir())
    p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *files, "-o", str(out),
                          "--png-compression", "9"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline and not (out.exists() and os.listdir(out)):
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("gputex: interrupted after ") and last.endswith("every output written is complete")
    _check_outputs(out, a)


def test_disk_full_leaves_nothing(gpu, tmp_path, monkeypatch):
    import errno

    enc = sys.modules["gputex.encode"]

    def full(fd, data, *offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(enc.os, "write", full)  # every way a file's bytes are written
    monkeypatch.setattr(enc.os, "pwrite", full)
    img = tmp_path / "x.png"
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(img)
    out = tmp_path / "out"
    r = runner.invoke(app, ["capture", str(img), "-o", str(out)])
    assert r.exit_code == 1
    assert r.stderr.strip() == f"gputex: {out / 'x.png'}: write failed (No space left on device)"
    assert os.listdir(out) == []


def test_unreadable_file(gpu, tmp_path, monkeypatch):
    img = tmp_path / "secret.png"
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(img)
    real_open = os.open

    def deny(path, *args, **kwargs):  # root reads anything: deny this one path (inputs are os.open'ed)
        if os.fspath(path) == str(img):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    r = runner.invoke(app, ["upload", str(img)])
    assert r.exit_code == 1
    assert r.stderr.strip() == f"gputex: {img}: permission denied"


def _patch_create_texture(monkeypatch, fail):
    cls = type(gputex.Session().device)
    original = cls.create_texture

    def create_texture(self, **kw):
        exc = fail(kw)
        if exc is not None:
            raise exc
        return original(self, **kw)

    monkeypatch.setattr(cls, "create_texture", create_texture)


def test_gpu_out_of_memory_fails_only_that_file(gpu, tmp_path, monkeypatch):
    _patch_create_texture(monkeypatch, lambda kw: wgpu.GPUOutOfMemoryError("Out of memory")
                          if kw["size"][0] == 31 else None)
    paths = []
    for w in (30, 31, 32):
        paths.append(write(tmp_path / f"w{w}.png", np.zeros((4, w, 3), np.uint8)))
    r = runner.invoke(app, ["upload", *paths])
    assert r.exit_code == 1
    assert r.stderr.strip() == f"gputex: {paths[1]}: create rgba8unorm-srgb 31x4: out of GPU memory"
    assert r.stdout.count("exact round trip") == 2


def test_lost_device_is_recreated_and_the_file_retried(gpu, tmp_path, monkeypatch):
    state = {"n": 0}

    def once(kw):
        state["n"] += 1
        return RuntimeError("Parent device is lost") if state["n"] == 2 else None

    _patch_create_texture(monkeypatch, once)
    p = write(tmp_path / "x.png", np.full((4, 5, 3), 7, np.uint8))
    r = runner.invoke(app, ["upload", p, p])
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("exact round trip") == 2
    assert "device recreated, input retried" in r.stderr


def test_awkward_names(rng, gpu, tmp_path):
    a = noise(rng, 5, 6, 3)
    p = write(tmp_path / "my picture ñ 写真.png", a)
    out = tmp_path / "out dir"
    r = runner.invoke(app, ["capture", str(p), "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert os.listdir(out) == ["my picture ñ 写真.png"]
    assert np.array_equal(np.asarray(Image.open(out / "my picture ñ 写真.png"))[..., :3], a)


def _workers_alive() -> int:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if "multiprocessing.spawn" in line and "gputex" not in line
               and "spawn_main" in line)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_worker_processes_end_with_gputex(gpu, tmp_path, sig):
    """With codec worker processes (GPUTEX_WORKERS, as --jobs >= 3 batches run): kill -9 or
    Ctrl-C leaves complete outputs only, nothing in /dev/shm, and no worker process behind."""
    src, a = _batch(tmp_path)
    out = tmp_path / "out"
    files = sorted(str(p) for p in src.iterdir())
    before = _workers_alive()
    env = dict(os.environ, GPUTEX_WORKERS="2")
    p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", *files, "-o", str(out), "--jobs", "3",
                          "--png-compression", "9"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 30
    while time.time() < deadline and not (out.exists() and os.listdir(out)):
        time.sleep(0.01)
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    _check_outputs(out, a)
    deadline = time.time() + 10
    while time.time() < deadline and _workers_alive() > before:
        time.sleep(0.2)
    assert _workers_alive() <= before
    if os.path.isdir("/dev/shm") and sig == signal.SIGINT:
        assert not [n for n in os.listdir("/dev/shm") if n.startswith(f".gputex-{p.pid}-")]
