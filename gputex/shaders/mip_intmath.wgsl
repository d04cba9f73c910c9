// Exact integer arithmetic shared by the integer box mips (mip_int.wgsl, the multi-pass chain,
// and mip_spd.wgsl, the single-pass one; included by both with `//! include`): 128-bit unsigned
// integers as vec4<u32> words, and the sRGB code tables. The including shader declares the
// BITS/SRGB overrides and the `tables` buffer these read. The helpers are written out word by
// word: a vector or array indexed by a loop variable can live in local memory on some compilers.

alias Big = vec4<u32>;

fn mul32(a: u32, b: u32) -> vec2<u32> {
    let p00 = (a & 0xffffu) * (b & 0xffffu);
    let mid = (a & 0xffffu) * (b >> 16u) + (p00 >> 16u);
    let mid2 = (a >> 16u) * (b & 0xffffu) + (mid & 0xffffu);
    return vec2<u32>((mid2 << 16u) | (p00 & 0xffffu), (a >> 16u) * (b >> 16u) + (mid >> 16u) + (mid2 >> 16u));
}

fn carry(s: u32, a: u32) -> u32 {
    return select(0u, 1u, s < a);
}

fn add(a: Big, b: Big) -> Big {
    let x = a.x + b.x;
    let c0 = carry(x, a.x);
    let y0 = a.y + b.y;
    let y = y0 + c0;
    let c1 = carry(y0, a.y) + carry(y, y0);
    let z0 = a.z + b.z;
    let z = z0 + c1;
    let c2 = carry(z0, a.z) + carry(z, z0);
    return Big(x, y, z, a.w + b.w + c2);
}

// L * b: L < 2^32 at 8 bits (one multiply), < 2^41 at 16; b < 2^31
fn mul_lin(l: Big, b: u32) -> Big {
    let lo = mul32(l.x, b);
    if (BITS == 8u) {
        return Big(lo.x, lo.y, 0u, 0u);
    }
    let hi = mul32(l.y, b);
    let mid = lo.y + hi.x;
    return Big(lo.x, mid, hi.y + carry(mid, lo.y), 0u);
}

fn mul(a: Big, b: u32) -> Big {
    let p0 = mul32(a.x, b);
    let p1 = mul32(a.y, b);
    let p2 = mul32(a.z, b);
    let p3 = mul32(a.w, b);
    let y = p1.x + p0.y;
    let c1 = p1.y + carry(y, p1.x);
    let z = p2.x + c1;
    let c2 = p2.y + carry(z, p2.x);
    return Big(p0.x, y, z, p3.x + c2);
}

fn ge(a: Big, b: Big) -> bool {
    if (a.w != b.w) {
        return a.w > b.w;
    }
    if (a.z != b.z) {
        return a.z > b.z;
    }
    if (a.y != b.y) {
        return a.y > b.y;
    }
    return a.x >= b.x;
}

fn nonzero(a: Big) -> bool {
    return any(a != Big(0u));
}

fn approx(a: Big) -> f32 {
    return ((f32(a.w) * 4294967296.0 + f32(a.z)) * 4294967296.0 + f32(a.y)) * 4294967296.0 + f32(a.x);
}

fn top() -> u32 {
    return (1u << BITS) - 1u;
}

// L(code): the code (linear data) or its sRGB decode in units of 2^-F (F = 31 at 8 bits, 40 at 16)
fn lin(c: u32, srgb: bool) -> Big {
    if (!srgb) {
        return Big(c, 0u, 0u, 0u);
    }
    return Big(tables[2u * c], tables[2u * c + 1u], 0u, 0u);
}

fn encode(x: f32) -> f32 {
    if (x <= 0.0031308) {
        return x * 12.92;
    }
    return 1.055 * pow(x, 1.0 / 2.4) - 0.055;
}

fn srgb_encode3(c: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(encode(c.x), encode(c.y), encode(c.z));
}

// The codes of base texel p (r, g, b, a; grey and its alpha in r and a) as stored: the texture's
// values read back to codes (an sRGB view's decode undone), from the including shader's `src`
fn load_codes(p: vec2<i32>) -> vec4<u32> {
    return texel_codes(textureLoad(src, p, 0));
}

// The codes of a texel's loaded values (load_codes)
fn texel_codes(t: vec4<f32>) -> vec4<u32> {
    var v = t;
    if (SRGB_VIEW) {
        v = vec4<f32>(srgb_encode3(clamp(v.rgb, vec3<f32>(0.0), vec3<f32>(1.0))), v.a);
    }
    if (CHANNELS == 2u) {
        v = vec4<f32>(v.r, 0.0, 0.0, v.g);
    }
    return vec4<u32>(floor(clamp(v, vec4<f32>(0.0), vec4<f32>(1.0)) * f32(top()) + vec4<f32>(0.5)));
}
