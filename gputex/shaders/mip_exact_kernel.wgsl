//! include mip_f64.wgsl
//! include mip_kernel_out.wgsl
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
    src_plane: u32,    // the source level's texel count (SOA)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read> prev: array<f64>;        // pm rgba, plain rgb (mip_kernel_out.wgsl)
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
        let i = y * prm.src_width + x;
        let n = prm.src_plane;
        t.pm = array<f64, 4>(prev[value_at(i, 0u, n)], prev[value_at(i, 1u, n)], prev[value_at(i, 2u, n)],
                             prev[value_at(i, 3u, n)]);
        if (WEIGHTED) {  // (else the level holds no plain colour)
            t.pl = array<f64, 3>(prev[value_at(i, 4u, n)], prev[value_at(i, 5u, n)], prev[value_at(i, 6u, n)]);
        }
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

fn out_plane() -> u32 {
    return prm.dst_size.x * prm.dst_size.y;
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
    finish_texel(gid.x, gid.y, d.x, pm, pl);
}
