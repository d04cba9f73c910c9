// BC7 mode 6 (one subset; RGBA endpoints of 7 bits plus one p-bit each; 4-bit indices): the
// block's principal axis in RGBA (power iteration), endpoints from the texels' extent along
// it, every p-bit pair tried, then BC7_REFINE least-squares refits against the chosen indices
// (each again with every p-bit pair) while they lower the error. Every texel takes the best
// of all 16 palette entries (exhaustive); the palette is the specification's integer
// interpolation ((64 - w) e0 + w e1 + 32) >> 6 with w = round(64 i / 15). Errors are plain
// RGBA squared differences.

struct Mode6 {
    e0: vec4<u32>,  // 8-bit endpoints (7 bits << 1 | p-bit)
    e1: vec4<u32>,
    lo: u32,        // indices of texels 0..7 (4 bits each)
    hi: u32,        // texels 8..15
    err: f32,
}

var<private> bc7_bits: array<u32, 4>;
var<private> m6_err: f32;

fn bc7_put(pos: u32, n: u32, v: u32) {
    let w = pos >> 5u;
    let o = pos & 31u;
    bc7_bits[w] |= v << o;
    if (o + n > 32u) {
        bc7_bits[w + 1u] |= v >> (32u - o);
    }
}

fn quant7p(c: vec4<f32>, p: u32) -> vec4<u32> {
    let q = clamp(floor((c - f32(p)) * 0.5 + 0.5), vec4<f32>(0.0), vec4<f32>(127.0));
    return (vec4<u32>(q) << vec4<u32>(1u)) | vec4<u32>(p);
}

fn eval_mode6(e0: vec4<u32>, e1: vec4<u32>) -> Mode6 {
    var pal: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        let w = (i * 64u + 7u) / 15u;
        pal[i] = vec4<f32>(((64u - w) * e0 + w * e1 + vec4<u32>(32u)) >> vec4<u32>(6u));
    }
    var err = 0.0;
    var lo = 0u;
    var hi = 0u;
    for (var t = 0u; t < 16u; t++) {
        let x = texel[t];
        var d = x - pal[0];
        var best = dot(d, d);
        var k = 0u;
        for (var i = 1u; i < 16u; i++) {
            d = x - pal[i];
            let e = dot(d, d);
            if (e < best) {
                best = e;
                k = i;
            }
        }
        err += best;
        if (t < 8u) {
            lo |= k << (4u * t);
        } else {
            hi |= k << (4u * (t - 8u));
        }
    }
    return Mode6(e0, e1, lo, hi, err);
}

fn mode6_index(f: Mode6, t: u32) -> u32 {
    if (t < 8u) {
        return (f.lo >> (4u * t)) & 15u;
    }
    return (f.hi >> (4u * (t - 8u))) & 15u;
}

// the best of the four p-bit pairs for float endpoints (a, b)
fn mode6_pbits(a: vec4<f32>, b: vec4<f32>, start: Mode6) -> Mode6 {
    var best = start;
    for (var p = 0u; p < 4u; p++) {
        let f = eval_mode6(quant7p(a, p & 1u), quant7p(b, p >> 1u));
        if (f.err < best.err) {
            best = f;
        }
    }
    return best;
}

fn encode_bc7_mode6() -> vec4<u32> {
    var mean = vec4<f32>(0.0);
    var lo = vec4<f32>(255.0);
    var hi = vec4<f32>(0.0);
    for (var i = 0u; i < 16u; i++) {
        mean += texel[i];
        lo = min(lo, texel[i]);
        hi = max(hi, texel[i]);
    }
    mean /= 16.0;
    // covariance (symmetric 4x4, as columns)
    var c0 = vec4<f32>(0.0);
    var c1 = vec4<f32>(0.0);
    var c2 = vec4<f32>(0.0);
    var c3 = vec4<f32>(0.0);
    for (var i = 0u; i < 16u; i++) {
        let d = texel[i] - mean;
        c0 += d * d.x;
        c1 += d * d.y;
        c2 += d * d.z;
        c3 += d * d.w;
    }
    var axis = hi - lo;
    for (var it = 0u; it < POWER_ITERS; it++) {
        let v = c0 * axis.x + c1 * axis.y + c2 * axis.z + c3 * axis.w;
        let m = max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w)));
        if (m <= 0.0) {
            break;
        }
        axis = v / m;
    }
    var tmin = 0.0;
    var tmax = 0.0;
    let len2 = dot(axis, axis);
    if (len2 > 0.0) {
        tmin = 1e30;
        tmax = -1e30;
        for (var i = 0u; i < 16u; i++) {
            let t = dot(texel[i] - mean, axis);
            tmin = min(tmin, t);
            tmax = max(tmax, t);
        }
        tmin /= len2;
        tmax /= len2;
    }
    var none: Mode6;
    none.err = 1e30;
    var best = mode6_pbits(mean + axis * tmin, mean + axis * tmax, none);
    for (var it = 0u; it < BC7_REFINE; it++) {
        var aa = 0.0;
        var bb = 0.0;
        var ab = 0.0;
        var ax = vec4<f32>(0.0);
        var bx = vec4<f32>(0.0);
        for (var t = 0u; t < 16u; t++) {
            let wb = f32((mode6_index(best, t) * 64u + 7u) / 15u) / 64.0;
            let wa = 1.0 - wb;
            aa += wa * wa;
            bb += wb * wb;
            ab += wa * wb;
            ax += wa * texel[t];
            bx += wb * texel[t];
        }
        let det = aa * bb - ab * ab;
        if (abs(det) < 1e-6) {
            break;
        }
        let a = clamp((ax * bb - bx * ab) / det, vec4<f32>(0.0), vec4<f32>(255.0));
        let b = clamp((bx * aa - ax * ab) / det, vec4<f32>(0.0), vec4<f32>(255.0));
        let before = best.err;
        best = mode6_pbits(a, b, best);
        if (best.err >= before) {
            break;
        }
    }
    // the anchor (texel 0) stores 3 index bits: its index must be < 8, else swap the endpoints
    var e0 = best.e0;
    var e1 = best.e1;
    var flip = 0u;
    if (mode6_index(best, 0u) >= 8u) {
        e0 = best.e1;
        e1 = best.e0;
        flip = 15u;
    }
    m6_err = best.err;
    bc7_bits = array<u32, 4>(0u, 0u, 0u, 0u);
    bc7_put(0u, 7u, 64u);  // mode 6: six 0 bits, then 1
    for (var c = 0u; c < 4u; c++) {
        bc7_put(7u + 14u * c, 7u, e0[c] >> 1u);
        bc7_put(14u + 14u * c, 7u, e1[c] >> 1u);
    }
    bc7_put(63u, 1u, e0.x & 1u);
    bc7_put(64u, 1u, e1.x & 1u);
    bc7_put(65u, 3u, mode6_index(best, 0u) ^ flip);
    for (var t = 1u; t < 16u; t++) {
        bc7_put(64u + 4u * t, 4u, mode6_index(best, t) ^ flip);
    }
    return vec4<u32>(bc7_bits[0], bc7_bits[1], bc7_bits[2], bc7_bits[3]);
}
