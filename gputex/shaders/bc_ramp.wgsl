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

var<private> rv: array<f32, 16>;

const RAMP_MIN: f32 = select(0.0, -127.0, SIGNED);
const RAMP_MAX: f32 = select(255.0, 127.0, SIGNED);

// palette value at ramp position j (0 = lo .. n = hi): the specification's, in float (what
// hardware decodes; the codes gputex's own decoder rounds it to are the nearest to it)
fn ramp_val(hi: i32, lo: i32, j: i32, n: i32) -> f32 {
    return f32(j * hi + (n - j) * lo) / f32(n);
}

// (squared error, ramp position: 0..n, n + 1 = the low extreme, n + 2 = the high one) of v:
// the ramp is evenly spaced, so the nearest position is v's own, rounded
fn ramp_pick(v: f32, hi: i32, lo: i32, n: i32) -> vec2<f32> {
    let span = hi - lo;
    var j = 0;
    if (span > 0) {
        j = clamp(i32(floor((v - f32(lo)) * f32(n) / f32(span) + 0.5)), 0, n);
    }
    let d = v - ramp_val(hi, lo, j, n);
    var best = d * d;
    var bj = j;
    if (n == 5) {
        let dl = v - RAMP_MIN;
        if (dl * dl < best) {
            best = dl * dl;
            bj = 6;
        }
        let dh = v - RAMP_MAX;
        if (dh * dh < best) {
            best = dh * dh;
            bj = 7;
        }
    }
    return vec2<f32>(best, f32(bj));
}

fn ramp_err(hi: i32, lo: i32, n: i32) -> f32 {
    var err = 0.0;
    if (RAMP_CHEAP) {
        // per pair one division; per texel a multiply-add, a floor and the palette value as
        // lo + j * step (within a few ULP of the specification's quotient; the indices written
        // come from ramp_pick)
        let fl = f32(lo);
        let fn_ = f32(n);
        let span = f32(hi - lo);
        let scale = select(0.0, fn_ / span, hi > lo);
        let step = span / fn_;
        for (var i = 0u; i < 16u; i++) {
            let x = rv[i] - fl;
            let j = clamp(floor(x * scale + 0.5), 0.0, fn_);
            let d = x - j * step;
            var e = d * d;
            if (n == 5) {
                let dl = rv[i] - RAMP_MIN;
                let dh = rv[i] - RAMP_MAX;
                e = min(e, min(dl * dl, dh * dh));
            }
            err += e;
        }
        return err;
    }
    for (var i = 0u; i < 16u; i++) {
        err += ramp_pick(rv[i], hi, lo, n).x;
    }
    return err;
}

// a pair the mode can hold (8 values: hi > lo; 6 values: lo <= hi), inside the code range
fn ramp_ok(hi: i32, lo: i32, n: i32) -> bool {
    return lo >= i32(RAMP_MIN) && hi <= i32(RAMP_MAX) && (hi > lo || (n == 5 && hi == lo));
}

// least-squares (hi, lo) for the ramp positions the pair's texels take (extremes left out)
fn ramp_refit(hi: i32, lo: i32, n: i32) -> vec2<i32> {
    var aa = 0.0;
    var bb = 0.0;
    var ab = 0.0;
    var ax = 0.0;
    var bx = 0.0;
    for (var i = 0u; i < 16u; i++) {
        let j = i32(ramp_pick(rv[i], hi, lo, n).y);
        if (j <= n) {
            let wb = f32(j) / f32(n);
            let wa = 1.0 - wb;
            aa += wa * wa;
            bb += wb * wb;
            ab += wa * wb;
            ax += wa * rv[i];
            bx += wb * rv[i];
        }
    }
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
        if (RAMP_CHEAP && d == 4 && all(at == c.xy)) {
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

// The two words of the ramp block of channel `ch` (0 r, 1 g, 3 alpha).
fn encode_ramp(ch: u32) -> vec2<u32> {
    var lo = RAMP_MAX;
    var hi = RAMP_MIN;
    var lo6 = RAMP_MAX;
    var hi6 = RAMP_MIN;
    for (var i = 0u; i < 16u; i++) {
        let t = texel[i];
        var v = select(select(select(t.x, t.y, ch == 1u), t.z, ch == 2u), t.w, ch == 3u);
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
    // pack: 8 values e0 = hi, e1 = lo; 6 values e0 = lo, e1 = hi. Index of ramp position j:
    // 8 values: j = 7 -> 0, j = 0 -> 1, else 8 - j; 6 values: 0 -> 0, 5 -> 1, else j + 1,
    // extremes 6 (low) and 7 (high)
    var lo_bits = 0u;
    var hi_bits = 0u;
    for (var i = 0u; i < 16u; i++) {
        let j = u32(ramp_pick(rv[i], b.x, b.y, n).y);
        var idx: u32;
        if (n == 7) {
            idx = select(select(8u - j, 1u, j == 0u), 0u, j == 7u);
        } else {
            idx = select(select(j + 1u, 1u, j == 5u), 0u, j == 0u);
            if (j > 5u) {
                idx = j;
            }
        }
        let bit = 3u * i;  // within the 48 index bits
        if (bit < 16u) {
            lo_bits |= idx << bit;
            if (bit > 13u) {
                hi_bits |= idx >> (16u - bit);
            }
        } else {
            hi_bits |= idx << (bit - 16u);
        }
    }
    var e0 = u32(b.x);
    var e1 = u32(b.y);
    if (n == 5) {
        e0 = u32(b.y);
        e1 = u32(b.x);
    }
    return vec2<u32>((e0 & 0xffu) | ((e1 & 0xffu) << 8u) | (lo_bits << 16u), hi_bits);
}
