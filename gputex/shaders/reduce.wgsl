//! default SAMPLED f32
// Reductions for compare and stats: only a few hundred bytes come back to the CPU.
//
// Entry points
//   metrics  each invocation walks TEXELS texels (row-major from its index) and writes one
//            Partial: per channel sum and sum of squares of x, min and max of x, and a count.
//            compare: x = |a - b| (count = texels that differ in any channel);
//            stats:   x = a (float data: sums of x - lo, lo a first pass's mean).
//   ssim     each invocation walks TEXELS interior pixels (those whose 11x11 window fits)
//            and sums the SSIM of luminance there (Wang et al. 2004; Gaussian window 11,
//            sigma 1.5, K1 0.01, K2 0.03, data range 1).
//   combine  each invocation folds FOLD consecutive Partials into one; run until one is left.
//   histogram  atomic bins per channel over [lo, hi] of each channel.
//
// Values are integer codes for unorm formats (round(v * code_max)) and for uint/sint formats,
// floats otherwise. With EXACT, x is an integer in [0, 2^16) and sums are exact 64-bit
// integers (two u32 words); otherwise they are float32 with Kahan compensation.
// The loader replaces the `alias Sampled` line for integer formats (u32 / i32).

alias Sampled = SAMPLED;

override MODE: u32 = 0u;         // 0 compare, 1 stats
override EXACT: bool = true;
override CODES: bool = true;     // unorm: compare integer codes round(v * code_max)
override OFFSET: f32 = 0.0;      // added to stats values for signed integer formats (EXACT)
override CHANNELS: u32 = 4u;
override TEXELS: u32 = 256u;
override FOLD: u32 = 64u;
override BINS: u32 = 256u;

struct Params {
    width: u32,
    height: u32,
    count: u32,  // texels (metrics), interior pixels (ssim), partials (combine)
    _pad: u32,
    code_max: vec4<f32>,  // per channel 2^bits - 1 of a unorm format
    lo: vec4<f32>,
    hi: vec4<f32>,
}

struct Partial {
    s1_lo: vec4<u32>,
    s1_hi: vec4<u32>,
    s2_lo: vec4<u32>,
    s2_hi: vec4<u32>,
    f1: vec4<f32>,
    f1_c: vec4<f32>,
    f2: vec4<f32>,
    f2_c: vec4<f32>,
    mn: vec4<f32>,
    mx: vec4<f32>,
    count: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

@group(0) @binding(0) var tex_a: texture_2d<Sampled>;
@group(0) @binding(1) var tex_b: texture_2d<Sampled>;
@group(0) @binding(2) var<storage, read_write> parts_in: array<Partial>;
@group(0) @binding(3) var<storage, read_write> parts_out: array<Partial>;
@group(0) @binding(4) var<uniform> prm: Params;
@group(0) @binding(5) var<storage, read_write> bins: array<atomic<u32>>;

fn value(t: texture_2d<Sampled>, p: vec2<i32>) -> vec4<f32> {
    let v = vec4<f32>(textureLoad(t, p, 0));
    if (CODES) {
        return round(v * prm.code_max);
    }
    return v;
}

fn empty() -> Partial {
    var p: Partial;
    p.s1_lo = vec4<u32>(0u);
    p.s1_hi = vec4<u32>(0u);
    p.s2_lo = vec4<u32>(0u);
    p.s2_hi = vec4<u32>(0u);
    p.f1 = vec4<f32>(0.0);
    p.f1_c = vec4<f32>(0.0);
    p.f2 = vec4<f32>(0.0);
    p.f2_c = vec4<f32>(0.0);
    p.mn = vec4<f32>(3.0e38);
    p.mx = vec4<f32>(-3.0e38);
    p.count = 0u;
    return p;
}

struct U64 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

struct Kahan {
    sum: vec4<f32>,
    comp: vec4<f32>,
}

// 64-bit add of (lo, hi) pairs, component-wise.
fn add64(lo: vec4<u32>, hi: vec4<u32>, add_lo: vec4<u32>, add_hi: vec4<u32>) -> U64 {
    let s = lo + add_lo;
    return U64(s, hi + add_hi + select(vec4<u32>(0u), vec4<u32>(1u), s < add_lo));
}

fn kahan(sum: vec4<f32>, comp: vec4<f32>, x: vec4<f32>) -> Kahan {
    let y = x - comp;
    let t = sum + y;
    return Kahan(t, (t - sum) - y);
}

fn mask(v: vec4<f32>) -> vec4<f32> {
    // channels the texture does not hold count as zero
    return select(vec4<f32>(0.0), v, vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(CHANNELS));
}

@compute @workgroup_size(64)
fn metrics(@builtin(global_invocation_id) gid: vec3<u32>) {
    let first = gid.x * TEXELS;
    if (first >= prm.count) {
        return;
    }
    var p = empty();
    let last = min(first + TEXELS, prm.count);
    for (var i = first; i < last; i++) {
        let xy = vec2<i32>(i32(i % prm.width), i32(i / prm.width));
        let a = value(tex_a, xy);
        var x = a;
        if (MODE == 0u) {
            let d = abs(a - value(tex_b, xy));
            x = mask(d);
            if (any(x != vec4<f32>(0.0))) {
                p.count += 1u;
            }
        } else {
            x = mask(a) + vec4<f32>(OFFSET);
        }
        p.mn = min(p.mn, x);
        p.mx = max(p.mx, x);
        if (EXACT) {
            let xi = vec4<u32>(x);
            let u_s1 = add64(p.s1_lo, p.s1_hi, xi, vec4<u32>(0u));
            p.s1_lo = u_s1.lo;
            p.s1_hi = u_s1.hi;
            let u_s2 = add64(p.s2_lo, p.s2_hi, xi * xi, vec4<u32>(0u));
            p.s2_lo = u_s2.lo;
            p.s2_hi = u_s2.hi;
        } else {
            let xs = x - select(vec4<f32>(0.0), prm.lo, MODE == 1u);  // stats: deviation from a shift
            let k_f1 = kahan(p.f1, p.f1_c, xs);
            p.f1 = k_f1.sum;
            p.f1_c = k_f1.comp;
            let k_f2 = kahan(p.f2, p.f2_c, xs * xs);
            p.f2 = k_f2.sum;
            p.f2_c = k_f2.comp;
        }
    }
    parts_out[gid.x] = p;
}

@compute @workgroup_size(64)
fn combine(@builtin(global_invocation_id) gid: vec3<u32>) {
    let first = gid.x * FOLD;
    if (first >= prm.count) {
        return;
    }
    var p = empty();
    let last = min(first + FOLD, prm.count);
    for (var i = first; i < last; i++) {
        let q = parts_in[i];
        let u_s1 = add64(p.s1_lo, p.s1_hi, q.s1_lo, q.s1_hi);
        p.s1_lo = u_s1.lo;
        p.s1_hi = u_s1.hi;
        let u_s2 = add64(p.s2_lo, p.s2_hi, q.s2_lo, q.s2_hi);
        p.s2_lo = u_s2.lo;
        p.s2_hi = u_s2.hi;
        let k_f1 = kahan(p.f1, p.f1_c, q.f1 - q.f1_c);
        p.f1 = k_f1.sum;
        p.f1_c = k_f1.comp;
        let k_f2 = kahan(p.f2, p.f2_c, q.f2 - q.f2_c);
        p.f2 = k_f2.sum;
        p.f2_c = k_f2.comp;
        p.mn = min(p.mn, q.mn);
        p.mx = max(p.mx, q.mx);
        p.count += q.count;
    }
    parts_out[gid.x] = p;
}

fn luma(t: texture_2d<Sampled>, p: vec2<i32>) -> f32 {
    var v = vec4<f32>(textureLoad(t, p, 0));
    if (CODES) {
        v = round(v * prm.code_max) / prm.code_max;
    }
    if (CHANNELS < 4u) {
        return v.r;
    }
    return 0.299 * v.r + 0.587 * v.g + 0.114 * v.b;
}

fn gauss(i: i32) -> f32 {
    // exp(-i^2 / (2 sigma^2)), sigma 1.5, normalized over -5..5
    var w = array<f32, 6>(1.0, 0.8007374029168081, 0.41111229050718745, 0.1353352832366127,
                          0.028565500784550377, 0.003865920139472768);
    let total = 3.7592327951692632;  // 1 + 2 * (w[1] + ... + w[5])
    return w[abs(i)] / total;
}

@compute @workgroup_size(64)
fn ssim(@builtin(global_invocation_id) gid: vec3<u32>) {
    let first = gid.x * TEXELS;
    if (first >= prm.count) {
        return;
    }
    let iw = prm.width - 10u;
    var p = empty();
    let c1 = 0.0001;   // (0.01 * 1)^2
    let c2 = 0.0009;   // (0.03 * 1)^2
    let last = min(first + TEXELS, prm.count);
    for (var i = first; i < last; i++) {
        let cx = i32(i % iw) + 5;
        let cy = i32(i / iw) + 5;
        var mx = 0.0;
        var my = 0.0;
        var mxx = 0.0;
        var myy = 0.0;
        var mxy = 0.0;
        for (var dy = -5; dy <= 5; dy++) {
            let wy = gauss(dy);
            for (var dx = -5; dx <= 5; dx++) {
                let w = wy * gauss(dx);
                let q = vec2<i32>(cx + dx, cy + dy);
                let x = luma(tex_a, q);
                let y = luma(tex_b, q);
                mx += w * x;
                my += w * y;
                mxx += w * x * x;
                myy += w * y * y;
                mxy += w * x * y;
            }
        }
        let vx = mxx - mx * mx;
        let vy = myy - my * my;
        let vxy = mxy - mx * my;
        let s = ((2.0 * mx * my + c1) * (2.0 * vxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2));
        let k_f1 = kahan(p.f1, p.f1_c, vec4<f32>(s, 0.0, 0.0, 0.0));
        p.f1 = k_f1.sum;
        p.f1_c = k_f1.comp;
        p.count += 1u;
    }
    parts_out[gid.x] = p;
}

@compute @workgroup_size(64)
fn histogram(@builtin(global_invocation_id) gid: vec3<u32>) {
    let first = gid.x * TEXELS;
    if (first >= prm.count) {
        return;
    }
    let last = min(first + TEXELS, prm.count);
    for (var i = first; i < last; i++) {
        let xy = vec2<i32>(i32(i % prm.width), i32(i / prm.width));
        let x = value(tex_a, xy) + vec4<f32>(OFFSET);
        let span = max(prm.hi - prm.lo, vec4<f32>(1e-30));
        let b = clamp(vec4<i32>(floor((x - prm.lo) / span * f32(BINS))), vec4<i32>(0), vec4<i32>(i32(BINS) - 1));
        for (var c = 0u; c < CHANNELS; c++) {
            atomicAdd(&bins[c * BINS + u32(b[c])], 1u);
        }
    }
}
