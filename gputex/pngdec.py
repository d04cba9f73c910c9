"""Fast exact PNG decoding for the common case: non-interlaced 8/16-bit grey, grey+alpha, RGB, RGBA.

Decoding a large PNG is two steps: inflating the IDAT stream and unfiltering the rows. libpng
(``imagecodecs.png_decode``, gputex's decoder before) inflates with zlib, the bulk of its time.
Measured here (``benchmarks/png_decode.py``, one core, CPU time on a busy 2-core machine) on a
4096^2 RGBA photo written by libpng at zlib level 1 (42 MB, "average" rows): libpng 439 ms,
libspng 438, Pillow 613; its IDAT stream alone inflated by zlib 376 ms, zlib-ng 291, ISA-L 169,
libdeflate 142. So this module inflates the IDAT data in one call to libdeflate
(``imagecodecs.deflate_decode`` with ``out=``: the output size is known from the header, which
is what lets imagecodecs use libdeflate; without ``out`` it falls back to zlib), straight into
one preallocated array, then unfilters the rows in place with a small C routine
(``gputex/_pngfilter.c``, SSE2 on x86-64: ~21 ms for that image), which packs them down over
the filter bytes: one full-size buffer, no second copy. libdeflate's zlib decoder checks the
zlib header and the Adler-32 of the whole stream. That image: 212 ms, 2.1x libpng;
``gputex.decode`` as a whole 2.0-2.2x what it was for 8-bit images (RGBA at zlib 1 and 6,
fpng; RGB, grey), 1.7x for 16-bit RGBA with noisy low bytes (nearly all inflate). The cost: a
PNG cut into many IDAT chunks (libpng writes 8 KB ones) is gathered into one copy of its
compressed data first (libdeflate takes one buffer), so decode's peak memory rises by the
file's size (2.26x the decoded size against 1.63x before, for that image); a file with one
IDAT (fpng's) is not copied.

Anything but a clean, complete stream is left to libpng: :func:`decode` returns None (and the
caller decodes with libpng as before) when the C extension is not built, the image is
interlaced, palette or low-bit, a chunk is one libpng may refuse (an unknown critical chunk, a
PLTE, IDATs that are not consecutive), the stream does not inflate to exactly the image's
size, its Adler-32 is wrong or a row's filter byte is not 0-4. So every file either decodes to
exactly what the PNG specification defines (the same pixels as libpng: tests compare them for
every colour type, depth and filter) or takes libpng's path, errors and leniency included.

One large PNG whose IDAT stream has restart points (gputex's own streaming writer, used for
images over 256 MiB, deflates bands of rows independently, one IDAT each) is inflated on
several threads: :func:`inflate_parallel`, which checks every guess and otherwise leaves the
stream to the serial path.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

try:
    from . import _pngfilter
except ImportError:  # not built (no C compiler at install): libpng decodes these PNGs instead
    _pngfilter = None

__all__ = ["decode", "decode_ahead", "available", "decode_threads", "idat_spans", "idat_stream", "inflate_parallel"]

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def decode_threads() -> int:
    """Threads that inflate one large PNG with restart points: ``GPUTEX_DECODE_THREADS`` as it is
    when the decode runs (a codec worker process sets it to 1), else the cores;
    1 to 16 (1: never in parallel)."""
    from .devflags import int_flag

    n = int_flag("GPUTEX_DECODE_THREADS")
    return max(1, min(16, n if n is not None else os.cpu_count() or 1))


#: Smaller images are inflated on the calling thread.
PARALLEL_MIN_BYTES = 32 << 20
_ACTIVE = [0]  # decodes running in this process (a batch's threads: no threads of our own then)
_ACTIVE_LOCK = threading.Lock()
_SAFE_CRITICAL = {b"IHDR", b"IDAT", b"IEND"}


def available() -> bool:
    """Whether the fast path is built (the ``gputex._pngfilter`` extension imports)."""
    return _pngfilter is not None


def idat_spans(data: bytes) -> list[tuple[int, int]] | None:
    """(offset, length) of each IDAT's data in a PNG whose chunks were already walked and
    CRC-checked (``png.read_header``), or None where its chunk layout is anything libpng might
    treat differently: a critical chunk other than IHDR/IDAT/IEND, or IDATs not consecutive."""
    pos = 8
    spans = []
    ended = False  # the run of IDATs is over
    while pos + 8 <= len(data):
        length, ctype = struct.unpack_from(">I4s", data, pos)
        if ctype == b"IEND":
            break
        if ctype == b"IDAT":
            if ended:
                return None
            spans.append((pos + 8, length))
        else:
            if spans:
                ended = True
            if ctype[:1].isupper() and ctype not in _SAFE_CRITICAL or (ctype == b"IHDR" and pos != 8):
                return None
        pos += 12 + length
    return spans or None


def idat_stream(data: bytes, spans: list[tuple[int, int]] | None = None):
    """The concatenated IDAT data (the zlib stream), or None as for :func:`idat_spans`.

    One IDAT is returned as a view, not copied; several are gathered into one array (numpy's
    large arrays get huge pages: 16 against 28 ms for ``b"".join`` of a 42 MB stream here)."""
    spans = spans or idat_spans(data)
    if spans is None:
        return None
    if len(spans) == 1:
        start, length = spans[0]
        return memoryview(data)[start: start + length]
    import numpy as np

    src = np.frombuffer(data, np.uint8)
    out = np.empty(sum(length for _, length in spans), np.uint8)
    at = i = 0
    while i < len(spans):  # writers cut IDATs of one size: copy each run of them as one 2D array
        start, length = spans[i]
        j = i + 1
        while j < len(spans) and spans[j] == (start + (j - i) * (length + 12), length):
            j += 1
        n = j - i
        rows = src[start: start + n * (length + 12)]
        if rows.size < n * (length + 12):  # the last chunk of the file: no room for a full stride
            rows = src[start: start + length]
            n, j = 1, i + 1
        out[at: at + n * length].reshape(n, length)[:] = rows.reshape(n, length + 12)[:, :length]
        at += n * length
        i = j
    return out


def decode(data: bytes, header, threads: int | None = None) -> np.ndarray | None:
    """Pixels (H, W, C) of a PNG (uint8, or native-order uint16), or None to leave it to libpng.

    ``header`` is ``png.read_header(data)`` (chunks walked, CRCs checked). The returned array
    views one buffer holding the image (plus ``height`` spare bytes at its end). ``threads``
    inflate a large stream in parallel where it has restart points (:func:`inflate_parallel`);
    default :func:`decode_threads`, but 1 while another decode runs in this process (a batch's
    threads, or its worker processes, already keep the cores busy: in a thread of their own
    the segments cost ~25% more CPU than one serial inflate, measured here). Where
    :func:`decode_ahead` began decoding these very bytes (the same object), its result is
    waited for and returned instead (the same pixels: the same call on the same bytes).
    """
    got = _take_ahead(data)
    if got is not None:
        return got[0]
    return _counted(data, header, threads)


def _counted(data: bytes, header, threads: int | None) -> np.ndarray | None:
    with _ACTIVE_LOCK:
        _ACTIVE[0] += 1
    try:
        return _decode(data, header, threads)
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE[0] -= 1


def _decode(data: bytes, header, threads: int | None) -> np.ndarray | None:
    if _pngfilter is None or header.bit_depth not in (8, 16) or header.color_type not in _CHANNELS:
        return None
    if data[26:29] != b"\0\0\0":  # IHDR compression, filter and interlace methods
        return None
    spans = idat_spans(data)
    if spans is None:
        return None
    import imagecodecs
    import numpy as np

    h, w, c = header.height, header.width, _CHANNELS[header.color_type]
    size = header.bit_depth // 8
    bpp = c * size
    stride = w * bpp
    buf = np.empty(h * (stride + 1), np.uint8)
    if threads is None:  # several threads only while no other decode runs in this process
        threads = decode_threads() if _ACTIVE[0] == 1 else 1
    if not (threads > 1 and buf.size >= PARALLEL_MIN_BYTES and inflate_parallel(data, spans, buf, threads)):
        try:  # libdeflate: zlib header and Adler-32 checked
            out = imagecodecs.deflate_decode(idat_stream(data, spans), out=buf)
        except imagecodecs.DeflateError:
            return None
        if len(out) != buf.size:  # too little data (too much raises above)
            return None
    if _pngfilter.unfilter(buf, h, stride, bpp, size == 2 and sys.byteorder == "little") != -1:
        return None  # a filter byte over 4
    return buf[: h * stride].view(np.uint16 if size == 2 else np.uint8).reshape(h, w, c)


_ahead: dict[int, tuple[bytes, threading.Event, list]] = {}  # id(data) -> (data, done, [pixels])
_ahead_lock = threading.Lock()


def decode_ahead(data: bytes, *, max_pixels: int, max_ratio: float) -> Callable[[], None]:
    """Reserve the decode of ``data`` (a whole PNG file's bytes) for a :func:`decode` call that
    will come for this very object, and return the function that does it (on the caller's
    thread, at once: :func:`gputex.inputs.prefetch` runs it right after reading the CLI's one
    input, before the CLI has imported its modules, parsed its options or made its device).

    One 8192² PNG's decode takes ~0.9 s on the H200 host and the run could begin it only
    0.26 s into the process (the CLI's imports and the run's start-up: 0.2 s more than
    ``python -c "import gputex; gputex.decode(...)"``). The header is checked first (CRCs), and
    nothing is decoded past ``max_pixels`` or ``max_ratio`` times the file's size (the defaults
    of ``--max-pixels`` / ``--max-ratio``; the CLI does not decode ahead when the command line
    sets either). :func:`decode` still runs every check of the file as before; only the
    inflate and unfilter are the ones begun here. Errors leave the decode to :func:`decode`."""
    done = threading.Event()
    box: list = []
    with _ahead_lock:
        _ahead.clear()  # one at a time
        _ahead[id(data)] = (data, done, box)

    def run() -> None:
        try:
            from . import png

            header = png.read_header(data)
            w, h = header.width, header.height
            if w * h <= max_pixels and w * h * _CHANNELS.get(header.color_type, 4) * header.bit_depth // 8 \
                    <= max_ratio * len(data):
                box.append(_counted(data, header, None))
        except Exception:  # noqa: BLE001 - decode() meets it itself
            box.clear()
        finally:
            done.set()

    return run


def drop_ahead(data: bytes) -> None:
    """Forget the decode ahead of ``data`` (its file changed: the run reads and decodes it again),
    so its bytes and pixels are not held to the end of the process."""
    with _ahead_lock:
        got = _ahead.get(id(data))
        if got is not None and got[0] is data:
            del _ahead[id(data)]


def _take_ahead(data: bytes) -> tuple | None:
    """(pixels or None,) that :func:`decode_ahead` made of this very object (waited for, once);
    None where it made nothing."""
    with _ahead_lock:
        got = _ahead.get(id(data))
        if got is None or got[0] is not data:
            return None
        del _ahead[id(data)]
    _, done, box = got
    done.wait()
    return (box[0],) if box else None


def inflate_parallel(data: bytes, spans: list[tuple[int, int]], buf, threads: int) -> bool:
    """Inflate the IDAT stream into ``buf`` (exactly its size) on ``threads`` threads, splitting it
    at restart points; False (``buf`` then holds anything) where it has none or any check fails.

    A restart point is an IDAT boundary right after a sync flush's empty stored block (``00 00 ff
    ff``), as gputex's streaming writer (``png.stream_png``) makes them: each band of rows deflated
    on its own, one IDAT each. Such a guess can be wrong (those four bytes can occur inside
    compressed data; a flush may keep back-references into the band before), so each segment is
    inflated alone (libdeflate refuses any reference before its start) followed by a final block
    holding 8 random bytes in fixed Huffman codes: only a segment that ends exactly on a block
    boundary, byte-aligned, with no final block inside, yields those bytes at its end. The last
    segment goes through zlib, which says where its final block ended (the 4 Adler-32 bytes must
    follow it exactly). Segment k lands at k times the first one's size (the writer's bands are
    of equal rows; other sizes fail), the last must end at the image's end, and the Adler-32 of
    the whole output (combined from the segments') must match the stream's. So the result is
    what one serial inflate gives, or False and the serial path runs.
    """
    import threading
    import zlib
    from concurrent.futures import ThreadPoolExecutor

    import imagecodecs
    import numpy as np

    from .png import adler32_combine

    view = memoryview(data)
    cuts = [i for i in range(1, len(spans))
            if spans[i - 1][1] >= 4 and view[sum(spans[i - 1]) - 4: sum(spans[i - 1])] == b"\0\0\xff\xff"]
    if not cuts or spans[0][1] < 2:
        return False
    cmf, flg = data[spans[0][0]], data[spans[0][0] + 1]
    if cmf & 0x0F != 8 or cmf >> 4 > 7 or (cmf * 256 + flg) % 31 or flg & 0x20:
        return False  # not a zlib header libdeflate would take (serial decides)
    bounds = [0, *cuts, len(spans)]
    last = len(bounds) - 2
    marker = os.urandom(8)
    fixed = zlib.compressobj(1, zlib.DEFLATED, -15, 9, zlib.Z_FIXED)
    fin = fixed.compress(marker) + fixed.flush()
    if fin[0] & 7 != 3:  # BFINAL, fixed Huffman codes
        return False
    # Each segment's offset in buf is k * S, S the first segment's size (gputex's writer cuts
    # bands of equal rows); a segment of another size fails the check and the serial path runs.
    first_size: list[int] = []
    first_done = threading.Event()
    failed = threading.Event()
    local = threading.local()  # one scratch buffer per thread, reused: its pages fault once

    def segment(k: int, tail: bytes = b"") -> bytes:
        parts = [view[a: a + n] for a, n in spans[bounds[k]: bounds[k + 1]]]
        if k == 0:
            parts[0] = parts[0][2:]  # the zlib header
        return b"".join([*parts, tail])

    def inflate(k: int):
        if failed.is_set():
            return None
        src = segment(k, b"" if k == last else fin)
        trailer = None
        if k == last:  # zlib says where the final block ends: the 4 Adler-32 bytes must follow
            d = zlib.decompressobj(-15)
            try:
                out = np.frombuffer(d.decompress(src, buf.size + 1), np.uint8)
            except zlib.error:  # e.g. a reference before the segment
                return None
            if not d.eof or len(d.unused_data) != 4 or d.unconsumed_tail:
                return None
            trailer = d.unused_data
        else:
            cap = min(buf.size, 1032 * len(src)) + len(marker)
            scratch = getattr(local, "scratch", None)
            if scratch is None or scratch.size < cap:
                scratch = local.scratch = np.empty(cap, np.uint8)
            try:
                out = imagecodecs.deflate_decode(src, raw=True, out=scratch[:cap])
            except (imagecodecs.DeflateError, ValueError):
                return None
            n = len(out) - len(marker)
            if n < 0 or bytes(out[n:]) != marker:
                return None
            out = out[:n]
        if k == 0:
            first_size.append(out.size)
            first_done.set()
        else:
            first_done.wait()
        if not first_size or failed.is_set():
            return None
        at = k * first_size[0]
        if (k < last and (out.size != first_size[0] or at + out.size > buf.size)
                or (k == last and at + out.size != buf.size)):
            return None
        buf[at: at + out.size] = out
        return out.size, imagecodecs.deflate_adler32(out), trailer  # libdeflate's: 10x zlib's here

    def run(k: int):
        try:
            got = inflate(k)
        except Exception:  # MemoryError (scratch is sized for the worst case, touched only as
            got = None  # used) or anything else: the serial path decides
        if got is None:
            failed.set()
            first_done.set()  # nobody waits for a first segment that failed
        return got

    adler = 1
    with ThreadPoolExecutor(threads, thread_name_prefix="gputex-inflate") as pool:
        results = [f.result() for f in [pool.submit(run, k) for k in range(last + 1)]]
    if failed.is_set() or any(r is None for r in results):
        return False
    for size, part_adler, _ in results:
        adler = adler32_combine(adler, part_adler, size)
    trailer = results[-1][2]
    return trailer is not None and struct.unpack(">I", trailer)[0] == adler
