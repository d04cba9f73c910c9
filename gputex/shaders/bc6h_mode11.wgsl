// BC6H mode 11 (one region; endpoints of 10 bits, no delta coding; 4-bit indices), for
// rgb-ufloat and (SIGNED) rgb-float. The fit runs where the decoder interpolates: each texel's
// half-float bits, as a (signed) integer, times 64/31 (unsigned; 32/31 signed) undo the
// decoder's final scale, so a straight line there is what the 16 palette entries can follow.
// Principal axis, endpoints from the texels' extent along it, BC7_REFINE least-squares
// refits; every texel takes the best of the 16 entries, compared as half-float bit patterns
// (a relative error, as HDR wants). Palette: the specification's unquantize, integer
// interpolation and finish (as texture2ddecoder and DirectXTex decode).

struct Mode11 {
    e0: vec3<i32>,
    e1: vec3<i32>,
    lo: u32,
    hi: u32,
    err: f32,
}

var<private> hv: array<vec3<f32>, 16>;  // each texel's half-float bits as a (signed) integer
var<private> bc6_bits: array<u32, 4>;

fn half_int(v: f32) -> f32 {
    let h = pack2x16float(vec2<f32>(v, 0.0)) & 0xffffu;
    let m = f32(min(h & 0x7fffu, 0x7bffu));  // infinities and NaN -> the largest finite value
    if ((h & 0x8000u) != 0u) {
        return select(0.0, -m, SIGNED);  // ufloat holds no negatives
    }
    return m;
}

fn unq6(e: i32) -> i32 {
    if (SIGNED) {
        let m = abs(e);
        var q = 0;
        if (m >= 511) {
            q = 0x7fff;
        } else if (m > 0) {
            q = m * 64 + 32;
        }
        return select(q, -q, e < 0);
    }
    if (e == 0) {
        return 0;
    }
    if (e == 1023) {
        return 0xffff;
    }
    return e * 64 + 32;
}

fn finish6(v: i32) -> f32 {
    if (SIGNED) {
        return select(f32((v * 31) >> 5u), -f32(((-v) * 31) >> 5u), v < 0);
    }
    return f32((v * 31) >> 6u);
}

fn quant6(u: vec3<f32>) -> vec3<i32> {
    if (SIGNED) {
        let m = clamp(floor((abs(u) - 32.0) / 64.0 + 0.5), vec3<f32>(0.0), vec3<f32>(511.0));
        return vec3<i32>(select(m, -m, u < vec3<f32>(0.0)));
    }
    return vec3<i32>(clamp(floor((u - 32.0) / 64.0 + 0.5), vec3<f32>(0.0), vec3<f32>(1023.0)));
}

fn eval_mode11(e0: vec3<i32>, e1: vec3<i32>) -> Mode11 {
    let a = vec3<i32>(unq6(e0.x), unq6(e0.y), unq6(e0.z));
    let b = vec3<i32>(unq6(e1.x), unq6(e1.y), unq6(e1.z));
    var pal: array<vec3<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        let w = i32((i * 64u + 7u) / 15u);
        let p = ((64 - w) * a + w * b + vec3<i32>(32)) >> vec3<u32>(6u);
        pal[i] = vec3<f32>(finish6(p.x), finish6(p.y), finish6(p.z));
    }
    var err = 0.0;
    var lo = 0u;
    var hi = 0u;
    for (var t = 0u; t < 16u; t++) {
        var d = hv[t] - pal[0];
        var best = dot(d, d);
        var k = 0u;
        for (var i = 1u; i < 16u; i++) {
            d = hv[t] - pal[i];
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
    return Mode11(e0, e1, lo, hi, err);
}

fn mode11_index(f: Mode11, t: u32) -> u32 {
    if (t < 8u) {
        return (f.lo >> (4u * t)) & 15u;
    }
    return (f.hi >> (4u * (t - 8u))) & 15u;
}

fn bc6_put(pos: u32, n: u32, v: u32) {
    let w = pos >> 5u;
    let o = pos & 31u;
    bc6_bits[w] |= v << o;
    if (o + n > 32u) {
        bc6_bits[w + 1u] |= v >> (32u - o);
    }
}

fn encode_bc6h() -> vec4<u32> {
    let scale = select(64.0 / 31.0, 32.0 / 31.0, SIGNED);
    var x: array<vec3<f32>, 16>;
    var mean = vec3<f32>(0.0);
    var lo = vec3<f32>(1e30);
    var hi = vec3<f32>(-1e30);
    for (var t = 0u; t < 16u; t++) {
        let v = texel[t];
        hv[t] = vec3<f32>(half_int(v.r), half_int(v.g), half_int(v.b));
        x[t] = hv[t] * scale;
        mean += x[t];
        lo = min(lo, x[t]);
        hi = max(hi, x[t]);
    }
    mean /= 16.0;
    var c0 = vec3<f32>(0.0);
    var c1 = vec3<f32>(0.0);
    var c2 = vec3<f32>(0.0);
    for (var t = 0u; t < 16u; t++) {
        let d = x[t] - mean;
        c0 += d * d.x;
        c1 += d * d.y;
        c2 += d * d.z;
    }
    var axis = hi - lo;
    for (var it = 0u; it < POWER_ITERS; it++) {
        let v = c0 * axis.x + c1 * axis.y + c2 * axis.z;
        let m = max(abs(v.x), max(abs(v.y), abs(v.z)));
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
        for (var t = 0u; t < 16u; t++) {
            let s = dot(x[t] - mean, axis);
            tmin = min(tmin, s);
            tmax = max(tmax, s);
        }
        tmin /= len2;
        tmax /= len2;
    }
    // endpoints stay inside the block's per-channel range (in the interpolation space): a line
    // fitted across a block whose values cross zero (sign and magnitude: two clusters far
    // apart) would otherwise extrapolate, and a texel of 1.3 decoded as 7460
    var best = eval_mode11(quant6(clamp(mean + axis * tmin, lo, hi)), quant6(clamp(mean + axis * tmax, lo, hi)));
    for (var it = 0u; it < BC7_REFINE; it++) {
        var aa = 0.0;
        var bb = 0.0;
        var ab = 0.0;
        var ax = vec3<f32>(0.0);
        var bx = vec3<f32>(0.0);
        for (var t = 0u; t < 16u; t++) {
            let wb = f32((mode11_index(best, t) * 64u + 7u) / 15u) / 64.0;
            let wa = 1.0 - wb;
            aa += wa * wa;
            bb += wb * wb;
            ab += wa * wb;
            ax += wa * x[t];
            bx += wb * x[t];
        }
        let det = aa * bb - ab * ab;
        if (abs(det) < 1e-6) {
            break;
        }
        let f = eval_mode11(quant6(clamp((ax * bb - bx * ab) / det, lo, hi)),
                            quant6(clamp((bx * aa - ax * ab) / det, lo, hi)));
        if (f.err < best.err) {
            best = f;
        } else {
            break;
        }
    }
    m11_err = best.err;
    var e0 = best.e0;
    var e1 = best.e1;
    var flip = 0u;
    if (mode11_index(best, 0u) >= 8u) {
        e0 = best.e1;
        e1 = best.e0;
        flip = 15u;
    }
    bc6_bits = array<u32, 4>(0u, 0u, 0u, 0u);
    bc6_put(0u, 5u, 3u);  // mode 11: bits 00011
    for (var c = 0u; c < 3u; c++) {
        bc6_put(5u + 10u * c, 10u, u32(e0[c]) & 0x3ffu);
        bc6_put(35u + 10u * c, 10u, u32(e1[c]) & 0x3ffu);
    }
    bc6_put(65u, 3u, mode11_index(best, 0u) ^ flip);
    for (var t = 1u; t < 16u; t++) {
        bc6_put(64u + 4u * t, 4u, mode11_index(best, t) ^ flip);
    }
    return vec4<u32>(bc6_bits[0], bc6_bits[1], bc6_bits[2], bc6_bits[3]);
}

var<private> m11_err: f32;
