"""The bounds mip_spd.wgsl's 8-bit first levels rest on (finalize_narrow, add_narrow), checked in
plain Python and numpy float32 (no GPU): the 32-bit lanes cannot overflow for up to 16 base
texels, the float estimate of a texel's value is within 2^-20 of the exact rational, and so every
code the screen accepts is the exact search's (intbox.round_code)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gputex.mips.intbox import lin_table, round_code, threshold_table

MARGIN = np.float32(3.814697265625e-6)  # mip_screen.wgsl: 2^-18
TEXELS = 16  # the most base texels a level-2 texel of the single-pass chain sums


def test_lanes_hold_sixteen_texels():
    """add_narrow: a lane adds a * (L >> 16) or a * (L & 0xffff) per texel, L < 2^32, a <= 255."""
    lin = lin_table(8, True)
    assert max(lin) < 1 << 32
    most = 255 * max(max(v >> 16 for v in lin), 0xFFFF)
    assert TEXELS * most < 1 << 28  # finalize_narrow's float error bound assumes lanes < 2^28
    assert TEXELS * 255 < 1 << 12  # alpha sums: exact as f32, and (a + 2^(s-1)) >> s in a u32


def _estimate(texels, weighted):
    """finalize_narrow's float32 arithmetic for one channel: (value, exact numerator, denominator)."""
    lin = lin_table(8, True)
    alpha = sum(a for _, a in texels)
    covered = weighted and alpha > 0
    w = [a if covered else 1 for _, a in texels]
    h = sum(wi * (lin[c] >> 16) for (c, _), wi in zip(texels, w))
    lo = sum(wi * (lin[c] & 0xFFFF) for (c, _), wi in zip(texels, w))
    den = alpha if covered else len(texels)
    x = (np.float32(h) * np.float32(65536.0) + np.float32(lo)) / np.float32(den)
    return x, (h << 16) + lo, den


def _screen(x):
    """The code finalize_narrow takes from the estimate x, or None where the screen is unsure."""
    q = np.array([float(t) / 2.0 ** 32 for t in threshold_table(8, True)] + [3.4e38], np.float64).astype(np.float32)
    v = float(x) / 2.0 ** 31
    enc = v * 12.92 if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055
    k = int(min(max(np.floor(enc * 255 + 0.5), 0), 255))
    above = k == 0 or x >= q[k] * (np.float32(1) + MARGIN)
    below = k == 255 or x < q[k + 1] * (np.float32(1) - MARGIN)
    return k if above and below else None


texel = st.tuples(st.integers(0, 255), st.integers(0, 255))


@settings(max_examples=400, deadline=None)
@given(st.lists(texel, min_size=1, max_size=TEXELS), st.booleans())
def test_estimate_is_within_its_bound_and_accepted_codes_are_exact(texels, weighted):
    x, num, den = _estimate(texels, weighted)
    if num:
        assert abs(float(x) - num / den) <= 2.0 ** -20 * (num / den)
    k = _screen(x)
    if k is not None:
        assert k == round_code(num, den, 8, True)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 255), st.integers(1, TEXELS), st.integers(0, 255), st.booleans())
def test_near_threshold_values_are_accepted_only_when_exact(code, n, alpha, weighted):
    """Texels of two neighbouring codes mixed so the value sits as close to the threshold between
    them as 16 texels allow: where the screen still accepts, the code is the exact one."""
    texels = [(code - 1, alpha)] * (n // 2) + [(code, alpha)] * (n - n // 2)
    x, num, den = _estimate(texels, weighted)
    k = _screen(x)
    if k is not None:
        assert k == round_code(num, den, 8, True)
