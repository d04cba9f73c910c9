"""Pixel conversions between decoded images and texture bytes. Pure numpy, no GPU.

Rules (also in the README):

* **Channels.** Grey -> r; grey+alpha -> rg; RGB(A) -> rgba with alpha at its
  maximum where the image has none. Colour into one or two channels uses the
  ITU-R 601 luma Pillow uses (0.299 R + 0.587 G + 0.114 B).
* **unorm -> unorm** of another depth: ``round(x * (2^m - 1) / (2^n - 1))``, to
  nearest with halves up, in exact integer arithmetic (8 -> 16 bits is ``x * 257``).
* **unorm -> float**: ``x / (2^n - 1)`` correctly rounded to the float format.
* **float -> unorm**: clamped to [0, 1], then ``round(v * (2^m - 1))``.
* **integer formats** (uint / sint) receive the stored integer codes unchanged;
  codes that do not fit are an error, and float data cannot go to them.
* **sRGB.** The colour space is metadata except in one case: linear data going
  into an ``-srgb`` format is encoded with the sRGB transfer function first
  (alpha is never encoded).
* ``premultiply`` multiplies colour by alpha (rounded), in linear light: sRGB content is
  decoded to linear, multiplied, and encoded again (``srgb(lin(c) * a)``), so a
  premultiplied sRGB texture blends like its straight twin; linear data is multiplied as
  stored. ``flip_y`` reverses rows.
"""

from __future__ import annotations

import numpy as np

from .errors import FormatError
from .formats import Format

__all__ = [
    "to_texture_rows",
    "native_rows",
    "from_texture_rows",
    "srgb_to_linear",
    "linear_to_srgb",
    "check_convertible",
]

_LUMA = np.array([0.299, 0.587, 0.114])


def srgb_to_linear(v: np.ndarray) -> np.ndarray:
    """sRGB electro-optical transfer function on values in [0, 1] (float64)."""
    v = np.asarray(v, dtype=np.float64)
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(v: np.ndarray) -> np.ndarray:
    """Inverse of :func:`srgb_to_linear` (float64)."""
    v = np.clip(np.asarray(v, dtype=np.float64), 0.0, 1.0)
    return np.where(v <= 0.0031308, v * 12.92, 1.055 * v ** (1 / 2.4) - 0.055)


def _unorm_max(bits: int) -> int:
    return (1 << bits) - 1


def _src_max(pixels: np.ndarray) -> float:
    if pixels.dtype.kind == "u":
        return float(_unorm_max(pixels.dtype.itemsize * 8))
    return 1.0 if pixels.dtype.kind == "f" else float(np.iinfo(np.int32).max)


def _channels(a: np.ndarray, n: int) -> np.ndarray:
    """Map 1-4 source channels to the format's 1, 2 or 4."""
    c = a.shape[2]
    if c == n:
        return a
    one = _src_max(a) if a.dtype.kind != "i" else 1
    if c == 3 and n == 4:  # the common RGB -> RGBA: one allocation, no concatenate
        out = np.empty(a.shape[:2] + (4,), a.dtype)
        out[:, :, :3] = a
        out[:, :, 3] = one
        return out
    if c in (1, 2):
        grey, alpha = a[:, :, :1], (a[:, :, 1:2] if c == 2 else None)
    else:
        grey, alpha = None, (a[:, :, 3:4] if c == 4 else None)
    if n == 4:
        rgb = np.repeat(grey, 3, axis=2) if grey is not None else a[:, :, :3]
        if alpha is None:
            alpha = np.full(a.shape[:2] + (1,), one, dtype=a.dtype)
        return np.concatenate([rgb, alpha], axis=2)
    if grey is None:  # colour -> luma
        luma = a[:, :, :3].astype(np.float64) @ _LUMA
        if a.dtype.kind in "ui":
            luma = np.floor(luma + 0.5)
        grey = luma.astype(a.dtype)[:, :, None]
    if n == 1:
        return grey
    if alpha is None:
        alpha = np.full(a.shape[:2] + (1,), one, dtype=a.dtype)
    return np.concatenate([grey, alpha], axis=2)


def _rescale_unorm(x: np.ndarray, src_bits: int, dst_bits: int) -> np.ndarray:
    """round(x * (2^m - 1) / (2^n - 1)), halves up, exact in integers."""
    if src_bits == dst_bits:
        return x.astype(np.uint32)
    s, d = _unorm_max(src_bits), _unorm_max(dst_bits)
    x = x.astype(np.uint64)
    return ((x * (2 * d) + s) // (2 * s)).astype(np.uint32)


def check_convertible(kind: str, fmt: Format) -> None:
    """Raise FormatError early when data of ``kind`` ("unorm", "float", "int") cannot go to ``fmt``."""
    if not fmt.image:
        raise FormatError(f"format {fmt.name} cannot be filled from an image")
    if kind == "float" and fmt.kind in ("uint", "sint"):
        raise FormatError(f"float data cannot be stored in integer format {fmt.name}; "
                          "pick a float or unorm format")


def _component_values(a: np.ndarray, color_space: str, fmt: Format, comp_bits: list[int]) -> list[np.ndarray]:
    """Per-channel converted values (integers for unorm/uint/sint, floats for float formats)."""
    kind = a.dtype.kind
    if fmt.kind in ("uint", "sint") and not fmt.packed and a.size:
        info = np.iinfo(np.dtype(fmt.component_dtype))
        if a.min() < info.min or a.max() > info.max:
            raise FormatError(f"values {a.min()}..{a.max()} do not fit {fmt.name} ({info.min}..{info.max})")
    out = []
    for ch in range(a.shape[2]):
        x = a[:, :, ch]
        is_alpha = fmt.channels in (2, 4) and ch == fmt.channels - 1
        bits = comp_bits[ch]
        encode_srgb = fmt.srgb and color_space == "linear" and not is_alpha
        if fmt.kind in ("uint", "sint"):
            if fmt.packed and x.size and (x.min() < 0 or x.max() > _unorm_max(bits)):
                raise FormatError(f"channel {ch} values {x.min()}..{x.max()} do not fit {fmt.name} "
                                  f"(0..{_unorm_max(bits)})")
            out.append(x.astype(np.int64))
        elif fmt.kind == "float":
            v = x.astype(np.float64) / (_unorm_max(a.dtype.itemsize * 8) if kind == "u" else 1)
            out.append(v)
        elif kind == "u" and not encode_srgb:
            out.append(_rescale_unorm(x, a.dtype.itemsize * 8, bits))
        else:  # float/int data or linear data into sRGB -> through float64
            v = x.astype(np.float64) / (_unorm_max(a.dtype.itemsize * 8) if kind == "u" else 1)
            if encode_srgb:
                v = linear_to_srgb(v)
            v = np.clip(v, 0.0, 1.0)
            out.append(np.floor(v * _unorm_max(bits) + 0.5).astype(np.uint32))
    return out


def _stored_as_is(dtype, color_space: str, fmt: Format, premultiply: bool) -> bool:
    """Whether components of ``dtype`` are the format's bytes as they are (no conversion)."""
    return (not premultiply and not fmt.packed and not fmt.bgra and dtype == np.dtype(fmt.component_dtype)
            and (fmt.kind in ("unorm", "uint") and not (fmt.srgb and color_space == "linear")
                 or fmt.kind == "float"))


def native_rows(rows: np.ndarray, color_space: str, fmt: Format, *, premultiply: bool = False,
                flip_y: bool = False) -> np.ndarray | None:
    """``rows`` ``(h, W, C)`` as the texture bytes :func:`to_texture_rows` makes of them,
    ``(h, W * texel_bytes)`` uint8, where that is a view of ``rows`` (no conversion, no copy);
    else None (also where the upload flips them: ``flip_y``)."""
    if (flip_y or rows.ndim != 3 or rows.shape[2] != fmt.channels or not rows.flags.c_contiguous
            or not _stored_as_is(rows.dtype, color_space, fmt, premultiply)):
        return None
    h, w = rows.shape[:2]
    return rows.view(np.uint8).reshape(h, w * fmt.block_bytes)


def to_texture_rows(rows: np.ndarray, color_space: str, fmt: Format, *,
                    premultiply: bool = False) -> np.ndarray:
    """Convert image rows ``(h, W, C)`` to texture bytes ``(h, W * texel_bytes)`` (uint8, C-order).

    Returns the input itself (no copy) when it already is the format's bytes.
    """
    check_convertible({"u": "unorm", "f": "float", "i": "int"}[rows.dtype.kind], fmt)
    a = _channels(rows, fmt.channels)
    h, w = a.shape[:2]
    native = np.dtype(fmt.component_dtype)
    if _stored_as_is(a.dtype, color_space, fmt, premultiply):
        return np.ascontiguousarray(a).view(np.uint8).reshape(h, w * fmt.block_bytes)
    if premultiply and fmt.channels in (2, 4):
        a = _premultiply(a, color_space == "srgb")
    comp_bits = [fmt.bits] * fmt.channels
    if fmt.packed:
        comp_bits = [10, 10, 10, 2]
    vals = _component_values(a, color_space, fmt, comp_bits)
    if fmt.packed:
        word = (vals[0].astype(np.uint32) | (vals[1].astype(np.uint32) << 10)
                | (vals[2].astype(np.uint32) << 20) | (vals[3].astype(np.uint32) << 30))
        out = word.astype("<u4")[:, :, None]
    else:
        if fmt.bgra:
            vals[0], vals[2] = vals[2], vals[0]
        out = np.stack(vals, axis=2).astype(native)
    return np.ascontiguousarray(out).view(np.uint8).reshape(h, w * fmt.block_bytes)


def _premultiply(a: np.ndarray, srgb: bool = False) -> np.ndarray:
    """Colour times alpha; ``srgb``: in linear light (sRGB codes decoded, multiplied, encoded)."""
    alpha = a[:, :, -1:].astype(np.float64)
    amax = _src_max(a) if a.dtype.kind != "i" else 1
    if srgb and a.dtype.kind != "i":
        lin = srgb_to_linear(a[:, :, :-1].astype(np.float64) / amax)
        colour = linear_to_srgb(lin * (alpha / amax)) * amax
    else:
        colour = a[:, :, :-1].astype(np.float64) * alpha / amax
    if a.dtype.kind in "ui":
        colour = np.floor(colour + 0.5)
    return np.concatenate([colour.astype(a.dtype), a[:, :, -1:]], axis=2)


def from_texture_rows(raw: np.ndarray, fmt: Format, width: int) -> np.ndarray:
    """Texture bytes ``(h, >= W * texel_bytes)`` -> components ``(h, W, channels)``.

    Components come back as stored, in r, g, b, a order: uint8 / uint16 / int* / float16 /
    float32; bgra formats are reordered to rgba; rgb10a2 formats unpack to uint16 codes.
    """
    h = raw.shape[0]
    row = np.ascontiguousarray(raw[:, : width * fmt.block_bytes])
    if fmt.packed:
        word = row.view("<u4").reshape(h, width)
        parts = [(word >> s) & m for s, m in ((0, 1023), (10, 1023), (20, 1023), (30, 3))]
        return np.stack(parts, axis=2).astype(np.uint16)
    comps = row.view(np.dtype(fmt.component_dtype)).reshape(h, width, fmt.channels)
    if fmt.bgra:
        comps = comps[:, :, [2, 1, 0, 3]]
    return comps.astype(comps.dtype.newbyteorder("="), copy=False)
