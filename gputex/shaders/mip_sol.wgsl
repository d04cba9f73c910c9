// Speed of light of a mip chain (benchmarks/mips.py): every base texel read once, every texel
// of every level written once, no filtering (a level's texel is its top-left base texel). The
// chain's GPU time over this one's is how far it is from the memory floor.

struct Params {
    size: vec2<u32>,
    levels: u32,
    pad: u32,
    offsets: array<vec4<u32>, 4>,  // word offset of level l in dst: offsets[l / 4][l % 4]
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.size.x || gid.y >= prm.size.y) {
        return;
    }
    let v = pack4x8unorm(textureLoad(src, vec2<i32>(gid.xy), 0));
    for (var l = 1u; l < prm.levels; l++) {
        let m = (1u << l) - 1u;
        if ((gid.x & m) != 0u || (gid.y & m) != 0u) {
            break;
        }
        let w = max(1u, prm.size.x >> l);
        let h = max(1u, prm.size.y >> l);
        let x = gid.x >> l;
        let y = gid.y >> l;
        if (x < w && y < h) {
            dst[prm.offsets[l / 4u][l % 4u] + y * w + x] = v;
        }
    }
}
