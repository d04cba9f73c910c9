// Single-pass integer box mips (mips_spd.py): up to six levels per dispatch, each workgroup
// reducing its tile through them in registers and workgroup memory: the source (the base, or
// the stored sums of the previous pass's last level) read once, every level written once.
// Only chains whose every level halves (or keeps at 1) each axis of the one before: a texel's
// sums are then plain (unit weight) sums over its 2^sx x 2^sy base texels, and its value
// sum / 2^s, s = sx + sy. The output code is decided exactly as in mip_int.wgsl (the same
// tables and thresholds, the same comparisons num * 2^32 >= Q[k] * den), on the same rational
// value, so the bytes equal the integer chain's (intbox.py explains the arithmetic).
//
// Sums: slots 0-2 colour (grey in 0), slot 3 alpha, slots 4-6 plain colour (weighted alpha,
// where the footprint's alpha is 0). Collapsed (workgroup memory, the stored sums): 3 words a
// slot, colour slots hold the premultiplied sums, or the plain ones where the alpha sum is 0.

override CHANNELS: u32 = 4u;
override BITS: u32 = 8u;
override SRGB: bool = false;
override SRGB_VIEW: bool = false;
override WEIGHTED: bool = true;
override BGRA: bool = false;
override FROM_SUMS: bool = false;  // the source is stored sums (else the base texture)
override STORE: bool = false;      // keep the pass's last level's sums for the next pass
override SCREEN: bool = true;      // the float estimate decides where it is clearly inside a code

override NC: u32 = select(1u, 3u, CHANNELS == 4u);
override HAS_ALPHA: bool = CHANNELS != 1u;
override WA: bool = WEIGHTED && HAS_ALPHA;
override SLOTS: u32 = NC + select(0u, 1u, HAS_ALPHA);

struct Level {
    size: vec2<u32>,  // texels
    f: vec2<u32>,     // log2 of the source's texels per texel on each axis
}

struct Meta {
    off: u32,    // first output word of the level
    pitch: u32,  // output words per row
    s: u32,      // log2(base texels per texel)
    pad: u32,
}

struct Params {
    src_size: vec2<u32>,
    levels: u32,
    channels: u32,  // = SLOTS as a uniform (finalize's loop not unrolled: lavapipe compile time)
    lv: array<Level, 6>,
    mt: array<Meta, 6>,
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read> src_sums: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst_sums: array<u32>;
@group(0) @binding(5) var<storage, read> tables: array<u32>;  // L (2 words), Q (3 words), Q / 2^32 (f32)

alias Big = vec4<u32>;
alias Acc = array<Big, 7>;

var<workgroup> tile: array<u32, 3072>;  // 16 x 16 texels x 4 slots x 3 words

fn mul32(a: u32, b: u32) -> vec2<u32> {
    let p00 = (a & 0xffffu) * (b & 0xffffu);
    let mid = (a & 0xffffu) * (b >> 16u) + (p00 >> 16u);
    let mid2 = (a >> 16u) * (b & 0xffffu) + (mid & 0xffffu);
    return vec2<u32>((mid2 << 16u) | (p00 & 0xffffu), (a >> 16u) * (b >> 16u) + (mid >> 16u) + (mid2 >> 16u));
}

fn add(a: Big, b: Big) -> Big {
    var r: Big;
    var carry = 0u;
    for (var i = 0u; i < 4u; i++) {
        let s = a[i] + b[i];
        let s2 = s + carry;
        carry = select(0u, 1u, s < a[i]) + select(0u, 1u, s2 < s);
        r[i] = s2;
    }
    return r;
}

fn mul_lin(l: Big, b: u32) -> Big {
    let lo = mul32(l.x, b);
    if (BITS == 8u) {
        return Big(lo.x, lo.y, 0u, 0u);
    }
    let hi = mul32(l.y, b);
    let mid = lo.y + hi.x;
    return Big(lo.x, mid, hi.y + select(0u, 1u, mid < lo.y), 0u);
}

fn mul(a: Big, b: u32) -> Big {
    var r: Big;
    var carry = 0u;
    for (var i = 0u; i < 4u; i++) {
        let p = mul32(a[i], b);
        let s = p.x + carry;
        r[i] = s;
        carry = p.y + select(0u, 1u, s < p.x);
    }
    return r;
}

fn ge(a: Big, b: Big) -> bool {
    for (var j = 0u; j < 4u; j++) {
        let i = 3u - j;
        if (a[i] != b[i]) {
            return a[i] > b[i];
        }
    }
    return true;
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

fn lin(c: u32, srgb: bool) -> Big {
    if (!srgb) {
        return Big(c, 0u, 0u, 0u);
    }
    return Big(tables[2u * c], tables[2u * c + 1u], 0u, 0u);
}

// num / den >= Q[k] (num * 2^32 >= Q[k] * den; num < 2^96, den < 2^64): as mip_int.wgsl
fn reaches(num: Big, den: Big, k: u32, srgb: bool) -> bool {
    var q = Big((1u << 31u), k - 1u, 0u, 0u);
    if (srgb) {
        let i = 2u * (top() + 1u) + 3u * k;
        q = Big(tables[i], tables[i + 1u], tables[i + 2u], 0u);
    }
    let rhs = add(mul(q, den.x), mul(Big(0u, q.x, q.y, q.z), den.y));
    return ge(Big(0u, num.x, num.y, num.z), rhs);
}

fn encode(x: f32) -> f32 {
    if (x <= 0.0031308) {
        return x * 12.92;
    }
    return 1.055 * pow(x, 1.0 / 2.4) - 0.055;
}

// The code k with Q[k] <= num / den < Q[k + 1] (mip_int.wgsl's search: a float estimate, probes
// next to it, then bisection; the estimate only decides how fast the search ends).
fn round_code(num: Big, den: Big, srgb: bool) -> u32 {
    let m = f32(top());
    var v = approx(num) / approx(den);
    if (srgb) {
        v = encode(v / select(1099511627776.0, 2147483648.0, BITS == 8u)) * m;
    }
    var lo = 0u;
    var hi = top();
    var probe = max(1u, u32(clamp(floor(v + 0.5), 0.0, m)));
    for (var i = 0u; i < 64u && lo < hi; i++) {
        if (reaches(num, den, probe, srgb)) {
            lo = probe;
            probe = select((lo + hi + 1u) / 2u, lo + 1u, i < 2u);
        } else {
            hi = probe - 1u;
            probe = select((lo + hi + 1u) / 2u, hi, i < 2u);
        }
        probe = clamp(probe, lo + 1u, max(hi, lo + 1u));
    }
    return lo;
}

// Q[k] / 2^32 as a float (k = top + 1: never reached)
fn threshold_f(k: u32, srgb: bool) -> f32 {
    if (!srgb) {
        return f32(k) - 0.5;
    }
    return bitcast<f32>(tables[5u * (top() + 1u) + k]);
}

// Relative distance from a threshold beyond which the float estimate decides: its own error
// (a few 2^-24: three roundings in each approx(), the division, the table's float) is under
// 2^-20, so where the estimate is farther than 2^-18 the exact comparisons give the same code.
const MARGIN: f32 = 3.814697265625e-6;

// The code k with Q[k] <= num / den < Q[k + 1]: the float estimate's code where it lies clearly
// inside that code's interval; next to one threshold (within MARGIN of it, clearly inside the two
// intervals beside it) one exact comparison with it; else the exact search (round_code).
fn round_fast(num: Big, den: Big, srgb: bool) -> u32 {
    let m = f32(top());
    let x = approx(num) / approx(den);
    var v = x;
    if (srgb) {
        v = encode(x / select(1099511627776.0, 2147483648.0, BITS == 8u)) * m;
    }
    let k = u32(clamp(floor(v + 0.5), 0.0, m));
    let tl = threshold_f(k, srgb);
    let th = threshold_f(k + 1u, srgb);
    let above = k == 0u || x >= tl * (1.0 + MARGIN);
    let below = k == top() || x < th * (1.0 - MARGIN);
    if (SCREEN && above && below) {
        return k;
    }
    var j = 0u;  // the one threshold to compare with (0: none)
    if (below && k > 0u && x >= tl * (1.0 - MARGIN) && (k == 1u || x >= threshold_f(k - 1u, srgb) * (1.0 + MARGIN))) {
        j = k;
    } else if (above && k < top() && x < th * (1.0 + MARGIN)
               && (k + 1u == top() || x < threshold_f(k + 2u, srgb) * (1.0 - MARGIN))) {
        j = k + 1u;
    }
    if (SCREEN && j > 0u) {
        return select(j - 1u, j, reaches(num, den, j, srgb));
    }
    return round_code(num, den, srgb);
}

// The code of a linear value num / 2^s (1 <= s <= 30): exact, round half up (= round_code's
// answer with the linear thresholds (2k - 1) / 2: num + 2^(s-1) >= k 2^s).
fn round_pow2(num: Big, s: u32) -> u32 {
    let t = add(num, Big(1u << (s - 1u), 0u, 0u, 0u));
    return (t.x >> s) | (t.y << (32u - s));
}

fn srgb_encode3(c: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(encode(c.x), encode(c.y), encode(c.z));
}

fn codes_at(p: vec2<u32>) -> vec4<u32> {
    var v = textureLoad(src, vec2<i32>(p), 0);
    if (SRGB_VIEW) {
        v = vec4<f32>(srgb_encode3(clamp(v.rgb, vec3<f32>(0.0), vec3<f32>(1.0))), v.a);
    }
    if (CHANNELS == 2u) {
        v = vec4<f32>(v.r, 0.0, 0.0, v.g);
    }
    return vec4<u32>(floor(clamp(v, vec4<f32>(0.0), vec4<f32>(1.0)) * f32(top()) + vec4<f32>(0.5)));
}

fn zero_acc() -> Acc {
    return Acc(Big(0u), Big(0u), Big(0u), Big(0u), Big(0u), Big(0u), Big(0u));
}

fn add_acc(a: Acc, b: Acc) -> Acc {
    var r = a;
    for (var k = 0u; k < 7u; k++) {
        r[k] = add(a[k], b[k]);
    }
    return r;
}

// A collapsed texel (3 words a slot, from workgroup memory or stored sums) added to acc:
// texels without alpha hold plain sums, they go to the plain slots (weighted alpha).
fn add_collapsed(acc: ptr<function, Acc>, s: array<Big, 4>) {
    var a = Big(0u);
    if (HAS_ALPHA) {
        a = s[NC];
        (*acc)[3] = add((*acc)[3], a);
    }
    let off = select(0u, 4u, WA && !nonzero(a));
    for (var k = 0u; k < NC; k++) {
        (*acc)[k + off] = add((*acc)[k + off], s[k]);
    }
}

fn collapse(acc: Acc) -> array<Big, 4> {
    var s = array<Big, 4>(acc[0], acc[1], acc[2], acc[3]);
    let a = acc[3];
    if (WA && !nonzero(a)) {
        s = array<Big, 4>(acc[4], acc[5], acc[6], a);
    }
    if (!HAS_ALPHA) {
        s[NC] = Big(0u);
    } else if (NC == 1u) {
        s[1] = a;
    }
    return s;
}

fn load_sums(p: vec2<u32>) -> array<Big, 4> {
    let i = (p.y * prm.src_size.x + p.x) * SLOTS * 3u;
    var s = array<Big, 4>(Big(0u), Big(0u), Big(0u), Big(0u));
    for (var c = 0u; c < SLOTS; c++) {
        s[c] = Big(src_sums[i + 3u * c], src_sums[i + 3u * c + 1u], src_sums[i + 3u * c + 2u], 0u);
    }
    return s;
}

// A source texel added to acc: a base texel's codes through the tables, or stored sums.
fn add_source(acc: ptr<function, Acc>, p: vec2<u32>) {
    if (FROM_SUMS) {
        add_collapsed(acc, load_sums(p));
        return;
    }
    let c = codes_at(p);
    for (var k = 0u; k < NC; k++) {
        let l = lin(c[k], SRGB);
        if (WA) {
            (*acc)[k] = add((*acc)[k], mul_lin(l, c.w));
            (*acc)[k + 4u] = add((*acc)[k + 4u], l);
        } else {
            (*acc)[k] = add((*acc)[k], l);
        }
    }
    (*acc)[3] = add((*acc)[3], Big(c.w, 0u, 0u, 0u));
}

// 8-bit sums from the base in 32-bit words: L < 2^32 split into 16-bit halves, so a texel
// adds a * half < 2^24 to a word and 16 texels (the most one thread sums) stay below 2^28.
struct Narrow {
    nh: vec4<u32>,  // premultiplied colour (weighted alpha): high halves
    nl: vec4<u32>,  // ... low halves
    sh: vec4<u32>,  // plain colour
    sl: vec4<u32>,
    a: u32,
}

fn zero_narrow() -> Narrow {
    return Narrow(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), 0u);
}

fn add_narrow(n: ptr<function, Narrow>, p: vec2<u32>) {
    let c = codes_at(p);
    var l = c;
    if (SRGB) {
        l = vec4<u32>(tables[2u * c.x], tables[2u * c.y], tables[2u * c.z], 0u);
    }
    let lh = l >> vec4<u32>(16u);
    let ll = l & vec4<u32>(0xffffu);
    if (WA) {
        (*n).nh += lh * c.w;
        (*n).nl += ll * c.w;
    }
    (*n).sh += lh;
    (*n).sl += ll;
    (*n).a += c.w;
}

fn sum_narrow(a: Narrow, b: Narrow) -> Narrow {
    return Narrow(a.nh + b.nh, a.nl + b.nl, a.sh + b.sh, a.sl + b.sl, a.a + b.a);
}

fn widen(h: u32, l: u32) -> Big {
    let lo = (h << 16u) + l;
    return Big(lo, (h >> 16u) + select(0u, 1u, lo < l), 0u, 0u);
}

fn wide(n: Narrow) -> Acc {
    var acc = zero_acc();
    for (var k = 0u; k < NC; k++) {
        if (WA) {
            acc[k] = widen(n.nh[k], n.nl[k]);
            acc[k + 4u] = widen(n.sh[k], n.sl[k]);
        } else {
            acc[k] = widen(n.sh[k], n.sl[k]);
        }
    }
    acc[3] = Big(n.a, 0u, 0u, 0u);
    return acc;
}

fn write_texel(i: u32, x: u32, y: u32, col: array<u32, 3>, alpha: u32) {
    var ch = array<u32, 4>(col[0], alpha, 0u, 0u);
    if (CHANNELS == 4u) {
        ch = array<u32, 4>(col[0], col[1], col[2], alpha);
        if (BGRA) {
            ch = array<u32, 4>(col[2], col[1], col[0], alpha);
        }
    }
    let bpt = CHANNELS * BITS / 8u;
    let base = prm.mt[i].off + y * prm.mt[i].pitch;
    if (bpt >= 4u) {
        let per = 32u / BITS;
        for (var j = 0u; j < bpt / 4u; j++) {
            var word = 0u;
            for (var k = 0u; k < per; k++) {
                word |= ch[j * per + k] << (k * BITS);
            }
            atomicStore(&out[base + x * (bpt / 4u) + j], word);
        }
    } else {
        var bits = 0u;
        for (var k = 0u; k < CHANNELS; k++) {
            bits |= ch[k] << (k * BITS);
        }
        let byte = x * bpt;
        atomicOr(&out[base + byte / 4u], bits << ((byte % 4u) * 8u));
    }
}

// Codes of level i's texel (x, y) from its sums (value = sum / 2^s, or colour / alpha sum);
// the pass's last level's sums stored for the next pass.
fn finalize(i: u32, x: u32, y: u32, acc: Acc) {
    let a = acc[3];
    let w = Big(1u << prm.mt[i].s, 0u, 0u, 0u);
    let covered = WA && nonzero(a);
    var code = array<u32, 4>(0u, 0u, 0u, 0u);
    for (var c = 0u; c < prm.channels; c++) {
        var num = acc[select(c, c + 4u, WA && !covered)];
        var den = select(w, a, covered);
        if (c == NC) {
            num = a;
            den = w;
        }
        let srgb = SRGB && c < NC;
        if (SCREEN && !srgb && !(covered && c < NC)) {  // a linear value over 2^s
            code[c] = round_pow2(num, prm.mt[i].s);
        } else {
            code[c] = round_fast(num, den, srgb);
        }
    }
    write_texel(i, x, y, array<u32, 3>(code[0], code[1], code[2]), code[NC]);
    if (STORE && i + 1u == prm.levels) {
        let s = collapse(acc);
        let j = (y * prm.lv[i].size.x + x) * SLOTS * 3u;
        for (var c = 0u; c < SLOTS; c++) {
            dst_sums[j + 3u * c] = s[c].x;
            dst_sums[j + 3u * c + 1u] = s[c].y;
            dst_sums[j + 3u * c + 2u] = s[c].z;
        }
    }
}

fn tile_put(p: vec2<u32>, s: array<Big, 4>) {
    let j = (p.y * 16u + p.x) * 12u;
    for (var c = 0u; c < 4u; c++) {
        tile[j + 3u * c] = s[c].x;
        tile[j + 3u * c + 1u] = s[c].y;
        tile[j + 3u * c + 2u] = s[c].z;
    }
}

fn tile_get(p: vec2<u32>) -> array<Big, 4> {
    let j = (p.y * 16u + p.x) * 12u;
    var s: array<Big, 4>;
    for (var c = 0u; c < 4u; c++) {
        s[c] = Big(tile[j + 3u * c], tile[j + 3u * c + 1u], tile[j + 3u * c + 2u], 0u);
    }
    return s;
}

// Thread (tx, ty) of workgroup (gx, gy) owns texel (16 gx + tx, 16 gy + ty) of the pass's
// anchor level (its second, or its only one) and sums it in registers from its children
// (first level) and their source texels; levels 3.. of the pass come from workgroup memory,
// 16 x 16 anchor texels a tile, each level texel kept at its first anchor texel's place.
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let n = prm.levels;
    let r = min(1u, n - 1u);
    let anchor = prm.lv[r];
    let p = wg.xy * 16u + lid.xy;
    let inside = all(p < anchor.size);
    let f0 = prm.lv[0].f;
    let rc = vec2<u32>(1u) << (anchor.f - f0);  // children of the anchor texel on each axis
    var acc = zero_acc();
    if (inside && BITS == 8u && !FROM_SUMS) {
        var an = zero_narrow();
        for (var cy = 0u; cy < rc.y; cy++) {
            for (var cx = 0u; cx < rc.x; cx++) {
                let c = p * rc + vec2<u32>(cx, cy);
                var child = zero_narrow();
                let fs = vec2<u32>(1u) << f0;
                for (var sy = 0u; sy < fs.y; sy++) {
                    for (var sx = 0u; sx < fs.x; sx++) {
                        add_narrow(&child, c * fs + vec2<u32>(sx, sy));
                    }
                }
                if (r == 1u) {
                    finalize(0u, c.x, c.y, wide(child));
                }
                an = sum_narrow(an, child);
            }
        }
        acc = wide(an);
        finalize(r, p.x, p.y, acc);
    } else if (inside) {
        for (var cy = 0u; cy < rc.y; cy++) {
            for (var cx = 0u; cx < rc.x; cx++) {
                let c = p * rc + vec2<u32>(cx, cy);
                var child = zero_acc();
                let fs = vec2<u32>(1u) << f0;
                for (var sy = 0u; sy < fs.y; sy++) {
                    for (var sx = 0u; sx < fs.x; sx++) {
                        add_source(&child, c * fs + vec2<u32>(sx, sy));
                    }
                }
                if (r == 1u) {
                    finalize(0u, c.x, c.y, child);
                    acc = add_acc(acc, child);
                } else {
                    acc = child;
                }
            }
        }
        finalize(r, p.x, p.y, acc);
    }
    if (n <= 2u) {
        return;
    }
    tile_put(lid.xy, collapse(acc));
    for (var i = 2u; i < n; i++) {
        workgroupBarrier();
        let g = prm.lv[i].f - anchor.f;        // anchor texels per texel of level i
        let gp = prm.lv[i - 1u].f - anchor.f;  // ... of level i - 1
        let rr = vec2<u32>(1u) << (g - gp);
        let t = vec2<u32>(16u) >> g;           // level i texels in the tile
        let q = wg.xy * t + lid.xy;
        let mine = all(lid.xy < t) && all(q < prm.lv[i].size);
        var sum = zero_acc();
        if (mine) {
            for (var cy = 0u; cy < rr.y; cy++) {
                for (var cx = 0u; cx < rr.x; cx++) {
                    add_collapsed(&sum, tile_get((lid.xy * rr + vec2<u32>(cx, cy)) << gp));
                }
            }
        }
        workgroupBarrier();
        if (mine) {
            tile_put(lid.xy << g, collapse(sum));
            finalize(i, q.x, q.y, sum);
        }
    }
}
