"""The kernel chains' taps (``gputex.mips.filters.kernel_taps``, computed for all texels of an axis
at once) against the one-tap-at-a-time definition with each filter's scalar weight function:
the same indices and the same float64 weights, to the bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gputex.mips.filters import get_filter, kernel_taps


def one_by_one(n, m, filter, wrap):
    f = get_filter(filter)
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
            if wrap == "repeat":
                idx = t % n
            elif wrap == "mirror":
                mm = t % (2 * n)
                idx = 2 * n - 1 - mm if mm >= n else mm
            else:
                idx = min(max(t, 0), n - 1)
            acc[idx] = acc.get(idx, 0.0) + f.weight(x)
        total = sum(acc.values())
        out.append((sorted(acc), [acc[i] / total for i in sorted(acc)]))
    return out


@pytest.mark.parametrize("filter", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "repeat", "mirror"])
@pytest.mark.parametrize("n,m", [(1, 1), (2, 1), (3, 1), (5, 2), (7, 3), (13, 6), (61, 30), (257, 128),
                                 (999, 499), (1000, 500)])
def test_taps_equal_the_scalar_definition(filter, wrap, n, m):
    want = one_by_one(n, m, filter, wrap)
    got = kernel_taps(n, m, filter, wrap)
    assert len(got) == m
    for j, ((wi, ww), (gi, gw)) in enumerate(zip(want, got)):
        assert gi == wi, f"texel {j}: indices {gi} vs {wi}"
        assert np.array_equal(gw, np.array(ww)), f"texel {j}: weights differ by {np.abs(gw - ww).max()}"
