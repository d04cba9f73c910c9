"""EXIF orientation, wherever a file keeps it. Pure, no GPU.

Pillow's ``ImageOps.exif_transpose`` is the reference: the EXIF ``Orientation`` tag (0x0112),
from an EXIF block (JPEG APP1, TIFF tags, PNG ``eXIf``), from ImageMagick's ``Raw profile type
exif`` PNG text chunk (hex after three header lines), or failing both from an XMP packet's
``tiff:Orientation``. A tag that is not an integer from 1 to 8 (some writers store it as
ASCII) is ignored, as Pillow ignores it, instead of failing the decode.
"""

from __future__ import annotations

import re

__all__ = ["orientation_value", "orientation_from_exif", "orientation_from_xmp", "raw_profile_exif",
           "ORIENTATION_TAG"]

ORIENTATION_TAG = 0x0112
_XMP = re.compile(r'tiff:Orientation(="|>)([0-9])')


def orientation_value(value) -> int | None:
    """An EXIF orientation as stored (int, or a str/bytes/tuple some writers use) -> 1..8, or
    None when it is not an integer from 1 to 8 (Pillow's exif_transpose leaves those alone)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= 8 else None


def orientation_from_exif(data: bytes) -> int | None:
    """The orientation in an EXIF block (with or without the ``Exif\\0\\0`` prefix), or None."""
    try:
        from PIL import Image

        exif = Image.Exif()
        exif.load(data[6:] if data.startswith(b"Exif\x00\x00") else data)  # (Pillow < 10.1 wants no prefix)
        return orientation_value(exif.get(ORIENTATION_TAG))
    except Exception:  # a malformed EXIF block is no reason to refuse the image
        return None


def orientation_from_xmp(xmp: str | bytes) -> int | None:
    """``tiff:Orientation`` of an XMP packet (the attribute or the element form), or None."""
    text = xmp.decode("utf-8", "replace") if isinstance(xmp, (bytes, bytearray)) else xmp
    m = _XMP.search(text)
    return orientation_value(int(m[2])) if m else None


def raw_profile_exif(text: str) -> bytes | None:
    """The EXIF bytes of ImageMagick's ``Raw profile type exif`` text (``\\nexif\\n  <length>\\n<hex
    lines>``), or None when it is not hex."""
    try:
        return bytes.fromhex("".join(text.split("\n")[3:]))
    except ValueError:
        return None
