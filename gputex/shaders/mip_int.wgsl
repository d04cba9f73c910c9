//! include mip_intmath.wgsl
//! include mip_round.wgsl
// Integer box mips (mips_int.py; the arithmetic is explained in intbox.py): exact integer sums
// of fixed-point linear-light values over each texel's base footprint, and the output code
// found by exact comparisons with the thresholds between codes. No float decides a bit: the
// only floats are the estimate the search starts from (any estimate gives the same answer)
// and the recovery of a code from an -srgb texture's decoded load (nearest code: the gaps
// between codes are ~1e3 times the decode's error).
//
// Big integers are vec4<u32>, little-endian words. Sums: slot 0-2 colour (or grey in 0),
// slot 3 alpha, slots 4-6 plain colour (weighted alpha: used where the footprint's alpha is 0).
// Stored sums (a later level reads them) keep 3 words per slot: colour slots hold the
// premultiplied sums, or the plain ones where the texel's alpha sum is 0.

override CHANNELS: u32 = 4u;       // 1 (grey), 2 (grey + alpha), 4 (rgba)
override BITS: u32 = 8u;           // 8 or 16
override SRGB: bool = false;       // colour is sRGB data (tables); else linear (L = code)
override SRGB_VIEW: bool = false;  // the base is an -srgb texture: loads come back decoded
override WEIGHTED: bool = true;    // colour averaged by alpha (with an alpha channel)
override BGRA: bool = false;
override STORE: bool = false;      // keep this level's sums for later levels

override NC: u32 = select(1u, 3u, CHANNELS == 4u);
override HAS_ALPHA: bool = CHANNELS != 1u;
override WA: bool = WEIGHTED && HAS_ALPHA;
override SLOTS: u32 = NC + select(0u, 1u, HAS_ALPHA);

struct Params {
    src_size: vec2<u32>,  // the base (from_base) or the source level (from_sums)
    dst_size: vec2<u32>,
    row0: u32,            // first destination row of this band
    rows: u32,
    words_per_row: u32,   // output row pitch / 4
    chunks: u32,          // footprint rows split over this many invocations (from_base)
    chunk_rows: u32,
    total: u32,           // base texels: every texel's weights add up to this
    channels: u32,        // = SLOTS, as a uniform: finalize's loop is then not unrolled (one
                          // inlined copy of round_code instead of four: lavapipe compile time)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> prm: Params;
@group(0) @binding(3) var<storage, read> src_sums: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst_sums: array<u32>;
@group(0) @binding(5) var<storage, read_write> partial: array<u32>;
@group(0) @binding(6) var<storage, read> tables: array<u32>;  // L (2 words), then Q (3 words)

alias Acc = array<Big, 7>;

// a / r for r < 2^16 where r divides a (16-bit digits, so no 64-bit division is needed)
fn div_word(rem: u32, w: u32, r: u32) -> vec2<u32> {  // (quotient word, remainder)
    let hi = (rem << 16u) | (w >> 16u);
    let r1 = hi % r;
    let lo = (r1 << 16u) | (w & 0xffffu);
    return vec2<u32>(((hi / r) << 16u) | (lo / r), lo % r);
}

fn div_exact(a: Big, r: u32) -> Big {
    let w = div_word(0u, a.w, r);
    let z = div_word(w.y, a.z, r);
    let y = div_word(z.y, a.y, r);
    let x = div_word(y.y, a.x, r);
    return Big(x.x, y.x, z.x, w.x);
}

// The codes a base texel stores (grey in x; alpha in w)
fn write_texel(x: u32, row: u32, col: array<u32, 3>, alpha: u32) {
    var ch = array<u32, 4>(col[0], alpha, 0u, 0u);
    if (CHANNELS == 4u) {
        ch = array<u32, 4>(col[0], col[1], col[2], alpha);
        if (BGRA) {
            ch = array<u32, 4>(col[2], col[1], col[0], alpha);
        }
    }
    let bpt = CHANNELS * BITS / 8u;
    let base = row * prm.words_per_row;
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

// Codes of a texel from its sums; its sums kept (STORE) for later levels.
fn finalize(x: u32, y: u32, acc: Acc) {
    let a = acc[3];
    let w = Big(prm.total, 0u, 0u, 0u);
    let covered = WA && nonzero(a);
    var code = array<u32, 4>(0u, 0u, 0u, 0u);
    for (var c = 0u; c < prm.channels; c++) {
        var num = acc[select(c, c + 4u, WA && !covered)];
        var den = select(w, a, covered);
        if (c == NC) {
            num = a;
            den = w;
        }
        code[c] = round_code(num, den, SRGB && c < NC);
    }
    let col = array<u32, 3>(code[0], code[1], code[2]);
    let alpha = code[NC];
    write_texel(x, y - prm.row0, col, alpha);
    if (STORE) {
        let i = (y * prm.dst_size.x + x) * SLOTS * 3u;
        for (var c = 0u; c < SLOTS; c++) {
            var s = acc[c];
            if (c == NC) {
                s = a;
            } else if (WA && !covered) {
                s = acc[c + 4u];
            }
            dst_sums[i + 3u * c] = s.x;
            dst_sums[i + 3u * c + 1u] = s.y;
            dst_sums[i + 3u * c + 2u] = s.z;
        }
    }
}

fn zero_acc() -> Acc {
    return Acc(Big(0u), Big(0u), Big(0u), Big(0u), Big(0u), Big(0u), Big(0u));
}

// Sums over the base footprint (rows of chunk z) with integer weights: a base texel weighs its
// overlap with the footprint in units of 1 / (level size) on each axis.
@compute @workgroup_size(8, 8)
fn from_base(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows || gid.z >= prm.chunks) {
        return;
    }
    let s = prm.src_size;
    let d = prm.dst_size;
    let x = gid.x;
    let y = gid.y + prm.row0;
    let x0 = (x * s.x) / d.x;
    let x1 = ((x + 1u) * s.x + d.x - 1u) / d.x;
    let y0 = (y * s.y) / d.y;
    let y1 = ((y + 1u) * s.y + d.y - 1u) / d.y;
    let r0 = min(y1, y0 + gid.z * prm.chunk_rows);
    let r1 = min(y1, r0 + prm.chunk_rows);
    var acc = zero_acc();
    for (var ty = r0; ty < r1; ty++) {
        let wy = min((ty + 1u) * d.y, (y + 1u) * s.y) - max(ty * d.y, y * s.y);
        var row = zero_acc();
        for (var tx = x0; tx < x1; tx++) {
            let wx = min((tx + 1u) * d.x, (x + 1u) * s.x) - max(tx * d.x, x * s.x);
            let c = load_codes(vec2<i32>(i32(tx), i32(ty)));
            let wa = wx * c.w;
            for (var k = 0u; k < NC; k++) {
                let l = lin(c[k], SRGB);
                if (WA) {
                    row[k] = add(row[k], mul_lin(l, wa));
                    row[k + 4u] = add(row[k + 4u], mul_lin(l, wx));
                } else {
                    row[k] = add(row[k], mul_lin(l, wx));
                }
            }
            row[3] = add(row[3], Big(wa, 0u, 0u, 0u));
        }
        for (var k = 0u; k < 7u; k++) {
            acc[k] = add(acc[k], mul(row[k], wy));
        }
    }
    if (prm.chunks == 1u) {
        finalize(x, y, acc);
        return;
    }
    let i = ((gid.y * d.x + x) * prm.chunks + gid.z) * 21u;
    for (var k = 0u; k < 7u; k++) {
        partial[i + 3u * k] = acc[k].x;
        partial[i + 3u * k + 1u] = acc[k].y;
        partial[i + 3u * k + 2u] = acc[k].z;
    }
}

// Adds a texel's chunks (from_base with chunks > 1).
@compute @workgroup_size(8, 8)
fn finish(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows) {
        return;
    }
    var acc = zero_acc();
    for (var z = 0u; z < prm.chunks; z++) {
        let i = ((gid.y * prm.dst_size.x + gid.x) * prm.chunks + z) * 21u;
        for (var k = 0u; k < 7u; k++) {
            acc[k] = add(acc[k], Big(partial[i + 3u * k], partial[i + 3u * k + 1u], partial[i + 3u * k + 2u], 0u));
        }
    }
    finalize(gid.x, gid.y + prm.row0, acc);
}

// Sums of a level whose footprints an earlier stored level tiles exactly: the children's sums
// added, then divided (exactly) by the tiling ratio on each axis.
@compute @workgroup_size(8, 8)
fn from_sums(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= prm.dst_size.x || gid.y >= prm.rows) {
        return;
    }
    let rx = prm.src_size.x / prm.dst_size.x;
    let ry = prm.src_size.y / prm.dst_size.y;
    let x = gid.x;
    let y = gid.y + prm.row0;
    var acc = zero_acc();
    for (var cy = y * ry; cy < (y + 1u) * ry; cy++) {
        for (var cx = x * rx; cx < (x + 1u) * rx; cx++) {
            let i = (cy * prm.src_size.x + cx) * SLOTS * 3u;
            var a = Big(0u);
            if (HAS_ALPHA) {
                a = Big(src_sums[i + 3u * NC], src_sums[i + 3u * NC + 1u], src_sums[i + 3u * NC + 2u], 0u);
                acc[3] = add(acc[3], a);
            }
            // weighted: children without alpha hold plain sums; they go to the plain slots
            let off = select(0u, 4u, WA && !nonzero(a));
            for (var k = 0u; k < NC; k++) {
                let j = i + 3u * k;
                acc[k + off] = add(acc[k + off], Big(src_sums[j], src_sums[j + 1u], src_sums[j + 2u], 0u));
            }
        }
    }
    for (var k = 0u; k < 7u; k++) {
        acc[k] = div_exact(div_exact(acc[k], rx), ry);
    }
    finalize(x, y, acc);
}
