// One texel's float64 channel values written as a level's words (mip_exact.wgsl, and the kernel
// chains through mip_kernel_out.wgsl): 16-bit unorm (FMT 1: two per word, rounded to nearest)
// or float32 words; 4, 2 (grey in [0], alpha in [3]) or 1 channels. The including shader
// declares `packed` and the constants FMT and CHANNELS.

fn word_of(c: f64) -> u32 {
    if (FMT == 1u) {
        return u32(floor(min(max(c, 0.0), 1.0) * 65535.0 + 0.5));
    }
    return bitcast<u32>(f32(c));
}

fn pack_words(base: u32, x: u32, out: array<f64, 4>) {
    if (FMT == 1u) {
        if (CHANNELS == 4u) {
            packed[base + x * 2u] = word_of(out[0]) | (word_of(out[1]) << 16u);
            packed[base + x * 2u + 1u] = word_of(out[2]) | (word_of(out[3]) << 16u);
        } else {
            packed[base + x] = word_of(out[0]) | (word_of(out[3]) << 16u);
        }
    } else if (CHANNELS == 4u) {
        for (var c = 0u; c < 4u; c++) {
            packed[base + x * 4u + c] = word_of(out[c]);
        }
    } else if (CHANNELS == 2u) {
        packed[base + x * 2u] = word_of(out[0]);
        packed[base + x * 2u + 1u] = word_of(out[3]);
    } else {
        packed[base + x] = word_of(out[0]);
    }
}
