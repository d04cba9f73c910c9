//! include mip_f64.wgsl
//! include mip_pack64.wgsl
//! include mip_box.wgsl
// One mip level of a 16-bit unorm or 32-bit float texture, box filter, in float64: the result
// is the exactly rounded area average (what a float64 reference computes), not float32's
// approximation of it. Every level reads the base (no float32 work levels in between).
// Needs the device feature shader-f64; used for rg/rgba16unorm and r/rg/rgba32float.
//
// sRGB decode and encode: float32 pow (the only pow there is), refined by one Newton step in
// float64 on t^5 = u^12 (decode, t = u^2.4) or t^12 = x^5 (encode, t = x^(5/12)): the
// float32 start is within ~1e-6, one step takes it to ~1e-12.
//
// Large footprints are split into chunks of source rows summed by separate invocations
// (z = chunk; float64 partial sums in a buffer) and then added up by `finish`: no invocation
// runs more than ~32k loop iterations (llvmpipe silently stops an invocation's loops after
// 65535 iterations in all; a 1x1 level of a 1000x999 base would loop a million times), and
// the few texels of the deep levels still spread over many invocations.

override WEIGHTED: bool = true;    // colour averaged by alpha
override ENCODE_SRGB: bool = false;

struct Params {
    src_size: vec2<u32>,
    dst_size: vec2<u32>,
    words_per_row: u32,
    row0: u32,
    rows: u32,
    chunks: u32,      // chunks of footprint rows, summed in parallel (1: the whole footprint)
    chunk_rows: u32,  // footprint rows per chunk
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read_write> partial: array<f64>;  // 8 per texel: acc rgba, clear rgb, w

// canonical rgba in f64: grey in rgb, alpha in a
fn fetch(p: vec2<i32>) -> array<f64, 4> {
    return canonical64(textureLoad(src, p, 0));
}

fn clamp01(x: f64) -> f64 {
    return min(max(x, 0.0), 1.0);
}

struct Sums {
    acc: array<f64, 4>,
    clear: array<f64, 3>,
    w: f64,
}

// Box sums of destination texel (x, y) over footprint rows [r0, r1) (clipped to the footprint).
fn sums(x: u32, y: u32, chunk: u32) -> Sums {
    let s = prm.src_size;
    let d = prm.dst_size;
    let span = box_span(x, y, chunk);
    var out: Sums;
    out.acc = array<f64, 4>(0.0, 0.0, 0.0, 0.0);
    out.clear = array<f64, 3>(0.0, 0.0, 0.0);
    out.w = 0.0;
    for (var ty = span.z; ty < span.w; ty++) {
        let wy = f64(box_weight(ty, y, s.y, d.y));
        for (var tx = span.x; tx < span.y; tx++) {
            let w = wy * f64(box_weight(tx, x, s.x, d.x));
            let c = fetch(vec2<i32>(i32(tx), i32(ty)));
            if (WEIGHTED && c[3] <= 0.0) {
                out.clear[0] += w * c[0];
                out.clear[1] += w * c[1];
                out.clear[2] += w * c[2];
            } else if (WEIGHTED) {
                out.acc[0] += w * c[0] * c[3];
                out.acc[1] += w * c[1] * c[3];
                out.acc[2] += w * c[2] * c[3];
                out.acc[3] += w * c[3];
            } else {
                out.acc[0] += w * c[0];
                out.acc[1] += w * c[1];
                out.acc[2] += w * c[2];
                out.acc[3] += w * c[3];
            }
            out.w += w;
        }
    }
    return out;
}

// The final value from the sums, rounded once, written as the format's words.
fn store(x: u32, row: u32, t: Sums) {
    let acc = t.acc;
    let wsum = t.w;
    var out = array<f64, 4>(acc[0] / wsum, acc[1] / wsum, acc[2] / wsum, acc[3] / wsum);
    if (WEIGHTED) {
        if (acc[3] > 0.0) {
            out = array<f64, 4>(acc[0] / acc[3], acc[1] / acc[3], acc[2] / acc[3], acc[3] / wsum);
        } else {
            out = array<f64, 4>((t.clear[0] + acc[0]) / wsum, (t.clear[1] + acc[1]) / wsum,
                                (t.clear[2] + acc[2]) / wsum, 0.0);
        }
    }
    if (FMT == 1u) {
        out[0] = clamp01(out[0]);
        out[1] = clamp01(out[1]);
        out[2] = clamp01(out[2]);
        out[3] = clamp01(out[3]);
    }
    if (ENCODE_SRGB) {
        out[0] = encode1(out[0]);
        out[1] = encode1(out[1]);
        out[2] = encode1(out[2]);
    }
    pack_words(row * prm.words_per_row, x, out);
}

// One invocation per texel (chunks == 1), or per texel and chunk (z), partial sums kept.
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows || gid.z >= prm.chunks) {
        return;
    }
    let y = gid.y + prm.row0;
    let t = sums(gid.x, y, gid.z);
    if (prm.chunks == 1u) {
        store(gid.x, gid.y, t);
        return;
    }
    let slot = ((gid.y * prm.dst_size.x + gid.x) * prm.chunks + gid.z) * 8u;
    partial[slot] = t.acc[0];
    partial[slot + 1u] = t.acc[1];
    partial[slot + 2u] = t.acc[2];
    partial[slot + 3u] = t.acc[3];
    partial[slot + 4u] = t.clear[0];
    partial[slot + 5u] = t.clear[1];
    partial[slot + 6u] = t.clear[2];
    partial[slot + 7u] = t.w;
}

// Adds up the chunks of each texel (in chunk order) and stores it.
@compute @workgroup_size(8, 8)
fn finish(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows) {
        return;
    }
    var t: Sums;
    t.acc = array<f64, 4>(0.0, 0.0, 0.0, 0.0);
    t.clear = array<f64, 3>(0.0, 0.0, 0.0);
    t.w = 0.0;
    for (var k = 0u; k < prm.chunks; k++) {
        let slot = ((gid.y * prm.dst_size.x + gid.x) * prm.chunks + k) * 8u;
        t.acc[0] += partial[slot];
        t.acc[1] += partial[slot + 1u];
        t.acc[2] += partial[slot + 2u];
        t.acc[3] += partial[slot + 3u];
        t.clear[0] += partial[slot + 4u];
        t.clear[1] += partial[slot + 5u];
        t.clear[2] += partial[slot + 6u];
        t.w += partial[slot + 7u];
    }
    store(gid.x, gid.y, t);
}
