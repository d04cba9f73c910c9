/* The exact integer box mip chain on the host, for CPU adapters (gputex/mips/cpu.py).
 *
 * chain(base, out, width, height, levels, channels, bits, srgb, weighted, lin, q, threads, arena) -> None
 * arena_bytes() -> int; release() -> int (the process's arena of sums, below)
 *
 * The same integers as gputex/mips/intbox.py (its docstring and ``model_chain`` are the
 * contract) and ``mip_int.wgsl``: per texel and channel the exact sum ``S = sum(w * L(code))``
 * over the base footprint (``w``: the integer overlap weights; every texel's weights add up to
 * ``W = width * height``), with weighted alpha ``sum(w * a * L)`` over ``A = sum(w * a)`` where
 * ``A > 0``, else the plain sum over ``W``; the code is the ``k`` with
 * ``Q[k] * den <= S * 2**32 < Q[k + 1] * den``. So the bytes are the shader's.
 *
 * ``base``: level 0's tight rows (``width * channels * bits / 8`` bytes a row, 16-bit samples
 * little-endian); ``out``: a writable buffer for levels 1.. back to back, tight rows. ``lin``
 * and ``q``: ``intbox.lin_table`` / ``threshold_table`` as uint64 (8-bit sRGB only; linear
 * data rounds with one exact integer division). Serves 8-bit sRGB or linear and 16-bit linear
 * data with 1, 2 or 4 channels and ``W <= 2**24`` (every sum then fits 64 bits: W * 255 * 2**31
 * < 2**63; the comparisons use 128-bit products). Colour channels are independent and alpha is
 * last, so BGRA needs nothing of its own.
 *
 * Over 2**24 texels (issue 13, h13big): this file built again with SUMS128 (``_mipcpu128.c``,
 * module ``gputex._mipcpu128``, which gputex/mips/cpu.py's host_chain takes above 2**24) keeps
 * every sum in 128 bits (``sum_t``: stored levels, rings, cell grids, thresholds), for
 * ``W <= 2**28`` (16384^2: sums below W * 255 * 2**31 < 2**67, products of a threshold and a
 * denominator below 2**99). Values that stay small keep 64 bits there too (a texel's L and a * L,
 * the weights, sums of a few texels before their weight, the odd kernels' plain sums below
 * W * 2**31 <= 2**59), and code_linear divides in 64 bits where its operands fit. The RGBA8
 * kernels run in their portable form (their stores widened); the AVX-512 ones, whose lanes hold
 * 64-bit sums, are left out (simd_level() 0). The 64-bit build is the same machine code as
 * before (objdump, gcc 12). Speed, one thread, a photo-like 8192^2 weighted chain: 262 ms on the
 * 2-core machine, 227 ms on the H200 host, against 33 / 29 ms for 4096^2 (64-bit, AVX-512): ~2x
 * the time a texel; 16 threads on the H200 host 46-67 ms (``benchmarks/host_chain_scale.py
 * --per-level``, GPUTEX_TRACE's mips:host-engine). Memory: an 8192^2 chain's sums are its fused
 * band's rings and level 9's (a few MB); an odd size's first cell grid doubles (8191x8193: ~1.1
 * GB of cells at 16 bytes a slot, against ~0.54 GB at 8).
 *
 * Speed: a level whose footprints an earlier level's texels tile exactly is the sum of those
 * texels' stored sums (divided exactly by the tiling ratio); levels 1 and 2 otherwise are summed
 * from the base (rows of horizontal sums, then weighted by row; a level only the next one reads
 * is made with it, band by band, its sums in a ring of rows), later ones from a grid of exact
 * cell sums (gputex/mips/cells.py's G(l): the cells between every footprint edge of this and
 * the later such levels, each grid the unions of the previous one's cells), so no level reads
 * the whole base again. An sRGB code of a sum over W (no weighted alpha) comes from integer
 * thresholds T[k] = ceil(Q[k] * W / 2**32) and a bucket table of guesses (exact, no float); with
 * weighted alpha (a per-texel denominator) from a float estimate and a small table, confirmed
 * (and moved) by the exact comparisons. Rows are split over ``threads`` threads; the GIL is
 * released throughout.
 *
 * Hot loops keep their sums in registers and the context's pointers in locals: a sum kept in
 * memory was read back after every add, and a store through a uint8_t pointer may alias the
 * context, so the compiler reloaded its fields after each one. Built by gcc 13 with Python
 * 3.12's flags (the H200 host) the 2048^2 chain (straight alpha) took 56.5 ms before, 2.4x this
 * 2-core machine's 23.5 ms (gcc 12) while a PNG decode took 1.5x; with these loops and the
 * integer thresholds 21.0 ms there, 13.7 ms here (``benchmarks/host_chain_scale.py
 * --per-level --straight``); weighted alpha, opaque: 24.8 -> 17.0 ms here.
 *
 * Per image in a batch's decode worker (issue 13, h13chain): the sums come from a process-wide
 * arena kept between chains (no kernel zeroing of fresh huge pages: 24 MB and ~4 ms of system
 * time a 2048^2 chain on the H200 host); a fused band goes on through every later level that
 * tiles the one before alone (2048^2: levels 1-7 from one pass, their sums in rings); weighted
 * alpha over opaque footprints has thresholds of its own (255 * T[k]: no division), a guess
 * moves one code at most (no loop), an opaque 2x2 needs no product per texel, an opaque
 * footprint's alpha code no division; odd sizes' rows of horizontal sums stay in a ring for the
 * whole footprint, and a cell grid from the base keeps weighted alpha as max * P - D. Weighted
 * chains (the CLI's default), one core of the 2-core machine: 2048^2 16.8 -> 11.9 ms,
 * 1537x1999 35.1 -> 28.7-29.0; in the H200 batch's workers (the engine's CPU per chain):
 * 2048^2 46-47 -> 36-37 ms, 1999x1537 90-100 -> 81-82. Not kept: the file built with -mavx2
 * (gcc's vectors of 64-bit products): 11.9 -> 12.4 and 31.9 -> 33.3 ms here.
 *
 * RGBA8 sRGB, the batch's kind (issue 13, h13fast; ``fast``: 0 the loops above only, 1 also the
 * portable kernels below, 2 also their AVX-512 forms where the CPU has AVX-512 F/DQ/BW/VL, checked
 * at run time with __builtin_cpu_supports; the same bytes from each):
 * - Level 1 of even sizes (2x2 whole texels, rgba8_base_2x2_t): sums and codes in one pass, two
 *   8-byte loads a texel, L as 32 bits (L(255) = 2**31: half the cache), four opaque texels
 *   found with one AND of the two rows' words; each colour's code from P, the plain sum of four L,
 *   against thresholds of its own (t4 = ceil(T / wt), a constant guess shift; opaque weighted
 *   alpha: max * P * wt >= max * T exactly when P * wt >= T), no product, no division. Texels
 *   not opaque (weighted) go out of the loop (rgba8_mixed_2x2), so its registers stay its own.
 * - AVX-512 (rgba8_run_avx512, rgba8_band12_avx512): eight texels at a time, L, the guesses and
 *   the thresholds by gathers; levels 1 and 2 of sizes multiples of 4 together, so level 1's sums
 *   stay in registers and only level 2's are stored for the band's later levels (the band's
 *   rings took ~2 ms of 6: the stores and level 2's reads). A group with a texel not opaque, a row's
 *   last texels and the largest size's level 2 (sums of four sums past 64 bits) take the
 *   portable kernels.
 * - Tiled 2x2 levels from sums (rgba8_sums_2x2_t): the four children's slots added in registers,
 *   opaque (or straight) codes from the shared thresholds.
 * - Odd sizes' levels from the base (rgba8_base_odd_t): each base row's horizontal sums of the
 *   plain L read from the bytes (no row of a * L first), as m * (a run of adds) + the product of
 *   the texel shared with the next footprint; weighted alpha keeps whether a footprint is opaque
 *   and takes its codes from the plain sums (tw), else the texel is made alone
 *   (rgba8_odd_texel). Cell grids from the base sum each cell's run in registers.
 * - The code tables of a size (build_guess, t4, t16: ~60 us) are kept for the next chain of
 *   that size (srgb_tables), as a worker makes one chain after another.
 * - 8-bit linear RGBA is sRGB data of the tables L(k) = k * 2**23, Q[k] = (2k - 1) * 2**54 (the
 *   same rounding as code_linear, ties up): it takes all of the above (2048^2 14.5 -> 4.5 ms).
 * Whole chains, one core of the 2-core machine (Xeon with AVX-512), weighted: 2048^2 12.0 ->
 * 4.6 ms (portable kernels 6.0), 1999x1537 29.3 -> 22-23 ms; the H200 host (16 processes, later
 * chains): 2048^2 36.7 -> 11.6 ms, 1537x1999 81.2 -> 56.8 ms. Measured, not kept: planar rows of L
 * made by gathers before the odd sizes' sums (22.1 -> 26.5 ms at 1999x1537), the odd levels'
 * vertical sums and codes in AVX-512 (22.2 -> 23.2), two AVX-512 groups an iteration (6.0 -> 6.7 at
 * 2048^2), the bytes read one by one instead of 8 at a time (level 1 4.5 -> 6.1), level 2 from a
 * cell grid (FIRST_GRID 2: 22.5 -> 31.7), coarse cells summed by runs (no change).
 *
 * Odd sizes' levels from the base in AVX-512 (issue 13, h13odd; ``fast`` 2, where W <= 2**22):
 * - Sums in doubles: every sum is an integer of at most W * L(max) = W * 2**31 <= 2**53, and so is
 *   every partial sum and product on the way (all terms >= 0), so doubles hold them exactly and FMAs
 *   round nothing; the codes by the guess table (v >> shift = v * 2**-shift, truncated) and one
 *   threshold of ``tw`` as a double (``twd``), straight alpha's code_linear by a float quotient moved
 *   to the exact one.
 * - A base row's L as planes (planar_row_vbmi: 64 texels at a time by byte permutes, each of L's four
 *   bytes looked up in its 256-byte table with two vpermt2b and a blend, where the CPU has AVX-512 VBMI;
 *   else planar_row: gathers); a footprint on x as at most 8 terms (OddTab): groups of eight whose
 *   terms are texels a + s * l + i (s = 2 or 4: levels 1 and 2 of x = 2m + 1, 4m + 1) from the
 *   planes, two terms a 64-bit lane with 32x32-bit products; other groups by gathers (odd_h).
 * - Levels 1 and 2 in one pass over the base where neither's sums are read later (rgba8_odd12_avx512:
 *   the batch's 1537x1999 and 1999x1537): each base row's planes made once, each level's sums added
 *   row by row in two rows of sums, the codes on a texel's last row (odd_out); else one level, its
 *   horizontal sums in a ring as before (rgba8_base_odd_avx512). Weighted footprints not opaque: the
 *   scalar texel (rgba8_odd_texel_of), as before. ``kernels="avx512"`` (fast 3): the same without VBMI.
 * Weighted, one core of the 2-core machine (loaded: other helpers' tests; host_chain_scale.py --alternate),
 * levels 1-2 of 1537x1999 19.4 -> 11.8 ms (0.61), whole chains 0.65-0.77 of main's; H200 host, one process: 1537x1999
 * 28.1 -> 16.8 ms, 1999x1537 29.7 -> 17.0 (0.59-0.62); 16 processes, later chains: 1537x1999
 * 55.1 -> 22.6 ms. Measured, not kept: the planes built by 16-lane gathers and the terms by permutes
 * of 32-bit lanes (levels 1-2 13.1 -> 14.8 ms against gathers per term; kept once the planes came
 * from byte permutes and the terms from 64-bit lanes), a prefetch of the next base row (no change),
 * the first cell grid from the planes (columns summed per cell row, 256 at a time, cells from prefix
 * sums: 0.95-1.01 of the scalar one's time, here and on the H200 host). Where the time goes now
 * (1537x1999, perf, this machine): levels 1-2 about half (the codes' two gathers a channel about a quarter
 * of that, the planes a fifth), the first grid and level 3 about a third.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t u64;
typedef unsigned __int128 u128;

/* Sums: 64 bits in ``_mipcpu`` (W <= 2**24: every sum fits), 128 in ``_mipcpu128`` (this file
 * built again with SUMS128 by _mipcpu128.c, for 2**24 < W <= 2**28; the RGBA8 kernels left out). */
#ifdef SUMS128
typedef u128 sum_t;
#define MODULE_NAME "_mipcpu128"
#define MAX_W ((u64)1 << 28)
#else
typedef u64 sum_t;
#define MODULE_NAME "_mipcpu"
#define MAX_W ((u64)1 << 24)
#endif

#define MAX_SLOTS 4
#define GUESS_BITS 14
#define MAX_THREADS 16
#define P4_SHIFT (34 - GUESS_BITS)  /* guesses of a sum of four L (<= 2**33) */
#define P16_SHIFT (36 - GUESS_BITS)  /* of sixteen (<= 2**35) */
#define MAX_RING 16  /* rows of a footprint from the base (levels 1-2: at most height / (height >> 2) + 2 = 9) */

typedef struct {
    int w, h;           /* level size */
    sum_t *sums;        /* stored sums (w * h * slots), or NULL */
    size_t bytes;       /* what big_alloc mapped for them (0: in the arena) */
} Level;

/* Large buffers in transparent huge pages where Linux has them (madvise mode): a 2048^2 chain's
 * 32 MB of level-1 sums cost ~10 ms of 4 KiB page faults otherwise. */
static void *big_alloc(size_t *bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    size_t n = (*bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    madvise(p, n, MADV_HUGEPAGE);
    *bytes = n;
    return p;
#else
    return malloc(*bytes);
#endif
}

static void big_free(void *p, size_t bytes)
{
    if (!p || !bytes) return;  /* (bytes 0: in the arena) */
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    munmap(p, bytes);
#else
    (void)bytes;
    free(p);
#endif
}

/* The process's arena: the sums of one chain (stored levels, cell grids) bump-allocated from one
 * mapping that is kept for the next chain, as a decode worker makes one chain after another. A
 * fresh mapping each chain had its huge pages zeroed by the kernel every time (``clear_page``:
 * 14% of a 2048^2 chain's profile on the 2-core machine; 12 huge pages, 24 MB, a chain, most of
 * them for levels of a few KB each rounded up to 2 MB). A chain takes the arena where no other
 * thread holds it (else it maps its sums as before), sized first for what the chain will take
 * (``chain_need``; and after it, for what it took, ``want``), up to ARENA_MAX: a process keeps
 * at most that much (RGBA: 2048^2 and 4096^2 one 2 MB huge page, their tiled levels fused;
 * 1999x1537 12 MB of cell grids; 4095x4097's grids are over the cap and mapped per chain as
 * before); ``release()`` unmaps it. */
#define ARENA_MAX ((size_t)64 << 20)
#define ARENA_ALIGN 64

static uint8_t *arena_mem;
static size_t arena_size;
static int arena_busy;

typedef struct {
    int held;          /* this chain holds the arena */
    uint8_t *mem;      /* the arena's memory (NULL: none yet, or not held) */
    size_t size, used, want;
} Arena;

static void arena_take(Arena *a)
{
    memset(a, 0, sizeof(Arena));
    if (__atomic_exchange_n(&arena_busy, 1, __ATOMIC_ACQUIRE)) return;  /* another thread's chain has it */
    a->held = 1;
    a->mem = arena_mem;
    a->size = arena_mem ? arena_size : 0;
}

/* The arena's mapping replaced by ``p``: the new one in place before the old one is unmapped, so
 * a process forked by another thread meanwhile inherits a mapped arena (the old one unmapped first,
 * a child forked in between took a pointer to unmapped memory: review, a SIGSEGV shown with the gap
 * widened). */
static void arena_swap(uint8_t *p, size_t bytes)
{
    uint8_t *old = arena_mem;
    size_t old_size = arena_size;
    __atomic_store_n(&arena_mem, p, __ATOMIC_SEQ_CST);
    __atomic_store_n(&arena_size, bytes, __ATOMIC_SEQ_CST);
    big_free(old, old_size);
}

/* Gives the arena back, grown to what this chain asked for (where that is at most ARENA_MAX). */
static void arena_give(Arena *a)
{
    if (!a->held) return;
    if (a->want > arena_size && a->want <= ARENA_MAX) {
        /* (only where arena_reserve's mapping failed: chain_need sizes the reserve exactly) */
        size_t bytes = a->want;
        uint8_t *p = big_alloc(&bytes);
        if (p) arena_swap(p, bytes);
    }
    __atomic_store_n(&arena_busy, 0, __ATOMIC_RELEASE);
}

/* The arena made ``need`` bytes large where it is smaller (and need at most ARENA_MAX), before
 * the chain takes anything from it: a chain's sums all come from the arena from the process's
 * second chain on (a batch's decode worker makes three or four). */
static void arena_reserve(Arena *a, size_t need)
{
    if (!a->held || need <= a->size || need > ARENA_MAX) return;
    size_t bytes = need;
    uint8_t *p = big_alloc(&bytes);
    if (!p) return;
    arena_swap(p, bytes);
    a->mem = p;
    a->size = bytes;
}

/* Sums of ``*bytes`` bytes: from the arena (``*bytes`` set to 0: nothing to unmap) or mapped. */
static void *sums_alloc(Arena *a, size_t *bytes)
{
    size_t n = (*bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);  /* (as chain_need counts) */
    a->want += n;
    if (a->mem && a->used + n <= a->size) {
        void *p = a->mem + a->used;
        a->used += n;
        *bytes = 0;
        return p;
    }
    return big_alloc(bytes);
}

/* Integer thresholds of codes: t[k] the least sum of code k (t[256] = max), guess[S >> shift]
 * the largest k whose t[k] lies at or below that bucket's start; ``one_step``: no bucket holds two
 * thresholds (then a guess moves up one code at most). */
typedef struct {
    sum_t t[257];
    uint8_t guess[1 << GUESS_BITS];
    int shift, one_step;
} Thresh;

/* A level the AVX-512 odd kernels make (odd_tab_build): its footprints (axis_weights: on each axis the
 * first texel, the count and the weights; ``own``: mapped for it) and its x axis as ``k`` terms of ``dwp``
 * lanes (the width rounded up to 8): texel indices and weights (0: no term), as doubles and as 64-bit
 * lanes, and per group of eight the first texel ``a`` where term i of lane l is texel a + st * l + i
 * (st 2 or 4), else -1. ``lvl`` 0: none. */
typedef struct {
    int lvl, k, dwp, st, own;
    int *idx, *reg;
    double *w;
    u64 *w64;
    int *xs, *xn, *ys, *yn;
    u64 *xw, *yw;
    int xstride, ystride;
} OddTab;

typedef struct {
    const uint8_t *base;
    uint8_t *out;
    int width, height, levels, channels, bits, srgb, weighted;
    int nc, has_alpha, slots, bpt, top;
    u64 total;
    const u64 *lin;        /* sRGB 8-bit: L(code) */
    const u64 *q;          /* sRGB 8-bit: Q[k] */
    uint8_t guess[1 << GUESS_BITS];
    double guess_scale;
    double qb[257];        /* sRGB 8-bit: Q[k] in bucket units (a float screen; qb[256] = inf) */
    /* sRGB 8-bit, sums over W (no weighted alpha): code k from S >= T[k] = ceil(Q[k] * W / 2**32)
     * (``tw``); weighted sums over a footprint opaque throughout (255 times those): from
     * S >= 255 * T[k] (``to``) */
    Thresh tw, to;
    u64 opaque;            /* alpha's sum over a footprint opaque throughout: max * W */
    uint32_t lin32[256];   /* sRGB 8-bit: L(code) as 32 bits (L(255) = 2**31), for the RGBA8 kernels */
    Thresh t4;             /* sRGB 8-bit: codes of P = the sum of four L (a 2x2 of equal weights): P >= T[k] / wt */
    Thresh t16;            /* the same for sixteen L (level 2 of sizes multiples of 4, rgba8_band12_avx512) */
    /* odd sizes' levels from the base in AVX-512 doubles (rgba8_base_odd_avx512, rgba8_odd12_avx512,
     * W <= 2**22): L and the thresholds of ``tw`` as doubles (exact: integers below 2**53), 2**-tw.shift;
     * the levels' tables (odd_tab_build: odd[0] the level from the base being made, or levels 1 and 2) */
    double lind[256], twd[257], tw_scale;
    uint8_t linb[4][256];  /* byte p of L(code): planar_row_vbmi's tables */
    int vbmi;              /* planar_row_vbmi runs (AVX-512 VBMI) */
    OddTab odd[2];
    int fast;              /* the RGBA8 sRGB kernels of 2x2 footprints: 0 none, 1 portable, 2 also AVX-512 */
    int fast12;            /* levels 1 and 2 made together (AVX-512) */
    int fuse_top;          /* FUSED: the last level of the band */
    Level lv[32];
    size_t out_off[32];
    int source[32];
    /* the from-base level being made */
    const int *xs, *xn, *ys, *yn;
    const u64 *xw, *yw;
    int xstride, ystride;
    /* the cell grid G(l) (see gputex/mips/cells.py): cut points per axis, cell sums (slots) */
    int gx_n, gy_n;             /* cells on each axis */
    const int *gx, *gy;         /* gx_n + 1 / gy_n + 1 cut points */
    const int *gx_of, *gy_of;   /* the cell of each base column / row */
    sum_t *cells;               /* gy_n * gx_n * slots */
    Arena arena;                /* where the sums are taken from */
} Ctx;

/* ---- codes from sums ------------------------------------------------------------------------ */

#define INLINE static inline __attribute__((always_inline))

INLINE int ge_q(const Ctx *c, sum_t s, sum_t den, int k)
{
    return ((u128)s << 32) >= (u128)c->q[k] * den;
}

/* linear data: the largest k with s * 2**32 >= (k - 1/2) * 2**32 * den, ties up (every operand
 * fits 64 bits: s <= W * 65535**2 < 2**57) */
INLINE unsigned code_linear(sum_t s, sum_t den, int top)
{
#ifdef SUMS128
    if ((s | den) >> 62) {  /* (a 128-bit division only where the operands need it) */
        u128 k = (2 * s + den) / (2 * den);
        return k > (u128)top ? (unsigned)top : (unsigned)k;
    }
#endif
    u64 k = (2 * (u64)s + (u64)den) / (2 * (u64)den);
    return k > (u64)top ? (unsigned)top : (unsigned)k;
}

/* sRGB: the bucket of the guess table that a value (in bucket units) falls in */
INLINE int bucket_of(double x)
{
    int i = x >= (double)((1 << GUESS_BITS) - 1) ? (1 << GUESS_BITS) - 1 : (int)x;
    return i < 0 ? 0 : i;
}

/* The integer thresholds of sums over W times ``scale``: S * 2**32 >= Q[k] * W exactly when
 * S >= T[k] = ceil(Q[k] * W / 2**32) (S an integer; Q[k] * W < 2**63 * 2**24), and
 * floor(S / scale) >= T[k] exactly when S >= scale * T[k] (scale * W * L(max) < 2**63). */
static int bit_length(sum_t v)
{
#ifdef SUMS128
    if (v >> 64) return 128 - __builtin_clzll((u64)(v >> 64));
#endif
    return 64 - __builtin_clzll((u64)v | 1);
}

static void build_thresholds(Ctx *c, Thresh *th, u64 scale)
{
    for (int j = 0; j <= c->top; j++) th->t[j] = (sum_t)scale * (u64)((((u128)c->q[j] * c->total) + 0xffffffffu) >> 32);
    th->t[c->top + 1] = ~(sum_t)0;
    sum_t most = (sum_t)scale * c->total * c->lin[c->top];  /* the largest sum */
    int bits = bit_length(most), k = 0;
    th->shift = bits > GUESS_BITS ? bits - GUESS_BITS : 0;
    for (int i = 0; i < (1 << GUESS_BITS); i++) {
        sum_t start = (sum_t)i << th->shift;
        while (k < c->top && th->t[k + 1] <= start) k++;
        th->guess[i] = (uint8_t)k;
    }
    /* the thresholds lie apart by a bucket or more for any W <= 2**24 (review: at least 1.24
     * buckets, the plain table where W is a power of two; 2.48 the 255x one), so ``one_step`` holds
     * and finalize_t's loop for a table without it is never taken: kept, for thresholds of other data */
    th->one_step = 1;
    for (int j = 0; j < c->top; j++) th->one_step &= th->t[j + 1] - th->t[j] >= ((sum_t)1 << th->shift);
}

static void build_guess(Ctx *c)
{
    /* guess[i]: the largest k whose threshold lies at or below bucket i's start; the exact
     * comparisons move a guess that float rounding put one bucket off */
    double span = (double)c->lin[c->top];  /* L(max) = 2**31: the top of the range */
    int k = 0;
    c->guess_scale = (double)(1 << GUESS_BITS) / span;
    for (int i = 0; i < (1 << GUESS_BITS); i++) {
        double start = (double)i / c->guess_scale * 4294967296.0;
        while (k < c->top && (double)c->q[k + 1] <= start) k++;
        c->guess[i] = (uint8_t)k;
    }
    for (int j = 0; j <= c->top; j++) c->qb[j] = (double)c->q[j] / 4294967296.0 * c->guess_scale;
    c->qb[c->top + 1] = 1e300;
    build_thresholds(c, &c->tw, 1);
    build_thresholds(c, &c->to, (u64)c->top);
}

/* Codes of texel x of row y of the current level from its slot sums (colour slots already
 * the weighted sums where a > 0, else the plain sums); the sums kept where a later level reads them. */
INLINE void finalize_t(const Ctx *c, int lvl, sum_t *dsums, int drow0, int x, int y, const sum_t *acc, const int CH,
                       const int B16, const int SRGB, const int WA)
{
    const int nc = CH == 4 ? 3 : 1, ha = CH != 1, ns = nc + ha;
    const Level *L = &c->lv[lvl];
    sum_t a = ha ? acc[nc] : 0;
    sum_t den = (WA && a > 0) ? a : c->total;
    size_t t = (size_t)y * L->w + x;
    unsigned codes[4];
    if (SRGB && (!(WA && a > 0) || a == c->opaque)) {
        /* over W: integers only, a bucket's guess moved up along the exact thresholds (2048^2
         * RGBA8 sRGB chain, straight alpha, 20.5 -> 13.7 ms on one core of the 2-core machine,
         * against the float screen, which stays for weighted alpha's per-texel denominators). Weighted alpha over a
         * footprint opaque throughout (a = max * W) is the same: each sum is max * sum(w * L),
         * and Q[k] * a <= S * 2**32 exactly when S / max >= T[k] (the default --alpha weighted,
         * every opaque photo: 2048^2 chain 24.4 -> 16.9 ms on one core here) */
        const Thresh *restrict th = (WA && a > 0) ? &c->to : &c->tw;  /* (opaque: S >= 255 * T[k], no division) */
        for (int k = 0; k < nc; k++) {
            sum_t s = acc[k];
            int g = th->guess[s >> th->shift];
            /* one step without a branch: a bucket holds one threshold at most (``one_step``), so
             * no loop (the loop alone mispredicted: 2048^2 chain ~1 ms of 17, one core here) */
            g += s >= th->t[g + 1];
            if (!th->one_step)
                while (s >= th->t[g + 1]) g++;
            codes[k] = (unsigned)g;
        }
    } else if (SRGB) {
        double inv = c->guess_scale / (double)den;
        for (int k = 0; k < nc; k++) {
            sum_t s = acc[k];
            /* a guess from the float value (relative error < 1e-15) and the bucket table, moved
             * along the float thresholds; where it lies within 1e-10 of one, the exact
             * comparisons decide: Q[k] * den <= s * 2**32 < Q[k + 1] * den */
            double x = (double)s * inv;
            int g = c->guess[bucket_of(x)];
            while (g < 255 && x >= c->qb[g + 1]) g++;
            double margin = 1e-10 * (x + 1.0);
            if (!(x - c->qb[g] > margin && c->qb[g + 1] - x > margin)) {  /* near a threshold: exactly */
                while (g > 0 && !ge_q(c, s, den, g)) g--;
                while (g < 255 && ge_q(c, s, den, g + 1)) g++;
            }
            codes[k] = (unsigned)g;
        }
    } else {
        for (int k = 0; k < nc; k++) codes[k] = code_linear(acc[k], den, c->top);
    }
    if (ha) codes[nc] = a == c->opaque ? (unsigned)c->top : code_linear(a, c->total, c->top);  /* (no division) */
    if (!B16 && CH == 4) {  /* one store */
        uint8_t b4[4] = {(uint8_t)codes[0], (uint8_t)codes[1], (uint8_t)codes[2], (uint8_t)codes[3]};
        memcpy(c->out + c->out_off[lvl] + t * CH, b4, 4);
    } else if (!B16) {
        uint8_t *restrict o = c->out + c->out_off[lvl] + t * CH;  /* (restrict: no reload of the context) */
        for (int k = 0; k < CH; k++) o[k] = (uint8_t)codes[k];
    } else {
        uint8_t *restrict o = c->out + c->out_off[lvl] + t * CH * 2;
        for (int k = 0; k < CH; k++) {
            o[2 * k] = (uint8_t)(codes[k] & 0xff);
            o[2 * k + 1] = (uint8_t)(codes[k] >> 8);
        }
    }
    if (dsums) {
        sum_t *restrict d = dsums + ((size_t)(y - drow0) * L->w + x) * ns;
        for (int k = 0; k < ns; k++) d[k] = acc[k];
    }
}

/* ---- a level from the base ------------------------------------------------------------------ */

/* Code ``i`` of the base bytes (16-bit codes little-endian). */
INLINE unsigned code_of(const uint8_t *base, size_t i, const int B16)
{
    if (!B16) return base[i];
    return (unsigned)base[2 * i] | ((unsigned)base[2 * i + 1] << 8);
}

INLINE unsigned code_at(const Ctx *c, size_t i, const int B16) { return code_of(c->base, i, B16); }

/* Base row ty as slot values: a * L(code) (weighted) or L(code) per colour channel, then a. */
INLINE void base_values(const Ctx *c, int ty, u64 *vals, int plain, const int CH, const int B16, const int SRGB,
                        const int WA)
{
    const int nc = CH == 4 ? 3 : 1, ha = CH != 1, ns = nc + ha;
    size_t i = (size_t)ty * c->width * CH;
    for (int tx = 0; tx < c->width; tx++, i += CH, vals += ns) {
        u64 a = ha ? code_at(c, i + CH - 1, B16) : 1;
        for (int k = 0; k < nc; k++) {
            unsigned code = code_at(c, i + k, B16);
            u64 l = SRGB ? c->lin[code] : (u64)code;
            vals[k] = (WA && !plain) ? a * l : l;
        }
        if (ha) vals[nc] = a;
    }
}

INLINE void rows_from_base_t(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, sum_t *row, u64 *vals,
                             const int CH, const int B16, const int SRGB, const int WA)
{
    const int nc = CH == 4 ? 3 : 1, ha = CH != 1, ns = nc + ha;
    const Level *L = &c->lv[lvl];
    int dw = L->w;
    /* footprints of whole base texels, all of one weight (each axis a multiple of the level's):
     * the values added, then multiplied by the weight once */
    const int fx = c->width % dw == 0 ? c->width / dw : 0, fy = c->height % L->h == 0 ? c->height / L->h : 0;
    const u64 wt = (u64)dw * (u64)L->h;
    int have = -1;  /* the base row whose values ``vals`` holds */
    /* weighted footprints: the horizontal sums of each base row, made once, in a ring of ``nring``
     * rows after the row itself in the job's buffer (base row ty in slot ty % nring, ``tag``: the
     * row a slot holds), all of a footprint's rows at once (yn <= ystride = nring); then each sum
     * added over them in a register and stored once (the row was read and written back for every
     * base row: 1537x1999 levels 1-2 21.9 -> 20.5 ms, one core here) */
    const int nring = c->ystride;
    sum_t *hring = row + (size_t)dw * ns;
    int tag[MAX_RING];
    for (int i = 0; i < nring && i < MAX_RING; i++) tag[i] = -1;
    for (int y = y0; y < y1; y++) {
        if (fx && fy && !(fx == 2 && fy == 2)) memset(row, 0, sizeof(sum_t) * (size_t)dw * ns);  /* (else each sum stored whole) */
        int missing = 0;
        if (fx == 2 && fy == 2) {  /* the common 2x2: the values summed as they are read */
            /* in registers, each texel's sums stored once, and the context's pointers in locals: a
             * sum kept in ``row`` was read back after every add, and any store may alias the
             * context for the compiler (2048^2 RGBA8 sRGB level 1: 16.1 -> 13.6 ms, one core of
             * the 2-core machine) */
            const uint8_t *restrict base = c->base;
            const u64 *restrict lin = c->lin;
            const size_t stride = (size_t)c->width * CH;
            size_t i = (size_t)(2 * y) * stride;
            sum_t *restrict r = row;
            const u64 top = (u64)c->top, topwt = top * wt;
            for (int x = 0; x < dw; x++, r += ns, i += 2 * CH) {
                u64 acc[MAX_SLOTS] = {0, 0, 0, 0};
                if (WA && ha) {
                    /* weighted alpha, four opaque texels (every texel of an opaque photo): the plain
                     * sums times max, no product per texel (each code <= max: all four are max when
                     * their AND is) */
                    u64 a00 = code_of(base, i + CH - 1, B16), a01 = code_of(base, i + 2 * CH - 1, B16);
                    u64 a10 = code_of(base, i + stride + CH - 1, B16), a11 = code_of(base, i + stride + 2 * CH - 1, B16);
                    if ((a00 & a01 & a10 & a11) == top) {
                        for (int k = 0; k < nc; k++) {
                            unsigned k00 = code_of(base, i + k, B16), k01 = code_of(base, i + CH + k, B16);
                            unsigned k10 = code_of(base, i + stride + k, B16), k11 = code_of(base, i + stride + CH + k, B16);
                            u64 sum = SRGB ? lin[k00] + lin[k01] + lin[k10] + lin[k11] : (u64)k00 + k01 + k10 + k11;
                            r[k] = (sum_t)sum * topwt;
                        }
                        r[nc] = 4 * topwt;
                        continue;
                    }
                }
                for (int j = 0; j < 2; j++) {
                    size_t t = i + (size_t)j * stride;
                    u64 a0 = ha ? code_of(base, t + CH - 1, B16) : 1, a1 = ha ? code_of(base, t + 2 * CH - 1, B16) : 1;
                    for (int k = 0; k < nc; k++) {
                        unsigned k0 = code_of(base, t + k, B16), k1 = code_of(base, t + CH + k, B16);
                        u64 l0 = SRGB ? lin[k0] : (u64)k0, l1 = SRGB ? lin[k1] : (u64)k1;
                        acc[k] += WA ? a0 * l0 + a1 * l1 : l0 + l1;
                    }
                    if (ha) acc[nc] += a0 + a1;
                }
                for (int k = 0; k < ns; k++) r[k] = (sum_t)acc[k] * wt;
            }
        } else if (fx && fy) {
            for (int j = 0; j < fy; j++) {
                base_values(c, y * fy + j, vals, 0, CH, B16, SRGB, WA);
                const u64 *v = vals;
                sum_t *r = row;
                if (fx == 2) {
                    for (int x = 0; x < dw; x++, v += 2 * ns, r += ns)
                        for (int k = 0; k < ns; k++) r[k] += v[k] + v[ns + k];
                } else {
                    for (int x = 0; x < dw; x++, r += ns)
                        for (int i = 0; i < fx; i++, v += ns)
                            for (int k = 0; k < ns; k++) r[k] += v[k];
                }
            }
            for (size_t i = 0; i < (size_t)dw * ns; i++) row[i] *= wt;
        }
        if (!(fx && fy)) {
            const int n = c->yn[y];
            const sum_t *hrow[MAX_RING];
            u64 wy[MAX_RING];
            for (int j = 0; j < n; j++) {
                int ty = c->ys[y] + j, slot = ty % nring;
                sum_t *restrict hs = hring + (size_t)slot * dw * ns;
                if (tag[slot] != ty) {  /* (a row shared with the footprint above: kept) */
                    if (ty != have) base_values(c, ty, vals, 0, CH, B16, SRGB, WA);
                    have = ty;
                    const int *restrict xs = c->xs, *restrict xn = c->xn;
                    const u64 *restrict xw = c->xw;
                    const int xstride = c->xstride;
                    for (int x = 0; x < dw; x++) {
                        sum_t h[MAX_SLOTS] = {0, 0, 0, 0};
                        const u64 *restrict wx = xw + (size_t)x * xstride;
                        const u64 *restrict v = vals + (size_t)xs[x] * ns;
                        for (int i = 0; i < xn[x]; i++, v += ns)
                            for (int k = 0; k < ns; k++) h[k] += (sum_t)wx[i] * v[k];
                        for (int k = 0; k < ns; k++) hs[(size_t)x * ns + k] = h[k];
                    }
                    tag[slot] = ty;
                }
                hrow[j] = hs;
                wy[j] = c->yw[(size_t)y * c->ystride + j];
            }
            sum_t *restrict r = row;
            for (size_t i = 0; i < (size_t)dw * ns; i++) {
                sum_t sum = 0;
                for (int j = 0; j < n; j++) sum += wy[j] * hrow[j][i];
                r[i] = sum;
            }
        }
        if (WA)
            for (int x = 0; x < dw; x++) missing |= row[(size_t)x * ns + nc] == 0;
        if (WA && missing) {  /* footprints without alpha: their plain sums */
            for (int x = 0; x < dw; x++)
                if (row[(size_t)x * ns + nc] == 0)
                    for (int k = 0; k < nc; k++) row[(size_t)x * ns + k] = 0;
            for (int j = 0; j < c->yn[y]; j++) {
                u64 wy = c->yw[(size_t)y * c->ystride + j];
                base_values(c, c->ys[y] + j, vals, 1, CH, B16, SRGB, WA);
                have = -1;
                for (int x = 0; x < dw; x++) {
                    sum_t *r = row + (size_t)x * ns;
                    if (r[nc] != 0) continue;
                    const u64 *wx = c->xw + (size_t)x * c->xstride;
                    const u64 *v = vals + (size_t)c->xs[x] * ns;
                    for (int i = 0; i < c->xn[x]; i++, v += ns)
                        for (int k = 0; k < nc; k++) r[k] += (sum_t)(wy * wx[i]) * v[k];
                }
            }
        }
        for (int x = 0; x < dw; x++) finalize_t(c, lvl, dsums, drow0, x, y, row + (size_t)x * ns, CH, B16, SRGB, WA);
    }
}

/* ---- a level from stored sums --------------------------------------------------------------- */

/* T: the accumulator type (u64 where r * W * 2**39 < 2**64, else u128) */
#define FROM_SUMS_BODY(T)                                                                                   \
    for (int y = y0; y < y1; y++) {                                                                      \
        for (int x = x0; x < x1; x++) {                                                                  \
            T wsum[MAX_SLOTS] = {0, 0, 0, 0}, psum[3] = {0, 0, 0};                                        \
            for (int cy = y * ry; cy < (y + 1) * ry; cy++) {                                             \
                const sum_t *s = ssums + ((size_t)(cy - srow0) * S->w + (size_t)x * rx) * ns;           \
                for (int cx = 0; cx < rx; cx++, s += ns) {                                               \
                    sum_t a = ha ? s[nc] : 0;                                                            \
                    if (ha) wsum[nc] += a;                                                               \
                    if (WA && a == 0) {                                                                  \
                        for (int k = 0; k < nc; k++) psum[k] += s[k];                                    \
                    } else {                                                                             \
                        for (int k = 0; k < nc; k++) wsum[k] += s[k];                                    \
                    }                                                                                    \
                }                                                                                        \
            }                                                                                            \
            if (WA && wsum[nc] == 0)                                                                     \
                for (int k = 0; k < nc; k++) wsum[k] = psum[k];                                          \
            sum_t acc[MAX_SLOTS];                                                                        \
            for (int k = 0; k < ns; k++) acc[k] = (sum_t)(shift >= 0 ? wsum[k] >> shift : wsum[k] / r); \
            finalize_t(c, lvl, dsums, drow0, x, y, acc, CH, B16, SRGB, WA);                              \
        }                                                                                                \
    }

INLINE void rows_from_sums_t(const Ctx *c, int lvl, const sum_t *ssums, int srow0, sum_t *dsums, int drow0, int y0, int y1,
                             int x0, int x1, const int CH, const int B16, const int SRGB, const int WA)
{
    const int nc = CH == 4 ? 3 : 1, ha = CH != 1, ns = nc + ha;
    const Level *L = &c->lv[lvl], *S = &c->lv[c->source[lvl]];
    int rx = S->w / L->w, ry = S->h / L->h;
    u64 r = (u64)rx * (u64)ry;
    int shift = (r & (r - 1)) == 0 ? __builtin_ctzll(r) : -1;
#ifndef SUMS128
    if (r * c->total < ((u64)1 << 25)) {
        FROM_SUMS_BODY(u64)
    } else
#endif
    {
        FROM_SUMS_BODY(u128)
    }
}

/* ---- RGBA8 sRGB, 2x2 footprints: the batch's kind of chain (issue 13, h13fast) ----------------- */

/* Level ``lvl`` from the base where its footprints are 2x2 whole texels (width and height even):
 * one pass per row, sums and codes together, two 8-byte loads a texel pair. Four opaque texels
 * (one AND of the two rows' words) or straight alpha: each colour's sum is four entries of a
 * 32-bit table added (L(code) <= 2**31: half the cache of the u64 table), times the weight, its
 * code one bucket guess and one threshold (the tables of finalize_t); straight alpha's code is
 * (A + 2) >> 2 (code_linear of A * wt over W = 4 * wt, no division). Other texels (weighted alpha
 * not opaque throughout) as rows_from_base_t, then finalize_t. The stored sums are the same. */
/* A 2x2 of weighted alpha with some texel not opaque: the products (a footprint without alpha:
 * the plain sums), then finalize_t (out of the kernel's loop: its registers stay the loop's). */
static __attribute__((noinline)) void rgba8_mixed_2x2(const Ctx *c, int lvl, sum_t *dsums, int drow0, int x, int y,
                                                      u64 r0, u64 r1, u64 wt)
{
    sum_t acc[4] = {0, 0, 0, 0}, pl[3] = {0, 0, 0};
    const u64 rr[2] = {r0, r1};
    for (int j = 0; j < 2; j++)
        for (int h = 0; h < 2; h++) {
            u64 px = rr[j] >> (32 * h), al = px >> 24 & 255;
            for (int k = 0; k < 3; k++) {
                u64 l = c->lin32[px >> (8 * k) & 255];
                acc[k] += al * l;
                pl[k] += l;
            }
            acc[3] += al;
        }
    if (acc[3] == 0)
        for (int k = 0; k < 3; k++) acc[k] = pl[k];
    for (int k = 0; k < 4; k++) acc[k] *= wt;
    finalize_t(c, lvl, dsums, drow0, x, y, acc, 4, 0, 1, 1);
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(SUMS128)  /* (their lanes hold 64-bit sums) */
#define HAVE_AVX512 1
#include <immintrin.h>
#define TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))
#define AVX512 TARGET_AVX512 __attribute__((noinline))
#define AVX512_INLINE static inline __attribute__((always_inline)) TARGET_AVX512

static void rgba8_base_2x2(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, int x0, int x1, int simd);
static void sums_range(const Ctx *c, int lvl, const sum_t *ssums, int srow0, sum_t *dsums, int drow0, int y0, int y1,
                       int x0, int x1);

/* The codes of eight sums (64-bit lanes) from a table of a constant shift: one guess, one threshold
 * (gathers; a guess reads 4 bytes: Thresh's ints follow its table). */
#define CODES8(s, th, SHIFT)                                                                                    \
    __extension__({                                                                                           \
        __m256i g_ = _mm256_and_si256(_mm512_i64gather_epi32(_mm512_srli_epi64((s), SHIFT), (th)->guess, 1), \
                                      _mm256_set1_epi32(255));                                                \
        __m512i t_ = _mm512_i32gather_epi64(_mm256_add_epi32(g_, _mm256_set1_epi32(1)), (const void *)(th)->t, 8); \
        _mm256_mask_add_epi32(g_, _mm512_cmpge_epu64_mask((s), t_), g_, _mm256_set1_epi32(1));               \
    })

/* Sums of adjacent 32-bit halves (the two texels of a 64-bit lane) as 64 bits. */
AVX512_INLINE __m512i pair_sums(__m512i v)
{
    return _mm512_add_epi64(_mm512_and_si512(v, _mm512_set1_epi64(0xffffffff)), _mm512_srli_epi64(v, 32));
}

/* Eight texels of a level of 2x2 footprints from two base rows' 64 bytes: codes stored at ``o``, each
 * channel's sum of four L in ``sum``, straight alpha's sums of four codes in ``as`` (opaque
 * weighted alpha: 255). */
AVX512_INLINE void l1_group(const Ctx *c, __m512i r0, __m512i r1, uint32_t *o, __m512i sum[3], __m512i *as, int WA)
{
    const int *lin = (const int *)c->lin32;
    const __m512i b255 = _mm512_set1_epi32(255);
    __m256i code[4];
    for (int k = 0; k < 3; k++) {
        __m512i l0 = _mm512_i32gather_epi32(_mm512_and_si512(_mm512_srli_epi32(r0, 8 * k), b255), lin, 4);
        __m512i l1 = _mm512_i32gather_epi32(_mm512_and_si512(_mm512_srli_epi32(r1, 8 * k), b255), lin, 4);
        __m512i s = _mm512_add_epi64(pair_sums(l0), pair_sums(l1));
        code[k] = CODES8(s, &c->t4, P4_SHIFT);
        sum[k] = s;
    }
    if (WA) {
        code[3] = _mm256_set1_epi32(255);
    } else {
        *as = pair_sums(_mm512_add_epi32(_mm512_srli_epi32(r0, 24), _mm512_srli_epi32(r1, 24)));
        code[3] = _mm512_cvtepi64_epi32(_mm512_srli_epi64(_mm512_add_epi64(*as, _mm512_set1_epi64(2)), 2));
    }
    __m256i word = _mm256_or_si256(_mm256_or_si256(code[0], _mm256_slli_epi32(code[1], 8)),
                                   _mm256_or_si256(_mm256_slli_epi32(code[2], 16), _mm256_slli_epi32(code[3], 24)));
    _mm256_storeu_si256((__m256i *)(void *)o, word);
}

/* Eight texels' slots (v0 v1 v2 a, each eight lanes) stored as the engine keeps sums: texel by texel. */
AVX512_INLINE void store_slots(u64 *d, __m512i v0, __m512i v1, __m512i v2, __m512i a)
{
    const __m512i ilo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), ihi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    const __m512i jlo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), jhi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    __m512i xl = _mm512_permutex2var_epi64(v0, ilo, v1), xh = _mm512_permutex2var_epi64(v0, ihi, v1);
    __m512i yl = _mm512_permutex2var_epi64(v2, ilo, a), yh = _mm512_permutex2var_epi64(v2, ihi, a);
    _mm512_storeu_si512((void *)d, _mm512_permutex2var_epi64(xl, jlo, yl));
    _mm512_storeu_si512((void *)(d + 8), _mm512_permutex2var_epi64(xl, jhi, yl));
    _mm512_storeu_si512((void *)(d + 16), _mm512_permutex2var_epi64(xh, jlo, yh));
    _mm512_storeu_si512((void *)(d + 24), _mm512_permutex2var_epi64(xh, jhi, yh));
}

/* Opaque: every alpha byte of these rows' words is 255. */
AVX512_INLINE int opaque_words(__m512i a, __m512i b)
{
    return _mm512_cmpeq_epi32_mask(_mm512_srli_epi32(_mm512_and_si512(a, b), 24), _mm512_set1_epi32(255)) == 0xffff;
}

/* rgba8_base_2x2_t's texels eight at a time (AVX-512, where the CPU has it: simd_level): from
 * texel ``x`` on, groups of eight opaque 2x2s (weighted) or any (straight) while a whole group
 * fits; returns where it stopped (a group with a texel not opaque is left to the caller). The
 * table lookups are gathers (L's 32-bit entries, 16 a gather, adjacent texels' added as the
 * 64-bit lanes' halves), the guesses and thresholds too; the sums stored transposed. The same
 * integers as the scalar loop. */
static AVX512 int rgba8_run_avx512(const Ctx *c, const uint8_t *p0, const uint8_t *p1, uint32_t *o, u64 *d, int x,
                                   int dw, u64 wt, u64 mult, int WA)
{
    const __m512i vmult = _mm512_set1_epi64((long long)mult);
    for (; x + 8 <= dw; x += 8) {
        __m512i r0 = _mm512_loadu_si512((const void *)(p0 + 8 * (size_t)x));
        __m512i r1 = _mm512_loadu_si512((const void *)(p1 + 8 * (size_t)x));
        if (WA && !opaque_words(r0, r1)) break;
        __m512i sum[3], as = _mm512_setzero_si512();
        l1_group(c, r0, r1, o + x, sum, &as, WA);
        if (d) {
            __m512i a = WA ? _mm512_set1_epi64((long long)(4 * 255 * wt)) : _mm512_mul_epu32(as, _mm512_set1_epi64((long long)wt));
            store_slots(d + 4 * (size_t)x, _mm512_mullo_epi64(sum[0], vmult), _mm512_mullo_epi64(sum[1], vmult),
                        _mm512_mullo_epi64(sum[2], vmult), a);
        }
    }
    return x;
}

/* Row y2 of level 2 and rows 2 * y2, 2 * y2 + 1 of level 1 together (sizes multiples of 4: each
 * level 2x2 of the one before; AVX-512): per group of eight level-2 texels, the 16 x 4 base
 * texels under them read once, level 1's sums of four L kept in registers and added into level
 * 2's sums of sixteen (codes from their own thresholds, ``t16``), only level 2's sums stored
 * (``dst``, for level 3 on). Level 1's sums never reach memory: before, they went through the band's
 * ring and back (2048^2: ~2 ms of 6). A group with a texel not opaque (weighted alpha), and the
 * row's last texels, are made by the scalar kernels through the ring. */
static AVX512 void rgba8_band12_avx512(const Ctx *c, int y2, u64 *ring, u64 *dst, int drow0)
{
    const int WA = c->weighted, dw1 = c->lv[1].w, dw2 = c->lv[2].w;
    const size_t stride = (size_t)c->width * 4;
    const uint8_t *b0 = c->base + (size_t)(4 * y2) * stride, *b1 = b0 + stride, *b2 = b1 + stride, *b3 = b2 + stride;
    uint32_t *o1 = (uint32_t *)(void *)(c->out + c->out_off[1]) + (size_t)(2 * y2) * dw1, *o1b = o1 + dw1;
    uint32_t *o2 = (uint32_t *)(void *)(c->out + c->out_off[2]) + (size_t)y2 * dw2;
    u64 *d2 = dst ? dst + (size_t)(y2 - drow0) * dw2 * 4 : NULL;
    const u64 wt2 = (u64)dw2 * (u64)c->lv[2].h, mult2 = WA ? 255 * wt2 : wt2;
    const __m512i ev = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), od = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    int x2 = 0;
    while (x2 < dw2) {
        if (x2 + 8 <= dw2) {
            size_t at = 16 * (size_t)x2;
            __m512i r00 = _mm512_loadu_si512((const void *)(b0 + at)), r01 = _mm512_loadu_si512((const void *)(b0 + at + 64));
            __m512i r10 = _mm512_loadu_si512((const void *)(b1 + at)), r11 = _mm512_loadu_si512((const void *)(b1 + at + 64));
            __m512i r20 = _mm512_loadu_si512((const void *)(b2 + at)), r21 = _mm512_loadu_si512((const void *)(b2 + at + 64));
            __m512i r30 = _mm512_loadu_si512((const void *)(b3 + at)), r31 = _mm512_loadu_si512((const void *)(b3 + at + 64));
            if (!WA || (opaque_words(_mm512_and_si512(r00, r01), _mm512_and_si512(r10, r11))
                        && opaque_words(_mm512_and_si512(r20, r21), _mm512_and_si512(r30, r31)))) {
                __m512i sa0[3], sa1[3], sb0[3], sb1[3], p2[3], z = _mm512_setzero_si512();
                __m512i aa0 = z, aa1 = z, ab0 = z, ab1 = z;
                __m256i code[4];
                l1_group(c, r00, r10, o1 + 2 * x2, sa0, &aa0, WA);
                l1_group(c, r01, r11, o1 + 2 * x2 + 8, sa1, &aa1, WA);
                l1_group(c, r20, r30, o1b + 2 * x2, sb0, &ab0, WA);
                l1_group(c, r21, r31, o1b + 2 * x2 + 8, sb1, &ab1, WA);
                for (int k = 0; k < 3; k++) {
                    __m512i v0 = _mm512_add_epi64(sa0[k], sb0[k]), v1 = _mm512_add_epi64(sa1[k], sb1[k]);
                    p2[k] = _mm512_add_epi64(_mm512_permutex2var_epi64(v0, ev, v1), _mm512_permutex2var_epi64(v0, od, v1));
                    code[k] = CODES8(p2[k], &c->t16, P16_SHIFT);
                }
                __m512i a2;
                if (WA) {
                    code[3] = _mm256_set1_epi32(255);
                    a2 = _mm512_set1_epi64((long long)(16 * 255 * wt2));
                } else {
                    __m512i v0 = _mm512_add_epi64(aa0, ab0), v1 = _mm512_add_epi64(aa1, ab1);
                    __m512i as = _mm512_add_epi64(_mm512_permutex2var_epi64(v0, ev, v1), _mm512_permutex2var_epi64(v0, od, v1));
                    code[3] = _mm512_cvtepi64_epi32(_mm512_srli_epi64(_mm512_add_epi64(as, _mm512_set1_epi64(8)), 4));
                    a2 = _mm512_mul_epu32(as, _mm512_set1_epi64((long long)wt2));
                }
                __m256i word = _mm256_or_si256(_mm256_or_si256(code[0], _mm256_slli_epi32(code[1], 8)),
                                               _mm256_or_si256(_mm256_slli_epi32(code[2], 16), _mm256_slli_epi32(code[3], 24)));
                _mm256_storeu_si256((__m256i *)(void *)(o2 + x2), word);
                if (d2) {
                    const __m512i vm = _mm512_set1_epi64((long long)mult2);
                    store_slots(d2 + 4 * (size_t)x2, _mm512_mullo_epi64(p2[0], vm), _mm512_mullo_epi64(p2[1], vm),
                                _mm512_mullo_epi64(p2[2], vm), a2);
                }
                x2 += 8;
                continue;
            }
        }
        int e = x2 + 8 <= dw2 ? x2 + 8 : dw2;
        rgba8_base_2x2(c, 1, ring, 2 * y2, 2 * y2, 2 * y2 + 2, 2 * x2, 2 * e, 0);
        sums_range(c, 2, ring, 2 * y2, dst, drow0, y2, y2 + 1, x2, e);
        x2 = e;
    }
}
#endif

/* Whether the CPU has AVX-512 VBMI (planar_row_vbmi). */
static int vbmi_ok(void)
{
#ifdef HAVE_AVX512
    static int ok = -1;
    if (ok < 0) {
        __builtin_cpu_init();
        __atomic_store_n(&ok, __builtin_cpu_supports("avx512vbmi") ? 1 : 0, __ATOMIC_RELAXED);
    }
    return ok;
#else
    return 0;
#endif
}

/* The SIMD kernels this CPU may run: 2 AVX-512 (F, DQ, BW, VL), 0 none (the portable loops). */
static int simd_level(void)
{
    static int level = -1;
    if (level < 0) {
        int l = 0;
#ifdef HAVE_AVX512
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vl"))
            l = 2;
#endif
        __atomic_store_n(&level, l, __ATOMIC_RELAXED);
    }
    return level;
}

INLINE void rgba8_base_2x2_t(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, int x0, int x1,
                             const int WA, const int STORE, const int SIMD)
{
    const Level *L = &c->lv[lvl];
    const int dw = L->w;
    const uint8_t *restrict base = c->base;
    const uint32_t *restrict lin = c->lin32;
    const size_t stride = (size_t)c->width * 4;
    const u64 wt = (u64)dw * (u64)L->h, mult = WA ? 255 * wt : wt, aslot = 4 * 255 * wt;
    const sum_t *restrict tt = c->t4.t;  /* the thresholds of P, the four L's sum (rgba8_tables) */
    const uint8_t *restrict guess = c->t4.guess;
    uint8_t *restrict out = c->out + c->out_off[lvl];
    const u64 AMASK = 0xff000000ff000000ull;
    for (int y = y0; y < y1; y++) {
        const uint8_t *restrict p0 = base + (size_t)(2 * y) * stride, *restrict p1 = p0 + stride;
        uint32_t *restrict o = (uint32_t *)(void *)(out + (size_t)y * dw * 4);
        sum_t *restrict d = STORE ? dsums + (size_t)(y - drow0) * dw * 4 : NULL;
        for (int x = x0; x < x1; x++) {
#ifdef HAVE_AVX512
            if (SIMD && !(x & 7)) {  /* (at a group's start: after the one a texel not opaque ended) */
                x = rgba8_run_avx512(c, p0, p1, o, d, x, x1, wt, mult, WA);
                if (x >= x1) break;
            }
#endif
            u64 r0, r1;
            memcpy(&r0, p0 + 8 * (size_t)x, 8);
            memcpy(&r1, p1 + 8 * (size_t)x, 8);
            if (WA && __builtin_expect((r0 & r1 & AMASK) != AMASK, 0)) {
                rgba8_mixed_2x2(c, lvl, dsums, drow0, x, y, r0, r1, wt);
                continue;
            }
            u64 s0 = ((u64)lin[r0 & 255] + lin[(r0 >> 32) & 255]) + ((u64)lin[r1 & 255] + lin[(r1 >> 32) & 255]);
            u64 s1 = ((u64)lin[(r0 >> 8) & 255] + lin[(r0 >> 40) & 255]) + ((u64)lin[(r1 >> 8) & 255] + lin[(r1 >> 40) & 255]);
            u64 s2 = ((u64)lin[(r0 >> 16) & 255] + lin[(r0 >> 48) & 255]) + ((u64)lin[(r1 >> 16) & 255] + lin[(r1 >> 48) & 255]);
            unsigned g0 = guess[s0 >> P4_SHIFT], g1 = guess[s1 >> P4_SHIFT], g2 = guess[s2 >> P4_SHIFT];
            g0 += s0 >= tt[g0 + 1];
            g1 += s1 >= tt[g1 + 1];
            g2 += s2 >= tt[g2 + 1];
            u64 a;
            unsigned ca;
            if (WA) {
                a = aslot;
                ca = 255;
            } else {
                unsigned as = (unsigned)(r0 >> 24 & 255) + (unsigned)(r0 >> 56) + (unsigned)(r1 >> 24 & 255) + (unsigned)(r1 >> 56);
                a = as * wt;
                ca = (as + 2) >> 2;
            }
            uint32_t word = g0 | g1 << 8 | g2 << 16 | ca << 24;
            memcpy(o + x, &word, 4);
            if (STORE) {
                d[4 * (size_t)x] = (sum_t)s0 * mult; d[4 * (size_t)x + 1] = (sum_t)s1 * mult; d[4 * (size_t)x + 2] = (sum_t)s2 * mult;
                d[4 * (size_t)x + 3] = a;
            }
        }
    }
}

/* Level ``lvl`` from stored sums tiling it 2x2 (the fused band's levels after the first, and the
 * later tiled levels): the four children's sums added in registers, divided by 4 with a shift;
 * opaque (weighted) or straight footprints' codes as rgba8_base_2x2_t's, the rest finalize_t. */
INLINE void rgba8_sums_2x2_t(const Ctx *c, int lvl, const sum_t *ssums, int srow0, sum_t *dsums, int drow0, int y0,
                             int y1, int x0, int x1, const int WA)
{
    const Level *L = &c->lv[lvl], *S = &c->lv[c->source[lvl]];
    const int dw = L->w;
    const size_t sw = (size_t)S->w * 4;
    const Thresh *restrict th = WA ? &c->to : &c->tw;
    const sum_t *restrict tt = th->t;
    const uint8_t *restrict guess = th->guess;
    const int shift = th->shift;
    const u64 opaque = c->opaque, total = c->total;
    uint8_t *restrict out = c->out + c->out_off[lvl];
    for (int y = y0; y < y1; y++) {
        const sum_t *restrict s0 = ssums + (size_t)(2 * y - srow0) * sw + 8 * (size_t)x0, *restrict s1 = s0 + sw;
        uint8_t *restrict o = out + (size_t)y * dw * 4;
        sum_t *restrict d = dsums ? dsums + (size_t)(y - drow0) * dw * 4 : NULL;
        for (int x = x0; x < x1; x++, s0 += 8, s1 += 8) {
            sum_t a = (s0[3] + s0[7] + s1[3] + s1[7]) >> 2;
            if (!WA || a == opaque) {  /* (opaque: every child is, each child's alpha <= opaque) */
                sum_t v0 = (s0[0] + s0[4] + s1[0] + s1[4]) >> 2;
                sum_t v1 = (s0[1] + s0[5] + s1[1] + s1[5]) >> 2;
                sum_t v2 = (s0[2] + s0[6] + s1[2] + s1[6]) >> 2;
                unsigned g0 = guess[v0 >> shift], g1 = guess[v1 >> shift], g2 = guess[v2 >> shift];
                g0 += v0 >= tt[g0 + 1];
                g1 += v1 >= tt[g1 + 1];
                g2 += v2 >= tt[g2 + 1];
                unsigned ca = WA ? 255 : (a == opaque ? 255 : code_linear(a, total, 255));
                uint32_t word = g0 | g1 << 8 | g2 << 16 | ca << 24;
                memcpy(o + 4 * (size_t)x, &word, 4);
                if (d) {
                    d[4 * (size_t)x] = v0; d[4 * (size_t)x + 1] = v1; d[4 * (size_t)x + 2] = v2; d[4 * (size_t)x + 3] = a;
                }
                continue;
            }
            sum_t w[4] = {0, 0, 0, a}, p[3] = {0, 0, 0};
            const sum_t *ch[4] = {s0, s0 + 4, s1, s1 + 4};
            for (int i = 0; i < 4; i++) {
                if (ch[i][3] == 0) {
                    for (int k = 0; k < 3; k++) p[k] += ch[i][k];
                } else {
                    for (int k = 0; k < 3; k++) w[k] += ch[i][k];
                }
            }
            for (int k = 0; k < 3; k++) w[k] = (a == 0 ? p[k] : w[k]) >> 2;
            finalize_t(c, lvl, dsums, drow0, x, y, w, 4, 0, 1, WA);
        }
    }
}

static void rgba8_base_2x2(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, int x0, int x1, int simd)
{
#define RGBA8_BASE(WA, STORE, SIMD) rgba8_base_2x2_t(c, lvl, dsums, drow0, y0, y1, x0, x1, WA, STORE, SIMD)
    if (simd) {
        if (c->weighted) { if (dsums) RGBA8_BASE(1, 1, 1); else RGBA8_BASE(1, 0, 1); }
        else { if (dsums) RGBA8_BASE(0, 1, 1); else RGBA8_BASE(0, 0, 1); }
    } else {
        if (c->weighted) { if (dsums) RGBA8_BASE(1, 1, 0); else RGBA8_BASE(1, 0, 0); }
        else { if (dsums) RGBA8_BASE(0, 1, 0); else RGBA8_BASE(0, 0, 0); }
    }
}

static void rgba8_sums_2x2(const Ctx *c, int lvl, const sum_t *ssums, int srow0, sum_t *dsums, int drow0, int y0, int y1,
                           int x0, int x1)
{
    if (c->weighted) rgba8_sums_2x2_t(c, lvl, ssums, srow0, dsums, drow0, y0, y1, x0, x1, 1);
    else rgba8_sums_2x2_t(c, lvl, ssums, srow0, dsums, drow0, y0, y1, x0, x1, 0);
}

/* A texel of weighted alpha from the base whose footprint is not opaque throughout: its products
 * summed over the footprint (no alpha at all: the plain sums), then finalize_t. */
static __attribute__((noinline)) void rgba8_odd_texel_of(const Ctx *c, const int *xs, const int *xn, const u64 *xw,
                                                         int xstride, const int *ys, const int *yn, const u64 *yw,
                                                         int ystride, int lvl, sum_t *dsums, int drow0, int x, int y)
{
    sum_t acc[4] = {0, 0, 0, 0}, pl[3] = {0, 0, 0};
    for (int j = 0; j < yn[y]; j++) {
        u64 wy = yw[(size_t)y * ystride + j];
        const uint8_t *p = c->base + ((size_t)(ys[y] + j) * c->width + xs[x]) * 4;
        for (int i = 0; i < xn[x]; i++, p += 4) {
            u64 w = wy * xw[(size_t)x * xstride + i], a = p[3];
            for (int k = 0; k < 3; k++) {
                u64 l = c->lin32[p[k]];
                acc[k] += (sum_t)(w * a) * l;
                pl[k] += (sum_t)w * l;
            }
            acc[3] += w * a;
        }
    }
    if (acc[3] == 0)
        for (int k = 0; k < 3; k++) acc[k] = pl[k];
    finalize_t(c, lvl, dsums, drow0, x, y, acc, 4, 0, 1, 1);
}

static void rgba8_odd_texel(const Ctx *c, int lvl, sum_t *dsums, int drow0, int x, int y)
{
    rgba8_odd_texel_of(c, c->xs, c->xn, c->xw, c->xstride, c->ys, c->yn, c->yw, c->ystride, lvl, dsums, drow0, x, y);
}

/* Rows [y0, y1) of a level from the base whose footprints are not whole texels (levels 1-2 of odd
 * sizes), RGBA8 sRGB: each base row's horizontal sums of the plain L (32-bit table, read from the
 * bytes: no row of values a * L first) and, weighted, whether its texels are opaque (straight:
 * alpha's sum), in the ring of rows; each texel's sums over its rows, and where the footprint is
 * opaque throughout (weighted) its codes from the plain sums' thresholds (max * sum(w * L) >=
 * max * T[k]: ``tw``), with no product by alpha anywhere. Footprints not opaque: rgba8_odd_texel. */
INLINE void rgba8_base_odd_t(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, sum_t *row, const int WA)
{
    const Level *L = &c->lv[lvl];
    const int dw = L->w, nring = c->ystride;
    const uint8_t *restrict base = c->base;
    const uint32_t *restrict lin = c->lin32;
    const sum_t *restrict tt = c->tw.t;
    const uint8_t *restrict guess = c->tw.guess;
    const int shift = c->tw.shift;
    const u64 opaque = c->opaque, total = c->total;
    uint8_t *restrict out = c->out + c->out_off[lvl];
    sum_t *hring = row + (size_t)dw * 4;
    int tag[MAX_RING];
    for (int i = 0; i < nring && i < MAX_RING; i++) tag[i] = -1;
    for (int y = y0; y < y1; y++) {
        const int n = c->yn[y];
        const sum_t *hrow[MAX_RING];
        u64 wy[MAX_RING];
        for (int j = 0; j < n; j++) {
            int ty = c->ys[y] + j, slot = ty % nring;
            sum_t *restrict hs = hring + (size_t)slot * dw * 4;
            if (tag[slot] != ty) {
                /* footprint x: texels t .. tn - 1 of weight m (the level's width), less r * L[t]
                 * (the first one's weight is m - r), plus rn * L[tn]: the texel it shares with
                 * footprint x + 1, whose ``- r`` term is this one (jn = t * m + r): a run of adds and
                 * one product a channel, whatever the footprint's width */
                const uint8_t *restrict b = base + (size_t)ty * c->width * 4;
                const u64 m = (u64)dw;
                const int q = c->width / dw, rem = c->width % dw;
                int t = 0;
                u64 r = 0, e0 = 0, e1 = 0, e2 = 0, ea = 0;
                for (int x = 0; x < dw; x++) {
                    int tn = t + q;
                    u64 rn = r + (u64)rem;
                    if (rn >= m) { rn -= m; tn++; }
                    u64 s0 = 0, s1 = 0, s2 = 0, sa = 0, n0 = 0, n1 = 0, n2 = 0, na = 0;
                    unsigned all = 255;
                    for (const uint8_t *restrict p = b + 4 * (size_t)t, *e = b + 4 * (size_t)tn; p < e; p += 4) {
                        s0 += lin[p[0]];
                        s1 += lin[p[1]];
                        s2 += lin[p[2]];
                        if (WA) all &= p[3];
                        else sa += p[3];
                    }
                    if (rn) {
                        const uint8_t *restrict p = b + 4 * (size_t)tn;
                        n0 = rn * lin[p[0]];
                        n1 = rn * lin[p[1]];
                        n2 = rn * lin[p[2]];
                        if (WA) all &= p[3];
                        else na = rn * p[3];
                    }
                    hs[4 * (size_t)x] = m * s0 + n0 - e0;
                    hs[4 * (size_t)x + 1] = m * s1 + n1 - e1;
                    hs[4 * (size_t)x + 2] = m * s2 + n2 - e2;
                    hs[4 * (size_t)x + 3] = WA ? (u64)(all == 255) : m * sa + na - ea;
                    e0 = n0; e1 = n1; e2 = n2; ea = na;
                    t = tn;
                    r = rn;
                }
                tag[slot] = ty;
            }
            hrow[j] = hs;
            wy[j] = c->yw[(size_t)y * c->ystride + j];
        }
        uint32_t *restrict o = (uint32_t *)(void *)(out + (size_t)y * dw * 4);
        sum_t *restrict d = dsums ? dsums + (size_t)(y - drow0) * dw * 4 : NULL;
        for (int x = 0; x < dw; x++) {
            /* (64 bits even with SUMS128: sums of the plain L, W * 2**31 <= 2**59) */
            u64 v0 = 0, v1 = 0, v2 = 0, va = WA ? 1 : 0;
            for (int j = 0; j < n; j++) {
                const sum_t *h = hrow[j] + 4 * (size_t)x;
                v0 += wy[j] * (u64)h[0];
                v1 += wy[j] * (u64)h[1];
                v2 += wy[j] * (u64)h[2];
                if (WA) va &= (u64)h[3];
                else va += wy[j] * (u64)h[3];
            }
            if (WA && !va) {
                rgba8_odd_texel(c, lvl, dsums, drow0, x, y);
                continue;
            }
            unsigned g0 = guess[v0 >> shift], g1 = guess[v1 >> shift], g2 = guess[v2 >> shift];
            g0 += v0 >= tt[g0 + 1];
            g1 += v1 >= tt[g1 + 1];
            g2 += v2 >= tt[g2 + 1];
            unsigned ca = WA || va == opaque ? 255 : code_linear(va, total, 255);
            o[x] = g0 | g1 << 8 | g2 << 16 | ca << 24;
            if (d) {
                u64 m = WA ? 255 : 1;
                d[4 * (size_t)x] = (sum_t)m * v0; d[4 * (size_t)x + 1] = (sum_t)m * v1; d[4 * (size_t)x + 2] = (sum_t)m * v2;
                d[4 * (size_t)x + 3] = WA ? opaque : va;
            }
        }
    }
}

#ifdef HAVE_AVX512
#define TARGET_VBMI __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vbmi")))

/* planar_row by byte permutes (AVX-512 VBMI) instead of gathers: 64 texels at a time, each channel's
 * codes gathered into one register of bytes (two vpermt2b from the texel words, a blend), each byte
 * of L(code) looked up 64 at once (two vpermt2b over the 256-byte table of that byte, a blend by the
 * code's top bit), the four bytes interleaved back into 32-bit L. The codes are taken in an order
 * (entry 16 L + 4 q + i holds texel 16 q + 4 L + i) that the interleave (within 128-bit lanes) puts
 * back in texel order. */
static TARGET_VBMI __attribute__((noinline)) void planar_row_vbmi(const Ctx *c, const int *b, uint32_t *P, int np)
{
    static const uint8_t order[3][64] __attribute__((aligned(64))) = {
#define E(e, k) (uint8_t)(4 * ((16 * (((e) >> 2) & 3) + 4 * ((e) >> 4) + ((e) & 3)) & 31) + (k))
#define ROW16(b, k) E(b, k), E(b + 1, k), E(b + 2, k), E(b + 3, k), E(b + 4, k), E(b + 5, k), E(b + 6, k), E(b + 7, k), \
                    E(b + 8, k), E(b + 9, k), E(b + 10, k), E(b + 11, k), E(b + 12, k), E(b + 13, k), E(b + 14, k), E(b + 15, k)
#define ROW64(k) {ROW16(0, k), ROW16(16, k), ROW16(32, k), ROW16(48, k)}
        ROW64(0), ROW64(1), ROW64(2)};
#undef ROW64
#undef ROW16
#undef E
    /* entries whose texel lies in the second 32 (q >= 2: bit 3 of the entry) */
    const __mmask64 upper = 0xff00ff00ff00ff00ull;
    const int n = c->width;
    __m512i tb[4][4];
    for (int p = 0; p < 4; p++)
        for (int j = 0; j < 4; j++) tb[p][j] = _mm512_loadu_si512((const void *)(c->linb[p] + 64 * j));
    for (int t = 0; t < n; t += 64) {
        __m512i w[4];
        for (int q = 0; q < 4; q++) {
            int at = t + 16 * q, left = n - at;
            __mmask16 live = left >= 16 ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
            w[q] = _mm512_maskz_loadu_epi32(live, b + at);
            _mm512_storeu_si512((void *)(P + 3 * (size_t)np + at), _mm512_srli_epi32(w[q], 24));
        }
        for (int k = 0; k < 3; k++) {
            const __m512i ix = _mm512_load_si512((const void *)order[k]);
            __m512i x = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(w[0], ix, w[1]),
                                               _mm512_permutex2var_epi8(w[2], ix, w[3]));
            __mmask64 top = _mm512_movepi8_mask(x);
            __m512i by[4];
            for (int p = 0; p < 4; p++)
                by[p] = _mm512_mask_blend_epi8(top, _mm512_permutex2var_epi8(tb[p][0], x, tb[p][1]),
                                               _mm512_permutex2var_epi8(tb[p][2], x, tb[p][3]));
            __m512i lo01 = _mm512_unpacklo_epi8(by[0], by[1]), hi01 = _mm512_unpackhi_epi8(by[0], by[1]);
            __m512i lo23 = _mm512_unpacklo_epi8(by[2], by[3]), hi23 = _mm512_unpackhi_epi8(by[2], by[3]);
            uint32_t *o = P + (size_t)k * np + t;
            _mm512_storeu_si512((void *)o, _mm512_unpacklo_epi16(lo01, lo23));
            _mm512_storeu_si512((void *)(o + 16), _mm512_unpackhi_epi16(lo01, lo23));
            _mm512_storeu_si512((void *)(o + 32), _mm512_unpacklo_epi16(hi01, hi23));
            _mm512_storeu_si512((void *)(o + 48), _mm512_unpackhi_epi16(hi01, hi23));
        }
    }
}
#endif

#ifdef HAVE_AVX512
/* Terms of a footprint on x the AVX-512 odd kernel takes (levels 1-2 from the base: at most 3 and 5,
 * and up to 7 where a level is one texel wide); more: rgba8_base_odd_t. */
#define ODD_KMAX 8

/* A base row's planes: L of each colour channel (32 bits) and alpha, ``np`` texels a plane (the row's
 * texels; lanes of a last partial group of sixteen hold L(0) = 0, the rest stays as it is: zeros). */
AVX512_INLINE void planar_row(const Ctx *c, const int *b, uint32_t *P, int np)
{
    const int *lin = (const int *)c->lin32, n = c->width;
    const __m512i b255 = _mm512_set1_epi32(255);
    for (int t = 0; t < n; t += 16) {
        __mmask16 live = t + 16 <= n ? (__mmask16)0xffff : (__mmask16)((1u << (n - t)) - 1);
        __m512i w = _mm512_maskz_loadu_epi32(live, b + t);
        for (int k = 0; k < 3; k++)
            _mm512_storeu_si512((void *)(P + (size_t)k * np + t),
                                _mm512_i32gather_epi32(_mm512_and_si512(_mm512_srli_epi32(w, 8 * k), b255), lin, 4));
        _mm512_storeu_si512((void *)(P + 3 * (size_t)np + t), _mm512_srli_epi32(w, 24));
    }
}

/* The horizontal sums of group x (eight footprints) of ``t``'s level over one base row (``P``: its
 * planes, ``b``: its texel words), in doubles: h[0..2] sum(wx * L) of each colour, h[3] straight
 * alpha's sum(wx * a) or, weighted, 1 where the footprint's texels are opaque (else 0). Regular groups
 * from the planes: terms 2p and 2p + 1 of each lane are the two halves of one 64-bit lane of the row
 * from texel a + 2p (at 64-bit lane (st / 2) * l: a permute where st = 4), each multiplied by its
 * weight with one 32x32-bit product (w, L < 2**32); other groups by gathers of the texels' words and
 * of L, and FMAs. Exact: every sum is an integer below 2**53. */
AVX512_INLINE void odd_h(const Ctx *c, const OddTab *t, const uint32_t *P, int np, const int *b, int x, __m512d h[4])
{
    const int dwp = t->dwp, K = t->k, WA = c->weighted, a = t->reg[x / 8];
    const __m512d zero = _mm512_setzero_pd();
    const __m256i b255 = _mm256_set1_epi32(255);
    if (a >= 0) {
        const int hs2 = t->st / 2;
        const __m512i qidx = _mm512_setr_epi64(0, hs2, 2 * hs2, 3 * hs2, 4 * hs2, 5 * hs2, 6 * hs2, 7 * hs2);
        const __m512i zi = _mm512_setzero_si512();
        __m512i s0 = zi, s1 = zi, s2 = zi, sa = zi, al = _mm512_set1_epi64(255);
        for (int i = 0; i < K; i += 2) {
            const __m512i wl = _mm512_loadu_si512((const void *)(t->w64 + (size_t)i * dwp + x));
            const __m512i wh = i + 1 < K ? _mm512_loadu_si512((const void *)(t->w64 + (size_t)(i + 1) * dwp + x)) : zi;
            const uint32_t *q = P + a + i;
            __m512i v[4];
            for (int k = 0; k < 4; k++, q += np)
                v[k] = hs2 == 1 ? _mm512_loadu_si512((const void *)q)
                                : _mm512_permutex2var_epi64(_mm512_loadu_si512((const void *)q), qidx,
                                                            _mm512_loadu_si512((const void *)(q + 16)));
            s0 = _mm512_add_epi64(s0, _mm512_add_epi64(_mm512_mul_epu32(v[0], wl), _mm512_mul_epu32(_mm512_srli_epi64(v[0], 32), wh)));
            s1 = _mm512_add_epi64(s1, _mm512_add_epi64(_mm512_mul_epu32(v[1], wl), _mm512_mul_epu32(_mm512_srli_epi64(v[1], 32), wh)));
            s2 = _mm512_add_epi64(s2, _mm512_add_epi64(_mm512_mul_epu32(v[2], wl), _mm512_mul_epu32(_mm512_srli_epi64(v[2], 32), wh)));
            if (WA) {  /* (terms of weight 0 left out) */
                al = _mm512_mask_and_epi64(al, _mm512_test_epi64_mask(wl, wl), al, v[3]);
                al = _mm512_mask_and_epi64(al, _mm512_test_epi64_mask(wh, wh), al, _mm512_srli_epi64(v[3], 32));
            } else {
                sa = _mm512_add_epi64(sa, _mm512_add_epi64(_mm512_mul_epu32(v[3], wl), _mm512_mul_epu32(_mm512_srli_epi64(v[3], 32), wh)));
            }
        }
        h[0] = _mm512_cvtepu64_pd(s0);
        h[1] = _mm512_cvtepu64_pd(s1);
        h[2] = _mm512_cvtepu64_pd(s2);
        h[3] = WA ? _mm512_maskz_mov_pd(_mm512_cmpeq_epi64_mask(_mm512_and_si512(al, _mm512_set1_epi64(255)), _mm512_set1_epi64(255)),
                                        _mm512_set1_pd(1.0))
                  : _mm512_cvtepu64_pd(sa);
        return;
    }
    __m512d h0 = zero, h1 = zero, h2 = zero, ha = zero;
    __m256i all = _mm256_set1_epi32(-1);
    for (int i = 0; i < K; i++) {
        __m256i vi = _mm256_loadu_si256((const __m256i *)(const void *)(t->idx + (size_t)i * dwp + x));
        __m512d w = _mm512_loadu_pd(t->w + (size_t)i * dwp + x);
        __m256i word = _mm256_i32gather_epi32(b, vi, 4);
        __m512d l0 = _mm512_i32gather_pd(_mm256_and_si256(word, b255), c->lind, 8);
        __m512d l1 = _mm512_i32gather_pd(_mm256_and_si256(_mm256_srli_epi32(word, 8), b255), c->lind, 8);
        __m512d l2 = _mm512_i32gather_pd(_mm256_and_si256(_mm256_srli_epi32(word, 16), b255), c->lind, 8);
        h0 = _mm512_fmadd_pd(w, l0, h0);
        h1 = _mm512_fmadd_pd(w, l1, h1);
        h2 = _mm512_fmadd_pd(w, l2, h2);
        if (WA) all = _mm256_mask_and_epi32(all, _mm512_cmp_pd_mask(w, zero, _CMP_GT_OQ), all, word);
        else ha = _mm512_fmadd_pd(w, _mm512_cvtepi32_pd(_mm256_srli_epi32(word, 24)), ha);
    }
    h[0] = h0;
    h[1] = h1;
    h[2] = h2;
    h[3] = WA ? _mm512_maskz_mov_pd(_mm256_cmpeq_epi32_mask(_mm256_srli_epi32(all, 24), b255), _mm512_set1_pd(1.0)) : ha;
}

/* Texels x .. x + 7 (those below the level's width) of row y of ``t``'s level from their sums (v: the
 * colours' plain sums, va: straight alpha's sum or, weighted, 1 where opaque): the codes by the guess
 * table and one threshold (``twd``: the thresholds of sums over W, ``tw``, as doubles; opaque weighted
 * footprints' codes are those of their plain sums), straight alpha's by code_linear in doubles, moved
 * to the exact quotient; the sums kept where ``dsums``; weighted footprints not opaque: alone
 * (rgba8_odd_texel_of). */
AVX512_INLINE void odd_out(const Ctx *c, const OddTab *t, u64 *dsums, int drow0, int x, int y, const __m512d v[3],
                           __m512d va)
{
    const int WA = c->weighted, lvl = t->lvl, dw = c->lv[lvl].w;
    const int *guess = (const int *)(const void *)c->tw.guess;
    const __m256i b255 = _mm256_set1_epi32(255), i1 = _mm256_set1_epi32(1);
    const __m512d one = _mm512_set1_pd(1.0), vscale = _mm512_set1_pd(c->tw_scale);
    __m256i code[4];
    for (int k = 0; k < 3; k++) {
        /* the guess of v >> shift (exact: v an integer, the scale a power of two), one threshold */
        __m256i g = _mm256_and_si256(_mm256_i32gather_epi32(guess, _mm512_cvttpd_epi32(_mm512_mul_pd(v[k], vscale)), 1), b255);
        __m512d th = _mm512_i32gather_pd(_mm256_add_epi32(g, i1), c->twd, 8);
        code[k] = _mm256_mask_add_epi32(g, _mm512_cmp_pd_mask(v[k], th, _CMP_GE_OQ), g, i1);
    }
    if (WA) {
        code[3] = b255;
    } else {
        /* code_linear(va, W, 255): floor((2 va + W) / 2W) from a float quotient moved to the exact one
         * (every product below 2**53) */
        const double total = (double)c->total;
        __m512d num = _mm512_fmadd_pd(_mm512_set1_pd(2.0), va, _mm512_set1_pd(total)), den = _mm512_set1_pd(2 * total);
        __m512d q = _mm512_roundscale_pd(_mm512_div_pd(num, den), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        q = _mm512_mask_sub_pd(q, _mm512_cmp_pd_mask(_mm512_mul_pd(q, den), num, _CMP_GT_OQ), q, one);
        q = _mm512_mask_add_pd(q, _mm512_cmp_pd_mask(_mm512_mul_pd(_mm512_add_pd(q, one), den), num, _CMP_LE_OQ), q, one);
        code[3] = _mm256_min_epi32(_mm512_cvttpd_epi32(q), b255);
    }
    __m256i word = _mm256_or_si256(_mm256_or_si256(code[0], _mm256_slli_epi32(code[1], 8)),
                                   _mm256_or_si256(_mm256_slli_epi32(code[2], 16), _mm256_slli_epi32(code[3], 24)));
    const int lanes = dw - x < 8 ? dw - x : 8;
    const __mmask8 live = (__mmask8)((1u << lanes) - 1);
    _mm256_mask_storeu_epi32((uint32_t *)(void *)(c->out + c->out_off[lvl]) + (size_t)y * dw + x, live, word);
    if (dsums) {
        u64 *d = dsums + ((size_t)(y - drow0) * dw + x) * 4;
        __m512i s[4];
        const __m512i m = _mm512_set1_epi64(WA ? 255 : 1);
        for (int k = 0; k < 3; k++) s[k] = _mm512_mullo_epi64(_mm512_cvtpd_epu64(v[k]), m);
        s[3] = WA ? _mm512_set1_epi64((long long)c->opaque) : _mm512_cvtpd_epu64(va);
        if (lanes == 8) {
            store_slots(d, s[0], s[1], s[2], s[3]);
        } else {
            u64 tmp[4][8];
            for (int k = 0; k < 4; k++) _mm512_storeu_si512((void *)tmp[k], s[k]);
            for (int i = 0; i < lanes; i++)
                for (int k = 0; k < 4; k++) d[4 * (size_t)i + k] = tmp[k][i];
        }
    }
    if (WA) {
        unsigned mixed = (unsigned)_mm512_cmp_pd_mask(va, one, _CMP_LT_OQ) & live;
        while (mixed) {  /* footprints not opaque throughout: alone */
            int i = __builtin_ctz(mixed);
            mixed &= mixed - 1;
            rgba8_odd_texel_of(c, t->xs, t->xn, t->xw, t->xstride, t->ys, t->yn, t->yw, t->ystride, lvl, dsums, drow0,
                               x + i, y);
        }
    }
}

/* A base row's planes into ``P``: byte permutes where the CPU has VBMI, else gathers. */
AVX512_INLINE void odd_planes(const Ctx *c, const int *b, uint32_t *P, int np)
{
    if (c->vbmi) planar_row_vbmi(c, b, P, np);
    else planar_row(c, b, P, np);
}

/* rgba8_base_odd_t in AVX-512 (one level, rows [y0, y1): the level on its own, or a fused band's first):
 * each base row's horizontal sums (odd_h) in a ring of planar rows of doubles, then each texel's sums
 * over its rows by FMAs and its codes (odd_out). Returns 0 where it could not map its buffer. */
static AVX512 int rgba8_base_odd_avx512(const Ctx *c, const OddTab *t, u64 *dsums, int drow0, int y0, int y1,
                                        double *ring)
{
    const int dw = c->lv[t->lvl].w, dwp = t->dwp, nring = c->ystride, WA = c->weighted;
    const size_t stride = (size_t)c->width * 4;
    const int np = ((c->width + 63) & ~63) + 64;  /* planes: the texels, zeros after them */
    uint32_t *P = calloc((size_t)4 * np, sizeof(uint32_t));
    if (!P) return 0;
    int tag[MAX_RING];
    for (int i = 0; i < MAX_RING; i++) tag[i] = -1;
    for (int y = y0; y < y1; y++) {
        const int n = t->yn[y];
        const double *hrow[MAX_RING];
        double wy[MAX_RING];
        for (int j = 0; j < n; j++) {
            int ty = t->ys[y] + j, slot = ty % nring;
            double *hs = ring + (size_t)slot * 4 * dwp;
            if (tag[slot] != ty) {
                const int *b = (const int *)(const void *)(c->base + (size_t)ty * stride);
                odd_planes(c, b, P, np);
                for (int x = 0; x < dwp; x += 8) {
                    __m512d h[4];
                    odd_h(c, t, P, np, b, x, h);
                    for (int k = 0; k < 4; k++) _mm512_storeu_pd(hs + (size_t)k * dwp + x, h[k]);
                }
                tag[slot] = ty;
            }
            hrow[j] = hs;
            wy[j] = (double)t->yw[(size_t)y * t->ystride + j];
        }
        for (int x = 0; x < dw; x += 8) {
            __m512d v[3] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
            __m512d va = WA ? _mm512_set1_pd(1.0) : _mm512_setzero_pd();
            for (int j = 0; j < n; j++) {
                const __m512d wj = _mm512_set1_pd(wy[j]);
                const double *h = hrow[j] + x;
                for (int k = 0; k < 3; k++) v[k] = _mm512_fmadd_pd(wj, _mm512_loadu_pd(h + (size_t)k * dwp), v[k]);
                if (WA) va = _mm512_min_pd(va, _mm512_loadu_pd(h + 3 * (size_t)dwp));
                else va = _mm512_fmadd_pd(wj, _mm512_loadu_pd(h + 3 * (size_t)dwp), va);
            }
            odd_out(c, t, dsums, drow0, x, y, v, va);
        }
    }
    free(P);
    return 1;
}

/* One level of rgba8_odd12_avx512: its next row ``y`` (to ``y1``) and two rows of sums (planar
 * doubles): acc[0] the rows of row y so far, acc[1] row y + 1's first (the base row it shares with y). */
typedef struct {
    const OddTab *t;
    int y, y1;
    double *acc[2];
} OddRun;

/* Base row ty into ``r``'s level (ty a row of its row r->y): each group's horizontal sums (odd_h) times
 * the row's weight added to the row's sums; on its last row the texels' codes (odd_out) instead, and
 * where the next row shares it, that row's sums begun. */
AVX512_INLINE void odd_consume(const Ctx *c, OddRun *r, int ty, const uint32_t *P, int np, const int *b)
{
    const OddTab *t = r->t;
    const int y = r->y, j = ty - t->ys[y], last = j == t->yn[y] - 1, dwp = t->dwp, dw = c->lv[t->lvl].w, WA = c->weighted;
    const int share = last && y + 1 < r->y1 && t->ys[y + 1] == ty;
    const __m512d wc = _mm512_set1_pd((double)t->yw[(size_t)y * t->ystride + j]);
    const __m512d wn = _mm512_set1_pd(share ? (double)t->yw[(size_t)(y + 1) * t->ystride] : 0.0);
    double *a = r->acc[0], *an = r->acc[1];
    for (int x = 0; x < dw; x += 8) {
        __m512d h[4], v[3], va;
        odd_h(c, t, P, np, b, x, h);
        for (int k = 0; k < 3; k++)
            v[k] = j ? _mm512_fmadd_pd(wc, h[k], _mm512_loadu_pd(a + (size_t)k * dwp + x)) : _mm512_mul_pd(wc, h[k]);
        if (WA) va = j ? _mm512_min_pd(_mm512_loadu_pd(a + 3 * (size_t)dwp + x), h[3]) : h[3];
        else va = j ? _mm512_fmadd_pd(wc, h[3], _mm512_loadu_pd(a + 3 * (size_t)dwp + x)) : _mm512_mul_pd(wc, h[3]);
        if (last) {
            odd_out(c, t, NULL, 0, x, y, v, va);
        } else {
            for (int k = 0; k < 3; k++) _mm512_storeu_pd(a + (size_t)k * dwp + x, v[k]);
            _mm512_storeu_pd(a + 3 * (size_t)dwp + x, va);
        }
        if (share) {
            for (int k = 0; k < 3; k++) _mm512_storeu_pd(an + (size_t)k * dwp + x, _mm512_mul_pd(wn, h[k]));
            _mm512_storeu_pd(an + 3 * (size_t)dwp + x, WA ? h[3] : _mm512_mul_pd(wn, h[3]));
        }
    }
    if (last) {
        r->y = y + 1;
        r->acc[0] = an;
        r->acc[1] = a;
    }
}

/* Levels 1 and 2 of an odd size (neither's sums read later) in one pass over the base rows [the first
 * of level 1's row y0 or level 2's row Y0, the last of their rows y1 - 1, Y1 - 1]: each base row's
 * planes made once for both levels (before, each level's pass made them: the lookups of L, the base
 * read twice), each level's sums added up row by row in two rows of sums (no ring of each base row's
 * horizontal sums written and read back), codes on a texel's last row. Returns 0 where it could not
 * map its buffers. */
static AVX512 int rgba8_odd12_avx512(const Ctx *c, int y0, int y1, int Y0, int Y1)
{
    OddRun r[2] = {{&c->odd[0], y0, y1, {NULL, NULL}}, {&c->odd[1], Y0, Y1, {NULL, NULL}}};
    const int np = ((c->width + 63) & ~63) + 64;
    const size_t stride = (size_t)c->width * 4;
    uint32_t *P = calloc((size_t)4 * np, sizeof(uint32_t));
    double *acc = malloc(sizeof(double) * 8 * ((size_t)r[0].t->dwp + r[1].t->dwp));
    if (!P || !acc) { free(P); free(acc); return 0; }
    r[0].acc[0] = acc;
    r[0].acc[1] = acc + 4 * (size_t)r[0].t->dwp;
    r[1].acc[0] = acc + 8 * (size_t)r[0].t->dwp;
    r[1].acc[1] = r[1].acc[0] + 4 * (size_t)r[1].t->dwp;
    int tb = c->height, te = 0;
    for (int i = 0; i < 2; i++)
        if (r[i].y < r[i].y1) {
            const OddTab *t = r[i].t;
            tb = t->ys[r[i].y] < tb ? t->ys[r[i].y] : tb;
            int end = t->ys[r[i].y1 - 1] + t->yn[r[i].y1 - 1];
            te = end > te ? end : te;
        }
    for (int ty = tb; ty < te; ty++) {
        int need0 = r[0].y < r[0].y1 && ty >= r[0].t->ys[r[0].y], need1 = r[1].y < r[1].y1 && ty >= r[1].t->ys[r[1].y];
        if (!need0 && !need1) continue;
        const int *b = (const int *)(const void *)(c->base + (size_t)ty * stride);
        odd_planes(c, b, P, np);
        if (need0) odd_consume(c, &r[0], ty, P, np, b);
        if (need1) odd_consume(c, &r[1], ty, P, np, b);
    }
    free(P);
    free(acc);
    return 1;
}
#endif

static void rgba8_base_odd(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, sum_t *row)
{
#ifdef HAVE_AVX512
    if (c->fast >= 2 && c->odd[0].lvl == lvl) {
        /* (the ring: planar doubles, 4 slots of dwp a row; the job's row where it is large enough) */
        size_t need = (size_t)c->ystride * 4 * c->odd[0].dwp, have = (1 + (size_t)c->ystride) * c->lv[lvl].w * 4;
        double *ring = need <= have ? (double *)(void *)row : malloc(sizeof(double) * need);
        int done = ring && rgba8_base_odd_avx512(c, &c->odd[0], dsums, drow0, y0, y1, ring);
        if (ring && ring != (double *)(void *)row) free(ring);
        if (done) return;
    }
#endif
    if (c->weighted) rgba8_base_odd_t(c, lvl, dsums, drow0, y0, y1, row, 1);
    else rgba8_base_odd_t(c, lvl, dsums, drow0, y0, y1, row, 0);
}


/* ---- a level from a grid of cell sums ------------------------------------------------------ */

/* Cell sums of cell rows [r0, r1) from the base: per cell the slots (colour: the weighted sums
 * where the cell has alpha, else the plain ones; then alpha), as stored sums are kept. */
INLINE void cells_from_base_t(const Ctx *c, int r0, int r1, sum_t *tmp, const int CH, const int B16, const int SRGB,
                              const int WA)
{
    const int nc = CH == 4 ? 3 : 1, ha = CH != 1, ns = nc + ha, nt = ns + (WA ? nc : 0);
    /* the context's pointers in restrict locals (a store through ``t`` may alias the context:
     * its fields were reloaded after each); weighted alpha as the plain sums P and the deficit
     * D = sum((max - a) * L), so sum(a * L) = max * P - D exactly and an opaque texel costs no
     * product (1537x1999 level 3, its grid and texels: 7.7 -> 6.1 ms, one core here) */
    const uint8_t *restrict base = c->base;
    const u64 *restrict lin = c->lin;
    const int *restrict gx_of = c->gx_of;
    const int width = c->width;
    const u64 top = (u64)c->top;
    for (int r = r0; r < r1; r++) {
        memset(tmp, 0, sizeof(sum_t) * (size_t)c->gx_n * nt);
        for (int ty = c->gy[r]; ty < c->gy[r + 1]; ty++) {
            size_t i = (size_t)ty * width * CH;
            for (int tx = 0; tx < width; tx++, i += CH) {
                sum_t *restrict t = tmp + (size_t)gx_of[tx] * nt;
                u64 a = ha ? code_of(base, i + CH - 1, B16) : 1;
                for (int k = 0; k < nc; k++) {
                    unsigned code = code_of(base, i + k, B16);
                    u64 l = SRGB ? lin[code] : (u64)code;
                    if (WA) {
                        t[ns + k] += l;
                        if (a != top) t[k] += (top - a) * l;
                    } else {
                        t[k] += l;
                    }
                }
                if (ha) t[nc] += a;
            }
        }
        sum_t *d = c->cells + (size_t)r * c->gx_n * ns;
        for (int x = 0; x < c->gx_n; x++, d += ns) {
            const sum_t *t = tmp + (size_t)x * nt;
            int plain = WA && t[nc] == 0;
            for (int k = 0; k < nc; k++) d[k] = plain ? t[ns + k] : WA ? top * t[ns + k] - t[k] : t[k];
            if (ha) d[nc] = t[nc];
        }
    }
}

/* Rows [y0, y1) of level lvl from the cell grid: per axis, the cell of the footprint's first base
 * texel (weight m - r0), the cells up to the last one's (weight m), that one's (weight r1). */
INLINE void rows_from_cells_t(const Ctx *c, int lvl, sum_t *dsums, int y0, int y1, const int CH, const int B16,
                              const int SRGB, const int WA)
{
    const int nc = CH == 4 ? 3 : 1, ha = CH != 1, ns = nc + ha;
    const Level *L = &c->lv[lvl];
    for (int y = y0; y < y1; y++) {
        for (int x = 0; x < L->w; x++) {
            sum_t wsum[MAX_SLOTS] = {0, 0, 0, 0}, psum[3] = {0, 0, 0};
            for (int j = c->ys[y]; j < c->ys[y] + c->yn[y]; j++) {
                u64 wy = c->yw[(size_t)y * c->ystride + (j - c->ys[y])];
                const u64 *wx = c->xw + (size_t)x * c->xstride;
                const sum_t *s = c->cells + ((size_t)j * c->gx_n + c->xs[x]) * ns;
                for (int i = 0; i < c->xn[x]; i++, s += ns) {
                    u64 w = wy * wx[i];
                    sum_t a = ha ? s[nc] : 0;
                    if (ha) wsum[nc] += w * a;
                    if (WA && a == 0) {
                        for (int k = 0; k < nc; k++) psum[k] += w * s[k];
                    } else {
                        for (int k = 0; k < nc; k++) wsum[k] += w * s[k];
                    }
                }
            }
            if (WA && wsum[nc] == 0)
                for (int k = 0; k < nc; k++) wsum[k] = psum[k];
            finalize_t(c, lvl, dsums, 0, x, y, wsum, CH, B16, SRGB, WA);
        }
    }
}

/* one instance per kind of chain, so every test on the kind is decided at compile time */
#define KINDS(X)                                                                                            \
    X(1, 0, 0, 0) X(1, 0, 1, 0) X(1, 1, 0, 0) X(2, 0, 0, 0) X(2, 0, 1, 0) X(2, 1, 0, 0) X(2, 0, 0, 1)      \
    X(2, 0, 1, 1) X(2, 1, 0, 1) X(4, 0, 0, 0) X(4, 0, 1, 0) X(4, 1, 0, 0) X(4, 0, 0, 1) X(4, 0, 1, 1)      \
    X(4, 1, 0, 1)

#define INSTANCE(CH, B16, SRGB, WA)                                                                        \
    static void base_##CH##_##B16##_##SRGB##_##WA(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, \
                                                  int y1, sum_t *row, u64 *vals)                           \
    {                                                                                                      \
        rows_from_base_t(c, lvl, dsums, drow0, y0, y1, row, vals, CH, B16, SRGB, WA);                      \
    }                                                                                                      \
    static void sums_##CH##_##B16##_##SRGB##_##WA(const Ctx *c, int lvl, const sum_t *ssums, int srow0,    \
                                                  sum_t *dsums, int drow0, int y0, int y1, int x0, int x1) \
    {                                                                                                      \
        rows_from_sums_t(c, lvl, ssums, srow0, dsums, drow0, y0, y1, x0, x1, CH, B16, SRGB, WA);           \
    }                                                                                                      \
    static void cbase_##CH##_##B16##_##SRGB##_##WA(const Ctx *c, int r0, int r1, sum_t *tmp)              \
    {                                                                                                      \
        cells_from_base_t(c, r0, r1, tmp, CH, B16, SRGB, WA);                                              \
    }                                                                                                      \
    static void cells_##CH##_##B16##_##SRGB##_##WA(const Ctx *c, int lvl, sum_t *dsums, int y0, int y1)   \
    {                                                                                                      \
        rows_from_cells_t(c, lvl, dsums, y0, y1, CH, B16, SRGB, WA);                                       \
    }
KINDS(INSTANCE)

static void rows_from_base(const Ctx *c, int lvl, sum_t *dsums, int drow0, int y0, int y1, sum_t *row, u64 *vals)
{
    if (c->fast && c->lv[lvl].w * 2 == c->width && c->lv[lvl].h * 2 == c->height) {
        rgba8_base_2x2(c, lvl, dsums, drow0, y0, y1, 0, c->lv[lvl].w, c->fast >= 2);
        return;
    }
    if (c->fast && (c->width % c->lv[lvl].w || c->height % c->lv[lvl].h)) {  /* (rows_from_base_t's weighted footprints) */
        rgba8_base_odd(c, lvl, dsums, drow0, y0, y1, row);
        return;
    }
#define CALL_BASE(CH, B16, SRGB, WA)                                                                       \
    if (c->channels == CH && (c->bits == 16) == B16 && c->srgb == SRGB && c->weighted == WA) {              \
        base_##CH##_##B16##_##SRGB##_##WA(c, lvl, dsums, drow0, y0, y1, row, vals);                        \
        return;                                                                                            \
    }
    KINDS(CALL_BASE)
}

/* Texels [x0, x1) of rows [y0, y1) of level lvl from stored sums. */
static void sums_range(const Ctx *c, int lvl, const sum_t *ssums, int srow0, sum_t *dsums, int drow0, int y0, int y1,
                       int x0, int x1)
{
    const Level *L = &c->lv[lvl], *S = &c->lv[c->source[lvl]];
    if (c->fast && S->w == 2 * L->w && S->h == 2 * L->h && (sizeof(sum_t) > 8 || 4 * c->total < ((u64)1 << 25))) {  /* (sums_t's u64 case) */
        rgba8_sums_2x2(c, lvl, ssums, srow0, dsums, drow0, y0, y1, x0, x1);
        return;
    }
#define CALL_SUMS(CH, B16, SRGB, WA)                                                                       \
    if (c->channels == CH && (c->bits == 16) == B16 && c->srgb == SRGB && c->weighted == WA) {              \
        sums_##CH##_##B16##_##SRGB##_##WA(c, lvl, ssums, srow0, dsums, drow0, y0, y1, x0, x1);             \
        return;                                                                                            \
    }
    KINDS(CALL_SUMS)
}

static void rows_from_sums(const Ctx *c, int lvl, const sum_t *ssums, int srow0, sum_t *dsums, int drow0, int y0, int y1)
{
    sums_range(c, lvl, ssums, srow0, dsums, drow0, y0, y1, 0, c->lv[lvl].w);
}

/* cells_from_base_t for RGBA8 sRGB: each cell's run of texels in a row summed in registers (the
 * plain L from the 32-bit table, alpha's sum) and added to the cell once (no cell looked up per
 * texel); weighted alpha's deficit D = sum((max - a) * L) only over runs not opaque. */
static void rgba8_cells_from_base(const Ctx *c, int r0, int r1, sum_t *tmp)
{
    const int WA = c->weighted, nx = c->gx_n;
    const int *restrict gx = c->gx;
    const uint8_t *restrict base = c->base;
    const uint32_t *restrict lin = c->lin32;
    for (int r = r0; r < r1; r++) {
        memset(tmp, 0, sizeof(sum_t) * 7 * (size_t)nx);
        for (int ty = c->gy[r]; ty < c->gy[r + 1]; ty++) {
            const uint8_t *restrict b = base + (size_t)ty * c->width * 4;
            for (int cx = 0; cx < nx; cx++) {
                const uint8_t *restrict p = b + (size_t)gx[cx] * 4, *restrict e = b + (size_t)gx[cx + 1] * 4;
                u64 p0 = 0, p1 = 0, p2 = 0, a = 0;
                unsigned all = 255;
                for (const uint8_t *q = p; q < e; q += 4) {
                    p0 += lin[q[0]];
                    p1 += lin[q[1]];
                    p2 += lin[q[2]];
                    a += q[3];
                    all &= q[3];
                }
                sum_t *restrict t = tmp + 7 * (size_t)cx;
                t[0] += p0; t[1] += p1; t[2] += p2; t[6] += a;
                if (WA && all != 255)
                    for (const uint8_t *q = p; q < e; q += 4) {
                        u64 m = 255u - q[3];
                        t[3] += m * lin[q[0]];
                        t[4] += m * lin[q[1]];
                        t[5] += m * lin[q[2]];
                    }
            }
        }
        sum_t *d = c->cells + (size_t)r * nx * 4;
        for (int cx = 0; cx < nx; cx++, d += 4) {
            const sum_t *t = tmp + 7 * (size_t)cx;
            int plain = !WA || t[6] == 0;
            for (int k = 0; k < 3; k++) d[k] = plain ? t[k] : 255 * t[k] - t[3 + k];
            d[3] = t[6];
        }
    }
}


static void cells_from_base(const Ctx *c, int r0, int r1, sum_t *tmp)
{
    if (c->fast) {
        rgba8_cells_from_base(c, r0, r1, tmp);
        return;
    }
#define CALL_CBASE(CH, B16, SRGB, WA)                                                                      \
    if (c->channels == CH && (c->bits == 16) == B16 && c->srgb == SRGB && c->weighted == WA) {              \
        cbase_##CH##_##B16##_##SRGB##_##WA(c, r0, r1, tmp);                                                \
        return;                                                                                            \
    }
    KINDS(CALL_CBASE)
}

static void rows_from_cells(const Ctx *c, int lvl, sum_t *dsums, int y0, int y1)
{
#define CALL_CELLS(CH, B16, SRGB, WA)                                                                      \
    if (c->channels == CH && (c->bits == 16) == B16 && c->srgb == SRGB && c->weighted == WA) {              \
        cells_##CH##_##B16##_##SRGB##_##WA(c, lvl, dsums, y0, y1);                                         \
        return;                                                                                            \
    }
    KINDS(CALL_CELLS)
}

/* Cells of a coarser grid (its cut points a subset of this one's) as unions of this grid's:
 * ``px``/``py`` the coarse cell of each fine one; the slot rule of stored sums (a cell without
 * alpha holds plain sums; a union with alpha adds only its children that have some). */
static int merge_cells(const Ctx *c, const sum_t *fine, int fx, int fy, const int *px, const int *py, sum_t *coarse,
                       int cx, int cy)
{
    int ns = c->slots, nc = c->nc, wa = c->weighted;
    size_t n = (size_t)cx * cy;
    sum_t *plain = wa ? calloc(n * nc, sizeof(sum_t)) : NULL;
    if (wa && !plain) return 1;
    memset(coarse, 0, sizeof(sum_t) * n * ns);
    for (int y = 0; y < fy; y++) {
        const sum_t *s = fine + (size_t)y * fx * ns;
        for (int x = 0; x < fx; x++, s += ns) {
            size_t t = (size_t)py[y] * cx + px[x];
            sum_t *d = coarse + t * ns;
            sum_t a = c->has_alpha ? s[nc] : 0;
            if (c->has_alpha) d[nc] += a;
            if (wa && a == 0) {
                for (int k = 0; k < nc; k++) plain[t * nc + k] += s[k];
            } else {
                for (int k = 0; k < nc; k++) d[k] += s[k];
            }
        }
    }
    if (wa) {
        for (size_t t = 0; t < n; t++)
            if (coarse[t * ns + nc] == 0)
                for (int k = 0; k < nc; k++) coarse[t * ns + k] = plain[t * nc + k];
        free(plain);
    }
    return 0;
}

/* ---- the chain --------------------------------------------------------------------------- */

/* Per-axis footprints of an axis going from n to m texels: start, count and integer weights
 * (as intbox._weights); ``stride`` weights a destination texel. */
static void axis_weights(int n, int m, int *start, int *count, u64 *wt, int stride)
{
    for (int j = 0; j < m; j++) {
        u64 lo = (u64)j * n, hi = (u64)(j + 1) * n;
        int t0 = (int)(lo / m), t1 = (int)((hi + m - 1) / m);
        start[j] = t0;
        count[j] = t1 - t0;
        for (int t = t0; t < t1; t++) {
            u64 a = (u64)t * m > lo ? (u64)t * m : lo, b = (u64)(t + 1) * m < hi ? (u64)(t + 1) * m : hi;
            wt[(size_t)j * stride + (t - t0)] = b - a;
        }
    }
}

enum { FROM_SUMS, FROM_BASE, FUSED, CELLS_FROM_BASE, FROM_CELLS };

/* The levels after the first of a fused band have this many rows or more (at most one row of each a
 * thread, 16 threads). */
#define FUSE_ROWS 16

/* The first level a cell grid may make (levels before it read the base; as gputex/mips/cells.py). */
#define FIRST_GRID 3

typedef struct {
    const Ctx *c;
    int lvl, mode, y0, y1;
    sum_t *row;
    u64 *vals;
    sum_t *ring[32];  /* FUSED: per level lvl .. fuse_top - 1, the rows of it that one row of the next tiles */
} Job;

/* FUSED: row y of level k (lvl < k <= fuse_top) into ``dst`` (its first row drow0): the rows of
 * level k - 1 it tiles made first into that level's ring (from the base at level lvl), then
 * summed. No level between lvl and fuse_top leaves the cache. */
static void band_row(const Job *j, int k, int y, sum_t *dst, int drow0)
{
    const Ctx *c = j->c;
    int ry = c->lv[k - 1].h / c->lv[k].h;
    sum_t *ring = j->ring[k - 1 - j->lvl];
#ifdef HAVE_AVX512
    if (k == 2 && j->lvl == 1 && c->fast12) {  /* levels 1 and 2 at once (rgba8_band12_avx512) */
        rgba8_band12_avx512(c, y, ring, dst, drow0);
        return;
    }
#endif
    if (k - 1 == j->lvl) {
        rows_from_base(c, k - 1, ring, y * ry, y * ry, (y + 1) * ry, j->row, j->vals);
    } else {
        for (int t = 0; t < ry; t++) band_row(j, k - 1, y * ry + t, ring, y * ry);
    }
    rows_from_sums(c, k, ring, y * ry, dst, drow0, y, y + 1);
}

static void *run_job(void *p)
{
    Job *j = (Job *)p;
    const Ctx *c = j->c;
    int l = j->lvl;
    if (j->mode == CELLS_FROM_BASE) {
        cells_from_base(c, j->y0, j->y1, j->row);
    } else if (j->mode == FROM_CELLS) {
        rows_from_cells(c, l, c->lv[l].sums, j->y0, j->y1);
    } else if (j->mode == FROM_BASE) {
        rows_from_base(c, l, c->lv[l].sums, 0, j->y0, j->y1, j->row, j->vals);
    } else if (j->mode == FROM_SUMS) {
        rows_from_sums(c, l, c->lv[c->source[l]].sums, 0, c->lv[l].sums, 0, j->y0, j->y1);
    } else {
        /* level l from the base, ry of its rows at a time into a ring, then the row of level
         * l + 1 they tile from it, and so on to fuse_top: the sums of the levels between never
         * leave the cache */
        for (int y = j->y0; y < j->y1; y++) band_row(j, c->fuse_top, y, c->lv[c->fuse_top].sums, 0);
    }
    return NULL;
}

/* Rows of level ``lvl`` (FUSED: of level lvl + 1, with lvl's own; CELLS_FROM_BASE: cell rows)
 * split over threads. */
static int level_rows(const Ctx *c, int lvl, int mode, int threads)
{
    const Level *L = &c->lv[mode == FUSED ? c->fuse_top : lvl], *S = &c->lv[c->source[lvl]];
    int rows = mode == CELLS_FROM_BASE ? c->gy_n : L->h;
    int n = threads;
    if (n > rows) n = rows;
    /* work: the base texels read (from the base) or the stored texels / cells added */
    size_t work = mode == FROM_SUMS ? (size_t)S->w * S->h : mode == FROM_CELLS ? (size_t)L->w * L->h * 16
                                                                               : (size_t)c->width * c->height;
    if (work < 65536) n = 1;
    if (n < 1) n = 1;
    int base = mode == FROM_BASE || mode == FUSED;
    size_t row = base ? (1 + (size_t)c->ystride) * c->lv[lvl].w * c->slots  /* the row, and the ring of horizontal sums */
                      : mode == CELLS_FROM_BASE ? (size_t)c->gx_n * (c->slots + c->nc) : 0;
    Job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0}, err = base && c->ystride > MAX_RING;  /* (never: see MAX_RING) */
    int rings = mode == FUSED ? c->fuse_top - lvl : 0;
    for (int i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof(Job));
        jobs[i].c = c;
        jobs[i].lvl = lvl;
        jobs[i].mode = mode;
        jobs[i].y0 = (int)((long long)rows * i / n);
        jobs[i].y1 = (int)((long long)rows * (i + 1) / n);
        jobs[i].row = row ? malloc(sizeof(sum_t) * row) : NULL;
        jobs[i].vals = base ? malloc(sizeof(u64) * (size_t)c->width * c->slots) : NULL;
        if ((row && !jobs[i].row) || (base && !jobs[i].vals)) err = 1;
        for (int k = 0; k < rings; k++) {
            const Level *a = &c->lv[lvl + k], *b = &c->lv[lvl + k + 1];
            jobs[i].ring[k] = malloc(sizeof(sum_t) * (size_t)(a->h / b->h) * a->w * c->slots);
            if (!jobs[i].ring[k]) err = 1;
        }
    }
    if (!err) {
        for (int i = 1; i < n; i++) started[i] = pthread_create(&tid[i], NULL, run_job, &jobs[i]) == 0;
        for (int i = 1; i < n; i++)
            if (!started[i]) run_job(&jobs[i]);
        run_job(&jobs[0]);
        for (int i = 1; i < n; i++)
            if (started[i]) pthread_join(tid[i], NULL);
    }
    for (int i = 0; i < n; i++) {
        free(jobs[i].row);
        free(jobs[i].vals);
        for (int k = 0; k < rings; k++) free(jobs[i].ring[k]);
    }
    return err;
}

static int size_of(int n, int level) { return (n >> level) > 0 ? n >> level : 1; }

/* A level no earlier level tiles, from FIRST_GRID on: made from the cell grid. */
static int is_cell_level(const Ctx *c, int l) { return l >= FIRST_GRID && c->source[l] == 0; }

/* G(l) on one axis of n base texels: the cut points of the cell levels m >= l (P(m): the
 * footprints' edges j * n / m and the points one past them), sorted, in ``*cut``; the cell of
 * each base coordinate in ``*of``. Returns the cells, or -1 (no memory). */
static int grid_axis(const Ctx *c, int l, int n, int horizontal, int **cut, int **of)
{
    uint8_t *mark = calloc((size_t)n + 2, 1);
    int count = 0;
    *cut = NULL;
    *of = NULL;
    if (!mark) return -1;
    for (int m = l; m < c->levels; m++) {
        if (!is_cell_level(c, m)) continue;
        int d = horizontal ? c->lv[m].w : c->lv[m].h;
        for (int j = 0; j <= d; j++) {
            long long a = (long long)j * n / d;
            mark[a] = 1;
            if (a + 1 <= n) mark[a + 1] = 1;
        }
    }
    for (int t = 0; t <= n; t++) count += mark[t];
    *cut = malloc(sizeof(int) * (size_t)count);
    *of = malloc(sizeof(int) * (size_t)n);
    if (!*cut || !*of) {
        free(mark); free(*cut); free(*of);
        *cut = *of = NULL;
        return -1;
    }
    for (int t = 0, i = 0; t <= n; t++)
        if (mark[t]) (*cut)[i++] = t;
    for (int i = 0; i + 1 < count; i++)
        for (int t = (*cut)[i]; t < (*cut)[i + 1]; t++) (*of)[t] = i;
    free(mark);
    return count - 1;
}

/* A level's footprints on one axis (n base texels to m) as runs of consecutive grid cells: the
 * first base texel's cell (weight m - r0), whole cells (m), the last one's (r1). */
static int grid_weights(int n, int m, const int *cut, const int *of, int **start, int **count, u64 **wt, int *stride)
{
    int most = 1;
    *start = malloc(sizeof(int) * 2 * (size_t)m);
    *wt = NULL;
    if (!*start) return -1;
    *count = *start + m;
    for (int j = 0; j < m; j++) {
        long long a0 = (long long)j * n / m, a1 = (long long)(j + 1) * n / m, r1 = (long long)(j + 1) * n % m;
        int last = r1 > 0 ? of[a1] : of[a1 - 1];
        (*start)[j] = of[a0];
        (*count)[j] = last - of[a0] + 1;
        if ((*count)[j] > most) most = (*count)[j];
    }
    *wt = malloc(sizeof(u64) * (size_t)m * most);
    if (!*wt) { free(*start); *start = NULL; return -1; }
    for (int j = 0; j < m; j++) {
        long long a0 = (long long)j * n / m, r0 = (long long)j * n % m;
        long long a1 = (long long)(j + 1) * n / m, r1 = (long long)(j + 1) * n % m;
        for (int i = 0; i < (*count)[j]; i++) {
            int at = cut[(*start)[j] + i];
            (*wt)[(size_t)j * most + i] = at == a0 ? (u64)(m - r0) : (at == a1 && r1 > 0) ? (u64)r1 : (u64)m;
        }
    }
    *stride = most;
    return 0;
}

typedef struct {
    int nx, ny;
    int *cut_x, *of_x, *cut_y, *of_y;
    sum_t *cells;
    size_t bytes;
} Grid;

static void grid_free(Grid *g)
{
    free(g->cut_x); free(g->of_x); free(g->cut_y); free(g->of_y);
    big_free(g->cells, g->bytes);
    memset(g, 0, sizeof(Grid));
}

/* Level l from G(l): the grid made from the base (the first one) or from the previous grid, whose
 * cells its own are unions of; then the level's texels from its cells. */
static int level_from_grid(Ctx *c, int l, Grid *prev, int threads)
{
    Grid g = {0};
    int err = 0;
    g.nx = grid_axis(c, l, c->width, 1, &g.cut_x, &g.of_x);
    g.ny = grid_axis(c, l, c->height, 0, &g.cut_y, &g.of_y);
    if (g.nx < 0 || g.ny < 0) { grid_free(&g); return 1; }
    g.bytes = sizeof(sum_t) * (size_t)g.nx * g.ny * c->slots;
    g.cells = sums_alloc(&c->arena, &g.bytes);
    if (!g.cells) { grid_free(&g); return 1; }
    c->gx_n = g.nx; c->gy_n = g.ny; c->gx = g.cut_x; c->gy = g.cut_y; c->gx_of = g.of_x; c->gy_of = g.of_y;
    c->cells = g.cells;
    if (!prev->cells) {
        err = level_rows(c, l, CELLS_FROM_BASE, threads);
    } else {
        int *px = malloc(sizeof(int) * (size_t)prev->nx), *py = malloc(sizeof(int) * (size_t)prev->ny);
        if (!px || !py) {
            err = 1;
        } else {
            for (int i = 0; i < prev->nx; i++) px[i] = g.of_x[prev->cut_x[i]];
            for (int i = 0; i < prev->ny; i++) py[i] = g.of_y[prev->cut_y[i]];
            err = merge_cells(c, prev->cells, prev->nx, prev->ny, px, py, g.cells, g.nx, g.ny);
        }
        free(px); free(py);
    }
    grid_free(prev);
    *prev = g;
    if (err) return err;
    int *xs = NULL, *ys = NULL, *xn = NULL, *yn = NULL;
    u64 *xw = NULL, *yw = NULL;
    int xstride = 0, ystride = 0;
    if (grid_weights(c->width, c->lv[l].w, g.cut_x, g.of_x, &xs, &xn, &xw, &xstride)
        || grid_weights(c->height, c->lv[l].h, g.cut_y, g.of_y, &ys, &yn, &yw, &ystride)) {
        err = 1;
    } else {
        c->xs = xs; c->xn = xn; c->xw = xw; c->xstride = xstride;
        c->ys = ys; c->yn = yn; c->yw = yw; c->ystride = ystride;
        err = level_rows(c, l, FROM_CELLS, threads);
    }
    free(xs); free(ys); free(xw); free(yw);
    return err;
}

/* The plan: the levels' sizes, and each level from the deepest earlier stored level (from 1 on)
 * whose texels tile it. */
static void plan_chain(Ctx *c)
{
    for (int l = 0; l < c->levels; l++) {
        c->lv[l].w = size_of(c->width, l);
        c->lv[l].h = size_of(c->height, l);
        c->lv[l].sums = NULL;
    }
    for (int l = 1; l < c->levels; l++) {
        c->source[l] = 0;
        for (int k = l - 1; k >= 1; k--)
            if (c->lv[k].w % c->lv[l].w == 0 && c->lv[k].h % c->lv[l].h == 0) {
                c->source[l] = k;
                break;
            }
    }
}

/* The levels made with level l (from the base), band by band: a level from the base that only
 * the next level reads is made with it, and so on while the next level tiles that one alone and
 * has FUSE_ROWS rows or more (2048^2: levels 1-7 in one pass, their sums in rings of two rows;
 * before, level 2's 8 MB of sums went to memory and came back for level 3). */
static int fused_after(const Ctx *c, int l)
{
    int fused = 0;
    while (c->source[l] == 0 && !is_cell_level(c, l) && l + fused + 1 < c->levels
           && c->source[l + fused + 1] == l + fused && (fused == 0 || c->lv[l + fused + 1].h >= FUSE_ROWS)) {
        for (int m = l + fused + 2; m < c->levels; m++)
            if (c->source[m] == l + fused) return fused;
        fused++;
    }
    return fused;
}

/* Whether a later level reads level k's stored sums. */
static int sums_read(const Ctx *c, int k)
{
    for (int m = k + 1; m < c->levels; m++)
        if (c->source[m] == k) return 1;
    return 0;
}

#define ALIGNED(n) (((n) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

/* The bytes of sums the chain will ask for (stored levels and cell grids), as run_chain takes them. */
static size_t chain_need(const Ctx *c)
{
    size_t need = 0;
    for (int l = 1; l < c->levels; l++) {
        if (is_cell_level(c, l)) {
            int *cut = NULL, *of = NULL, nx, ny;
            nx = grid_axis(c, l, c->width, 1, &cut, &of);
            free(cut); free(of);
            ny = grid_axis(c, l, c->height, 0, &cut, &of);
            free(cut); free(of);
            if (nx > 0 && ny > 0) need += ALIGNED(sizeof(sum_t) * (size_t)nx * ny * c->slots);
        }
        int fused = fused_after(c, l);
        if (sums_read(c, l + fused))
            need += ALIGNED(sizeof(sum_t) * (size_t)c->lv[l + fused].w * c->lv[l + fused].h * c->slots);
        l += fused;
    }
    return need;
}

static void odd_tab_free(OddTab *t)
{
    free(t->idx); free(t->reg); free(t->w); free(t->w64);
    if (t->own) { free(t->xs); free(t->ys); free(t->xw); free(t->yw); }
    memset(t, 0, sizeof(OddTab));
}

/* The AVX-512 odd kernels' tables of level l from the base (its footprints given: axis_weights), where
 * they serve: RGBA8 kernels with AVX-512, footprints not whole texels, W <= 2**22 (the sums exact in
 * doubles), at most ODD_KMAX terms a footprint on x and MAX_RING rows. ``t->lvl`` stays 0 where not
 * (rgba8_base_odd_t runs). Returns 1 where it could not map them. */
static int odd_tab_build(Ctx *c, int l, OddTab *t, int *xs, int *xn, u64 *xw, int xstride, int *ys, int *yn, u64 *yw,
                         int ystride)
{
    memset(t, 0, sizeof(OddTab));
#ifdef HAVE_AVX512
    const int dw = c->lv[l].w;
    if (c->fast < 2 || c->total > ((u64)1 << 22) || (c->width % dw == 0 && c->height % c->lv[l].h == 0)
        || ystride > MAX_RING)
        return 0;
    int k = 0;
    for (int x = 0; x < dw; x++) k = xn[x] > k ? xn[x] : k;
    if (k < 1 || k > ODD_KMAX) return 0;
    const int dwp = (dw + 7) & ~7, st = c->width / dw;
    const size_t terms = (size_t)(unsigned)k * (unsigned)dwp;
    t->idx = calloc(terms, sizeof(int));
    t->w = calloc(terms, sizeof(double));
    t->w64 = calloc(terms + (unsigned)dwp, sizeof(u64));
    t->reg = malloc(sizeof(int) * ((size_t)dw + 7) / 8);
    if (!t->idx || !t->w || !t->w64 || !t->reg) { odd_tab_free(t); return 1; }
    for (int i = 0; i < k; i++)
        for (int x = 0; x < dw; x++) {
            t->idx[(size_t)i * dwp + x] = xs[x] + (i < xn[x] ? i : 0);
            t->w[(size_t)i * dwp + x] = i < xn[x] ? (double)xw[(size_t)x * xstride + i] : 0.0;
            t->w64[(size_t)i * dwp + x] = i < xn[x] ? xw[(size_t)x * xstride + i] : 0;
        }
    for (int g = 0; g < dwp / 8; g++) {
        int a = xs[8 * g], ok = 8 * g + 8 <= dw && (st == 2 || st == 4);
        for (int i = 0; i < k && ok; i++)
            for (int j = 0; j < 8 && ok; j++)
                ok = t->idx[(size_t)i * dwp + 8 * g + j] == a + st * j + i || t->w[(size_t)i * dwp + 8 * g + j] == 0.0;
        t->reg[g] = ok ? a : -1;
    }
    t->xs = xs; t->xn = xn; t->xw = xw; t->xstride = xstride;
    t->ys = ys; t->yn = yn; t->yw = yw; t->ystride = ystride;
    t->k = k;
    t->dwp = dwp;
    t->st = st;
    t->lvl = l;
#else
    (void)c; (void)l; (void)xs; (void)xn; (void)xw; (void)xstride; (void)ys; (void)yn; (void)yw; (void)ystride;
#endif
    return 0;
}

/* Whether levels 1 and 2 are made in one pass (rgba8_odd12_avx512): both from the base of footprints
 * not whole texels, neither's sums read by a later level (nor a band), and the tables of both built
 * (c->odd[0], c->odd[1], their footprints mapped here). */
static int odd12_ready(Ctx *c)
{
    if (c->fast < 2 || c->levels < 3 || c->source[1] || c->source[2] || sums_read(c, 1) || sums_read(c, 2)
        || fused_after(c, 1) || fused_after(c, 2))
        return 0;
    for (int i = 0; i < 2; i++) {
        int l = i + 1, dw = c->lv[l].w, dh = c->lv[l].h;
        int xstride = c->width / dw + 2, ystride = c->height / dh + 2;
        int *xs = malloc(sizeof(int) * dw * 2), *ys = malloc(sizeof(int) * dh * 2);
        u64 *xw = malloc(sizeof(u64) * (size_t)dw * xstride), *yw = malloc(sizeof(u64) * (size_t)dh * ystride);
        if (!xs || !ys || !xw || !yw) {
            free(xs); free(ys); free(xw); free(yw);
            break;
        }
        axis_weights(c->width, dw, xs, xs + dw, xw, xstride);
        axis_weights(c->height, dh, ys, ys + dh, yw, ystride);
        if (odd_tab_build(c, l, &c->odd[i], xs, xs + dw, xw, xstride, ys, ys + dh, yw, ystride) || !c->odd[i].lvl) {
            odd_tab_free(&c->odd[i]);
            free(xs); free(ys); free(xw); free(yw);
            break;
        }
        c->odd[i].own = 1;
    }
    if (c->odd[0].lvl == 1 && c->odd[1].lvl == 2) return 1;
    odd_tab_free(&c->odd[0]);
    odd_tab_free(&c->odd[1]);
    return 0;
}

#ifdef HAVE_AVX512
typedef struct {
    const Ctx *c;
    int y0, y1, Y0, Y1, ok;
} Odd12Job;

static void *odd12_job(void *p)
{
    Odd12Job *j = (Odd12Job *)p;
    j->ok = rgba8_odd12_avx512(j->c, j->y0, j->y1, j->Y0, j->Y1);
    return NULL;
}
#endif

/* rgba8_odd12_avx512 over threads: level 2's rows split evenly, each level-1 row to the job where its
 * first base row lies before the next job's first level-2 base row. Returns 1 where a job could not
 * map its buffers. */
static int odd12_rows(const Ctx *c, int threads)
{
#ifdef HAVE_AVX512
    const OddTab *t1 = &c->odd[0], *t2 = &c->odd[1];
    const int dh1 = c->lv[1].h, dh2 = c->lv[2].h;
    int n = threads < dh2 ? threads : dh2, err = 0, y = 0;
    if ((size_t)c->width * c->height < 65536 || n < 1) n = 1;
    Odd12Job jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int i = 0; i < n; i++) {
        jobs[i].c = c;
        jobs[i].Y0 = (int)((long long)dh2 * i / n);
        jobs[i].Y1 = (int)((long long)dh2 * (i + 1) / n);
        jobs[i].y0 = y;
        if (i == n - 1) y = dh1;
        else
            while (y < dh1 && t1->ys[y] < t2->ys[jobs[i].Y1]) y++;
        jobs[i].y1 = y;
        jobs[i].ok = 0;
    }
    for (int i = 1; i < n; i++) started[i] = pthread_create(&tid[i], NULL, odd12_job, &jobs[i]) == 0;
    for (int i = 1; i < n; i++)
        if (!started[i]) odd12_job(&jobs[i]);
    odd12_job(&jobs[0]);
    for (int i = 1; i < n; i++)
        if (started[i]) pthread_join(tid[i], NULL);
    for (int i = 0; i < n; i++) err |= !jobs[i].ok;
    return err;
#else
    (void)c; (void)threads;
    return 1;
#endif
}

static int run_chain(Ctx *c, int threads)
{
    int err = 0;
    plan_chain(c);
    if (c->arena.held) arena_reserve(&c->arena, chain_need(c));
    Grid grid = {0};
    for (int l = 1; l < c->levels && !err; l++) {
        if (l == 1 && odd12_ready(c)) {  /* levels 1 and 2 in one pass over the base (rgba8_odd12_avx512) */
            err = odd12_rows(c, threads);
            odd_tab_free(&c->odd[0]);
            odd_tab_free(&c->odd[1]);
            l = 2;
            continue;
        }
        int fused = fused_after(c, l);
        c->fuse_top = l + fused;
        int kept = l + fused, needed = sums_read(c, kept);  /* the level whose sums may be kept */
        if (needed) {
            c->lv[kept].bytes = sizeof(sum_t) * (size_t)c->lv[kept].w * c->lv[kept].h * c->slots;
            c->lv[kept].sums = sums_alloc(&c->arena, &c->lv[kept].bytes);
            if (!c->lv[kept].sums) { err = 1; break; }
        }
        if (c->source[l]) {
            err = level_rows(c, l, FROM_SUMS, threads);
        } else if (is_cell_level(c, l)) {
            err = level_from_grid(c, l, &grid, threads);
        } else {
            int dw = c->lv[l].w, dh = c->lv[l].h;
            int xstride = c->width / dw + 2, ystride = c->height / dh + 2;
            int *xs = malloc(sizeof(int) * dw * 2), *ys = malloc(sizeof(int) * dh * 2);
            u64 *xw = malloc(sizeof(u64) * (size_t)dw * xstride), *yw = malloc(sizeof(u64) * (size_t)dh * ystride);
            if (!xs || !ys || !xw || !yw) {
                err = 1;
            } else {
                axis_weights(c->width, dw, xs, xs + dw, xw, xstride);
                axis_weights(c->height, dh, ys, ys + dh, yw, ystride);
                c->xs = xs; c->xn = xs + dw; c->xw = xw; c->xstride = xstride;
                c->ys = ys; c->yn = ys + dh; c->yw = yw; c->ystride = ystride;
                if (odd_tab_build(c, l, &c->odd[0], xs, xs + dw, xw, xstride, ys, ys + dh, yw, ystride))
                    err = 1;
                else
                    err = level_rows(c, l, fused ? FUSED : FROM_BASE, threads);
                odd_tab_free(&c->odd[0]);
            }
            free(xs); free(ys); free(xw); free(yw);
        }
        l += fused;  /* levels to l + fused are made */
        /* sums no later level reads are freed as soon as possible */
        for (int k = 1; k < l; k++) {
            int later = 0;
            for (int m = l + 1; m < c->levels; m++) later |= c->source[m] == k;
            if (!later && c->lv[k].sums) { big_free(c->lv[k].sums, c->lv[k].bytes); c->lv[k].sums = NULL; }
        }
    }
    grid_free(&grid);
    for (int l = 0; l < c->levels; l++) big_free(c->lv[l].sums, c->lv[l].bytes);
    odd_tab_free(&c->odd[0]);
    odd_tab_free(&c->odd[1]);
    return err;
}

/* Thresholds of P, a footprint's plain sum of L over ``n`` base texels of equal weight wt = W / n:
 * P * wt * 2**32 >= Q[k] * W exactly when P >= ceil(T[k] / wt) (P * wt an integer; T: ``tw``),
 * whatever the size; guesses by P >> shift (a constant: P <= n * 2**31). Returns one_step. */
static int sum_thresholds(const Ctx *c, Thresh *th, u64 n, int shift)
{
    u64 wt = c->total / n;
    for (int k = 0; k <= c->top; k++) th->t[k] = (c->tw.t[k] + wt - 1) / wt;
    th->t[c->top + 1] = UINT64_MAX;
    th->shift = shift;
    for (int i = 0, k = 0; i < (1 << GUESS_BITS); i++) {
        u64 start = (u64)i << shift;
        while (k < c->top && th->t[k + 1] <= start) k++;
        th->guess[i] = (uint8_t)k;
    }
    th->one_step = 1;
    for (int j = 0; j < c->top; j++) th->one_step &= th->t[j + 1] - th->t[j] >= ((u64)1 << shift);
    return th->one_step;
}

/* The RGBA8 kernels' tables (8-bit sRGB): L as 32 bits (every L(code) <= 2**31), the thresholds
 * of a 2x2's sum of four L (``t4``) and, for sizes multiples of 4, of level 2's sixteen
 * (``t16``). Returns 0 where the kernels do not serve (then none runs). */
static int rgba8_tables(Ctx *c)
{

    if (c->top != 255 || c->lin[255] > ((u64)1 << 31)) return 0;  /* (P4_SHIFT, P16_SHIFT: sums of L <= 2**31) */
    for (int k = 0; k <= c->top; k++) {
        if (c->lin[k] > 0xffffffffu) return 0;
        c->lin32[k] = (uint32_t)c->lin[k];
    }
    if (c->width % 2 || c->height % 2) return 1;  /* (no 2x2 level from the base: t4 unused) */
    if (!sum_thresholds(c, &c->t4, 4, P4_SHIFT)) return 0;
    c->fast12 = c->width % 4 == 0 && c->height % 4 == 0 && sum_thresholds(c, &c->t16, 16, P16_SHIFT);
    return 1;
}

/* The code tables of 8-bit sRGB chains (build_guess, rgba8_tables: ~60 us a chain, as long as a
 * whole 61x37 chain) kept for the next chain of the same size and tables, as a decode worker
 * makes chain after chain of one size: copied (~100 KB) where no other thread holds the copy. */
typedef struct {
    int valid, width, height, ok;
    u64 lin[256], q[256];
    uint8_t guess[1 << GUESS_BITS];
    double guess_scale, qb[257];
    Thresh tw, to, t4, t16;
    uint32_t lin32[256];
    int fast12;
} Tables;

static Tables tables_kept;
static int tables_busy;

#define TABLE_FIELDS(X) X(guess) X(qb) X(tw) X(to) X(t4) X(t16) X(lin32)

/* The tables of an 8-bit sRGB chain in ``c`` (kept ones where they match); returns whether the
 * RGBA8 kernels serve (rgba8_tables, and one_step of tw and to). */
static int srgb_tables(Ctx *c)
{
    int held = !__atomic_exchange_n(&tables_busy, 1, __ATOMIC_ACQUIRE), ok;
    Tables *k = &tables_kept;
    if (held && k->valid && k->width == c->width && k->height == c->height && c->top == 255
        && !memcmp(k->lin, c->lin, sizeof(k->lin)) && !memcmp(k->q, c->q, sizeof(k->q))) {
#define COPY_IN(f) memcpy(&c->f, &k->f, sizeof(c->f));
        TABLE_FIELDS(COPY_IN)
        c->guess_scale = k->guess_scale;
        c->fast12 = k->fast12;
        ok = k->ok;
    } else {
        build_guess(c);
        ok = c->tw.one_step && c->to.one_step && rgba8_tables(c);
        if (held && c->top == 255) {
            __atomic_store_n(&k->valid, 0, __ATOMIC_RELEASE);
#define COPY_OUT(f) memcpy(&k->f, &c->f, sizeof(c->f));
            TABLE_FIELDS(COPY_OUT)
            memcpy(k->lin, c->lin, sizeof(k->lin));
            memcpy(k->q, c->q, sizeof(k->q));
            k->guess_scale = c->guess_scale;
            k->fast12 = c->fast12;
            k->ok = ok;
            k->width = c->width;
            k->height = c->height;
            __atomic_store_n(&k->valid, 1, __ATOMIC_RELEASE);
        }
    }
    if (held) __atomic_store_n(&tables_busy, 0, __ATOMIC_RELEASE);
    return ok;
}

/* 8-bit linear data's tables in the units of the sRGB ones (chain) */
static u64 linear8_lin[256], linear8_q[256];

static void linear8_tables(void)
{
    for (int k = 0; k < 256; k++) {
        linear8_lin[k] = (u64)k << 23;
        linear8_q[k] = k ? (u64)(2 * k - 1) << 54 : 0;
    }
}

static PyObject *chain(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"base", "out", "width", "height", "levels", "channels", "bits", "srgb", "weighted",
                             "lin", "q", "threads", "arena", "fast", NULL};
    Py_buffer base, out, lin, q;
    int width, height, levels, channels, bits, srgb, weighted, threads = 1, use_arena = 1, use_fast = 2;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*w*iiiiippy*y*|ipi", kwlist, &base, &out, &width, &height,
                                     &levels, &channels, &bits, &srgb, &weighted, &lin, &q, &threads, &use_arena, &use_fast))
        return NULL;
    PyObject *result = NULL;
    Ctx *c = calloc(1, sizeof(Ctx));
    const char *why = NULL;
    int bpt = channels * bits / 8, top = (bits == 8 || bits == 16) ? (1 << bits) - 1 : 0;  /* (bits checked below) */
    u64 total = (u64)width * (u64)height;
    if (!c) { PyErr_NoMemory(); goto done; }
    if (channels != 1 && channels != 2 && channels != 4) why = "channels must be 1, 2 or 4";
    else if (bits != 8 && bits != 16) why = "bits must be 8 or 16";
    else if (srgb && bits != 8) why = "sRGB data is served at 8 bits only";
#ifdef SUMS128
    else if (width < 1 || height < 1 || total > MAX_W) why = "width * height must be 1 .. 2**28";
#else
    else if (width < 1 || height < 1 || total > MAX_W) why = "width * height must be 1 .. 2**24";
#endif
    else if (levels < 1 || levels > 31 || ((width > height ? width : height) >> (levels - 1)) == 0)
        why = "too many levels for the size";
    else if ((u64)base.len != total * bpt) why = "base is not width * height texels";
    else if (srgb && ((size_t)lin.len != 8 * (size_t)(top + 1) || (size_t)q.len != 8 * (size_t)(top + 1)))
        why = "lin and q must hold 2**bits uint64 values each";
    if (why) { PyErr_SetString(PyExc_ValueError, why); goto done; }
    size_t need = 0;
    for (int l = 1; l < levels; l++) {
        c->out_off[l] = need;
        need += (size_t)size_of(width, l) * size_of(height, l) * bpt;
    }
    if ((size_t)out.len < need) { PyErr_SetString(PyExc_ValueError, "out is smaller than levels 1.."); goto done; }
    c->base = base.buf;
    c->out = out.buf;
    c->width = width; c->height = height; c->levels = levels; c->channels = channels; c->bits = bits;
    c->srgb = srgb; c->has_alpha = channels != 1; c->weighted = weighted && c->has_alpha;
    c->nc = channels == 4 ? 3 : 1;
    c->slots = c->nc + c->has_alpha;
    c->bpt = bpt; c->top = top; c->total = total;
    c->opaque = (u64)top * total;
    c->lin = lin.buf; c->q = q.buf;
    if (!srgb && bits == 8 && channels == 4 && use_fast > 0) {
        /* 8-bit linear data as sRGB data of the tables L(k) = k * 2**23, Q[k] = (2k - 1) * 2**54:
         * code k exactly when S * 2**32 >= Q[k] * den, i.e. S / den >= k - 1/2 in code units,
         * code_linear's rounding (ties up), with every bound of the sRGB tables (L <= 2**31); so the
         * sRGB loops, tables and RGBA8 kernels serve it (4 channels: 2048^2 14.5 -> 4.9 ms, one core
         * here; 1 and 2 channels keep their loops: 2 channels, weighted, was 5% slower so) */
        c->lin = linear8_lin;
        c->q = linear8_q;
        c->srgb = srgb = 1;
    }
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    int err;
    Py_BEGIN_ALLOW_THREADS
    int fast_ok = srgb && srgb_tables(c);
    if (fast_ok && channels == 4) c->fast = use_fast >= 2 ? (simd_level() >= 2 ? 2 : 1) : use_fast > 0;
    c->fast12 = c->fast12 && c->fast >= 2 && levels >= 3;
    if (c->fast >= 2) {  /* (rgba8_base_odd_avx512's doubles: exact below 2**53) */
        for (int k = 0; k < 256; k++) c->lind[k] = (double)c->lin32[k];
        for (int k = 0; k <= 256; k++) c->twd[k] = (double)c->tw.t[k];
        c->tw_scale = 1.0 / (double)((u64)1 << c->tw.shift);
        for (int k = 0; k < 256; k++)
            for (int p = 0; p < 4; p++) c->linb[p][k] = (uint8_t)(c->lin32[k] >> (8 * p));
        c->vbmi = use_fast == 2 && vbmi_ok();  /* (fast=3: AVX-512 without VBMI, for the tests) */
    }
    if (use_arena) arena_take(&c->arena);
    err = run_chain(c, threads);
    arena_give(&c->arena);
    Py_END_ALLOW_THREADS
    if (err) { PyErr_NoMemory(); goto done; }
    result = Py_None;
    Py_INCREF(result);
done:
    free(c);
    PyBuffer_Release(&base);
    PyBuffer_Release(&out);
    PyBuffer_Release(&lin);
    PyBuffer_Release(&q);
    return result;
}

/* The SIMD kernels this process's CPU runs (simd_level: 2 AVX-512, 0 none). */
static PyObject *simd(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(simd_level());
}

/* The arena's size (0: none kept). */
static PyObject *arena_bytes(PyObject *self, PyObject *unused)
{
    return PyLong_FromSize_t(arena_mem ? arena_size : 0);
}

/* Unmaps the arena where no chain holds it; returns the bytes given back. */
static PyObject *release(PyObject *self, PyObject *unused)
{
    size_t freed = 0;
    if (!__atomic_exchange_n(&arena_busy, 1, __ATOMIC_ACQUIRE)) {
        freed = arena_mem ? arena_size : 0;
        arena_swap(NULL, 0);  /* (NULL first, then unmapped: see arena_swap) */
        __atomic_store_n(&arena_busy, 0, __ATOMIC_RELEASE);
    }
    return PyLong_FromSize_t(freed);
}

static PyMethodDef methods[] = {
    {"chain", (PyCFunction)(void (*)(void))chain, METH_VARARGS | METH_KEYWORDS,
     "chain(base, out, width, height, levels, channels, bits, srgb, weighted, lin, q, threads=1, arena=True, fast=2)"},
    {"simd", simd, METH_NOARGS, "simd() -> the SIMD kernels this CPU runs: 2 AVX-512, 0 none (portable loops)"},
    {"arena_bytes", arena_bytes, METH_NOARGS, "arena_bytes() -> the bytes the process's arena keeps"},
    {"release", release, METH_NOARGS, "release() -> unmaps the arena (where no chain holds it); the bytes freed"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, MODULE_NAME, NULL, -1, methods, NULL, NULL, NULL, NULL};

/* A process forked while one of its threads held the arena (a fork server, a pool's fork): the
 * child has a copy of the arena and no such thread, so the arena is free there; so are the kept
 * code tables (a copy half written is invalid: srgb_tables sets ``valid`` last, and clears it
 * before it writes). */
static void arena_after_fork(void)
{
    arena_busy = 0;
    tables_busy = 0;
}

#ifdef SUMS128
PyMODINIT_FUNC PyInit__mipcpu128(void)
#else
PyMODINIT_FUNC PyInit__mipcpu(void)
#endif
{
    static int registered;
    linear8_tables();
    if (!registered) registered = pthread_atfork(NULL, NULL, arena_after_fork) == 0;
    return PyModule_Create(&module);
}
