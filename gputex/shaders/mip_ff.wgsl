//! include mip_box.wgsl
// One box mip level of a float texture (r/rg/rgba32float, rg/rgba16float) without float64:
// float-float sums (a value is a pair of f32 whose sum carries ~48 bits) and one rounding
// decided by signs. The same arithmetic in numpy, operation for operation, is
// gputex/mips/floatfloat.py (the tests hold the two byte for byte); why it gives the same
// bytes on every adapter is its docstring: additions only, every product exact (factors cut
// into 12-bit halves by masking, so a fused multiply-add changes nothing), and no division
// that decides anything.
//
// Layout, chunks of footprint rows, Params and the `finish` pass are mip_exact.wgsl's; the
// partial sums are 8 float-float pairs a texel and chunk (acc rgba, clear rgb, weight sum).

override FMT: u32 = 3u;            // 2 float16 (two a word), 3 float32 words
override CHANNELS: u32 = 4u;       // 4, 2 (grey + alpha) or 1
override WEIGHTED: bool = true;    // colour averaged by alpha
override STEPS: u32 = 6u;          // steps each way from the quotient's first guess
override UNIT_X: bool = false;     // the level's x weights are all 1 (its width divides the source's)
override UNIT_Y: bool = false;
override SMALL_X: bool = false;    // ... all below 2^12
override SMALL_Y: bool = false;
override KEEP: bool = false;       // the level keeps its sums in `kept` (the next level is a `tree`)
override KEPT: u32 = 7u;           // float-float values a texel keeps: acc rgba (+ clear rgb, weighted)

struct Params {
    src_size: vec2<u32>,
    dst_size: vec2<u32>,
    words_per_row: u32,
    row0: u32,
    rows: u32,
    chunks: u32,
    chunk_rows: u32,
    zero: u32,        // 0: see `o`
    gcd: vec2<u32>,   // each axis's weights divided by gcd(source, level size): whole numbers, smaller
    prev: vec2<u32>,  // `tree`: the previous level's size
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read_write> partial: array<vec2<f32>>;  // 8 a texel and chunk
@group(0) @binding(4) var<storage, read> prev_kept: array<vec2<f32>>;     // `tree`: the level before's sums
@group(0) @binding(5) var<storage, read_write> kept: array<vec2<f32>>;    // KEEP: this level's, KEPT a texel

// x, behind a wall: XOR with a uniform that is 0 at run time, which no compiler can see through.
// Without it, optimizers that treat float addition as real arithmetic where SPIR-V has no
// NoContraction decoration (Mesa's NIR does; WGSL gives no way to ask for it) rewrite
// (a + b) - a to b and the error terms below to 0: on lavapipe the float32 results then came
// out up to 3 ulp from the exact average instead of the float-float's 0.5.
fn o(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) ^ prm.zero);
}

// a + b = s + e exactly (Knuth).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = o(a + b);
    let bb = o(s - a);
    return vec2<f32>(s, (a - o(s - bb)) + (b - bb));
}

// a + b = s + e exactly where |a| >= |b|.
fn quick_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = o(a + b);
    return vec2<f32>(s, b - o(s - a));
}

// a = hi + lo, hi with 12 significant bits (its low 12 stored bits masked), lo the rest.
fn split(a: f32) -> vec2<f32> {
    let hi = bitcast<f32>(bitcast<u32>(a) & 0xfffff000u);
    return vec2<f32>(hi, a - hi);
}

fn add(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    let s = two_sum(x.x, y.x);
    let t = two_sum(x.y, y.y);
    let u = quick_two_sum(s.x, s.y + t.x);
    return quick_two_sum(u.x, u.y + t.y);
}

// a * b from its four exact partial products.
fn prod(a: f32, b: f32) -> vec2<f32> {
    let x = split(a);
    let y = split(b);
    return add(two_sum(x.x * y.x, x.x * y.y), two_sum(x.y * y.x, x.y * y.y));
}

fn mul(x: vec2<f32>, b: f32) -> vec2<f32> {
    return add(prod(x.x, b), prod(x.y, b));
}

// w * v for a whole-number weight w < 2^24 of an axis whose weights are all 1 (`unit`: v
// itself) or all below 2^12 (`small`: each 12-bit half of v times w is exact, so one two-sum);
// else prod. The flags are pipeline constants: no branch is left in the compiled loop.
fn prod_w(w: f32, v: f32, unit: bool, small: bool) -> vec2<f32> {
    if (unit) {
        return vec2<f32>(v, 0.0);
    }
    if (small) {
        let x = split(v);
        return two_sum(w * x.x, w * x.y);
    }
    return prod(w, v);
}

fn mul_w(x: vec2<f32>, w: f32, unit: bool, small: bool) -> vec2<f32> {
    if (unit) {
        return x;
    }
    return add(prod_w(w, x.x, false, small), prod_w(w, x.y, false, small));
}

const ZERO = vec2<f32>(0.0, 0.0);

struct Sums {
    acc: array<vec2<f32>, 4>,
    clear: array<vec2<f32>, 3>,
    w: u32,
}

fn zero_sums() -> Sums {
    var t: Sums;
    t.acc = array<vec2<f32>, 4>(ZERO, ZERO, ZERO, ZERO);
    t.clear = array<vec2<f32>, 3>(ZERO, ZERO, ZERO);
    t.w = 0u;
    return t;
}

// canonical rgba: grey in rgb, alpha 1 without it
fn fetch(p: vec2<i32>) -> vec4<f32> {
    let v = textureLoad(src, p, 0);
    if (CHANNELS == 4u) {
        return v;
    }
    if (CHANNELS == 2u) {
        return vec4<f32>(v.r, v.r, v.r, v.g);
    }
    return vec4<f32>(v.r, v.r, v.r, 1.0);
}

// Box sums of destination texel (x, y) over its footprint rows of `chunk`: each row's terms
// added in order, then the row times its weight into the sums.
fn sums(x: u32, y: u32, chunk: u32) -> Sums {
    let s = prm.src_size;
    let d = prm.dst_size;
    let span = box_span(x, y, chunk);
    var out = zero_sums();
    for (var ty = span.z; ty < span.w; ty++) {
        let wyi = box_weight(ty, y, s.y, d.y) / prm.gcd.y;
        let wy = f32(wyi);
        var row = zero_sums();
        for (var tx = span.x; tx < span.y; tx++) {
            let wxi = box_weight(tx, x, s.x, d.x) / prm.gcd.x;
            let wx = f32(wxi);
            let c = fetch(vec2<i32>(i32(tx), i32(ty)));
            if (WEIGHTED && c.a <= 0.0) {
                row.clear[0] = add(row.clear[0], prod_w(wx, c.r, UNIT_X, SMALL_X));
                row.clear[1] = add(row.clear[1], prod_w(wx, c.g, UNIT_X, SMALL_X));
                row.clear[2] = add(row.clear[2], prod_w(wx, c.b, UNIT_X, SMALL_X));
            } else if (WEIGHTED) {
                row.acc[0] = add(row.acc[0], mul_w(prod(c.r, c.a), wx, UNIT_X, SMALL_X));
                row.acc[1] = add(row.acc[1], mul_w(prod(c.g, c.a), wx, UNIT_X, SMALL_X));
                row.acc[2] = add(row.acc[2], mul_w(prod(c.b, c.a), wx, UNIT_X, SMALL_X));
                row.acc[3] = add(row.acc[3], prod_w(wx, c.a, UNIT_X, SMALL_X));
            } else {
                row.acc[0] = add(row.acc[0], prod_w(wx, c.r, UNIT_X, SMALL_X));
                row.acc[1] = add(row.acc[1], prod_w(wx, c.g, UNIT_X, SMALL_X));
                row.acc[2] = add(row.acc[2], prod_w(wx, c.b, UNIT_X, SMALL_X));
                row.acc[3] = add(row.acc[3], prod_w(wx, c.a, UNIT_X, SMALL_X));
            }
            row.w += wxi;
        }
        for (var i = 0u; i < 4u; i++) {
            out.acc[i] = add(out.acc[i], mul_w(row.acc[i], wy, UNIT_Y, SMALL_Y));
        }
        for (var i = 0u; i < 3u; i++) {
            out.clear[i] = add(out.clear[i], mul_w(row.clear[i], wy, UNIT_Y, SMALL_Y));
        }
        out.w += row.w * wyi;
    }
    return out;
}

// The sign of a float-float.
fn sign_of(t: vec2<f32>) -> f32 {
    if (t.x != 0.0) {
        return sign(t.x);
    }
    return sign(t.y);
}

// Whether s / d (d > 0) lies above the midpoint of lo and hi: the sign of s - lo d - (hi - lo)/2 d;
// at a tie toward the even one (`odd`: lo is odd).
fn beyond(s: vec2<f32>, d: vec2<f32>, lo: f32, hi: f32, odd: bool) -> bool {
    let h = (hi - lo) * 0.5;
    let t = add(add(s, -mul(d, lo)), -mul(d, h));
    let g = sign_of(t);
    return g > 0.0 || (g == 0.0 && odd);
}

fn exponent(c: f32) -> i32 {
    return i32((bitcast<u32>(c) >> 23u) & 0xffu) - 127;
}

fn pow2(e: i32) -> f32 {
    return bitcast<f32>(u32(e + 127) << 23u);
}

const HALF_MAX: f32 = 65504.0;
const HALF_MIN_NORMAL: f32 = 6.103515625e-05;  // 2^-14
const F32_MAX: f32 = 3.40282346638528859812e+38;

fn half_guess(q0: f32) -> f32 {
    let q = min(q0, HALF_MAX);
    if (q < HALF_MIN_NORMAL) {
        return round(q * 16777216.0) * 5.9604644775390625e-08;
    }
    return min(bitcast<f32>((bitcast<u32>(q) + 0x1000u) & 0xffffe000u), HALF_MAX);
}

fn next_up(c: f32) -> f32 {
    if (FMT == 2u) {
        if (c < HALF_MIN_NORMAL) {
            return c + 5.9604644775390625e-08;
        }
        return c + pow2(exponent(c) - 10);
    }
    return bitcast<f32>(bitcast<u32>(c) + 1u);
}

fn next_down(c: f32) -> f32 {
    if (FMT == 2u) {
        if (c <= HALF_MIN_NORMAL) {
            return c - 5.9604644775390625e-08;
        }
        if ((bitcast<u32>(c) & 0x7fe000u) == 0u) {
            return c - pow2(exponent(c) - 11);
        }
        return c - pow2(exponent(c) - 10);
    }
    return bitcast<f32>(bitcast<u32>(c) - 1u);
}

fn is_odd(c: f32) -> bool {
    if (FMT == 2u) {
        if (c < HALF_MIN_NORMAL) {
            return (u32(round(c * 16777216.0)) & 1u) == 1u;
        }
        return ((bitcast<u32>(c) >> 13u) & 1u) == 1u;
    }
    return (bitcast<u32>(c) & 1u) == 1u;
}

// s / d (d > 0) rounded to the nearest value of the format, as f32.
fn quotient(s0: vec2<f32>, d: vec2<f32>) -> f32 {
    let negative = s0.x < 0.0 || (s0.x == 0.0 && s0.y < 0.0);
    var s = s0;
    if (negative) {
        s = -s0;
    }
    var top = F32_MAX;
    if (FMT == 2u) {
        top = HALF_MAX;
    }
    var q = s.x / d.x;
    if ((bitcast<u32>(q) & 0x7f800000u) == 0x7f800000u) {
        q = top;  // infinite or NaN (not for finite sums whose quotient is finite)
    }
    q = min(max(q, 0.0), top);
    var c = q;
    if (FMT == 2u) {
        c = half_guess(q);
    }
    for (var k = 0u; k < STEPS; k++) {
        if (c >= top) {
            break;
        }
        let n = next_up(c);
        if (!beyond(s, d, c, n, is_odd(c))) {
            break;
        }
        c = n;
    }
    for (var k = 0u; k < STEPS; k++) {
        if (c <= 0.0) {
            break;
        }
        let p = next_down(c);
        if (beyond(s, d, p, c, is_odd(p))) {
            break;
        }
        c = p;
    }
    if (negative) {
        return -c;
    }
    return c;
}

fn half_bits(c: f32) -> u32 {
    let b = bitcast<u32>(c);
    let sgn = (b >> 16u) & 0x8000u;
    let a = abs(c);
    if (a >= HALF_MIN_NORMAL) {
        return sgn | ((((b >> 23u) & 0xffu) - 112u) << 10u) | ((b >> 13u) & 0x3ffu);
    }
    return sgn | u32(a * 16777216.0);
}

// The level's values from the sums, each rounded once, written as the format's words.
fn store(x: u32, row: u32, t: Sums) {
    let wd = quick_two_sum(f32(t.w & 0xffff0000u), f32(t.w & 0xffffu));
    var out: array<f32, 4>;
    if (WEIGHTED) {
        if (t.acc[3].x > 0.0) {
            for (var i = 0u; i < 3u; i++) {
                out[i] = quotient(t.acc[i], t.acc[3]);
            }
            out[3] = quotient(t.acc[3], wd);
        } else {
            for (var i = 0u; i < 3u; i++) {
                out[i] = quotient(add(t.clear[i], t.acc[i]), wd);
            }
            out[3] = 0.0;
        }
    } else {
        for (var i = 0u; i < 4u; i++) {
            out[i] = quotient(t.acc[i], wd);
        }
    }
    let base = row * prm.words_per_row;
    if (FMT == 2u) {
        if (CHANNELS == 4u) {
            packed[base + x * 2u] = half_bits(out[0]) | (half_bits(out[1]) << 16u);
            packed[base + x * 2u + 1u] = half_bits(out[2]) | (half_bits(out[3]) << 16u);
        } else {
            packed[base + x] = half_bits(out[0]) | (half_bits(out[3]) << 16u);
        }
    } else if (CHANNELS == 4u) {
        for (var c = 0u; c < 4u; c++) {
            packed[base + x * 4u + c] = bitcast<u32>(out[c]);
        }
    } else if (CHANNELS == 2u) {
        packed[base + x * 2u] = bitcast<u32>(out[0]);
        packed[base + x * 2u + 1u] = bitcast<u32>(out[3]);
    } else {
        packed[base + x] = bitcast<u32>(out[0]);
    }
}

// Keeps texel (x, y)'s sums for the next level (KEEP), then stores its values.
fn finish_texel(x: u32, y: u32, row: u32, t: Sums) {
    if (KEEP) {
        let slot = (y * prm.dst_size.x + x) * KEPT;
        for (var i = 0u; i < 4u; i++) {
            kept[slot + i] = t.acc[i];
        }
        if (WEIGHTED) {
            for (var i = 0u; i < 3u; i++) {
                kept[slot + 4u + i] = t.clear[i];
            }
        }
    }
    store(x, row, t);
}

// A level whose every weight from the base is 1, from the previous level's kept sums: each
// texel's 2 x 2 (2 x 1, 1 x 2) children added in row order; the weight sum is its texel count.
@compute @workgroup_size(8, 8)
fn tree(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows) {
        return;
    }
    let y = gid.y + prm.row0;
    let fx = prm.prev.x / prm.dst_size.x;
    let fy = prm.prev.y / prm.dst_size.y;
    var t = zero_sums();
    for (var j = 0u; j < fy; j++) {
        for (var i = 0u; i < fx; i++) {
            let slot = ((y * fy + j) * prm.prev.x + gid.x * fx + i) * KEPT;
            for (var k = 0u; k < 4u; k++) {
                t.acc[k] = add(t.acc[k], prev_kept[slot + k]);
            }
            if (WEIGHTED) {
                for (var k = 0u; k < 3u; k++) {
                    t.clear[k] = add(t.clear[k], prev_kept[slot + 4u + k]);
                }
            }
        }
    }
    t.w = (prm.src_size.x / prm.dst_size.x) * (prm.src_size.y / prm.dst_size.y);
    finish_texel(gid.x, y, gid.y, t);
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows || gid.z >= prm.chunks) {
        return;
    }
    let y = gid.y + prm.row0;
    let t = sums(gid.x, y, gid.z);
    if (prm.chunks == 1u) {
        finish_texel(gid.x, y, gid.y, t);
        return;
    }
    let slot = ((gid.y * prm.dst_size.x + gid.x) * prm.chunks + gid.z) * 8u;
    for (var i = 0u; i < 4u; i++) {
        partial[slot + i] = t.acc[i];
    }
    for (var i = 0u; i < 3u; i++) {
        partial[slot + 4u + i] = t.clear[i];
    }
    partial[slot + 7u] = vec2<f32>(bitcast<f32>(t.w), 0.0);
}

// Adds up the chunks of each texel (in chunk order, from zero) and stores it.
@compute @workgroup_size(8, 8)
fn finish(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows) {
        return;
    }
    var t = zero_sums();
    for (var k = 0u; k < prm.chunks; k++) {
        let slot = ((gid.y * prm.dst_size.x + gid.x) * prm.chunks + k) * 8u;
        for (var i = 0u; i < 4u; i++) {
            t.acc[i] = add(t.acc[i], partial[slot + i]);
        }
        for (var i = 0u; i < 3u; i++) {
            t.clear[i] = add(t.clear[i], partial[slot + 4u + i]);
        }
        t.w += bitcast<u32>(partial[slot + 7u].x);
    }
    finish_texel(gid.x, gid.y + prm.row0, gid.y, t);
}
