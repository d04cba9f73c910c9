"""The owner of a run (gputex.run), its library verbs, --verify, and the developer overrides."""

from __future__ import annotations

import json

import imagecodecs
import numpy as np
import pytest
from typer.testing import CliRunner

from gputex.cli import app

runner = CliRunner()


def _png(path, seed: int, w: int = 13, h: int = 7):
    a = np.random.default_rng(seed).integers(0, 256, (h, w, 4), np.uint8)
    path.write_bytes(imagecodecs.png_encode(a))
    return str(path), a


def test_devflags_knows_each_flag(monkeypatch):
    from gputex.devflags import FLAGS, flag, int_flag

    with pytest.raises(KeyError, match="GPUTEX_NOPE is not a gputex developer flag"):
        flag("GPUTEX_NOPE")
    monkeypatch.setenv("GPUTEX_WORKERS", " 5 ")
    assert flag("GPUTEX_WORKERS") == "5" and int_flag("GPUTEX_WORKERS") == 5
    monkeypatch.setenv("GPUTEX_WORKERS", "")
    assert flag("GPUTEX_WORKERS") is None and int_flag("GPUTEX_WORKERS") is None
    assert "GPUTEX_COPY_THREADS" in FLAGS


def test_workers_and_copy_threads_are_parameters(monkeypatch):
    from gputex.parallel import copy_threads, set_copy_threads
    from gputex.workers import worker_count

    monkeypatch.setenv("GPUTEX_WORKERS", "5")
    assert worker_count(16, 10) == 5  # the developer override
    assert worker_count(16, 10, workers=2) == 2 and worker_count(16, 10, workers=0) == 0  # the parameter wins
    assert worker_count(16, 1, workers=4) == 0  # one input: never processes
    monkeypatch.setenv("GPUTEX_COPY_THREADS", "3")
    try:
        assert copy_threads() == 3  # read when needed, not frozen at import
        set_copy_threads(1)
        assert copy_threads() == 1
        set_copy_threads(9)
        assert copy_threads() == 4  # at most MAX_COPY_THREADS
    finally:
        set_copy_threads(None)


@pytest.mark.gpu
def test_upload_to_a_file_verifies_only_when_asked(gpu, tmp_path):
    path, _ = _png(tmp_path / "img.png", 1)
    r = runner.invoke(app, ["upload", path, "-o", str(tmp_path / "a.ktx2"), "--json"])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)
    assert "verified" not in obj and obj["outputs"] == [str(tmp_path / "a.ktx2")]
    assert "verify" not in obj["timings"]
    r = runner.invoke(app, ["upload", path, "-o", str(tmp_path / "b.ktx2"), "--json", "--verify"])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)
    assert obj["verified"] is True and "verify" in obj["timings"]
    assert (tmp_path / "a.ktx2").read_bytes() == (tmp_path / "b.ktx2").read_bytes()
    r = runner.invoke(app, ["upload", path, "--no-verify"])
    assert r.exit_code == 0 and "; not verified" in r.stdout and "exact round trip" not in r.stdout
    r = runner.invoke(app, ["upload", path])
    assert r.exit_code == 0 and "; exact round trip" in r.stdout


@pytest.mark.gpu
def test_library_batch_verbs_write_what_the_cli_writes(gpu, tmp_path):
    from gputex.pipeline import Options
    from gputex.run import capture_files, upload_files

    a, _ = _png(tmp_path / "a.png", 2, 17, 9)
    b, pixels = _png(tmp_path / "b.png", 3, 6, 5)
    results = capture_files([a, b], str(tmp_path / "lib"), Options(mips=True, level="all"), session=gpu)
    assert [r.source for r in results] == [a, b] and all(r.ok for r in results)
    r = runner.invoke(app, ["capture", a, b, "--mips", "--level", "all", "-o", str(tmp_path / "cli")])
    assert r.exit_code == 0, r.output
    for res in results:
        for out in res.outputs:
            name = out.rsplit("/", 1)[1]
            assert (tmp_path / "lib" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    from PIL import Image

    assert np.array_equal(np.asarray(Image.open(tmp_path / "lib" / "b_level0.png")), pixels)
    up, = upload_files([b], Options(mips=True), out=str(tmp_path / "lib.ktx2"), session=gpu)
    assert up.ok and up.verified is None and up.outputs == [str(tmp_path / "lib.ktx2")]
    r = runner.invoke(app, ["upload", b, "--mips", "-o", str(tmp_path / "cli.ktx2")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "lib.ktx2").read_bytes() == (tmp_path / "cli.ktx2").read_bytes()


@pytest.mark.gpu
def test_library_upload_is_the_cli_step(gpu):
    """gputex.upload goes through pipeline.upload_image: mips and a resize as the CLI makes them."""
    import gputex

    a = np.random.default_rng(4).integers(0, 256, (9, 14, 4), np.uint8)
    tex = gputex.upload(gpu, gputex.from_array(a), mips=True, size=(7, 5), filter="kaiser")
    try:
        assert (tex.width, tex.height, tex.levels) == (7, 5, 3)
    finally:
        tex.destroy()
    tex = gputex.upload(gpu, gputex.from_array(a), mips=2)
    try:
        assert tex.levels == 2 and np.array_equal(gputex.capture(tex, 0), a)
    finally:
        tex.destroy()
    with pytest.raises(gputex.FormatError, match="^format bc7-rgba-unorm cannot be filled from an image$"):
        gputex.upload(gpu, gputex.from_array(a), "bc7-rgba-unorm")
