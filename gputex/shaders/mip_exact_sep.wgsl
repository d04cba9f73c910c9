//! include mip_f64.wgsl
//! include mip_kernel_out.wgsl
//! default TTAB 408
//! default SMEM_TAPS true
// One level of a Kaiser or Lanczos chain in float64, separable and tiled: what
// mip_exact_kernel.wgsl computes (the same CPU float64 taps and weights, each level from the
// previous one's float64 values, with weighted alpha the premultiplied and the plain colour
// chained separately), with the two axes filtered one after the other in workgroup memory.
//
// A workgroup makes a TW x TH tile of the level. The CPU lists, per tile column and tile row,
// the distinct source columns / rows its texels' taps reach (after --wrap; at most SXMAX /
// SYMAX, which a mip chain never exceeds: the ratio between levels is at most 2 + 1/size), and
// gives each texel's taps as slots into those lists. The workgroup
//   0. (TAPS_SMEM) copies its tile columns' and rows' taps (slots and weights) into workgroup
//      memory, KSTRIDE apart (odd: the invocations reading them side by side hit different
//      banks); else each sum reads them from `taps` and `weights` (4.9 KB less workgroup memory:
//      exact.sep_form chooses by the device's limit, TTAB is 1 without the tables);
//   1. (level 1 of a 4-byte 8-bit format) loads each source texel of the tile once, recovers its
//      four codes and keeps them; 256-entry tables hold the float64 value of each code
//      (decode1 for sRGB colour; made once by make_tables with the functions of
//      mip_exact_kernel.wgsl);
//   2. filters along x: for each listed source row, the TW sums over the row's x taps (from the
//      level before: its values a plane each, SOA, so that the invocations of one source row
//      read neighbouring words), kept a plane per value;
//   3. filters those along y: one output texel per invocation.
// Without WEIGHTED the plain colour is neither stored nor read, and its sums are dead code.
// Per output texel that is ~2.6 x-sums of ~12 taps and one y-sum of ~12, against 144 taps
// (each with its own sRGB decode) of the 2D footprint; float64 sums in another order (the
// difference is ~1e-16 relative, far below half an ulp of any output format).

override BGRA: bool = false;
override WEIGHTED: bool = true;
override ENCODE_SRGB: bool = false;
override SRC_IS_BASE: bool = true;
const TAPS_SMEM: bool = SMEM_TAPS;

const TW: u32 = 8u;
const TH: u32 = 16u;
const SXMAX: u32 = 32u;
const SYMAX: u32 = 48u;
const NV: u32 = 7u;   // pm rgba, plain rgb
const THREADS: u32 = 128u;
const KMAX: u32 = 16u; // the most taps a texel has on one axis (exact.SEP_TAPS)
const KSTRIDE: u32 = 17u; // a tile column's (row's) taps in the tables: odd, so their words fall in different banks
const HPLANE: u32 = 384u; // TW * SYMAX: one value of every x-filtered row

struct Params {
    dst_size: vec2<u32>,
    words_per_row: u32,
    src_width: u32,
    ytaps: u32,    // where the y (start, count) pairs start in `taps` (x pairs start at 0)
    xlists: u32,   // per tile column: count, then SXMAX source columns
    ylists: u32,   // per tile row: count, then SYMAX source rows
    widx: u32,     // weights[i - widx] goes with the slot taps[i]
    src_plane: u32,  // the source level's texel count (SOA)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read> prev: array<f64>;        // pm rgba, plain rgb (mip_kernel_out.wgsl)
@group(0) @binding(4) var<storage, read_write> next: array<f64>;
@group(0) @binding(5) var<storage, read> taps: array<u32>;
@group(0) @binding(6) var<storage, read> weights: array<f64>;

var<workgroup> hsum: array<f64, 2688>;     // NV planes of HPLANE: the x-filtered rows
var<workgroup> codes: array<u32, 1536>;    // SXMAX * SYMAX: a source texel's codes, r | g << 8 | b << 16 | a << 24
var<workgroup> colour: array<f64, 256>;    // a colour code's linear value
var<workgroup> level: array<f64, 256>;     // k / 255 (alpha)
var<workgroup> cols: array<u32, 32>;
var<workgroup> rows: array<u32, 48>;
var<workgroup> counts: vec2<u32>;
// TAPS_SMEM: the tile's taps, copied once: per tile column (t < TW), then per tile row (t = TW + row),
// its tap count, its taps' slots and weights
var<workgroup> tcount: array<u32, 24>;     // TW + TH
var<workgroup> tslot: array<u32, TTAB>;    // (TW + TH) * KSTRIDE (1 without TAPS_SMEM)
var<workgroup> tw: array<f64, TTAB>;

// Tap k of tile column or row t, whose (start, count) pair is taps[at], taps[at + 1] (at: 2 * x for
// destination column x, prm.ytaps + 2 * y for row y): the count, the tap's slot in the tile's list, its weight.
fn tap_count(t: u32, at: u32) -> u32 {
    if (TAPS_SMEM) {
        return tcount[t];
    }
    return taps[at + 1u];
}

fn tap_slot(t: u32, at: u32, k: u32) -> u32 {
    if (TAPS_SMEM) {
        return tslot[t * KSTRIDE + k];
    }
    return taps[taps[at] + k];
}

fn tap_weight(t: u32, at: u32, k: u32) -> f64 {
    if (TAPS_SMEM) {
        return tw[t * KSTRIDE + k];
    }
    return weights[taps[at] + k - prm.widx];
}

fn staged() -> bool {
    return SRC_IS_BASE && FMT == 0u && CHANNELS == 4u;
}

fn code_of(c: f32) -> u32 {
    if (SRGB_FORMAT) {
        return u32(round(srgb_encode32(c) * 255.0));
    }
    return u32(round(c * 255.0));
}

// A source texel: premultiplied (or plain) rgba and plain rgb, in float64. Vectors, not arrays
// indexed in a loop: the first version summed into array<f64, 7> over `for c < 7`, and on the
// H200 it ran at ~3.6 ns an output texel whatever the source (1.6x the 2D shader's time): the
// signature of arrays kept in local memory.
struct Val {
    pm: vec4<f64>,
    pl: vec3<f64>,
}

fn texel(sx: u32, sy: u32, nx: u32) -> Val {
    if (staged()) {
        let k = codes[sy * nx + sx];
        let c = vec3<f64>(colour[k & 255u], colour[(k >> 8u) & 255u], colour[(k >> 16u) & 255u]);
        let a = level[k >> 24u];
        if (WEIGHTED) {
            return Val(vec4<f64>(c * a, a), c);
        }
        return Val(vec4<f64>(c, a), c);
    }
    let x = cols[sx];
    let y = rows[sy];
    if (!SRC_IS_BASE) {
        let i = y * prm.src_width + x;
        let n = prm.src_plane;
        var pl = vec3<f64>(0.0, 0.0, 0.0);
        if (WEIGHTED) {  // (else the level holds no plain colour)
            pl = vec3<f64>(prev[value_at(i, 4u, n)], prev[value_at(i, 5u, n)], prev[value_at(i, 6u, n)]);
        }
        return Val(vec4<f64>(prev[value_at(i, 0u, n)], prev[value_at(i, 1u, n)], prev[value_at(i, 2u, n)],
                             prev[value_at(i, 3u, n)]), pl);
    }
    let c = canonical64(textureLoad(src, vec2<i32>(i32(x), i32(y)), 0));
    let rgb = vec3<f64>(c[0], c[1], c[2]);
    if (WEIGHTED) {
        return Val(vec4<f64>(rgb * c[3], c[3]), rgb);
    }
    return Val(vec4<f64>(rgb, c[3]), rgb);
}

// Level 1 of a 4-byte 8-bit format: each code's float64 value (colour: decode1 for sRGB data;
// alpha: k / 255) into `next` (512 values), which main then reads as `prev`: computed once
// per chain instead of once per workgroup, by the same functions as mip_exact_kernel.wgsl.
@compute @workgroup_size(64)
fn make_tables(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if (k >= 256u) {
        return;
    }
    let v = f64(k) / 255.0;
    next[k] = select(v, decode1(v), DECODE_SRGB);
    next[256u + k] = v;
}

@compute @workgroup_size(8, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let d = prm.dst_size;
    let x0 = wg.x * TW;
    let y0 = wg.y * TH;
    let xl = prm.xlists + wg.x * (SXMAX + 1u);
    let yl = prm.ylists + wg.y * (SYMAX + 1u);
    if (li == 0u) {
        counts = vec2<u32>(taps[xl], taps[yl]);
    }
    if (li < SXMAX) {
        cols[li] = taps[xl + 1u + li];
    }
    if (li < SYMAX) {
        rows[li] = taps[yl + 1u + li];
    }
    for (var i = li; i < select(0u, (TW + TH) * KMAX, TAPS_SMEM); i += THREADS) {
        let k = i % KMAX;
        let t = i / KMAX;  // the tile's column t, or its row t - TW
        let at = select(prm.ytaps + 2u * min(y0 + t - TW, d.y - 1u), 2u * min(x0 + t, d.x - 1u), t < TW);
        let start = taps[at];
        let n = taps[at + 1u];
        if (k == 0u) {
            tcount[t] = n;
        }
        if (k < n) {
            tslot[t * KSTRIDE + k] = taps[start + k];
            tw[t * KSTRIDE + k] = weights[start + k - prm.widx];
        }
    }
    if (staged()) {  // the tables, made once by make_tables, in `prev` at level 1
        for (var k = li; k < 256u; k += THREADS) {
            colour[k] = prev[k];
            level[k] = prev[256u + k];
        }
    }
    workgroupBarrier();
    let n = workgroupUniformLoad(&counts);
    let nx = n.x;
    let ny = n.y;
    if (staged()) {
        for (var i = li; i < nx * ny; i += THREADS) {
            let v = textureLoad(src, vec2<i32>(i32(cols[i % nx]), i32(rows[i / nx])), 0);
            codes[i] = code_of(v.r) | (code_of(v.g) << 8u) | (code_of(v.b) << 16u) | (u32(round(v.a * 255.0)) << 24u);
        }
        workgroupBarrier();
    }
    // x: row slot sy, column hx of the tile
    for (var i = li; i < TW * ny; i += THREADS) {
        let hx = i % TW;
        let sy = i / TW;
        let at = 2u * min(x0 + hx, d.x - 1u);
        let xn = tap_count(hx, at);
        var pm = vec4<f64>(0.0, 0.0, 0.0, 0.0);
        var pl = vec3<f64>(0.0, 0.0, 0.0);
        for (var k = 0u; k < xn; k++) {
            let w = tap_weight(hx, at, k);
            let t = texel(tap_slot(hx, at, k), sy, nx);
            pm += w * t.pm;
            pl += w * t.pl;
        }
        hsum[i] = pm.x;
        hsum[HPLANE + i] = pm.y;
        hsum[2u * HPLANE + i] = pm.z;
        hsum[3u * HPLANE + i] = pm.w;
        if (WEIGHTED) {
            hsum[4u * HPLANE + i] = pl.x;
            hsum[5u * HPLANE + i] = pl.y;
            hsum[6u * HPLANE + i] = pl.z;
        }
    }
    workgroupBarrier();
    let gx = x0 + lid.x;
    let gy = y0 + lid.y;
    if (gx >= d.x || gy >= d.y) {
        return;
    }
    let at = prm.ytaps + 2u * gy;
    let yn = tap_count(TW + lid.y, at);
    var pm = array<f64, 4>(0.0, 0.0, 0.0, 0.0);
    var pl = array<f64, 3>(0.0, 0.0, 0.0);
    for (var k = 0u; k < yn; k++) {
        let w = tap_weight(TW + lid.y, at, k);
        let h = tap_slot(TW + lid.y, at, k) * TW + lid.x;
        pm[0] += w * hsum[h];
        pm[1] += w * hsum[HPLANE + h];
        pm[2] += w * hsum[2u * HPLANE + h];
        pm[3] += w * hsum[3u * HPLANE + h];
        pl[0] += w * hsum[4u * HPLANE + h];
        pl[1] += w * hsum[5u * HPLANE + h];
        pl[2] += w * hsum[6u * HPLANE + h];
    }
    finish_texel(gx, gy, d.x, pm, pl);
}

fn out_plane() -> u32 {
    return prm.dst_size.x * prm.dst_size.y;
}
