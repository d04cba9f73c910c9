"""The fast PNG path (gputex/pngdec.py + the C unfilter): bit-identical to the image written, to
libpng and to Pillow for every colour type, bit depth, filter type and odd size; anything it does
not take (corrupt, truncated, odd chunk layouts) ends exactly as libpng's path did before.

PNGs are written here by an independent numpy filter encoder with the filter of each row forced.
"""

from __future__ import annotations

import io
import shutil
import struct
import sys
import zlib

import imagecodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage

import gputex
from gputex import png, pngdec
from gputex.errors import DecodeError

from pngmaker import chunk

needs_ext = pytest.mark.skipif(not pngdec.available(),
                               reason="gputex._pngfilter not built (no C compiler at install): libpng decodes instead")

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def filter_rows(raw: np.ndarray, bpp: int, filters) -> np.ndarray:
    """PNG-filter (H, rowbytes) uint8 rows, row y with filter ``filters[y]``: (H, 1 + rowbytes)."""
    x = raw.astype(np.int32)
    h, n = x.shape
    a = np.zeros_like(x)
    a[:, bpp:] = x[:, :-bpp] if n > bpp else a[:, bpp:]
    b = np.zeros_like(x)
    b[1:] = x[:-1]
    c = np.zeros_like(x)
    c[:, bpp:] = b[:, :-bpp] if n > bpp else c[:, bpp:]
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    paeth = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    preds = [np.zeros_like(x), a, b, (a + b) // 2, paeth]
    out = np.empty((h, n + 1), np.uint8)
    for y in range(h):
        out[y, 0] = filters[y]
        out[y, 1:] = (x[y] - preds[filters[y]][y]) % 256
    return out


def raw_rows(a: np.ndarray, depth: int) -> np.ndarray:
    h = a.shape[0]
    return np.ascontiguousarray(a.astype(">u2" if depth == 16 else np.uint8)).view(np.uint8).reshape(h, -1)


def write_png(a: np.ndarray, color_type: int, depth: int, filters, idat_pieces: int = 1, level: int = 6,
              stream: bytes | None = None, before_idat=(), between_idat=(), after_idat=()) -> bytes:
    """A PNG of ``a`` (H, W, C) with each row's filter forced; the zlib stream split over
    ``idat_pieces`` IDAT chunks; ``stream`` replaces the zlib stream (for damaged files)."""
    h, w = a.shape[:2]
    bpp = CHANNELS[color_type] * depth // 8
    if stream is None:
        stream = zlib.compress(filter_rows(raw_rows(a, depth), bpp, filters).tobytes(), level)
    cuts = sorted(np.random.default_rng(len(stream)).choice(np.arange(1, max(2, len(stream))),
                                                            min(idat_pieces - 1, max(0, len(stream) - 1)),
                                                            replace=False).tolist())
    pieces = [stream[i:j] for i, j in zip([0, *cuts], [*cuts, len(stream)])]
    idats = [chunk(b"IDAT", p) for p in pieces]
    if between_idat:
        idats = idats[:1] + list(between_idat) + idats[1:]
    return (png.SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 0))
            + b"".join(before_idat) + b"".join(idats) + b"".join(after_idat) + chunk(b"IEND", b""))


def image(rng, h: int, w: int, c: int, depth: int, content: str) -> np.ndarray:
    top = 65536 if depth == 16 else 256
    if content == "noise":
        return rng.integers(0, top, (h, w, c)).astype(np.uint16 if depth == 16 else np.uint8)
    # few distinct values: many Paeth ties (pa == pb, pb == pc...) and wrap-arounds
    vals = np.array([0, 1, 2, top // 2, top - 2, top - 1])
    return vals[rng.integers(0, len(vals), (h, w, c))].astype(np.uint16 if depth == 16 else np.uint8)


def fast(data: bytes):
    return pngdec.decode(data, png.read_header(data))


def libpng(data: bytes) -> np.ndarray:
    a = imagecodecs.png_decode(data)
    return a[:, :, None] if a.ndim == 2 else a


@needs_ext
@pytest.mark.parametrize("color_type,depth", [(ct, d) for ct in (0, 2, 4, 6) for d in (8, 16)])
@pytest.mark.parametrize("filt", [0, 1, 2, 3, 4, "mixed"])
@pytest.mark.parametrize("h,w", [(23, 37), (1, 50), (50, 1), (1, 1), (9, 2)])
@pytest.mark.parametrize("content", ["noise", "ties"])
def test_bit_identical_to_the_image_and_libpng(color_type, depth, filt, h, w, content):
    rng = np.random.default_rng(zlib.crc32(repr((color_type, depth, filt, h, w, content)).encode()))
    a = image(rng, h, w, CHANNELS[color_type], depth, content)
    filters = rng.integers(0, 5, h) if filt == "mixed" else [filt] * h
    data = write_png(a, color_type, depth, filters)
    got = fast(data)
    assert got is not None, "the fast path must take a clean file"
    assert got.dtype == a.dtype and got.shape == a.shape
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(got, libpng(data))


@needs_ext
@pytest.mark.parametrize("color_type", [0, 2, 4, 6])
def test_bit_identical_to_pillow_8bit(color_type):
    rng = np.random.default_rng(11 + color_type)
    a = image(rng, 31, 45, CHANNELS[color_type], 8, "noise")
    data = write_png(a, color_type, 8, rng.integers(0, 5, 31))
    pil = np.asarray(PILImage.open(io.BytesIO(data)))
    np.testing.assert_array_equal(fast(data), pil.reshape(a.shape))


@needs_ext
def test_bit_identical_to_pillow_16bit_grey():
    rng = np.random.default_rng(12)
    a = image(rng, 31, 45, 1, 16, "noise")
    data = write_png(a, 0, 16, rng.integers(0, 5, 31))
    pil = np.asarray(PILImage.open(io.BytesIO(data)))  # I;16: Pillow keeps 16 bits only for grey
    np.testing.assert_array_equal(fast(data)[:, :, 0], pil)


@needs_ext
@pytest.mark.parametrize("pieces", [2, 7, 200])
def test_many_idat_chunks(pieces):
    rng = np.random.default_rng(13 + pieces)
    a = image(rng, 40, 33, 4, 8, "noise")
    data = write_png(a, 6, 8, rng.integers(0, 5, 40), idat_pieces=pieces)
    assert data.count(b"IDAT") == pieces
    np.testing.assert_array_equal(fast(data), a)


@needs_ext
@pytest.mark.parametrize("level", [0, 1, 9])
def test_zlib_levels_and_stored_blocks(level):
    rng = np.random.default_rng(14 + level)
    a = image(rng, 64, 300, 3, 8, "noise")
    data = write_png(a, 2, 8, rng.integers(0, 5, 64), level=level)
    np.testing.assert_array_equal(fast(data), a)


@needs_ext
def test_fpng_and_gputex_streaming_writer_files():
    import fpng

    rng = np.random.default_rng(15)
    a = image(rng, 70, 90, 4, 8, "noise")
    data = fpng.from_ndarray(a)
    np.testing.assert_array_equal(fast(data), a)
    b = rng.integers(0, 65536, (300, 50, 3)).astype(np.uint16)  # small bands: many sync-flushed IDATs
    data = b"".join(bytes(p) for p in png.stream_png(b, [], 1, 2, band_bytes=4096)())
    assert data.count(b"IDAT") > 10
    np.testing.assert_array_equal(fast(data), b)


# -- the C routine itself: SIMD against scalar, every pixel size, arbitrary rows ----------------

@needs_ext
@settings(max_examples=200, deadline=None)
@given(h=st.integers(1, 6), w=st.integers(1, 40), bpp=st.sampled_from([1, 2, 3, 4, 6, 8]),
       seed=st.integers(0, 2**32 - 1), swap=st.booleans())
def test_unfilter_simd_equals_scalar_equals_reference(h, w, bpp, seed, swap):
    from gputex import _pngfilter

    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, (h, w * bpp)).astype(np.uint8)
    filtered = filter_rows(raw, bpp, rng.integers(0, 5, h)).ravel()
    want = raw.reshape(h, -1, 2)[:, :, ::-1].reshape(h, -1) if swap and bpp % 2 == 0 else raw
    for simd in (True, False):
        buf = filtered.copy()
        assert _pngfilter.unfilter(buf, h, w * bpp, bpp, swap and bpp % 2 == 0, simd=simd) == -1
        np.testing.assert_array_equal(buf[: h * w * bpp].reshape(h, -1), want)


@needs_ext
def test_unfilter_reports_the_first_bad_filter_byte():
    from gputex import _pngfilter

    buf = np.zeros(4 * 9, np.uint8)
    buf[2 * 9] = 5
    assert _pngfilter.unfilter(buf, 4, 8, 4, False) == 2
    with pytest.raises(ValueError, match="bad buffer size"):
        _pngfilter.unfilter(np.zeros(10, np.uint8), 4, 8, 4, False)


# -- what the fast path leaves to libpng: same pixels or the same one-line error as before ------

def _damaged(kind: str) -> bytes:
    rng = np.random.default_rng(16)
    a = image(rng, 20, 30, 4, 8, "noise")
    filters = rng.integers(0, 5, 20)
    rows = filter_rows(raw_rows(a, 8), 4, filters)
    good = zlib.compress(rows.tobytes())
    adler = struct.pack(">I", zlib.adler32(rows.tobytes()))
    other = chunk(b"tEXt", b"k\0v")
    cases = {
        "truncated stream": dict(stream=good[: len(good) // 2]),
        "no adler": dict(stream=good[:-4]),
        "bad adler": dict(stream=good[:-4] + bytes(b ^ 0x5A for b in adler)),
        "one row short": dict(stream=zlib.compress(rows[:-1].tobytes())),
        "one row extra": dict(stream=zlib.compress(np.concatenate([rows, rows[:1]]).tobytes())),
        "filter byte 5": dict(stream=zlib.compress(np.concatenate(
            [rows[:3], np.r_[[5], rows[3, 1:]][None].astype(np.uint8), rows[4:]]).tobytes())),
        "garbage after stream": dict(stream=good + b"garbage!"),
        "extra idat after stream": dict(after_idat=[chunk(b"IDAT", b"\x78\x9c\x03\x00")]),
        "idat split by tEXt": dict(idat_pieces=2, between_idat=[other]),
        "unknown critical chunk": dict(before_idat=[chunk(b"ABCD", b"1234")]),
        "preset dictionary": dict(stream=b"\x78\xbb" + struct.pack(">I", 1) + good[2:]),
        "not deflate": dict(stream=b"\x79\x9c" + good[2:]),
        "empty idat": dict(stream=b""),
    }
    return write_png(a, 6, 8, filters, **cases[kind]), a


KINDS = ["truncated stream", "no adler", "bad adler", "one row short", "one row extra", "filter byte 5",
         "garbage after stream", "extra idat after stream", "idat split by tEXt", "unknown critical chunk",
         "preset dictionary", "not deflate", "empty idat"]


def _outcome(path):
    try:
        return gputex.decode(str(path)).pixels
    except DecodeError as e:
        return str(e)


@needs_ext
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_files_end_as_libpng_did(tmp_path, monkeypatch, kind):
    data, a = _damaged(kind)
    p = tmp_path / "d.png"
    p.write_bytes(data)
    now = _outcome(p)
    taken = fast(data)
    monkeypatch.setattr(pngdec, "_pngfilter", None)  # the path before: libpng alone
    before = _outcome(p)
    if isinstance(before, str):
        assert now == before
    else:
        np.testing.assert_array_equal(now, before)
    # and what that is, so a change in either path shows
    corrupt = f"{p}: truncated or corrupt image data"
    kept = ("garbage after stream", "extra idat after stream", "one row extra")  # libpng only warns
    if kind in kept:
        np.testing.assert_array_equal(now, a)
    else:
        assert now == corrupt
    if kind in ("garbage after stream", "extra idat after stream"):  # a complete stream, then bytes libpng ignores
        np.testing.assert_array_equal(taken, a)
    else:
        assert taken is None


@needs_ext
def test_interlaced_and_palette_and_low_bit_files_are_left_to_libpng():
    rng = np.random.default_rng(17)
    a = image(rng, 8, 8, 3, 8, "noise")
    data = bytearray(write_png(a, 2, 8, [0] * 8))
    data[28] = 1  # interlace method: Adam7 (IHDR's CRC not redone: not checked here)
    assert pngdec.decode(bytes(data), png.read_header(bytes(data), verify_crc=False)) is None
    pal = io.BytesIO()
    PILImage.fromarray(a).convert("P").save(pal, "PNG")
    assert fast(pal.getvalue()) is None
    grey4 = io.BytesIO()
    PILImage.fromarray(a[:, :, 0]).convert("1").save(grey4, "PNG")
    assert fast(grey4.getvalue()) is None


def test_without_the_extension_decode_goes_through_libpng(tmp_path, monkeypatch):
    rng = np.random.default_rng(18)
    a = image(rng, 25, 19, 4, 16, "noise")
    p = tmp_path / "x.png"
    p.write_bytes(write_png(a, 6, 16, rng.integers(0, 5, 25)))
    monkeypatch.setattr(pngdec, "_pngfilter", None)
    assert not pngdec.available() and fast(p.read_bytes()) is None
    img = gputex.decode(str(p))
    np.testing.assert_array_equal(img.pixels, a)
    assert img.mode == "RGBA;16"


@needs_ext
@pytest.mark.parametrize("color_type,depth,mode", [(0, 8, "L"), (4, 16, "LA;16"), (2, 8, "RGB"), (6, 16, "RGBA;16")])
def test_decode_uses_the_fast_path(tmp_path, monkeypatch, color_type, depth, mode):
    rng = np.random.default_rng(19 + color_type + depth)
    a = image(rng, 21, 17, CHANNELS[color_type], depth, "noise")
    p = tmp_path / "x.png"
    p.write_bytes(write_png(a, color_type, depth, rng.integers(0, 5, 21)))
    monkeypatch.setattr(imagecodecs, "png_decode", None)  # libpng must not be needed
    img = gputex.decode(str(p))
    np.testing.assert_array_equal(img.pixels, a)
    assert img.mode == mode and img.pixels.flags.c_contiguous and img.pixels.dtype.isnative


@needs_ext
def test_colour_key_still_becomes_alpha(tmp_path):
    a = np.array([[[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [7, 8, 9]]], np.uint16) * 1000
    p = tmp_path / "k.png"
    p.write_bytes(write_png(a, 2, 16, [4, 3], before_idat=[chunk(b"tRNS", struct.pack(">3H", 1000, 2000, 3000))]))
    img = gputex.decode(str(p))
    np.testing.assert_array_equal(img.pixels[:, :, 3], [[0, 65535], [0, 65535]])
    np.testing.assert_array_equal(img.pixels[:, :, :3], a)


def test_extension_is_built_where_a_compiler_exists():
    if not (shutil.which("cc") or shutil.which("gcc")) or sys.platform == "win32":
        pytest.skip("no C compiler here: the extension is optional")
    assert pngdec.available(), ("gputex._pngfilter did not build although a C compiler is present "
                                "(reinstall: pip install -e .)")


# -- one PNG on several threads, split at restart points ---------------------------------------

def _stream_png(a, band_rows: int) -> bytes:
    row = a.shape[1] * a.shape[2] * a.dtype.itemsize
    return b"".join(bytes(p) for p in png.stream_png(a, [], 1, 2, band_bytes=band_rows * row)())


def _parallel(data: bytes, expect: np.ndarray, monkeypatch) -> bool:
    """inflate_parallel's verdict on data, and decode's pixels (any path) equal to expect."""
    monkeypatch.setattr(pngdec, "PARALLEL_MIN_BYTES", 0)
    header = png.read_header(data)
    c = CHANNELS[header.color_type]
    buf = np.empty(header.height * (header.width * c * header.bit_depth // 8 + 1), np.uint8)
    took = pngdec.inflate_parallel(data, pngdec.idat_spans(data), buf, 3)
    np.testing.assert_array_equal(pngdec.decode(data, header, threads=3), expect)
    return took


@needs_ext
@pytest.mark.parametrize("c,dtype,band_rows",
                         [(4, np.uint8, 7), (3, np.uint16, 1), (1, np.uint8, 64), (2, np.uint16, 13)])
def test_gputex_streamed_png_inflates_in_parallel(monkeypatch, c, dtype, band_rows):
    rng = np.random.default_rng(20 + c + band_rows)
    a = rng.integers(0, np.iinfo(dtype).max + 1, (97, 45, c)).astype(dtype)
    a[40:60] = a[40]  # repeated rows: long matches inside bands
    data = _stream_png(a, band_rows)
    assert data.count(b"IDAT") == -(-97 // band_rows)
    assert _parallel(data, a, monkeypatch)


def _restream(a, pieces_at, one_compressor: bool, level: int = 6) -> tuple[bytes, bytes]:
    """The filtered rows of a (filter 0) deflated in pieces cut at pieces_at, each ending in a
    sync flush; one compressor keeps its window over the cuts (back-references across them)."""
    rows = filter_rows(raw_rows(a, 8), a.shape[2], [0] * a.shape[0]).tobytes()
    cuts = [0, *pieces_at, len(rows)]
    comp = zlib.compressobj(level, zlib.DEFLATED, -15)
    bodies = []
    for i, (x, y) in enumerate(zip(cuts, cuts[1:])):
        if not one_compressor:
            comp = zlib.compressobj(level, zlib.DEFLATED, -15)
        last = i == len(cuts) - 2
        bodies.append(comp.compress(rows[x:y]) + comp.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH))
    bodies[0] = b"\x78\x9c" + bodies[0]
    bodies[-1] += struct.pack(">I", zlib.adler32(rows))
    return bodies, rows


def _png_of_bodies(a, bodies) -> bytes:
    h, w, c = a.shape
    ct = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    return (png.SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ct, 0, 0, 0))
            + b"".join(chunk(b"IDAT", b) for b in bodies) + chunk(b"IEND", b""))


@needs_ext
def test_restart_guess_with_back_references_across_falls_back(monkeypatch):
    rng = np.random.default_rng(21)
    a = np.tile(rng.integers(0, 256, (1, 40, 4), np.uint8), (60, 1, 1))  # every row the same
    row = 40 * 4 + 1
    bodies, _ = _restream(a, [20 * row, 40 * row], one_compressor=True)
    assert all(b.endswith(b"\0\0\xff\xff") for b in bodies[:-1])
    assert not _parallel(_png_of_bodies(a, bodies), a, monkeypatch)
    bodies, _ = _restream(a, [20 * row, 40 * row], one_compressor=False)  # the same cuts, independent
    assert _parallel(_png_of_bodies(a, bodies), a, monkeypatch)


@needs_ext
def test_flush_bytes_inside_a_stored_block_are_not_a_restart_point(monkeypatch):
    rng = np.random.default_rng(22)
    a = rng.integers(0, 256, (30, 20, 4), np.uint8)
    a[10, 5] = [0, 0, 255, 255]  # the bytes of an empty stored block, inside the image data
    stream = zlib.compress(filter_rows(raw_rows(a, 8), 4, [0] * 30).tobytes(), 0)  # stored blocks
    at = stream.index(b"\0\0\xff\xff", 100) + 4
    bodies = [stream[:at], stream[at:]]
    assert not _parallel(_png_of_bodies(a, bodies), a, monkeypatch)


@needs_ext
@pytest.mark.parametrize("damage", ["bad adler", "garbage after adler", "garbage before adler", "last band refers back",
                                    "short"])
def test_damaged_restart_streams(tmp_path, monkeypatch, damage):
    rng = np.random.default_rng(23)
    a = rng.integers(0, 4, (50, 30, 3), np.uint8)  # few values: many matches
    row = 30 * 3 + 1
    bodies, rows = _restream(a, [10 * row, 30 * row], one_compressor=False)
    if damage == "bad adler":
        bodies[-1] = bodies[-1][:-4] + struct.pack(">I", zlib.adler32(rows) ^ 1)
    elif damage == "garbage after adler":
        bodies[-1] += b"xyz"
    elif damage == "garbage before adler":  # the Adler-32 right after the final block is wrong
        bodies[-1] = bodies[-1][:-4] + b"xyz" + bodies[-1][-4:]
    elif damage == "last band refers back":
        comp = zlib.compressobj(6, zlib.DEFLATED, -15)
        comp.compress(rows[: 30 * row])
        comp.flush(zlib.Z_SYNC_FLUSH)
        bodies[-1] = comp.compress(rows[30 * row:]) + comp.flush() + struct.pack(">I", zlib.adler32(rows))
    else:
        bodies[-1] = bodies[-1][: len(bodies[-1]) // 2]
    data = _png_of_bodies(a, bodies)
    monkeypatch.setattr(pngdec, "PARALLEL_MIN_BYTES", 0)  # decode() below tries the parallel path first
    assert not pngdec.inflate_parallel(data, pngdec.idat_spans(data), np.empty(50 * row, np.uint8), 3)
    p = tmp_path / "r.png"
    p.write_bytes(data)
    now = _outcome(p)
    monkeypatch.setattr(pngdec, "_pngfilter", None)
    before = _outcome(p)
    if damage in ("garbage after adler", "last band refers back"):  # serial inflate takes them
        np.testing.assert_array_equal(now, a)
        np.testing.assert_array_equal(before, a)
    else:
        assert now == before == f"{p}: truncated or corrupt image data"


@needs_ext
def test_a_final_block_inside_a_band_is_not_a_restart_point(tmp_path, monkeypatch):
    rng = np.random.default_rng(24)
    a = rng.integers(0, 256, (20, 10, 4), np.uint8)
    rows = filter_rows(raw_rows(a, 8), 4, [0] * 20).tobytes()
    whole = zlib.compress(rows)
    # the whole image in the first IDAT's final block, flush-like bytes after it, then an empty
    # final block and the right Adler-32: split there, sizes and checksum would add up
    bodies = [whole[:-4] + b"\0\0\xff\xff", b"\x03\x00" + whole[-4:]]
    data = _png_of_bodies(a, bodies)
    monkeypatch.setattr(pngdec, "PARALLEL_MIN_BYTES", 0)
    assert not pngdec.inflate_parallel(data, pngdec.idat_spans(data), np.empty(20 * 41, np.uint8), 3)
    p = tmp_path / "f.png"
    p.write_bytes(data)
    now = _outcome(p)
    monkeypatch.setattr(pngdec, "_pngfilter", None)
    assert now == _outcome(p) == f"{p}: truncated or corrupt image data"  # libpng reads 00 00 ff ff as the Adler-32


@needs_ext
@pytest.mark.parametrize("writer", ["pillow", "pillow-optimize", "libpng-0", "libpng-1", "libpng-9", "libpng16-6"])
def test_files_of_other_writers(writer):
    rng = np.random.default_rng(zlib.crc32(writer.encode()))
    for h, w in [(1, 1), (3, 200), (61, 37), (128, 129)]:
        base = rng.integers(0, 256, (h, w, 4), np.uint8) // 8 * 8  # smooth-ish: every filter pays
        base = np.cumsum(base, axis=1, dtype=np.uint8)
        for c in (1, 2, 3, 4):
            a = base[:, :, :c]
            if writer.startswith("pillow"):
                buf = io.BytesIO()
                PILImage.fromarray(a[:, :, 0] if c == 1 else a).save(buf, "PNG", optimize=writer.endswith("optimize"))
                data = buf.getvalue()
            else:
                if writer.startswith("libpng16"):
                    a = a.astype(np.uint16) * 257 + rng.integers(0, 2, a.shape).astype(np.uint16)
                data = imagecodecs.png_encode((a[:, :, 0] if c == 1 else a).copy(),  # plain strides
                                              level=int(writer[-1]))
            got = fast(data)
            assert got is not None
            np.testing.assert_array_equal(got, a.reshape(got.shape))
            np.testing.assert_array_equal(got, libpng(data))


@needs_ext
def test_threads_only_while_no_other_decode_runs(monkeypatch):
    a = np.zeros((40, 30, 4), np.uint8)
    data = _stream_png(a, 8)
    header = png.read_header(data)
    calls = []
    monkeypatch.setattr(pngdec, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setenv("GPUTEX_DECODE_THREADS", "5")  # read when the decode runs
    monkeypatch.setattr(pngdec, "inflate_parallel", lambda d, s, b, threads: calls.append(threads) and False)
    np.testing.assert_array_equal(pngdec.decode(data, header), a)
    assert calls == [5]
    monkeypatch.setattr(pngdec, "_ACTIVE", [1])  # another decode in flight in this process
    np.testing.assert_array_equal(pngdec.decode(data, header), a)
    assert calls == [5] and pngdec._ACTIVE == [1]
