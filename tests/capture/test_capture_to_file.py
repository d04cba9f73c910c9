"""Texture files streamed from the capture (``capture_to_file``) and written through
``AtomicFile``: the same bytes as the in-memory writers over the bytes the test put in, whole or
nothing, and ``ktx validate`` passing where the tool is present."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess

import numpy as np
import pytest
from test_capture_plan import _filled

import gputex
from gputex.atomic import AtomicFile
from gputex.containers.dds import write_dds
from gputex.containers.ktx2 import stream_ktx2, write_ktx2
from gputex.texfile import read_texture_file, write_texture_file

cap = importlib.import_module("gputex.capture")
KTX = next((p for p in (os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "peers", "ktx"),
                        shutil.which("ktx") or "") if p and os.path.isfile(p)), None)


@pytest.mark.gpu
@pytest.mark.parametrize("name,w,h,layers", [
    ("rgba8unorm", 61, 37, 3),  # rows padded to 256 in the read-back buffer, an array texture
    ("r8unorm", 1000, 7, 1),
    ("rgba16float", 5, 300, 2),
])
@pytest.mark.parametrize("budget", [2048, 64 << 20])  # many groups (row bands), one group
def test_capture_to_file_writes_what_the_writers_write(gpu, tmp_path, name, w, h, layers, budget):
    levels = max(w, h).bit_length()
    tex, want = _filled(gpu, name, w, h, layers, levels)
    tex.array = layers > 1  # stored as an array texture (a file reads back as the shape written)
    try:
        expected = cap.as_texture_file(tex, want)  # the bytes the test put in, not read back
        for suffix, writer in ((".ktx2", write_ktx2), (".dds", write_dds)):
            for premultiplied in (False, True):
                expected.premultiplied = premultiplied
                path = str(tmp_path / f"t{int(premultiplied)}{suffix}")
                assert cap.capture_to_file(tex, path, budget=budget, premultiplied=premultiplied)
                with open(path, "rb") as f:
                    got = f.read()
                assert got == b"".join(bytes(p) for p in writer(expected)), (suffix, premultiplied)
                assert [bytes(lv) for lv in read_texture_file(path).levels] == want
                if KTX and suffix == ".ktx2":
                    done = subprocess.run([KTX, "validate", path], capture_output=True, text=True)
                    assert done.returncode == 0, done.stdout + done.stderr
        assert sorted(os.listdir(tmp_path)) == ["t0.dds", "t0.ktx2", "t1.dds", "t1.ktx2"]
    finally:
        tex.destroy()


@pytest.mark.gpu
def test_capture_to_file_is_whole_or_nothing(gpu, tmp_path, monkeypatch):
    tex, _ = _filled(gpu, "rgba8unorm", 40, 20, 1, 3)
    try:
        with pytest.raises(gputex.OutputError, match=r"nowhere/x\.ktx2: output folder .*nowhere does not exist"):
            cap.capture_to_file(tex, str(tmp_path / "nowhere" / "x.ktx2"))
        with pytest.raises(gputex.FormatError, match=r"x\.png: texture files are written as "):
            cap.capture_to_file(tex, str(tmp_path / "x.png"))
        (tmp_path / "old.ktx2").write_bytes(b"before")

        def unmappable(self, size):
            raise gputex.OutputError("no map here")

        with monkeypatch.context() as m:  # a file system that cannot map: nothing written, False
            m.setattr(AtomicFile, "map", unmappable)
            assert cap.capture_to_file(tex, str(tmp_path / "old.ktx2")) is False
            assert sorted(os.listdir(tmp_path)) == ["old.ktx2"]

        def interrupted(self, size):
            raise KeyboardInterrupt

        with monkeypatch.context() as m:  # any other error from the map: raised, no temporary left
            m.setattr(AtomicFile, "map", interrupted)
            m.setenv("GPUTEX_PORTABLE", "otmpfile")  # a named temporary, which would show
            with pytest.raises(KeyboardInterrupt):
                cap.capture_to_file(tex, str(tmp_path / "new.ktx2"))
            assert sorted(os.listdir(tmp_path)) == ["old.ktx2"]

        def broken(pieces, **kw):
            raise gputex.GPUError("copy failed")

        monkeypatch.setattr(cap, "_read_pieces", broken)
        for otmpfile in (True, False):
            if not otmpfile:
                monkeypatch.setenv("GPUTEX_PORTABLE", "otmpfile")
            with pytest.raises(gputex.GPUError, match="copy failed"):
                cap.capture_to_file(tex, str(tmp_path / "old.ktx2"))
            with pytest.raises(gputex.GPUError, match="copy failed"):
                cap.capture_to_file(tex, str(tmp_path / "new.dds"))
            assert sorted(os.listdir(tmp_path)) == ["old.ktx2"]  # untouched, no temporary left
            assert (tmp_path / "old.ktx2").read_bytes() == b"before"
    finally:
        tex.destroy()


@pytest.mark.parametrize("otmpfile", [True, False])
def test_atomic_file_pieces_and_map(tmp_path, monkeypatch, otmpfile):
    if not otmpfile:
        monkeypatch.setenv("GPUTEX_PORTABLE", "otmpfile")
    path = str(tmp_path / "f.bin")
    with AtomicFile(path) as f:
        m = f.map(10)
        m[2:5] = b"abc"
        f.write_at(8, b"yz")
        assert os.listdir(tmp_path) == ([] if otmpfile else [os.path.basename(f.tmp or "")])
    assert open(path, "rb").read() == b"\0\0abc\0\0\0yz"
    assert os.listdir(tmp_path) == ["f.bin"]
    with pytest.raises(gputex.OutputError, match=r"f\.bin/x: output folder .*f\.bin does not exist"):
        AtomicFile(path + "/x")
    with pytest.raises(gputex.OutputError, match=r": is a folder; cannot write the output there"):
        AtomicFile(str(tmp_path))


@pytest.mark.parametrize("level", [1, 19])
def test_streamed_zstd_ktx2_equals_the_in_memory_writer(tmp_path, level):
    """``--zstd``: levels compressed on threads and written as they finish, the index last; the
    file is the in-memory writer's, and reads back to the levels the test made."""
    from gputex.formats import get_format
    from gputex.texfile import TextureFile, level_bytes

    rng = np.random.default_rng(level)
    tf = TextureFile(format=get_format("rgba8unorm-srgb"), width=300, height=70, levels=[b""] * 9,
                     color_space="srgb", source="t")
    tf.levels = [(rng.integers(0, 8, level_bytes(tf, i), np.uint8) * 3).tobytes() for i in range(9)]
    path = str(tmp_path / "z.ktx2")
    write_texture_file(tf, path, zstd=level)
    with open(path, "rb") as f:
        assert f.read() == b"".join(write_ktx2(tf, zstd=level))
    assert [bytes(lv) for lv in read_texture_file(path).levels] == tf.levels
    plain = str(tmp_path / "plain.ktx2")
    with AtomicFile(plain) as f:  # the streamer without zstd: levels at the layout's offsets
        stream_ktx2(tf, f)
    with open(plain, "rb") as f:
        assert f.read() == b"".join(write_ktx2(tf))
    if KTX:
        done = subprocess.run([KTX, "validate", path], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.gpu
def test_upload_falls_back_to_the_whole_write_under_the_same_name(gpu, tmp_path, tmp_png, monkeypatch, rng):
    """Where the file cannot be mapped, ``upload -o FOLDER`` writes it the other way, under the
    name it reserved (not a second one), with the same bytes."""
    from gputex import gpu_batch
    from gputex.pipeline import Options
    from gputex.run import upload_files

    src = tmp_png(rng.integers(0, 256, (24, 40, 4), np.uint8), "in.png")
    monkeypatch.setattr(gpu_batch, "DEFER_MAX_BYTES", 0)  # no deferred read-back: the streamed write
    real_map = AtomicFile.map
    outs = []
    for broken in (False, True):
        out = tmp_path / f"out{int(broken)}"
        out.mkdir()
        mapped: list[int] = []

        def map_(self, size, broken=broken, mapped=mapped):
            mapped.append(size)
            if broken:
                raise gputex.OutputError("no map")
            return real_map(self, size)

        with monkeypatch.context() as m:
            m.setattr(AtomicFile, "map", map_)
            (r,) = upload_files([src], Options(mips=True, container="ktx2"), session=gpu, out=str(out))
        assert mapped, "the streamed write (capture_to_file) was not tried"
        assert r.ok and r.outputs == [str(out / "in.ktx2")], r.error
        assert sorted(os.listdir(out)) == ["in.ktx2"]
        outs.append((out / "in.ktx2").read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("otmpfile", [True, False])
def test_atomic_file_failed_commit_leaves_nothing(tmp_path, monkeypatch, otmpfile):
    """A commit that cannot give the file its name (the target became a folder) raises a
    one-line error naming the path and leaves no ``.gputex-*.part`` temporary behind."""
    if not otmpfile:
        monkeypatch.setenv("GPUTEX_PORTABLE", "otmpfile")
    path = tmp_path / "f.bin"
    f = AtomicFile(str(path))
    f.write_at(0, b"data")
    path.mkdir()  # the name is taken by a folder now: the rename / link fails
    with pytest.raises(gputex.OutputError, match=r"f\.bin: write failed") as e:
        f.commit()
    assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == ["f.bin"] and path.is_dir() and os.listdir(path) == []
    assert f.fd == -1 and f.tmp is None


@pytest.mark.gpu
def test_upload_retry_after_device_loss_writes_the_same_name(gpu, tmp_path, tmp_png, monkeypatch, rng):
    """A device lost during the streamed write: the input is retried and writes the name it
    reserved the first time (``in.ktx2``, not ``in-2.ktx2``), whole."""
    from gputex import gpu_batch
    from gputex.errors import DeviceLostError
    from gputex.pipeline import Options
    from gputex.run import upload_files

    a = rng.integers(0, 256, (24, 40, 4), np.uint8)
    src = tmp_png(a, "in.png")
    monkeypatch.setattr(gpu_batch, "DEFER_MAX_BYTES", 0)  # no deferred read-back: the streamed write
    monkeypatch.setattr(gpu, "recreate", lambda *a, **kw: None)  # the test's session is kept
    real, calls = cap.capture_to_file, []

    def lost_once(tex, path, **kw):
        calls.append(path)
        if len(calls) == 1:
            raise DeviceLostError("GPU device lost (made by the test)")
        return real(tex, path, **kw)

    monkeypatch.setattr(cap, "capture_to_file", lost_once)
    out = tmp_path / "out"
    out.mkdir()
    (r,) = upload_files([src], Options(mips=True, container="ktx2"), session=gpu, out=str(out))
    assert r.ok and r.outputs == [str(out / "in.ktx2")], r.error
    assert calls == [str(out / "in.ktx2")] * 2
    assert any("device recreated, input retried" in w for w in r.warnings), r.warnings
    assert sorted(os.listdir(out)) == ["in.ktx2"]
    assert bytes(read_texture_file(str(out / "in.ktx2")).levels[0]) == a.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("way", ["deferred", "streamed", "whole"])
def test_upload_marks_premultiplied_on_every_write_path(gpu, tmp_path, tmp_png, monkeypatch, rng, way):
    """``upload --premultiply -o``: the file is marked premultiplied (and only then) whichever
    way it is written: read back in the pool, streamed into the mapped file, or written whole
    (``--zstd``)."""
    from gputex import gpu_batch
    from gputex.pipeline import Options
    from gputex.run import upload_files

    src = tmp_png(rng.integers(0, 256, (24, 40, 4), np.uint8), "in.png")
    if way != "deferred":
        monkeypatch.setattr(gpu_batch, "DEFER_MAX_BYTES", 0)
    for premultiply in (False, True):
        out = tmp_path / f"out{int(premultiply)}"
        out.mkdir()
        opts = Options(mips=True, container="ktx2", premultiply=premultiply, zstd=3 if way == "whole" else None)
        (r,) = upload_files([src], opts, session=gpu, out=str(out))
        assert r.ok, r.error
        assert read_texture_file(str(out / "in.ktx2")).premultiplied is premultiply


@pytest.mark.gpu
@pytest.mark.parametrize("budget", [2048, 64 << 20])  # many groups (row bands), one group
def test_capture_to_file_takes_level0_from_the_host(gpu, tmp_path, budget):
    """``level0``: level 0's bytes are the caller's rows (not read back), the other levels
    the GPU's; with the rows the upload wrote, the file is the one read back whole."""
    tex, want = _filled(gpu, "rgba8unorm", 61, 37, 1, 6)
    try:
        expected = cap.as_texture_file(tex, want)
        rows = np.frombuffer(want[0], np.uint8).reshape(37, 61 * 4)
        path = str(tmp_path / "same.ktx2")
        assert cap.capture_to_file(tex, path, budget=budget, level0=rows)
        with open(path, "rb") as f:
            assert f.read() == b"".join(bytes(p) for p in write_ktx2(expected))
        other = 255 - rows  # not what the GPU holds: the file must show these, so they were used
        assert cap.capture_to_file(tex, str(tmp_path / "other.dds"), budget=budget, level0=other)
        got = [bytes(lv) for lv in read_texture_file(str(tmp_path / "other.dds")).levels]
        assert got == [other.tobytes(), *want[1:]]
        with pytest.raises(ValueError, match=r"level0 must be the rows of level 0 of a one-layer texture, "
                                             r"got \(36, 244\)"):
            cap.capture_to_file(tex, str(tmp_path / "bad.ktx2"), level0=rows[1:])
        assert sorted(os.listdir(tmp_path)) == ["other.dds", "same.ktx2"]
    finally:
        tex.destroy()
    layered, want = _filled(gpu, "rgba8unorm", 8, 4, 2, 1)
    try:
        with pytest.raises(ValueError, match=r"level0 must be the rows of level 0 of a one-layer texture"):
            cap.capture_to_file(layered, str(tmp_path / "bad.ktx2"),
                                level0=np.frombuffer(want[0], np.uint8)[: 4 * 32].reshape(4, 32))
    finally:
        layered.destroy()


@pytest.mark.gpu
@pytest.mark.parametrize("case,host", [
    ("rgba8", True),  # the decoded pixels are the texture's bytes: level 0 from the host
    ("rgb8", False),  # expanded to RGBA on the way: read back
    ("flip", False), ("premultiply", False), ("resize", False), ("bgra", False),
])
def test_upload_streamed_level0_from_the_host_only_where_unconverted(gpu, tmp_path, tmp_png, monkeypatch, rng,
                                                                      case, host):
    """The streamed ``upload -o`` takes level 0 from the decoded pixels exactly where the upload
    wrote them unconverted; either way the file is byte-identical to the one ``--verify``
    writes from a read-back of every level."""
    from gputex import gpu_batch
    from gputex.pipeline import Options
    from gputex.run import upload_files
    from gputex.transform import Transform

    a = rng.integers(0, 256, (24, 40, 3 if case == "rgb8" else 4), np.uint8)
    src = tmp_png(a, "in.png")
    monkeypatch.setattr(gpu_batch, "DEFER_MAX_BYTES", 0)  # no deferred read-back: the streamed write
    real, seen = cap.capture_to_file, []

    def recorded(tex, path, **kw):
        opened = kw.get("opened")  # opened before the upload, level 0 copied from the pixels
        seen.append(opened.level0 if opened is not None else kw.get("level0"))
        return real(tex, path, **kw)

    monkeypatch.setattr(cap, "capture_to_file", recorded)
    opts = dict(mips=True, container="ktx2", flip_y=case == "flip", premultiply=case == "premultiply",
                format="bgra8unorm-srgb" if case == "bgra" else None,
                transform=Transform(resize=(20, 12)) if case == "resize" else None)
    files = []
    for verify in (False, True):
        out = tmp_path / f"out{int(verify)}"
        out.mkdir()
        (r,) = upload_files([src], Options(**opts, verify=verify), session=gpu, out=str(out))
        assert r.ok, r.error
        files.append((out / "in.ktx2").read_bytes())
    assert len(seen) == 1  # --verify reads back and writes the whole file instead
    assert (seen[0] is not None) is host
    if host:
        assert seen[0].tobytes() == a.tobytes()
    assert files[0] == files[1]


@pytest.mark.gpu
def test_an_opened_file_of_another_shape_is_discarded_and_written_right(gpu, tmp_path):
    """``capture_to_file(opened=...)`` where the early file's layout is not the texture's: that
    file is dropped (its level 0 copy finished first) and the texture written as it is."""
    tex, want = _filled(gpu, "rgba8unorm", 61, 37, 1, 6)
    try:
        shape = cap.as_texture_file(tex, [b""] * 5)  # one level short
        rows = np.frombuffer(want[0], np.uint8).reshape(37, 61 * 4)
        path = str(tmp_path / "t.ktx2")
        opened = cap.open_streamed(shape, path, level0=255 - rows)
        assert opened is not None and not opened.fits(cap.as_texture_file(tex, [b""] * 6))
        assert cap.capture_to_file(tex, path, opened=opened)
        with open(path, "rb") as f:
            assert f.read() == b"".join(bytes(p) for p in write_ktx2(cap.as_texture_file(tex, want)))
        assert os.listdir(tmp_path) == ["t.ktx2"]
    finally:
        tex.destroy()


@pytest.mark.gpu
@pytest.mark.parametrize("otmpfile", [True, False])
def test_an_upload_that_fails_after_the_early_open_leaves_nothing(gpu, tmp_path, tmp_png, monkeypatch, rng,
                                                                  otmpfile):
    """The texture file is opened (and level 0 copied in) before the upload; an upload or mip
    step that fails then leaves no file and no temporary, and the input's error is reported."""
    from gputex import gpu_batch, pipeline
    from gputex.run import upload_files

    if not otmpfile:
        monkeypatch.setenv("GPUTEX_PORTABLE", "otmpfile")
    src = tmp_png(rng.integers(0, 256, (24, 40, 4), np.uint8), "in.png")
    monkeypatch.setattr(gpu_batch, "DEFER_MAX_BYTES", 0)
    opened = []
    real_open = cap.open_streamed

    def open_(*a, **kw):
        opened.append(real_open(*a, **kw))
        return opened[-1]

    def broken(*a, **kw):
        assert os.listdir(out) == ([] if otmpfile else [os.path.basename(opened[0].file.tmp)])
        raise gputex.GPUError("mips failed (made by the test)")

    monkeypatch.setattr(cap, "open_streamed", open_)
    monkeypatch.setattr(pipeline, "upload_image", broken)
    out = tmp_path / "out"
    out.mkdir()
    (r,) = upload_files([src], pipeline.Options(mips=True, container="ktx2"), session=gpu, out=str(out))
    assert not r.ok and "mips failed (made by the test)" in r.error
    assert len(opened) == 1 and opened[0] is not None
    assert os.listdir(out) == []
