//! include mip_common.wgsl
// Encode one linear-light work level into the texture format's bytes, in a storage buffer
// whose rows are padded for copy_buffer_to_texture. One invocation writes one u32 word,
// so formats of 1 and 2 bytes per texel pack several texels per word without atomics.
// (mip_common.wgsl, prepended by the loader, has the overrides and the encoding.)

struct Params {
    width: u32,
    rows: u32,          // rows in this band
    row0: u32,          // first row of the band in the level
    words_per_row: u32, // padded row pitch / 4
    alpha_scale: f32,   // alpha-to-coverage scale for this level (1 otherwise)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;

// SPLIT_PLAIN only (a 1x1 stand-in otherwise): the level's plain colour
@group(0) @binding(5) var src_plain: texture_2d<f32>;

fn final_value(x: u32, y: u32) -> vec4<f32> {
    var v = textureLoad(src, vec2<i32>(i32(x), i32(y)), 0);
    if (SPLIT_PLAIN && v.a <= 0.0) {
        v = vec4<f32>(textureLoad(src_plain, vec2<i32>(i32(x), i32(y)), 0).rgb, v.a);
    }
    return finalize(v, prm.alpha_scale);
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let words = (prm.width * BPT + 3u) / 4u;
    if (gid.x >= words || gid.y >= prm.rows) {
        return;
    }
    let y = prm.row0 + gid.y;
    let byte0 = gid.x * 4u;
    var word = 0u;
    if (BPT >= 4u) {
        word = texel_word(final_value(byte0 / BPT, y), (byte0 % BPT) / 4u);
    } else {
        let per = 4u / BPT;
        for (var k = 0u; k < per; k++) {
            let x = byte0 / BPT + k;
            if (x < prm.width) {
                word |= small_texel(final_value(x, y)) << (k * BPT * 8u);
            }
        }
    }
    out[gid.y * prm.words_per_row + gid.x] = word;
}
