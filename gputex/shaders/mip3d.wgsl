//! include mip_common.wgsl
// One mip level of a 3D texture: box filter over the exact footprint along x, y and z
// (destination texel j of an axis going from s to d texels covers the source interval
// [j*s/d, (j+1)*s/d); weights are overlaps, in integers scaled by d), linear light for sRGB
// data, weighted alpha as in 2D. The source is the base level or an earlier work level whose
// texels tile the footprint exactly. Writes the work value (rgba32float 3D) and the format's
// words into a buffer copied to the level with rows_per_image (texels of >= 4 bytes).
// (mip_common.wgsl, prepended by the loader, has the overrides and the encoding.)

override SRC_IS_BASE: bool = true;

struct Params {
    src_size: vec3<u32>,
    words_per_row: u32,
    dst_size: vec3<u32>,
    rows_per_image: u32,
}

@group(0) @binding(0) var src: texture_3d<f32>;
@group(0) @binding(1) var dst: texture_storage_3d<rgba32float, write>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read_write> packed: array<u32>;

fn fetch(p: vec3<i32>) -> vec4<f32> {
    let v = textureLoad(src, p, 0);
    if (!SRC_IS_BASE) {
        return v;
    }
    return canonical(v);
}

fn span(x: u32, s: u32, d: u32) -> vec2<u32> {
    return vec2<u32>((x * s) / d, ((x + 1u) * s + d - 1u) / d);
}

fn overlap(t: u32, x: u32, s: u32, d: u32) -> f32 {
    return f32(min((t + 1u) * d, (x + 1u) * s) - max(t * d, x * s));
}

@compute @workgroup_size(4, 4, 4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let s = prm.src_size;
    let d = prm.dst_size;
    if (gid.x >= d.x || gid.y >= d.y || gid.z >= d.z) {
        return;
    }
    let rx = span(gid.x, s.x, d.x);
    let ry = span(gid.y, s.y, d.y);
    let rz = span(gid.z, s.z, d.z);
    // one row sum at a time, rows added with Kahan compensation (as in 2D)
    var acc = vec4<f32>(0.0);
    var acc_c = vec4<f32>(0.0);
    var clear_rgb = vec3<f32>(0.0);
    var wsum = 0.0;
    for (var tz = rz.x; tz < rz.y; tz++) {
        let wz = overlap(tz, gid.z, s.z, d.z);
        for (var ty = ry.x; ty < ry.y; ty++) {
            let wyz = wz * overlap(ty, gid.y, s.y, d.y);
            var row = vec4<f32>(0.0);
            var row_clear = vec3<f32>(0.0);
            var row_w = 0.0;
            for (var tx = rx.x; tx < rx.y; tx++) {
                let w = overlap(tx, gid.x, s.x, d.x);
                let v = fetch(vec3<i32>(i32(tx), i32(ty), i32(tz)));
                if (WEIGHTED && v.a <= 0.0) {
                    row_clear += w * v.rgb;
                } else {
                    row += w * v;
                }
                row_w += w;
            }
            let y = wyz * row - acc_c;
            let t = acc + y;
            acc_c = (t - acc) - y;
            acc = t;
            clear_rgb += wyz * row_clear;
            wsum += wyz * row_w;
        }
    }
    var out = acc / wsum;
    if (WEIGHTED && acc.a <= 0.0) {
        out = vec4<f32>((clear_rgb + acc.rgb) / wsum, 0.0);
    }
    textureStore(dst, vec3<i32>(gid), out);
    let v = finalize(out, 1.0);
    let words = BPT / 4u;
    let base = (gid.z * prm.rows_per_image + gid.y) * prm.words_per_row + gid.x * words;
    for (var part = 0u; part < words; part++) {
        packed[base + part] = texel_word(v, part);
    }
}
