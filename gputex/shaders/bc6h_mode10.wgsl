// BC6H mode 10 (two regions from one of the 32 two-subset partitions, RGB endpoints of 6 bits,
// not delta-coded; 3-bit indices), tried at BC6_MODE10 qualities against mode 11: each region
// fitted as mode 11 fits the block (principal axis in the sign-and-magnitude half-float space,
// endpoints held inside the region's range, BC7_REFINE least-squares refits, every texel the
// nearest of the 8 entries by bit pattern). Two regions follow blocks that one line cannot,
// above all signed blocks whose values cross zero (two clusters far apart). Partition masks
// and anchors: the first 32 of BC7's two-subset tables (the specification shares them).

var<private> BC6_P2: array<u32, 32> = array<u32, 32>(0xccccu, 0x8888u, 0xeeeeu, 0xecc8u, 0xc880u, 0xfeecu, 0xfec8u, 0xec80u, 0xc800u, 0xffecu, 0xfe80u, 0xe800u, 0xffe8u, 0xff00u, 0xfff0u, 0xf000u, 0xf710u, 0x008eu, 0x7100u, 0x08ceu, 0x008cu, 0x7310u, 0x3100u, 0x8cceu, 0x088cu, 0x3110u, 0x6666u, 0x366cu, 0x17e8u, 0x0ff0u, 0x718eu, 0x399cu);
var<private> BC6_A2: array<u32, 32> = array<u32, 32>(15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 2u, 8u, 2u, 2u, 8u, 8u, 15u, 2u, 8u, 2u, 2u, 8u, 8u, 2u, 2u);

struct Mode10Sub {
    e0: vec3<i32>,  // 6-bit endpoints (signed: -31..31)
    e1: vec3<i32>,
    lo: u32,        // 3-bit indices of texels 0..7 (this region's; 0 elsewhere)
    hi: u32,        // texels 8..15
    err: f32,
}

fn unq10(e: i32) -> i32 {
    if (SIGNED) {
        let m = abs(e);
        var q = 0;
        if (m >= 31) {
            q = 0x7fff;
        } else if (m > 0) {
            q = m * 1024 + 512;
        }
        return select(q, -q, e < 0);
    }
    if (e == 0) {
        return 0;
    }
    if (e == 63) {
        return 0xffff;
    }
    return e * 1024 + 512;
}

fn quant10(u: vec3<f32>) -> vec3<i32> {
    if (SIGNED) {
        let m = clamp(floor((abs(u) - 512.0) / 1024.0 + 0.5), vec3<f32>(0.0), vec3<f32>(31.0));
        return vec3<i32>(select(m, -m, u < vec3<f32>(0.0)));
    }
    return vec3<i32>(clamp(floor((u - 512.0) / 1024.0 + 0.5), vec3<f32>(0.0), vec3<f32>(63.0)));
}

fn m10_index(lo: u32, hi: u32, t: u32) -> u32 {
    if (t < 8u) {
        return (lo >> (3u * t)) & 7u;
    }
    return (hi >> (3u * (t - 8u))) & 7u;
}

fn m10_weight(i: u32) -> i32 {
    return i32((i * 64u + 3u) / 7u);  // 0, 9, 18, 27, 37, 46, 55, 64
}

fn m10_eval(e0: vec3<i32>, e1: vec3<i32>, mask: u32) -> Mode10Sub {
    let a = vec3<i32>(unq10(e0.x), unq10(e0.y), unq10(e0.z));
    let b = vec3<i32>(unq10(e1.x), unq10(e1.y), unq10(e1.z));
    var pal: array<vec3<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let w = m10_weight(i);
        let p = ((64 - w) * a + w * b + vec3<i32>(32)) >> vec3<u32>(6u);
        pal[i] = vec3<f32>(finish6(p.x), finish6(p.y), finish6(p.z));
    }
    var err = 0.0;
    var lo = 0u;
    var hi = 0u;
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) == 0u) {
            continue;
        }
        var d = hv[t] - pal[0];
        var best = dot(d, d);
        var k = 0u;
        for (var i = 1u; i < 8u; i++) {
            d = hv[t] - pal[i];
            let e = dot(d, d);
            if (e < best) {
                best = e;
                k = i;
            }
        }
        err += best;
        if (t < 8u) {
            lo |= k << (3u * t);
        } else {
            hi |= k << (3u * (t - 8u));
        }
    }
    return Mode10Sub(e0, e1, lo, hi, err);
}

fn m10_fit(mask: u32) -> Mode10Sub {
    let scale = select(64.0 / 31.0, 32.0 / 31.0, SIGNED);
    var mean = vec3<f32>(0.0);
    var lo = vec3<f32>(1e30);
    var hi = vec3<f32>(-1e30);
    var n = 0.0;
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) != 0u) {
            let x = hv[t] * scale;
            mean += x;
            lo = min(lo, x);
            hi = max(hi, x);
            n += 1.0;
        }
    }
    mean /= max(n, 1.0);
    var c0 = vec3<f32>(0.0);
    var c1 = vec3<f32>(0.0);
    var c2 = vec3<f32>(0.0);
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) != 0u) {
            let d = hv[t] * scale - mean;
            c0 += d * d.x;
            c1 += d * d.y;
            c2 += d * d.z;
        }
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
            if (((mask >> t) & 1u) != 0u) {
                let s = dot(hv[t] * scale - mean, axis);
                tmin = min(tmin, s);
                tmax = max(tmax, s);
            }
        }
        tmin /= len2;
        tmax /= len2;
    }
    var best = m10_eval(quant10(clamp(mean + axis * tmin, lo, hi)), quant10(clamp(mean + axis * tmax, lo, hi)), mask);
    for (var it = 0u; it < BC7_REFINE; it++) {
        var aa = 0.0;
        var bb = 0.0;
        var ab = 0.0;
        var ax = vec3<f32>(0.0);
        var bx = vec3<f32>(0.0);
        for (var t = 0u; t < 16u; t++) {
            if (((mask >> t) & 1u) == 0u) {
                continue;
            }
            let wb = f32(m10_weight(m10_index(best.lo, best.hi, t))) / 64.0;
            let wa = 1.0 - wb;
            let x = hv[t] * scale;
            aa += wa * wa;
            bb += wb * wb;
            ab += wa * wb;
            ax += wa * x;
            bx += wb * x;
        }
        let det = aa * bb - ab * ab;
        if (abs(det) < 1e-6) {
            break;
        }
        let f = m10_eval(quant10(clamp((ax * bb - bx * ab) / det, lo, hi)),
                         quant10(clamp((bx * aa - ax * ab) / det, lo, hi)), mask);
        if (f.err < best.err) {
            best = f;
        } else {
            break;
        }
    }
    return best;
}

// a bit of an endpoint value
fn eb(v: i32, bit: u32) -> u32 {
    return (u32(v) >> bit) & 1u;
}

// The best mode-10 block over the 32 partitions (m10_err: its error), as 4 words.
fn encode_bc6h_mode10() -> vec4<u32> {
    var best_err = 1e30;
    var best_p = 0u;
    var s0: Mode10Sub;
    var s1: Mode10Sub;
    for (var p = 0u; p < 32u; p++) {
        // the two regions in one loop: one copy of the fit in the compiled shader
        var fits: array<Mode10Sub, 2>;
        var total = 0.0;
        for (var r = 0u; r < 2u; r++) {
            fits[r] = m10_fit(select(~BC6_P2[p] & 0xffffu, BC6_P2[p], r == 1u));
            total += fits[r].err;
        }
        if (total < best_err) {
            best_err = total;
            best_p = p;
            s0 = fits[0];
            s1 = fits[1];
        }
    }
    m10_err = best_err;
    let mask = BC6_P2[best_p];
    let anchor = BC6_A2[best_p];
    var w = s0.e0;
    var x = s0.e1;
    var y = s1.e0;
    var z = s1.e1;
    var flip0 = 0u;
    var flip1 = 0u;
    if (m10_index(s0.lo, s0.hi, 0u) >= 4u) {
        w = s0.e1;
        x = s0.e0;
        flip0 = 7u;
    }
    if (m10_index(s1.lo, s1.hi, anchor) >= 4u) {
        y = s1.e1;
        z = s1.e0;
        flip1 = 7u;
    }
    bc6_bits = array<u32, 4>(0u, 0u, 0u, 0u);
    bc6_put(0u, 5u, 0x1eu);  // mode 10
    bc6_put(5u, 6u, u32(w.x) & 0x3fu);
    bc6_put(11u, 1u, eb(z.y, 4u));
    bc6_put(12u, 1u, eb(z.z, 0u));
    bc6_put(13u, 1u, eb(z.z, 1u));
    bc6_put(14u, 1u, eb(y.z, 4u));
    bc6_put(15u, 6u, u32(w.y) & 0x3fu);
    bc6_put(21u, 1u, eb(y.y, 5u));
    bc6_put(22u, 1u, eb(y.z, 5u));
    bc6_put(23u, 1u, eb(z.z, 2u));
    bc6_put(24u, 1u, eb(y.y, 4u));
    bc6_put(25u, 6u, u32(w.z) & 0x3fu);
    bc6_put(31u, 1u, eb(z.y, 5u));
    bc6_put(32u, 1u, eb(z.z, 3u));
    bc6_put(33u, 1u, eb(z.z, 5u));
    bc6_put(34u, 1u, eb(z.z, 4u));
    bc6_put(35u, 6u, u32(x.x) & 0x3fu);
    bc6_put(41u, 4u, u32(y.y) & 0xfu);
    bc6_put(45u, 6u, u32(x.y) & 0x3fu);
    bc6_put(51u, 4u, u32(z.y) & 0xfu);
    bc6_put(55u, 6u, u32(x.z) & 0x3fu);
    bc6_put(61u, 4u, u32(y.z) & 0xfu);
    bc6_put(65u, 6u, u32(y.x) & 0x3fu);
    bc6_put(71u, 6u, u32(z.x) & 0x3fu);
    bc6_put(77u, 5u, best_p);
    var pos = 82u;
    for (var t = 0u; t < 16u; t++) {
        let in1 = ((mask >> t) & 1u) != 0u;
        let idx = select(m10_index(s0.lo, s0.hi, t) ^ flip0, m10_index(s1.lo, s1.hi, t) ^ flip1, in1);
        let nb = select(3u, 2u, t == 0u || t == anchor);
        bc6_put(pos, nb, idx);
        pos += nb;
    }
    return vec4<u32>(bc6_bits[0], bc6_bits[1], bc6_bits[2], bc6_bits[3]);
}

var<private> m10_err: f32;
