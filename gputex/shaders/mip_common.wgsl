// Shared by mip_reduce.wgsl and mip_pack.wgsl (the loader puts this file first):
// how a linear-light work value becomes the texture format's bits. Quantization is
// round-to-nearest done here (not left to the hardware), and f16 is rounded to nearest
// even in integer arithmetic.

override FMT: u32 = 0u;        // 0 unorm8, 1 unorm16, 2 float16, 3 float32, 4 rgb10a2unorm
override CHANNELS: u32 = 4u;   // components the texture holds: 1, 2 or 4
override BPT: u32 = 4u;        // bytes per texel
override BGRA: bool = false;
override ENCODE_SRGB: bool = false;
override WEIGHTED: bool = true;
override NORMAL: bool = false;
// Kernels with weighted alpha: the premultiplied colour and the plain colour are filtered and
// chained separately (work levels hold premultiplied rgba, a second work texture the plain
// rgb), and a texel whose filtered alpha is <= 0 takes the plain colour. (Box weights are never
// negative; there the single work level's encoding of mip_reduce.wgsl is equivalent and cheaper.)
override SPLIT_PLAIN: bool = false;

override DECODE_SRGB: bool = false;  // the base holds sRGB data in a non-sRGB format

fn srgb_to_linear(c: vec3<f32>) -> vec3<f32> {
    let lo = c / 12.92;
    let hi = pow((c + vec3<f32>(0.055)) / 1.055, vec3<f32>(2.4));
    return select(hi, lo, c <= vec3<f32>(0.04045));
}

// A base texel as linear rgba (grey in rgb, alpha in a), not premultiplied.
fn decoded(v: vec4<f32>) -> vec4<f32> {
    var c = v;
    if (CHANNELS == 1u) {
        c = vec4<f32>(v.rrr, 1.0);
    } else if (CHANNELS == 2u) {
        c = vec4<f32>(v.rrr, v.g);
    }
    if (DECODE_SRGB) {
        c = vec4<f32>(srgb_to_linear(c.rgb), c.a);
    }
    return c;
}

// A base texel as canonical linear rgba (:decoded), premultiplied where alpha weighting applies
// and alpha > 0 (texels with alpha 0 keep their colour).
fn canonical(v: vec4<f32>) -> vec4<f32> {
    var c = decoded(v);
    if (WEIGHTED && c.a > 0.0) {
        c = vec4<f32>(c.rgb * c.a, c.a);
    }
    return c;
}

fn linear_to_srgb(c: vec3<f32>) -> vec3<f32> {
    let x = clamp(c, vec3<f32>(0.0), vec3<f32>(1.0));
    let lo = x * 12.92;
    let hi = 1.055 * pow(x, vec3<f32>(1.0 / 2.4)) - vec3<f32>(0.055);
    return select(hi, lo, x <= vec3<f32>(0.0031308));
}

// Among the 8 floor/ceil roundings of an encoded unit normal, the one whose decoded length
// is closest to 1 (starting from round-to-nearest): every component stays within 1 LSB.
fn best_fit_normal(n: vec3<f32>, bits: u32) -> vec3<f32> {
    let m = f32((1u << bits) - 1u);
    let e = (n * 0.5 + vec3<f32>(0.5)) * m;
    let lo = floor(e);
    var best = clamp(floor(e + vec3<f32>(0.5)), vec3<f32>(0.0), vec3<f32>(m));
    var best_err = abs(length(best / m * 2.0 - vec3<f32>(1.0)) - 1.0);
    for (var i = 0u; i < 8u; i++) {
        let step = vec3<f32>(f32(i & 1u), f32((i >> 1u) & 1u), f32((i >> 2u) & 1u));
        let c = clamp(lo + step, vec3<f32>(0.0), vec3<f32>(m));
        let err = abs(length(c / m * 2.0 - vec3<f32>(1.0)) - 1.0);
        if (err < best_err - 1e-7) {
            best = c;
            best_err = err;
        }
    }
    return best / m;
}

// Final value of a work texel, in canonical rgba (grey in rgb, alpha in a), ready to quantize.
fn finalize(v: vec4<f32>, alpha_scale: f32) -> vec4<f32> {
    if (NORMAL) {
        let len = length(v.xyz);
        let n = select(vec3<f32>(0.0, 0.0, 1.0), v.xyz / len, len > 1e-20);
        var enc = n * 0.5 + vec3<f32>(0.5);
        if (CHANNELS == 4u && (FMT == 0u || FMT == 1u || FMT == 4u)) {
            enc = best_fit_normal(n, select(select(8u, 16u, FMT == 1u), 10u, FMT == 4u));
        }
        return vec4<f32>(enc, clamp(v.a * alpha_scale, 0.0, 1.0));
    }
    var rgb = v.rgb;
    if (WEIGHTED && v.a > 0.0) {
        rgb = v.rgb / v.a;
    }
    var a = v.a * alpha_scale;
    if (FMT != 2u && FMT != 3u) {
        rgb = clamp(rgb, vec3<f32>(0.0), vec3<f32>(1.0));
        a = clamp(a, 0.0, 1.0);
    }
    if (ENCODE_SRGB) {
        rgb = linear_to_srgb(rgb);
    }
    return vec4<f32>(rgb, a);
}

fn component(v: vec4<f32>, j: u32) -> f32 {
    if (CHANNELS == 1u) {
        return v.r;
    }
    if (CHANNELS == 2u) {
        if (NORMAL) {
            return select(v.y, v.x, j == 0u);
        }
        return select(v.a, v.r, j == 0u);
    }
    if (BGRA && j != 3u) {
        return v[2u - j];
    }
    return v[j];
}

fn quant(x: f32, bits: u32) -> u32 {
    let m = f32((1u << bits) - 1u);
    return u32(floor(clamp(x, 0.0, 1.0) * m + 0.5));
}

// f32 -> f16 bits, round to nearest even (finite inputs; overflow -> inf).
fn f16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let sign = (b >> 16u) & 0x8000u;
    let e = i32((b >> 23u) & 0xffu) - 127 + 15;
    var mant = b & 0x7fffffu;
    if (((b >> 23u) & 0xffu) == 0xffu) {
        return sign | 0x7c00u | select(0u, 0x200u, mant != 0u);
    }
    if (e >= 31) {
        return sign | 0x7c00u;
    }
    if (e <= 0) {
        if (e < -10) {
            return sign;
        }
        mant = mant | 0x800000u;
        let shift = u32(14 - e);
        let half = 1u << (shift - 1u);
        let rest = mant & ((1u << shift) - 1u);
        var h = mant >> shift;
        if (rest > half || (rest == half && (h & 1u) == 1u)) {
            h += 1u;
        }
        return sign | h;
    }
    var h = (u32(e) << 10u) | (mant >> 13u);
    let rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) {
        h += 1u; // may carry into the exponent: still correct (up to inf)
    }
    return sign | h;
}

// Bits of component j in the format's encoding (<= 32 bits).
fn comp_bits(v: vec4<f32>, j: u32) -> u32 {
    let c = component(v, j);
    switch FMT {
        case 0u: { return quant(c, 8u); }
        case 1u: { return quant(c, 16u); }
        case 2u: { return f16_bits(c); }
        default: { return bitcast<u32>(c); }
    }
}

fn comp_width() -> u32 {
    switch FMT {
        case 0u: { return 8u; }
        case 1u, 2u: { return 16u; }
        default: { return 32u; }
    }
}

// Word `part` of texel x (formats of >= 4 bytes per texel).
fn texel_word(v: vec4<f32>, part: u32) -> u32 {
    if (FMT == 4u) {
        return quant(v.r, 10u) | (quant(v.g, 10u) << 10u) | (quant(v.b, 10u) << 20u) | (quant(v.a, 2u) << 30u);
    }
    let w = comp_width();
    let per_word = 32u / w;
    var word = 0u;
    for (var k = 0u; k < per_word; k++) {
        word |= comp_bits(v, part * per_word + k) << (k * w);
    }
    return word;
}

// All bits of a texel smaller than 4 bytes.
fn small_texel(v: vec4<f32>) -> u32 {
    let w = comp_width();
    var bits = 0u;
    for (var j = 0u; j < CHANNELS; j++) {
        bits |= comp_bits(v, j) << (j * w);
    }
    return bits;
}

