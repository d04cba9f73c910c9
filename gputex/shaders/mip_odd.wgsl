//! include mip_intmath.wgsl
//! include mip_screen.wgsl
//! include mip_store.wgsl
//! default PRM prm
//! default SRC_CELLS src_cells
//! default SRC_OFF 0u
//! default DST_OFF 0u
//! default OUT_OFF 0u
//! default LEVEL_OUT buffer_texel
//! default STORE_FORMAT rgba8unorm
// The cell chain (mips/odd.py; the arithmetic is in mips/cells.py and mips/intbox.py): exact
// integer sums of the integer box chain, a level's texels as weighted sums of the cells of a
// grid (or of base texels) instead of the whole base footprint. Entry points: `level` (a
// level's texels: sums, then the codes by the exact threshold comparisons of mip_int.wgsl),
// `cells` (a grid's cell sums: plain sums of the source's cells), `level_fast` / `level_quad`
// (float sums and the screen; the texels it leaves to `level_fix`, or made at once with
// INLINE_FIX), `level_fix_wide` (level_fix a workgroup a texel), `step` (a fast level and the next
// grid from the same source, one dispatch) and `tail` (every small level and grid, one workgroup).
//
// On each axis a texel's source cells i0 .. i1 weigh (m - r0) (cell i0, one base column),
// m (between) and r1 (cell i1, one base column; none where r1 = 0): the axis table holds
// (i0, i1, m - r0, r1) per texel. A grid's cell spans the source cells [t[i], t[i + 1]).
//
// Sums: colour (grey in c0) and alpha; with weighted alpha the colour is premultiplied, and a
// texel or cell whose alpha sum is 0 sums its cells again for the plain colour (rare: no
// plain slots carried along). Stored cells: SLOTS x WORDS words (2 or 3), colour premultiplied, or plain
// where the cell's alpha sum is 0 (its premultiplied sums are then 0). Weights are below 2^16
// (odd.py: sizes below 2^16), so a weighted sum is two 16-bit products a word (mul_small).

override CHANNELS: u32 = 4u;
override BITS: u32 = 8u;
override SRGB: bool = false;
override SRGB_VIEW: bool = false;
override WEIGHTED: bool = true;
override BGRA: bool = false;
override FROM_BASE: bool = true;   // the source cells are the base's texels (else stored cells)
override SCREEN: bool = true;      // the float estimate decides where it is clearly inside a code
override WORDS_IN: u32 = 3u;      // words a slot of the source cells (2 where the sums fit 64 bits)
override WORDS_OUT: u32 = 3u;     // ... of the cells made
override NARROW: bool = false;     // 8 bits, runs of base texels below 257 (odd.py): row sums in
                                   // 32-bit lanes (16-bit halves of L times alpha: < 2^24 each)
override NARROW_BLOCK: bool = false; // a cell's base texels (at most 256) all summed in the lanes
override ONE_SWEEP: bool = true;   // ... the premultiplied and the plain colour in one sweep (else
                                   // the plain in a second, only where the alpha sum is 0: GPUs)
override SORTED: bool = false;     // cells: invocation i makes the cell index[px_off + i] (the cells
                                   // in order of width: neighbouring invocations loop alike long)
override PAIR_LOADS: bool = false; // the inner loops over a row's cells two at a time (odd.py)
override BASE_BUFFER: bool = true; // base texels from a copy of its bytes (else textureLoad, whose
                                   // -srgb loads need an encode to give the codes back)

override NC: u32 = select(1u, 3u, CHANNELS == 4u);
override HAS_ALPHA: bool = CHANNELS != 1u;
override WA: bool = WEIGHTED && HAS_ALPHA;
override SLOTS: u32 = NC + select(0u, 1u, HAS_ALPHA);

struct Params {
    src_w: u32,          // source cells (base texels) on each axis
    src_h: u32,
    dst_w: u32,          // texels of the level, or cells of the grid made
    dst_h: u32,
    row0: u32,           // first destination row of this band (level)
    rows: u32,
    words_per_row: u32,  // output row pitch / 4 (level)
    total: u32,          // base texels: every texel's weights add up to this
    channels: u32,       // = SLOTS as a uniform (finalize's loop not unrolled: compile time)
    x_off: u32,          // word offsets of the axis tables in `index`
    y_off: u32,
    base_pitch: u32,     // bytes a row of `base` (BASE_BUFFER)
    px_off: u32,         // cells (SORTED): word offsets of the cells in order of their width, height
    py_off: u32,
    // `step` (a level and a grid from the same source in one dispatch): the grid's cells on
    // each axis, its axis tables' offsets, the level part's workgroups on each axis
    cell_w: u32,
    cell_h: u32,
    cx_off: u32,
    cy_off: u32,
    level_gx: u32,
    level_gy: u32,
    // `tail` (its parts' Params in src_cells): the words where the level's grid, the next grid
    // and the level's rows start in dst_cells and out; whether the level is a fast one
    src_off: u32,
    dst_off: u32,
    out_off: u32,
    fast: u32,
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read> src_cells: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst_cells: array<u32>;
@group(0) @binding(5) var<storage, read> tables: array<u32>;  // L (2 words), then Q (3 words)
@group(0) @binding(6) var<storage, read> index: array<u32>;   // the axis tables
@group(0) @binding(7) var<storage, read> base: array<u32>;    // the base's bytes (BASE_BUFFER)

// Sums of a texel or cell: colour c0-c2 (grey in c0; premultiplied with weighted alpha, or
// plain: see `cell`) and alpha.
struct Acc {
    c0: Big, c1: Big, c2: Big, a: Big,
}

fn zero_acc() -> Acc {
    let z = Big(0u);
    return Acc(z, z, z, z);
}

fn add_acc(a: Acc, b: Acc) -> Acc {
    if (NC == 1u) {
        return Acc(add(a.c0, b.c0), a.c1, a.c2, add(a.a, b.a));
    }
    return Acc(add(a.c0, b.c0), add(a.c1, b.c1), add(a.c2, b.c2), add(a.a, b.a));
}

// a * w for w < 2^16 (the axis weights: sizes below 2^16): two 16 x 16-bit products a word
fn mul_small(a: Big, w: u32) -> Big {
    let l = (a & Big(0xffffu)) * w;
    let h = (a >> Big(16u)) * w;
    let lo = l + (h << Big(16u));
    let c = select(Big(0u), Big(1u), lo < l);
    return add(lo, Big(0u, (h.x >> 16u) + c.x, (h.y >> 16u) + c.y, (h.z >> 16u) + c.z));
}

fn mul_acc(a: Acc, w: u32) -> Acc {
    if (NC == 1u) {
        return Acc(mul_small(a.c0, w), a.c1, a.c2, mul_small(a.a, w));
    }
    return Acc(mul_small(a.c0, w), mul_small(a.c1, w), mul_small(a.c2, w), mul_small(a.a, w));
}

// 8-bit sRGB: L and the float thresholds in workgroup memory (as mip_spd.wgsl: a warp's
// lookups of random codes in a storage buffer touch many cache lines)
override SMEM_TABLES: bool = BITS == 8u && SRGB;  // (odd.py: on GPUs only)
var<workgroup> ltab: array<u32, 256>;
var<workgroup> qtab: array<f32, 257>;

fn load_tables(t: u32) {  // t: the invocation's index in its workgroup of 64 (or more)
    load_some(t, FROM_BASE, true);
}

// Only the tables a pass reads: L where it reads the base, the thresholds where it rounds (not
// `cells`); a grid from a grid needs neither (no copy, no barrier)
fn load_some(t: u32, l: bool, q: bool) {
    if (SMEM_TABLES && (l || q)) {
        for (var k = t; k < 256u; k += 64u) {
            if (l) {
                ltab[k] = tables[2u * k];
            }
            if (q) {
                qtab[k] = bitcast<f32>(tables[5u * 256u + k]);
            }
        }
        if (q && t == 0u) {
            qtab[256] = 3.4e38;  // above every value (k + 1 = 256 is never compared)
        }
        workgroupBarrier();
    }
}

fn lin_code(c: u32) -> Big {
    if (SMEM_TABLES) {
        return Big(ltab[c & 255u], 0u, 0u, 0u);
    }
    if (SRGB && BITS == 8u) {  // L below 2^32: one word
        return Big(tables[2u * c], 0u, 0u, 0u);
    }
    return lin(c, SRGB);
}

// The codes of a base texel in `base` (as stored: BGRA's bytes swapped back), in the order
// codes_at gives them.
fn codes_stored(p: vec2<u32>) -> vec4<u32> {
    let bpt = CHANNELS * BITS / 8u;
    let byte = p.y * PRM.base_pitch + p.x * bpt;
    let w0 = base[byte / 4u];
    var c = vec4<u32>(0u);
    if (bpt == 8u) {
        let w1 = base[byte / 4u + 1u];
        c = vec4<u32>(w0 & 0xffffu, w0 >> 16u, w1 & 0xffffu, w1 >> 16u);
    } else if (bpt == 4u && BITS == 8u) {
        c = (vec4<u32>(w0) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u);
        if (BGRA) {
            c = c.zyxw;
        }
    } else if (bpt == 4u) {
        c = vec4<u32>(w0 & 0xffffu, w0 >> 16u, 0u, 0u);
    } else {
        let w = w0 >> ((byte % 4u) * 8u);
        let mask = (1u << BITS) - 1u;
        c = vec4<u32>(w & mask, (w >> BITS) & mask, 0u, 0u);
    }
    if (CHANNELS == 2u) {
        return vec4<u32>(c.x, 0u, 0u, c.y);
    }
    if (CHANNELS == 1u) {
        return vec4<u32>(c.x, 0u, 0u, top());
    }
    return c;
}

fn codes_at(p: vec2<u32>) -> vec4<u32> {
    if (BASE_BUFFER) {
        return codes_stored(p);
    }
    return load_codes(vec2<i32>(p));
}

// The sums of one source cell: a base texel, or a stored cell (colour premultiplied, or plain
// where its alpha sum is 0). With weighted alpha, `plain` false gives the premultiplied colour
// (0 for a cell without alpha), true the plain colour (needed only where a texel's whole
// footprint has no alpha: every cell then stores it).
fn cell(x: u32, y: u32, plain: bool) -> Acc {
    var r = zero_acc();
    if (FROM_BASE) {
        let c = codes_at(vec2<u32>(x, y));
        r.a = Big(c.w, 0u, 0u, 0u);
        let wt = select(1u, c.w, WA && !plain);
        r.c0 = mul_lin(lin_code(c.x), wt);
        if (NC == 3u) {
            r.c1 = mul_lin(lin_code(c.y), wt);
            r.c2 = mul_lin(lin_code(c.z), wt);
        }
        return r;
    }
    let i = (y * PRM.src_w + x) * SLOTS * WORDS_IN;
    if (HAS_ALPHA) {
        r.a = load_big(i + NC * WORDS_IN);
    }
    if (WA && nonzero(r.a) == plain) {
        return r;
    }
    r.c0 = load_big(i);
    if (NC == 3u) {
        r.c1 = load_big(i + WORDS_IN);
        r.c2 = load_big(i + 2u * WORDS_IN);
    }
    return r;
}

fn load_big(i: u32) -> Big {
    let j = SRC_OFF + i;
    if (WORDS_IN == 2u) {
        return Big(SRC_CELLS[j], SRC_CELLS[j + 1u], 0u, 0u);
    }
    return Big(SRC_CELLS[j], SRC_CELLS[j + 1u], SRC_CELLS[j + 2u], 0u);
}

fn put_big(i: u32, b: Big) {
    let j = DST_OFF + i;
    dst_cells[j] = b.x;
    dst_cells[j + 1u] = b.y;
    if (WORDS_OUT == 3u) {
        dst_cells[j + 2u] = b.z;
    }
}

// The linear values L of an 8-bit texel's colour codes (8 bits: L below 2^32, one word)
fn lin8(c: vec4<u32>) -> vec3<u32> {
    if (SMEM_TABLES) {
        return vec3<u32>(ltab[c.x & 255u], ltab[c.y & 255u], ltab[c.z & 255u]);
    } else if (SRGB) {
        return vec3<u32>(tables[2u * c.x], tables[2u * c.y], tables[2u * c.z]);
    }
    return c.xyz;
}

// Sums kept as lanes (the high and low 16 bits of each L times its weight, summed apart) as Acc
fn lanes_acc(nh: vec3<u32>, nl: vec3<u32>, na: u32) -> Acc {
    let lo = (nh << vec3<u32>(16u)) + nl;
    let hi = (nh >> vec3<u32>(16u)) + select(vec3<u32>(0u), vec3<u32>(1u), lo < nl);
    return Acc(Big(lo.x, hi.x, 0u, 0u), Big(lo.y, hi.y, 0u, 0u), Big(lo.z, hi.z, 0u, 0u), Big(na, 0u, 0u, 0u));
}

// The sums of base texels x0 .. x1 - 1 of row y (NARROW: at most 256 of them), as cell() gives
// them, added in 32-bit lanes: the high and low 16 bits of L times the weight (< 2^24 each).
fn row_narrow(y: u32, x0: u32, x1: u32, plain: bool) -> Acc {
    return block_narrow(y, y + 1u, x0, x1, plain);
}

// The same over rows y0 .. y1 - 1
fn block_narrow(y0: u32, y1: u32, x0: u32, x1: u32, plain: bool) -> Acc {
    var nh = vec3<u32>(0u);
    var nl = vec3<u32>(0u);
    var na = 0u;
    for (var y = y0; y < y1; y++) {
    var x = x0;
    if (PAIR_LOADS) {  // two texels an iteration, both loads first
        for (; x + 1u < x1; x += 2u) {
            let c = codes_at(vec2<u32>(x, y));
            let d = codes_at(vec2<u32>(x + 1u, y));
            let l = lin8(c);
            let m = lin8(d);
            let wt = select(1u, c.w, WA && !plain);
            let wu = select(1u, d.w, WA && !plain);
            nh += (l >> vec3<u32>(16u)) * wt + (m >> vec3<u32>(16u)) * wu;
            nl += (l & vec3<u32>(0xffffu)) * wt + (m & vec3<u32>(0xffffu)) * wu;
            na += c.w + d.w;
        }
    }
    for (; x < x1; x++) {
        let c = codes_at(vec2<u32>(x, y));
        let l = lin8(c);
        let wt = select(1u, c.w, WA && !plain);
        nh += (l >> vec3<u32>(16u)) * wt;
        nl += (l & vec3<u32>(0xffffu)) * wt;
        na += c.w;
    }
    }
    return lanes_acc(nh, nl, na);
}

// A grid cell's sums from its base texels (NARROW_BLOCK: at most 256) in one sweep: the
// premultiplied and the plain colour both in lanes, the plain kept where the alpha sum is 0 (as
// cell() reads a stored cell; one sweep where a cell of one transparent texel would make its
// neighbours in the SIMD group sweep twice)
fn block_cell(y0: u32, y1: u32, x0: u32, x1: u32) -> Acc {
    var s = LaneSums();
    for (var y = y0; y < y1; y++) {
        for (var x = x0; x < x1; x++) {
            lane_add(&s, codes_at(vec2<u32>(x, y)));
        }
    }
    if (WA && s.na == 0u) {
        return lanes_acc(s.ph, s.pl, s.na);
    }
    return lanes_acc(s.nh, s.nl, s.na);
}

// 8-bit base texels' sums in 32-bit lanes: the (alpha-weighted) colour's linear values split
// into high and low 16 bits, with WA the plain colour's too, and the alpha
struct LaneSums {
    nh: vec3<u32>,
    nl: vec3<u32>,
    ph: vec3<u32>,
    pl: vec3<u32>,
    na: u32,
}

fn lane_add(s: ptr<function, LaneSums>, c: vec4<u32>) {
    let l = lin8(c);
    let wt = select(1u, c.w, WA);
    (*s).nh += (l >> vec3<u32>(16u)) * wt;
    (*s).nl += (l & vec3<u32>(0xffffu)) * wt;
    if (WA) {
        (*s).ph += l >> vec3<u32>(16u);
        (*s).pl += l & vec3<u32>(0xffffu);
    }
    (*s).na += c.w;
}

fn store_cell(j: u32, acc: Acc) {
    put_big(j, acc.c0);
    if (NC == 3u) {
        put_big(j + WORDS_OUT, acc.c1);
        put_big(j + 2u * WORDS_OUT, acc.c2);
    }
    if (HAS_ALPHA) {
        put_big(j + NC * WORDS_OUT, acc.a);
    }
}

// A texel's codes (band row `row`) into the output words (buffer_texel), or into the level's
// storage view (store_texel, 8-bit RGBA only, odd.py binds it at 9; not with `tail`): LEVEL_OUT
fn write_texel(x: u32, row: u32, codes: vec4<u32>) {
    LEVEL_OUT(x, row, codes);
}

fn buffer_texel(x: u32, row: u32, codes: vec4<u32>) {
    store_codes(OUT_OFF + row * PRM.words_per_row, x, codes);
}

@group(0) @binding(9) var level_out: texture_storage_2d<STORE_FORMAT, write>;

fn store_texel(x: u32, row: u32, codes: vec4<u32>) {
    textureStore(level_out, vec2<u32>(x, row + PRM.row0), store_value(codes));
}

fn pick(acc: Acc, c: u32) -> Big {
    return select(select(acc.c0, acc.c1, c == 1u), acc.c2, c == 2u);
}

// Codes of a level's texel from its sums: colour over the alpha sum where it covers (weighted
// alpha; the colour sums premultiplied), else over the weight total (plain colour sums).
fn finalize(x: u32, y: u32, acc: Acc) {
    let a = acc.a;
    let w = Big(PRM.total, 0u, 0u, 0u);
    let covered = WA && nonzero(a);
    var codes = vec4<u32>(0u);
    for (var c = 0u; c < PRM.channels; c++) {  // (not unrolled: one copy of the search)
        let alpha = c == NC;
        let num = select(pick(acc, c), a, alpha);
        let code = round_fast(num, select(w, a, covered && !alpha), SRGB && !alpha);
        codes = select(codes, vec4<u32>(code), vec4<u32>(c) == vec4<u32>(0u, 1u, 2u, 3u));
    }
    if (NC == 1u) {
        codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
    }
    write_texel(x, y - PRM.row0, codes);
}

// One row of source cells of a texel: the edge cells times their weights, the cells between
// (added first) times m.
fn row_sum(iy: u32, t: vec4<u32>, m: u32, plain: bool) -> Acc {
    var inner = zero_acc();
    if (NARROW) {
        inner = row_narrow(iy, t.x + 1u, t.y, plain);
    } else {
        for (var ix = t.x + 1u; ix < t.y; ix++) {
            inner = add_acc(inner, cell(ix, iy, plain));
        }
    }
    var r = add_acc(mul_acc(cell(t.x, iy, plain), t.z), mul_acc(inner, m));
    if (t.w > 0u) {
        r = add_acc(r, mul_acc(cell(t.y, iy, plain), t.w));
    }
    return r;
}

// A texel's sums: the rows of its edge cells times their weights, the rows between (added
// first) times the level's height.
fn texel_sums(tx: vec4<u32>, ty: vec4<u32>, plain: bool) -> Acc {
    var top = zero_acc();
    var inner = zero_acc();
    var bottom = zero_acc();
    let end = select(ty.y, ty.y + 1u, ty.w > 0u);
    for (var iy = ty.x; iy < end; iy++) {
        let r = row_sum(iy, tx, PRM.dst_w, plain);
        if (iy == ty.x) {
            top = r;
        } else if (iy == ty.y) {
            bottom = r;
        } else {
            inner = add_acc(inner, r);
        }
    }
    return add_acc(add_acc(mul_acc(top, ty.z), mul_acc(inner, PRM.dst_h)), mul_acc(bottom, ty.w));
}

fn axis(off: u32, i: u32) -> vec4<u32> {
    return vec4<u32>(index[off + 4u * i], index[off + 4u * i + 1u], index[off + 4u * i + 2u], index[off + 4u * i + 3u]);
}

// Texel (x, y) of the level (y: the level's row) by the exact sums
fn level_texel(x: u32, y: u32) {
    let tx = axis(PRM.x_off, x);
    let ty = axis(PRM.y_off, y);
    var acc = zero_acc();
    for (var sweep = 0u; sweep < 2u; sweep++) {  // the plain colour only where no alpha covers
        acc = texel_sums(tx, ty, sweep == 1u);
        if (!WA || nonzero(acc.a)) {
            break;
        }
    }
    finalize(x, y, acc);
}

@compute @workgroup_size(8, 8)
fn level(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    load_tables(t);
    if (gid.x >= PRM.dst_w || gid.y >= PRM.rows) {
        return;
    }
    level_texel(gid.x, gid.y + PRM.row0);
}

override LEVEL_X: u32 = 8u;  // level_fast's and level_quad's workgroup (odd.py's LEVEL_GROUP)
override LEVEL_Y: u32 = 8u;
override CELL_X: u32 = 8u;  // cells' workgroup (odd.py's CELLS_WIDE: 64 x 1)
override CELL_Y: u32 = 8u;

@compute @workgroup_size(CELL_X, CELL_Y)
fn cells(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    load_some(t, FROM_BASE, false);
    make_cell(gid.xy, PRM.dst_w, PRM.dst_h, PRM.x_off, PRM.y_off);
}

// Cell `gid` of a grid of w x h cells whose axis tables start at words xo, yo of `index`
fn make_cell(gid: vec2<u32>, w: u32, h: u32, xo: u32, yo: u32) {
    if (gid.x >= w || gid.y >= h) {
        return;
    }
    var cx = gid.x;
    var cy = gid.y;
    if (SORTED) {
        cx = index[PRM.px_off + gid.x];
        cy = index[PRM.py_off + gid.y];
    }
    let x0 = index[xo + cx];
    let x1 = index[xo + cx + 1u];
    let y0 = index[yo + cy];
    let y1 = index[yo + cy + 1u];
    var acc = zero_acc();
    if (NARROW_BLOCK && ONE_SWEEP) {
        store_cell((cy * w + cx) * SLOTS * WORDS_OUT, block_cell(y0, y1, x0, x1));
        return;
    }
    if (NARROW_BLOCK) {  // the plain colour in a second sweep, only where the alpha sum is 0
        acc = block_narrow(y0, y1, x0, x1, false);
        if (WA && !nonzero(acc.a)) {
            acc = block_narrow(y0, y1, x0, x1, true);
        }
        store_cell((cy * w + cx) * SLOTS * WORDS_OUT, acc);
        return;
    }
    for (var sweep = 0u; sweep < 2u; sweep++) {  // the plain colour only where the alpha sum is 0
        acc = zero_acc();
        for (var iy = y0; iy < y1; iy++) {
            if (NARROW) {
                acc = add_acc(acc, row_narrow(iy, x0, x1, sweep == 1u));
                continue;
            }
            for (var ix = x0; ix < x1; ix++) {
                acc = add_acc(acc, cell(ix, iy, sweep == 1u));
            }
        }
        if (!WA || nonzero(acc.a)) {
            break;
        }
    }
    store_cell((cy * w + cx) * SLOTS * WORDS_OUT, acc);
}

// ---- Levels by float sums (`level_fast`), the texels it cannot decide by the exact sums
// (`level_fix`), odd.py's FAST_LEVELS. A texel's sums in float32, in this order: per base texel
// L (at most 2 roundings: its two words), L * alpha (1), or per stored cell its sums by approx()
// (at most 4: every partial sum there is >= 0); times the column weight (1), added along the row
// (at most Fx), the row times its weight (1), added over the rows (at most Fy). From the base
// every term of the colour sum passes at most Fx + Fy + 5 roundings, of the alpha sum Fx + Fy + 2;
// from a grid both Fx + Fy + 6. All terms are >= 0, so each sum is within gamma(n) = n u / (1 - n u)
// of the exact one (u = 2^-24; FMA contraction only drops roundings). screen_code compares the
// numerator with threshold * (1 +- MARGIN) * denominator (three correctly rounded products, 3 u;
// no division decides: Vulkan allows 2.5 ulp there, only the estimate of k divides), so a code
// is accepted only where (1 - u)^3 (1 + MARGIN) (1 - g_den) >= 1 + g_num (and the same below).
// odd.py sends a level here only where F = Fx + Fy <= 24 from the base (g_num + g_den about
// (2 F + 7) u), <= 21 from a grid ((2 F + 12) u); Fx: the most source cells a texel covers: at
// most 55 u, 58 u with the 3 u, under MARGIN = 2^-18 = 64 u: where screen_code accepts, the
// exact comparisons give the same code
// (tests/mips/test_odd_fast.py checks the bound in float32 against exact rationals). A texel
// with any channel too close to a threshold is appended to `misses` for level_fix.
@group(0) @binding(8) var<storage, read_write> misses: array<atomic<u32>>;  // [level_fix's
    // workgroups, count, -, -, then per texel x | (band row << 16)]

override MISS_ALL: bool = false;  // every texel to level_fix (the tests of that path)
override INLINE_FIX: bool = false; // a texel the screen leaves made at once by the exact sums (GPUs:
                                   // a rare divergent branch costs only where taken), not listed
const FIX_GROUPS: u32 = 4096u;    // level_fix's workgroups at most (its threads loop)

fn lin_f(c: u32) -> f32 {
    if (SMEM_TABLES) {
        return f32(ltab[c & 255u]);
    }
    if (!SRGB) {
        return f32(c);
    }
    if (BITS == 8u) {  // L below 2^32: one word
        return f32(tables[2u * c]);
    }
    return f32(tables[2u * c + 1u]) * 4294967296.0 + f32(tables[2u * c]);
}

// The code of num / den (float sums) where it is clearly inside the code's interval, else 0xffffffff
fn screen_code(num: f32, den: f32, srgb: bool) -> u32 {
    let m = f32(top());
    var v = num / den;  // (only picks k)
    if (srgb) {
        v = encode(v / select(1099511627776.0, 2147483648.0, BITS == 8u)) * m;
    }
    let k = u32(clamp(floor(v + 0.5), 0.0, m));
    let above = k == 0u || num >= threshold_f(k, srgb) * (1.0 + MARGIN) * den;
    let below = k == top() || num < threshold_f(k + 1u, srgb) * (1.0 - MARGIN) * den;
    return select(0xffffffffu, k, above && below && !MISS_ALL);
}

// A base texel's colour channels' linear values in floats (NC of them; the rest 0)
fn base_lin_f(c: vec4<u32>) -> vec3<f32> {
    if (NC == 3u) {
        return vec3<f32>(lin_f(c.x), lin_f(c.y), lin_f(c.z));
    }
    return vec3<f32>(lin_f(c.x), 0.0, 0.0);
}

// cell() in floats: a base texel's L (times its alpha), or a stored cell's sums by approx()
fn cell_f(x: u32, y: u32, plain: bool) -> vec4<f32> {
    if (FROM_BASE) {
        let c = codes_at(vec2<u32>(x, y));
        let a = f32(c.w);
        return vec4<f32>(base_lin_f(c) * select(1.0, a, WA && !plain), a);
    }
    let i = (y * PRM.src_w + x) * SLOTS * WORDS_IN;
    var a = 0.0;
    if (HAS_ALPHA) {
        a = approx(load_big(i + NC * WORDS_IN));
    }
    if (WA && (a > 0.0) == plain) {
        return vec4<f32>(0.0, 0.0, 0.0, a);
    }
    var c = vec3<f32>(approx(load_big(i)), 0.0, 0.0);
    if (NC == 3u) {
        c = vec3<f32>(c.x, approx(load_big(i + WORDS_IN)), approx(load_big(i + 2u * WORDS_IN)));
    }
    return vec4<f32>(c, a);
}

// A texel's float sums: colour c0-c2 (premultiplied, or plain) and alpha
fn texel_float(tx: vec4<u32>, ty: vec4<u32>, plain: bool) -> vec4<f32> {
    let ex = select(tx.y, tx.y + 1u, tx.w > 0u);
    let ey = select(ty.y, ty.y + 1u, ty.w > 0u);
    var s = vec4<f32>(0.0);
    for (var iy = ty.x; iy < ey; iy++) {
        var r = vec4<f32>(0.0);
        var ix = tx.x;
        if (PAIR_LOADS) {  // two cells an iteration, both read first; added in the same order
            for (; ix + 1u < ex; ix += 2u) {
                let u = cell_f(ix, iy, plain);
                let v = cell_f(ix + 1u, iy, plain);
                r += u * f32(select(select(PRM.dst_w, tx.w, ix == tx.y), tx.z, ix == tx.x));
                r += v * f32(select(PRM.dst_w, tx.w, ix + 1u == tx.y));
            }
        }
        for (; ix < ex; ix++) {
            let wx = f32(select(select(PRM.dst_w, tx.w, ix == tx.y), tx.z, ix == tx.x));
            r += cell_f(ix, iy, plain) * wx;
        }
        s += r * f32(select(select(PRM.dst_h, ty.w, iy == ty.y), ty.z, iy == ty.x));
    }
    return s;
}

@compute @workgroup_size(LEVEL_X, LEVEL_Y)
fn level_fast(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    load_tables(t);
    fast_texel(gid.xy);
}

fn fast_texel(gid: vec2<u32>) {
    if (gid.x >= PRM.dst_w || gid.y >= PRM.rows) {
        return;
    }
    var x = gid.x;
    if (SORTED) {  // (a level from a grid: texels in order of the cells they span on x)
        x = index[PRM.px_off + gid.x];
    }
    let tx = axis(PRM.x_off, x);
    let ty = axis(PRM.y_off, gid.y + PRM.row0);
    var s = vec4<f32>(0.0);
    for (var sweep = 0u; sweep < 2u; sweep++) {  // the plain colour only where no alpha covers
        s = texel_float(tx, ty, sweep == 1u);
        if (!WA || s.w > 0.0) {
            break;
        }
    }
    fast_finish(x, gid.y, s);
}

// The codes of texel x of band row `row` from its float sums, or the texel to level_fix
fn fast_finish(x: u32, row: u32, s: vec4<f32>) {
    let total = f32(PRM.total);
    let den = select(total, s.w, WA && s.w > 0.0);
    var codes = vec4<u32>(screen_code(s.x, den, SRGB), 0u, 0u, 0u);
    if (NC == 3u) {
        codes.y = screen_code(s.y, den, SRGB);
        codes.z = screen_code(s.z, den, SRGB);
    }
    if (HAS_ALPHA) {
        codes.w = screen_code(s.w, total, false);
    }
    if (any(codes == vec4<u32>(0xffffffffu))) {
        if (INLINE_FIX) {
            level_texel(x, row + PRM.row0);
            return;
        }
        let i = atomicAdd(&misses[1], 1u);
        atomicMax(&misses[0], min(select(i / 64u, i, FIX_WIDE) + 1u, FIX_GROUPS));
        atomicStore(&misses[4u + i], x | (row << 16u));
        return;
    }
    write_texel(x, row, codes);
}

// Four texels (x = 2 i, 2 i + 1; y = 2 j, 2 j + 1) summed in one sweep over their source cells:
// a column or row they share (a level from the base of an odd size: 5 x 5 texels for four
// texels, not 36) is read once; a cell outside a texel's footprint weighs 0 for it (adds exactly
// 0: the same bound as texel_float).
struct Quad {
    aa: vec4<f32>,  // (x a, y a)
    ba: vec4<f32>,
    ab: vec4<f32>,
    bb: vec4<f32>,
}

fn weight(t: vec4<u32>, e: u32, i: u32, m: u32) -> f32 {
    return f32(select(0u, select(select(m, t.w, i == t.y), t.z, i == t.x), i >= t.x && i < e));
}

fn quad_float(ta: vec4<u32>, tb: vec4<u32>, ua: vec4<u32>, ub: vec4<u32>, plain: bool) -> Quad {
    let ea = select(ta.y, ta.y + 1u, ta.w > 0u);
    let eb = select(tb.y, tb.y + 1u, tb.w > 0u);
    let fa = select(ua.y, ua.y + 1u, ua.w > 0u);
    let fb = select(ub.y, ub.y + 1u, ub.w > 0u);
    let z = vec4<f32>(0.0);
    var q = Quad(z, z, z, z);
    for (var iy = ua.x; iy < fb; iy++) {
        var ra = z;
        var rb = z;
        var ix = ta.x;
        if (PAIR_LOADS) {  // two cells an iteration, both read first; added in the same order
            for (; ix + 1u < eb; ix += 2u) {
                let u = cell_f(ix, iy, plain);
                let v = cell_f(ix + 1u, iy, plain);
                ra += u * weight(ta, ea, ix, PRM.dst_w);
                rb += u * weight(tb, eb, ix, PRM.dst_w);
                ra += v * weight(ta, ea, ix + 1u, PRM.dst_w);
                rb += v * weight(tb, eb, ix + 1u, PRM.dst_w);
            }
        }
        for (; ix < eb; ix++) {
            let v = cell_f(ix, iy, plain);
            ra += v * weight(ta, ea, ix, PRM.dst_w);
            rb += v * weight(tb, eb, ix, PRM.dst_w);
        }
        let wa = weight(ua, fa, iy, PRM.dst_h);
        let wb = weight(ub, fb, iy, PRM.dst_h);
        q.aa += ra * wa;
        q.ba += rb * wa;
        q.ab += ra * wb;
        q.bb += rb * wb;
    }
    return q;
}

@compute @workgroup_size(LEVEL_X, LEVEL_Y)
fn level_quad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    load_tables(t);
    quad_texels(gid.xy);
}

fn quad_texels(gid: vec2<u32>) {
    let xa = 2u * gid.x;
    let ya = 2u * gid.y;  // (rows of the band)
    if (xa >= PRM.dst_w || ya >= PRM.rows) {
        return;
    }
    let xb = min(xa + 1u, PRM.dst_w - 1u);  // (xa itself again at the edge, not written)
    let yb = min(ya + 1u, PRM.rows - 1u);
    let ta = axis(PRM.x_off, xa);
    let tb = axis(PRM.x_off, xb);
    let ua = axis(PRM.y_off, ya + PRM.row0);
    let ub = axis(PRM.y_off, yb + PRM.row0);
    var q = quad_float(ta, tb, ua, ub, false);
    if (WA && (q.aa.w == 0.0 || q.ba.w == 0.0 || q.ab.w == 0.0 || q.bb.w == 0.0)) {
        let p = quad_float(ta, tb, ua, ub, true);  // the plain colour where no alpha covers
        q = Quad(select(q.aa, p.aa, q.aa.w == 0.0), select(q.ba, p.ba, q.ba.w == 0.0),
                 select(q.ab, p.ab, q.ab.w == 0.0), select(q.bb, p.bb, q.bb.w == 0.0));
    }
    fast_finish(xa, ya, q.aa);
    if (xb > xa) {
        fast_finish(xb, ya, q.ba);
    }
    if (yb > ya) {
        fast_finish(xa, yb, q.ab);
        if (xb > xa) {
            fast_finish(xb, yb, q.bb);
        }
    }
}

@compute @workgroup_size(64)
fn level_fix(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) t: u32,
             @builtin(num_workgroups) groups: vec3<u32>) {
    load_tables(t);
    let count = atomicLoad(&misses[1]);
    for (var i = gid.x; i < count; i += groups.x * 64u) {
        let p = atomicLoad(&misses[4u + i]);
        level_texel(p & 0xffffu, (p >> 16u) + PRM.row0);
    }
}

// The texels left by a workgroup each (odd.py's FIX_WIDE; level_fix makes one an invocation): its
// 64 invocations add the footprint's source cells t, t + 64, ... times both weights, then a tree
// of sums (integers: any order gives the same sums), and one invocation a channel finds its code.
// level_fix's chain of dependent steps, a texel's every cell and channel one after the other,
// was 0.03-0.06 ms a pass on the H200 whatever the count.
override FIX_WIDE: bool = false;
var<workgroup> part: array<Acc, 64>;
var<workgroup> wide_n: u32;
var<workgroup> wide_codes: array<u32, 4>;

fn wide_sums(t: u32, tx: vec4<u32>, ty: vec4<u32>, plain: bool) -> Acc {
    let ex = select(tx.y, tx.y + 1u, tx.w > 0u);
    let ey = select(ty.y, ty.y + 1u, ty.w > 0u);
    let nx = ex - tx.x;
    var acc = zero_acc();
    for (var k = t; k < nx * (ey - ty.x); k += 64u) {
        let ix = tx.x + k % nx;
        let iy = ty.x + k / nx;
        let wx = select(select(PRM.dst_w, tx.w, ix == tx.y), tx.z, ix == tx.x);
        let wy = select(select(PRM.dst_h, ty.w, iy == ty.y), ty.z, iy == ty.x);
        acc = add_acc(acc, mul_acc(mul_acc(cell(ix, iy, plain), wx), wy));
    }
    part[t] = acc;
    for (var s = 32u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (t < s) {
            part[t] = add_acc(part[t], part[t + s]);
        }
    }
    workgroupBarrier();
    let r = part[0];
    workgroupBarrier();
    return r;
}

// Channel c's code of a texel from its exact sums (as finalize makes each)
fn channel_code(acc: Acc, c: u32) -> u32 {
    let alpha = c == NC;
    let covered = WA && nonzero(acc.a);
    let den = select(Big(PRM.total, 0u, 0u, 0u), acc.a, covered && !alpha);
    return round_fast(select(pick(acc, c), acc.a, alpha), den, SRGB && !alpha);
}

@compute @workgroup_size(64)
fn level_fix_wide(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32,
                  @builtin(num_workgroups) groups: vec3<u32>) {
    load_tables(t);
    if (t == 0u) {
        wide_n = atomicLoad(&misses[1]);
    }
    let count = workgroupUniformLoad(&wide_n);
    for (var i = wid.x; i < count; i += groups.x) {
        let p = atomicLoad(&misses[4u + i]);
        let x = p & 0xffffu;
        let y = (p >> 16u) + PRM.row0;
        let tx = axis(PRM.x_off, x);
        let ty = axis(PRM.y_off, y);
        var acc = wide_sums(t, tx, ty, false);
        if (WA) {  // the plain colour where no alpha covers (the same in every invocation)
            if (t == 0u) {
                wide_n = select(0u, 1u, nonzero(acc.a));
            }
            if (workgroupUniformLoad(&wide_n) == 0u) {
                acc = wide_sums(t, tx, ty, true);
            }
        }
        if (t < 4u) {
            wide_codes[t] = select(0u, channel_code(acc, t), t < PRM.channels);
        }
        workgroupBarrier();
        if (t == 0u) {
            var codes = vec4<u32>(wide_codes[0], wide_codes[1], wide_codes[2], wide_codes[3]);
            if (NC == 1u) {
                codes = vec4<u32>(codes.x, 0u, 0u, codes.y);
            }
            write_texel(x, y - PRM.row0, codes);
        }
    }
}

// A level and the next grid from the same source in one dispatch (odd.py's FUSE, with INLINE_FIX):
// workgroup rows below PRM.level_gy make the level's texels (level_quad's four a thread from the
// base, else level_fast's one), the rows after them the grid's cells (`cells`).
override STEP_QUAD: bool = false;

@compute @workgroup_size(8, 8)
fn step(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    load_tables(t);
    if (wid.y < PRM.level_gy) {
        if (wid.x >= PRM.level_gx) {
            return;
        }
        let gid = wid.xy * 8u + lid.xy;
        if (STEP_QUAD) {
            quad_texels(gid);
        } else {
            fast_texel(gid);
        }
        return;
    }
    let gid = vec2<u32>(wid.x, wid.y - PRM.level_gy) * 8u + lid.xy;
    make_cell(gid, PRM.cell_w, PRM.cell_h, PRM.cx_off, PRM.cy_off);
}

// ---- The small levels in one dispatch (odd.py's TAIL): one workgroup makes each level from its
// grid and the next grid from the same grid, then a storage barrier, then the next level: one pass
// instead of a pass (and a copy between passes) a level. Every part's Params (PARAM_WORDS words,
// as the struct) are in src_cells, prm.rows of them; every grid is in dst_cells (odd.py compiles
// this entry point with PRM = P, SRC_CELLS = dst_cells and the offsets SRC_OFF, DST_OFF, OUT_OFF
// from P: a grid is read where the last level wrote it, each level's rows go to their own place
// in `out`). Levels of at most odd.TAIL_TEXELS texels: each invocation makes every 256th texel.
var<private> P: Params;
const PARAM_WORDS: u32 = 24u;
const TAIL_SIZE: u32 = 256u;

fn params_at(o: u32) -> Params {
    var w: array<u32, 24>;
    for (var k = 0u; k < PARAM_WORDS; k++) {
        w[k] = src_cells[o + k];
    }
    return Params(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13],
                  w[14], w[15], w[16], w[17], w[18], w[19], w[20], w[21], w[22], w[23]);
}

@compute @workgroup_size(TAIL_SIZE)
fn tail(@builtin(local_invocation_index) t: u32) {
    load_tables(t);
    for (var k = 0u; k < prm.rows; k++) {
        P = params_at(k * PARAM_WORDS);
        let n = P.dst_w * P.dst_h;
        for (var i = t; i < n; i += TAIL_SIZE) {
            let g = vec2<u32>(i % P.dst_w, i / P.dst_w);
            if (P.fast != 0u) {
                fast_texel(g);
            } else {
                level_texel(g.x, g.y);
            }
        }
        let c = P.cell_w * P.cell_h;
        for (var i = t; i < c; i += TAIL_SIZE) {
            make_cell(vec2<u32>(i % P.cell_w, i / P.cell_w), P.cell_w, P.cell_h, P.cx_off, P.cy_off);
        }
        storageBarrier();  // (the next grid's sums seen by every invocation before the next level)
    }
}

// ---- Passes over the base by columns (odd.py's COLS; GPUs). A workgroup of COL_GROUP invocations
// takes a chunk of the level's texels (or the grid's cells) whose base columns span at most
// COL_GROUP (odd.py's tables at PRM.px_off: the chunks' first texels or cells, one more at the end)
// and COL_ROWS of its rows: per row each invocation sums one base column over the row's footprint
// (the rows' weights, or none for a cell: the same for the whole workgroup, so its loop is uniform
// and its loads coalesce), then one invocation a texel or cell adds its columns from workgroup
// memory. The texel-a-thread forms (level_fast, cells) loop as long as the widest footprint of a
// SIMD group and read ~32 scattered texels a load (G(4) of 8191^2: cells 1 to 16 texels wide
// side by side).
//
// level_cols' float sums are texel_float's transposed: per column the rows' cells times their
// weights added over the rows, the columns times their weights added along the row. A term passes
// as many roundings as in texel_float (from the base Fx + Fy + 5 for the colour, Fx + Fy + 2 for
// alpha; from a grid Fx + Fy + 6; the bound is symmetric in x and y: tests/mips/test_odd_cols.py
// checks the transposed order), so screen_code's decisions stay exact. Levels from a grid too. cells_cols' sums are integers (32-bit lanes, a cell at most
// 256 base texels as NARROW_BLOCK's): any order gives the same sums.
const COL_GROUP: u32 = 256u;
override COL_ROWS: u32 = 4u;
var<workgroup> col_pre: array<vec4<f32>, COL_GROUP>;   // colour (premultiplied with WA) and alpha
var<workgroup> col_plain: array<vec3<f32>, COL_GROUP>; // the plain colour (WA)

struct ColCell {
    pre: vec4<f32>,   // cell_f(x, y, false)
    plain: vec3<f32>, // cell_f(x, y, true)'s colour (WA)
}

// A source cell's float sums for level_cols: the premultiplied colour and alpha, and the plain
// colour, from one read (the same values as cell_f's two sweeps)
fn col_cell(x: u32, y: u32) -> ColCell {
    if (FROM_BASE) {
        let c = codes_at(vec2<u32>(x, y));
        let a = f32(c.w);
        let l = base_lin_f(c);
        return ColCell(vec4<f32>(l * select(1.0, a, WA), a), l);
    }
    let i = (y * PRM.src_w + x) * SLOTS * WORDS_IN;
    var a = 0.0;
    if (HAS_ALPHA) {
        a = approx(load_big(i + NC * WORDS_IN));
    }
    var c = vec3<f32>(approx(load_big(i)), 0.0, 0.0);
    if (NC == 3u) {
        c = vec3<f32>(c.x, approx(load_big(i + WORDS_IN)), approx(load_big(i + 2u * WORDS_IN)));
    }
    if (WA) {  // (a stored cell holds its premultiplied colour, or its plain one where its alpha sum is 0)
        return ColCell(vec4<f32>(select(vec3<f32>(0.0), c, a > 0.0), a), select(c, vec3<f32>(0.0), a > 0.0));
    }
    return ColCell(vec4<f32>(c, a), c);
}

@compute @workgroup_size(COL_GROUP)
fn level_cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    load_tables(t);
    let j0 = index[PRM.px_off + wid.x];
    let j1 = index[PRM.px_off + wid.x + 1u];
    let xs = index[PRM.x_off + 4u * j0];  // the chunk's base columns: xs .. xe - 1
    let tl = axis(PRM.x_off, j1 - 1u);
    let xe = select(tl.y, tl.y + 1u, tl.w > 0u);
    let x = xs + t;
    let j = j0 + t;  // this invocation's texel in the output phase
    var tx = vec4<u32>(0u);
    if (j < j1) {
        tx = axis(PRM.x_off, j);
    }
    let ex = select(tx.y, tx.y + 1u, tx.w > 0u);
    let r0 = wid.y * COL_ROWS;
    let r1 = min(r0 + COL_ROWS, PRM.rows);
    for (var row = r0; row < r1; row++) {
        let ty = axis(PRM.y_off, row + PRM.row0);
        let ey = select(ty.y, ty.y + 1u, ty.w > 0u);
        var pre = vec4<f32>(0.0);
        var plain = vec3<f32>(0.0);
        if (x < xe) {
            for (var iy = ty.x; iy < ey; iy++) {
                let v = col_cell(x, iy);
                let wy = f32(select(select(PRM.dst_h, ty.w, iy == ty.y), ty.z, iy == ty.x));
                pre += v.pre * wy;
                if (WA) {
                    plain += v.plain * wy;
                }
            }
        }
        col_pre[t] = pre;
        if (WA) {
            col_plain[t] = plain;
        }
        workgroupBarrier();
        if (j < j1) {
            var s = vec4<f32>(0.0);
            var p = vec3<f32>(0.0);
            for (var ix = tx.x; ix < ex; ix++) {
                let wx = f32(select(select(PRM.dst_w, tx.w, ix == tx.y), tx.z, ix == tx.x));
                s += col_pre[ix - xs] * wx;
                if (WA) {
                    p += col_plain[ix - xs] * wx;
                }
            }
            if (WA && s.w == 0.0) {  // the plain colour where no alpha covers
                s = vec4<f32>(p, 0.0);
            }
            fast_finish(j, row, s);
        }
        workgroupBarrier();
    }
}

// 13 words a column, word-major (nh, nl, na, then the plain ph, pl with WA): 13 KB, within
// WebGPU's 16 KB of workgroup memory with the tables
var<workgroup> col_lanes: array<u32, 3328>;

fn lane3(k: u32, i: u32) -> vec3<u32> {
    return vec3<u32>(col_lanes[k * COL_GROUP + i], col_lanes[(k + 1u) * COL_GROUP + i],
                     col_lanes[(k + 2u) * COL_GROUP + i]);
}

fn put_lane3(k: u32, i: u32, v: vec3<u32>) {
    col_lanes[k * COL_GROUP + i] = v.x;
    col_lanes[(k + 1u) * COL_GROUP + i] = v.y;
    col_lanes[(k + 2u) * COL_GROUP + i] = v.z;
}

@compute @workgroup_size(COL_GROUP)
fn cells_cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    load_some(t, FROM_BASE, false);
    let c0 = index[PRM.px_off + wid.x];
    let c1 = index[PRM.px_off + wid.x + 1u];
    let xs = index[PRM.x_off + c0];
    let xe = index[PRM.x_off + c1];
    let x = xs + t;
    let cx = c0 + t;  // this invocation's cell in the output phase
    var a0 = 0u;
    var a1 = 0u;
    if (cx < c1) {
        a0 = index[PRM.x_off + cx] - xs;
        a1 = index[PRM.x_off + cx + 1u] - xs;
    }
    let r0 = wid.y * COL_ROWS;
    let r1 = min(r0 + COL_ROWS, PRM.dst_h);
    for (var cy = r0; cy < r1; cy++) {
        let y0 = index[PRM.y_off + cy];
        let y1 = index[PRM.y_off + cy + 1u];
        var s = LaneSums();
        if (x < xe) {
            for (var y = y0; y < y1; y++) {
                lane_add(&s, codes_at(vec2<u32>(x, y)));
            }
        }
        put_lane3(0u, t, s.nh);
        put_lane3(3u, t, s.nl);
        col_lanes[6u * COL_GROUP + t] = s.na;
        if (WA) {
            put_lane3(7u, t, s.ph);
            put_lane3(10u, t, s.pl);
        }
        workgroupBarrier();
        if (cx < c1) {
            var nh = vec3<u32>(0u);
            var nl = vec3<u32>(0u);
            var na = 0u;
            for (var i = a0; i < a1; i++) {
                nh += lane3(0u, i);
                nl += lane3(3u, i);
                na += col_lanes[6u * COL_GROUP + i];
            }
            if (WA && na == 0u) {  // the plain colour where the cell's alpha sum is 0 (as block_cell)
                nh = vec3<u32>(0u);
                nl = vec3<u32>(0u);
                for (var i = a0; i < a1; i++) {
                    nh += lane3(7u, i);
                    nl += lane3(10u, i);
                }
            }
            store_cell((cy * PRM.dst_w + cx) * SLOTS * WORDS_OUT, lanes_acc(nh, nl, na));
        }
        workgroupBarrier();
    }
}
