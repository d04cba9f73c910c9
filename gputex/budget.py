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

__all__ = ["RATIO_FLOOR_BYTES", "check_size", "check_ratio", "check_ico", "check_tiff"]

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


def check_tiff(path: str, tags, size: int, max_pixels: int, max_ratio: float) -> None:
    """TIFF: each tile (or strip) is allocated whole by libtiff, whatever the image size, so
    a 16x16 image may declare a 46336^2 tile: check the tile / strip like an image.
    ``tags``: Pillow's ``im.tag_v2`` (parsed while opening, nothing decoded yet)."""
    def first(tag: int, default: int) -> int:
        v = tags.get(tag, default)
        if isinstance(v, (tuple, list)):
            v = max(v) if v else default
        try:
            return int(v)
        except (TypeError, ValueError):
            return default

    width, height = first(256, 0), first(257, 0)
    bits = max(1, first(258, 1))
    samples = max(1, first(277, 1))
    tw, tl = first(322, 0), first(323, 0)
    if tw or tl:
        w, h, what = tw, tl, "TIFF tile"
    else:
        w, h, what = width, min(first(278, height) or height, height), "TIFF strip"
    if w <= 0 or h <= 0:
        return  # Pillow reports it
    check_size(path, w, h, max_pixels, f"{what} of")
    check_ratio(path, -(-w * h * samples * bits // 8), size, max_ratio, f"one {what} would decode")
