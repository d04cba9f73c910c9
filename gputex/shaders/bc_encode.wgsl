// Block-compression encoder, common part: one invocation per 4x4 block of one mip level,
// z = array layer. Texels are read straight from the source level (edges replicated past the
// logical size), converted to code units (0..255; snorm: -127..127) and the block's words go
// into a storage buffer laid out as copy_buffer_to_texture wants it (rows of blocks padded to
// 256 bytes). gputex/bcenc.py puts `const` lines for KIND, the source conversion and the
// quality settings in front, and appends bc_color.wgsl / bc_ramp.wgsl as KIND needs them, so
// each pipeline holds only the code of its format and quality (lavapipe compiles with LLVM).

struct Params {
    width: u32,        // logical size of this level in texels
    height: u32,
    blocks_x: u32,
    blocks_y: u32,
    pitch_words: u32,  // padded bytes per row of blocks / 4
    image_words: u32,  // words per layer
}

@group(0) @binding(0) var src: texture_2d_array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;

// the block's texels in code units (0..255; BC6H: the values), row-major
var<private> texel: array<vec4<f32>, 16>;

fn srgb_encode(c: f32) -> f32 {
    let x = clamp(c, 0.0, 1.0);
    if (x <= 0.0031308) {
        return x * 12.92;
    }
    return 1.055 * pow(x, 1.0 / 2.4) - 0.055;
}

fn load_block(bx: u32, by: u32, layer: u32) {
    for (var i = 0u; i < 16u; i++) {
        let x = min(bx * 4u + (i & 3u), prm.width - 1u);
        let y = min(by * 4u + (i >> 2u), prm.height - 1u);
        var v = textureLoad(src, vec2<i32>(i32(x), i32(y)), i32(layer), 0);
        if (SRC_SRGB) {
            v = vec4<f32>(srgb_encode(v.r), srgb_encode(v.g), srgb_encode(v.b), v.a);
        }
        if (!RAW_FLOAT) {  // BC6H keeps the values; the others work in 8-bit code units
            v = clamp(v, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0;
            if (SRC_ROUND) {  // 8-bit source: exact integer codes from here on
                v = floor(v + 0.5);
            }
        }
        texel[i] = v;
    }
}

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    // LANES invocations per block (BC5: one per channel), `lane` says which; each workgroup
    // holds one lane of 8 x 8 blocks (no divergence between the lanes' code)
    let wgx = gid.x / 8u;
    let lane = wgx % LANES;
    let bx = (wgx / LANES) * 8u + gid.x % 8u;
    if (bx >= prm.blocks_x || gid.y >= prm.blocks_y) {
        return;
    }
    load_block(bx, gid.y, gid.z);
    let w = gid.z * prm.image_words + gid.y * prm.pitch_words + bx * BLOCK_WORDS;
    ENCODE_BLOCK
}
