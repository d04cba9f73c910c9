//! include mip_pack64.wgsl
// The float64 kernel chains' output of one texel (mip_exact_kernel.wgsl, mip_exact_sep.wgsl):
// its premultiplied and plain sums kept in `next` for the level after, then its value (weighted
// alpha divided out, alpha clamped, sRGB encoded) packed into the level's words in `packed`.
// The including shader declares `next`, `packed`, `prm.words_per_row` and the constants FMT,
// CHANNELS, BGRA, WEIGHTED and ENCODE_SRGB.

fn byte_of(c: f64) -> u32 {
    return u32(floor(min(max(c, 0.0), 1.0) * 255.0 + 0.5));
}

fn finish_texel(x: u32, y: u32, width: u32, pm: array<f64, 4>, pl: array<f64, 3>) {
    let k = (y * width + x) * 8u;
    next[k] = pm[0];
    next[k + 1u] = pm[1];
    next[k + 2u] = pm[2];
    next[k + 3u] = pm[3];
    next[k + 4u] = pl[0];
    next[k + 5u] = pl[1];
    next[k + 6u] = pl[2];
    var out = pm;
    if (WEIGHTED) {
        if (pm[3] > 0.0) {
            out = array<f64, 4>(pm[0] / pm[3], pm[1] / pm[3], pm[2] / pm[3], pm[3]);
        } else {
            out = array<f64, 4>(pl[0], pl[1], pl[2], pm[3]);
        }
    }
    out[3] = min(max(out[3], 0.0), 1.0);
    if (ENCODE_SRGB) {
        out[0] = encode1(out[0]);
        out[1] = encode1(out[1]);
        out[2] = encode1(out[2]);
    }
    let base = y * prm.words_per_row;
    if (FMT == 0u) {
        var r = out[0];
        var b = out[2];
        if (BGRA) {
            r = out[2];
            b = out[0];
        }
        packed[base + x] = byte_of(r) | (byte_of(out[1]) << 8u) | (byte_of(b) << 16u) | (byte_of(out[3]) << 24u);
        return;
    }
    pack_words(base, x, out);
}
