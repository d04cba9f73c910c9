"""Decode: every Pillow mode, 16-bit exactness, colour keys, EXIF orientation, errors."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageOps

import gputex
from gputex.errors import DecodeError, InputError, LimitError

from pngmaker import chunk, make_png


@pytest.mark.parametrize("mode,channels,dtype,suffix", [
    ("1", 1, np.uint8, ".png"), ("L", 1, np.uint8, ".png"), ("LA", 2, np.uint8, ".png"),
    ("RGB", 3, np.uint8, ".png"), ("RGBA", 4, np.uint8, ".png"), ("P", 3, np.uint8, ".png"),
    ("CMYK", 3, np.uint8, ".tiff"), ("YCbCr", 3, np.uint8, ".jpg"), ("LAB", 3, np.uint8, ".tiff"),
    ("I;16", 1, np.uint16, ".png"), ("I", 1, np.int32, ".tiff"), ("F", 1, np.float32, ".tiff"),
    ("RGB", 3, np.uint8, ".bmp"), ("RGBA", 4, np.uint8, ".tga"), ("RGB", 3, np.uint8, ".webp"),
    ("L", 1, np.uint8, ".pgm"), ("RGB", 3, np.uint8, ".ppm"), ("F", 1, np.float32, ".pfm"),
    ("P", 3, np.uint8, ".gif"), ("RGBA", 4, np.uint8, ".ico"),
])
def test_every_pillow_mode_lands_in_the_table(rng, tmp_path, mode, channels, dtype, suffix):
    w, h = 13, 7
    base = PILImage.fromarray(rng.integers(0, 256, (h, w, 3), np.uint8))
    if mode == "I;16":
        im = PILImage.fromarray(rng.integers(0, 65536, (h, w), np.uint16))
    elif mode == "I":
        im = PILImage.fromarray(rng.integers(-5000, 100000, (h, w)).astype(np.int32))
    elif mode == "F":
        im = PILImage.fromarray(rng.random((h, w)).astype(np.float32))
    elif mode == "P":
        im = base.convert("P")
    else:
        im = base.convert(mode)
    path = str(tmp_path / f"img{suffix}")
    if suffix == ".pfm":  # written here: Pillow writes and reads PFM from 10.3 on only
        with open(path, "wb") as f:
            f.write(f"Pf\n{w} {h}\n-1.0\n".encode() + np.asarray(im)[::-1].astype("<f4").tobytes())
    else:
        # .ico: name the size, or Pillow < 13 writes an ICO of no images (its default sizes start at 16x16)
        im.save(path, **({"lossless": True} if suffix == ".webp" else {"sizes": [(w, h)]} if suffix == ".ico"
                         else {}))
    img = gputex.decode(path)
    assert img.pixels.shape == (h, w, channels)
    assert img.pixels.dtype == dtype
    reopened = im if suffix == ".pfm" else PILImage.open(path)
    if mode in ("L", "RGB", "RGBA", "I;16", "I", "F") and suffix not in (".jpg",):
        assert np.array_equal(img.pixels.reshape(np.asarray(reopened).shape), np.asarray(reopened))
    if mode == "1":
        assert set(np.unique(img.pixels)) <= {0, 255}
    if mode in ("P", "CMYK", "LAB", "YCbCr"):
        assert np.array_equal(img.pixels, np.asarray(reopened.convert("RGB")))
    assert img.color_space == ("linear" if mode in ("I", "F", "I;16") else "srgb")  # 16-bit, no colour chunk


@pytest.mark.parametrize("channels,ctype", [(1, 0), (2, 4), (3, 2), (4, 6)])
def test_16bit_png_keeps_all_bits(rng, tmp_path, channels, ctype):
    a = rng.integers(0, 65536, (9, 31, channels), np.uint16)
    a[0, 0] = 65535
    a[0, 1] = 1  # odd low bits survive
    path = tmp_path / "deep.png"
    path.write_bytes(make_png(a, ctype, 16))
    img = gputex.decode(str(path))
    assert img.pixels.dtype == np.uint16
    assert np.array_equal(img.pixels, a)


def test_16bit_png_with_gamma_1_is_linear(rng, tmp_path):
    a = rng.integers(0, 65536, (4, 5, 3), np.uint16)
    path = tmp_path / "lin.png"
    path.write_bytes(make_png(a, 2, 16, [chunk(b"gAMA", struct.pack(">I", 100000))]))
    assert gputex.decode(str(path)).color_space == "linear"


@pytest.mark.parametrize("depth", [8, 16])
def test_grey_colour_key_becomes_alpha(rng, tmp_path, depth):
    a = rng.integers(0, 200, (6, 11, 1)).astype(np.uint16)
    a[2, 3] = a[4, 4] = 77
    path = tmp_path / "key.png"
    path.write_bytes(make_png(a, 0, depth, [chunk(b"tRNS", struct.pack(">H", 77))]))
    img = gputex.decode(str(path))
    assert img.pixels.shape == (6, 11, 2)
    top = 255 if depth == 8 else 65535
    assert np.array_equal(img.pixels[:, :, 1] == 0, (a[:, :, 0] == 77))
    assert set(np.unique(img.pixels[:, :, 1])) <= {0, top}


@pytest.mark.parametrize("depth", [8, 16])
def test_rgb_colour_key_becomes_alpha(rng, tmp_path, depth):
    a = rng.integers(0, 200, (5, 9, 3)).astype(np.uint16)
    a[1, 1] = (10, 20, 30)
    a[3, 8] = (10, 20, 31)  # differs in blue: stays opaque
    path = tmp_path / "key.png"
    path.write_bytes(make_png(a, 2, depth, [chunk(b"tRNS", struct.pack(">3H", 10, 20, 30))]))
    img = gputex.decode(str(path))
    assert img.pixels.shape == (5, 9, 4)
    transparent = img.pixels[:, :, 3] == 0
    assert transparent[1, 1] and not transparent[3, 8]
    assert transparent.sum() == ((a == (10, 20, 30)).all(axis=2)).sum()


def test_palette_transparency_is_honoured(rng, tmp_path):
    idx = rng.integers(0, 4, (6, 7, 1)).astype(np.uint8)
    palette = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (9, 9, 9)]
    path = tmp_path / "pal.png"
    trns = chunk(b"tRNS", bytes([255, 128, 0, 255]))
    data = make_png(idx, 3, 8, [], palette=palette)
    # tRNS must follow PLTE: insert it right before IDAT
    at = data.index(b"IDAT") - 4
    path.write_bytes(data[:at] + trns + data[at:])
    img = gputex.decode(str(path))
    assert img.pixels.shape == (6, 7, 4)
    want_alpha = np.array([255, 128, 0, 255], np.uint8)[idx[:, :, 0]]
    want_rgb = np.array(palette, np.uint8)[idx[:, :, 0]]
    assert np.array_equal(img.pixels[:, :, 3], want_alpha)
    assert np.array_equal(img.pixels[:, :, :3], want_rgb)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow(rng, tmp_path, orientation):
    a = rng.integers(0, 256, (5, 8, 3), np.uint8)
    im = PILImage.fromarray(a)
    exif = PILImage.Exif()
    exif[0x0112] = orientation
    path = str(tmp_path / "o.png")
    im.save(path, exif=exif)
    want = np.asarray(ImageOps.exif_transpose(PILImage.open(path)))
    assert np.array_equal(gputex.decode(path).pixels, want)
    assert np.array_equal(gputex.decode(path, exif_rotate=False).pixels, a)


def _png(rng, tmp_path, name="x.png"):
    a = rng.integers(0, 256, (20, 30, 3), np.uint8)
    data = make_png(a, 2, 8)
    return tmp_path / name, data


def test_missing_file(tmp_path):
    p = str(tmp_path / "nope.png")
    with pytest.raises(InputError) as e:
        gputex.decode(p)
    assert str(e.value) == f"{p}: no such file"


def test_directory(tmp_path):
    with pytest.raises(InputError) as e:
        gputex.decode(str(tmp_path))
    assert str(e.value) == f"{tmp_path}: is a directory, not an image file"


@pytest.mark.parametrize("content,message", [
    (b"", "empty file"),
    (b"hello, this is text\n", "not an image (unknown or unsupported file format)"),
])
def test_not_an_image(tmp_path, content, message):
    p = tmp_path / "bad.png"
    p.write_bytes(content)
    with pytest.raises(DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: {message}"


@pytest.mark.parametrize("cut", [20, 40, 60, -30, -13, -1])
def test_truncated_png(rng, tmp_path, cut):
    p, data = _png(rng, tmp_path)
    p.write_bytes(data[:cut])
    with pytest.raises(DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value).startswith(f"{p}: truncated PNG (")


def test_corrupt_idat_crc_is_rejected(rng, tmp_path):
    p, data = _png(rng, tmp_path)
    at = data.index(b"IDAT") + 4 + 10
    p.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
    with pytest.raises(DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: CRC mismatch in IDAT chunk"


def test_truncated_jpeg(rng, tmp_path):
    p = tmp_path / "t.jpg"
    PILImage.fromarray(rng.integers(0, 256, (64, 64, 3), np.uint8)).save(p)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(DecodeError) as e:
        gputex.decode(str(p))
    assert str(e.value) == f"{p}: truncated or corrupt image data"


def test_pixel_budget_is_checked_from_the_header(rng, tmp_path):
    p, data = _png(rng, tmp_path)
    p.write_bytes(data)
    with pytest.raises(LimitError) as e:
        gputex.decode(str(p), max_pixels=599)
    assert str(e.value) == (f"{p}: 30x20 is 600 pixels, over the limit of 599 (raise it with --max-pixels)")


def test_from_array_shapes():
    img = gputex.from_array(np.zeros((3, 4), np.uint8))
    assert img.pixels.shape == (3, 4, 1) and img.color_space == "srgb"
    assert gputex.from_array(np.zeros((3, 4, 2), np.float32)).color_space == "linear"
    with pytest.raises(DecodeError):
        gputex.from_array(np.zeros((3, 4, 5), np.uint8))
