// Shared by mip_exact.wgsl and mip_exact_kernel.wgsl (the loader puts this file first):
// float64 sRGB transfer functions and the exact value of a stored code. WGSL has no float64
// pow: float32 pow is refined by one Newton step in float64, on t^5 = u^12 for the decode
// (t = u^2.4) and on t^12 = x^5 for the encode (t = x^(5/12)); from float32's ~1e-6 one step
// reaches ~1e-12.

override FMT: u32 = 1u;             // 0 unorm8 (kernels only, 4 channels), 1 unorm16, 3 float32
override SRGB_FORMAT: bool = false; // an -srgb texture: loads come back linear; the codes are recovered
override CHANNELS: u32 = 4u;        // 1, 2 (grey + alpha) or 4
override DECODE_SRGB: bool = false; // sRGB data: decoded to linear light

fn decode1(x: f64) -> f64 {
    if (x <= 0.04045) {
        return x / 12.92;
    }
    let u = (x + 0.055) / 1.055;
    var t = f64(pow(f32(u), 2.4));
    let u2 = u * u;
    let u4 = u2 * u2;
    let u12 = u4 * u4 * u4;
    let t4 = t * t * t * t;
    t = t - (t4 * t - u12) / (5.0 * t4);
    return t;
}

fn encode1(x0: f64) -> f64 {
    let x = min(max(x0, 0.0), 1.0);
    if (x <= 0.0031308) {
        return x * 12.92;
    }
    var t = f64(pow(f32(x), 1.0 / 2.4));
    let x5 = x * x * x * x * x;
    let t2 = t * t;
    let t4 = t2 * t2;
    let t11 = t4 * t4 * t2 * t;
    t = t - (t11 * t - x5) / (12.0 * t11);
    return 1.055 * t - 0.055;
}

fn srgb_encode32(c: f32) -> f32 {
    if (c <= 0.0031308) {
        return c * 12.92;
    }
    return 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

// The value a colour component stores, exactly (unorm codes are k / (2^bits - 1)).
fn exact_value(c: f32) -> f64 {
    if (FMT == 0u) {
        if (SRGB_FORMAT) {
            return f64(round(srgb_encode32(c) * 255.0)) / 255.0;
        }
        return f64(round(c * 255.0)) / 255.0;
    }
    if (FMT == 1u) {
        return f64(round(c * 65535.0)) / 65535.0;
    }
    return f64(c);
}

// A base texel as canonical float64 rgba in linear light (grey in rgb, alpha in a).
fn canonical64(v: vec4<f32>) -> array<f64, 4> {
    var c: array<f64, 4>;
    if (CHANNELS == 4u) {
        var a = exact_value(v.a);
        if (FMT == 0u) {
            a = f64(round(v.a * 255.0)) / 255.0;  // alpha is never sRGB-encoded
        }
        c = array<f64, 4>(exact_value(v.r), exact_value(v.g), exact_value(v.b), a);
    } else if (CHANNELS == 2u) {
        let g = exact_value(v.r);
        c = array<f64, 4>(g, g, g, exact_value(v.g));
    } else {
        let g = exact_value(v.r);
        c = array<f64, 4>(g, g, g, 1.0);
    }
    if (DECODE_SRGB) {
        c[0] = decode1(c[0]);
        c[1] = decode1(c[1]);
        c[2] = decode1(c[2]);
    }
    return c;
}
