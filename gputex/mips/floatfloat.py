"""Box mips of float formats without float64: float-float sums, one rounding decided by signs
(``mip_ff.wgsl``; this module is its pure arithmetic, in numpy float32, for the tests).

A value is a pair ``(hi, lo)`` of float32 whose unevaluated sum carries ~48 bits. Only three
operations are used, each of which every adapter computes the same way:

- float32 addition and subtraction (correctly rounded to nearest-even in Vulkan, Metal, D3D12);
- products whose result is exact: both factors are first cut into 12-bit halves by masking
  their bits (:func:`split`), so each partial product has at most 24 significant bits. A
  compiler that fuses a product into an addition (FMA contraction, which WGSL neither forbids
  nor controls) then changes nothing, since the product it fuses was exact;
- no division decides anything: the quotient's first guess (float32 ``/``, 2.5 ulp in WGSL) is
  only a starting point; the result is the float whose two midpoints ``m`` bracket ``S / D``,
  each side decided by the sign of ``S - m * D`` in float-float.

So the bytes depend only on the input, not on the adapter (subnormal intermediates aside:
adapters may flush them, so the contract holds for texel values and sums of magnitude above
2^-100 and zero). The result is the float32 or float16 nearest to the float-float quotient of
the float-float sums, which lies within :data:`EPSILON` (relative to the footprint's mean
magnitude) of the exact area average: it is the exact average correctly rounded except where
that average lies within that distance of a midpoint between two representable values.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["EPSILON", "FF_FORMATS", "KEEP_LIMIT", "two_sum", "quick_two_sum", "split", "prod", "add", "mul", "prod_w",
           "mul_w", "axis_flags", "chain_plan", "kept_values", "neg",
           "round_quotient", "level_sums", "tree_sums", "round_level", "model_levels"]

#: Float formats the float-float path serves: (words per texel's format code, channels). FMT 2:
#: float16 (two per word), 3: float32 words.
FF_FORMATS = {"rg16float": (2, 2), "rgba16float": (2, 4), "r32float": (3, 1), "rg32float": (3, 2),
              "rgba32float": (3, 4)}

#: A bound on how far the float-float quotient may lie from the exact area average, relative to
#: the mean magnitude of the terms (sum of w * |value| / sum of w; with weighted alpha, colour
#: relative to sum of w * alpha * |colour| / sum of w * alpha). Each term is exact to 2^-47, each
#: float-float addition adds at most ~2^-46 of the running magnitude, and a chunk adds at most
#: 2^15 terms (32768 texels, ``EXACT_LOOP_LIMIT``) before the chunks (at most 2^13) are added:
#: about 2^-30 in the worst case; 2^-28 is stated.
EPSILON = 2.0 ** -28

#: Steps each way from the first guess: the guess (float32 division of the high words, 2.5 ulp)
#: lies within ~4 units of the result.
STEPS = 6

_F = np.float32


def _f(x):
    return np.asarray(x, _F)


def two_sum(a, b):
    """``a + b`` as ``(s, e)`` with ``s + e`` exact (Knuth)."""
    a, b = _f(a), _f(b)
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def quick_two_sum(a, b):
    """``a + b`` as ``(s, e)``, exact where ``|a| >= |b|``."""
    a, b = _f(a), _f(b)
    s = a + b
    return s, b - (s - a)


def split(a):
    """``a`` as ``(hi, lo)``, ``hi`` its sign, exponent and top 11 stored bits (12 significant),
    ``lo = a - hi`` (at most 12 significant bits; the subtraction is exact)."""
    a = _f(a)
    hi = (a.view(np.uint32) & np.uint32(0xFFFFF000)).view(_F)
    return hi, a - hi


def add(x, y):
    """Float-float ``x + y`` (both ``(hi, lo)``), the accurate form (two two-sums)."""
    s, se = two_sum(x[0], y[0])
    t, te = two_sum(x[1], y[1])
    s, se = quick_two_sum(s, se + t)
    return quick_two_sum(s, se + te)


def prod(a, b):
    """Float32 ``a * b`` as a float-float, from four exact partial products."""
    ah, al = split(a)
    bh, bl = split(b)
    return add(two_sum(ah * bh, ah * bl), two_sum(al * bh, al * bl))


def mul(x, b):
    """Float-float ``x`` times float32 ``b``."""
    return add(prod(x[0], b), prod(x[1], b))


def prod_w(w, v, unit: bool, small: bool):
    """``w * v`` for a whole-number weight ``w < 2^24`` of an axis whose weights are all 1
    (``unit``: ``v`` itself) or all below 2^12 (``small``: each 12-bit half of ``v`` times ``w``
    is exact, so one two-sum); else :func:`prod`."""
    w, v = _f(w), _f(v)
    if unit:
        return v, np.zeros_like(v)
    if small:
        vh, vl = split(v)
        return two_sum(w * vh, w * vl)
    return prod(w, v)


def mul_w(x, w, unit: bool, small: bool):
    """Float-float ``x`` times a weight, as :func:`prod_w`."""
    if unit:
        return _f(x[0]), _f(x[1])
    return add(prod_w(w, x[0], False, small), prod_w(w, x[1], False, small))


#: The most bytes a level's kept sums may take (WebGPU's default max-storage-buffer-binding-size,
#: which every device allows: the plan, and with it the bytes, is the same on every adapter).
KEEP_LIMIT = 128 << 20


def kept_values(weighted: bool) -> int:
    """Float-float values a texel's kept sums hold: acc rgba, and with weighted alpha clear rgb."""
    return 7 if weighted else 4


def chain_plan(w: int, h: int, levels: int, weighted: bool) -> list[tuple[str, bool]]:
    """Per level >= 1: how its sums are made, ``"base"`` (summed from the base, ``mip_ff.wgsl``'s
    ``main``) or ``"tree"`` (the previous level's kept sums added, 2 x 2 or 2 x 1 children in
    order: the same area, one sum a child instead of its texels), and whether it keeps its sums for
    the next level. A level is a tree where both axes of it and of the level before halve exactly
    (or stay 1) and every weight from the base is 1 (its size divides the base's), and the
    previous level's kept sums fit :data:`KEEP_LIMIT`."""
    sizes = [(max(1, w >> k), max(1, h >> k)) for k in range(levels)]

    def unit(k):
        return w % sizes[k][0] == 0 and h % sizes[k][1] == 0

    def fits(k):
        return sizes[k][0] * sizes[k][1] * kept_values(weighted) * 8 <= KEEP_LIMIT

    tree = [False] * levels
    for k in range(2, levels):
        (pw, ph), (dw, dh) = sizes[k - 1], sizes[k]
        tree[k] = (unit(k) and unit(k - 1) and pw in (dw, 2 * dw) and ph in (dh, 2 * dh) and fits(k - 1))
    return [("tree" if tree[k] else "base", k + 1 < levels and tree[k + 1]) for k in range(1, levels)]


def axis_flags(n: int, m: int) -> tuple[bool, bool]:
    """(unit, small) of an axis going from ``n`` to ``m`` texels: its weights, divided by
    ``gcd(n, m)``, are all 1 where ``m`` divides ``n``, and at most ``m / gcd(n, m)``."""
    g = math.gcd(n, m)
    return n % m == 0, m // g < 4096


def neg(x):
    return -_f(x[0]), -_f(x[1])


def _sign(t):
    """Sign of a float-float: +1, -1 or 0."""
    return np.where(t[0] != 0, np.sign(t[0]), np.sign(t[1]))


def _beyond(s, d, lo, hi, odd):
    """Whether ``s / d`` lies above the midpoint of ``lo`` and ``hi`` (``d > 0``): the sign of
    ``s - lo * d - (hi - lo) / 2 * d``; at a tie, toward the even one (``odd``: ``lo`` is odd)."""
    h = (hi - lo) * _F(0.5)
    t = add(add(s, neg(mul(d, lo))), neg(mul(d, h)))
    sg = _sign(t)
    return (sg > 0) | ((sg == 0) & odd)


def _exponent(c):
    return ((c.view(np.uint32) >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64) - 127


def _pow2(e):
    return ((np.asarray(e, np.int64) + 127).astype(np.uint32) << np.uint32(23)).view(_F)


_HALF_MAX = _F(65504.0)
_HALF_MIN_NORMAL = _F(2.0 ** -14)


def _half_guess(q):
    """A float16 value near ``q >= 0`` (as float32)."""
    q = np.minimum(q, _HALF_MAX)
    sub = np.round(q * _F(2.0 ** 24)) * _F(2.0 ** -24)
    bits = (q.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    return np.minimum(np.where(q < _HALF_MIN_NORMAL, sub, bits.view(_F)), _HALF_MAX)


def _half_up(c):
    """The next float16 above ``c`` (``0 <= c < 65504``), as float32."""
    gap = np.where(c < _HALF_MIN_NORMAL, _F(2.0 ** -24), _pow2(_exponent(c) - 10))
    return c + gap


def _half_down(c):
    """The float16 below ``c > 0``, as float32."""
    e = _exponent(c)
    pow2 = (c.view(np.uint32) & np.uint32(0x7FE000)) == 0
    gap = np.where(c <= _HALF_MIN_NORMAL, _F(2.0 ** -24), np.where(pow2, _pow2(e - 11), _pow2(e - 10)))
    return c - gap


def _half_odd(c):
    sub = c < _HALF_MIN_NORMAL
    k = np.where(sub, np.round(c * _F(2.0 ** 24)).astype(np.int64), (c.view(np.uint32) >> np.uint32(13)).astype(np.int64))
    return (k & 1) == 1


def round_quotient(s, d, half: bool):
    """``s / d`` (float-floats, ``d > 0``) rounded to the nearest float32 (or float16, as float32
    values) by the signs at its midpoints, from a float32 quotient as the first guess."""
    s0, s1 = _f(s[0]), _f(s[1])
    neg_ = (s0 < 0) | ((s0 == 0) & (s1 < 0))
    s = (np.where(neg_, -s0, s0), np.where(neg_, -s1, s1))
    top = _HALF_MAX if half else _F(np.finfo(_F).max)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = s[0] / _f(d[0])
    q = np.minimum(np.where(np.isfinite(q), np.maximum(q, _F(0)), top), top)
    if half:
        c = _half_guess(q)
        up, down, odd = _half_up, _half_down, _half_odd
    else:
        c = q
        up = lambda v: (v.view(np.uint32) + np.uint32(1)).view(_F)  # noqa: E731
        down = lambda v: (v.view(np.uint32) - np.uint32(1)).view(_F)  # noqa: E731
        odd = lambda v: (v.view(np.uint32) & np.uint32(1)) == 1  # noqa: E731
    for _ in range(STEPS):
        can = c < top
        n = up(np.where(can, c, _F(0)))
        go = can & _beyond(s, d, c, n, odd(c))
        c = np.where(go, n, c)
    for _ in range(STEPS):
        can = c > 0
        p = down(np.where(can, c, _F(1)))
        go = can & ~_beyond(s, d, p, c, odd(p))
        c = np.where(go, p, c)
    return np.where(neg_, -c, c)


def _zero(shape):
    z = np.zeros(shape, _F)
    return z, z.copy()


def _canonical(texels, channels):
    """Texels (..., channels) float32 -> the rgba the sums see (grey in rgb, alpha 1 without it)."""
    t = _f(texels)
    if channels == 4:
        return [t[..., i] for i in range(4)]
    g = t[..., 0]
    return [g, g, g, t[..., 1] if channels == 2 else np.ones_like(g)]


def _select(m, x, y):
    return np.where(m, x[0], y[0]), np.where(m, x[1], y[1])


def _chunk_sums(img, channels, weighted, xs, ys, r0, r1, dw, dh):
    gx, gy = math.gcd(img.shape[1], dw), math.gcd(img.shape[0], dh)
    ux, sx = axis_flags(img.shape[1], dw)
    uy, sy = axis_flags(img.shape[0], dh)
    """The shader's ``sums`` for every texel of a level: a row's terms added in order, then the
    row times its weight into the texel's sums, rows ``[r0, r1)`` of each texel's footprint."""
    h, w = img.shape[:2]
    acc = [_zero((dh, dw)) for _ in range(4)]
    clear = [_zero((dh, dw)) for _ in range(3)]
    wsum = np.zeros((dh, dw), np.uint64)
    x0, x1 = xs
    fw = int((x1 - x0).max())
    fh = int((r1 - r0).max()) if r1.size else 0
    X = np.arange(dw)
    for k in range(fh):
        ty = r0 + k  # (dh,)
        rowok = ty < r1
        tyc = np.minimum(ty, h - 1)
        Y = np.arange(dh)
        wyi = (np.minimum((tyc + 1) * dh, (Y + 1) * h) - np.maximum(tyc * dh, Y * h)) // gy
        wy = wyi.astype(_F)
        racc = [_zero((dh, dw)) for _ in range(4)]
        rclear = [_zero((dh, dw)) for _ in range(3)]
        rw = np.zeros((dh, dw), np.uint64)
        for j in range(fw):
            tx = x0 + j  # (dw,)
            ok = (tx < x1)[None, :] & rowok[:, None]
            txc = np.minimum(tx, w - 1)
            wx = ((np.minimum((txc + 1) * dw, (X + 1) * w) - np.maximum(txc * dw, X * w)) // gx).astype(_F)
            wxb = np.broadcast_to(wx[None, :], (dh, dw))
            c = _canonical(img[tyc][:, txc], channels)
            if weighted:
                a = c[3]
                isclear = a <= 0
                for i in range(3):
                    nc = add(rclear[i], prod_w(wxb, c[i], ux, sx))
                    rclear[i] = _select(ok & isclear, nc, rclear[i])
                    na = add(racc[i], mul_w(prod(c[i], a), wxb, ux, sx))
                    racc[i] = _select(ok & ~isclear, na, racc[i])
                na = add(racc[3], prod_w(wxb, a, ux, sx))
                racc[3] = _select(ok & ~isclear, na, racc[3])
            else:
                for i in range(4):
                    racc[i] = _select(ok, add(racc[i], prod_w(wxb, c[i], ux, sx)), racc[i])
            rw = rw + np.where(ok, wxb.astype(np.uint64), 0)
        wyb = np.broadcast_to(wy[:, None], (dh, dw))
        rok = np.broadcast_to(rowok[:, None], (dh, dw))
        for i in range(4):
            acc[i] = _select(rok, add(acc[i], mul_w(racc[i], wyb, uy, sy)), acc[i])
        for i in range(3):
            clear[i] = _select(rok, add(clear[i], mul_w(rclear[i], wyb, uy, sy)), clear[i])
        wsum = wsum + np.where(rok, rw * np.broadcast_to(wyi[:, None], (dh, dw)).astype(np.uint64), 0)
    return acc, clear, wsum


def _wsum_ff(w):
    """A weight sum (an integer below 2^32) as a float-float, exactly."""
    w = np.asarray(w, np.uint64)
    return quick_two_sum((w & np.uint64(0xFFFF0000)).astype(_F), (w & np.uint64(0xFFFF)).astype(_F))


def level_sums(img, dw: int, dh: int, *, channels: int, weighted: bool, loop_limit: int):
    """The sums (acc rgba, clear rgb: float-float (dh, dw) arrays; the weight sum) of level
    ``(dw, dh)`` of ``img`` ((h, w, channels) float32) from the base, as ``mip_ff.wgsl``'s
    ``main`` (and ``finish``, where the footprints go in chunks of ``loop_limit`` texels: the
    chain's ``mips.exact.EXACT_LOOP_LIMIT``) makes them."""
    img = _f(img)
    h, w = img.shape[:2]
    X, Y = np.arange(dw), np.arange(dh)
    x0, x1 = X * w // dw, ((X + 1) * w + dw - 1) // dw
    y0, y1 = Y * h // dh, ((Y + 1) * h + dh - 1) // dh
    fw, fh = -(-w // dw) + 1, -(-h // dh) + 1
    rows = fh if fw * fh <= loop_limit else max(1, loop_limit // fw)
    chunks = -(-fh // rows)
    parts = []
    for k in range(chunks):
        r0 = np.minimum(y1, y0 + k * rows)
        r1 = np.minimum(y1, r0 + rows)
        parts.append(_chunk_sums(img, channels, weighted, (x0, x1), (y0, y1), r0, r1, dw, dh))
    if chunks == 1:
        return parts[0]
    acc = [_zero((dh, dw)) for _ in range(4)]  # `finish`: the chunks added in order from zero
    clear = [_zero((dh, dw)) for _ in range(3)]
    wsum = np.zeros((dh, dw), np.uint64)
    for pa, pc, pw in parts:
        acc = [add(a, b) for a, b in zip(acc, pa)]
        clear = [add(a, b) for a, b in zip(clear, pc)]
        wsum = wsum + pw
    return acc, clear, wsum


def tree_sums(prev, dw: int, dh: int, base_size: tuple[int, int], weighted: bool):
    """A level's sums from the previous level's (``mip_ff.wgsl``'s ``tree``): each texel's 2 x 2
    (2 x 1, 1 x 2) children added in row order from zero; the weight sum is the texel count of
    the footprint (every weight from the base is 1)."""
    acc0, clear0, _ = prev
    ph, pw = acc0[0][0].shape
    fx, fy = pw // dw, ph // dh
    acc = [_zero((dh, dw)) for _ in range(4)]
    clear = [_zero((dh, dw)) for _ in range(3)]
    for j in range(fy):
        for i in range(fx):
            acc = [add(a, (c[0][j::fy, i::fx], c[1][j::fy, i::fx])) for a, c in zip(acc, acc0)]
            if weighted:
                clear = [add(a, (c[0][j::fy, i::fx], c[1][j::fy, i::fx])) for a, c in zip(clear, clear0)]
    w, h = base_size
    return acc, clear, np.full((dh, dw), (w // dw) * (h // dh), np.uint64)


def round_level(sums, *, channels: int, weighted: bool, half: bool):
    """A level's values from its sums (``mip_ff.wgsl``'s ``store``): (dh, dw, channels) float32."""
    acc, clear, wsum = sums
    wd = _wsum_ff(wsum)
    if weighted:
        alpha_ok = acc[3][0] > 0
        den = _select(alpha_ok, acc[3], wd)
        rgb = [round_quotient(_select(alpha_ok, acc[i], add(clear[i], acc[i])), den, half) for i in range(3)]
        a = np.where(alpha_ok, round_quotient(acc[3], wd, half), _F(0))
        vals = rgb + [a]
    else:
        vals = [round_quotient(acc[i], wd, half) for i in range(4)]
    if channels == 4:
        out = vals
    elif channels == 2:
        out = [vals[0], vals[3]]
    else:
        out = [vals[0]]
    return np.stack(out, -1).astype(_F)


def model_levels(img, levels: int | None = None, *, weighted: bool, half: bool, loop_limit: int):
    """Every level >= 1 of the box chain of ``img`` ((h, w, channels) float32) as the shader
    makes it: :func:`chain_plan`'s levels from the base or from the level before (``loop_limit``:
    the chain's ``mips.exact.EXACT_LOOP_LIMIT``)."""
    img = _f(img)
    h, w, channels = img.shape
    n = levels or max(w, h).bit_length()
    weighted = weighted and channels in (2, 4)
    out, prev = [], None
    for k, (how, _keep) in enumerate(chain_plan(w, h, n, weighted), start=1):
        dw, dh = max(1, w >> k), max(1, h >> k)
        if how == "tree":
            sums = tree_sums(prev, dw, dh, (w, h), weighted)
        else:
            sums = level_sums(img, dw, dh, channels=channels, weighted=weighted, loop_limit=loop_limit)
        out.append(round_level(sums, channels=channels, weighted=weighted, half=half))
        prev = sums
    return out
