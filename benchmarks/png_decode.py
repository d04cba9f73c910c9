"""PNG decode speed on one core: gputex's fast path against libpng, libspng and Pillow, same run.

    python benchmarks/png_decode.py [--size 4096] [--repeat 5] [--cpu N] [--quick]

Builds its own photo-like images (``benchmarks/batch.py``'s ``photo()``; 16-bit ones get random
low bytes) and writes them as: 8-bit RGBA at zlib levels 1 and 6 (libpng's writer, its own
filter choice), 8-bit RGBA by fpng (gputex's default PNG writer), 8-bit RGBA by gputex's
streaming writer (sync-flushed bands, "up" rows), 8-bit RGB, grey+alpha and grey, 16-bit RGBA
and grey (all zlib level 1). For each it times, interleaved, best of ``--repeat``, pinned to one
CPU:

- ``gputex``: ``png.read_header`` (chunk walk, every CRC) + ``pngdec.decode`` (what
  ``gputex.decode`` now runs for these files);
- ``libpng``: ``imagecodecs.png_decode`` (what it ran before), ``spng``: ``imagecodecs.spng_decode``,
  ``Pillow``: ``numpy.asarray(Image.open(...))`` (16-bit RGB/RGBA come out as 8-bit there);
- ``decode() now`` / ``decode() before``: the whole ``gputex.decode(path)`` with the fast path on,
  and off (libpng, as before this change).

It prints ms and MB/s of decoded pixels (wall time, and CPU time: read that one on a busy
machine), and gputex's speed as a ratio over each; it checks that gputex's pixels equal the image
and libpng's. Then, on all CPUs, the streamed file inflated on 1, 2, 4... threads (its restart
points). Then, on the first image, the two steps alone: inflating its IDAT stream with zlib,
zlib-ng, ISA-L (if ``isal`` is installed) and libdeflate, and the unfilter.
``--quick`` uses 1024^2 images and 2 repeats (a smoke run).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import imagecodecs  # noqa: E402
import numpy as np  # noqa: E402
from batch import photo  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

import gputex  # noqa: E402
from gputex import png, pngdec  # noqa: E402


def corpus(size: int) -> list[tuple[str, bytes, np.ndarray]]:
    import fpng

    a8 = photo(size, size, 3)
    rng = np.random.default_rng(5)
    a16 = a8.astype(np.uint16) * 256 + rng.integers(0, 256, a8.shape, np.uint16)
    stream = b"".join(bytes(p) for p in png.stream_png(a8, [], 1, 1)())
    return [
        ("RGBA8 zlib 1", imagecodecs.png_encode(a8, level=1), a8),
        ("RGBA8 zlib 6", imagecodecs.png_encode(a8, level=6), a8),
        ("RGBA8 fpng", fpng.from_ndarray(a8), a8),
        ("RGBA8 gputex stream", stream, a8),
        ("RGB8 zlib 1", imagecodecs.png_encode(a8[:, :, :3].copy(), level=1), a8[:, :, :3]),
        ("GA8 zlib 1", imagecodecs.png_encode(a8[:, :, 1:3].copy(), level=1), a8[:, :, 1:3]),
        ("grey8 zlib 1", imagecodecs.png_encode(a8[:, :, 0].copy(), level=1), a8[:, :, :1]),
        ("RGBA16 zlib 1", imagecodecs.png_encode(a16, level=1), a16),
        ("grey16 zlib 1", imagecodecs.png_encode(a16[:, :, 0].copy(), level=1), a16[:, :, :1]),
    ]


def best_of(funcs: dict, repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall time and best CPU time (s) of each function, run round-robin so drift hits
    them all alike. CPU time (this process) is what to read on a busy machine."""
    wall = {k: float("inf") if f else float("nan") for k, f in funcs.items()}
    cpu = dict(wall)
    for _ in range(repeat):
        for k, f in funcs.items():
            if f is None:
                continue
            t, c = time.perf_counter(), time.process_time()
            f()
            wall[k] = min(wall[k], time.perf_counter() - t)
            cpu[k] = min(cpu[k], time.process_time() - c)
    return wall, cpu


def gputex_fast(data: bytes, threads: int = 1) -> np.ndarray:
    a = pngdec.decode(data, png.read_header(data), threads=threads)
    assert a is not None, "fast path declined a clean file"
    return a


def decode_before(path: str) -> np.ndarray:
    saved, pngdec._pngfilter = pngdec._pngfilter, None
    try:
        return gputex.decode(path).pixels
    finally:
        pngdec._pngfilter = saved


def peak_traced(f) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last one allowed)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.size, args.repeat = 1024, 2
    if not pngdec.available():
        sys.exit("gputex._pngfilter is not built: pip install -e . (or python setup.py build_ext --inplace)")
    allowed = os.sched_getaffinity(0)
    cpu = args.cpu if args.cpu is not None else max(allowed)
    os.sched_setaffinity(0, {cpu})
    threads = pngdec.decode_threads()
    os.environ["GPUTEX_DECODE_THREADS"] = "1"  # one core: decode() inflates on one thread
    print(f"one core (CPU {cpu}), {args.size}^2, best of {args.repeat}; imagecodecs {imagecodecs.__version__}, "
          f"Pillow {PILImage.__version__}, numpy {np.__version__}")
    files = corpus(args.size)
    tmp = tempfile.mkdtemp(prefix="gputex-pngdec-")
    cols = ["gputex", "libpng", "spng", "Pillow", "decode() now", "decode() before"]
    rows = []
    for name, data, want in files:
        path = os.path.join(tmp, "img.png")
        with open(path, "wb") as f:
            f.write(data)
        got = gputex_fast(data)
        same = np.array_equal(got, want) and np.array_equal(got, imagecodecs.png_decode(data).reshape(got.shape))
        same = same and np.array_equal(gputex.decode(path).pixels, want) and np.array_equal(decode_before(path), want)
        try:
            imagecodecs.spng_decode(data)
            spng = lambda: imagecodecs.spng_decode(data)  # noqa: E731
        except imagecodecs.SpngError:  # imagecodecs' libspng wrapper refuses grey+alpha
            spng = None
        wall, cpu = best_of({
            "gputex": lambda: gputex_fast(data),
            "libpng": lambda: imagecodecs.png_decode(data),
            "spng": spng,
            "Pillow": lambda: np.asarray(PILImage.open(io.BytesIO(data))),
        }, args.repeat)
        # the whole decode(), now and before, timed as a pair of their own (in the round above,
        # this busy machine gave them run-to-run swings of 1.4-2.2x)
        pair = best_of({"decode() now": lambda: gputex.decode(path),
                        "decode() before": lambda: decode_before(path)}, args.repeat)
        wall.update(pair[0])
        cpu.update(pair[1])
        mem = [peak_traced(lambda: gputex.decode(path)), peak_traced(lambda: decode_before(path))]
        rows.append((name, want.nbytes / 1e6, wall, cpu, same, [m / want.nbytes for m in mem]))
    for label, which in (("wall time", 2), ("CPU time of this process", 3)):
        print(f"\n{label}: ms and MB/s of decoded pixels; gputex's speed as a ratio over the others")
        print(f"{'file':20s} {'MB':>6s} " + " ".join(f"{c:>16s}" for c in cols) + "   over: "
              + " ".join(f"{c:>7s}" for c in cols[1:4]) + "  decode() now/before")
        for row in rows:
            name, mb, t, same = row[0], row[1], row[which], row[4]
            cells = " ".join(f"{t[c] * 1e3:7.0f}ms {mb / t[c]:5.0f}/s" for c in cols)
            ratios = " ".join(f"{t[c] / t['gputex']:6.2f}x" for c in cols[1:4])
            print(f"{name:20s} {mb:6.1f} {cells}         {ratios}  {t['decode() before'] / t['decode() now']:6.2f}x"
                  + ("" if same else "   PIXELS DIFFER"))
    print("\npeak memory of decode(), numpy and Python allocations (tracemalloc), over the decoded size: "
          + ", ".join(f"{r[0]} {r[5][0]:.2f} now, {r[5][1]:.2f} before" for r in rows))
    print("  (pixels: gputex's equal the image written, libpng's and decode()'s before, for every file"
          + ("" if all(r[4] for r in rows) else ": NOT ALL, see PIXELS DIFFER") + "; file sizes: "
          + ", ".join(f"{n} {len(d) / 1e6:.1f} MB" for n, d, _ in files[:4]) + ")")

    os.sched_setaffinity(0, allowed)
    name, data, want = files[3]
    counts = sorted({1, 2, 4, threads, len(allowed)} & set(range(1, len(allowed) + 1)))
    wall, cpu = best_of({n: (lambda n=n: gputex_fast(data, n)) for n in counts}, args.repeat)
    print(f"\n{name} ({data.count(b'IDAT')} IDATs: a restart point between each two), all {len(allowed)} CPUs, "
          f"the inflate on N threads (decode's default {threads}, GPUTEX_DECODE_THREADS): wall time")
    for n in counts:
        print(f"  {n:2d} threads {wall[n] * 1e3:7.1f} ms  {want.nbytes / 1e6 / wall[n]:6.0f} MB/s  "
              f"{wall[1] / wall[n]:5.2f}x one thread")

    name, data, want = files[0]
    stream = bytes(pngdec.idat_stream(data))
    h, w, c = want.shape
    buf = np.empty(h * (w * c + 1), np.uint8)
    funcs = {
        "zlib": lambda: zlib.decompress(stream),
        "zlib-ng": lambda: imagecodecs.zlibng_decode(stream),
        "libdeflate": lambda: imagecodecs.deflate_decode(stream, out=buf),
    }
    try:
        from isal import isal_zlib

        funcs["ISA-L"] = lambda: isal_zlib.decompress(stream)
    except ImportError:
        pass
    filtered = zlib.decompress(stream)
    hist = np.bincount(np.frombuffer(filtered, np.uint8)[:: w * c + 1], minlength=5)

    def unfilter():
        buf[:] = np.frombuffer(filtered, np.uint8)
        pngdec._pngfilter.unfilter(buf, h, w * c, c, False)

    funcs["copy (for the next)"] = lambda: buf.__setitem__(slice(None), np.frombuffer(filtered, np.uint8))
    funcs["unfilter (+ copy)"] = unfilter
    wall, cpu = best_of(funcs, args.repeat)
    print(f"\n{name}: the steps alone ({len(stream) / 1e6:.1f} MB of IDAT data; rows by filter "
          f"none/sub/up/average/paeth: {'/'.join(map(str, hist))}); wall and CPU time, MB/s of output")
    for k in funcs:
        print(f"  {k:20s} {wall[k] * 1e3:7.1f} ms {want.nbytes / 1e6 / wall[k]:6.0f} MB/s   "
              f"CPU {cpu[k] * 1e3:7.1f} ms {want.nbytes / 1e6 / cpu[k]:6.0f} MB/s")


if __name__ == "__main__":
    main()
