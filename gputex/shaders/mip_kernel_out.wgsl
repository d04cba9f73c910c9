//! include mip_pack64.wgsl
// The float64 kernel chains' output of one texel (mip_exact_kernel.wgsl, mip_exact_sep.wgsl):
// its premultiplied and plain sums kept in `next` for the level after, then its value (weighted
// alpha divided out, alpha clamped, sRGB encoded) packed into the level's words in `packed`.
// The including shader declares `next`, `packed`, `prm.words_per_row` and the constants FMT,
// CHANNELS, BGRA, WEIGHTED and ENCODE_SRGB, and `fn out_plane() -> u32` (the level's texel count).
//
// `next` (and the level after's `prev`) hold 7 float64 values a texel: premultiplied rgba and
// plain rgb. With SOA each value has a plane of its own (value c of texel i at c * plane + i),
// so that invocations filtering neighbouring texels read neighbouring words; else 8 words a
// texel side by side (i * 8 + c). Without WEIGHTED only the first 4 are kept.

override SOA: bool = false;

fn value_at(i: u32, c: u32, plane: u32) -> u32 {
    if (SOA) {
        return c * plane + i;
    }
    return i * 8u + c;
}

// A code of `top` + 1 steps, rounded to nearest, and to the even code within TIE of a midpoint:
// a dyadic filter (the triangle at 2:1) puts values exactly on midpoints, where the float64 sums'
// last bits (their order, the adapter's contraction into fused multiply-adds: ~1e-13 of a step
// at 8 bits, ~1e-10 at 16) would decide, so lavapipe and the H200 rounded such ties differently.
const TIE: f64 = 1e-9;

fn code_of64(c: f64, top: f64) -> u32 {
    let t = min(max(c, 0.0), 1.0) * top;
    let lo = floor(t);
    if (abs(t - lo - 0.5) < TIE) {
        return u32(lo) + (u32(lo) & 1u);
    }
    return u32(floor(t + 0.5));
}

fn byte_of(c: f64) -> u32 {
    return code_of64(c, 255.0);
}

fn finish_texel(x: u32, y: u32, width: u32, pm: array<f64, 4>, pl: array<f64, 3>) {
    let k = y * width + x;
    let plane = out_plane();
    next[value_at(k, 0u, plane)] = pm[0];
    next[value_at(k, 1u, plane)] = pm[1];
    next[value_at(k, 2u, plane)] = pm[2];
    next[value_at(k, 3u, plane)] = pm[3];
    if (WEIGHTED) {  // (else the plain colour is never read: its sums are dead code)
        next[value_at(k, 4u, plane)] = pl[0];
        next[value_at(k, 5u, plane)] = pl[1];
        next[value_at(k, 6u, plane)] = pl[2];
    }
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
    if (FMT == 1u) {  // 16-bit codes: ties to even, as byte_of's (pack_words writes k / 65535 as k)
        out = array<f64, 4>(f64(code_of64(out[0], 65535.0)) / 65535.0, f64(code_of64(out[1], 65535.0)) / 65535.0,
                            f64(code_of64(out[2], 65535.0)) / 65535.0, f64(code_of64(out[3], 65535.0)) / 65535.0);
    }
    pack_words(base, x, out);
}
