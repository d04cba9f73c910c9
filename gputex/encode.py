"""Encode: captured components -> a file on disk, written atomically.

=====================  ==================================================
texture data           written as
=====================  ==================================================
uint8 (8-bit unorm,    8-bit PNG: 1 channel grey, 2 grey+alpha, 4 RGBA
8-bit uint)
uint16 (16-bit unorm,  16-bit PNG, same channel mapping
16-bit uint)
rgb10a2 codes          16-bit PNG scaled exactly (``round(x * 65535 / 1023)``)
                       with an ``sBIT`` chunk saying 10/10/10/2 bits
float16 / float32      32-bit float TIFF (default, exact), ``.npy`` (exact),
                       OpenEXR (``.exr``, FLOAT channels, exact), Radiance ``.hdr``
                       (RGBE: exact for values RGBE holds; alpha dropped, warns)
                       or 16-bit PNG clamped to [0, 1] (``float_as="png"``, warns)
int / 32-bit uint      ``.npy`` (PNG cannot hold them)
=====================  ==================================================

PNGs carry an ``sRGB`` chunk for sRGB data and ``gAMA`` 1.0 for linear data.
Every file is written atomically (see :func:`write_atomic`): it appears whole or not at all,
also when the process is killed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import OutputError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["encode", "output_suffix", "write_atomic", "sweep_stale", "DEFAULT_PNG_LEVEL"]

#: PNG compression: None is "fast" (fpng for 8-bit RGB/RGBA, zlib level 1 otherwise);
#: 0-9 are zlib levels through libpng (speed/size trade-off: see README).
DEFAULT_PNG_LEVEL = None


def output_suffix(dtype: np.dtype, float_as: str = "tiff") -> str:
    """File suffix ``encode`` uses for data of this dtype."""
    kind, size = dtype.kind, dtype.itemsize
    if kind == "u" and size <= 2:
        return ".png"
    if kind == "f":
        return {"tiff": ".tiff", "npy": ".npy", "png": ".png", "exr": ".exr", "hdr": ".hdr"}[float_as]
    return ".npy"


from .atomic import sweep_stale, write_atomic  # noqa: E402,F401  (re-exported: where they lived)

#: PNGs of images above this many bytes are written by the streaming encoder (png.stream_png):
#: fpng needs about 3x the image in memory (measured: 3.1 GB for a 16384^2 RGBA8 image).
STREAM_MIN_BYTES = 256 << 20


def _png_bytes(a: np.ndarray, color_space: str, level: int | None, sbit: bytes | None):
    """The encoded PNG as parts (head, colour chunks, rest): no copy of a large image to add
    chunks; above STREAM_MIN_BYTES a function streaming the parts."""
    import struct

    import imagecodecs

    from . import png

    chunks = [png.chunk(b"sRGB", b"\x00") if color_space == "srgb"
              else png.chunk(b"gAMA", struct.pack(">I", 100000))]
    if sbit:
        chunks.append(png.chunk(b"sBIT", sbit))
    if a.nbytes > STREAM_MIN_BYTES:  # fpng and libpng would hold ~3x the image: stream it
        from .caps import capped
        from .parallel import copy_threads

        threads = capped(max(copy_threads(), min(16, os.cpu_count() or 1)))
        return png.stream_png(a, chunks, 1 if level is None else max(level, 1) if level else 0, threads)
    data = None
    if level is None and a.dtype.itemsize == 1 and a.shape[2] in (3, 4):
        try:
            import fpng  # about 15x faster than zlib level 1 here, files ~3% larger

            data = fpng.from_ndarray(a)
        except ImportError:
            pass
    if data is None:
        img = a[:, :, 0] if a.shape[2] == 1 else a
        data = imagecodecs.png_encode(img, level=1 if level is None else level)
    return png.insert_chunks(data, chunks)


def encode(pixels: np.ndarray, path: str, *, color_space: str = "srgb", packed_10bit: bool = False,
           float_as: str = "tiff", png_level: int | None = DEFAULT_PNG_LEVEL,
           warn: Callable[[str], None] | None = None) -> str:
    """Write components ``(H, W, C)`` (C = 1, 2 or 4) to ``path`` atomically; returns ``path``.

    ``path``'s suffix should come from :func:`output_suffix`. ``packed_10bit`` marks
    rgb10a2 codes (scaled to 16 bits). Float data goes to ``.tiff``, ``.npy`` or a
    clamped 16-bit PNG (with a warning through ``warn``).
    """
    import io

    import numpy as np

    a = pixels if pixels.ndim == 3 else pixels[:, :, None]
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npy":
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(a))
        data = buf.getvalue()
    elif suffix in (".tif", ".tiff"):
        import imagecodecs

        f = np.ascontiguousarray(a.astype(np.float32))
        if f.shape[2] == 1:
            data = imagecodecs.tiff_encode(f[:, :, 0], photometric="minisblack")
        else:  # grey+alpha or RGBA: say so, or the channels are read as pages
            data = imagecodecs.tiff_encode(f, photometric="minisblack" if f.shape[2] == 2 else "rgb",
                                           planarconfig="contig", extrasample="unassalpha")
    elif suffix in (".exr", ".hdr"):
        from .hdr import encode_exr, encode_hdr

        data = encode_exr(a) if suffix == ".exr" else encode_hdr(a, path, warn)
    elif suffix == ".png":
        sbit = None
        if packed_10bit:
            bits = [10, 10, 10, 2]
            maxes = np.array([(1 << b) - 1 for b in bits], np.uint64)
            a = ((a.astype(np.uint64) * 2 * 65535 + maxes) // (2 * maxes)).astype(np.uint16)
            sbit = bytes(bits)
        elif a.dtype.kind == "f":
            if warn:
                warn(f"{path}: float data clamped to [0, 1] and quantized to 16 bits")
            a = np.floor(np.clip(np.nan_to_num(a.astype(np.float64)), 0, 1) * 65535 + 0.5).astype(np.uint16)
        elif a.dtype not in (np.uint8, np.uint16):
            raise OutputError(f"{path}: {a.dtype} data cannot be written as PNG; use .npy")
        data = _png_bytes(np.ascontiguousarray(a), color_space, png_level, sbit)
    else:
        raise OutputError(f"{path}: unknown output type {suffix!r} (use .png, .tiff, .npy, .exr or .hdr)")
    write_atomic(path, data)
    return path
