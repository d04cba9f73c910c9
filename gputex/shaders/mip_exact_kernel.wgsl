//! include mip_f64.wgsl
// One level of a Kaiser or Lanczos chain in float64 for 16-bit unorm and 32-bit float formats.
// The kernels' weights come from the CPU in float64 (per axis, per destination texel: source
// indices after --wrap, normalized weights), so every level is the float64 result of the
// previous one, chained as the reference chains it: with weighted alpha the premultiplied
// colour and the plain colour separately (a texel whose alpha is <= 0 takes the plain colour).
// Needs shader-f64. sRGB decode/encode as in mip_exact.wgsl (float32 pow + a Newton step).

override BGRA: bool = false;
override WEIGHTED: bool = true;
override ENCODE_SRGB: bool = false;
override SRC_IS_BASE: bool = true;

struct Params {
    dst_size: vec2<u32>,
    words_per_row: u32,
    src_width: u32,
    idx_base: u32,     // where the tap indices start in `taps` (weights[i - idx_base] goes with taps[i])
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read> prev: array<f64>;        // 8 per texel: pm rgba, plain rgb, -
@group(0) @binding(4) var<storage, read_write> next: array<f64>;
@group(0) @binding(5) var<storage, read> taps: array<u32>;        // x (start, count) | y (start, count) | indices
@group(0) @binding(6) var<storage, read> weights: array<f64>;

struct Texel {
    pm: array<f64, 4>,    // premultiplied rgba (weighted), or the plain rgba
    pl: array<f64, 3>,    // plain rgb (weighted only)
}

fn load(x: u32, y: u32) -> Texel {
    var t: Texel;
    if (!SRC_IS_BASE) {
        let i = (y * prm.src_width + x) * 8u;
        t.pm = array<f64, 4>(prev[i], prev[i + 1u], prev[i + 2u], prev[i + 3u]);
        t.pl = array<f64, 3>(prev[i + 4u], prev[i + 5u], prev[i + 6u]);
        return t;
    }
    let c = canonical64(textureLoad(src, vec2<i32>(i32(x), i32(y)), 0));
    t.pl = array<f64, 3>(c[0], c[1], c[2]);
    if (WEIGHTED) {
        t.pm = array<f64, 4>(c[0] * c[3], c[1] * c[3], c[2] * c[3], c[3]);
    } else {
        t.pm = c;
    }
    return t;
}

fn byte_of(c: f64) -> u32 {
    return u32(floor(min(max(c, 0.0), 1.0) * 255.0 + 0.5));
}

fn word_of(c: f64) -> u32 {
    if (FMT == 1u) {
        return u32(floor(min(max(c, 0.0), 1.0) * 65535.0 + 0.5));
    }
    return bitcast<u32>(f32(c));
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = prm.dst_size;
    if (gid.x >= d.x || gid.y >= d.y) {
        return;
    }
    var pm = array<f64, 4>(0.0, 0.0, 0.0, 0.0);
    var pl = array<f64, 3>(0.0, 0.0, 0.0);
    let xs = taps[gid.x * 2u];
    let xn = taps[gid.x * 2u + 1u];
    let ys = taps[(d.x + gid.y) * 2u];
    let yn = taps[(d.x + gid.y) * 2u + 1u];
    for (var j = 0u; j < yn; j++) {
        let sy = taps[ys + j];
        let wy = weights[ys + j - prm.idx_base];
        for (var i = 0u; i < xn; i++) {
            let w = wy * weights[xs + i - prm.idx_base];
            let t = load(taps[xs + i], sy);
            pm[0] += w * t.pm[0];
            pm[1] += w * t.pm[1];
            pm[2] += w * t.pm[2];
            pm[3] += w * t.pm[3];
            pl[0] += w * t.pl[0];
            pl[1] += w * t.pl[1];
            pl[2] += w * t.pl[2];
        }
    }
    let k = (gid.y * d.x + gid.x) * 8u;
    next[k] = pm[0];
    next[k + 1u] = pm[1];
    next[k + 2u] = pm[2];
    next[k + 3u] = pm[3];
    next[k + 4u] = pl[0];
    next[k + 5u] = pl[1];
    next[k + 6u] = pl[2];
    var out = pm;
    if (WEIGHTED) {
        if (pm[3] > 0.0) {
            out = array<f64, 4>(pm[0] / pm[3], pm[1] / pm[3], pm[2] / pm[3], pm[3]);
        } else {
            out = array<f64, 4>(pl[0], pl[1], pl[2], pm[3]);
        }
    }
    out[3] = min(max(out[3], 0.0), 1.0);
    if (ENCODE_SRGB) {
        out[0] = encode1(out[0]);
        out[1] = encode1(out[1]);
        out[2] = encode1(out[2]);
    }
    let base = gid.y * prm.words_per_row;
    if (FMT == 0u) {
        var r = out[0];
        var b = out[2];
        if (BGRA) {
            r = out[2];
            b = out[0];
        }
        packed[base + gid.x] = byte_of(r) | (byte_of(out[1]) << 8u) | (byte_of(b) << 16u) | (byte_of(out[3]) << 24u);
        return;
    }
    if (FMT == 1u) {
        if (CHANNELS == 4u) {
            packed[base + gid.x * 2u] = word_of(out[0]) | (word_of(out[1]) << 16u);
            packed[base + gid.x * 2u + 1u] = word_of(out[2]) | (word_of(out[3]) << 16u);
        } else {
            packed[base + gid.x] = word_of(out[0]) | (word_of(out[3]) << 16u);
        }
    } else if (CHANNELS == 4u) {
        for (var c = 0u; c < 4u; c++) {
            packed[base + gid.x * 4u + c] = word_of(out[c]);
        }
    } else if (CHANNELS == 2u) {
        packed[base + gid.x * 2u] = word_of(out[0]);
        packed[base + gid.x * 2u + 1u] = word_of(out[3]);
    } else {
        packed[base + gid.x] = word_of(out[0]);
    }
}
