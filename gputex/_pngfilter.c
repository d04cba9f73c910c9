/* PNG row unfiltering (None/Sub/Up/Average/Paeth) in place, for gputex/pngdec.py.
 *
 * unfilter(buf, height, stride, bpp, swap16, simd=True) -> int
 *
 * ``buf`` holds ``height`` filtered rows of ``1 + stride`` bytes (the inflated IDAT stream of a
 * non-interlaced PNG). Each row is unfiltered and moved down to ``buf[y * stride]``, so the first
 * ``height * stride`` bytes end as the image, with no second full-size buffer. With ``swap16``
 * every byte pair is swapped as its row is finished (big-endian 16-bit samples to a
 * little-endian host). Returns -1, or the index of the first row whose filter byte is not 0-4
 * (the buffer is then partly overwritten; the caller falls back to another decoder).
 *
 * Each row is first copied to a small row buffer, so no pointer aliases another (the packed
 * output row overlaps the filtered input row it comes from). The GIL is released throughout.
 * SSE2 paths (every x86-64 CPU has SSE2) work one pixel of up to 8 bytes per step, as libpng's do;
 * ``simd=False`` forces the portable scalar code (also what other CPUs build), so a test checks
 * one against the other.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define GPUTEX_SSE2 1
#include <emmintrin.h>
#endif

typedef unsigned char u8;

/* ---- portable scalar rows ------------------------------------------------------------------ */

static void row_sub(u8 *restrict dst, const u8 *restrict src, Py_ssize_t n, int bpp)
{
    Py_ssize_t i;
    for (i = 0; i < bpp && i < n; i++) dst[i] = src[i];
    for (; i < n; i++) dst[i] = (u8)(src[i] + dst[i - bpp]);
}

static void row_up(u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) dst[i] = (u8)(src[i] + prev[i]);
}

static void row_avg(u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev, Py_ssize_t n, int bpp)
{
    Py_ssize_t i;
    for (i = 0; i < bpp && i < n; i++) dst[i] = (u8)(src[i] + (prev[i] >> 1));
    for (; i < n; i++) dst[i] = (u8)(src[i] + ((dst[i - bpp] + prev[i]) >> 1));
}

static inline int paeth_pred(int a, int b, int c)
{
    int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

static void row_paeth(u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev, Py_ssize_t n, int bpp)
{
    Py_ssize_t i;
    for (i = 0; i < bpp && i < n; i++) dst[i] = (u8)(src[i] + prev[i]); /* a = c = 0: predicts b */
    for (; i < n; i++) dst[i] = (u8)(src[i] + paeth_pred(dst[i - bpp], prev[i], prev[i - bpp]));
}

/* ---- SSE2 rows: one pixel (bpp <= 8 bytes) per step ---------------------------------------- */

#ifdef GPUTEX_SSE2
static inline __m128i load_px(const u8 *p, int bpp)
{
    uint64_t v = 0;
    memcpy(&v, p, (size_t)bpp);
    return _mm_cvtsi64_si128((long long)v);
}

static inline void store_px(u8 *p, __m128i x, int bpp)
{
    uint64_t v = (uint64_t)_mm_cvtsi128_si64(x);
    memcpy(p, &v, (size_t)bpp);
}

/* While 8 bytes remain in the row, a pixel is loaded and stored as 8 bytes (the bytes past it are
 * the next pixels, rewritten by the next steps): a 3- or 6-byte memcpy through memory would stall
 * store-to-load forwarding on every pixel (~14x slower for RGB). */
#define STEP(body) \
    Py_ssize_t i = 0; \
    for (; i + 8 <= n; i += bpp) { \
        body(_mm_loadl_epi64((const __m128i *)(src + i)), _mm_loadl_epi64((const __m128i *)(prev + i)), \
             _mm_storel_epi64((__m128i *)(dst + i), out)) \
    } \
    for (; i < n; i += bpp) { \
        body(load_px(src + i, bpp), load_px(prev + i, bpp), store_px(dst + i, out, bpp)) \
    }

/* The loops below are instantiated for each constant bpp (always_inline + a switch), so the
 * memcpy calls of load_px/store_px become plain moves. */
#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

INLINE void sse_sub(u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev, Py_ssize_t n, int bpp)
{
    __m128i a = _mm_setzero_si128();
#define BODY(x, b, store) { (void)(b); a = _mm_add_epi8(a, x); __m128i out = a; store; }
    STEP(BODY)
#undef BODY
}

INLINE void sse_avg(u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev, Py_ssize_t n, int bpp)
{
    const __m128i one = _mm_set1_epi8(1);
    __m128i a = _mm_setzero_si128();
    /* floor((a + b) / 2) = the rounded-up average minus the lost low bit */
#define BODY(x, b_, store) { __m128i b = b_; \
        a = _mm_add_epi8(x, _mm_sub_epi8(_mm_avg_epu8(a, b), _mm_and_si128(_mm_xor_si128(a, b), one))); \
        __m128i out = a; store; }
    STEP(BODY)
#undef BODY
}

static inline __m128i abs16(__m128i x)
{
    return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x));
}

static inline __m128i select128(__m128i mask, __m128i yes, __m128i no)
{
    return _mm_or_si128(_mm_and_si128(mask, yes), _mm_andnot_si128(mask, no));
}

INLINE void sse_paeth(u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev, Py_ssize_t n, int bpp)
{
    const __m128i zero = _mm_setzero_si128();
    __m128i a = zero, c = zero; /* 16-bit lanes: the low bpp of them are the pixel's bytes */
#define BODY(x_, b_, store) { \
        __m128i b = _mm_unpacklo_epi8(b_, zero), x = _mm_unpacklo_epi8(x_, zero); \
        __m128i pa = _mm_sub_epi16(b, c);   /* p - a */ \
        __m128i pb = _mm_sub_epi16(a, c);   /* p - b */ \
        __m128i pc = _mm_add_epi16(pa, pb); /* p - c */ \
        pa = abs16(pa); \
        pb = abs16(pb); \
        pc = abs16(pc); \
        __m128i smallest = _mm_min_epi16(pc, _mm_min_epi16(pa, pb)); \
        __m128i pred = select128(_mm_cmpeq_epi16(pa, smallest), a, \
                                 select128(_mm_cmpeq_epi16(pb, smallest), b, c)); \
        a = _mm_add_epi8(pred, x); /* byte add: a, b, c and x have 0 high bytes, so does a */ \
        c = b; \
        __m128i out = _mm_packus_epi16(a, a); store; }
    STEP(BODY)
#undef BODY
}

#define SSE_CASES(call) \
    switch (bpp) { \
    case 1: call(1); break; case 2: call(2); break; case 3: call(3); break; \
    case 4: call(4); break; case 6: call(6); break; case 8: call(8); break; \
    default: return 0; }

static int sse_row(int filter, u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev,
                   Py_ssize_t n, int bpp)
{
    if (n % bpp) return 0;
    if (filter == 1) {
#define C(k) sse_sub(dst, src, prev, n, k)
        SSE_CASES(C)
#undef C
    } else if (filter == 3) {
#define C(k) sse_avg(dst, src, prev, n, k)
        SSE_CASES(C)
#undef C
    } else if (filter == 4) {
#define C(k) sse_paeth(dst, src, prev, n, k)
        SSE_CASES(C)
#undef C
    } else {
        return 0;
    }
    return 1;
}
#endif

static void unfilter_row(int filter, u8 *restrict dst, const u8 *restrict src, const u8 *restrict prev,
                         Py_ssize_t n, int bpp, int simd)
{
#ifdef GPUTEX_SSE2
    if (simd && sse_row(filter, dst, src, prev, n, bpp)) return;
#else
    (void)simd;
#endif
    switch (filter) {
    case 0: memcpy(dst, src, (size_t)n); break;
    case 1: row_sub(dst, src, n, bpp); break;
    case 2: row_up(dst, src, prev, n); break;
    case 3: row_avg(dst, src, prev, n, bpp); break;
    default: row_paeth(dst, src, prev, n, bpp); break;
    }
}

static void swap_pairs(u8 *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i + 1 < n; i += 2) {
        u8 t = p[i];
        p[i] = p[i + 1];
        p[i + 1] = t;
    }
}

static Py_ssize_t unfilter_all(u8 *buf, Py_ssize_t height, Py_ssize_t stride, int bpp, int swap16,
                               int simd, u8 *row, u8 *zeros)
{
    for (Py_ssize_t y = 0; y < height; y++) {
        const u8 *in = buf + y * (stride + 1);
        int filter = in[0];
        if (filter > 4) return y;
        memcpy(row, in + 1, (size_t)stride);
        u8 *dst = buf + y * stride;
        const u8 *prev = y ? dst - stride : zeros;
        unfilter_row(filter, dst, row, prev, stride, bpp, simd);
        if (swap16 && y) swap_pairs(dst - stride, stride); /* the previous row is no longer needed */
    }
    if (swap16 && height) swap_pairs(buf + (height - 1) * stride, stride);
    return -1;
}

static PyObject *py_unfilter(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "height", "stride", "bpp", "swap16", "simd", NULL};
    Py_buffer view;
    Py_ssize_t height, stride;
    int bpp, swap16, simd = 1;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "w*nnip|p", kwlist, &view, &height, &stride, &bpp,
                                     &swap16, &simd))
        return NULL;
    if (height < 0 || stride <= 0 || bpp < 1 || bpp > 8 || stride % bpp ||
        stride > (PY_SSIZE_T_MAX - 1) / (height ? height : 1) - 1 || view.len < height * (stride + 1)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "unfilter: bad buffer size, height, stride or bpp");
        return NULL;
    }
    u8 *row = malloc((size_t)stride), *zeros = calloc((size_t)stride, 1);
    if (!row || !zeros) {
        free(row);
        free(zeros);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Py_ssize_t bad;
    Py_BEGIN_ALLOW_THREADS
    bad = unfilter_all((u8 *)view.buf, height, stride, bpp, swap16, simd, row, zeros);
    Py_END_ALLOW_THREADS
    free(row);
    free(zeros);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(bad);
}

static PyMethodDef methods[] = {
    {"unfilter", (PyCFunction)(void (*)(void))py_unfilter, METH_VARARGS | METH_KEYWORDS,
     "unfilter(buf, height, stride, bpp, swap16, simd=True) -> -1 or the first row with a bad filter byte"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pngfilter", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pngfilter(void) { return PyModule_Create(&module); }
