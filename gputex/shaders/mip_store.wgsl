// Storing one texel's codes at word `base` of the output buffer, texel x of its row (mip_spd.wgsl,
// mip_odd.wgsl): the including shader declares `out` (array<atomic<u32>>), CHANNELS, BITS and BGRA.
// Texels of 4 and 8 bytes own their words; smaller ones share a word and are ORed in (the buffer
// is cleared first).

fn store_codes(base: u32, x: u32, codes: vec4<u32>) {
    var ch = vec4<u32>(codes.x, codes.w, 0u, 0u);
    if (CHANNELS == 4u) {
        ch = codes;
        if (BGRA) {
            ch = codes.zyxw;
        }
    } else if (CHANNELS == 1u) {
        ch = vec4<u32>(codes.x, 0u, 0u, 0u);
    }
    let bpt = CHANNELS * BITS / 8u;
    var w0 = ch.x | (ch.y << 8u) | (ch.z << 16u) | (ch.w << 24u);
    var w1 = 0u;
    if (BITS == 16u) {
        w0 = ch.x | (ch.y << 16u);
        w1 = ch.z | (ch.w << 16u);
    }
    if (bpt == 8u) {
        atomicStore(&out[base + 2u * x], w0);
        atomicStore(&out[base + 2u * x + 1u], w1);
    } else if (bpt == 4u) {
        atomicStore(&out[base + x], w0);
    } else {
        let byte = x * bpt;
        atomicOr(&out[base + byte / 4u], w0 << ((byte % 4u) * 8u));
    }
}

// Storing codes through a storage view instead (mip_spd.wgsl's store_level, mip_odd.wgsl): the
// texture's levels written by textureStore (an sRGB texture is then its linear twin, texture.py).
// Code c goes in as (c + 0.25) / 255, which the float-to-unorm conversion turns back into c whether
// it rounds to nearest or toward zero; the chains' self-checks store through it before a chain
// relies on it.
fn store_value(codes: vec4<u32>) -> vec4<f32> {
    return (vec4<f32>(codes) + vec4<f32>(0.25)) / 255.0;
}
