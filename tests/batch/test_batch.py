"""Batch inputs (globs, -r trees, @lists, stdin), incremental builds, ordering, encoders, memory."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import imagecodecs
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from gputex.batch import expand_inputs
from gputex.cli import app
from gputex.encode import encode

from factory import noise, write

runner = CliRunner()


@pytest.fixture
def tree(rng, tmp_path):
    """src/a.png, src/sub/b.png, src/sub/deeper/a.png (same stem), src/notes.txt."""
    src = tmp_path / "src"
    imgs = {}
    for rel in ("a.png", "sub/b.png", "sub/deeper/a.png"):
        imgs[rel] = noise(rng, 6, 9, 3)
        write(src / rel, imgs[rel])
    (src / "notes.txt").write_text("not an image")
    return src, imgs


def test_expand_inputs(tree, tmp_path):
    src, _ = tree
    items = expand_inputs([str(src)], recursive=True)
    assert [(os.path.relpath(i.path, src), i.subdir) for i in items] == [
        ("a.png", ""), ("sub/b.png", "sub"), ("sub/deeper/a.png", os.path.join("sub", "deeper"))]
    assert [os.path.relpath(i.path, src) for i in expand_inputs([str(src / "**" / "*.png")])] == [
        "a.png", "sub/b.png", "sub/deeper/a.png"]
    lst = tmp_path / "list.txt"
    lst.write_text(f"# inputs\n{src / 'a.png'}\n\n{src / 'sub' / 'b.png'}\n")
    assert [i.path for i in expand_inputs([f"@{lst}"])] == [str(src / "a.png"), str(src / "sub" / "b.png")]
    assert [i.path for i in expand_inputs(["-"], stdin=io.StringIO(f"{src / 'a.png'}\n"))] == [str(src / "a.png")]
    assert expand_inputs([str(src)])[0].error == f"{src}: is a directory (add -r to take the images in it)"
    assert expand_inputs([str(src / "*.jpg")])[0].error == f"{src / '*.jpg'}: no files match"


def test_recursive_capture_keeps_the_tree(gpu, tree, tmp_path):
    src, imgs = tree
    out = tmp_path / "out"
    r = runner.invoke(app, ["capture", str(src), "-r", "-o", str(out), "--jobs", "2"])
    assert r.exit_code == 0, r.stderr
    for rel, a in imgs.items():
        got = np.asarray(Image.open(out / rel))
        assert np.array_equal(got[..., :3], a)


def test_stdin_list_and_json_order(gpu, tree, tmp_path):
    src, imgs = tree
    paths = [str(src / rel) for rel in imgs] * 3
    r = runner.invoke(app, ["upload", "-", "--json", "--jobs", "3"], input="\n".join(paths) + "\n")
    assert r.exit_code == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["source"] for o in objs] == paths
    assert all(o["verified"] for o in objs)
    assert set(objs[0]["timings"]) >= {"decode", "upload", "capture"}


def test_skip_existing(gpu, tree, tmp_path):
    src, _ = tree
    out = tmp_path / "out"
    first = runner.invoke(app, ["capture", str(src), "-r", "-o", str(out), "--json"])
    assert first.exit_code == 0
    again = runner.invoke(app, ["capture", str(src), "-r", "-o", str(out), "--json", "--skip-existing"])
    assert [json.loads(x).get("skipped") for x in again.stdout.splitlines()] == [True, True, True]
    os.utime(src / "sub" / "b.png")  # touched: newer than its output
    os.utime(out / "sub" / "b.png", (0, 0))
    third = runner.invoke(app, ["capture", str(src), "-r", "-o", str(out), "--json", "--skip-existing"])
    assert [json.loads(x).get("skipped") for x in third.stdout.splitlines()] == [True, None, True]


def test_same_names_are_deterministic_with_many_jobs(gpu, tmp_path):
    paths = []
    for d in range(6):
        paths.append(write(tmp_path / f"d{d}" / "x.png", np.full((3, 4, 3), d * 40, np.uint8)))
    out = tmp_path / "out"
    r = runner.invoke(app, ["capture", *paths, "-o", str(out), "--jobs", "4"])
    assert r.exit_code == 0
    for d, name in enumerate(["x.png", "x-2.png", "x-3.png", "x-4.png", "x-5.png", "x-6.png"]):
        assert np.asarray(Image.open(out / name))[0, 0, 0] == d * 40


@pytest.mark.parametrize("level", [None, 0, 1, 6, 9])
@pytest.mark.parametrize("shape,dtype", [((5, 7, 4), np.uint8), ((5, 7, 3), np.uint8), ((5, 7, 1), np.uint8),
                                         ((5, 7, 2), np.uint8), ((5, 7, 4), np.uint16)])
def test_every_png_encoder_setting_is_exact(rng, tmp_path, level, shape, dtype):
    a = rng.integers(0, np.iinfo(dtype).max + 1, shape, dtype=np.int64).astype(dtype)
    path = str(tmp_path / "x.png")
    encode(a, path, png_level=level)
    got = imagecodecs.png_decode(open(path, "rb").read())
    assert got.dtype == dtype
    assert np.array_equal(got.reshape(shape), a)
    assert b"sRGB" in open(path, "rb").read()[:64]


def test_peak_memory_does_not_grow_with_file_count(rng, gpu, tmp_path):
    src = tmp_path / "src"
    a = noise(rng, 512, 512, 4)
    for i in range(40):
        write(src / f"i{i:02d}.png", a, compress_level=1)
    files = sorted(str(p) for p in src.iterdir())
    # VmHWM of the process's own memory map (a forked child's ru_maxrss includes pytest's peak)
    code = ("import sys\nfrom gputex.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
            "print(int(hwm) // 1024, file=sys.stderr)")

    def peak(n: int) -> int:
        argv = ["gputex", "capture", *files[:n], "-o", str(tmp_path / f"out{n}"), "--mips", "--level", "all",
                "--jobs", "2"]
        p = subprocess.run([sys.executable, "-c", f"import sys; sys.argv = {argv!r}\n" + code],
                           capture_output=True, text=True)
        return int(p.stderr.strip().splitlines()[-1])

    small, large = peak(5), peak(40)
    assert large - small < 40, f"peak RSS {small} MB for 5 files, {large} MB for 40"


@pytest.mark.gpu  # needs an adapter: the CLI makes its own device
def test_worker_processes_give_the_same_files(rng, tmp_path):
    """Codecs in worker processes (GPUTEX_WORKERS, as batches with --jobs >= 3 run): the same
    bytes as the in-thread path, the bad input reported and skipped, nothing left in /dev/shm."""
    src = tmp_path / "src"
    big = noise(rng, 700, 800, 4)
    big[..., 3] = 200
    write(src / "a.png", big)  # > 1 MiB: the fpng path
    write(src / "b.png", noise(rng, 33, 17, None, np.uint16))  # 16-bit grey
    (src / "c.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    outs = {}
    for workers in ("0", "2"):
        out = tmp_path / f"out{workers}"
        shm = tmp_path / f"shm{workers}"  # its own shared-memory folder: other tests may run beside it
        shm.mkdir()
        env = dict(os.environ, GPUTEX_WORKERS=workers, GPUTEX_SHM_DIR=str(shm))
        p = subprocess.Popen([sys.executable, "-m", "gputex", "capture", str(src / "a.png"), str(src / "c.png"),
                              str(src / "b.png"), "--mips", "--level", "all", "-o", str(out), "--jobs", "3"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        _, stderr = p.communicate()
        assert p.returncode == 1
        assert stderr.count("\n") == 1 and f"{src / 'c.png'}: " in stderr
        outs[workers] = {f.name: f.read_bytes() for f in out.iterdir()}
        assert os.listdir(shm) == []
    assert len(outs["0"]) == 10 + 6 and outs["0"] == outs["2"]


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_streaming_png_encoder_is_exact(rng, tmp_path, monkeypatch, channels, dtype):
    """The band-parallel streaming writer (used above 256 MiB) forced on small images: a valid
    PNG (imagecodecs/libpng and Pillow read it), the same pixels, the colour chunk kept."""
    mod = sys.modules["gputex.encode"]
    monkeypatch.setattr(mod, "STREAM_MIN_BYTES", 0)
    a = rng.integers(0, 256 if dtype == np.uint8 else 65536, (301, 67, channels), dtype)
    path = tmp_path / "s.png"
    encode(a, str(path), color_space="linear")
    data = path.read_bytes()
    back = imagecodecs.png_decode(data)
    assert np.array_equal(back.reshape(a.shape), a)
    assert b"gAMA" in data[:200] and data.count(b"IDAT") >= 1
    Image.open(path).load()


def test_adler32_combine_matches_zlib(rng):
    import zlib

    from gputex.png import adler32_combine

    x, y = rng.bytes(100003), rng.bytes(7777)
    assert adler32_combine(zlib.adler32(x), zlib.adler32(y), len(y)) == zlib.adler32(x + y)
