"""Float and HDR inputs (float TIFF, OpenEXR, Radiance .hdr, .npy): decoded exactly, through the
GPU and back bit for bit, and written again by ``capture --float-as`` without changing a value."""

from __future__ import annotations

import imagecodecs
import numpy as np
import pytest
from typer.testing import CliRunner

import gputex
from gputex.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _floats(rng, shape, dtype=np.float32) -> np.ndarray:
    """Values over many exponents, negatives, zero, and exact float16 values where asked."""
    span = 10 if np.dtype(dtype).itemsize == 2 else 20  # float16 stops at 65504
    a = (rng.standard_normal(shape) * np.exp2(rng.integers(-span, span, shape))).astype(dtype)
    a.flat[0] = 0
    a.flat[-1] = -1.5
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_float_tiff_any_channel_count(tmp_path, dtype, channels):
    rng = np.random.default_rng(channels * 10 + np.dtype(dtype).itemsize)
    a = _floats(rng, (7, 11, channels), dtype)
    path = tmp_path / "f.tiff"
    extra = {} if channels in (1, 3) else {"extrasample": "unassalpha"}
    photometric = "minisblack" if channels <= 2 else "rgb"
    path.write_bytes(imagecodecs.tiff_encode(a if channels > 1 else a[:, :, 0], photometric=photometric,
                                             planarconfig="contig", **extra))
    img = gputex.decode(str(path))
    assert img.pixels.dtype == np.float32 and img.color_space == "linear"
    assert np.array_equal(img.pixels, a.astype(np.float32))


def _exr(path, channels: dict) -> None:
    import OpenEXR

    with OpenEXR.File({"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}, channels) as f:
        f.write(str(path))


@pytest.mark.parametrize("names", ["RGBA", "RGB", "Y", "YA", "Z"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_exr_channels_exact(tmp_path, names, dtype):
    rng = np.random.default_rng(len(names) + np.dtype(dtype).itemsize)
    a = _floats(rng, (6, 9, len(names)), dtype)
    path = tmp_path / "x.exr"
    _exr(path, {n: np.ascontiguousarray(a[:, :, i]) for i, n in enumerate(names)})
    img = gputex.decode(str(path))
    assert img.pixels.dtype == np.float32 and img.color_space == "linear"
    assert np.array_equal(img.pixels, a.astype(np.float32))


def _radiance(rgbe: np.ndarray) -> bytes:
    """A flat (not run-length encoded) Radiance file, written from the format description."""
    h, w, _ = rgbe.shape
    return (b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n" + f"-Y {h} +X {w}\n".encode()
            + rgbe.astype(np.uint8).tobytes())


def test_radiance_hdr_values_are_the_rgbe_values(tmp_path):
    rng = np.random.default_rng(9)
    rgbe = rng.integers(0, 256, (5, 8, 4))
    rgbe[:, :, :3] |= 0  # any mantissas
    rgbe[0, 0, 3] = 0  # exponent 0: black
    path = tmp_path / "x.hdr"
    path.write_bytes(_radiance(rgbe))
    img = gputex.decode(str(path))
    # Greg Ward's rgbe.c: value = mantissa * 2^(exponent - 136); exponent 0 is zero
    want = np.where(rgbe[:, :, 3:] == 0, 0.0, rgbe[:, :, :3] * np.exp2(rgbe[:, :, 3:] - 136.0))
    assert img.pixels.shape == (5, 8, 3) and img.color_space == "linear"
    assert np.array_equal(img.pixels, want.astype(np.float32))
    assert np.array_equal(want.astype(np.float32).astype(np.float64), want)  # float32 holds them exactly


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float16", "float32", "int8", "int16", "int32", "uint32",
                                   "int64", "bool"])
@pytest.mark.parametrize("shape", [(5, 6), (5, 6, 1), (5, 6, 2), (5, 6, 3), (5, 6, 4)])
def test_npy_any_numeric_dtype_exact(tmp_path, dtype, shape):
    rng = np.random.default_rng(sum(shape) + len(dtype))
    if dtype == "bool":
        a = rng.integers(0, 2, shape).astype(bool)
    elif dtype.startswith("float"):
        a = _floats(rng, shape, np.dtype(dtype))
    else:
        info = np.iinfo(dtype)
        a = rng.integers(max(info.min, -(1 << 31)), min(info.max, (1 << 31) - 1), shape, endpoint=True).astype(dtype)
    path = tmp_path / "a.npy"
    np.save(path, a)
    img = gputex.decode(str(path))
    got = img.pixels if len(shape) == 3 else img.pixels[:, :, 0]
    if dtype == "bool":
        assert np.array_equal(got, a.astype(np.uint8) * 255)
    else:
        assert np.array_equal(got.astype(np.float64), a.astype(np.float64))
    want_dtype = {"uint8": np.uint8, "uint16": np.uint16, "bool": np.uint8}.get(
        dtype, np.float32 if dtype.startswith("float") else np.int32)
    assert img.pixels.dtype == want_dtype


def test_npy_errors(tmp_path):
    p = tmp_path / "big.npy"
    np.save(p, np.array([[0, 1 << 40]], np.int64))
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == (f"{p}: int64 values 0..1099511627776 do not fit the 32-bit signed integers a "
                            "texture holds")
    p = tmp_path / "s.npy"
    np.save(p, np.array([["a", "b"]]))
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: .npy holds <U1 data; gputex takes numeric arrays (H, W) or (H, W, 1-4)"
    p = tmp_path / "c.npy"
    np.save(p, np.zeros((2, 2, 5), np.float32))
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: 5 channels; gputex takes images of 1 to 4 channels"
    p = tmp_path / "d.npy"
    np.save(p, np.array([[0.1, 1e300]]))
    img = gputex.decode(str(p))
    assert img.warnings == [f"{p}: float64 values rounded to float32 (GPU textures hold 32-bit floats)"]


def test_truncated_float_files_are_one_line(tmp_path, capfd):
    rng = np.random.default_rng(4)
    a = _floats(rng, (16, 16, 4))
    p = tmp_path / "x.exr"
    _exr(p, {"RGBA": a})
    whole = p.read_bytes()
    for cut in (200, len(whole) - 100, len(whole) - 1):
        p.write_bytes(whole[:cut])
        with pytest.raises(gputex.DecodeError) as e:
            gputex.decode(str(p))
        assert str(e.value).startswith(f"{p}: corrupt EXR")
    out, _ = capfd.readouterr()
    assert out == ""  # (OpenEXR prints its complaints on stdout: caught before it reads pixels)
    p = tmp_path / "x.hdr"
    p.write_bytes(b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n")
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: corrupt Radiance HDR header (no resolution line)"


# -- through the GPU ------------------------------------------------------------------------------

def _write(kind: str, path, a: np.ndarray) -> None:
    if kind == "tiff":
        path.write_bytes(imagecodecs.tiff_encode(a, photometric="rgb", planarconfig="contig",
                                                 **({"extrasample": "unassalpha"} if a.shape[2] == 4 else {})))
    elif kind == "exr":
        _exr(path, {"RGBA"[i]: np.ascontiguousarray(a[:, :, i]) for i in range(a.shape[2])})
    elif kind == "npy":
        np.save(path, a)
    elif kind == "hdr":
        path.write_bytes(imagecodecs.rgbe_encode(np.ascontiguousarray(a[:, :, :3])))


def _read(path) -> np.ndarray:
    return gputex.decode(str(path)).pixels


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["tiff", "exr", "npy", "hdr"])
def test_float_file_through_gpu_and_back_is_exact(gpu, tmp_path, kind):
    rng = np.random.default_rng({"tiff": 1, "exr": 2, "npy": 3, "hdr": 4}[kind])
    a = _floats(rng, (9, 13, 4))
    if kind == "hdr":
        a = np.abs(a)[:, :, :3]
    src = tmp_path / f"in.{kind}"
    _write(kind, src, a)
    values = _read(src)  # what the file holds (for HDR: what RGBE stores)
    if kind != "hdr":
        assert np.array_equal(values, a)
    tex = gputex.upload(gpu, gputex.decode(str(src)))
    assert tex.format.name == "rgba32float"
    back = gputex.capture(tex)
    assert np.array_equal(back[:, :, :values.shape[2]], values)
    # capture writes the same values in the same kind of file (.hdr: RGBE re-encodes them exactly)
    r = run("capture", src, "-o", tmp_path / "out", "--float-as", kind)
    assert r.exit_code == 0, r.output
    out = tmp_path / "out" / f"in.{kind}"
    again = _read(out)
    assert np.array_equal(again[:, :, :values.shape[2]], values)
    if kind == "hdr":
        assert "Radiance HDR has no alpha" in r.output


@pytest.mark.gpu
@pytest.mark.parametrize("float_as", ["tiff", "npy", "exr", "hdr"])
def test_capture_rgba32float_upload_capture_is_bit_exact(gpu, tmp_path, float_as):
    """The issue's round trip: capture --format rgba32float -> a float file -> capture again."""
    rng = np.random.default_rng(17)
    a = rng.integers(0, 256, (7, 10, 4), np.uint8)
    a[:, :, 3] = 255
    src = tmp_path / "pic.png"
    src.write_bytes(imagecodecs.png_encode(a))
    r = run("capture", src, "-o", tmp_path / "one", "--format", "rgba32float", "--color-space", "linear",
            "--float-as", float_as)
    assert r.exit_code == 0, r.output
    first = tmp_path / "one" / f"pic.{float_as}"
    r = run("capture", first, "-o", tmp_path / "two", "--float-as", float_as)
    assert r.exit_code == 0, r.output
    second = tmp_path / "two" / f"pic.{float_as}"
    one, two = _read(first), _read(second)
    want = (a / np.float32(255)).astype(np.float32)  # unorm -> float is x / 255, correctly rounded
    keep = 3 if float_as == "hdr" else 4
    if float_as != "hdr":  # (RGBE keeps 8 mantissa bits: x / 255 is not among its values)
        assert np.array_equal(one, want)
    assert np.array_equal(one[:, :, :keep], two[:, :, :keep])
    if float_as in ("tiff", "npy", "exr"):
        assert first.read_bytes() == second.read_bytes()


@pytest.mark.gpu
def test_float16_tiff_and_bc6h_style_capture_come_back(gpu, tmp_path):
    """An rgba16float capture is written as float32 TIFF; uploaded again it is the same values."""
    rng = np.random.default_rng(23)
    a = _floats(rng, (8, 8, 4), np.float16)
    tex = gputex.upload(gpu, gputex.from_array(a.astype(np.float32)), "rgba16float")
    got = gputex.capture(tex)
    assert got.dtype == np.float16 and np.array_equal(got, a)
    p = tmp_path / "h.tiff"
    gputex.encode(got, str(p))
    back = gputex.capture(gputex.upload(gpu, gputex.decode(str(p)), "rgba16float"))
    assert np.array_equal(back, a)
