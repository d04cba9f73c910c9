//! default TWIN_FORMAT rgba8unorm
//! default TWIN_STORE twin_store0
// Storing an 8-bit RGBA texel's codes into a storage twin texture of the chain's level (the
// sRGB formats cannot be storage textures; their non-sRGB twin can, and copy_texture_to_texture
// moves whole levels into the texture): mip_spd.wgsl's write_texel and mip_twin_check.wgsl.
// One binding a level (binding 6 + i: level i of the pass), as many as the pass's pipeline binds:
// TWIN_STORE names twin_storeK, which stores levels 0..K-1 and returns false for the others (the
// output buffer takes them). The code c goes in as (c + TWIN_BIAS) / 255: the unorm conversion
// (round to nearest, or toward zero) gives c back; spd.twin_check stores every code once per
// session and format through this same function and reads it back before a chain relies on it.

@group(0) @binding(6) var twin0: texture_storage_2d<TWIN_FORMAT, write>;
@group(0) @binding(7) var twin1: texture_storage_2d<TWIN_FORMAT, write>;
@group(0) @binding(8) var twin2: texture_storage_2d<TWIN_FORMAT, write>;
@group(0) @binding(9) var twin3: texture_storage_2d<TWIN_FORMAT, write>;
@group(0) @binding(10) var twin4: texture_storage_2d<TWIN_FORMAT, write>;
@group(0) @binding(11) var twin5: texture_storage_2d<TWIN_FORMAT, write>;

override TWIN_BIAS: f32 = 0.25;

fn twin_value(codes: vec4<u32>) -> vec4<f32> {
    return (vec4<f32>(codes) + vec4<f32>(TWIN_BIAS)) / 255.0;
}

// (Only the bindings a pipeline's TWIN_STORE reaches are part of its interface.)
fn twin_store0(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    return false;
}

fn twin_store1(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    if (i == 0u) {
        textureStore(twin0, p, twin_value(codes));
        return true;
    }
    return false;
}

fn twin_store2(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    if (i == 1u) {
        textureStore(twin1, p, twin_value(codes));
        return true;
    }
    return twin_store1(i, p, codes);
}

fn twin_store3(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    if (i == 2u) {
        textureStore(twin2, p, twin_value(codes));
        return true;
    }
    return twin_store2(i, p, codes);
}

fn twin_store4(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    if (i == 3u) {
        textureStore(twin3, p, twin_value(codes));
        return true;
    }
    return twin_store3(i, p, codes);
}

fn twin_store5(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    if (i == 4u) {
        textureStore(twin4, p, twin_value(codes));
        return true;
    }
    return twin_store4(i, p, codes);
}

fn twin_store6(i: u32, p: vec2<u32>, codes: vec4<u32>) -> bool {
    if (i == 5u) {
        textureStore(twin5, p, twin_value(codes));
        return true;
    }
    return twin_store5(i, p, codes);
}
