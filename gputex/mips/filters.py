"""The mip and resize filters: one registry.

A filter is a :class:`Filter`: its name (the ``--filter`` choice), its code (the ``FILTER``
constant of ``mip_reduce.wgsl``, the float32 GPU path: 0 is box), its radius in source texels
(scaled by the reduction ratio, as every kernel here is) and its float64 weight function. Both
GPU paths filter with that function's values, computed here in float64: the float64 path's
normalized taps (:func:`kernel_taps`), the float32 path's tables of float32 weights
(:func:`kernel_table`). ``box`` is special: the exact area average over the base footprint, no
kernel.

**Adding a box-like filter** is one weight function and one :func:`register` call here. The
CLI, the settings and the error messages take their choices from :data:`FILTERS`; the tests
hold it to the independent float64 reference (``tests/reference.py``) like the others.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import FormatError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Filter", "FILTERS", "FILTER_NAMES", "register", "get_filter", "kernel_taps", "axis_words", "kernel_table",
           "tile_rows", "TILE_SPAN",
           "ALPHA_MODES", "WRAPS", "check_options"]

ALPHA_MODES = ("weighted", "straight", "premultiplied")
WRAPS = {"clamp": 0, "repeat": 1, "mirror": 2}


@dataclass(frozen=True)
class Filter:
    name: str
    code: int  # FILTER override constant of mip_reduce.wgsl
    radius: float  # half-width of the kernel in source texels at ratio 1 (0: box)
    weight: Callable[[float], float] | None  # float64 kernel at offset x (None: box)
    doc: str = ""
    vector: Callable[[np.ndarray], np.ndarray] | None = None  # ``weight`` over an array (the same values)


#: Every filter, by name, in registration order.
FILTERS: dict[str, Filter] = {}
#: Their names (the CLI's ``--filter`` choices).
FILTER_NAMES: list[str] = []


def register(f: Filter) -> Filter:
    """Make ``f`` a filter of every chain, resize and the CLI."""
    if f.name in FILTERS or any(g.code == f.code for g in FILTERS.values()):
        raise ValueError(f"filter {f.name!r} (code {f.code}) is registered already")
    FILTERS[f.name] = f
    FILTER_NAMES.append(f.name)
    return f


def _choices(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def get_filter(name: str) -> Filter:
    f = FILTERS.get(name)
    if f is None:
        raise FormatError(f"unknown filter {name!r}; use {_choices(FILTER_NAMES)}")
    return f


def check_options(filter: str, alpha: str, wrap: str) -> Filter:
    """The filter, after checking the three options (one clear error each)."""
    f = get_filter(filter)
    if alpha not in ALPHA_MODES:
        raise FormatError(f"unknown alpha mode {alpha!r}; use weighted, straight or premultiplied")
    if wrap not in WRAPS:
        raise FormatError(f"unknown wrap mode {wrap!r}; use clamp, repeat or mirror")
    return f


def _kaiser(x: float) -> float:
    """Windowed sinc, Kaiser window of beta 4 over radius 3."""
    import numpy as np

    return float(np.sinc(x) * np.i0(4 * math.sqrt(max(0.0, 1 - (x / 3) ** 2))) / np.i0(4))


def _lanczos(x: float) -> float:
    """Lanczos, a = 3."""
    import numpy as np

    return float(np.sinc(x) * np.sinc(x / 3))


def _kaiser_v(x: np.ndarray) -> np.ndarray:
    import numpy as np

    # (x / 3) ** 2 as Python floats: that is C pow, which differs from numpy's x * x in the last
    # bit now and then; so the weights are those of _kaiser to the bit
    sq = np.array([v ** 2 for v in (x / 3).ravel().tolist()], np.float64).reshape(x.shape)
    return np.asarray(np.sinc(x) * np.i0(4 * np.sqrt(np.maximum(0.0, 1 - sq))) / np.i0(4), np.float64)


def _lanczos_v(x: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(np.sinc(x) * np.sinc(x / 3), np.float64)


def _triangle_v(x: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(np.maximum(0.0, 1.0 - np.abs(x)), np.float64)


def _triangle(x: float) -> float:
    """The tent (bilinear) kernel of radius 1: 2:1 reductions weigh 1 3 3 1."""
    return max(0.0, 1.0 - abs(x))


register(Filter("box", 0, 0.0, None, "exact area average over the base footprint"))
register(Filter("kaiser", 1, 3.0, _kaiser, "Kaiser-windowed sinc (beta 4), radius 3", _kaiser_v))
register(Filter("lanczos", 2, 3.0, _lanczos, "Lanczos (a = 3)", _lanczos_v))
register(Filter("triangle", 3, 1.0, _triangle, "tent, radius 1", _triangle_v))


def _weights(f: Filter, x: np.ndarray) -> np.ndarray:
    """``f.weight`` at every offset of ``x`` (a registered ``vector`` form where there is one)."""
    import numpy as np

    if f.vector is not None:
        return f.vector(x)
    assert f.weight is not None
    return np.array([f.weight(float(v)) for v in x.ravel()], np.float64).reshape(x.shape)


def _axis(n: int, m: int, filter: str, who: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An axis going from n to m texels under ``filter``'s kernel (radius scaled by the ratio):
    the candidate taps ``t`` (m, K), from ``floor(c - reach)`` to ``ceil(c + reach)`` around
    each destination texel's centre ``c``, which of them the kernel reaches (``inside``), and
    their float64 kernel values ``k`` (0 outside), before any wrap."""
    import numpy as np

    f = get_filter(filter)
    if f.weight is None:
        raise FormatError(f"{who}: the box filter has no kernel (it is the exact area average)")
    r = n / m
    scale = max(r, 1.0)
    reach = f.radius * scale
    c = (np.arange(m, dtype=np.float64) + 0.5) * r
    lo = np.floor(c - reach).astype(np.int64)
    hi = np.ceil(c + reach).astype(np.int64) + 1
    t = lo[:, None] + np.arange(int((hi - lo).max()))[None, :]  # (m, K) candidate taps
    x = (t + 0.5 - c[:, None]) / scale
    inside = (t < hi[:, None]) & (np.abs(x) < f.radius)
    k = np.where(inside, _weights(f, np.where(inside, x, 0.0)), 0.0)
    return t, inside, k


@functools.lru_cache(maxsize=64)
def axis_words(n: int, m: int, filter: str) -> bytes:
    """The float32 path's taps of an axis going from n to m texels (``mip_reduce.wgsl``'s
    ``ktab``): per destination texel a row of 1 + K 32-bit words, its first tap (int32, before
    the wrap, which the shader applies) and the kernel's float64 values at that tap and the
    K - 1 after it, rounded to float32 (0 beyond the kernel's reach). Not normalized: the shader
    divides by the sum of the weights it used. Cached, since a chain's axes repeat across images."""
    import numpy as np

    t, _, k = _axis(n, m, filter, "axis_words")
    rows = np.empty((m, 1 + t.shape[1]), np.uint32)
    rows[:, 0] = t[:, 0].astype(np.int32).view(np.uint32)
    rows[:, 1:] = k.astype(np.float32).view(np.uint32)
    return rows.tobytes()


#: Source rows a tile of ``mip_reduce.wgsl``'s separable entry points (8 x 8 texels) can hold
#: (``TILE_SPAN`` there).
TILE_SPAN = 32


@functools.lru_cache(maxsize=256)
def tile_rows(n: int, m: int, filter: str) -> int:
    """The most source rows the y taps of 8 consecutive destination texels reach, an axis going
    from n to m texels under a kernel ``filter`` (wraps aside: rows are counted before them),
    counted as ``mip_reduce.wgsl``'s ``tile_value`` counts them, from :func:`axis_words`' first
    taps and K. Its tiles take a level where this is at most :data:`TILE_SPAN` (every 2:1 step
    of Kaiser and Lanczos: 27)."""
    import numpy as np

    rows = np.frombuffer(axis_words(n, m, filter), np.int32).reshape(m, -1)  # the table the shader reads
    first = rows[::8, 0]
    last = rows[np.minimum(np.arange(0, m, 8) + 7, m - 1), 0] + (rows.shape[1] - 1)
    return int((last - first).max())


def kernel_table(sw: int, sh: int, dw: int, dh: int, filter: str) -> bytes:
    """``mip_reduce.wgsl``'s ``ktab`` for a kernel filter going from sw x sh to dw x dh texels:
    the header (K along x, K along y, the word where the y rows start, 0), then x's rows
    (:func:`axis_words`), then y's."""
    import struct

    xs, ys = axis_words(sw, dw, filter), axis_words(sh, dh, filter)
    kx, ky = len(xs) // 4 // dw - 1, len(ys) // 4 // dh - 1
    return struct.pack("<4I", kx, ky, 4 + len(xs) // 4, 0) + xs + ys


@functools.lru_cache(maxsize=64)
def kernel_taps(n: int, m: int, filter: str, wrap: str) -> list[tuple[list[int], np.ndarray]]:
    """Per destination texel of an axis going from n to m texels: source indices (after the wrap
    mode) and normalized float64 weights of ``filter``'s kernel, its radius scaled by the ratio:
    what the float64 path filters with, computed here in float64.

    All texels at once in numpy (a texel's taps are ``floor(c - reach) .. ceil(c + reach)``
    around its centre ``c``; one loop in Python per tap took 4.7 s for an 8192 -> 4096 Kaiser
    axis, most of it in scalar ``np.i0``); cached, since a chain's axes repeat across images."""
    import numpy as np

    t, inside, k = _axis(n, m, filter, "kernel_taps")
    if wrap == "repeat":
        idx = t % n
    elif wrap == "mirror":
        mm = t % (2 * n)
        idx = np.where(mm >= n, 2 * n - 1 - mm, mm)
    else:
        idx = np.clip(t, 0, n - 1)
    out = []
    for j in range(m):
        sel = inside[j]
        ids, ks = idx[j][sel], k[j][sel]
        if len(np.unique(ids)) == len(ids) and (np.diff(ids) > 0).all():
            uniq, sums = ids, ks
        else:  # taps beyond an edge fold onto the same texel: add them in tap order, as a dict would
            acc: dict[int, float] = {}
            for i, v in zip(ids.tolist(), ks.tolist()):
                acc[i] = acc.get(i, 0.0) + v
            uniq = np.array(sorted(acc), np.int64)
            sums = np.array([acc[i] for i in uniq.tolist()], np.float64)
            total = sum(acc.values())  # in insertion order, as before
        if sums is ks:
            total = sum(ks.tolist())
        out.append((uniq.tolist(), sums / total))
    return out
