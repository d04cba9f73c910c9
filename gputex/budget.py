"""One memory budget for every decoder and container, applied before the large allocation.

Pure, no GPU import. Every reader asks these checks with what its header says, before it
allocates or inflates anything sized by the header:

- images (:mod:`gputex.decode`): the image's pixels; inside ICO/CUR files every directory
  entry *and* the header of the PNG or BMP it embeds (Pillow loads the embedded image while
  opening, and that image may be far larger than its directory entry says); inside TIFF
  files every tile and strip (libtiff allocates a whole tile, whatever the image size);
- texture files (:mod:`gputex.ktx2`): each level's pixels and, for supercompressed levels,
  the ratio of the inflated to the stored bytes (a 33 KB Zstandard level of run-length blocks
  inflates to 1 GiB).

Two rules, the same for all and overridden by the same options (``--max-pixels``,
``--max-ratio``): at most ``max_pixels`` pixels per image, tile or level; and nothing that
decodes to more than :data:`RATIO_FLOOR_BYTES` and more than ``max_ratio`` times the bytes
it comes from. A refusal is a :class:`~gputex.errors.LimitError` naming the file.
"""

from __future__ import annotations

import struct

from .errors import DecodeError, LimitError

__all__ = ["RATIO_FLOOR_BYTES", "check_size", "check_ratio", "check_ico", "check_tiff", "tiff_fields"]

#: The ratio rule applies once something decodes to more than this many bytes (so a bomb
#: never costs more, and small, very compressible images stay fine).
RATIO_FLOOR_BYTES = 64 << 20

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_size(path: str, width: int, height: int, max_pixels: int, what: str = "") -> None:
    """Refuse a zero-sized image or one of more than ``max_pixels`` pixels (``what``: e.g.
    "embedded PNG" or "TIFF tile", named in the message)."""
    if width <= 0 or height <= 0:
        raise DecodeError(f"{path}: {what + ' ' if what else ''}image has zero width or height ({width}x{height})")
    if width * height > max_pixels:
        raise LimitError(
            f"{path}: {what + ' ' if what else ''}{width}x{height} is {width * height} pixels, over the limit of "
            f"{max_pixels} (raise it with --max-pixels)"
        )


def check_ratio(path: str, decoded: int, size: int, max_ratio: float, what: str = "would decode",
                source: str = "file") -> None:
    """Refuse ``decoded`` bytes from ``size`` stored bytes (of a ``source``) above the floor and
    ``max_ratio`` (0: no ratio limit)."""
    if max_ratio and decoded > RATIO_FLOOR_BYTES and decoded > max_ratio * size:
        raise LimitError(
            f"{path}: {what} to {decoded} bytes from a {size}-byte {source} "
            f"({decoded / max(size, 1):.0f}:1, over the limit of {max_ratio:g}:1 for a likely "
            "decompression bomb; raise it with --max-ratio)"
        )


def check_ico(path: str, data: bytes, max_pixels: int, max_ratio: float) -> None:
    """ICO / CUR: every directory entry, and the PNG or BMP header each one points at.

    Pillow opens (and so decodes) the largest entry while opening the file, with the size
    its embedded PNG/BMP header gives, not the directory's."""
    if len(data) < 6 or data[:4] not in (b"\0\0\1\0", b"\0\0\2\0"):
        return
    (count,) = struct.unpack_from("<H", data, 4)
    for i in range(count):
        pos = 6 + 16 * i
        if pos + 16 > len(data):
            return  # Pillow reports the truncation
        w, h = data[pos] or 256, data[pos + 1] or 256
        (offset,) = struct.unpack_from("<I", data, pos + 12)
        embedded = data[offset: offset + 32]
        if embedded.startswith(_PNG_SIGNATURE) and len(embedded) >= 24:
            w, h = struct.unpack_from(">II", embedded, 16)
            check_size(path, w, h, max_pixels, f"icon {i}: embedded PNG")
            check_ratio(path, w * h * 4, len(data), max_ratio, f"icon {i}: embedded PNG would decode")
        elif len(embedded) >= 16:
            (hsize,) = struct.unpack_from("<I", embedded, 0)
            if hsize == 12:  # OS/2 BITMAPCOREHEADER
                w, h2 = struct.unpack_from("<HH", embedded, 4)
            else:
                w, h2 = struct.unpack_from("<ii", embedded, 4)
            w, h = abs(w), abs(h2) // 2 or 1  # the height counts the XOR and AND masks
            check_size(path, w, h, max_pixels, f"icon {i}: embedded BMP")
            check_ratio(path, w * h * 4, len(data), max_ratio, f"icon {i}: embedded BMP would decode")
        else:
            check_size(path, w, h, max_pixels, f"icon {i}:")


#: TIFF tags: ImageWidth, ImageLength, BitsPerSample, SamplesPerPixel, RowsPerStrip, TileWidth,
#: TileLength.
_TIFF_TAGS = (256, 257, 258, 277, 278, 322, 323)
#: TIFF field types -> (struct code, size): SHORT, LONG, LONG8 (BigTIFF), BYTE.
_TIFF_TYPES = {3: ("H", 2), 4: ("I", 4), 16: ("Q", 8), 1: ("B", 1)}


def tiff_fields(data: bytes) -> dict[int, int]:
    """The first IFD's size fields, read the way libtiff reads them: each tag on its own (a
    broken neighbour does not hide it, as it does from Pillow's parser), the largest value of a
    multi-value tag (BitsPerSample per sample). Classic and BigTIFF, either byte order."""
    if len(data) < 16 or data[:2] not in (b"II", b"MM"):
        return {}
    e = "<" if data[:2] == b"II" else ">"
    magic = struct.unpack_from(e + "H", data, 2)[0]
    if magic == 42:
        ifd = struct.unpack_from(e + "I", data, 4)[0]
        count_fmt, entry, inline, head = "H", 12, 4, 2
    elif magic == 43:
        ifd = struct.unpack_from(e + "Q", data, 8)[0]
        count_fmt, entry, inline, head = "Q", 20, 8, 8
    else:
        return {}
    if ifd + head > len(data):
        return {}
    n = struct.unpack_from(e + count_fmt, data, ifd)[0]
    out: dict[int, int] = {}
    for k in range(min(n, 4096)):
        pos = ifd + head + k * entry
        if pos + entry > len(data):
            break
        tag, typ = struct.unpack_from(e + "HH", data, pos)
        if tag not in _TIFF_TAGS or typ not in _TIFF_TYPES:
            continue
        count = struct.unpack_from(e + ("I" if magic == 42 else "Q"), data, pos + 4)[0]
        code, size = _TIFF_TYPES[typ]
        if count < 1:
            continue
        count = min(count, 64)
        where = pos + (8 if magic == 42 else 12)
        if count * size > inline:
            where = struct.unpack_from(e + ("I" if magic == 42 else "Q"), data, where)[0]
        if where + count * size > len(data):
            continue
        out[tag] = max(struct.unpack_from(f"{e}{count}{code}", data, where))
    return out


def check_tiff(path: str, data: bytes, max_pixels: int, max_ratio: float) -> None:
    """TIFF: each tile (or strip) is allocated whole by libtiff, whatever the image size, so
    a 16x16 image may declare a 46336^2 tile: check the tile / strip like an image, with the
    first IFD read as libtiff reads it (:func:`tiff_fields`)."""
    f = tiff_fields(data)
    width, height = f.get(256, 0), f.get(257, 0)
    bits, samples = max(1, f.get(258, 1)), max(1, f.get(277, 1))
    tw, tl = f.get(322, 0), f.get(323, 0)
    for w, h, what in ((width, height, "TIFF image"), (tw, tl, "TIFF tile"),
                       (width, min(f.get(278, height) or height, height), "TIFF strip")):
        if w > 0 and h > 0:
            check_size(path, w, h, max_pixels, f"{what} of")
            check_ratio(path, -(-w * h * samples * bits // 8), len(data), max_ratio, f"one {what} would decode")
