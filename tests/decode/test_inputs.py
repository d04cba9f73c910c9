"""Decode classes that used to come out wrong (issue 14): each test builds its own input.

Low-bit grey colour keys, EXIF orientation in ImageMagick's raw profile and in XMP, ASCII
orientation tags, PSD, multi-page TIFF, colour-space defaults, premultiplication in linear light.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageOps

import gputex
from gputex.convert import linear_to_srgb, srgb_to_linear, to_texture_rows
from gputex.formats import get_format

from pngmaker import chunk, make_png


def _packed_grey_png(samples: np.ndarray, depth: int, extra: list[bytes]) -> bytes:
    """A grey PNG of bit depth 1, 2 or 4, rows packed MSB first (written independently of gputex)."""
    h, w = samples.shape
    per = 8 // depth
    rows = []
    for y in range(h):
        row = bytearray(-(-w // per))
        for x in range(w):
            row[x // per] |= int(samples[y, x]) << (8 - depth * (x % per + 1))
        rows.append(b"\0" + bytes(row))
    ihdr = struct.pack(">IIBBBBB", w, h, depth, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + b"".join(extra)
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_low_bit_grey_colour_key_becomes_alpha(tmp_path, depth):
    rng = np.random.default_rng(100 + depth)
    top = (1 << depth) - 1
    samples = rng.integers(0, top + 1, (7, 13))
    key = top // 2 if depth > 1 else 1
    samples[0, 0] = key
    samples[0, 1] = (key + 1) % (top + 1)
    path = tmp_path / "key.png"
    path.write_bytes(_packed_grey_png(samples, depth, [chunk(b"tRNS", struct.pack(">H", key))]))
    img = gputex.decode(str(path))
    assert img.pixels.shape == (7, 13, 2)
    assert np.array_equal(img.pixels[:, :, 0], (samples * 255 // top).astype(np.uint8))
    assert np.array_equal(img.pixels[:, :, 1], np.where(samples == key, 0, 255).astype(np.uint8))


def _exif_with_orientation(value: int) -> bytes:
    e = PILImage.Exif()
    e[0x0112] = value
    return b"Exif\x00\x00" + e.tobytes()


def _raw_profile(exif: bytes) -> str:
    """ImageMagick's 'Raw profile type exif' text: name, length, hex in lines of 72 digits."""
    h = exif.hex()
    return "\nexif\n" + f"{len(exif):8d}\n" + "\n".join(h[i:i + 72] for i in range(0, len(h), 72)) + "\n"


def _ztxt(key: str, text: str) -> bytes:
    return chunk(b"zTXt", key.encode("latin-1") + b"\0\0" + zlib.compress(text.encode("latin-1")))


def _itxt(key: str, text: str) -> bytes:
    return chunk(b"iTXt", key.encode("latin-1") + b"\0\0\0\0\0" + text.encode("utf-8"))


@pytest.mark.parametrize("where", ["zTXt", "tEXt", "xmp-attribute", "xmp-element"])
@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_png_orientation_outside_exif_matches_pillow(tmp_path, where, orientation):
    rng = np.random.default_rng(orientation)
    a = rng.integers(0, 256, (5, 8, 3), np.uint8)
    if where == "zTXt":
        extra = [_ztxt("Raw profile type exif", _raw_profile(_exif_with_orientation(orientation)))]
    elif where == "tEXt":
        extra = [chunk(b"tEXt", b"Raw profile type exif\0" + _raw_profile(_exif_with_orientation(orientation))
                       .encode("latin-1"))]
    else:
        form = (f'tiff:Orientation="{orientation}"' if where == "xmp-attribute"
                else f"><tiff:Orientation>{orientation}</tiff:Orientation")
        xmp = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
               f'<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" {form}/></rdf:RDF></x:xmpmeta>')
        extra = [_itxt("XML:com.adobe.xmp", xmp)]
    # the EXIF rule (orientation 3: half a turn, 6: a quarter clockwise, 8: anticlockwise)
    want = np.asarray(PILImage.fromarray(a).transpose(_TRANSPOSE[orientation]))
    for depth, ctype, data in ((8, 2, a), (16, 2, a.astype(np.uint16) * 257)):
        path = tmp_path / f"o{depth}.png"
        path.write_bytes(make_png(data, ctype, depth, extra))
        if _pillow_reads_raw_profiles() or where.startswith("xmp"):  # and what Pillow itself does
            assert np.array_equal(np.asarray(ImageOps.exif_transpose(PILImage.open(path).convert("RGB"))), want)
        got = gputex.decode(str(path)).pixels
        assert np.array_equal(got if depth == 8 else (got // 257).astype(np.uint8), want)
        assert np.array_equal(gputex.decode(str(path), exif_rotate=False).pixels, data)


_TRANSPOSE = {3: PILImage.Transpose.ROTATE_180, 6: PILImage.Transpose.ROTATE_270, 8: PILImage.Transpose.ROTATE_90}


def _pillow_reads_raw_profiles() -> bool:
    """Pillow < 10.1 fails on the "Exif\\0\\0" prefix of ImageMagick's raw profile (gputex does not)."""
    import PIL

    return tuple(int(x) for x in PIL.__version__.split(".")[:2]) >= (10, 1)


def _ascii_orientation_exif(text: bytes) -> bytes:
    """A little-endian EXIF block whose Orientation tag is of type ASCII (as some writers store it)."""
    value = text + b"\0"
    ifd = struct.pack("<H", 1) + struct.pack("<HHI", 0x0112, 2, len(value))
    ifd += (value.ljust(4, b"\0") if len(value) <= 4 else struct.pack("<I", 8 + 2 + 12 + 4)) + struct.pack("<I", 0)
    tail = b"" if len(value) <= 4 else value
    return b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 8) + ifd + tail


def _tiff_ascii_orientation(a: np.ndarray, text: bytes) -> bytes:
    """An uncompressed RGB TIFF whose Orientation tag (274) is of type ASCII (Pillow cannot write one)."""
    h, w, _ = a.shape
    value = text + b"\0"
    n = 9
    ifd_at = 8
    extra_at = ifd_at + 2 + 12 * n + 4
    bits_at, text_at = extra_at, extra_at + 6
    data_at = text_at + len(value) + (len(value) % 2)
    entries = [(256, 3, 1, w), (257, 3, 1, h), (258, 3, 3, bits_at), (259, 3, 1, 1), (262, 3, 1, 2),
               (273, 4, 1, data_at), (274, 2, len(value), None), (277, 3, 1, 3), (279, 4, 1, a.nbytes)]
    ifd = struct.pack("<H", n)
    for tag, typ, count, v in entries:
        if v is None:
            field = value.ljust(4, b"\0") if len(value) <= 4 else struct.pack("<I", text_at)
        else:
            field = struct.pack("<H", v) + b"\0\0" if typ == 3 else struct.pack("<I", v)
        ifd += struct.pack("<HHI", tag, typ, count) + field
    ifd += struct.pack("<I", 0)
    body = struct.pack("<3H", 8, 8, 8) + value + b"\0" * (len(value) % 2)
    return b"II*\x00" + struct.pack("<I", ifd_at) + ifd + body + a.tobytes()


@pytest.mark.parametrize("suffix", [".jpg", ".tiff", ".webp"])
@pytest.mark.parametrize("text", [b"6", b"top-left", b""])
def test_ascii_orientation_tag_is_ignored_like_pillow(tmp_path, suffix, text):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (6, 9, 3), np.uint8)
    path = tmp_path / f"a{suffix}"
    if suffix == ".tiff":
        path.write_bytes(_tiff_ascii_orientation(a, text))
    else:
        PILImage.fromarray(a).save(path, exif=_ascii_orientation_exif(text),
                                   **({"lossless": True} if suffix == ".webp" else {"quality": 100}))
    want = np.asarray(ImageOps.exif_transpose(PILImage.open(path)))
    got = gputex.decode(str(path)).pixels
    assert got.shape == want.shape == (6, 9, 3)
    assert np.array_equal(got, want)


def _psd(a: np.ndarray, layers: bool) -> bytes:
    """A raw (uncompressed) 8-bit RGB Photoshop file: planar composite image data; optionally one
    layer record (Pillow then reports a layer as frame 1), written from the PSD spec."""
    h, w, c = a.shape
    head = b"8BPS" + struct.pack(">H6xHIIHH", 1, c, h, w, 8, 3)
    layer_info = b""
    if layers:
        chans = b"".join(struct.pack(">hI", i, 2 + h * w) for i in range(c))
        rec = struct.pack(">iiiiH", 0, 0, h, w, c) + chans + b"8BIMnorm" + struct.pack(">BBBB", 255, 0, 0, 0)
        name = b"\x03abc"
        extra = struct.pack(">I", 0) + struct.pack(">I", 0) + name
        rec += struct.pack(">I", len(extra)) + extra
        data = b"".join(struct.pack(">H", 0) + np.ascontiguousarray(255 - a[:, :, i]).tobytes() for i in range(c))
        body = struct.pack(">h", 1) + rec + data
        body += b"\0" * (len(body) % 2)
        layer_info = struct.pack(">I", len(body)) + body
    lm = layer_info + struct.pack(">I", 0)  # global layer mask info: empty
    out = head + struct.pack(">I", 0) + struct.pack(">I", 0) + struct.pack(">I", len(lm)) + lm
    return out + struct.pack(">H", 0) + b"".join(np.ascontiguousarray(a[:, :, i]).tobytes() for i in range(c))


@pytest.mark.parametrize("layers", [False, True])
def test_psd_composite_is_decoded(tmp_path, layers):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, (7, 10, 3), np.uint8)
    path = tmp_path / "x.psd"
    path.write_bytes(_psd(a, layers))
    with PILImage.open(path) as im:  # Pillow opens and loads it: the composite
        assert np.array_equal(np.asarray(im), a)
    img = gputex.decode(str(path))
    assert np.array_equal(img.pixels, a)


def _tiff_pages(tmp_path, pages: list[np.ndarray], name="pages.tiff") -> str:
    """Pages of one TIFF (grey pages wider than 4, or imagecodecs reads the stack as samples)."""
    import imagecodecs

    assert pages[0].ndim == 3 or pages[0].shape[1] > 4

    path = tmp_path / name
    colour = {"photometric": "rgb", "planarconfig": "contig"} if pages[0].ndim == 3 else {}
    path.write_bytes(imagecodecs.tiff_encode(np.stack(pages), **colour))
    return str(path)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_multipage_tiff_warns_with_the_page_count(tmp_path, dtype):
    rng = np.random.default_rng(21)
    pages = [(rng.random((5, 7)) * 200).astype(dtype) for _ in range(3)]
    path = _tiff_pages(tmp_path, pages)
    img = gputex.decode(path)
    assert img.pages == 3
    assert np.array_equal(img.pixels[:, :, 0], pages[0])
    assert img.warnings == [f"{path}: has 3 pages; only the first was taken (upload --array takes every page "
                            "as a layer)"]
    assert np.array_equal(gputex.decode(path, page=2).pixels[:, :, 0], pages[2])
    with pytest.raises(gputex.DecodeError, match=r"has no page 3 \(3 page\(s\)\)"):
        gputex.decode(path, page=3)


def test_single_page_tiff_has_no_warning(tmp_path):
    path = _tiff_pages(tmp_path, [np.zeros((4, 6), np.uint8)])
    img = gputex.decode(path)
    assert img.pages == 1 and img.warnings == []


@pytest.mark.parametrize("chunks,depth,want", [
    ([], 16, "linear"), ([chunk(b"sRGB", b"\0")], 16, "srgb"), ([], 8, "srgb"),
    ([chunk(b"gAMA", struct.pack(">I", 45455))], 16, "srgb"),
    ([chunk(b"gAMA", struct.pack(">I", 100000))], 8, "linear"), ([chunk(b"iCCP", b"p\0\0x")], 16, "srgb"),
])
def test_png_colour_space_defaults(tmp_path, chunks, depth, want):
    a = np.zeros((3, 4, 1), np.uint16)
    path = tmp_path / "c.png"
    path.write_bytes(make_png(a, 0, depth, chunks))
    assert gputex.decode(str(path)).color_space == want


def test_16bit_tiff_without_colour_is_linear(tmp_path):
    path = tmp_path / "g.tiff"
    PILImage.fromarray(np.arange(12, dtype=np.uint16).reshape(3, 4)).save(path)
    assert gputex.decode(str(path)).color_space == "linear"


def test_premultiply_is_in_linear_light_for_srgb():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (9, 11, 4), np.uint8)
    got = to_texture_rows(a, "srgb", get_format("rgba8unorm-srgb"), premultiply=True).reshape(9, 11, 4)
    alpha = a[:, :, 3:].astype(np.float64) / 255
    want = np.floor(linear_to_srgb(srgb_to_linear(a[:, :, :3] / 255.0) * alpha) * 255 + 0.5)
    assert np.array_equal(got[:, :, :3], want.astype(np.uint8))
    assert np.array_equal(got[:, :, 3], a[:, :, 3])
    # half-transparent mid-grey: lin(128/255) = 0.21586, times 128/255 = 0.10835, sRGB 0.36295 -> 93, not 64
    px = np.array([[[128, 128, 128, 128]]], np.uint8)
    assert to_texture_rows(px, "srgb", get_format("rgba8unorm"), premultiply=True)[0, 0] == 93
    assert to_texture_rows(px, "linear", get_format("rgba8unorm"), premultiply=True)[0, 0] == 64


def test_texture_file_given_to_decode_points_to_the_verb(tmp_path):
    path = tmp_path / "t.ktx2"
    path.write_bytes(b"\xabKTX 20\xbb\r\n\x1a\n" + b"\0" * 80)
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(path))
    assert str(e.value) == (f"{path}: a texture file (KTX2, KTX or DDS), not an image; read it with "
                            "gputex.read_texture_file")


def test_ico_of_no_images_says_so(tmp_path):
    path = tmp_path / "empty.ico"
    path.write_bytes(b"\0\0\1\0\0\0")  # reserved, type 1 (icon), 0 images
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(path))
    assert str(e.value) == f"{path}: ICO file holds no images"


@pytest.mark.parametrize("colour", [False, True])
def test_pfm_grey_and_colour(tmp_path, colour):
    rng = np.random.default_rng(31 + colour)
    c = 3 if colour else 1
    a = (rng.standard_normal((5, 7, c)) * 100).astype(np.float32)
    for scale, order in (("-1.0", "<f4"), ("1.0", ">f4")):
        path = tmp_path / "x.pfm"
        # Portable FloatMap: "PF" colour / "Pf" grey, size, scale (negative: little-endian), rows bottom first
        path.write_bytes(f"{'PF' if colour else 'Pf'}\n7 5\n{scale}\n".encode() + a[::-1].astype(order).tobytes())
        img = gputex.decode(str(path))
        assert img.color_space == "linear" and np.array_equal(img.pixels, a)
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(gputex.DecodeError) as e:
        gputex.decode(str(path))
    assert str(e.value) == f"{path}: truncated or corrupt image data"


# -- through the GPU and the CLI ------------------------------------------------------------------

def _cli(*args):
    from typer.testing import CliRunner

    from gputex.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_multipage_tiff_pages_become_array_layers(gpu, tmp_path, dtype):
    rng = np.random.default_rng(51)
    top = 1.0 if dtype == np.float32 else np.iinfo(dtype).max
    pages = [(rng.random((6, 5, 3)) * top).astype(dtype) for _ in range(3)]
    path = _tiff_pages(tmp_path, pages)
    out = tmp_path / "layers.ktx2"
    r = _cli("upload", path, "--array", "-o", out)
    assert r.exit_code == 0, r.output
    assert "pages; only the first" not in r.output
    tf = gputex.read_texture_file(str(out))
    assert (tf.layers, tf.array, tf.width, tf.height) == (3, True, 5, 6)
    tex = gputex.upload(gpu, tf)
    for z, page in enumerate(pages):
        got = gputex.capture(tex, 0, z)
        assert np.array_equal(got[:, :, :3], page)
    # without --array: the first page, and a warning naming the count
    r = _cli("capture", path, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert f"warning: {path}: has 3 pages; only the first was taken" in r.output


@pytest.mark.gpu
def test_normal_map_implies_linear(gpu, tmp_path):
    rng = np.random.default_rng(61)
    v = rng.standard_normal((8, 8, 3))
    v[:, :, 2] = np.abs(v[:, :, 2]) + 0.5
    n = v / np.linalg.norm(v, axis=2, keepdims=True)
    a = np.floor((n * 0.5 + 0.5) * 255 + 0.5).astype(np.uint8)
    src = tmp_path / "normals.png"
    PILImage.fromarray(a).save(src)  # an ordinary 8-bit PNG: sRGB by default
    r = _cli("capture", src, "--mips", "--normal-map", "--level", "all", "-o", tmp_path / "out", "--json")
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.stdout.splitlines()[0])
    assert d["format"] == "rgba8unorm" and d["color_space"] == "linear"
    level0 = np.asarray(PILImage.open(tmp_path / "out" / "normals_level0.png"))
    assert np.array_equal(level0[:, :, :3], a)
    r = _cli("capture", src, "--mips", "--normal-map", "--color-space", "srgb", "-o", tmp_path / "o2")
    assert r.exit_code == 1  # asked for explicitly: still refused, with the reason
    assert "a normal map must not be stored in rgba8unorm-srgb" in r.output
    tex = gputex.upload(gpu, gputex.decode(str(src)), mips=True, normal_map=True)  # the library too
    assert tex.color_space == "linear" and tex.format.name == "rgba8unorm"


@pytest.mark.parametrize("channels", [2, 3, 4])
def test_16bit_colour_tiff_keeps_16_bits(tmp_path, channels):
    import imagecodecs

    rng = np.random.default_rng(70 + channels)
    a = rng.integers(0, 65536, (5, 7, channels), np.uint16)
    a[0, 0, 0] = 1  # low bits Pillow would drop
    path = tmp_path / "deep.tiff"
    path.write_bytes(imagecodecs.tiff_encode(a, photometric="minisblack" if channels == 2 else "rgb",
                                             planarconfig="contig",
                                             **({"extrasample": "unassalpha"} if channels in (2, 4) else {})))
    img = gputex.decode(str(path))
    assert img.pixels.dtype == np.uint16 and img.color_space == "linear"
    assert np.array_equal(img.pixels, a)


def test_16bit_tiff_with_icc_profile_is_srgb(tmp_path):
    import imagecodecs

    # (the profile's content is not read: the tag's presence says the data is colour-managed)
    a = np.arange(5 * 7 * 3, dtype=np.uint16).reshape(5, 7, 3) * 300
    path = tmp_path / "icc.tiff"
    path.write_bytes(imagecodecs.tiff_encode(a, photometric="rgb", planarconfig="contig",
                                             iccprofile=b"\0" * 128))
    img = gputex.decode(str(path))
    assert img.color_space == "srgb" and np.array_equal(img.pixels, a)
    grey = tmp_path / "icc_grey.tiff"
    PILImage.fromarray(a[:, :, 0]).save(grey, icc_profile=b"\0" * 128)
    assert gputex.decode(str(grey)).color_space == "srgb"


@pytest.mark.gpu
def test_stats_and_batches_of_ascii_orientation_and_pages(gpu, tmp_path):
    """`stats` of a JPEG whose Orientation is ASCII works; warnings come back from worker processes."""
    rng = np.random.default_rng(81)
    jpg = tmp_path / "a.jpg"
    PILImage.fromarray(rng.integers(0, 256, (6, 9, 3), np.uint8)).save(jpg, exif=_ascii_orientation_exif(b"x"))
    r = _cli("stats", jpg, "--json")
    assert r.exit_code == 0, r.output
    pages = _tiff_pages(tmp_path, [rng.integers(0, 256, (5, 7), np.uint8) for _ in range(2)])
    r = _cli("capture", jpg, pages, "-o", tmp_path / "out", "-j", "3")  # 3 jobs, 2 inputs: worker processes
    assert r.exit_code == 0, r.output
    assert f"warning: {pages}: has 2 pages; only the first was taken" in r.output


def _tiff(a: np.ndarray, extra: dict[int, tuple[int, list]]) -> bytes:
    """A little-endian, uncompressed, contiguous RGB TIFF of ``a`` (H, W, 3; uint8/uint16/float32)
    with extra tags {tag: (type, values)} (SHORT = 3, LONG = 4), written from the TIFF 6.0 spec."""
    h, w, c = a.shape
    fmt = {"u": 1, "f": 3}[a.dtype.kind]
    bits = a.dtype.itemsize * 8
    tags = {256: (4, [w]), 257: (4, [h]), 258: (3, [bits] * c), 259: (3, [1]), 262: (3, [2]),
            273: (4, [0]), 277: (3, [c]), 278: (4, [h]), 279: (4, [a.nbytes]), 339: (3, [fmt] * c), **extra}
    n = len(tags)
    ifd_end = 8 + 2 + 12 * n + 4
    blobs, entries, at = b"", b"", ifd_end
    for tag in sorted(tags):
        typ, values = tags[tag]
        raw = struct.pack("<" + ("H" if typ == 3 else "I") * len(values), *values)
        if len(raw) <= 4:
            field = raw.ljust(4, b"\0")
        else:
            field = struct.pack("<I", at + len(blobs))
            blobs += raw + b"\0" * (len(raw) % 2)
        entries += struct.pack("<HHI", tag, typ, len(values)) + field
    data_at = ifd_end + len(blobs)
    entries = entries.replace(struct.pack("<HHI", 273, 4, 1) + b"\0\0\0\0",
                              struct.pack("<HHI", 273, 4, 1) + struct.pack("<I", data_at))
    return (b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", n) + entries + struct.pack("<I", 0) + blobs
            + a.astype("<" + a.dtype.str[1:]).tobytes())


@pytest.mark.parametrize("dtype", [np.float32, np.uint16, np.uint8])
@pytest.mark.parametrize("orientation", [1, 3, 6, 8])
def test_tiff_orientation_tag_applies_to_every_tiff(tmp_path, dtype, orientation):
    rng = np.random.default_rng(90 + orientation)
    a = (rng.random((4, 7, 3)) * (1 if dtype == np.float32 else np.iinfo(dtype).max)).astype(dtype)
    path = tmp_path / "o.tiff"
    path.write_bytes(_tiff(a, {274: (3, [orientation])}))
    got = gputex.decode(str(path)).pixels
    want = {1: a, 3: a[::-1, ::-1], 6: np.rot90(a, -1), 8: np.rot90(a, 1)}[orientation]  # EXIF rule
    assert np.array_equal(got, want)
    assert np.array_equal(gputex.decode(str(path), exif_rotate=False).pixels, a)


@pytest.mark.gpu
def test_pages_sharing_one_strip_are_a_bomb_for_array(gpu, tmp_path):
    """A small TIFF whose 300 pages all point at one 1024x1024 strip: refused before the pages
    are decoded (each page alone is within the limits)."""
    h = w = 1024
    n = 300
    strip_at = 8
    pixels = bytes(h * w)
    ifd_at = strip_at + len(pixels)
    entries = [(256, 4, w), (257, 4, h), (258, 3, 8), (259, 3, 1), (262, 3, 1), (273, 4, strip_at),
               (277, 3, 1), (278, 4, h), (279, 4, len(pixels))]
    ifd_size = 2 + 12 * len(entries) + 4
    out = b"II*\0" + struct.pack("<I", ifd_at) + pixels
    for i in range(n):
        nxt = ifd_at + ifd_size * (i + 1) if i < n - 1 else 0
        out += struct.pack("<H", len(entries))
        for tag, typ, v in entries:
            out += struct.pack("<HHI", tag, typ, 1) + (struct.pack("<HH", v, 0) if typ == 3 else struct.pack("<I", v))
        out += struct.pack("<I", nxt)
    path = tmp_path / "bomb.tiff"
    path.write_bytes(out)
    assert gputex.decode(str(path)).pages == n
    r = _cli("upload", path, "--array", "-o", tmp_path / "x.ktx2", "--max-ratio", "10")
    assert r.exit_code == 1
    assert f"{path}: would decode to {h * w * n} bytes from a {len(out)}-byte file" in r.output
    assert not (tmp_path / "x.ktx2").exists()
