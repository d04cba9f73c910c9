"""Reading one large input ahead (``inputs.prefetch`` / ``read_ahead``): the decode gets the
bytes of the file as it is when the decode reads it, prefetched or not."""

from __future__ import annotations

import os

import numpy as np
import pytest

import gputex
from gputex import inputs

from factory import noise, write


@pytest.fixture
def small_ok(monkeypatch):
    """Prefetch files of any size (the tests' PNGs are small), and nothing left over."""
    monkeypatch.setattr(inputs, "PREFETCH_MIN_BYTES", 1)
    yield
    from gputex import pngdec

    inputs._early.clear()
    pngdec._ahead.clear()


LIMITS = (1000, 7.0)


@pytest.mark.parametrize("argv,want", [
    (["upload", "a.png", "--mips", "-o", "a.ktx2"], [("a.png", LIMITS)]),
    (["capture", "a.png", "-o", "out/"], [("a.png", LIMITS)]),
    (["upload", "a.png"], [("a.png", LIMITS)]),
    (["upload", "a.png", "--max-pixels", "99", "-o", "a.ktx2"], [("a.png", None)]),  # read, not decoded
    (["upload", "a.png", "--max-ratio=3"], [("a.png", None)]),
    (["upload", "a.png", "b.png", "-o", "out/"], []),  # a batch: its workers read the files
    (["upload", "--mips", "a.png"], []),
    (["upload", "-", "-o", "x.ktx2"], []),  # stdin
    (["upload", "@list.txt", "-o", "out/"], []),
    (["upload", "a.png", "--workers", "1", "-o", "a.ktx2"], []),  # a worker process decodes it
    (["capture", "a.png", "--memory=512", "-o", "out/"], []),
    (["upload", "a.png", "--help"], []),
    (["info", "a.png"], []),
    (["upload"], []),
])
def test_read_ahead_takes_one_input_followed_by_options(monkeypatch, argv, want):
    seen: list = []
    monkeypatch.setattr(inputs, "prefetch", lambda path, decode=None: seen.append((path, decode)))
    inputs.read_ahead(argv, max_pixels=LIMITS[0], max_ratio=LIMITS[1])
    assert seen == want


@pytest.mark.parametrize("depth,channels", [(8, 4), (8, 3), (16, 2)])
def test_decoded_ahead_pixels_are_the_decodes(tmp_path, rng, small_ok, monkeypatch, depth, channels):
    """The decode begun by the prefetch is the one ``gputex.decode`` returns (taken once: the
    file is inflated once), with the same pixels as a decode of the file alone; within the
    limits only."""
    from gputex import pngdec

    inflated = []
    real = pngdec._counted
    monkeypatch.setattr(pngdec, "_counted", lambda *args: inflated.append(1) or real(*args))
    a = noise(rng, 50, 33, channels, np.uint16 if depth == 16 else np.uint8)
    path = write(tmp_path / "a.png", a)
    inputs.prefetch(path, decode=(50 * 33, 1000.0))
    inputs._early[path][0].wait()
    assert len(pngdec._ahead) == 1
    img = gputex.decode(path)
    assert pngdec._ahead == {}  # taken
    assert len(inflated) == 1  # by the decode ahead only
    assert np.array_equal(img.pixels, a) and img.pixels.dtype == a.dtype
    assert np.array_equal(gputex.decode(path).pixels, a)
    for limits in ((50 * 33 - 1, 1000.0), (50 * 33, 0.5)):  # over the pixels, over the ratio
        inputs.prefetch(path, decode=limits)
        inputs._early[path][0].wait()
        (_, done, box), = pngdec._ahead.values()
        done.wait()
        assert box == []  # nothing decoded ahead: the decode does it
        assert np.array_equal(gputex.decode(path).pixels, a)


def test_prefetched_bytes_are_the_files(tmp_path, rng, small_ok):
    a = noise(rng, 40, 30, 4)
    path = write(tmp_path / "a.png", a)
    inputs.prefetch(path)
    assert path in inputs._early
    ready, box = inputs._early[path]
    ready.wait()
    assert box and box[0][1] == open(path, "rb").read()
    img = gputex.decode(path)  # takes them (once)
    assert np.array_equal(img.pixels, a)
    assert path not in inputs._early
    assert np.array_equal(gputex.decode(path).pixels, a)  # read as before


def test_a_file_changed_after_the_prefetch_is_read_again(tmp_path, rng, small_ok):
    a, b = noise(rng, 40, 30, 4), noise(rng, 41, 30, 4)
    path = write(tmp_path / "a.png", a)
    inputs.prefetch(path, decode=(1 << 30, 1000.0))
    inputs._early[path][0].wait()
    os.replace(write(tmp_path / "b.png", b), path)  # another file (inode) under the name
    from gputex import pngdec

    assert len(pngdec._ahead) == 1  # a.png's decode ahead
    assert np.array_equal(gputex.decode(path).pixels, b)
    assert pngdec._ahead == {}  # not held after the file was read again
    path2 = write(tmp_path / "c.png", a)
    inputs.prefetch(path2)
    inputs._early[path2][0].wait()
    with open(path2, "r+b") as f:  # the same file rewritten in place, a byte longer
        f.seek(0, os.SEEK_END)
        f.write(b"\0")
    assert inputs.read_input(path2) == open(path2, "rb").read()


def test_only_large_pngs_are_read_ahead(tmp_path, rng, monkeypatch):
    monkeypatch.setattr(inputs, "PREFETCH_MIN_BYTES", 1 << 20)
    a = noise(rng, 40, 30, 4)
    small = write(tmp_path / "small.png", a)
    big = tmp_path / "big.bin"
    big.write_bytes(b"not a png" * 200000)
    try:
        for path in (small, str(big), str(tmp_path / "missing.png"), str(tmp_path)):
            inputs.prefetch(path, decode=(1 << 30, 1000.0))
            ready, box = inputs._early[path]
            ready.wait()
            assert box == [], path
        assert np.array_equal(gputex.decode(small).pixels, a)
        with pytest.raises(gputex.InputError, match=r"missing\.png: no such file"):
            inputs.read_input(str(tmp_path / "missing.png"))
    finally:
        inputs._early.clear()


@pytest.mark.gpu
@pytest.mark.slow  # two 2048² processes: ~8 s on the 2-core lavapipe machine
def test_the_cli_decodes_one_large_input_ahead_with_the_same_output(gpu, tmp_path, rng):
    """``python -m gputex upload big.png --mips -o big.ktx2``, one PNG of 1 MiB or more: read
    and decoded ahead (the trace shows it), the file byte-identical to the run that decodes
    it itself (``--max-pixels`` given: not decoded ahead) and to the pixels the test made."""
    import json
    import subprocess
    import sys

    from gputex.texfile import read_texture_file

    a = noise(rng, 2048, 2048, 4)  # noise: the PNG is over 16 MiB (the threshold is 1 MiB)
    src = write(tmp_path / "big.png", a)
    assert os.path.getsize(src) >= inputs.PREFETCH_MIN_BYTES
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outs, traces = [], []
    for extra in ([], ["--max-pixels", str(2048 * 2048)]):
        trace = tmp_path / f"trace{len(outs)}.jsonl"
        out = tmp_path / f"out{len(outs)}.ktx2"
        env = dict(os.environ, GPUTEX_TRACE=str(trace), PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.run([sys.executable, "-m", "gputex", "upload", src, "--mips", *extra, "-o", str(out)],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        outs.append(out.read_bytes())
        traces.append({json.loads(line)["what"] for line in trace.read_text().splitlines()})
    assert {"prefetch", "decode-ahead"} <= traces[0]
    assert "prefetch" in traces[1] and "decode-ahead" not in traces[1]
    assert outs[0] == outs[1]
    assert bytes(read_texture_file(str(tmp_path / "out0.ktx2")).levels[0]) == a.tobytes()


def test_the_entry_point_reads_ahead_before_the_cli_imports(tmp_path):
    """The console script and ``python -m gputex`` enter through ``gputex.start.console``, which
    starts the read ahead before typer (the CLI's imports) is loaded; the CLI is stubbed here."""
    import subprocess
    import sys

    import tomllib

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        assert tomllib.load(f)["project"]["scripts"]["gputex"] == "gputex.start:console"
    code = (
        "import sys, types\n"
        "from gputex import inputs\n"
        "seen = []\n"
        "inputs.prefetch = lambda path, **kw: seen.append((path, 'typer' in sys.modules))\n"
        "sys.modules['gputex.cli'] = types.SimpleNamespace(console=lambda: print(seen, 'typer' in sys.modules))\n"
        "sys.argv = ['gputex', 'upload', 'big.png', '--mips', '-o', 'big.ktx2']\n"
        "from gputex.start import console\n"
        "console()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == "[('big.png', False)] False"
