// Speed of light of a mip chain (benchmarks/mips.py): every base texel read once, every texel
// of every level written once (4 bytes), no filtering: a level's texel is the XOR of its 2x2
// texels of the level before. The chain's GPU time over this one's is how far it is from the
// memory floor.
//
// A fair floor, not a strawman: each thread owns a 4x4 block of the base (16 loads, which the
// texture cache serves as whole 2D tiles: a texture has no wider load in WGSL), writes its 2x2
// texels of level 1 as two 8-byte stores (neighbouring threads write neighbouring words: whole
// 128-byte segments per half warp) and its texel of level 2 as one 4-byte store; levels 3..
// (1/64 of the bytes) are written by the thread whose block is their texel's first. Rows are
// packed (no 256-byte pitch): the fewest bytes any chain can write. Level 1 lives in a buffer
// of its own (binding 3, rows padded to even length) so that its stores can be 8 bytes wide.

struct Params {
    size: vec2<u32>,
    levels: u32,
    pad: u32,
    offsets: array<vec4<u32>, 4>,  // word offset of level l in dst: offsets[l / 4][l % 4]
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;         // levels 2..
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read_write> dst1: array<vec2<u32>>;  // level 1, rows of even length

fn at(p: vec2<u32>) -> u32 {
    let q = min(p, prm.size - vec2<u32>(1u));
    return pack4x8unorm(textureLoad(src, vec2<i32>(q), 0));
}

fn level_size(l: u32) -> vec2<u32> {
    return max(vec2<u32>(1u), prm.size >> vec2<u32>(l));
}

fn put(l: u32, p: vec2<u32>, v: u32) {
    let s = level_size(l);
    if (all(p < s)) {
        dst[prm.offsets[l / 4u][l % 4u] + p.y * s.x + p.x] = v;
    }
}

// Thread (x, y) owns the 4x4 base block (4x, 4y); a level's texel is the XOR of its 2x2 texels
// of the level before (the cheapest use of every load that no compiler can drop).
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let b = gid.xy;
    if (any(b * 4u >= prm.size) || prm.levels <= 1u) {
        return;
    }
    let o = b * 4u;
    let t0 = at(o) ^ at(o + vec2<u32>(1u, 0u)) ^ at(o + vec2<u32>(0u, 1u)) ^ at(o + vec2<u32>(1u, 1u));
    let t1 = at(o + vec2<u32>(2u, 0u)) ^ at(o + vec2<u32>(3u, 0u)) ^ at(o + vec2<u32>(2u, 1u)) ^ at(o + vec2<u32>(3u, 1u));
    let t2 = at(o + vec2<u32>(0u, 2u)) ^ at(o + vec2<u32>(1u, 2u)) ^ at(o + vec2<u32>(0u, 3u)) ^ at(o + vec2<u32>(1u, 3u));
    let t3 = at(o + vec2<u32>(2u, 2u)) ^ at(o + vec2<u32>(3u, 2u)) ^ at(o + vec2<u32>(2u, 3u)) ^ at(o + vec2<u32>(3u, 3u));
    let s1 = level_size(1u);
    let pitch = (s1.x + 1u) / 2u;  // vec2 words per level-1 row
    if (2u * b.y < s1.y) {
        dst1[2u * b.y * pitch + b.x] = vec2<u32>(t0, t1);
    }
    if (2u * b.y + 1u < s1.y) {
        dst1[(2u * b.y + 1u) * pitch + b.x] = vec2<u32>(t2, t3);
    }
    let v = t0 ^ t1 ^ t2 ^ t3;
    for (var l = 2u; l < prm.levels; l++) {
        let m = (1u << (l - 2u)) - 1u;
        if ((b.x & m) != 0u || (b.y & m) != 0u) {
            break;
        }
        put(l, b >> vec2<u32>(l - 2u), v);
    }
}
