// BC6H encoder, every mode (1-14), for rgb-ufloat and (SIGNED) rgb-float. bcenc.py puts in
// front: the quality's constants (BC6_MODES: bit m-1 set = mode m tried; BC6_PARTS: how many
// of the 32 two-region partitions are tried, best-ranked first; BC6_REFINE: least-squares
// refits; POWER_ITERS) and gputex/bc6h.py's tables (BC6_MODE: precisions and mode bits,
// BC6_LAYOUT: each mode's header bit order).
//
// Spaces: the error is measured on each texel's half-float bits read as a (signed) integer
// (sign and magnitude: a relative error, as HDR wants, and where the decoder's output lands);
// endpoints are fitted in the decoder's interpolation space, those integers x 64/31 (unsigned;
// 32/31 signed), which undoes its final scale, so a straight line there is what the palette
// follows. Per candidate region layout (the whole block; the best-ranked partitions, ranked
// by how far their texels lie from each region's principal line) one line fit per region,
// endpoints held inside the region's per-channel range (signed blocks crossing zero form two
// clusters far apart: a fitted line would extrapolate), oriented so that each region's anchor
// texel lies nearer its first endpoint. Then per mode: quantise to the mode's endpoint
// precision, in the transformed modes clamp each delta from w into its signed field (the
// endpoint moves toward w: a valid block that fits less well, rather than none), take for each
// texel the nearest palette entry (the anchor texels among the first half: their index's top
// bit is implicit 0), refit the endpoints by least squares on those indices, repeat while the
// error falls. The lowest error over every mode and layout wins (ties keep the earlier).
// Palette: the specification's unquantize, integer interpolation and finish.

var<private> BC6_P2: array<u32, 32> = array<u32, 32>(0xccccu, 0x8888u, 0xeeeeu, 0xecc8u, 0xc880u, 0xfeecu, 0xfec8u, 0xec80u, 0xc800u, 0xffecu, 0xfe80u, 0xe800u, 0xffe8u, 0xff00u, 0xfff0u, 0xf000u, 0xf710u, 0x008eu, 0x7100u, 0x08ceu, 0x008cu, 0x7310u, 0x3100u, 0x8cceu, 0x088cu, 0x3110u, 0x6666u, 0x366cu, 0x17e8u, 0x0ff0u, 0x718eu, 0x399cu);
var<private> BC6_A2: array<u32, 32> = array<u32, 32>(15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 15u, 2u, 8u, 2u, 2u, 8u, 8u, 15u, 2u, 8u, 2u, 2u, 8u, 8u, 2u, 2u);

struct Bc6Line {
    e0: vec3<f32>,
    e1: vec3<f32>,
    resid: f32,  // squared distance of the region's texels from the line
}

var<private> hv: array<vec3<f32>, 16>;     // each texel's half-float bits as a (signed) integer
var<private> fe: array<vec3<f32>, 4>;      // the trial's endpoints w, x, y, z (interpolation space)
var<private> qe: array<vec3<i32>, 4>;      // the same quantised (absolute values, not deltas)
var<private> cur: array<u32, 2>;           // the trial's indices, 4 bits a texel
var<private> best_q: array<vec3<i32>, 4>;  // the best trial's qe and cur
var<private> best_i: array<u32, 2>;
var<private> best_err: f32;
var<private> cand_p: array<u32, 8>;        // best-ranked partitions, their residuals and line fits
var<private> cand_r: array<f32, 8>;
var<private> cand_e: array<vec3<f32>, 36>; // 4 per partition; 32..35: the whole block's

fn half_int(v: f32) -> f32 {
    let h = pack2x16float(vec2<f32>(v, 0.0)) & 0xffffu;
    let m = f32(min(h & 0x7fffu, 0x7bffu));  // infinities and NaN -> the largest finite value
    if ((h & 0x8000u) != 0u) {
        return select(0.0, -m, SIGNED);  // ufloat holds no negatives
    }
    return m;
}

fn bc6_scale() -> f32 {
    return select(64.0 / 31.0, 32.0 / 31.0, SIGNED);
}

// texels of region r of layout c (c < 32: a partition; 32: the whole block, one region)
fn bc6_mask(c: u32, r: u32) -> u32 {
    if (c >= 32u) {
        return select(0u, 0xffffu, r == 0u);
    }
    return select(~BC6_P2[c] & 0xffffu, BC6_P2[c], r == 1u);
}

fn bc6_anchor(c: u32, r: u32) -> u32 {
    return select(0u, BC6_A2[min(c, 31u)], r == 1u);
}

fn bc6_weight(i: u32, four: bool) -> i32 {
    return i32(select((i * 64u + 3u) / 7u, (i * 64u + 7u) / 15u, four));
}

fn bc6_unq(c: i32, p: u32) -> i32 {
    if (p >= 16u) {
        return c;
    }
    if (SIGNED) {
        let m = abs(c);
        var q = 0;
        if (m >= (1 << (p - 1u)) - 1) {
            q = 0x7fff;
        } else if (m > 0) {
            q = ((m << 15u) + 0x4000) >> (p - 1u);
        }
        return select(q, -q, c < 0);
    }
    if (c == 0) {
        return 0;
    }
    if (c == (1 << p) - 1) {
        return 0xffff;
    }
    return ((c << 16u) + 0x8000) >> p;
}

// the nearest p-bit endpoint (signed: magnitude and sign) to u in the interpolation space
fn bc6_quant(u: vec3<f32>, p: u32) -> vec3<i32> {
    if (p >= 16u) {  // unquantised as stored; -32768 would finish as -infinity
        return vec3<i32>(clamp(floor(u + 0.5), vec3<f32>(select(0.0, -32767.0, SIGNED)),
                               vec3<f32>(select(65535.0, 32767.0, SIGNED))));
    }
    let step = f32(1u << (16u - p));
    let top = f32(select((1u << p) - 1u, (1u << (p - 1u)) - 1u, SIGNED));
    let m = clamp(floor((abs(u) - 0.5 * step) / step + 0.5), vec3<f32>(0.0), vec3<f32>(top));
    return vec3<i32>(select(m, -m, u < vec3<f32>(0.0)));
}

fn bc6_finish(v: i32) -> f32 {
    if (SIGNED) {
        return select(f32((v * 31) >> 5u), -f32(((-v) * 31) >> 5u), v < 0);
    }
    return f32((v * 31) >> 6u);
}

// principal line of a region's texels (interpolation space), held inside their range, the
// anchor texel nearer e0
fn bc6_line(mask: u32, anchor: u32) -> Bc6Line {
    let scale = bc6_scale();
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
    // start from the covariance column of the widest channel (the bounding box's diagonal is
    // perpendicular to some lines: (1, -1, 0) from (1, 1, 0), and the iteration stays put)
    var axis = c0;
    if (c1.y > max(c0.x, c2.z)) {
        axis = c1;
    } else if (c2.z > c0.x) {
        axis = c2;
    }
    for (var it = 0u; it < POWER_ITERS; it++) {
        let v = c0 * axis.x + c1 * axis.y + c2 * axis.z;
        let m = max(abs(v.x), max(abs(v.y), abs(v.z)));
        if (m > 0.0) {
            axis = v / m;
        }
    }
    let len2 = max(dot(axis, axis), 1e-30);  // 0: one colour, every s is 0
    var tmin = 1e30;
    var tmax = -1e30;
    var resid = 0.0;
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) != 0u) {
            let d = hv[t] * scale - mean;
            let s = dot(d, axis) / len2;
            tmin = min(tmin, s);
            tmax = max(tmax, s);
            let off = d - axis * s;
            resid += dot(off, off);
        }
    }
    let e0 = clamp(mean + axis * tmin, lo, hi);
    let e1 = clamp(mean + axis * tmax, lo, hi);
    let sa = dot(hv[anchor] * scale - mean, axis) / len2;
    let flip = sa - tmin > tmax - sa;
    return Bc6Line(select(e0, e1, flip), select(e1, e0, flip), resid);
}

// qe from fe at the mode's precision; transformed modes: deltas from w clamped into their fields
fn bc6_quantise(d: u32) {
    let p = d & 31u;
    for (var j = 0u; j < 4u; j++) {
        qe[j] = bc6_quant(fe[j], p);
    }
    if (((d >> 25u) & 1u) != 0u) {
        let bits = vec3<u32>((d >> 5u) & 31u, (d >> 10u) & 31u, (d >> 15u) & 31u);
        let top = vec3<i32>((vec3<u32>(1u) << (bits - vec3<u32>(1u))) - vec3<u32>(1u));
        for (var j = 1u; j < 4u; j++) {
            qe[j] = qe[0] + clamp(qe[j] - qe[0], -top - vec3<i32>(1), top);
        }
    }
}

// squared error of region r with endpoints qe[2r], qe[2r+1]; its texels' indices into cur
fn bc6_eval(c: u32, r: u32, p: u32, four: bool) -> f32 {
    let a = qe[2u * r];
    let b = qe[2u * r + 1u];
    let ua = vec3<i32>(bc6_unq(a.x, p), bc6_unq(a.y, p), bc6_unq(a.z, p));
    let ub = vec3<i32>(bc6_unq(b.x, p), bc6_unq(b.y, p), bc6_unq(b.z, p));
    let n = select(8u, 16u, four);
    var pal: array<vec3<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        let w = bc6_weight(i, four);
        let v = ((64 - w) * ua + w * ub + vec3<i32>(32)) >> vec3<u32>(6u);
        pal[i] = vec3<f32>(bc6_finish(v.x), bc6_finish(v.y), bc6_finish(v.z));
    }
    let mask = bc6_mask(c, r);
    let anchor = bc6_anchor(c, r);
    var err = 0.0;
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) == 0u) {
            continue;
        }
        var dv = hv[t] - pal[0];
        var best = dot(dv, dv);
        var k = 0u;
        let lim = select(n, n / 2u, t == anchor);
        for (var i = 1u; i < 16u; i++) {
            dv = hv[t] - pal[i];
            let e = dot(dv, dv);
            if (i < lim && e < best) {
                best = e;
                k = i;
            }
        }
        err += best;
        cur[t >> 3u] |= k << (4u * (t & 7u));
    }
    return err;
}

// least-squares endpoints of region r for the indices in cur (kept when singular)
fn bc6_refit(c: u32, r: u32, four: bool) {
    let scale = bc6_scale();
    let mask = bc6_mask(c, r);
    var aa = 0.0;
    var bb = 0.0;
    var ab = 0.0;
    var ax = vec3<f32>(0.0);
    var bx = vec3<f32>(0.0);
    var lo = vec3<f32>(1e30);
    var hi = vec3<f32>(-1e30);
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) == 0u) {
            continue;
        }
        let wb = f32(bc6_weight((cur[t >> 3u] >> (4u * (t & 7u))) & 15u, four)) / 64.0;
        let wa = 1.0 - wb;
        let x = hv[t] * scale;
        aa += wa * wa;
        bb += wb * wb;
        ab += wa * wb;
        ax += wa * x;
        bx += wb * x;
        lo = min(lo, x);
        hi = max(hi, x);
    }
    let det = aa * bb - ab * ab;
    if (abs(det) >= 1e-3) {  // else singular (one index used): kept
        fe[2u * r] = clamp((ax * bb - bx * ab) / det, lo, hi);
        fe[2u * r + 1u] = clamp((bx * aa - ax * ab) / det, lo, hi);
    }
}

// bits with the n-bit value v put at bit pos (the words picked by select: written through a
// dynamic index into a private array, lavapipe packed garbage in some lanes)
// whether qe (endpoints 0..2 nreg - 1) is storable in mode descriptor d: every endpoint in the
// precision's range, and in the transformed modes every delta from w in its field
fn bc6_storable(d: u32, two: bool) -> bool {
    let p = d & 31u;
    var top = select((1 << p) - 1, (1 << (p - 1u)) - 1, SIGNED);
    if (p >= 16u) {
        top = select(65535, 32767, SIGNED);
    }
    let bottom = select(0, -top, SIGNED);
    let bits = vec3<u32>((d >> 5u) & 31u, (d >> 10u) & 31u, (d >> 15u) & 31u);
    let dtop = vec3<i32>((vec3<u32>(1u) << (bits - vec3<u32>(1u))) - vec3<u32>(1u));
    let transformed = ((d >> 25u) & 1u) != 0u;
    var ok = true;
    for (var j = 0u; j < 4u; j++) {
        let used = j < 2u || two;
        let e = qe[j];
        ok = ok && (!used || (all(e >= vec3<i32>(bottom)) && all(e <= vec3<i32>(top))));
        let dv = e - qe[0];
        ok = ok && (!used || j == 0u || !transformed || (all(dv >= -dtop - vec3<i32>(1)) && all(dv <= dtop)));
    }
    return ok;
}

// whether endpoint j of qe (unquantized) lies within its region's range, give or take one step
// (the fits' rule: in signed blocks crossing zero an endpoint moved outside lowers the error on
// half-float bit patterns while a bright texel decodes several times too bright)
fn bc6_inside(c: u32, j: u32, p: u32) -> bool {
    let scale = bc6_scale();
    let mask = bc6_mask(c, j >> 1u);
    var lo = vec3<f32>(1e30);
    var hi = vec3<f32>(-1e30);
    for (var t = 0u; t < 16u; t++) {
        if (((mask >> t) & 1u) != 0u) {
            lo = min(lo, hv[t] * scale);
            hi = max(hi, hv[t] * scale);
        }
    }
    let step = f32(1u << (16u - min(p, 16u)));
    let e = qe[j];
    let u = vec3<f32>(f32(bc6_unq(e.x, p)), f32(bc6_unq(e.y, p)), f32(bc6_unq(e.z, p)));
    return all(u >= lo - vec3<f32>(step)) && all(u <= hi + vec3<f32>(step));
}

// BC6_PERTURB passes over the best block's endpoints: each channel of each endpoint moved by one
// step either way, kept when the block stays storable, the endpoint inside its region's range
// (bc6_inside) and the error falls
fn bc6_perturb(m: u32, c: u32) {
    let d = bc6_mode_desc(m);
    let two = ((d >> 26u) & 1u) != 0u;
    for (var sweep = 0u; sweep < BC6_PERTURB; sweep++) {
        for (var k = 0u; k < 24u; k++) {
            let j = k / 6u;
            let ch = (k >> 1u) % 3u;
            for (var i = 0u; i < 4u; i++) {
                qe[i] = best_q[i];
            }
            qe[j][ch] += select(-1, 1, (k & 1u) != 0u);
            if ((j < 2u || two) && bc6_storable(d, two) && bc6_inside(c, j, d & 31u)) {
                cur[0] = 0u;
                cur[1] = 0u;
                var err = 0.0;
                for (var r = 0u; r < 2u; r++) {
                    err += bc6_eval(c, r, d & 31u, !two);
                }
                if (err < best_err) {
                    best_err = err;
                    for (var i = 0u; i < 4u; i++) {
                        best_q[i] = qe[i];
                    }
                    best_i[0] = cur[0];
                    best_i[1] = cur[1];
                }
            }
        }
    }
}

fn bc6_put(bits: vec4<u32>, pos: u32, n: u32, v: u32) -> vec4<u32> {
    let w = vec4<u32>(pos >> 5u);
    let o = pos & 31u;
    let lo = v << o;
    let hi = select(0u, v >> ((32u - o) & 31u), o + n > 32u);
    let iw = vec4<u32>(0u, 1u, 2u, 3u);
    return bits | select(vec4<u32>(0u), vec4<u32>(lo), iw == w)
                | select(vec4<u32>(0u), vec4<u32>(hi), iw == w + vec4<u32>(1u));
}

// the block of the best trial: mode index m (mode m + 1), layout c, endpoints best_q
// (absolute values), indices best_i
fn bc6_pack(m: u32, c: u32) -> vec4<u32> {
    let d = bc6_mode_desc(m);
    let transformed = ((d >> 25u) & 1u) != 0u;
    let two = ((d >> 26u) & 1u) != 0u;
    var vals: array<u32, 16>;
    for (var e = 0u; e < 4u; e++) {
        for (var ch = 0u; ch < 3u; ch++) {
            var v = best_q[e][ch];
            if (transformed && e > 0u) {
                v -= best_q[0][ch];
            }
            vals[3u * e + ch] = u32(v);
        }
    }
    vals[12] = (d >> 20u) & 31u;
    vals[13] = select(0u, c, two);
    vals[14] = 0u;
    vals[15] = 0u;
    var bits = vec4<u32>(0u);
    let head = select(65u, 82u, two);
    for (var j = 0u; j < 82u; j++) {
        let f = (bc6_layout[1u + m * 21u + (j >> 2u)] >> (8u * (j & 3u))) & 255u;
        bits = bc6_put(bits, j, 1u, select(0u, (vals[f >> 4u] >> (f & 15u)) & 1u, j < head));
    }
    let anchor = select(0u, BC6_A2[min(c, 31u)], two);
    var pos = head;
    for (var t = 0u; t < 16u; t++) {
        let nb = select(4u, 3u, two) - select(0u, 1u, t == 0u || (two && t == anchor));
        bits = bc6_put(bits, pos, nb, (best_i[t >> 3u] >> (4u * (t & 7u))) & 15u);
        pos += nb;
    }
    return bits;
}

fn encode_bc6h() -> vec4<u32> {
    for (var t = 0u; t < 16u; t++) {
        let v = texel[t];
        hv[t] = vec3<f32>(half_int(v.r), half_int(v.g), half_int(v.b));
    }
    // line fits: the whole block (c = 32) and, where two-region modes are tried, each of the
    // 32 partitions, the BC6_PARTS of least residual kept (insertion, ties keep the earlier)
    var ncand = 0u;
    for (var c = 32u - min(BC6_PARTS, 1u) * 32u; c < 33u; c++) {
        var resid = 0.0;
        var e: array<vec3<f32>, 4>;
        for (var r = 0u; r < 2u; r++) {
            let l = bc6_line(bc6_mask(c, r), bc6_anchor(c, r));
            e[2u * r] = l.e0;
            e[2u * r + 1u] = l.e1;
            resid += l.resid;
        }
        var k = ncand;
        var take = true;
        if (c == 32u) {
            k = 8u;
        } else if (ncand == BC6_PARTS) {
            take = resid < cand_r[ncand - 1u];
            k = ncand - 1u;
        } else {
            ncand++;
        }
        if (take) {
            for (var s = 0u; s < 8u; s++) {  // insertion
                if (k > 0u && k < 8u && cand_r[k - 1u] > resid) {
                    cand_r[k] = cand_r[k - 1u];
                    cand_p[k] = cand_p[k - 1u];
                    for (var j = 0u; j < 4u; j++) {
                        cand_e[4u * k + j] = cand_e[4u * k - 4u + j];
                    }
                    k--;
                }
            }
            if (k < 8u) {
                cand_r[k] = resid;
                cand_p[k] = c;
            }
            for (var j = 0u; j < 4u; j++) {
                cand_e[4u * k + j] = e[j];
            }
        }
    }
    // every mode tried on its layouts: the whole block first, then the ranked partitions
    best_err = 1e30;
    var best_m = 10u;
    var best_c = 32u;
    let modes = select(BC6_MODES, bc6_layout[0], bc6_layout[0] != 0u);  // bcenc's bc6h_modes
    for (var km = 0u; km < 14u * (BC6_PARTS + 1u); km++) {
        let k = km / 14u;
        let m = km % 14u;
        let slot = select(k - 1u, 8u, k == 0u);
        let c = select(cand_p[min(slot, 7u)], 32u, k == 0u);
        let two = c < 32u;
        let d = bc6_mode_desc(m);
        let tried = k <= ncand && ((modes >> m) & 1u) != 0u && (((d >> 26u) & 1u) != 0u) == two;
        for (var j = 0u; j < 4u; j++) {
            fe[j] = cand_e[4u * slot + j];
        }
        var last = 1e30;
        var more = tried;
        for (var it = 0u; it <= BC6_REFINE; it++) {
            if (!more) {
                continue;
            }
            bc6_quantise(d);
            cur[0] = 0u;
            cur[1] = 0u;
            var err = 0.0;
            for (var r = 0u; r < 2u; r++) {  // one region: the second is empty
                err += bc6_eval(c, r, d & 31u, !two);
            }
            if (err < best_err) {
                best_err = err;
                best_m = m;
                best_c = c;
                for (var j = 0u; j < 4u; j++) {
                    best_q[j] = qe[j];
                }
                best_i[0] = cur[0];
                best_i[1] = cur[1];
            }
            more = err < last && err > 0.0 && it < BC6_REFINE;
            last = err;
            if (more) {
                for (var r = 0u; r < 2u; r++) {
                    bc6_refit(c, r, !two);
                }
            }
        }
    }
    bc6_perturb(best_m, best_c);
    return bc6_pack(best_m, best_c);
}
