//! default OUT_FORMAT rgba8unorm
// Decode any sampled texture (block-compressed ones above all) into a storage texture:
// the GPU's own texture units are the decoder. One invocation per texel of one mip level,
// z = array layer (cube faces are layers). textureLoad reads the exact texel, no filtering.

override ENCODE_SRGB: bool = false;  // source is an -srgb format: loads come back linear
override QUANTIZE_8: bool = false;   // target holds 8-bit codes: round to them here

struct Params { width: u32, height: u32 }

@group(0) @binding(0) var src: texture_2d_array<f32>;
@group(0) @binding(1) var dst: texture_storage_2d_array<OUT_FORMAT, write>;
@group(0) @binding(2) var<uniform> prm: Params;

fn srgb_encode(c: f32) -> f32 {
    let x = clamp(c, 0.0, 1.0);
    if (x <= 0.0031308) {
        return x * 12.92;
    }
    return 1.055 * pow(x, 1.0 / 2.4) - 0.055;
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= prm.width || id.y >= prm.height) {
        return;
    }
    var v = textureLoad(src, vec2<i32>(id.xy), i32(id.z), 0);
    if (ENCODE_SRGB) {
        v = vec4<f32>(srgb_encode(v.r), srgb_encode(v.g), srgb_encode(v.b), v.a);
    }
    if (QUANTIZE_8) {
        v = round(clamp(v, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0) / 255.0;
    }
    textureStore(dst, vec2<i32>(id.xy), i32(id.z), v);
}
