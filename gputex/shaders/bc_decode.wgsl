//! default OUT_FORMAT rgba8unorm
// BC1-BC5 decoded by a compute shader from the blocks the texture holds (copied into a
// buffer), with the arithmetic of the specification (Khronos Data Format Specification,
// "S3TC" and "RGTC"): 5:6:5 endpoints widened by bit replication, interpolants
// (2c0 + c1)/3 and (c0 + 2c1)/3 (BC1 with c0 <= c1: (c0 + c1)/2 and transparent black),
// BC2 alpha x 17, BC3/BC4/BC5 8- or 6-value ramps, each rounded to the nearest code.
// Texture units decode at their own precision (NVIDIA's are several codes off on BC1-BC5);
// this gives the same codes on every adapter. One invocation per texel; z = array layer.

override KIND: u32 = 1u;        // 1 BC1, 2 BC2, 3 BC3, 4 BC4, 5 BC5
override SIGNED: bool = false;  // BC4/BC5 snorm

struct Params {
    width: u32,
    height: u32,
    pitch_words: u32,      // padded bytes per row of blocks / 4
    image_words: u32,      // words per layer (pitch x block rows)
}

@group(0) @binding(0) var<storage, read> blocks: array<u32>;
@group(0) @binding(1) var dst: texture_storage_2d_array<OUT_FORMAT, write>;
@group(0) @binding(2) var<uniform> prm: Params;

fn expand565(c: u32) -> vec3<f32> {
    let r = (c >> 11u) & 31u;
    let g = (c >> 5u) & 63u;
    let b = c & 31u;
    return vec3<f32>(f32((r << 3u) | (r >> 2u)), f32((g << 2u) | (g >> 4u)), f32((b << 3u) | (b >> 2u)));
}

// colour of texel i (0..15) of a BC1-style colour block at word w; alpha in .a (255 or 0)
fn color_block(w: u32, i: u32, four: bool) -> vec4<f32> {
    let ends = blocks[w];
    let c0 = ends & 0xffffu;
    let c1 = ends >> 16u;
    let sel = (blocks[w + 1u] >> (2u * i)) & 3u;
    let e0 = expand565(c0);
    let e1 = expand565(c1);
    let always4 = four || c0 > c1;
    if (sel == 0u) {
        return vec4<f32>(e0, 255.0);
    }
    if (sel == 1u) {
        return vec4<f32>(e1, 255.0);
    }
    if (always4) {
        if (sel == 2u) {
            return vec4<f32>(floor((2.0 * e0 + e1) / 3.0 + 0.5), 255.0);
        }
        return vec4<f32>(floor((e0 + 2.0 * e1) / 3.0 + 0.5), 255.0);
    }
    if (sel == 2u) {
        return vec4<f32>(floor((e0 + e1) / 2.0 + 0.5), 255.0);
    }
    return vec4<f32>(0.0, 0.0, 0.0, 0.0);
}

fn sext8(v: u32) -> f32 {
    return f32(i32(v << 24u) >> 24u);
}

// value of texel i of an 8-byte BC3-alpha / BC4 block at word w (codes: 0..255, or -127..127)
fn ramp_block(w: u32, i: u32) -> f32 {
    let lo = blocks[w];
    let hi = blocks[w + 1u];
    var a0 = f32(lo & 0xffu);
    var a1 = f32((lo >> 8u) & 0xffu);
    if (SIGNED) {
        a0 = max(sext8(lo & 0xffu), -127.0);
        a1 = max(sext8((lo >> 8u) & 0xffu), -127.0);
    }
    // 48 bits of 3-bit indices start at bit 16 of the block
    let bit = 16u + 3u * i;
    var k: u32;
    if (bit + 3u <= 32u) {
        k = (lo >> bit) & 7u;
    } else if (bit >= 32u) {
        k = (hi >> (bit - 32u)) & 7u;
    } else {
        k = ((lo >> bit) | (hi << (32u - bit))) & 7u;
    }
    let kf = f32(k);
    if (k == 0u) {
        return a0;
    }
    if (k == 1u) {
        return a1;
    }
    if (a0 > a1) {
        return floor(((8.0 - kf) * a0 + (kf - 1.0) * a1) / 7.0 + 0.5);
    }
    if (k == 6u) {
        return select(0.0, -127.0, SIGNED);
    }
    if (k == 7u) {
        return select(255.0, 127.0, SIGNED);
    }
    return floor(((6.0 - kf) * a0 + (kf - 1.0) * a1) / 5.0 + 0.5);
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.width || gid.y >= prm.height) {
        return;
    }
    let bytes_per_block = select(16u, 8u, KIND == 1u || KIND == 4u);
    let w = gid.z * prm.image_words + (gid.y / 4u) * prm.pitch_words + (gid.x / 4u) * (bytes_per_block / 4u);
    let i = (gid.y % 4u) * 4u + (gid.x % 4u);
    var v = vec4<f32>(0.0, 0.0, 0.0, 1.0);
    let scale = select(1.0 / 255.0, 1.0 / 127.0, SIGNED);
    switch KIND {
        case 1u: {
            v = color_block(w, i, false) / 255.0;
        }
        case 2u: {
            let c = color_block(w + 2u, i, true);
            let a = f32((blocks[w + i / 8u] >> (4u * (i % 8u))) & 15u) * 17.0;
            v = vec4<f32>(c.rgb, a) / 255.0;
        }
        case 3u: {
            let c = color_block(w + 2u, i, true);
            v = vec4<f32>(c.rgb, ramp_block(w, i)) / 255.0;
        }
        case 4u: {
            v = vec4<f32>(ramp_block(w, i) * scale, 0.0, 0.0, 1.0);
        }
        default: {
            v = vec4<f32>(ramp_block(w, i) * scale, ramp_block(w + 2u, i) * scale, 0.0, 1.0);
        }
    }
    textureStore(dst, vec2<i32>(gid.xy), i32(gid.z), v);
}
