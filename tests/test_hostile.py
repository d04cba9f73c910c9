"""Hostile files, small machines and signals (issue 15): each class the attacks found, built
here from scratch, reproduced, and held."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bombs  # noqa: E402

ROOT = os.path.dirname(HERE)

# -- class 2: decompression bombs, refused before the large allocation -----------------------

_PEAK = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a failing run must not take the machine
import gputex
from gputex.ktx2 import validate
from gputex.texfile import is_texture_file, read_texture_file
mode, path = sys.argv[1], sys.argv[2]
try:
    if mode == "validate":
        problems = [p for p in validate(open(path, "rb").read(), path) if p.fatal]
        print("refused" if problems else "accepted", problems[:1])
    else:
        if mode == "info":
            read_texture_file(path, inflate=False)
        elif is_texture_file(path):
            read_texture_file(path)
        else:
            gputex.decode(path)
        print("accepted")
except gputex.LimitError as e:
    print("refused", e)
except gputex.GputexError as e:
    print("error", e)
except MemoryError:
    print("memoryerror")
print(int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]) // 1024)
"""


@pytest.fixture(scope="module")
def bomb_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bombs")
    out = {}
    for name, make in bombs.ALL.items():
        p = folder / name
        p.write_bytes(make())
        out[name] = str(p)
    return out


def _peak(mode: str, path: str) -> tuple[str, int]:
    r = subprocess.run([sys.executable, "-c", _PEAK, mode, path], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    lines = r.stdout.strip().splitlines()
    assert r.returncode == 0 and lines, r.stderr
    return lines[0], int(lines[-1])


@pytest.mark.parametrize("name", list(bombs.ALL))
def test_bomb_refused_from_the_header_under_300_mb(bomb_files, name):
    verdict, peak = _peak("decode", bomb_files[name])
    assert verdict.startswith("refused " + bomb_files[name] + ": "), verdict
    assert "raise it with --max-" in verdict, verdict
    assert peak < 300, f"{name}: peak RSS {peak} MB"


@pytest.mark.parametrize("name", [n for n in bombs.ALL if n.endswith(".ktx2")])
def test_info_and_validate_do_not_inflate_bombs(bomb_files, name):
    verdict, peak = _peak("info", bomb_files[name])
    assert verdict == "accepted" and peak < 300, (verdict, peak)
    verdict, peak = _peak("validate", bomb_files[name])
    assert verdict.startswith("refused") and "not inflated" in verdict and peak < 300, (verdict, peak)


# -- class 1: a small /dev/shm (Docker's 64 MB) --------------------------------------------

def _gputex(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "gputex", *args], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})), **kw)


def _large_images(folder, n, side, seed):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder.mkdir()
    paths = []
    y, x = np.mgrid[0:side, 0:side]
    for i in range(n):
        a = np.stack([(x + i) % 256, (y * 3) % 256, (x ^ y) % 256, np.full_like(x, 255 - i)], axis=2).astype(np.uint8)
        a[rng.integers(0, side, 500), rng.integers(0, side, 500)] = rng.integers(0, 256, (500, 4), dtype=np.uint8)
        p = folder / f"big{i}.png"
        Image.fromarray(a).save(p, compress_level=1)
        paths.append(str(p))
    return paths


@pytest.fixture
def small_shm(tmp_path):
    mnt = tmp_path / "shm64"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"cannot mount a 64 MB tmpfs here (needs root): {r.stderr.strip()}")
    yield str(mnt)
    subprocess.run(["umount", "-l", str(mnt)])


@pytest.mark.gpu
def test_small_shared_memory_falls_back_with_identical_outputs(gpu, tmp_path, small_shm):
    """Four 3000x3000 RGBA images (36 MB each decoded) with --jobs 4 through a 64 MB tmpfs:
    every output written, byte-identical to the default run, nothing left in the tmpfs."""
    paths = _large_images(tmp_path / "src", 4, 3000, seed=15)
    outs = {}
    for name, env in (("default", {}), ("small", {"GPUTEX_SHM_DIR": small_shm})):
        out = tmp_path / name
        r = _gputex("capture", *paths, "-o", str(out), "--jobs", "4", env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        outs[name] = {n: (out / n).read_bytes() for n in sorted(os.listdir(out))}
    assert sorted(outs["small"]) == [f"big{i}.png" for i in range(4)]
    assert outs["small"] == outs["default"]
    assert os.listdir(small_shm) == []
