// BC1 colour block (also BC3's colour half): principal axis, least-squares refinement of the
// endpoints against the chosen indices, then (QUALITY settings) a local search that moves each
// quantised 5:6:5 endpoint channel by one step while that lowers the error. Errors are plain
// RGB squared differences against the palette the specification decodes (bc_decode.wgsl):
// exact integers for 8-bit sources. Ties keep the earlier candidate (deterministic).

struct ColorFit {
    c0: u32,
    c1: u32,
    bits: u32,
    err: f32,
}

// texels that take part in the colour fit (bit i: texel i); the others are transparent
var<private> cmask: u32;

fn expand565(c: u32) -> vec3<f32> {
    let r = (c >> 11u) & 31u;
    let g = (c >> 5u) & 63u;
    let b = c & 31u;
    return vec3<f32>(f32((r << 3u) | (r >> 2u)), f32((g << 2u) | (g >> 4u)), f32((b << 3u) | (b >> 2u)));
}

fn quant565(c: vec3<f32>) -> u32 {
    let q = clamp(c, vec3<f32>(0.0), vec3<f32>(255.0));
    let r = u32(floor(q.r * (31.0 / 255.0) + 0.5));
    let g = u32(floor(q.g * (63.0 / 255.0) + 0.5));
    let b = u32(floor(q.b * (31.0 / 255.0) + 0.5));
    return (r << 11u) | (g << 5u) | b;
}

// Indices and error of endpoints (a, b): four-colour mode (BC1 needs c0 > c1; BC3 decodes
// four colours whatever the order) or, with `three`, three colours + transparent (c0 <= c1).
fn eval_color(a: u32, b: u32, three: bool) -> ColorFit {
    var c0 = a;
    var c1 = b;
    if ((three && c0 > c1) || (!three && c0 < c1)) {
        c0 = b;
        c1 = a;
    }
    let e0 = expand565(c0);
    let e1 = expand565(c1);
    // the four palette entries held in registers (no per-thread array indexed in the loop);
    // three-colour mode: entry 3 repeats entry 2, which the strict comparison never picks
    var p2: vec3<f32>;
    var p3: vec3<f32>;
    if (FOUR_ALWAYS || c0 > c1) {
        p2 = floor((2.0 * e0 + e1) / 3.0 + 0.5);
        p3 = floor((e0 + 2.0 * e1) / 3.0 + 0.5);
    } else {
        p2 = floor((e0 + e1) * 0.5 + 0.5);
        p3 = p2;  // index 3 is transparent black
    }
    var err = 0.0;
    var bits = 0u;
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) == 0u) {
            bits |= 3u << (2u * i);
            continue;
        }
        let p = texel[i].rgb;
        var d = p - e0;
        var best = dot(d, d);
        var k = 0u;
        d = p - e1;
        var e = dot(d, d);
        if (e < best) {
            best = e;
            k = 1u;
        }
        d = p - p2;
        e = dot(d, d);
        if (e < best) {
            best = e;
            k = 2u;
        }
        d = p - p3;
        e = dot(d, d);
        if (e < best) {
            best = e;
            k = 3u;
        }
        err += best;
        bits |= k << (2u * i);
    }
    return ColorFit(c0, c1, bits, err);
}

// Least-squares endpoints for the indices of `f` (its mode), quantised.
fn refit(f: ColorFit, three: bool) -> vec2<u32> {
    let four = FOUR_ALWAYS || f.c0 > f.c1;
    var aa = 0.0;
    var bb = 0.0;
    var ab = 0.0;
    var ax = vec3<f32>(0.0);
    var bx = vec3<f32>(0.0);
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) == 0u) {
            continue;
        }
        let k = (f.bits >> (2u * i)) & 3u;
        var wa = 1.0;
        if (k == 1u) {
            wa = 0.0;
        } else if (k == 2u) {
            wa = select(0.5, 2.0 / 3.0, four);
        } else if (k == 3u) {
            wa = 1.0 / 3.0;
        }
        let wb = 1.0 - wa;
        aa += wa * wa;
        bb += wb * wb;
        ab += wa * wb;
        ax += wa * texel[i].rgb;
        bx += wb * texel[i].rgb;
    }
    let det = aa * bb - ab * ab;
    if (abs(det) < 1e-6) {
        return vec2<u32>(f.c0, f.c1);
    }
    let e0 = (ax * bb - bx * ab) / det;
    let e1 = (bx * aa - ax * ab) / det;
    return vec2<u32>(quant565(e0), quant565(e1));
}

// 565 endpoint `c` with channel `ch` (0 r, 1 g, 2 b) moved by `d` (+1 / -1), or c itself at the edge
fn nudge(c: u32, ch: u32, up: bool) -> u32 {
    let shift = select(select(0u, 5u, ch == 1u), 11u, ch == 0u);
    let top = select(31u, 63u, ch == 1u);
    let v = (c >> shift) & top;
    if ((up && v == top) || (!up && v == 0u)) {
        return c;
    }
    let nv = select(v - 1u, v + 1u, up);
    return (c & ~(top << shift)) | (nv << shift);
}


// Cluster fit (CLUSTER_ITERS > 0): the texels ordered along the axis, every split of that order
// into consecutive runs taking indices e0, 2/3, 1/3, e1 (three-colour mode: e0, 1/2, e1) whose
// three boundaries lie within CLUSTER_WIN texels of those of the current fit `cur` (its indices
// counted in axis order; CLUSTER_WIN 16: all 969 splits) gets least-squares endpoints in closed
// form from prefix sums; the split whose quantised endpoints give the smallest closed-form error
// wins. Per split one reciprocal (not six divisions) and the 5:6:5 rounding in float
// (floor(q * 8.25) and floor(q * 4.0625) are the bit replications exactly). (Choosing the split
// by the unquantised error and quantising only the winner cost 0.16 dB on the photos; a local
// search over splits from the quartiles, moving one boundary by 1 or 2 texels, cost 0.12 dB;
// CLUSTER_WIN 3 (up to 343 splits) cost 0.06 dB on the 4096^2 composite, 2 cost 0.09 dB.)
fn cluster_fit(three: bool, axis: vec3<f32>, cur: ColorFit) -> vec2<u32> {
    var xs: array<vec3<f32>, 16>;
    var ts: array<f32, 16>;
    var n = 0u;
    var h = vec4<u32>(0u);
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) != 0u) {
            let t = dot(texel[i].rgb, axis);
            var j = n;
            while (j > 0u && ts[j - 1u] > t) {  // insertion sort (stable: ties keep texel order)
                ts[j] = ts[j - 1u];
                xs[j] = xs[j - 1u];
                j--;
            }
            ts[j] = t;
            xs[j] = texel[i].rgb;
            n++;
            let k = (cur.bits >> (2u * i)) & 3u;
            h += vec4<u32>(vec4<bool>(k == 0u, k == 1u, k == 2u, k == 3u));
        }
    }
    var pre: array<vec3<f32>, 17>;
    pre[0] = vec3<f32>(0.0);
    for (var i = 0u; i < n; i++) {
        pre[i + 1u] = pre[i] + xs[i];
    }
    let total = pre[n];
    // the current fit's runs in ascending axis order: c0's end first when it lies lower
    let low0 = dot(expand565(cur.c0), axis) <= dot(expand565(cur.c1), axis);
    var runs = select(vec4<u32>(h.y, h.w, h.z, h.x), vec4<u32>(h.x, h.z, h.w, h.y), low0);
    if (three) {  // three colours: e0, middle (index 2), e1
        runs = select(vec4<u32>(h.y, h.z, 0u, h.x), vec4<u32>(h.x, h.z, 0u, h.y), low0);
    }
    let b1 = i32(runs.x);
    let b2 = b1 + i32(runs.y);
    let b3 = b2 + i32(runs.z);
    let ni = i32(n);
    let w1 = select(2.0 / 3.0, 0.5, three);
    let w2 = 1.0 / 3.0;
    let grid = vec3<f32>(31.0 / 255.0, 63.0 / 255.0, 31.0 / 255.0);
    let rep = vec3<f32>(8.25, 4.0625, 8.25);
    var best_err = 1e30;
    var qa_best = vec3<f32>(0.0);
    var qb_best = vec3<f32>(0.0);
    for (var i1 = max(0, b1 - CLUSTER_WIN); i1 <= min(ni, b1 + CLUSTER_WIN); i1++) {
        let p1 = pre[i1];
        for (var i2 = max(i1, b2 - CLUSTER_WIN); i2 <= min(ni, b2 + CLUSTER_WIN); i2++) {
            let p2 = pre[i2];
            var i3 = i2;
            var i3_end = i2;
            if (!three) {
                i3 = max(i2, b3 - CLUSTER_WIN);
                i3_end = min(ni, b3 + CLUSTER_WIN);
            }
            for (; i3 <= i3_end; i3++) {
                let p3 = pre[i3];
                let f0 = f32(i1);
                let f1 = f32(i2 - i1);
                let f2 = f32(i3 - i2);
                let f3 = f32(ni - i3);
                let ax = p1 + (p2 - p1) * w1 + (p3 - p2) * w2;
                let bx = total - ax;
                let aa = f0 + f1 * w1 * w1 + f2 * w2 * w2;
                let bb = f3 + f1 * (1.0 - w1) * (1.0 - w1) + f2 * (1.0 - w2) * (1.0 - w2);
                let ab = f1 * w1 * (1.0 - w1) + f2 * w2 * (1.0 - w2);
                let det = aa * bb - ab * ab;
                if (abs(det) > 1e-6) {
                    let inv = 1.0 / det;
                    let a = clamp((ax * bb - bx * ab) * inv, vec3<f32>(0.0), vec3<f32>(255.0));
                    let b = clamp((bx * aa - ax * ab) * inv, vec3<f32>(0.0), vec3<f32>(255.0));
                    let qa = floor(a * grid + 0.5);
                    let qb = floor(b * grid + 0.5);
                    let ea = floor(qa * rep);
                    let eb = floor(qb * rep);
                    let e = ea * ea * aa + eb * eb * bb + 2.0 * ea * eb * ab - 2.0 * ea * ax - 2.0 * eb * bx;
                    let err = e.x + e.y + e.z;
                    if (err < best_err) {
                        best_err = err;
                        qa_best = qa;
                        qb_best = qb;
                    }
                }
            }
        }
    }
    let ua = vec3<u32>(qa_best);
    let ub = vec3<u32>(qb_best);
    return vec2<u32>((ua.x << 11u) | (ua.y << 5u) | ua.z, (ub.x << 11u) | (ub.y << 5u) | ub.z);
}


// INT_FAST (``fast`` on 8-bit sources): no floating point that could round differently between
// adapters. The axis is the bounding box's diagonal with each channel's sign taken from its
// covariance with the widest channel (exact integer sums); the endpoints are the texels
// furthest apart along it; the least-squares refits solve in exact integers (weights in
// sixths) with one rounding to the nearest code.
fn quant565_int(c: vec3<i32>) -> u32 {
    let q = clamp(c, vec3<i32>(0), vec3<i32>(255));
    let r = u32((q.x * 62 + 255) / 510);
    let g = u32((q.y * 126 + 255) / 510);
    let b = u32((q.z * 62 + 255) / 510);
    return (r << 11u) | (g << 5u) | b;
}

fn fit_color_int(three: bool) -> ColorFit {
    var n = 0;
    var s = vec3<i32>(0);
    var lo = vec3<i32>(255);
    var hi = vec3<i32>(0);
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) != 0u) {
            let x = vec3<i32>(texel[i].rgb);
            s += x;
            lo = min(lo, x);
            hi = max(hi, x);
            n++;
        }
    }
    let range = hi - lo;
    var k = 0u;
    if (range.y > range[k]) {
        k = 1u;
    }
    if (range.z > range[k]) {
        k = 2u;
    }
    var cov = vec3<i32>(0);
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) != 0u) {
            let x = vec3<i32>(texel[i].rgb);
            cov += x * x[k];
        }
    }
    cov = cov * n - s * s[k];  // n^2 x the covariance of each channel with channel k
    let axis = select(range, -range, cov < vec3<i32>(0));
    var tmin = 0x7fffffff;
    var tmax = -0x7fffffff;
    var a = vec3<i32>(0);
    var b = vec3<i32>(0);
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) != 0u) {
            let x = vec3<i32>(texel[i].rgb);
            let t = dot(x, axis);
            if (t > tmax) {
                tmax = t;
                a = x;
            }
            if (t < tmin) {
                tmin = t;
                b = x;
            }
        }
    }
    var best = eval_color(quant565_int(a), quant565_int(b), three);
    for (var it = 0u; it < REFINE; it++) {
        let four = FOUR_ALWAYS || best.c0 > best.c1;
        var aa = 0;
        var bb = 0;
        var ab = 0;
        var ax = vec3<i32>(0);
        var bx = vec3<i32>(0);
        for (var i = 0u; i < 16u; i++) {
            if (((cmask >> i) & 1u) == 0u) {
                continue;
            }
            let j = (best.bits >> (2u * i)) & 3u;
            var wa = 6;  // weight of c0, in sixths
            if (j == 1u) {
                wa = 0;
            } else if (j == 2u) {
                wa = select(3, 4, four);
            } else if (j == 3u) {
                wa = 2;
            }
            let wb = 6 - wa;
            let x = vec3<i32>(texel[i].rgb);
            aa += wa * wa;
            bb += wb * wb;
            ab += wa * wb;
            ax += wa * x;
            bx += wb * x;
        }
        let det = aa * bb - ab * ab;
        if (det == 0) {
            break;
        }
        // endpoints = 6 (ax bb - bx ab) / det, rounded to the nearest code (negatives clamp to 0)
        let n0 = max((ax * bb - bx * ab) * 6, vec3<i32>(0));
        let n1 = max((bx * aa - ax * ab) * 6, vec3<i32>(0));
        let e0 = (2 * n0 + vec3<i32>(det)) / (2 * det);
        let e1 = (2 * n1 + vec3<i32>(det)) / (2 * det);
        let f = eval_color(quant565_int(e0), quant565_int(e1), three);
        if (f.err < best.err) {
            best = f;
        } else {
            break;
        }
    }
    return best;
}

fn fit_color(three: bool) -> ColorFit {
    if (INT_FAST) {
        return fit_color_int(three);
    }
    var mean = vec3<f32>(0.0);
    var lo = vec3<f32>(255.0);
    var hi = vec3<f32>(0.0);
    var n = 0.0;
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) != 0u) {
            mean += texel[i].rgb;
            lo = min(lo, texel[i].rgb);
            hi = max(hi, texel[i].rgb);
            n += 1.0;
        }
    }
    mean /= max(n, 1.0);
    var cxx = 0.0;
    var cxy = 0.0;
    var cxz = 0.0;
    var cyy = 0.0;
    var cyz = 0.0;
    var czz = 0.0;
    for (var i = 0u; i < 16u; i++) {
        if (((cmask >> i) & 1u) != 0u) {
            let d = texel[i].rgb - mean;
            cxx += d.x * d.x;
            cxy += d.x * d.y;
            cxz += d.x * d.z;
            cyy += d.y * d.y;
            cyz += d.y * d.z;
            czz += d.z * d.z;
        }
    }
    // power iteration from the bounding-box diagonal
    var axis = hi - lo;
    for (var it = 0u; it < POWER_ITERS; it++) {
        let v = vec3<f32>(cxx * axis.x + cxy * axis.y + cxz * axis.z, cxy * axis.x + cyy * axis.y + cyz * axis.z,
                          cxz * axis.x + cyz * axis.y + czz * axis.z);
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
        for (var i = 0u; i < 16u; i++) {
            if (((cmask >> i) & 1u) != 0u) {
                let t = dot(texel[i].rgb - mean, axis);
                tmin = min(tmin, t);
                tmax = max(tmax, t);
            }
        }
        tmin /= len2;
        tmax /= len2;
    }
    var best = eval_color(quant565(mean + axis * tmax), quant565(mean + axis * tmin), three);
    for (var it = 0u; it < REFINE; it++) {
        let e = refit(best, three);
        let f = eval_color(e.x, e.y, three);
        if (f.err < best.err) {
            best = f;
        } else {
            break;
        }
    }
    // cluster fit along the principal axis, then (CLUSTER_ITERS > 1) along the axis of the
    // endpoints it found, while that helps
    // (blocks the refits already fit within CLUSTER_SKIP, a summed squared error, skip it; 0 by
    // default: 48 cost nothing in PSNR but gained no speed on lavapipe, where a SIMD group of
    // blocks runs the fit if any of them does; not measured on the H200)
    var order_axis = axis;
    for (var it = 0u; it < CLUSTER_ITERS && n > 2.0 && best.err > CLUSTER_SKIP; it++) {
        let e = cluster_fit(three, order_axis, best);
        let f = eval_color(e.x, e.y, three);
        if (f.err < best.err) {
            best = f;
        } else if (it > 0u) {
            break;
        }
        order_axis = expand565(best.c0) - expand565(best.c1);
        if (dot(order_axis, order_axis) == 0.0) {
            break;
        }
    }
    for (var sweep = 0u; sweep < PERTURB; sweep++) {
        var improved = false;
        for (var k = 0u; k < 12u; k++) {
            let ch = (k >> 1u) % 3u;
            let up = (k & 1u) == 0u;
            var a = best.c0;
            var b = best.c1;
            if (k < 6u) {
                a = nudge(a, ch, up);
            } else {
                b = nudge(b, ch, up);
            }
            let f = eval_color(a, b, three);
            if (f.err < best.err) {
                best = f;
                improved = true;
            }
        }
        if (!improved) {
            break;
        }
    }
    return best;
}

// The colour words of a BC1 (mask: texels with alpha >= 128) or BC3 (mask 0xffff) block.
fn encode_color(mask: u32) -> vec2<u32> {
    cmask = mask;
    // opaque blocks: the four-colour mode, then (TRY_THREE) the three-colour one if strictly
    // better; blocks with transparent texels: three colours. One loop, so the compiled shader
    // holds one copy of fit_color (lavapipe compiles every inlined copy).
    let opaque = FOUR_ALWAYS || mask == 0xffffu;
    let tries = select(1u, 2u, opaque && TRY_THREE && !FOUR_ALWAYS);
    var f: ColorFit;
    for (var k = 0u; k < tries; k++) {
        let g = fit_color(!opaque || k == 1u);
        if (k == 0u || g.err < f.err) {
            f = g;
        }
    }
    return vec2<u32>(f.c0 | (f.c1 << 16u), f.bits);
}

fn alpha_mask() -> u32 {
    var m = 0u;
    for (var i = 0u; i < 16u; i++) {
        if (texel[i].a >= 127.5) {
            m |= 1u << i;
        }
    }
    return m;
}
