//! include mip_intmath.wgsl
//! include mip_screen.wgsl
//! include mip_store.wgsl
//! default LEVEL_OUT buffer_level
//! default STORE_FORMAT rgba8unorm
//! default SG_ARGS
//! default SG_INDEX t0
//! default WG_SIZE 256u
//! default WG_TX 1u
//! default SG_SIZE 0u
//! default SG_ON false
//! default SG_LEVELS no_sg_levels
//! default QUAD_SUMS no_quad_sums
//! default QUAD_IF quad
//! default ANCHOR_R min(1u, n - 1u)
//! default ANCHOR_LV min(1u, prm.levels - 1u)
//! default ANCHOR_NEXT 2u
//! default SG_XOR no_shuffle
//! default WORD_CODE no_word_code
//! default TEXEL_CODES texel_codes
//! default SG_LEVEL3N no_sg_level3n
//! default SG_NARROW false
//! default KEEP3 keep_plain
//! default HANDOFF_CODE
//! default HANDOFF_CALL
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
override ROUND_A_LEVEL: bool = true;  // levels 3.. of a pass a barrier each (else two rounds: main)

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
// LEVEL_OUT = store_level: the pass's levels stored straight into the texture, one write view
// each (spd.py binds a 1x1 stand-in for a pass's missing levels); else `out` and copies
@group(0) @binding(6) var level0: texture_storage_2d<STORE_FORMAT, write>;
@group(0) @binding(7) var level1: texture_storage_2d<STORE_FORMAT, write>;
@group(0) @binding(8) var level2: texture_storage_2d<STORE_FORMAT, write>;
@group(0) @binding(9) var level3: texture_storage_2d<STORE_FORMAT, write>;
@group(0) @binding(10) var level4: texture_storage_2d<STORE_FORMAT, write>;
@group(0) @binding(11) var level5: texture_storage_2d<STORE_FORMAT, write>;

// 16 x 16 texels x 4 slots x 3 words (tile_put), then the level slots (lsums_put)
var<workgroup> tile: array<u32, 4092>;

// 8-bit sRGB: L and the float thresholds in workgroup memory (a warp's 32 lookups of random
// codes in a storage buffer touch up to 16 cache lines each)
override SMEM_TABLES: bool = BITS == 8u && SRGB;
var<workgroup> ltab: array<u32, 256>;
var<workgroup> qtab: array<f32, 257>;

// The GPU forms (ROUND_A_LEVEL: spd.py sets it on every adapter but a CPU one; the tests force it),
// measured on the H200 (docs/performance.md, helper h16pass). On lavapipe they cost compile time
// (+0.7 s cold) and gain nothing, so CPU adapters keep the forms below each one.
// 8-bit: the screen's doubtful codes decided by one exact comparison (exact_one) instead of the exact
// search. The estimate x is within 2^-20 of the value (relative); its code k (sRGB: from a bucket
// table, intbox.bucket_table, one lookup and one comparison, no pow) is exactly the k with
// q[k] <= x < q[k + 1] for the float thresholds q; the thresholds are >= 0.39% apart (linear: k +- 1/2
// at k <= 255; sRGB: >= 0.9%). So where x is within MARGIN (2^-18) of one of them the value's code is
// one of the two codes beside that threshold, the other thresholds are far, and Q[j] <= value
// decides. No search and no 96-bit fallback in the first pass's summing phase. (Else: the screen
// on the pow encode, its misses by finalize and the search.)
override ONE_THRESHOLD: bool = ROUND_A_LEVEL;
override ONE: bool = ONE_THRESHOLD && SCREEN && BITS == 8u;
// With ONE, first passes whose texels have 2x2 children of 2x2 base texels each (both axes halve
// twice): a child's four base texels loaded together, without the loops over the footprint (a
// loop's loads wait for one another; H200: first pass -13%; all sixteen loaded first: -9%).
override QUAD: bool = true;
const BUCKET_LOW: i32 = 18432;   // intbox.BUCKET_LOW
const BUCKETS: i32 = 1793;       // intbox.BUCKETS
const BUCKET_WORDS: u32 = 449u;  // four codes a word
const BUCKET_AT: u32 = 1536u;    // the buckets' first word in `tables` (after L, Q, Q / 2^32)
var<workgroup> btab: array<u32, 449>;

// The code of float z >= 0 (L's units) against the float thresholds (k: q[k] <= z < q[k + 1])
fn bucket_code(z: f32) -> u32 {
    let b = u32(clamp(i32(bitcast<u32>(z) >> 16u) - BUCKET_LOW, 0, BUCKETS - 1));
    var w = 0u;
    if (SMEM_TABLES) {
        w = btab[b >> 2u];
    } else {
        w = tables[BUCKET_AT + (b >> 2u)];
    }
    let k = (w >> ((b & 3u) * 8u)) & 255u;
    return k + select(0u, 1u, k < 255u && z >= threshold_f(k + 1u, true));
}

// CODE_WORDS (GPU forms, spd.CODE_WORDS; WORD_CODE = word_code): an 8-bit sRGB code and its doubt from
// one word a bucket (intbox.code_words, in `tables` from CODE_AT), with integer comparisons of the
// estimate's bits: no float threshold lookups (bucket_code and exact_one read three or four words of
// workgroup memory a channel). k is exactly bucket_code's (the float thresholds' code of x); where x
// lies within CODE_DOUBT float steps (>= 2^-18 of the value, as MARGIN) of a threshold, one exact
// comparison with that threshold decides, as in exact_one.
override CODE_WORDS: bool = false;
const CODE_AT: u32 = 1985u;    // after L, Q, Q / 2^32 and the buckets' codes (integer.table_words)
const CODE_DOUBT: u32 = 64u;   // intbox.CODE_DOUBT

fn no_word_code(num: Big, den: Big, x: f32) -> u32 {  // (WORD_CODE without the GPU forms: never called)
    return 0u;
}

fn word_code(num: Big, den: Big, x: f32) -> u32 {
    let xb = bitcast<u32>(x);
    let w = tables[CODE_AT + u32(clamp(i32(xb >> 16u) - BUCKET_LOW, 0, BUCKETS - 1))];
    let lo = xb & 0xffffu;
    let t = w >> 16u;
    let k0 = w & 255u;
    let has = (w >> 8u) & 1u;
    let near_t = has == 1u && lo + CODE_DOUBT > t && lo < t + CODE_DOUBT;
    let near_lo = (w & 0x200u) != 0u && lo < CODE_DOUBT;
    let near_hi = (w & 0x400u) != 0u && lo + CODE_DOUBT >= 65536u;
    if (!(near_t || near_lo || near_hi)) {
        return k0 + select(0u, 1u, has == 1u && lo >= t);
    }
    let j = k0 + select(0u, 1u, near_t) + select(0u, 1u + has, near_hi);  // (near_lo: k0)
    return select(j - 1u, j, reaches(num, den, j, true));
}

// The code of num / den from a screened estimate x and its code k (q[k] <= x < q[k + 1], or the
// estimate's nearest linear code): k where x is clearly inside, else the exact comparison with the
// threshold it is next to (ONE's reasoning).
fn exact_one(num: Big, den: Big, x: f32, k: u32, srgb: bool) -> u32 {
    let above = k == 0u || x >= threshold_f(k, srgb) * (1.0 + MARGIN);
    let below = k == top() || x < threshold_f(k + 1u, srgb) * (1.0 - MARGIN);
    if (above && below) {
        return k;
    }
    let j = select(k, k + 1u, above);  // below failed: x is next to q[k + 1]
    return select(j - 1u, j, reaches(num, den, j, srgb));
}

// (No loops over words or channels below: an array or vector indexed by a loop variable lives in
// local memory on some compilers, which made the first version of this shader 10x slower on the
// H200 than its arithmetic.)

// The code of a linear value num / 2^s (1 <= s <= 30): exact, round half up (= round_code's
// answer with the linear thresholds (2k - 1) / 2: num + 2^(s-1) >= k 2^s).
fn round_pow2(num: Big, s: u32) -> u32 {
    let t = add(num, Big(1u << (s - 1u), 0u, 0u, 0u));
    return (t.x >> s) | (t.y << (32u - s));
}

// Sums of a texel: colour c0-c2 (grey in c0), alpha a, plain colour p0-p2 (weighted alpha,
// used where the alpha sum is 0).
struct Acc {
    c0: Big, c1: Big, c2: Big, a: Big, p0: Big, p1: Big, p2: Big,
}

// Collapsed sums (workgroup memory, stored sums): colour (premultiplied, or plain where the
// alpha sum is 0) and alpha.
struct Sums {
    c0: Big, c1: Big, c2: Big, a: Big,
}

fn zero_acc() -> Acc {
    let z = Big(0u);
    return Acc(z, z, z, z, z, z, z);
}

fn add_acc(a: Acc, b: Acc) -> Acc {
    return Acc(add(a.c0, b.c0), add(a.c1, b.c1), add(a.c2, b.c2), add(a.a, b.a),
               add(a.p0, b.p0), add(a.p1, b.p1), add(a.p2, b.p2));
}

// Collapsed sums added to acc: texels without alpha hold plain sums, they go to the plain slots.
fn add_collapsed(acc: Acc, s: Sums) -> Acc {
    let z = Big(0u);
    let plain = WA && !nonzero(s.a);
    var r = acc;
    r.a = add(acc.a, s.a);
    r.c0 = add(acc.c0, select(s.c0, z, plain));
    r.p0 = add(acc.p0, select(z, s.c0, plain));
    if (NC == 3u) {
        r.c1 = add(acc.c1, select(s.c1, z, plain));
        r.p1 = add(acc.p1, select(z, s.c1, plain));
        r.c2 = add(acc.c2, select(s.c2, z, plain));
        r.p2 = add(acc.p2, select(z, s.c2, plain));
    }
    return r;
}

fn collapse(acc: Acc) -> Sums {
    if (WA && !nonzero(acc.a)) {
        return Sums(acc.p0, acc.p1, acc.p2, acc.a);
    }
    return Sums(acc.c0, acc.c1, acc.c2, acc.a);
}

fn big3(b: array<u32, 3>) -> Big {
    return Big(b[0], b[1], b[2], 0u);
}

// Stored sums: SLOTS x 3 words a texel (grey, alpha; or r, g, b, alpha)
fn load_sums(p: vec2<u32>) -> Sums {
    let i = (p.y * prm.src_size.x + p.x) * SLOTS * 3u;
    let z = Big(0u);
    let s0 = Big(src_sums[i], src_sums[i + 1u], src_sums[i + 2u], 0u);
    if (NC == 1u) {
        if (HAS_ALPHA) {
            return Sums(s0, z, z, Big(src_sums[i + 3u], src_sums[i + 4u], src_sums[i + 5u], 0u));
        }
        return Sums(s0, z, z, z);
    }
    return Sums(s0, Big(src_sums[i + 3u], src_sums[i + 4u], src_sums[i + 5u], 0u),
                Big(src_sums[i + 6u], src_sums[i + 7u], src_sums[i + 8u], 0u),
                Big(src_sums[i + 9u], src_sums[i + 10u], src_sums[i + 11u], 0u));
}

fn store_sums(j: u32, s: Sums) {
    KEEP3(j, s.c0);
    var k = j + 3u;
    if (NC == 3u) {
        KEEP3(j + 3u, s.c1);
        KEEP3(j + 6u, s.c2);
        k = j + 9u;
    }
    if (HAS_ALPHA) {
        KEEP3(k, s.a);
    }
}

// The kept sums' three words of a value at word j (KEEP3; keep_handoff where the chain's last levels
// are made by the pass's last workgroup: mip_spd_tail.wgsl)
fn keep_plain(j: u32, v: Big) {
    dst_sums[j] = v.x;
    dst_sums[j + 1u] = v.y;
    dst_sums[j + 2u] = v.z;
}

// A source texel added to acc (16-bit base texels, or stored sums).
fn add_source(acc: Acc, p: vec2<u32>) -> Acc {
    if (FROM_SUMS) {
        return add_collapsed(acc, load_sums(p));
    }
    let c = load_codes(vec2<i32>(p));
    var r = acc;
    r.a = add(acc.a, Big(c.w, 0u, 0u, 0u));
    let l0 = lin(c.x, SRGB);
    if (WA) {
        r.c0 = add(acc.c0, mul_lin(l0, c.w));
        r.p0 = add(acc.p0, l0);
    } else {
        r.c0 = add(acc.c0, l0);
    }
    if (NC == 3u) {
        let l1 = lin(c.y, SRGB);
        let l2 = lin(c.z, SRGB);
        if (WA) {
            r.c1 = add(acc.c1, mul_lin(l1, c.w));
            r.p1 = add(acc.p1, l1);
            r.c2 = add(acc.c2, mul_lin(l2, c.w));
            r.p2 = add(acc.p2, l2);
        } else {
            r.c1 = add(acc.c1, l1);
            r.c2 = add(acc.c2, l2);
        }
    }
    return r;
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

fn add_narrow(n: Narrow, p: vec2<u32>) -> Narrow {
    return add_codes(n, load_codes(vec2<i32>(p)));
}

fn add_codes(n: Narrow, c: vec4<u32>) -> Narrow {
    var l = c;
    if (SMEM_TABLES) {
        l = vec4<u32>(ltab[c.x & 255u], ltab[c.y & 255u], ltab[c.z & 255u], 0u);
    } else if (SRGB) {
        l = vec4<u32>(tables[2u * c.x], tables[2u * c.y], tables[2u * c.z], 0u);
    }
    let lh = l >> vec4<u32>(16u);
    let ll = l & vec4<u32>(0xffffu);
    var r = n;
    if (WA) {
        r.nh = n.nh + lh * c.w;
        r.nl = n.nl + ll * c.w;
    }
    r.sh = n.sh + lh;
    r.sl = n.sl + ll;
    r.a = n.a + c.w;
    return r;
}

fn sum_narrow(a: Narrow, b: Narrow) -> Narrow {
    return Narrow(a.nh + b.nh, a.nl + b.nl, a.sh + b.sh, a.sl + b.sl, a.a + b.a);
}

// (h * 2^16 + l) of each channel: low words, high words
fn widen(h: vec4<u32>, l: vec4<u32>) -> array<vec4<u32>, 2> {
    let lo = (h << vec4<u32>(16u)) + l;
    return array<vec4<u32>, 2>(lo, (h >> vec4<u32>(16u)) + select(vec4<u32>(0u), vec4<u32>(1u), lo < l));
}

fn wide(n: Narrow) -> Acc {
    let s = widen(n.sh, n.sl);
    let ps = array<Big, 3>(Big(s[0].x, s[1].x, 0u, 0u), Big(s[0].y, s[1].y, 0u, 0u), Big(s[0].z, s[1].z, 0u, 0u));
    let a = Big(n.a, 0u, 0u, 0u);
    if (WA) {
        let w = widen(n.nh, n.nl);
        return Acc(Big(w[0].x, w[1].x, 0u, 0u), Big(w[0].y, w[1].y, 0u, 0u), Big(w[0].z, w[1].z, 0u, 0u), a,
                   ps[0], ps[1], ps[2]);
    }
    let z = Big(0u);
    return Acc(ps[0], ps[1], ps[2], a, z, z, z);
}

// Level i's texel (x, y): codes (r, g, b, a; grey in r, its alpha in g) into the output words
// (buffer_level), or into the level's storage view (store_level, 8-bit RGBA only): LEVEL_OUT
fn write_texel(i: u32, x: u32, y: u32, codes: vec4<u32>) {
    LEVEL_OUT(i, x, y, codes);
}

fn buffer_level(i: u32, x: u32, y: u32, codes: vec4<u32>) {
    store_codes(prm.mt[i].off + y * prm.mt[i].pitch, x, codes);
}

fn store_level(i: u32, x: u32, y: u32, codes: vec4<u32>) {
    let p = vec2<u32>(x, y);
    let v = store_value(codes);
    switch i {
        case 0u: { textureStore(level0, p, v); }
        case 1u: { textureStore(level1, p, v); }
        case 2u: { textureStore(level2, p, v); }
        case 3u: { textureStore(level3, p, v); }
        case 4u: { textureStore(level4, p, v); }
        default: { textureStore(level5, p, v); }
    }
}

fn pick(acc: Acc, c: u32, plain: bool) -> Big {
    if (plain) {
        return select(select(acc.p0, acc.p1, c == 1u), acc.p2, c == 2u);
    }
    return select(select(acc.c0, acc.c1, c == 1u), acc.c2, c == 2u);
}

// Codes of level i's texel (x, y) from its sums (value = sum / 2^s, or colour / alpha sum);
// the pass's last level's sums stored for the next pass.
fn finalize(i: u32, x: u32, y: u32, acc: Acc) {
    let a = acc.a;
    let s = prm.mt[i].s;
    let w = Big(1u << s, 0u, 0u, 0u);
    let covered = WA && nonzero(a);
    var codes = vec4<u32>(0u);
    for (var c = 0u; c < prm.channels; c++) {  // (not unrolled: one copy of the rounding)
        let alpha = c == NC;
        var num = select(pick(acc, c, WA && !covered), a, alpha);
        let srgb = SRGB && !alpha;
        var code = 0u;
        if (SCREEN && !srgb && !(covered && !alpha)) {  // a linear value over 2^s
            code = round_pow2(num, s);
        } else {
            code = round_fast(num, select(w, a, covered && !alpha), srgb);
        }
        codes = select(codes, vec4<u32>(code), vec4<u32>(c) == vec4<u32>(0u, 1u, 2u, 3u));
    }
    if (NC == 1u) {
        codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
    }
    write_texel(i, x, y, codes);
    if (STORE && i + 1u == prm.levels) {
        store_sums((y * prm.lv[i].size.x + x) * SLOTS * 3u, collapse(acc));
    }
}

// Levels 1-2 of a first pass from 8-bit base texels (at most 16 a texel): the codes straight from
// the 32-bit lanes where they are certain (true), else nothing (false: the caller's finalize
// gives the exact path's codes, the same bytes; one call site, out of the summing loops).
// Alpha and linear colour over 2^s: the sum (below 16 * 255 < 2^12) shifted, rounding half up
// (round_pow2's answer). Other colour: round_fast's screen on a float estimate with fewer
// roundings than approx(): the lanes h, l (value h 2^16 + l) are below 16 * 255 * 2^16 < 2^28,
// so f32(h) 65536 + f32(l) is off by at most 3 2^-24 relative, the divisor (2^s or the alpha
// sum, below 2^12) is exact, the division (2.5 ulp) adds 5 2^-24 and the table's float 2^-24:
// 9 2^-24 < 2^-20, the error round_fast's MARGIN (2^-18) is set against.
fn finalize_narrow(i: u32, x: u32, y: u32, n: Narrow) -> bool {
    let s = prm.mt[i].s;
    let half = 1u << (s - 1u);
    let covered = WA && n.a != 0u;
    var col = (n.sl.xyz + vec3<u32>(half)) >> vec3<u32>(s);
    var sure = SCREEN && !(STORE && i + 1u == prm.levels);
    if (ONE && (SRGB || covered)) {
        let h = select(n.sh.xyz, n.nh.xyz, covered);
        let l = select(n.sl.xyz, n.nl.xyz, covered);
        let den = select(1u << s, n.a, covered);
        let xv = (vec3<f32>(h) * 65536.0 + vec3<f32>(l)) / f32(den);
        let wl = widen(vec4<u32>(h, 0u), vec4<u32>(l, 0u));  // the sums h 2^16 + l: low, high words
        let d = Big(den, 0u, 0u, 0u);
        if (SRGB && CODE_WORDS) {
            col.x = WORD_CODE(Big(wl[0].x, wl[1].x, 0u, 0u), d, xv.x);
            if (NC == 3u) {
                col.y = WORD_CODE(Big(wl[0].y, wl[1].y, 0u, 0u), d, xv.y);
                col.z = WORD_CODE(Big(wl[0].z, wl[1].z, 0u, 0u), d, xv.z);
            }
        } else {
            if (SRGB) {
                col = vec3<u32>(bucket_code(xv.x), bucket_code(xv.y), bucket_code(xv.z));
            } else {
                col = vec3<u32>(clamp(floor(xv + vec3<f32>(0.5)), vec3<f32>(0.0), vec3<f32>(255.0)));
            }
            col.x = exact_one(Big(wl[0].x, wl[1].x, 0u, 0u), d, xv.x, col.x, SRGB);
            if (NC == 3u) {
                col.y = exact_one(Big(wl[0].y, wl[1].y, 0u, 0u), d, xv.y, col.y, SRGB);
                col.z = exact_one(Big(wl[0].z, wl[1].z, 0u, 0u), d, xv.z, col.z, SRGB);
            }
        }
    } else if (SRGB || covered) {
        let h = select(n.sh.xyz, n.nh.xyz, covered);
        let l = select(n.sl.xyz, n.nl.xyz, covered);
        let xv = (vec3<f32>(h) * 65536.0 + vec3<f32>(l)) / select(f32(1u << s), f32(n.a), covered);
        var v = xv;
        if (SRGB) {
            v = srgb_encode3(xv / 2147483648.0) * 255.0;
        }
        col = vec3<u32>(clamp(floor(v + vec3<f32>(0.5)), vec3<f32>(0.0), vec3<f32>(255.0)));
        let tl = vec3<f32>(threshold_f(col.x, SRGB), threshold_f(col.y, SRGB), threshold_f(col.z, SRGB));
        let th = vec3<f32>(threshold_f(col.x + 1u, SRGB), threshold_f(col.y + 1u, SRGB),
                           threshold_f(col.z + 1u, SRGB));
        let above = col == vec3<u32>(0u) | xv >= tl * (1.0 + MARGIN);
        let below = col == vec3<u32>(255u) | xv < th * (1.0 - MARGIN);
        sure = sure && all((above & below) | vec3<bool>(false, NC == 1u, NC == 1u));
    }
    if (ONE && STORE && i + 1u == prm.levels) {  // (a pass of at most 2 levels that is not the last)
        store_sums((y * prm.lv[i].size.x + x) * SLOTS * 3u, collapse(wide(n)));
    }
    if (sure || ONE) {
        let a = (n.a + half) >> s;
        var codes = vec4<u32>(col, a);
        if (NC == 1u) {
            codes = vec4<u32>(col.x, 0u, 0u, a);
        }
        write_texel(i, x, y, codes);
    }
    return sure || ONE;
}

// The sums of first-level texel c from its source texels.
fn child_narrow(c: vec2<u32>, fs: vec2<u32>) -> Narrow {
    var child = zero_narrow();
    for (var sy = 0u; sy < fs.y; sy++) {
        for (var sx = 0u; sx < fs.x; sx++) {
            child = add_narrow(child, c * fs + vec2<u32>(sx, sy));
        }
    }
    return child;
}

// TEXEL_CODES = texel_codes_pack (GPU forms, spd.PACK_CODES): an 8-bit RGBA linear view's codes by
// pack4x8unorm, WGSL's floor(0.5 + 255 clamp(v)), texel_codes' formula in one instruction (a loaded
// unorm value is within an ulp of c / 255, far from a rounding tie: the same codes however the
// conversion rounds)
fn texel_codes_pack(t: vec4<f32>) -> vec4<u32> {
    if (!SRGB_VIEW && CHANNELS == 4u && BITS == 8u) {
        let w = pack4x8unorm(t);
        return vec4<u32>(w & 255u, (w >> 8u) & 255u, (w >> 16u) & 255u, w >> 24u);
    }
    return texel_codes(t);
}

// QUAD: the anchor texel p's sums, its children's codes written: a child's four texels loaded
// together, one child after the other
fn quad_by_child(p: vec2<u32>) -> Narrow {
    var an = zero_narrow();
    for (var k = 0u; k < 4u; k++) {
        let c = 2u * p + vec2<u32>(k & 1u, k >> 1u);
        let b = vec2<i32>(2u * c);
        let t0 = textureLoad(src, b, 0);
        let t1 = textureLoad(src, b + vec2<i32>(1, 0), 0);
        let t2 = textureLoad(src, b + vec2<i32>(0, 1), 0);
        let t3 = textureLoad(src, b + vec2<i32>(1, 1), 0);
        var child = add_codes(zero_narrow(), TEXEL_CODES(t0));
        child = add_codes(child, TEXEL_CODES(t1));
        child = add_codes(child, TEXEL_CODES(t2));
        child = add_codes(child, TEXEL_CODES(t3));
        finalize_narrow(0u, c.x, c.y, child);
        an = sum_narrow(an, child);
    }
    return an;
}

// SUMS_QUAD (GPU forms): a pass from stored sums whose texels have 2x2 children of 2x2 source texels
// (a power-of-two chain's passes after the first; the last is one workgroup, bound by its chain of
// dependent steps): a child's four sums loaded together, its codes by round_one (exact_one, no
// search), as QUAD does for the base. The same numbers and comparisons as finalize's, so the same
// bytes. (H200, the one-workgroup second pass of a six-level design: 0.0431 -> 0.0420 ms.)
override SUMS_QUAD: bool = ROUND_A_LEVEL;

// Level i's texel (x, y) from its collapsed sums: every channel rounded (round_one), written, and
// its sums kept where it is the pass's last level
fn finalize_sums(i: u32, x: u32, y: u32, sm: Sums) {
    let s = prm.mt[i].s;
    var codes = vec4<u32>(round_one(sm, 0u, s), 0u, 0u, 0u);
    if (NC == 3u) {
        codes.y = round_one(sm, 1u, s);
        codes.z = round_one(sm, 2u, s);
    }
    if (HAS_ALPHA) {
        codes.w = round_one(sm, NC, s);
    }
    write_texel(i, x, y, codes);
    if (STORE && i + 1u == prm.levels) {
        store_sums((y * prm.lv[i].size.x + x) * SLOTS * 3u, sm);
    }
}

// (QUAD_SUMS: quad_sums where spd.py gives the GPU forms, else this stand-in, never called: CPU
// adapters' compilers then never see the code, lavapipe's cold compile)
fn no_quad_sums(p: vec2<u32>) -> Acc {
    return zero_acc();
}

// The anchor texel p's sums, its children's codes and its own written
fn quad_sums(p: vec2<u32>) -> Acc {
    var an = zero_acc();
    for (var k = 0u; k < 4u; k++) {
        let c = 2u * p + vec2<u32>(k & 1u, k >> 1u);
        let b = 2u * c;
        let s0 = load_sums(b);
        let s1 = load_sums(b + vec2<u32>(1u, 0u));
        let s2 = load_sums(b + vec2<u32>(0u, 1u));
        let s3 = load_sums(b + vec2<u32>(1u, 1u));
        let child = add_collapsed(add_collapsed(add_collapsed(add_collapsed(zero_acc(), s0), s1), s2), s3);
        finalize_sums(0u, c.x, c.y, collapse(child));
        an = add_acc(an, child);
    }
    finalize_sums(1u, p.x, p.y, collapse(an));
    return an;
}

// The pass's first-level texel c's sums from its 2x2 stored sums (loaded together), its codes written:
// quad_sums' loop body, for a pass anchored at its first level (QUAD_SUMS = child_sums, below). Written
// twice on purpose: with quad_sums calling this function (in every pass's text, though the first pass
// never runs it) the H200's first pass took 0.119 ms at 4096^2 against 0.097 with the body written in
// (benchmarks/results/mip-spd-variants-h200-s33-call3.txt, the variant `oldquad`; 8192^2 0.430 / 0.344).
fn child_sums(c: vec2<u32>) -> Acc {
    let b = 2u * c;
    let s0 = load_sums(b);
    let s1 = load_sums(b + vec2<u32>(1u, 0u));
    let s2 = load_sums(b + vec2<u32>(0u, 1u));
    let s3 = load_sums(b + vec2<u32>(1u, 1u));
    let child = add_collapsed(add_collapsed(add_collapsed(add_collapsed(zero_acc(), s0), s1), s2), s3);
    finalize_sums(0u, c.x, c.y, collapse(child));
    return child;
}

// A pass from stored sums anchored at its first level (GPU forms, spd.ANCHOR_FIRST; substituted, so that
// the other passes' code is the same text as before it): a thread a first-level texel from its 2x2 sums
// (QUAD_SUMS = child_sums where QUAD_IF, the footprints are 2x2), the tile's levels from the pass's
// second on (ANCHOR_R = ANCHOR_LV = 0u: the anchor's index in the pass; ANCHOR_NEXT = 1u: the first level
// the tile makes), five levels a pass at most: up to four times the workgroups of a pass anchored at its
// second level (twice on a strip), each reading a quarter of the sums (a 4096^2 chain's second pass had 64
// workgroups of 256 invocations for the H200's 132 SMs).

// The tile's levels, those after the anchor's (i = ANCHOR_NEXT.., the pass's levels 3.. or, anchored at
// its first level, 2..): a level's texels o < level_extent(i), at most 64, 16, 4 and 1 of them (an axis
// that still halves has 16 >> (i - ANCHOR_NEXT + 1) texels in the tile, one that stopped is 1 texel
// long), kept at level_slot(i, o): their sums (12 words a texel) in `tile` after the anchor level's
// (lsums_put), their codes (two 16-bit codes a word) in ctile.
var<workgroup> ctile: array<atomic<u32>, 256>;

fn level_extent(i: u32) -> vec2<u32> {
    let t = vec2<u32>(16u) >> (prm.lv[i].f - prm.lv[ANCHOR_LV].f);
    return select(t, vec2<u32>(1u), prm.lv[i].size == vec2<u32>(1u));
}

fn level_slot(i: u32, o: vec2<u32>) -> u32 {
    return 85u - (85u >> (2u * (i - ANCHOR_NEXT))) + o.y * level_extent(i).x + o.x;
}

fn lsums_put(k: u32, s: Sums) {  // word w of slot k at tile[3072 + 85 w + k]
    sums_put(3072u + k, 85u, s);
}

fn lsums_get(k: u32) -> Sums {
    return sums_get(3072u + k, 85u);
}

// Sums whose word w is at tile[j + w * stride], read and written
fn sums_get(j: u32, stride: u32) -> Sums {
    return Sums(Big(tile[j], tile[j + stride], tile[j + 2u * stride], 0u),
                Big(tile[j + 3u * stride], tile[j + 4u * stride], tile[j + 5u * stride], 0u),
                Big(tile[j + 6u * stride], tile[j + 7u * stride], tile[j + 8u * stride], 0u),
                Big(tile[j + 9u * stride], tile[j + 10u * stride], tile[j + 11u * stride], 0u));
}

fn sums_put(j: u32, stride: u32, s: Sums) {
    tile[j] = s.c0.x;
    tile[j + stride] = s.c0.y;
    tile[j + 2u * stride] = s.c0.z;
    tile[j + 3u * stride] = s.c1.x;
    tile[j + 4u * stride] = s.c1.y;
    tile[j + 5u * stride] = s.c1.z;
    tile[j + 6u * stride] = s.c2.x;
    tile[j + 7u * stride] = s.c2.y;
    tile[j + 8u * stride] = s.c2.z;
    tile[j + 9u * stride] = s.a.x;
    tile[j + 10u * stride] = s.a.y;
    tile[j + 11u * stride] = s.a.z;
}

// The code of channel c (the alpha's at NC) of a texel from its collapsed sums: finalize's
// rounding for one channel (colour slots hold the plain sums where the alpha sum is 0).
fn round_one(sm: Sums, c: u32, s: u32) -> u32 {
    let covered = WA && nonzero(sm.a);
    let alpha = c == NC;
    let num = select(select(select(sm.c0, sm.c1, c == 1u), sm.c2, c == 2u), sm.a, alpha);
    let srgb = SRGB && !alpha;
    if (SCREEN && !srgb && !(covered && !alpha)) {
        return round_pow2(num, s);
    }
    let den = select(Big(1u << s, 0u, 0u, 0u), sm.a, covered && !alpha);
    if (ONE) {  // (approx()'s estimate: within 2^-20 too, see round_fast)
        let x = approx(num) / approx(den);
        if (srgb && CODE_WORDS) {
            return WORD_CODE(num, den, x);
        }
        var k = u32(clamp(floor(x + 0.5), 0.0, 255.0));
        if (srgb) {
            k = bucket_code(x);
        }
        return exact_one(num, den, x, k, srgb);
    }
    return round_fast(num, den, srgb);
}

// Levels 3.. one a round (ROUND_A_LEVEL), each (texel, channel) summed by a thread of its own: a
// quarter of the dependent steps and of the words read per thread of whole texels' sums (each reads
// its children's alpha and one channel, 24 words, not 48), four times the threads
override CHANNEL_ROUNDS: bool = ROUND_A_LEVEL;

// Channel ch (3: alpha) of the texel whose children are the rr block at o * rr of a level in `tile`
// (child c's word w at tile[base + c.y * row + c.x + w * stride]): with weighted alpha the children's
// premultiplied sums, or their plain ones where the alpha sum is 0 (alpha: prem is the alpha sum)
fn children_sum(o: vec2<u32>, rr: vec2<u32>, base: u32, row: u32, stride: u32, ch: u32) -> Big {
    let z = Big(0u);
    var a = z;
    var prem = z;
    var plain = z;
    for (var cy = 0u; cy < rr.y; cy++) {
        for (var cx = 0u; cx < rr.x; cx++) {
            let c = o * rr + vec2<u32>(cx, cy);
            let k = base + c.y * row + c.x;
            let ca = Big(tile[k + 9u * stride], tile[k + 10u * stride], tile[k + 11u * stride], 0u);
            let w = k + 3u * ch * stride;
            let cv = Big(tile[w], tile[w + stride], tile[w + 2u * stride], 0u);
            let pl = WA && !nonzero(ca);
            a = add(a, ca);
            prem = add(prem, select(cv, z, pl));
            plain = add(plain, select(z, cv, pl));
        }
    }
    return select(prem, plain, WA && !nonzero(a));
}

// Channel ch (3: alpha) of level i's texel o (q in the level) from its children in level i - 1 (the
// tile for i = ANCHOR_NEXT): into its slot (lsums_put's layout), and the stored sums if the pass keeps
// them. Colour: the premultiplied sums of the children with alpha, or where the alpha sum is 0 the plain
// ones (add_collapsed, collapse).
fn channel_sum(i: u32, o: vec2<u32>, q: vec2<u32>, ch: u32) {
    let from_tile = i == ANCHOR_NEXT;
    let rr = vec2<u32>(1u) << (prm.lv[i].f - prm.lv[i - 1u].f);
    let stride = select(85u, 256u, from_tile);
    let row = select(level_extent(i - 1u).x, 16u, from_tile);
    let base = select(3072u + level_slot(i - 1u, vec2<u32>(0u)), 0u, from_tile);
    let v = children_sum(o, rr, base, row, stride, ch);
    let at = 3072u + 255u * ch + level_slot(i, o);  // word 3 ch of the slot (lsums_put)
    tile[at] = v.x;
    tile[at + 85u] = v.y;
    tile[at + 170u] = v.z;
    if (STORE && i + 1u == prm.levels && (ch < NC || (ch == 3u && HAS_ALPHA))) {
        let d = (q.y * prm.lv[i].size.x + q.x) * SLOTS * 3u + 3u * select(ch, NC, ch == 3u);
        KEEP3(d, v);
    }
}

// The subgroup form (spd.SUBGROUPS: the device's `subgroup` feature; SG_* substituted, else
// SG_SIZE is 0 and none of this runs). Thread t (its subgroup's index times the subgroup's size plus
// its lane: no assumption on how the hardware groups invocations) owns anchor texel morton(t) of
// the tile, so the 2x2 children of level 3's texel t >> 2 are lanes t ^ 1, t ^ 2, t ^ 3 and the 4x4
// of level 4's texel t >> 4 the lanes t ^ 4.. t ^ 12 (subgroups of 16 or more lanes). The sums are
// integers: exchanged and added in any order they are the same numbers, so the bytes are the tile's.
// First passes only, level 3 only: on the H200 level 4 by exchanges too was slower than through the
// rounds (a six-level first pass 0.221 against 0.213 ms at 4096^2), and passes from stored sums were
// slower with it (one workgroup: 4-6 us; with the three-level first pass, in every pass: 4096^2 0.212
// against 0.207 ms, 8192^2 0.584 against 0.570; docs/performance.md, helper h16tile).
override SG_LEVEL4: bool = false;
// The host's knowledge of a pass, as constants (GPU forms; 0 / 2: read from prm at run time): its
// levels, and whether its level 3 halves both axes of its level 2 (1) or not (0) (the subgroup
// form's condition). Then the code of what the pass does not do is dropped, and with it registers
// (a first pass of three levels has no rounds in workgroup memory).
override PASS_LEVELS: u32 = 0u;
override SG_TILE: u32 = 2u;

fn morton(t: u32) -> vec2<u32> {
    return vec2<u32>((t & 1u) | ((t >> 1u) & 2u) | ((t >> 2u) & 4u) | ((t >> 3u) & 8u),
                     ((t >> 1u) & 1u) | ((t >> 2u) & 2u) | ((t >> 3u) & 4u) | ((t >> 4u) & 8u));
}

fn no_shuffle(v: vec4<u32>, m: u32) -> vec4<u32> {
    return v;
}

// The collapsed sums of lane t ^ m (words above 2^64 only where they can be nonzero: an 8-bit first
// pass's sums stay below 4096 * 255 * 2^31 < 2^51)
fn xor_sums(s: Sums, m: u32) -> Sums {
    let u = SG_XOR(vec4<u32>(s.c0.x, s.c0.y, s.c1.x, s.c1.y), m);
    let v = SG_XOR(vec4<u32>(s.c2.x, s.c2.y, s.a.x, s.a.y), m);
    var w = vec4<u32>(0u);
    if (BITS != 8u || FROM_SUMS) {
        w = SG_XOR(vec4<u32>(s.c0.z, s.c1.z, s.c2.z, s.a.z), m);
    }
    return Sums(Big(u.x, u.y, w.x, 0u), Big(u.z, u.w, w.y, 0u), Big(v.x, v.y, w.z, 0u), Big(v.z, v.w, w.w, 0u));
}

fn sum_collapsed(a: Sums, b: Sums) -> Sums {
    return collapse(add_collapsed(add_collapsed(zero_acc(), a), b));
}

// Levels 3 and (subgroups of 16 lanes or more, where it halves both axes) 4 of the pass (i = 2, 3)
// from the anchor sums s0 of thread t: summed across lanes, channel t & 3 rounded by the first four
// lanes of each texel, the codes gathered in its first lane, which writes the texel (and its sums
// where the pass keeps them). The last such level's sums go to their slots for the rounds after it.
// Returns the first level (i) left to them.
fn no_sg_levels(g: vec2<u32>, t: u32, s0: Sums, size: u32) -> u32 {  // (SG_LEVELS without subgroups: never called)
    return 2u;
}

fn sg_levels(g: vec2<u32>, t: u32, s0: Sums, size: u32) -> u32 {
    var sm = s0;
    var i = 2u;
    loop {
        let span = 2u * (i - 1u);  // t's bits within level i's texel
        sm = sum_collapsed(sm, xor_sums(sm, 1u << (span - 2u)));
        sm = sum_collapsed(sm, xor_sums(sm, 2u << (span - 2u)));
        let o = morton(t >> span);
        let q = g * (vec2<u32>(16u) >> (prm.lv[i].f - prm.lv[1].f)) + o;
        let live = all(q < prm.lv[i].size);
        let c = t & 3u;
        var word = vec4<u32>(0u);
        if (live && c < prm.channels && ((t >> 2u) & ((1u << (span - 2u)) - 1u)) == 0u) {
            let code = round_one(sm, c, prm.mt[i].s) << (16u * (c & 1u));
            word = vec4<u32>(select(0u, code, c < 2u), select(0u, code, c >= 2u), 0u, 0u);
        }
        word |= SG_XOR(word, 1u);
        word |= SG_XOR(word, 2u);
        let lead = live && (t & ((1u << span) - 1u)) == 0u;
        if (lead) {
            var codes = vec4<u32>(word.x & 0xffffu, word.x >> 16u, word.y & 0xffffu, word.y >> 16u);
            if (NC == 1u) {
                codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
            }
            write_texel(i, q.x, q.y, codes);
            if (STORE && i + 1u == prm.levels) {
                store_sums((q.y * prm.lv[i].size.x + q.x) * SLOTS * 3u, sm);
            }
        }
        if (!SG_LEVEL4 || i >= 3u || i + 1u >= prm.levels || size < 16u
            || any(prm.lv[i + 1u].f - prm.lv[i].f != vec2<u32>(1u))) {
            if (lead && i + 1u < prm.levels && all(o < level_extent(i))) {
                lsums_put(level_slot(i, o), sm);
            }
            break;
        }
        i++;
    }
    return i + 1u;
}

// SG_LEVEL3N = sg_level3n, SG_NARROW = true (GPU forms with the subgroup form, spd.SG_NARROW): an 8-bit first pass's
// level 3 (QUAD: 64 base texels a texel) summed across lanes in 32-bit words, the lanes' collapsed
// narrow sums (a colour's h 2^16 + l: premultiplied where the alpha sum is nonzero, else plain; h <
// 64 * 255 * 2^15 < 2^29, l < 64 * 255 * 2^16 < 2^30), added as add_collapsed adds (a texel without
// alpha adds to the plain sums only), 7 words exchanged a step instead of 8 and no 96-bit additions;
// then widened to sg_levels' sums: the same integers, so the same bytes.
struct NSums {
    h: vec3<u32>,
    l: vec3<u32>,
    a: u32,
}

fn ncollapse(n: Narrow) -> NSums {
    let cov = WA && n.a != 0u;
    return NSums(select(n.sh.xyz, n.nh.xyz, cov), select(n.sl.xyz, n.nl.xyz, cov), n.a);
}

fn nsums_add(x: NSums, y: NSums) -> NSums {
    let a = x.a + y.a;
    let kx = !WA || a == 0u || x.a != 0u;  // (a == 0: every child plain)
    let ky = !WA || a == 0u || y.a != 0u;
    let z = vec3<u32>(0u);
    return NSums(select(z, x.h, kx) + select(z, y.h, ky), select(z, x.l, kx) + select(z, y.l, ky), a);
}

fn nsums_xor(x: NSums, m: u32) -> NSums {
    let u = SG_XOR(vec4<u32>(x.h, x.a), m);
    let v = SG_XOR(vec4<u32>(x.l, 0u), m);
    return NSums(u.xyz, v.xyz, u.w);
}

fn no_sg_level3n(g: vec2<u32>, t: u32, n: Narrow) -> u32 {  // (SG_LEVEL3N without it: never called)
    return 2u;
}

fn sg_level3n(g: vec2<u32>, t: u32, n: Narrow) -> u32 {
    var x = ncollapse(n);
    x = nsums_add(x, nsums_xor(x, 1u));
    x = nsums_add(x, nsums_xor(x, 2u));
    let w = widen(vec4<u32>(x.h, 0u), vec4<u32>(x.l, 0u));
    let sm = Sums(Big(w[0].x, w[1].x, 0u, 0u), Big(w[0].y, w[1].y, 0u, 0u), Big(w[0].z, w[1].z, 0u, 0u),
                  Big(x.a, 0u, 0u, 0u));
    let o = morton(t >> 2u);
    let q = g * (vec2<u32>(16u) >> (prm.lv[2].f - prm.lv[1].f)) + o;
    let live = all(q < prm.lv[2].size);
    let c = t & 3u;
    var word = vec4<u32>(0u);
    if (live && c < prm.channels) {
        let code = round_one(sm, c, prm.mt[2].s) << (16u * (c & 1u));
        word = vec4<u32>(select(0u, code, c < 2u), select(0u, code, c >= 2u), 0u, 0u);
    }
    word |= SG_XOR(word, 1u);
    word |= SG_XOR(word, 2u);
    let lead = live && c == 0u;
    if (lead) {
        var codes = vec4<u32>(word.x & 0xffffu, word.x >> 16u, word.y & 0xffffu, word.y >> 16u);
        if (NC == 1u) {
            codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
        }
        write_texel(2u, q.x, q.y, codes);
        if (STORE && 3u == prm.levels) {
            store_sums((q.y * prm.lv[2].size.x + q.x) * SLOTS * 3u, sm);
        }
        if (3u < prm.levels && all(o < level_extent(2u))) {
            lsums_put(level_slot(2u, o), sm);
        }
    }
    return 3u;
}

// word k of texel j at tile[256 k + j]: a warp's threads touch consecutive words, no bank conflicts
fn tile_put(p: vec2<u32>, s: Sums) {
    sums_put(p.y * 16u + p.x, 256u, s);
}

// Thread (tx, ty) of workgroup (gx, gy) owns texel (16 gx + tx, 16 gy + ty) of the pass's
// anchor level (its second, or its only one; its first where ANCHOR_SUBS anchor it there) and sums it
// in registers from its children (first level) and their source texels; the levels after it come from
// workgroup memory,
// 16 x 16 anchor texels a tile, each level texel kept at its first anchor texel's place.
//
// WG_SIZE (spd.GROUP_TILES, GPU forms: a first pass of three levels made by the subgroup form only,
// which uses no workgroup memory but the tables): 512 or 1024 invocations, 2 x 1 or 2 x 2 such tiles
// a workgroup (invocation tv: tile tv >> 8 of it, thread tv & 255 there; tv from the subgroup and
// lane as t_sg), the tables copied and waited for once for them all. H200, first pass 4096^2 /
// 8192^2 (docs/performance.md, helper h16base): 256 invocations 0.133 / 0.476 ms, 512 0.115 / 0.413,
// 1024 0.130 / 0.465. WG_TX: tiles a workgroup along x.
@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wg0: vec3<u32>, @builtin(local_invocation_index) ti: u32 SG_ARGS) {
    // (one dimension: naga takes the subgroup builtins only there)
    let t0 = ti & 255u;
    let sg_on = SG_ON && CHANNEL_ROUNDS && !FROM_SUMS;  // (first passes only: SG_LEVEL4's note)
    let tv = select(ti, SG_INDEX, sg_on);  // (the subgroup form: the thread's index from its subgroup and lane)
    let t_sg = tv & 255u;
    let wsub = tv >> 8u;
    let wg = vec3<u32>(wg0.x * WG_TX + (wsub & (WG_TX - 1u)), wg0.y * (WG_SIZE / 256u / WG_TX) + wsub / WG_TX, 0u);
    let lid = select(vec2<u32>(t0 & 15u, t0 >> 4u), morton(t_sg), sg_on);
    if (SMEM_TABLES && ti < 256u) {
        let t = t0;
        ltab[t] = tables[2u * t];
        let words = CODE_WORDS && ONE && !FROM_SUMS;  // (a first pass with CODE_WORDS reads no other table)
        if (!words) {
            qtab[t] = bitcast<f32>(tables[5u * 256u + t]);
        }
        if (t == 0u && !words) {
            qtab[256] = 3.4e38;  // above every value (k + 1 = 256 is never compared)
        }
        if (ONE && !words) {
            for (var k = t; k < BUCKET_WORDS; k += 256u) {
                btab[k] = tables[BUCKET_AT + k];
            }
        }
    }
    if (SMEM_TABLES) {
        workgroupBarrier();
    }
    let n = select(prm.levels, PASS_LEVELS, PASS_LEVELS != 0u);
    let r = ANCHOR_R;
    let anchor = prm.lv[r];
    let p = wg.xy * 16u + lid.xy;
    let inside = all(p < anchor.size);
    let f0 = prm.lv[0].f;
    let fs = vec2<u32>(1u) << f0;               // source texels of a first-level texel
    let rc = vec2<u32>(1u) << (anchor.f - f0);  // first-level texels of an anchor texel
    var acc = zero_acc();
    var nar = zero_narrow();  // (QUAD: the anchor's narrow sums, for SG_LEVEL3N)
    let quad = ONE && QUAD && r == 1u && all(fs == vec2<u32>(2u)) && all(rc == vec2<u32>(2u));
    if (inside && BITS == 8u && !FROM_SUMS && quad) {
        let an = quad_by_child(p);
        nar = an;
        acc = wide(an);
        finalize_narrow(1u, p.x, p.y, an);
    } else if (inside && BITS == 8u && !FROM_SUMS) {
        var an = zero_narrow();
        var unsure = 0u;  // bit k: first-level child k (cy rc.x + cx), bit 31: the anchor texel
        for (var cy = 0u; cy < rc.y; cy++) {
            for (var cx = 0u; cx < rc.x; cx++) {
                let c = p * rc + vec2<u32>(cx, cy);
                let child = child_narrow(c, fs);
                if (r == 1u && !finalize_narrow(0u, c.x, c.y, child)) {
                    unsure |= 1u << (cy * rc.x + cx);
                }
                an = sum_narrow(an, child);
            }
        }
        acc = wide(an);
        if (!finalize_narrow(r, p.x, p.y, an)) {
            unsure |= 1u << 31u;
        }
        // the rare texels the screen left (within 2^-18 of a threshold): the exact path, children's
        // sums summed again (keeping them all would cost registers every texel pays for)
        for (var m = select(unsure, 0u, ONE); m != 0u; m &= m - 1u) {
            let b = firstTrailingBit(m);
            var lv = r;
            var q = p;
            var nn = an;
            if (b != 31u) {
                lv = 0u;
                q = p * rc + vec2<u32>(b % rc.x, b / rc.x);
                nn = child_narrow(q, fs);
            }
            finalize(lv, q.x, q.y, wide(nn));
        }
    } else if (inside && FROM_SUMS && SUMS_QUAD && QUAD_IF) {
        acc = QUAD_SUMS(p);
    } else if (inside) {
        for (var cy = 0u; cy < rc.y; cy++) {
            for (var cx = 0u; cx < rc.x; cx++) {
                let c = p * rc + vec2<u32>(cx, cy);
                var child = zero_acc();
                for (var sy = 0u; sy < fs.y; sy++) {
                    for (var sx = 0u; sx < fs.x; sx++) {
                        child = add_source(child, c * fs + vec2<u32>(sx, sy));
                    }
                }
                if (r == 1u) {
                    finalize(0u, c.x, c.y, child);
                }
                acc = add_acc(acc, child);
            }
        }
        finalize(r, p.x, p.y, acc);
    }
    if (n <= ANCHOR_NEXT) {
        return;
    }
    atomicStore(&ctile[t0], 0u);
    // the subgroup form: levels 3 (and 4) summed by exchanges between lanes, their codes and the
    // sums of the last such level for the rounds below (which then begin at level `first`)
    var first = ANCHOR_NEXT;
    if (sg_on && select(SG_TILE == 1u, all(prm.lv[2].f - anchor.f == vec2<u32>(1u)), SG_TILE == 2u)) {
        var next = 3u;
        if (quad && BITS == 8u && !FROM_SUMS && SG_NARROW) {
            next = SG_LEVEL3N(wg.xy, t_sg, nar);
        } else {
            next = SG_LEVELS(wg.xy, t_sg, collapse(acc), SG_SIZE);
        }
        first = select(next, 3u, !SG_LEVEL4);
    } else {
        tile_put(lid.xy, collapse(acc));
    }
    if (first >= n) {  // (a pass of three levels made by the subgroup form: nothing left)
        return;
    }
    // the sums of the tile's levels (i = ANCHOR_NEXT..: levels 3.. of the pass, or 2..), kept in their
    // slots, in rounds of a barrier each, a round's levels summed from the level before them (the tile
    // for the first round):
    // ROUND_A_LEVEL, one level a round, each texel from 2x2 of the level before (GPUs: the shortest
    // chain of dependent steps, which the latency-bound passes wait on); else two rounds, levels 3
    // and 4 from the tile (2x2 and 4x4 anchor texels a texel), then 5 and 6 from level 4 (CPU
    // adapters: on lavapipe every statement runs for every 8 threads, masked, whether or not one of
    // them has work, and a barrier switches between all of them). Threads 0.. take a round's first
    // level's texels, the next ones its second's.
    let tid = t0;
    let per = select(2u, 1u, ROUND_A_LEVEL);
    for (var round = first - ANCHOR_NEXT; round < 4u; round++) {
        workgroupBarrier();
        let i0 = ANCHOR_NEXT + per * round;
        if (i0 >= n) {
            break;
        }
        if (CHANNEL_ROUNDS) {  // thread 4 j + c: channel c of level i0's texel j
            let e = level_extent(i0);
            let j = tid >> 2u;
            let o = vec2<u32>(j & (e.x - 1u), j >> countTrailingZeros(e.x));
            let q = wg.xy * (vec2<u32>(16u) >> (prm.lv[i0].f - anchor.f)) + o;
            if (j < e.x * e.y && all(q < prm.lv[i0].size)) {
                channel_sum(i0, o, q, tid & 3u);
            }
            continue;
        }
        let e0 = level_extent(i0);
        let first = tid < e0.x * e0.y;
        let i = select(i0 + 1u, i0, first);
        let j = select(tid - e0.x * e0.y, tid, first);
        let e = level_extent(min(i, n - 1u));
        let o = vec2<u32>(j & (e.x - 1u), j >> countTrailingZeros(e.x));
        let t = vec2<u32>(16u) >> (prm.lv[min(i, 5u)].f - anchor.f);
        let q = wg.xy * t + o;
        if (i < min(n, i0 + per) && j < e.x * e.y && all(q < prm.lv[i].size)) {
            let from_tile = i0 == ANCHOR_NEXT;  // else level i0 - 1's slots
            let rr = vec2<u32>(1u) << (prm.lv[i].f - prm.lv[i0 - 1u].f);
            // the children's sums: word w of child c at w * stride + base + c.y * row + c.x
            let stride = select(85u, 256u, from_tile);
            let row = select(level_extent(i0 - 1u).x, 16u, from_tile);
            let base = select(3072u + level_slot(i0 - 1u, vec2<u32>(0u)), 0u, from_tile);
            var sum = zero_acc();
            for (var cy = 0u; cy < rr.y; cy++) {
                for (var cx = 0u; cx < rr.x; cx++) {
                    let c = o * rr + vec2<u32>(cx, cy);
                    sum = add_collapsed(sum, sums_get(base + c.y * row + c.x, stride));
                }
            }
            let cs = collapse(sum);
            lsums_put(level_slot(i, o), cs);
            if (STORE && i + 1u == prm.levels) {
                store_sums((q.y * prm.lv[i].size.x + q.x) * SLOTS * 3u, cs);
            }
        }
    }
    workgroupBarrier();
    // every (texel, channel) of those levels rounded by a thread of its own, all levels at once (a
    // level of 64 texels and four channels keeps the whole workgroup busy, levels of 16, 4 and 1
    // texels share the rest: no workgroup mostly idle through a loop and three barriers a level)
    var cnt = 0u;
    for (var i = first; i < n; i++) {
        let te = level_extent(i);
        cnt += te.x * te.y * prm.channels;
    }
    for (var k = t0; k < cnt; k += 256u) {
        var i = first;
        var kk = k;
        var te = level_extent(first);
        loop {
            let m = te.x * te.y * prm.channels;
            if (kk < m) {
                break;
            }
            kk -= m;
            i++;
            te = level_extent(i);
        }
        let j = kk >> countTrailingZeros(prm.channels);  // (powers of two: no divisions)
        let c = kk & (prm.channels - 1u);
        let o = vec2<u32>(j & (te.x - 1u), j >> countTrailingZeros(te.x));
        let t = vec2<u32>(16u) >> (prm.lv[i].f - anchor.f);
        if (all(wg.xy * t + o < prm.lv[i].size)) {
            let slot = level_slot(i, o);
            let code = round_one(lsums_get(slot), c, prm.mt[i].s);
            atomicOr(&ctile[2u * slot + c / 2u], code << (16u * (c % 2u)));
        }
    }
    workgroupBarrier();
    for (var i = first; i < n; i++) {
        let t = vec2<u32>(16u) >> (prm.lv[i].f - anchor.f);
        let q = wg.xy * t + lid.xy;
        if (all(lid.xy < t) && all(q < prm.lv[i].size)) {
            let j = 2u * level_slot(i, lid.xy);
            let lo = atomicLoad(&ctile[j]);
            let hi = atomicLoad(&ctile[j + 1u]);
            var codes = vec4<u32>(lo & 0xffffu, lo >> 16u, hi & 0xffffu, hi >> 16u);
            if (NC == 1u) {
                codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
            }
            write_texel(i, q.x, q.y, codes);
        }
    }
    HANDOFF_CALL
}

HANDOFF_CODE
//! default FIRST_CODE
// Below (spd.FIRST_ENTRY, GPU forms): the three-level first pass's own entry point, first_main
// (mip_spd_first.wgsl), where that pass takes it. (At the end, the placeholder's default empty: every
// other pipeline compiles the same text.)
FIRST_CODE
