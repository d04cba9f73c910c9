//! include mip_common.wgsl
//! default OUT_FORMAT rgba8unorm
// One mip level: filter a source level into a linear-light rgba32float work level.
//
// The source is either the base texture (level 0, any float/unorm format: decoded here
// to linear light, canonical rgba, and premultiplied for weighted alpha) or an earlier
// work level (already in that form). Box is the exact area average: along each axis,
// destination texel x of a dimension going from s to d texels covers the source
// interval [x*s/d, (x+1)*s/d), and source texel t weighs its overlap with it, computed
// in integers scaled by d. Kaiser, Lanczos and triangle are separable kernels scaled by the
// ratio s/d, normalized by the sum of the weights used, with --wrap deciding taps outside the
// source; their weights come from the CPU (ktab), so the shader evaluates no kernel. Where a
// level's rows fit, tile_main / tile_direct filter by tiles, x then y.
//
// Work-level encoding, weighted alpha: texels with a > 0 hold (rgb * a, a); texels with
// a == 0 hold (rgb, 0), so colour under fully transparent texels survives.

//
// main_direct writes the final value straight into a storage-capable texture of the level's
// format (the chain then copies texture to texture), the fastest path.
// With FUSED the same invocation (main) also encodes its texel into the format's bytes (formats of
// 4 or more bytes per texel: whole u32 words) in the padded copy buffer, so no pack pass
// has to read the work level again; STORE_WORK is off for levels no later level reads.
// (mip_common.wgsl, prepended by the loader, has CHANNELS, WEIGHTED, NORMAL and the encoding.)

override SRC_IS_BASE: bool = true;
override FILTER: u32 = 0u;           // the code of gputex/mips/filters.py: 0 box, 1 kaiser, 2 lanczos, 3 triangle
override WRAP: u32 = 0u;             // 0 clamp, 1 repeat, 2 mirror
override FUSED: bool = false;
override STORE_WORK: bool = true;

struct Params {
    src_size: vec2<u32>,
    dst_size: vec2<u32>,
    words_per_row: u32,
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var dst: texture_storage_2d<rgba32float, write>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read_write> packed: array<u32>;
// main_direct only: the level itself (a storage-capable texture; the loader names its format)
@group(0) @binding(4) var out_tex: texture_storage_2d<OUT_FORMAT, write>;
// SPLIT_PLAIN only (1x1 stand-ins otherwise): the plain colour of the source and of this level
@group(0) @binding(5) var src_plain: texture_2d<f32>;
@group(0) @binding(6) var dst_plain: texture_storage_2d<rgba32float, write>;
// Kernel filters (FILTER > 0; a stand-in otherwise): each axis's taps and weights, made on the CPU
// in float64 (filters.kernel_table): words 0-1 the taps a destination texel has along x and y,
// word 2 where y's rows start; x's rows from word 4.
@group(0) @binding(7) var<storage, read> ktab: array<u32>;

fn fetch(p: vec2<i32>) -> vec4<f32> {
    let v = textureLoad(src, p, 0);
    if (!SRC_IS_BASE) {
        return v;
    }
    if (NORMAL) {
        if (CHANNELS == 2u) {
            let xy = v.rg * 2.0 - vec2<f32>(1.0);
            return vec4<f32>(xy, sqrt(max(0.0, 1.0 - dot(xy, xy))), 1.0);
        }
        return vec4<f32>(v.rgb * 2.0 - vec3<f32>(1.0), select(1.0, v.a, CHANNELS == 4u));
    }
    return canonical(v);
}

// t mod n in [0, n) using only non-negative operands of % (the remainder of a negative
// operand differed between drivers in practice).
fn pos_mod(t: i32, n: i32) -> i32 {
    if (t >= 0) {
        return t % n;
    }
    return t + ((n - 1 - t) / n) * n;
}

fn wrap_index(t: i32, n: i32) -> i32 {
    if (WRAP == 1u) {
        return pos_mod(t, n);
    }
    if (WRAP == 2u) {
        let m = pos_mod(t, 2 * n);
        return select(m, 2 * n - 1 - m, m >= n);
    }
    return clamp(t, 0, n - 1);
}

// A kernel filter's row of an axis in ktab (axis 0: x, 1: y) for destination texel x: its first
// tap, then its weights (filters.axis_words).
fn krow(axis: u32, x: u32) -> u32 {
    if (axis == 0u) {
        return 4u + x * (ktab[0] + 1u);
    }
    return ktab[2] + x * (ktab[1] + 1u);
}

// Taps [first, last) along one axis (0: x, 1: y) for destination texel x (s source, d destination
// texels).
fn taps(axis: u32, x: u32, s: u32, d: u32) -> vec2<i32> {
    if (FILTER == 0u) {
        return vec2<i32>(i32((x * s) / d), i32(((x + 1u) * s + d - 1u) / d));
    }
    let first = bitcast<i32>(ktab[krow(axis, x)]);
    return vec2<i32>(first, first + i32(ktab[axis]));
}

fn weight(axis: u32, t: i32, x: u32, s: u32, d: u32) -> f32 {
    if (FILTER == 0u) {
        let tu = u32(t);
        let lo = max(tu * d, x * s);
        let hi = min((tu + 1u) * d, (x + 1u) * s);
        return f32(hi - lo);
    }
    let row = krow(axis, x);
    return bitcast<f32>(ktab[row + 1u + u32(t - bitcast<i32>(ktab[row]))]);
}

// Plain (not premultiplied) linear colour of a source texel, for SPLIT_PLAIN.
fn fetch_plain(p: vec2<i32>) -> vec3<f32> {
    if (!SRC_IS_BASE) {
        return textureLoad(src_plain, p, 0).rgb;
    }
    return decoded(textureLoad(src, p, 0)).rgb;
}

// SPLIT_PLAIN: premultiplied rgba sums (a texel with alpha 0 adds nothing) and plain rgb sums,
// both normalized; the plain colour is stored for the next level.
fn reduce_split(gid: vec2<u32>) -> vec4<f32> {
    let sx = prm.src_size.x;
    let sy = prm.src_size.y;
    let rx = taps(0u, gid.x, sx, prm.dst_size.x);
    let ry = taps(1u, gid.y, sy, prm.dst_size.y);
    var acc = vec4<f32>(0.0);
    var plain = vec3<f32>(0.0);
    var wsum = 0.0;
    for (var ty = ry.x; ty < ry.y; ty++) {
        let wy = weight(1u, ty, gid.y, sy, prm.dst_size.y);
        let py = wrap_index(ty, i32(sy));
        for (var tx = rx.x; tx < rx.y; tx++) {
            let w = wy * weight(0u, tx, gid.x, sx, prm.dst_size.x);
            let p = vec2<i32>(wrap_index(tx, i32(sx)), py);
            var v = fetch(p);
            if (SRC_IS_BASE && v.a <= 0.0) {
                v = vec4<f32>(0.0);  // fetch keeps the colour of a = 0 texels; premultiplied it is 0
            }
            acc += w * v;
            plain += w * fetch_plain(p);
            wsum += w;
        }
    }
    let pm = acc / wsum;
    return split_result(gid, pm, plain / wsum, STORE_WORK);
}

// SPLIT_PLAIN: a texel's premultiplied and plain work values stored (``store``) for the next level,
// and the value to finalize: the premultiplied one where alpha > 0, else the plain colour.
fn split_result(gid: vec2<u32>, pm: vec4<f32>, pl: vec3<f32>, store: bool) -> vec4<f32> {
    if (store) {
        textureStore(dst, vec2<i32>(gid), pm);
        textureStore(dst_plain, vec2<i32>(gid), vec4<f32>(pl, 0.0));
    }
    if (pm.a > 0.0) {
        return pm;
    }
    return vec4<f32>(pl, pm.a);  // finalize takes rgb as is where alpha <= 0
}

fn reduce_texel(gid: vec2<u32>) -> vec4<f32> {
    let sx = prm.src_size.x;
    let sy = prm.src_size.y;
    let rx = taps(0u, gid.x, sx, prm.dst_size.x);
    let ry = taps(1u, gid.y, sy, prm.dst_size.y);
    // Sums go row by row, and rows are added with Kahan compensation: a base footprint
    // can hold 10^5 texels, and a naive float32 running sum would drift by ~0.3 LSB at 16 bits.
    var acc = vec4<f32>(0.0);
    var acc_c = vec4<f32>(0.0);
    var clear_rgb = vec3<f32>(0.0);
    var clear_w = 0.0;
    var wsum = 0.0;
    for (var ty = ry.x; ty < ry.y; ty++) {
        let wy = weight(1u, ty, gid.y, sy, prm.dst_size.y);
        if (wy == 0.0) {
            continue;
        }
        let py = wrap_index(ty, i32(sy));
        var row = vec4<f32>(0.0);
        var row_clear = vec3<f32>(0.0);
        var row_clear_w = 0.0;
        var row_w = 0.0;
        for (var tx = rx.x; tx < rx.y; tx++) {
            let w = weight(0u, tx, gid.x, sx, prm.dst_size.x);
            if (w == 0.0) {
                continue;
            }
            let v = fetch(vec2<i32>(wrap_index(tx, i32(sx)), py));
            if (WEIGHTED && !NORMAL && v.a <= 0.0) {
                row_clear += w * v.rgb;
                row_clear_w += w;
            } else {
                row += w * v;
            }
            row_w += w;
        }
        let y = wy * row - acc_c;
        let t = acc + y;
        acc_c = (t - acc) - y;
        acc = t;
        clear_rgb += wy * row_clear;
        clear_w += wy * row_clear_w;
        wsum += wy * row_w;
    }
    var out = acc / wsum;
    if (WEIGHTED && !NORMAL) {
        if (acc.a <= 0.0) {
            // no coverage at all: the plain average of the colour
            out = vec4<f32>((clear_rgb + acc.rgb) / wsum, 0.0);
        }
    }
    return out;
}

// The texel's work value, stored for later levels where one reads this level.
fn reduce_store(gid: vec2<u32>) -> vec4<f32> {
    if (SPLIT_PLAIN) {
        return reduce_split(gid);  // stores the premultiplied and the plain work values itself
    }
    let out = reduce_texel(gid);
    if (STORE_WORK) {
        textureStore(dst, vec2<i32>(gid), out);
    }
    return out;
}

// The texel's bytes into the copy buffer (FUSED).
fn pack_texel(gid: vec2<u32>, out: vec4<f32>) {
    if (FUSED) {
        let v = finalize(out, 1.0);
        let words = BPT / 4u;
        for (var part = 0u; part < words; part++) {
            packed[gid.y * prm.words_per_row + gid.x * words + part] = texel_word(v, part);
        }
    }
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.dst_size.y) {
        return;
    }
    pack_texel(gid.xy, reduce_store(gid.xy));
}

// Kernel filters, separable by tiles (tile_main, tile_direct): a workgroup makes 8 x 8 texels. It
// first filters along x every source row its texels' y taps reach (at most TILE_SPAN rows from the
// tile's first y tap: filters.tile_rows on the CPU says when a level fits), for each of its 8
// columns, into workgroup memory; then each texel filters those row sums along y. At 2:1 a texel's
// 13 x 13 loads become ~44 (13 x taps for 27 rows, shared by a column's 8 texels) and 13 sums of
// row sums. The same weights and normalization as reduce_split and reduce_texel (without
// reduce_texel's Kahan sums, which only box footprints need), summed in another order. Weighted
// alpha with a kernel filter always sets SPLIT_PLAIN (mips/chain.py, transform.py), so the other
// branch never meets WEIGHTED (reduce_texel's colour under alpha 0).
const TILE_SPAN: u32 = 32u;
var<workgroup> row_acc: array<vec4<f32>, 256>;    // TILE_SPAN rows x 8 columns
var<workgroup> row_plain: array<vec4<f32>, 256>;  // plain rgb (SPLIT_PLAIN) and the row's weight sum

fn tile_value(lid: vec2<u32>, wid: vec2<u32>) -> vec4<f32> {
    let sx = i32(prm.src_size.x);
    let sy = i32(prm.src_size.y);
    let x0 = wid.x * 8u;
    let y0 = wid.y * 8u;
    let kx = ktab[0];
    let ky = ktab[1];
    let ty0 = bitcast<i32>(ktab[krow(1u, y0)]);
    let last = min(y0 + 7u, prm.dst_size.y - 1u);
    let rows = u32(bitcast<i32>(ktab[krow(1u, last)]) + i32(ky) - ty0);
    for (var item = lid.y * 8u + lid.x; item < rows * 8u; item += 64u) {
        let py = wrap_index(ty0 + i32(item / 8u), sy);
        let row = krow(0u, min(x0 + item % 8u, prm.dst_size.x - 1u));
        let first = bitcast<i32>(ktab[row]);
        var acc = vec4<f32>(0.0);
        var plain = vec3<f32>(0.0);
        var wsum = 0.0;
        for (var k = 0u; k < kx; k++) {
            let w = bitcast<f32>(ktab[row + 1u + k]);
            if (w == 0.0) {
                continue;
            }
            let p = vec2<i32>(wrap_index(first + i32(k), sx), py);
            if (SPLIT_PLAIN && SRC_IS_BASE) {  // fetch and fetch_plain from one load
                let c = decoded(textureLoad(src, p, 0));
                if (c.a > 0.0) {
                    acc += w * vec4<f32>(c.rgb * c.a, c.a);
                }
                plain += w * c.rgb;
            } else {
                acc += w * fetch(p);
                if (SPLIT_PLAIN) {
                    plain += w * fetch_plain(p);
                }
            }
            wsum += w;
        }
        row_acc[item] = acc;
        row_plain[item] = vec4<f32>(plain, wsum);
    }
    workgroupBarrier();
    let row = krow(1u, min(y0 + lid.y, prm.dst_size.y - 1u));
    let skip = u32(bitcast<i32>(ktab[row]) - ty0);
    var acc = vec4<f32>(0.0);
    var plain = vec3<f32>(0.0);
    var wsum = 0.0;
    for (var k = 0u; k < ky; k++) {
        let wy = bitcast<f32>(ktab[row + 1u + k]);
        if (wy == 0.0) {
            continue;
        }
        let i = (skip + k) * 8u + lid.x;
        acc += wy * row_acc[i];
        let pw = row_plain[i];
        plain += wy * pw.xyz;
        wsum += wy * pw.w;
    }
    let pm = acc / wsum;
    let gid = vec2<u32>(x0 + lid.x, y0 + lid.y);
    let inside = gid.x < prm.dst_size.x && gid.y < prm.dst_size.y;
    if (SPLIT_PLAIN) {
        return split_result(gid, pm, plain / wsum, STORE_WORK && inside);
    }
    if (STORE_WORK && inside) {
        textureStore(dst, vec2<i32>(gid), pm);
    }
    return pm;
}

@compute @workgroup_size(8, 8)
fn tile_main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let out = tile_value(lid.xy, wid.xy);
    let gid = wid.xy * 8u + lid.xy;
    if (gid.x < prm.dst_size.x && gid.y < prm.dst_size.y) {
        pack_texel(gid, out);
    }
}

// The final value, quantized here so the storage write's own conversion is exact.
fn storable(v: vec4<f32>) -> vec4<f32> {
    var c = vec4<f32>(component(v, 0u), component(v, 1u), 0.0, 1.0);
    if (CHANNELS == 4u) {
        c = v;  // rgba order: a bgra storage texture swizzles by itself
    }
    if (FMT == 0u) {
        return floor(clamp(c, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0 + vec4<f32>(0.5)) / 255.0;
    }
    if (FMT == 2u) {
        return vec4<f32>(unpack2x16float(f16_bits(c.x) | (f16_bits(c.y) << 16u)),
                         unpack2x16float(f16_bits(c.z) | (f16_bits(c.w) << 16u)));
    }
    if (FMT == 4u) {  // rgb10a2unorm (render path)
        let q = clamp(c, vec4<f32>(0.0), vec4<f32>(1.0));
        return vec4<f32>(floor(q.rgb * 1023.0 + vec3<f32>(0.5)) / 1023.0, floor(q.a * 3.0 + 0.5) / 3.0);
    }
    return c;
}

@compute @workgroup_size(8, 8)
fn main_direct(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.dst_size.y) {
        return;
    }
    textureStore(out_tex, vec2<i32>(gid.xy), storable(finalize(reduce_store(gid.xy), 1.0)));
}

@compute @workgroup_size(8, 8)
fn tile_direct(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let out = tile_value(lid.xy, wid.xy);
    let gid = wid.xy * 8u + lid.xy;
    if (gid.x < prm.dst_size.x && gid.y < prm.dst_size.y) {
        textureStore(out_tex, vec2<i32>(gid), storable(finalize(out, 1.0)));
    }
}

// Render path, for formats that are renderable but not storage-capable (r8unorm, rg8unorm,
// rgb10a2unorm, r16float, rg16float, bgra8 without bgra8unorm-storage): a full-screen triangle
// over the level, each fragment one texel, written by the colour attachment. The value is
// quantized in storable() first, so the attachment's own conversion is exact.
@vertex
fn vs_level(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
    let corner = vec2<f32>(f32((i << 1u) & 2u), f32(i & 2u));
    return vec4<f32>(corner * 2.0 - vec2<f32>(1.0), 0.0, 1.0);
}

@fragment
fn fs_level(@builtin(position) p: vec4<f32>) -> @location(0) vec4<f32> {
    return storable(finalize(reduce_store(vec2<u32>(p.xy)), 1.0));
}
