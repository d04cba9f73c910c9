// One-channel ramp block (BC4, BC5's two halves, BC3's alpha). A candidate is an endpoint pair
// (hi, lo) in one of the format's two modes: 8 values (e0 = hi > e1 = lo) or 6 values plus the
// format's two extremes (e0 = lo <= e1 = hi). Every texel takes the palette entry nearest to it
// (exhaustive selection: the entry at its own ramp position, rounded, plus the two extremes
// in the 6-value mode). The palette is the specification's float one (not rounded to codes: hardware
// decodes BC4 at more than 8 bits). The search: the block's range inset by 0..RAMP_IN codes on each side, then
// least-squares refits of the endpoints against the chosen ramp positions (RAMP_LS times,
// with the 3x3 integer pairs around each), then a pattern search over the 3x3 neighbourhood of
// the best pair, RAMP_STRIDE codes apart, halved each time no neighbour is better (RAMP_DESC
// steps), in each mode.

// The block's 16 values sit in four vec4 registers (rows 0..3), not in an array: a per-thread
// array indexed in a loop the compiler does not unroll lives in local memory (on the H200 that
// made BC4 several times slower); every per-texel step below is written for a row of four.
var<private> rv0: vec4<f32>;
var<private> rv1: vec4<f32>;
var<private> rv2: vec4<f32>;
var<private> rv3: vec4<f32>;

const RAMP_MIN: f32 = select(0.0, -127.0, SIGNED);
const RAMP_MAX: f32 = select(255.0, 127.0, SIGNED);

// A pair's palette walk: texel value v -> ramp position j = round((v - lo) * n / (hi - lo)),
// clamped to 0..n (the palette is evenly spaced, so that is the nearest entry), value
// lo + j * (hi - lo) / n (the specification's float palette, within a few ULP of its quotient;
// one division per pair, none per texel).
struct Walk {
    lo: f32,
    scale: f32,
    step: f32,
    n: f32,
}

fn walk(hi: i32, lo: i32, n: i32) -> Walk {
    let span = f32(hi - lo);
    let fnn = f32(n);
    return Walk(f32(lo), select(0.0, fnn / span, hi > lo), span / fnn, fnn);
}

fn row_pos(v: vec4<f32>, k: Walk) -> vec4<f32> {
    return clamp(floor((v - k.lo) * k.scale + 0.5), vec4<f32>(0.0), vec4<f32>(k.n));
}

// squared errors of a row: the nearest ramp entry, or (6-value mode) an extreme if nearer
fn row_err(v: vec4<f32>, k: Walk, six: bool) -> vec4<f32> {
    let d = v - k.lo - row_pos(v, k) * k.step;
    var e = d * d;
    if (six) {
        let dl = v - RAMP_MIN;
        let dh = v - RAMP_MAX;
        e = min(e, min(dl * dl, dh * dh));
    }
    return e;
}

fn ramp_err(hi: i32, lo: i32, n: i32) -> f32 {
    let k = walk(hi, lo, n);
    let six = n == 5;
    let e = row_err(rv0, k, six) + row_err(rv1, k, six) + row_err(rv2, k, six) + row_err(rv3, k, six);
    return e.x + e.y + e.z + e.w;
}

// a pair the mode can hold (8 values: hi > lo; 6 values: lo <= hi), inside the code range
fn ramp_ok(hi: i32, lo: i32, n: i32) -> bool {
    return lo >= i32(RAMP_MIN) && hi <= i32(RAMP_MAX) && (hi > lo || (n == 5 && hi == lo));
}

// texels of a row on the ramp (1.0; 0.0: an extreme is strictly nearer, 6-value mode)
fn row_on(v: vec4<f32>, k: Walk, six: bool) -> vec4<f32> {
    if (!six) {
        return vec4<f32>(1.0);
    }
    let d = v - k.lo - row_pos(v, k) * k.step;
    let dl = v - RAMP_MIN;
    let dh = v - RAMP_MAX;
    return select(vec4<f32>(1.0), vec4<f32>(0.0), min(dl * dl, dh * dh) < d * d);
}

// least-squares sums of a row: (aa, bb, ab, ax), bx = sum(on wb v) returned apart
struct Sums {
    m: vec4<f32>,   // aa, bb, ab, ax
    bx: f32,
}

fn row_sums(v: vec4<f32>, k: Walk, six: bool, acc: Sums) -> Sums {
    let on = row_on(v, k, six);
    let wb = row_pos(v, k) / k.n;
    let wa = (1.0 - wb) * on;
    let wbo = wb * on;
    return Sums(acc.m + vec4<f32>(dot(wa, wa), dot(wbo, wbo), dot(wa, wbo), dot(wa, v)), acc.bx + dot(wbo, v));
}

// least-squares (hi, lo) for the ramp positions the pair's texels take (extremes left out)
fn ramp_refit(hi: i32, lo: i32, n: i32) -> vec2<i32> {
    let k = walk(hi, lo, n);
    let six = n == 5;
    var s = Sums(vec4<f32>(0.0), 0.0);
    s = row_sums(rv0, k, six, s);
    s = row_sums(rv1, k, six, s);
    s = row_sums(rv2, k, six, s);
    s = row_sums(rv3, k, six, s);
    let aa = s.m.x;
    let bb = s.m.y;
    let ab = s.m.z;
    let ax = s.m.w;
    let bx = s.bx;
    let det = aa * bb - ab * ab;
    if (abs(det) < 1e-6) {
        return vec2<i32>(hi, lo);
    }
    let l = (ax * bb - bx * ab) / det;
    let h = (bx * aa - ax * ab) / det;
    return vec2<i32>(i32(floor(clamp(h, RAMP_MIN, RAMP_MAX) + 0.5)), i32(floor(clamp(l, RAMP_MIN, RAMP_MAX) + 0.5)));
}

// best pair around `c` (x hi, y lo, z error as bits) among the 3x3 neighbours of `at`, `s`
// codes apart
fn ramp_around(c: vec3<i32>, at: vec2<i32>, n: i32, s: i32) -> vec3<i32> {
    var b = c;
    for (var d = 0; d < 9; d++) {
        let hi = at.x + (d / 3 - 1) * s;
        let lo = at.y + (d % 3 - 1) * s;
        if (d == 4 && all(at == c.xy)) {
            continue;  // the centre is the current best: never strictly better
        }
        if (ramp_ok(hi, lo, n)) {
            let e = ramp_err(hi, lo, n);
            if (e < bitcast<f32>(b.z)) {
                b = vec3<i32>(hi, lo, bitcast<i32>(e));
            }
        }
    }
    return b;
}

// refits then descent from (hi, lo) in one mode: (hi, lo, error bits)
fn ramp_search(hi0: i32, lo0: i32, n: i32) -> vec3<i32> {
    var b = vec3<i32>(hi0, lo0, bitcast<i32>(ramp_err(hi0, lo0, n)));
    for (var it = 0u; it < RAMP_LS; it++) {
        let before = b.z;
        b = ramp_around(b, ramp_refit(b.x, b.y, n), n, 1);
        if (b.z == before) {
            break;
        }
    }
    // pattern search: steps of RAMP_STRIDE codes, halved whenever no neighbour is better
    var s = RAMP_STRIDE;
    for (var it = 0u; it < RAMP_DESC; it++) {
        let before = b.z;
        b = ramp_around(b, b.xy, n, s);
        if (b.z == before) {
            if (s == 1) {
                break;
            }
            s = s / 2;
        }
    }
    return b;
}

// the 3-bit indices of a row, packed in 12 bits. 8 values: ramp position j = 7 -> 0, j = 0 -> 1,
// else 8 - j; 6 values: 0 -> 0, 5 -> 1, else j + 1, the low extreme 6, the high one 7
fn row_bits(v: vec4<f32>, k: Walk, n: i32) -> u32 {
    let j = vec4<u32>(row_pos(v, k));
    var idx: vec4<u32>;
    if (n == 7) {
        idx = select(select(8u - j, vec4<u32>(1u), j == vec4<u32>(0u)), vec4<u32>(0u), j == vec4<u32>(7u));
    } else {
        idx = select(select(j + 1u, vec4<u32>(1u), j == vec4<u32>(5u)), vec4<u32>(0u), j == vec4<u32>(0u));
        let d = v - k.lo - row_pos(v, k) * k.step;
        let el = (v - RAMP_MIN) * (v - RAMP_MIN);
        let eh = (v - RAMP_MAX) * (v - RAMP_MAX);
        let low = el < d * d;
        idx = select(idx, vec4<u32>(6u), low);
        idx = select(idx, vec4<u32>(7u), eh < select(d * d, el, low));
    }
    return idx.x | (idx.y << 3u) | (idx.z << 6u) | (idx.w << 9u);
}

fn chan(t: vec4<f32>, ch: u32) -> f32 {
    var v = select(select(select(t.x, t.y, ch == 1u), t.z, ch == 2u), t.w, ch == 3u);
    if (SIGNED) {
        v = v * (254.0 / 255.0) - 127.0;  // [0, 1] -> [-1, 1], in snorm codes
    }
    return v;
}

// The two words of the ramp block of channel `ch` (0 r, 1 g, 3 alpha).
fn encode_ramp(ch: u32) -> vec2<u32> {
    rv0 = vec4<f32>(chan(texel[0], ch), chan(texel[1], ch), chan(texel[2], ch), chan(texel[3], ch));
    rv1 = vec4<f32>(chan(texel[4], ch), chan(texel[5], ch), chan(texel[6], ch), chan(texel[7], ch));
    rv2 = vec4<f32>(chan(texel[8], ch), chan(texel[9], ch), chan(texel[10], ch), chan(texel[11], ch));
    rv3 = vec4<f32>(chan(texel[12], ch), chan(texel[13], ch), chan(texel[14], ch), chan(texel[15], ch));
    let lo4 = min(min(rv0, rv1), min(rv2, rv3));
    let hi4 = max(max(rv0, rv1), max(rv2, rv3));
    let lo = min(min(lo4.x, lo4.y), min(lo4.z, lo4.w));
    let hi = max(max(hi4.x, hi4.y), max(hi4.z, hi4.w));
    // the range without the texels at an extreme (6-value mode's endpoints)
    let mid0 = rv0 > vec4<f32>(RAMP_MIN + 0.5) & rv0 < vec4<f32>(RAMP_MAX - 0.5);
    let mid1 = rv1 > vec4<f32>(RAMP_MIN + 0.5) & rv1 < vec4<f32>(RAMP_MAX - 0.5);
    let mid2 = rv2 > vec4<f32>(RAMP_MIN + 0.5) & rv2 < vec4<f32>(RAMP_MAX - 0.5);
    let mid3 = rv3 > vec4<f32>(RAMP_MIN + 0.5) & rv3 < vec4<f32>(RAMP_MAX - 0.5);
    let big = vec4<f32>(RAMP_MAX);
    let small = vec4<f32>(RAMP_MIN);
    let l6 = min(min(select(big, rv0, mid0), select(big, rv1, mid1)), min(select(big, rv2, mid2), select(big, rv3, mid3)));
    let h6 = max(max(select(small, rv0, mid0), select(small, rv1, mid1)), max(select(small, rv2, mid2), select(small, rv3, mid3)));
    let lo6 = min(min(l6.x, l6.y), min(l6.z, l6.w));
    let hi6 = max(max(h6.x, h6.y), max(h6.z, h6.w));
    let ilo = i32(floor(lo + 0.5));
    let ihi = i32(floor(hi + 0.5));
    var n = 5;
    var b = vec3<i32>(ihi, ihi, bitcast<i32>(ramp_err(ihi, ihi, 5)));  // exact for a flat block
    if (ihi > ilo) {
        n = 7;
        var start = vec3<i32>(ihi, ilo, bitcast<i32>(ramp_err(ihi, ilo, 7)));
        for (var d = 1; d < (RAMP_IN + 1) * (RAMP_IN + 1); d++) {
            let h = ihi - d / (RAMP_IN + 1);
            let l = ilo + d % (RAMP_IN + 1);
            if (h > l) {
                let e = ramp_err(h, l, 7);
                if (e < bitcast<f32>(start.z)) {
                    start = vec3<i32>(h, l, bitcast<i32>(e));
                }
            }
        }
        b = ramp_search(start.x, start.y, 7);
        // the 6-value mode, for blocks reaching an extreme (or any block, RAMP_SIX_ALWAYS)
        if (hi6 >= lo6 && (RAMP_SIX_ALWAYS || lo < RAMP_MIN + 0.5 || hi > RAMP_MAX - 0.5)) {
            let s = ramp_search(i32(floor(hi6 + 0.5)), i32(floor(lo6 + 0.5)), 5);
            if (bitcast<f32>(s.z) < bitcast<f32>(b.z)) {
                b = s;
                n = 5;
            }
        }
    }
    // pack (index order in row_bits): 48 index bits, 12 per row
    let k = walk(b.x, b.y, n);
    let g0 = row_bits(rv0, k, n);
    let g1 = row_bits(rv1, k, n);
    let g2 = row_bits(rv2, k, n);
    let g3 = row_bits(rv3, k, n);
    let lo_bits = g0 | ((g1 & 0xfu) << 12u);
    let hi_bits = (g1 >> 4u) | (g2 << 8u) | (g3 << 20u);
    var e0 = u32(b.x);
    var e1 = u32(b.y);
    if (n == 5) {
        e0 = u32(b.y);
        e1 = u32(b.x);
    }
    return vec2<u32>((e0 & 0xffu) | ((e1 & 0xffu) << 8u) | (lo_bits << 16u), hi_bits);
}
