// One-channel ramp block (BC4, BC5's two halves, BC3's alpha): for each candidate endpoint
// pair every texel takes the best of all 8 palette entries (exhaustive selection); the pairs
// tried are the block's range inset by 0..RAMP_IN steps (and out by RAMP_OUT) on each side in
// the 8-value mode, and the range of the texels that are not at the format's extremes in the
// 6-value mode (whose codes 6 and 7 are the extremes). The palette is the specification's
// (bc_decode.wgsl), rounded to the nearest code; errors are exact for 8-bit unorm sources.

struct RampFit {
    e0: i32,
    e1: i32,
    lo: u32,  // index bits 0..15 of the block's 48
    hi: u32,  // index bits 16..47
    err: f32,
}

var<private> rv: array<f32, 16>;

const RAMP_MIN: f32 = select(0.0, -127.0, SIGNED);
const RAMP_MAX: f32 = select(255.0, 127.0, SIGNED);

fn eval_ramp(e0: i32, e1: i32) -> RampFit {
    let a = f32(e0);
    let b = f32(e1);
    var pal: array<f32, 8>;
    pal[0] = a;
    pal[1] = b;
    if (e0 > e1) {
        for (var k = 2u; k < 8u; k++) {
            pal[k] = floor(((8.0 - f32(k)) * a + (f32(k) - 1.0) * b) / 7.0 + 0.5);
        }
    } else {
        for (var k = 2u; k < 6u; k++) {
            pal[k] = floor(((6.0 - f32(k)) * a + (f32(k) - 1.0) * b) / 5.0 + 0.5);
        }
        pal[6] = RAMP_MIN;
        pal[7] = RAMP_MAX;
    }
    var err = 0.0;
    var lo = 0u;
    var hi = 0u;
    for (var i = 0u; i < 16u; i++) {
        var d = rv[i] - pal[0];
        var best = d * d;
        var idx = 0u;
        for (var k = 1u; k < 8u; k++) {
            d = rv[i] - pal[k];
            if (d * d < best) {
                best = d * d;
                idx = k;
            }
        }
        err += best;
        let bit = 3u * i;  // within the 48 index bits
        if (bit < 16u) {
            lo |= idx << bit;
            if (bit > 13u) {
                hi |= idx >> (16u - bit);
            }
        } else {
            hi |= idx << (bit - 16u);
        }
    }
    return RampFit(e0, e1, lo, hi, err);
}

// Least-squares (e0, e1) for the indices of an 8-value-mode fit, rounded to integers.
fn ramp_refit(f: RampFit) -> vec2<i32> {
    var aa = 0.0;
    var bb = 0.0;
    var ab = 0.0;
    var ax = 0.0;
    var bx = 0.0;
    for (var i = 0u; i < 16u; i++) {
        let bit = 3u * i;
        var k: u32;
        if (bit < 16u) {
            k = (f.lo >> bit) & 7u;
            if (bit > 13u) {
                k = (k | (f.hi << (16u - bit))) & 7u;
            }
        } else {
            k = (f.hi >> (bit - 16u)) & 7u;
        }
        var wa = 1.0;
        if (k == 1u) {
            wa = 0.0;
        } else if (k > 1u) {
            wa = (8.0 - f32(k)) / 7.0;
        }
        let wb = 1.0 - wa;
        aa += wa * wa;
        bb += wb * wb;
        ab += wa * wb;
        ax += wa * rv[i];
        bx += wb * rv[i];
    }
    let det = aa * bb - ab * ab;
    if (abs(det) < 1e-6) {
        return vec2<i32>(f.e0, f.e1);
    }
    let e0 = (ax * bb - bx * ab) / det;
    let e1 = (bx * aa - ax * ab) / det;
    return vec2<i32>(i32(floor(e0 + 0.5)), i32(floor(e1 + 0.5)));
}

fn keep_better(best: RampFit, f: RampFit) -> RampFit {
    if (f.err < best.err) {
        return f;
    }
    return best;
}

// The two words of the ramp block of channel `ch` (0 r, 1 g, 3 alpha).
fn encode_ramp(ch: u32) -> vec2<u32> {
    var lo = RAMP_MAX;
    var hi = RAMP_MIN;
    var lo6 = RAMP_MAX;
    var hi6 = RAMP_MIN;
    for (var i = 0u; i < 16u; i++) {
        var v = texel[i][ch];
        if (SIGNED) {
            v = v * (254.0 / 255.0) - 127.0;  // [0, 1] -> [-1, 1], in snorm codes
        }
        rv[i] = v;
        lo = min(lo, v);
        hi = max(hi, v);
        if (v > RAMP_MIN + 0.5 && v < RAMP_MAX - 0.5) {
            lo6 = min(lo6, v);
            hi6 = max(hi6, v);
        }
    }
    let ilo = i32(floor(lo + 0.5));
    let ihi = i32(floor(hi + 0.5));
    var best = eval_ramp(ihi, ilo);  // ihi == ilo: a flat block, exact in either mode
    if (ihi > ilo) {
        for (var d0 = -RAMP_OUT; d0 <= RAMP_IN; d0++) {
            for (var d1 = -RAMP_OUT; d1 <= RAMP_IN; d1++) {
                let e0 = clamp(ihi - d0, i32(RAMP_MIN), i32(RAMP_MAX));
                let e1 = clamp(ilo + d1, i32(RAMP_MIN), i32(RAMP_MAX));
                if (e0 > e1 && (d0 != 0 || d1 != 0)) {
                    best = keep_better(best, eval_ramp(e0, e1));
                }
            }
        }
    }
    if (hi6 >= lo6) {
        let a = i32(floor(lo6 + 0.5));
        let b = i32(floor(hi6 + 0.5));
        for (var d0 = 0; d0 <= RAMP6_IN; d0++) {
            for (var d1 = 0; d1 <= RAMP6_IN; d1++) {
                if (a + d0 <= b - d1) {
                    best = keep_better(best, eval_ramp(a + d0, b - d1));
                }
            }
        }
    }
    // least-squares endpoints for the chosen indices (8-value mode), then the 3x3 integer pairs
    // around them, RAMP_LS times while that helps
    for (var it = 0u; it < RAMP_LS && best.e0 > best.e1; it++) {
        let e = ramp_refit(best);
        let before = best.err;
        for (var d = 0; d < 9; d++) {
            let e0 = clamp(e.x + d / 3 - 1, i32(RAMP_MIN), i32(RAMP_MAX));
            let e1 = clamp(e.y + d % 3 - 1, i32(RAMP_MIN), i32(RAMP_MAX));
            if (e0 > e1) {
                best = keep_better(best, eval_ramp(e0, e1));
            }
        }
        if (best.err >= before) {
            break;
        }
    }
    var e0 = u32(best.e0) & 0xffu;
    var e1 = u32(best.e1) & 0xffu;
    return vec2<u32>(e0 | (e1 << 8u) | (best.lo << 16u), best.hi);
}
