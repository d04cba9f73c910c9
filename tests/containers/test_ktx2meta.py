"""KTX2 metadata and the texture-file library verbs: ``KTXswizzle`` on r/rg data (valid for
``gputex validate`` and the peer ``ktx validate``), ``KTXorientation`` honoured on capture, and
``gputex.read_texture_file`` / ``write_texture_file``."""

from __future__ import annotations

import os
import shutil
import subprocess

import imagecodecs
import numpy as np
import pytest
from typer.testing import CliRunner

import gputex
from gputex.cli import app
from gputex.ktx2 import validate

runner = CliRunner()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _ktx_tool() -> str | None:
    peer = os.path.join(ROOT, "..", "shared", "peers", "ktx")
    return peer if os.access(peer, os.X_OK) else shutil.which("ktx")


def _ktx_validate(path) -> None:
    tool = _ktx_tool()
    if tool is None:
        pytest.skip("the Khronos ktx tool is not at ../shared/peers/ktx nor on PATH")
    r = subprocess.run([tool, "validate", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("fmt,channels,dtype,swizzle", [
    ("r8unorm", 1, np.uint8, "rrr1"), ("rg8unorm", 2, np.uint8, "rrrg"), ("r16unorm", 1, np.uint16, "rrr1"),
    ("rg16unorm", 2, np.uint16, "rrrg"), ("r32float", 1, np.float32, "rrr1"), ("rg32float", 2, np.float32, "rrrg"),
    ("rgba8unorm", 4, np.uint8, None),
])
def test_grey_ktx2_carries_swizzle_and_validates(gpu, tmp_path, fmt, channels, dtype, swizzle):
    rng = np.random.default_rng(channels * 7 + np.dtype(dtype).itemsize)
    a = (rng.random((9, 12, channels)) * (255 if dtype == np.uint8 else 65535 if dtype == np.uint16 else 1)
         ).astype(dtype)
    src = tmp_path / "g.npy"
    np.save(src, a)
    out = tmp_path / "g.ktx2"
    r = run("upload", src, "--format", fmt, "--mips", "-o", out)
    assert r.exit_code == 0, r.output
    tf = gputex.read_texture_file(str(out))
    assert tf.metadata["kvd"].get("KTXswizzle") == swizzle
    assert [p for p in validate(out.read_bytes(), str(out))] == []
    r = run("validate", out)
    assert r.exit_code == 0, r.output
    _ktx_validate(out)


def test_grey_png_to_ktx2_default_formats(gpu, tmp_path):
    rng = np.random.default_rng(3)
    for name, a, swizzle in (("g", rng.integers(0, 256, (8, 8), np.uint8), "rrr1"),
                             ("ga", rng.integers(0, 256, (8, 8, 2), np.uint8), "rrrg")):
        src = tmp_path / f"{name}.png"
        src.write_bytes(imagecodecs.png_encode(a))
        out = tmp_path / f"{name}.ktx2"
        r = run("upload", src, "-o", out, "--zstd", "3")
        assert r.exit_code == 0, r.output
        assert gputex.read_texture_file(str(out)).metadata["kvd"]["KTXswizzle"] == swizzle
        _ktx_validate(out)


def test_bad_swizzle_is_named_by_validate(tmp_path):
    from gputex.formats import get_format
    from gputex.ktx2 import write_ktx2
    from gputex.texfile import TextureFile

    tf = TextureFile(get_format("r8unorm"), 4, 4, levels=[bytes(16)], color_space="linear")
    data = b"".join(write_ktx2(tf))
    bad = data.replace(b"KTXswizzle\0rrr1\0", b"KTXswizzle\0rrx1\0")
    problems = validate(bad, "x.ktx2")
    assert [(p.rule, p.message) for p in problems] == [
        ("7119", "KTXswizzle character 2 is 'x', not one of rgba01")]  # Khronos's KTXswizzleInvalidValue


def _oriented_ktx2(gpu, tmp_path, a: np.ndarray, orientation: bytes):
    """A KTX2 of ``a`` (gputex writes rd) with its KTXorientation value replaced (same length)."""
    tex = gputex.upload(gpu, gputex.from_array(a, "linear"), "rgba8unorm")
    path = tmp_path / f"o_{orientation.decode()}.ktx2"
    gputex.write_texture_file(tex, str(path))
    data = path.read_bytes()
    assert data.count(b"KTXorientation\0rd\0") == 1
    path.write_bytes(data.replace(b"KTXorientation\0rd\0", b"KTXorientation\0" + orientation + b"\0"))
    assert validate(path.read_bytes(), str(path)) == []
    return path


@pytest.mark.parametrize("orientation,note", [(b"ru", "rows flipped"), (b"ld", "columns flipped"),
                                              (b"lu", "columns, rows flipped"), (b"rd", None)])
def test_orientation_is_honoured_on_capture(gpu, tmp_path, orientation, note):
    rng = np.random.default_rng(len(orientation) + orientation[1])
    a = rng.integers(0, 256, (6, 9, 4), np.uint8)  # as stored in the file
    path = _oriented_ktx2(gpu, tmp_path, a, orientation)
    _ktx_validate(path)
    r = run("capture", path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    got = np.asarray(imagecodecs.png_decode((tmp_path / "out" / f"{path.stem}.png").read_bytes()))
    want = a[::-1 if orientation[1:2] == b"u" else 1, ::-1 if orientation[:1] == b"l" else 1]
    assert np.array_equal(got, want)
    line = [ln for ln in r.output.splitlines() if " -> " in ln][0]
    if note:
        assert line.endswith(f"(rgba8unorm 9x6; KTXorientation {orientation.decode()}: {note})")
    else:
        assert line.endswith("(rgba8unorm 9x6)")


def test_texture_file_library_verbs(gpu, tmp_path):
    assert {"read_texture_file", "write_texture_file", "TextureFile"} <= set(gputex.__all__)
    rng = np.random.default_rng(41)
    a = rng.integers(0, 65536, (10, 7, 4), np.uint16)
    tex = gputex.upload(gpu, gputex.from_array(a), mips=True)
    out = tmp_path / "t.ktx2"
    assert gputex.write_texture_file(tex, str(out), zstd=5) == str(out)
    tf = gputex.read_texture_file(str(out))
    assert (tf.format.name, tf.width, tf.height, len(tf.levels)) == ("rgba16unorm", 7, 10, tex.levels)
    back = gputex.upload(gpu, tf)
    for level in range(tex.levels):
        assert np.array_equal(gputex.capture(back, level), gputex.capture(tex, level))
    assert np.array_equal(gputex.capture(back), a)
    dds = tmp_path / "t.dds"
    gputex.write_texture_file(tf, str(dds))  # a TextureFile is written as it is
    again = gputex.read_texture_file(str(dds))
    assert [bytes(lv) for lv in again.levels] == [bytes(lv) for lv in tf.levels]
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(out))
    assert "read it with gputex.read_texture_file" in str(e.value)
    with pytest.raises(gputex.FormatError):
        gputex.upload(gpu, tf, "rgba8unorm")


def test_volume_orientation_out_reverses_slices(gpu, tmp_path):
    rng = np.random.default_rng(43)
    slices = [rng.integers(0, 256, (4, 6), np.uint8) for _ in range(3)]
    srcs = []
    for i, s in enumerate(slices):
        p = tmp_path / f"s{i}.png"
        p.write_bytes(imagecodecs.png_encode(s))
        srcs.append(p)
    vol = tmp_path / "v.ktx2"
    r = run("upload", *srcs, "--volume", "-o", vol)
    assert r.exit_code == 0, r.output
    data = vol.read_bytes()
    assert data.count(b"KTXorientation\0rdi\0") == 1
    vol.write_bytes(data.replace(b"KTXorientation\0rdi\0", b"KTXorientation\0rdo\0"))
    assert validate(vol.read_bytes(), str(vol)) == []
    r = run("capture", vol, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "; KTXorientation rdo: slices flipped)" in r.output
    for z in range(3):  # slice z of the output is slice 2 - z as stored
        got = imagecodecs.png_decode((tmp_path / "out" / f"v_slice{z}.png").read_bytes())
        assert np.array_equal(np.squeeze(got), slices[2 - z])
