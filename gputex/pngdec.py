"""Fast exact PNG decoding for the common case: non-interlaced 8/16-bit grey, grey+alpha, RGB, RGBA.

Decoding a large PNG is two steps: inflating the IDAT stream and unfiltering the rows. libpng
(``imagecodecs.png_decode``, gputex's decoder before) inflates with zlib, the bulk of its time:
on a 4096^2 RGBA photo written at zlib level 1, one core, libpng took 432 ms, of which zlib's
inflate 357 ms, zlib-ng's 244 ms and libdeflate's 155 ms (libspng 433 ms, Pillow 567 ms). So
this module inflates the concatenated IDAT data in one call to libdeflate
(``imagecodecs.deflate_decode`` with ``out=``: the output size is known from the header, which
is what lets imagecodecs use libdeflate; without ``out`` it falls back to zlib), straight into
one preallocated array, and then unfilters the rows in place with a small C routine
(``gputex/_pngfilter.c``, SSE2 on x86-64), which packs them down over the filter bytes: one
full-size buffer, no second copy. libdeflate's zlib decoder checks the zlib header and the
Adler-32 of the whole stream.

Anything but a clean, complete stream is left to libpng: :func:`decode` returns None (and the
caller decodes with libpng as before) when the C extension is not built, the image is
interlaced, palette or low-bit, a chunk is one libpng may refuse (an unknown critical chunk, a
PLTE, IDATs that are not consecutive), the stream does not inflate to exactly the image's
size, its Adler-32 is wrong or a row's filter byte is not 0-4. So every file either decodes to
exactly what the PNG specification defines (the same pixels as libpng: tests compare them for
every colour type, depth and filter) or takes libpng's path, errors and leniency included.
"""

from __future__ import annotations

import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

try:
    from . import _pngfilter
except ImportError:  # not built (no C compiler at install): libpng decodes these PNGs instead
    _pngfilter = None

__all__ = ["decode", "available"]

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}
_SAFE_CRITICAL = {b"IHDR", b"IDAT", b"IEND"}


def available() -> bool:
    """Whether the fast path is built (the ``gputex._pngfilter`` extension imports)."""
    return _pngfilter is not None


def idat_stream(data: bytes):
    """The concatenated IDAT data of a PNG whose chunks were already walked and CRC-checked
    (``png.read_header``), or None where its chunk layout is anything libpng might treat
    differently: a critical chunk other than IHDR/IDAT/IEND, or IDATs that are not consecutive.
    One IDAT is returned as a view, not copied; several are gathered into one array (numpy's
    large arrays get huge pages: half the time of ``b"".join`` here)."""
    pos = 8
    spans = []
    ended = False  # the run of IDATs is over
    while pos + 8 <= len(data):
        length, ctype = struct.unpack_from(">I4s", data, pos)
        if ctype == b"IEND":
            break
        if ctype == b"IDAT":
            if ended:
                return None
            spans.append((pos + 8, length))
        else:
            if spans:
                ended = True
            if ctype[:1].isupper() and ctype not in _SAFE_CRITICAL or (ctype == b"IHDR" and pos != 8):
                return None
        pos += 12 + length
    if not spans:
        return None
    if len(spans) == 1:
        start, length = spans[0]
        return memoryview(data)[start: start + length]
    import numpy as np

    src = np.frombuffer(data, np.uint8)
    out = np.empty(sum(length for _, length in spans), np.uint8)
    at = 0
    for start, length in spans:
        out[at: at + length] = src[start: start + length]
        at += length
    return out


def decode(data: bytes, header) -> "np.ndarray | None":
    """Pixels (H, W, C) of a PNG (uint8, or native-order uint16), or None to leave it to libpng.

    ``header`` is ``png.read_header(data)`` (chunks walked, CRCs checked). The returned array
    views one buffer holding the image (plus ``height`` spare bytes at its end).
    """
    if _pngfilter is None or header.bit_depth not in (8, 16) or header.color_type not in _CHANNELS:
        return None
    if data[26:29] != b"\0\0\0":  # IHDR compression, filter and interlace methods
        return None
    stream = idat_stream(data)
    if stream is None:
        return None
    import imagecodecs
    import numpy as np

    h, w, c = header.height, header.width, _CHANNELS[header.color_type]
    size = header.bit_depth // 8
    bpp = c * size
    stride = w * bpp
    buf = np.empty(h * (stride + 1), np.uint8)
    try:
        out = imagecodecs.deflate_decode(stream, out=buf)  # libdeflate: zlib header and Adler-32 checked
    except imagecodecs.DeflateError:
        return None
    if len(out) != buf.size:  # too little data (too much raises above)
        return None
    if _pngfilter.unfilter(buf, h, stride, bpp, size == 2 and sys.byteorder == "little") != -1:
        return None  # a filter byte over 4
    return buf[: h * stride].view(np.uint16 if size == 2 else np.uint8).reshape(h, w, c)
