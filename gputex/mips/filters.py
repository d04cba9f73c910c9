"""The mip and resize filters: one registry.

A filter is a :class:`Filter`: its name (the ``--filter`` choice), the ``FILTER`` code of
``mip_reduce.wgsl`` (the float32 GPU path), its radius in source texels (scaled by the
reduction ratio, as every kernel here is) and its float64 weight function (what the float64
path, :func:`kernel_taps`, filters with). ``box`` is special: the exact area average over
the base footprint, no kernel.

**Adding a box-like filter** is one weight function and one :func:`register` call here,
plus the same formula as a branch of ``kernel()`` in ``shaders/mip_reduce.wgsl`` (code =
the registered ``code``). The CLI, the settings and the error messages take their choices
from :data:`FILTERS`; the tests hold it to the independent float64 reference
(``tests/reference.py``) like the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import FormatError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Filter", "FILTERS", "FILTER_NAMES", "register", "get_filter", "kernel_taps", "ALPHA_MODES", "WRAPS",
           "check_options"]

ALPHA_MODES = ("weighted", "straight", "premultiplied")
WRAPS = {"clamp": 0, "repeat": 1, "mirror": 2}


@dataclass(frozen=True)
class Filter:
    name: str
    code: int  # FILTER override constant of mip_reduce.wgsl
    radius: float  # half-width of the kernel in source texels at ratio 1 (0: box)
    weight: Callable[[float], float] | None  # float64 kernel at offset x (None: box)
    doc: str = ""


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


def _triangle(x: float) -> float:
    """The tent (bilinear) kernel of radius 1: 2:1 reductions weigh 1 3 3 1."""
    return max(0.0, 1.0 - abs(x))


register(Filter("box", 0, 0.0, None, "exact area average over the base footprint"))
register(Filter("kaiser", 1, 3.0, _kaiser, "Kaiser-windowed sinc (beta 4), radius 3"))
register(Filter("lanczos", 2, 3.0, _lanczos, "Lanczos (a = 3)"))
register(Filter("triangle", 3, 1.0, _triangle, "tent, radius 1"))


def kernel_taps(n: int, m: int, filter: str, wrap: str) -> list[tuple[list[int], np.ndarray]]:
    """Per destination texel of an axis going from n to m texels: source indices (after the wrap
    mode) and normalized float64 weights of ``filter``'s kernel, its radius scaled by the ratio:
    what the float64 path filters with, computed here in float64."""
    import numpy as np

    f = get_filter(filter)
    if f.weight is None:
        raise FormatError("kernel_taps: the box filter has no kernel (it is the exact area average)")
    r = n / m
    scale = max(r, 1.0)
    out = []
    for j in range(m):
        c = (j + 0.5) * r
        reach = f.radius * scale
        acc: dict[int, float] = {}
        for t in range(math.floor(c - reach), math.ceil(c + reach) + 1):
            x = (t + 0.5 - c) / scale
            if abs(x) >= f.radius:
                continue
            k = f.weight(x)
            if wrap == "repeat":
                idx = t % n
            elif wrap == "mirror":
                mm = t % (2 * n)
                idx = 2 * n - 1 - mm if mm >= n else mm
            else:
                idx = min(max(t, 0), n - 1)
            acc[idx] = acc.get(idx, 0.0) + k
        total = sum(acc.values())
        idxs = sorted(acc)
        out.append((idxs, np.array([acc[i] / total for i in idxs], np.float64)))
    return out
