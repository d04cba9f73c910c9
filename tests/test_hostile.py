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
