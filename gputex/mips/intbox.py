"""Pure arithmetic of the integer box chain (:mod:`.integer`, ``mip_int.wgsl``): no GPU import.

A level's texel is the exact area average of its footprint in the base image. The integer
chain keeps, per texel and channel, the exact integer sum ``S = sum(w * L(code))`` over the
base footprint, where ``w`` is the overlap of a base texel with the footprint in units of
``1 / (level size)`` per axis (an integer: the footprint's edges are multiples of that) and
``L`` a table of fixed-point linear-light values. The weights of every texel of every
level add up to ``W = base width * base height``; with weighted alpha the colour sum is
``sum(w * a * L)`` over ``A = sum(w * a)`` (``a``: the alpha code).

* ``L(code)`` is the code itself for linear data and ``round(decode(code / max) * 2**F)``
  for sRGB data (``F = frac_bits(bits)``: 31 at 8 bits, so L fits one 32-bit word and a
  texel's product one 32x32-bit multiply; 40 at 16 bits), computed here with integers only (sRGB's ``x ** 2.4`` is the
  integer fifth root of ``x ** 12``), so no float library decides a bit.
* The output code is found by comparing ``S`` against the thresholds between codes,
  cross-multiplied: ``code >= k`` iff ``S * 2**32 >= Q[k] * den`` where ``Q[k]`` is the
  threshold ``decode((k - 0.5) / max)`` in the units of ``L`` with 32 more bits
  (``(k - 0.5) * 2**32`` for linear data).
* A level whose footprints are tiled exactly by an earlier stored level's texels is the sum
  of those texels' sums, divided exactly by the tiling ratio on each axis.

So every adapter computes the same integers and writes the same bytes. Against the exact
(real-number) area average, the only error is ``L``'s rounding (at most half a unit of
``2**-F``) and ``Q``'s (``2**-(F+32)``): a result differs from the correctly rounded one only
where the exact value lies within ``EPSILON_LSB`` of a tie between two codes (the largest
slope of the sRGB encoding is 12.92; ``2**-32 * 12.92 * 255 < 7.7e-7``,
``2**-41 * 12.92 * 65535 < 3.9e-7``). Exact ties of
linear data (an average of exactly k + 1/2) round up.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

__all__ = ["frac_bits", "EPSILON_LSB", "lin_table", "threshold_table", "float_thresholds", "BUCKET_LOW",
           "BUCKETS", "bucket_table", "CODE_DOUBT", "code_words", "LevelPlan", "plan_chain", "model_chain"]



def frac_bits(bits: int) -> int:
    """F: fractional bits of the sRGB table L for ``bits``-bit channels."""
    return 31 if bits == 8 else 40


#: Largest distance (in output LSB) from a tie at which a result may differ from the
#: correctly rounded one (see the module docstring).
EPSILON_LSB = 1e-6
#: Base texels the chain accepts (the sums then fit 3 x 32 bits, their products 4 x 32).
MAX_BASE_TEXELS = 1 << 30
#: Loop iterations one invocation may run (lavapipe ends an invocation's loops after 65535).
LOOP_LIMIT = 16384


def _iroot(z: int, n: int) -> int:
    """floor(z ** (1/n)) for a non-negative integer z (Newton's method on integers)."""
    if z < 2:
        return z
    r = 1 << -(-z.bit_length() // n)  # >= the root
    while True:
        s = ((n - 1) * r + z // r ** (n - 1)) // n
        if s >= r:
            break
        r = s
    while r ** n > z:
        r -= 1
    while (r + 1) ** n <= z:
        r += 1
    return r


def _decode_floor(x: Fraction, bits: int) -> int:
    """floor(srgb_decode(x) * 2**bits) for a rational x in [0, 1], exactly."""
    if x <= Fraction(4045, 100000):
        return (x.numerator * 100 << bits) // (x.denominator * 1292)  # x / 12.92
    u = (x + Fraction(55, 1000)) / Fraction(1055, 1000)  # decode = u ** (12 / 5)
    z = (u.numerator ** 12 << (5 * bits)) // u.denominator ** 12
    return _iroot(z, 5)


@cache
def lin_table(bits: int, srgb: bool) -> tuple[int, ...]:
    """L(code) for every code of a ``bits``-bit channel: the code (linear data) or the sRGB
    decode in units of 2**-F (``frac_bits``), rounded to nearest (half up)."""
    top = (1 << bits) - 1
    if not srgb:
        return tuple(range(top + 1))
    return tuple((_decode_floor(Fraction(c, top), frac_bits(bits) + 1) + 1) >> 1 for c in range(top + 1))


@cache
def threshold_table(bits: int, srgb: bool) -> tuple[int, ...]:
    """Q[k], k = 0..max: the value (in L's units, times 2**32, floored) from which a texel
    rounds to code k or above; Q[0] = 0."""
    top = (1 << bits) - 1
    if not srgb:
        return (0,) + tuple(((2 * k - 1) << 32) // 2 for k in range(1, top + 1))
    return (0,) + tuple(_decode_floor(Fraction(2 * k - 1, 2 * top), frac_bits(bits) + 32) for k in range(1, top + 1))


#: The float code buckets (:func:`bucket_table`): float32 bit pattern >> 16 (exponent and the
#: top 7 mantissa bits) minus BUCKET_LOW; values below 2**17 (exponent 144) share bucket 0.
BUCKET_LOW = 144 << 7
#: Buckets from 2**17 to 2**31 (L(255)) inclusive.
BUCKETS = (158 - 144) * 128 + 1


@cache
def float_thresholds() -> tuple[float, ...]:
    """Q[k] / 2**32 of 8-bit sRGB as float32 values (in L's units, 2**-31): what the shaders'
    float screen compares with (``integer.table_words(float_thresholds=True)``)."""
    import numpy as np

    q = np.array([float(t) / 2.0 ** 32 for t in threshold_table(8, True)], np.float64).astype(np.float32)
    return tuple(float(v) for v in q)


@cache
def bucket_table() -> tuple[int, ...]:
    """The 8-bit sRGB code of the lowest value of each bucket of floats: a float z >= 0 (in L's
    units) falls in bucket ``clamp((bits(z) >> 16) - BUCKET_LOW, 0, BUCKETS - 1)``, and its code
    against the float thresholds q (``float_thresholds``: the k with q[k] <= z < q[k + 1]) is
    ``b + (z >= q[b + 1])``, b the bucket's entry: no bucket holds two thresholds (the sRGB
    thresholds are >= 0.9% apart, a bucket spans 2**-7 = 0.78%; checked here). So a shader finds
    the code of a float with one lookup and one comparison instead of the sRGB encode's ``pow``."""
    import numpy as np

    q = np.array(float_thresholds(), np.float32)[1:]
    first = ((np.arange(BUCKETS, dtype=np.uint32) + BUCKET_LOW) << 16).view(np.float32).astype(np.float64)
    first[0] = 0.0
    end = ((np.arange(BUCKETS, dtype=np.uint32) + BUCKET_LOW + 1) << 16).view(np.float32).astype(np.float64)
    codes = np.searchsorted(q, first, side="right")
    assert (np.searchsorted(q, end, side="left") - codes).max() <= 1, "a bucket holds two thresholds"
    return tuple(int(c) for c in codes)


#: Float steps (units in the last place, as bit patterns) from a threshold within which a code from
#: :func:`code_words` is in doubt: 64 ulps are at least 2**-18 of the value (an ulp is at least 2**-24
#: of it), the float screen's MARGIN; its estimates are within ~15 * 2**-24 of the exact value on any
#: conforming WGSL implementation (conversions, + and x to either neighbour: 1 ulp each; division
#: 2.5 ulp; the stored threshold 0.5 ulp; products by 65536 or 2**32 exact, so FMA contraction changes
#: nothing; values >= 1, so no flush to zero: review, seventh session), well inside 64 steps.
CODE_DOUBT = 64


@cache
def code_words(doubt: int = CODE_DOUBT) -> tuple[int, ...]:
    """One word a bucket of :func:`bucket_table` (8-bit sRGB), from which a shader takes a float's
    code against the float thresholds q and whether it lies within ``doubt`` float steps of one
    of them, with one lookup and integer comparisons: bits 0-7 the code k0 of the bucket's start
    (0 for bucket 0), bit 8 set where a threshold lies inside the bucket (after its start), bits
    16-31 then that threshold's low 16 bits (a bucket is the floats whose bits share their top 16);
    bit 9 set where a threshold lies within ``doubt`` steps at or below the bucket's start, bit 10
    where one lies within ``doubt`` steps at or above its end. A float z of the bucket, ``lo`` its
    low 16 bits, has the code ``k0 + (bit 8 and lo >= t)``; it is in doubt where ``|lo - t| <
    doubt`` (threshold k0 + 1), bit 9 and ``lo < doubt`` (threshold k0), or bit 10 and ``lo >=
    65536 - doubt`` (threshold k0 + 1 + bit 8): then one exact comparison with that threshold
    decides. Checked here: no bucket holds two thresholds, the thresholds are more than 4 * doubt
    steps apart, and the clamped first and last buckets have no threshold near them."""
    import numpy as np

    qb = np.array(float_thresholds()[1:], np.float32).view(np.uint32).astype(np.int64)  # q[1..255], rising
    assert (np.diff(qb) > 4 * doubt).all(), "thresholds too close for one comparison"
    start = (np.arange(BUCKETS, dtype=np.int64) + BUCKET_LOW) << 16
    end = start + (1 << 16)
    k0 = np.searchsorted(qb, start, side="right")  # thresholds at or below the start
    inside = np.searchsorted(qb, end, side="left") - k0  # thresholds after the start, before the end
    assert inside.max() <= 1, "a bucket holds two thresholds"
    t = np.where(inside == 1, qb[np.minimum(k0, len(qb) - 1)] - start, 0)
    low = k0 - np.searchsorted(qb, start - doubt, side="left") > 0  # (k0: thresholds at or below the start)
    high = np.searchsorted(qb, end + doubt, side="right") - np.searchsorted(qb, end, side="left") > 0
    assert k0[0] == 0 and not (inside[0] or low[0] or high[0]), "a threshold near the first bucket"
    assert k0[-1] == 255 and not (inside[-1] or low[-1] or high[-1]), "a threshold near the last bucket"
    words = k0 | (inside << 8) | (low.astype(np.int64) << 9) | (high.astype(np.int64) << 10) | (t << 16)
    return tuple(int(w) for w in words)


def round_code(num: int, den: int, bits: int, srgb: bool) -> int:
    """The code k with Q[k] <= num / den * 2**32 < Q[k + 1] (what the shader's search finds)."""
    q = threshold_table(bits, srgb)
    lo, hi = 0, len(q) - 1
    while lo < hi:  # largest k with num * 2**32 >= q[k] * den
        mid = (lo + hi + 1) // 2
        if (num << 32) >= q[mid] * den:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class LevelPlan:
    level: int
    source: int      # 0: the base; k: the stored sums of level k (which tile this level exactly)
    chunks: int      # base footprint rows split over this many invocations (1: none)
    chunk_rows: int  # footprint rows per chunk
    store: bool      # keep this level's sums (a later level reads them)


def _size(w: int, h: int, level: int) -> tuple[int, int]:
    return max(1, w >> level), max(1, h >> level)


def plan_chain(width: int, height: int, levels: int, sums_bytes_per_texel: int,
               max_binding: int) -> list[LevelPlan]:
    """Where each level 1.. gets its sums from. A level reads the deepest earlier level from 2
    on whose sizes are multiples of its own on both axes (its texels then tile the footprint),
    whose sums fit one storage binding and which has at most LOOP_LIMIT texels per footprint;
    else the base (footprint rows in chunks of at most LOOP_LIMIT texels per invocation).
    Level 1 reads the base: reading the base again costs less than storing level 1's sums."""
    sizes = [_size(width, height, lv) for lv in range(levels)]
    fits = [lv >= 2 and sizes[lv][0] * sizes[lv][1] * sums_bytes_per_texel <= max_binding
            for lv in range(levels)]
    sources = [0] * levels
    for lv in range(1, levels):
        w, h = sizes[lv]
        for k in range(lv - 1, 1, -1):
            kw, kh = sizes[k]
            if fits[k] and kw % w == 0 and kh % h == 0 and (kw // w) * (kh // h) <= LOOP_LIMIT:
                sources[lv] = k
                break
    read = set(sources[1:])
    out = []
    for lv in range(1, levels):
        (w, h), src = sizes[lv], sources[lv]
        chunks, rows = 1, 0
        if src == 0:
            fw, fh = -(-width // w) + 1, -(-height // h) + 1  # widest footprint, in texels
            rows = fh if fw * fh <= LOOP_LIMIT else max(1, LOOP_LIMIT // fw)
            chunks = -(-fh // rows)
        out.append(LevelPlan(lv, src, chunks, rows, lv in read))
    return out


def _weights(n: int, m: int, j: int) -> list[tuple[int, int]]:
    """(base index, integer weight) of destination texel j of an axis going from n to m texels."""
    lo, hi = j * n, (j + 1) * n
    return [(t, min((t + 1) * m, hi) - max(t * m, lo)) for t in range(lo // m, -(-hi // m))]


def model_chain(codes: list[list[list[int]]], channels: int, bits: int, srgb: bool, weighted: bool,
                levels: int) -> list[list[list[tuple[int, ...]]]]:
    """The integer chain in plain Python (every level from the base): the bytes the GPU must
    give, for the self-check's image and the tests. ``codes``: nested lists [y][x][channel].
    Returns per level a list of rows of per-texel code tuples."""
    h, w = len(codes), len(codes[0])
    lin = lin_table(bits, srgb)
    nc = 3 if channels == 4 else 1
    has_alpha = channels in (2, 4)
    weighted = weighted and has_alpha
    total = w * h
    out = []
    for lv in range(1, levels):
        dw, dh = _size(w, h, lv)
        rows = []
        for y in range(dh):
            row = []
            for x in range(dw):
                s, n, a = [0] * nc, [0] * nc, 0
                for ty, wy in _weights(h, dh, y):
                    for tx, wx in _weights(w, dw, x):
                        px, wt = codes[ty][tx], wx * wy
                        al = px[-1] if has_alpha else 0
                        for c in range(nc):
                            s[c] += wt * lin[px[c]]
                            n[c] += wt * al * lin[px[c]]
                        a += wt * al
                if weighted and a > 0:
                    col = [round_code(n[c], a, bits, srgb) for c in range(nc)]
                else:
                    col = [round_code(s[c], total, bits, srgb) for c in range(nc)]
                row.append(tuple(col + ([round_code(a, total, bits, False)] if has_alpha else [])))
            rows.append(row)
        out.append(rows)
    return out
