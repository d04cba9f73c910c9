"""A minimal independent PNG writer for tests (filter 0, zlib), with arbitrary extra chunks."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body))


def make_png(a: np.ndarray, color_type: int, bit_depth: int, extra: list[bytes] = (), palette=None) -> bytes:
    h, w = a.shape[:2]
    raw = a.astype(">u2" if bit_depth == 16 else np.uint8).reshape(h, -1).tobytes()
    rowlen = len(raw) // h
    data = b"".join(b"\0" + raw[i * rowlen:(i + 1) * rowlen] for i in range(h))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0))
    for c in extra:
        out += c
    if palette is not None:
        out += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).ravel()))
    return out + chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b"")
