// BC7 mode 1 (two subsets from one of 64 partitions; RGB endpoints of 6 bits plus one p-bit
// per subset; 3-bit indices; alpha 255). Partitions are ranked by the texels' distance from
// each subset's principal line (scatter trace minus its largest eigenvalue, estimated by
// power iteration); the BC7_P1_TOP best are fitted in full (principal axis, both p-bits,
// BC7_REFINE least-squares refits, exhaustive choice among the 8 palette entries), and the
// lowest error wins. Partition masks (bit t: texel t is in subset 1) and the anchors of
// subset 1 are the specification's tables.

var<private> BC7_P2: array<u32, 64> = array<u32, 64>(0xccccu, 0x8888u, 0xeeeeu, 0xecc8u, 0xc880u, 0xfeecu, 0xfec8u, 0xec80u, 0xc800u, 0xffecu, 0xfe80u, 0xe800u, 0xffe8u, 0xff00u, 0xfff0u, 0xf000u, 0xf710u, 0x008eu, 0x7100u, 0x08ceu, 0x008cu, 0x7310u, 0x3100u, 0x8cceu, 0x088cu, 0x3110u, 0x6666u, 0x366cu, 0x17e8u, 0x0ff0u, 0x718eu, 0x399cu, 0xaaaau, 0xf0f0u, 0x5a5au, 0x33ccu, 0x3c3cu, 0x55aau, 0x9696u, 0xa55au, 0x73ceu, 0x13c8u, 0x324cu, 0x3bdcu, 0x6996u, 0xc33cu, 0x9966u, 0x0660u, 0x0272u, 0x04e4u, 0x4e40u, 0x2720u, 0xc936u, 0x936cu, 0x39c6u, 0x639cu, 0x9336u, 0x9cc6u, 0x817eu, 0xe718u, 0xccf0u, 0x0fccu, 0x7744u, 0xee22u);
var<private> BC7_A2: array<u32, 64> = array<u32, 64>(15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 2u, 8u, 2u, 2u, 8u, 8u, 15u, 2u, 8u, 2u, 2u, 8u, 8u, 2u, 2u, 15u, 15u, 6u, 8u, 2u, 8u, 15u, 15u, 2u, 8u, 2u, 2u, 2u, 15u, 15u, 6u, 6u, 2u, 6u, 8u, 15u, 15u, 2u, 2u, 15u, 15u, 15u, 15u, 15u, 2u, 2u, 15u);

struct Mode1Sub {
    q0: vec3<u32>,  // 6-bit endpoints
    q1: vec3<u32>,
    p: u32,
    lo: u32,        // 3-bit indices of this subset's texels among 0..7
    hi: u32,        // texels 8..15
    err: f32,
}

fn expand7(v: vec3<u32>) -> vec3<f32> {
    return vec3<f32>((v << vec3<u32>(1u)) | (v >> vec3<u32>(6u)));
}

fn m1_eval(q0: vec3<u32>, q1: vec3<u32>, p: u32, mask: u32) -> Mode1Sub {
    let e0 = vec3<u32>(expand7((q0 << vec3<u32>(1u)) | vec3<u32>(p)));
    let e1 = vec3<u32>(expand7((q1 << vec3<u32>(1u)) | vec3<u32>(p)));
    var pal: array<vec3<f32>, 8>;
    for (var i = 0u; i < 8u; i++) {
        let w = (i * 64u + 3u) / 7u;
        pal[i] = vec3<f32>(((64u - w) * e0 + w * e1 + vec3<u32>(32u)) >> vec3<u32>(6u));
    }
    var err = 0.0;
    var lo = 0u;
    var hi = 0u;
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) == 0u) {
            continue;
        }
        let x = texel[t].rgb;
        var d = x - pal[0];
        var best = dot(d, d);
        var k = 0u;
        for (var i = 1u; i < 8u; i++) {
            d = x - pal[i];
            let e = dot(d, d);
            if (e < best) {
                best = e;
                k = i;
            }
        }
        let da = texel[t].a - 255.0;
        err += best + da * da;
        if (t < 8u) {
            lo |= k << (3u * t);
        } else {
            hi |= k << (3u * (t - 8u));
        }
    }
    return Mode1Sub(q0, q1, p, lo, hi, err);
}

fn m1_index(lo: u32, hi: u32, t: u32) -> u32 {
    if (t < 8u) {
        return (lo >> (3u * t)) & 7u;
    }
    return (hi >> (3u * (t - 8u))) & 7u;
}

fn q6p(c: vec3<f32>, p: u32) -> vec3<u32> {
    let v7 = clamp(c, vec3<f32>(0.0), vec3<f32>(255.0)) * (127.0 / 255.0);
    return vec3<u32>(clamp(floor((v7 - f32(p)) * 0.5 + 0.5), vec3<f32>(0.0), vec3<f32>(63.0)));
}

fn m1_pbits(a: vec3<f32>, b: vec3<f32>, mask: u32, start: Mode1Sub) -> Mode1Sub {
    var best = start;
    for (var p = 0u; p < 2u; p++) {
        let f = m1_eval(q6p(a, p), q6p(b, p), p, mask);
        if (f.err < best.err) {
            best = f;
        }
    }
    return best;
}

fn m1_fit(mask: u32) -> Mode1Sub {
    var mean = vec3<f32>(0.0);
    var lo = vec3<f32>(255.0);
    var hi = vec3<f32>(0.0);
    var n = 0.0;
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) != 0u) {
            mean += texel[t].rgb;
            lo = min(lo, texel[t].rgb);
            hi = max(hi, texel[t].rgb);
            n += 1.0;
        }
    }
    mean /= max(n, 1.0);
    var c0 = vec3<f32>(0.0);
    var c1 = vec3<f32>(0.0);
    var c2 = vec3<f32>(0.0);
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) != 0u) {
            let d = texel[t].rgb - mean;
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
                let s = dot(texel[t].rgb - mean, axis);
                tmin = min(tmin, s);
                tmax = max(tmax, s);
            }
        }
        tmin /= len2;
        tmax /= len2;
    }
    var none: Mode1Sub;
    none.err = 1e30;
    var best = m1_pbits(mean + axis * tmin, mean + axis * tmax, mask, none);
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
            let wb = f32((m1_index(best.lo, best.hi, t) * 64u + 3u) / 7u) / 64.0;
            let wa = 1.0 - wb;
            aa += wa * wa;
            bb += wb * wb;
            ab += wa * wb;
            ax += wa * texel[t].rgb;
            bx += wb * texel[t].rgb;
        }
        let det = aa * bb - ab * ab;
        if (abs(det) < 1e-6) {
            break;
        }
        let before = best.err;
        best = m1_pbits((ax * bb - bx * ab) / det, (bx * aa - ax * ab) / det, mask, best);
        if (best.err >= before) {
            break;
        }
    }
    return best;
}

// residual of one subset about its principal line, from its sums
fn m1_residual(s: vec3<f32>, qd: vec3<f32>, qo: vec3<f32>, n: f32) -> f32 {
    if (n < 2.0) {
        return 0.0;
    }
    let m = s / n;
    let d = qd - s * m;                        // xx, yy, zz scatter
    let o = qo - vec3<f32>(s.x * m.y, s.x * m.z, s.y * m.z);  // xy, xz, yz
    let c0 = vec3<f32>(d.x, o.x, o.y);
    let c1 = vec3<f32>(o.x, d.y, o.z);
    let c2 = vec3<f32>(o.y, o.z, d.z);
    var v = select(select(c2, c1, d.y >= d.z), c0, d.x >= d.y && d.x >= d.z);
    for (var it = 0u; it < 3u; it++) {
        let w = c0 * v.x + c1 * v.y + c2 * v.z;
        let mx = max(abs(w.x), max(abs(w.y), abs(w.z)));
        if (mx <= 0.0) {
            return d.x + d.y + d.z;
        }
        v = w / mx;
    }
    let cv = c0 * v.x + c1 * v.y + c2 * v.z;
    return d.x + d.y + d.z - dot(v, cv) / max(dot(v, v), 1e-30);
}

// (error, the 16 bytes) of the best mode-1 encoding tried
fn encode_bc7_mode1() -> vec4<u32> {
    var ts = vec3<f32>(0.0);
    var tqd = vec3<f32>(0.0);
    var tqo = vec3<f32>(0.0);
    for (var t = 0u; t < 16u; t++) {
        let x = texel[t].rgb;
        ts += x;
        tqd += x * x;
        tqo += vec3<f32>(x.x * x.y, x.x * x.z, x.y * x.z);
    }
    var top_score: array<f32, BC7_P1_TOP>;
    var top_part: array<u32, BC7_P1_TOP>;
    for (var k = 0u; k < BC7_P1_TOP; k++) {
        top_score[k] = 1e30;
        top_part[k] = 0u;
    }
    for (var p = 0u; p < 64u; p++) {
        let mask = BC7_P2[p];
        var s = vec3<f32>(0.0);
        var qd = vec3<f32>(0.0);
        var qo = vec3<f32>(0.0);
        for (var t = 0u; t < 16u; t++) {
            if (((mask >> t) & 1u) != 0u) {
                let x = texel[t].rgb;
                s += x;
                qd += x * x;
                qo += vec3<f32>(x.x * x.y, x.x * x.z, x.y * x.z);
            }
        }
        let n1 = f32(countOneBits(mask));
        let score = m1_residual(s, qd, qo, n1) + m1_residual(ts - s, tqd - qd, tqo - qo, 16.0 - n1);
        // insert into the sorted top list (ties keep the earlier partition)
        var j = BC7_P1_TOP;
        while (j > 0u && top_score[j - 1u] > score) {
            if (j < BC7_P1_TOP) {
                top_score[j] = top_score[j - 1u];
                top_part[j] = top_part[j - 1u];
            }
            j--;
        }
        if (j < BC7_P1_TOP) {
            top_score[j] = score;
            top_part[j] = p;
        }
    }
    var best_err = 1e30;
    var best_p = 0u;
    var s0: Mode1Sub;
    var s1: Mode1Sub;
    for (var k = 0u; k < BC7_P1_TOP; k++) {
        let p = top_part[k];
        // the two subsets in one loop: one copy of the fit in the compiled shader
        var fits: array<Mode1Sub, 2>;
        var total = 0.0;
        for (var r = 0u; r < 2u; r++) {
            fits[r] = m1_fit(select(~BC7_P2[p] & 0xffffu, BC7_P2[p], r == 1u));
            total += fits[r].err;
        }
        if (total < best_err) {
            best_err = total;
            best_p = p;
            s0 = fits[0];
            s1 = fits[1];
        }
    }
    m1_err = best_err;
    let mask = BC7_P2[best_p];
    let anchor = BC7_A2[best_p];
    // anchors store 2 index bits: their index must be < 4, else swap that subset's endpoints
    var flip0 = 0u;
    var flip1 = 0u;
    var e = array<vec3<u32>, 4>(s0.q0, s0.q1, s1.q0, s1.q1);
    if (m1_index(s0.lo, s0.hi, 0u) >= 4u) {
        e[0] = s0.q1;
        e[1] = s0.q0;
        flip0 = 7u;
    }
    if (m1_index(s1.lo, s1.hi, anchor) >= 4u) {
        e[2] = s1.q1;
        e[3] = s1.q0;
        flip1 = 7u;
    }
    bc7_bits = array<u32, 4>(0u, 0u, 0u, 0u);
    bc7_put(0u, 2u, 2u);  // mode 1: 0 then 1
    bc7_put(2u, 6u, best_p);
    for (var k = 0u; k < 4u; k++) {
        bc7_put(8u + 6u * k, 6u, e[k].x);
        bc7_put(32u + 6u * k, 6u, e[k].y);
        bc7_put(56u + 6u * k, 6u, e[k].z);
    }
    bc7_put(80u, 1u, s0.p);
    bc7_put(81u, 1u, s1.p);
    var pos = 82u;
    for (var t = 0u; t < 16u; t++) {
        let in1 = ((mask >> t) & 1u) != 0u;
        var idx = select(m1_index(s0.lo, s0.hi, t) ^ flip0, m1_index(s1.lo, s1.hi, t) ^ flip1, in1);
        let n = select(3u, 2u, t == 0u || t == anchor);
        bc7_put(pos, n, idx);
        pos += n;
    }
    return vec4<u32>(bc7_bits[0], bc7_bits[1], bc7_bits[2], bc7_bits[3]);
}

var<private> m1_err: f32;
