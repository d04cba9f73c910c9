"""GPU block compression (gputex.bcenc) against CPU encoders from PyPI, measured in the same run.

    python benchmarks/bc.py                        # every format and quality, photos + 4096^2 composite
    python benchmarks/bc.py --composite 1024 --formats bc1 bc4 --qualities normal   # a quick look

Images: scikit-image's photographs (astronaut, chelsea, coffee, rocket, motorcycle, grass,
gravel, brick; grey ones as RGB), each cropped to whole blocks, and a COMPOSITE x COMPOSITE
mosaic of them. For each format and quality, gputex's GPU encode of level 0 (GPU time from
timestamp queries where the adapter has them, the sum of the encode passes; wall time from the
call to the blocks being written, submission and wait included; best of --repeat, after
--warmup seconds of untimed encodes of the same image), and the PSNR
of the blocks decoded by texture2ddecoder (independent of gputex) against the source: RGB for
BC1/BC3/BC7, R for BC4, RG for BC5, the mean of the photos' PSNRs and the composite's own.
texture2ddecoder truncates BC4/BC5's interpolated values to whole codes, where the
specification (and hardware) decode them in float: for BC4/BC5 the GPU rows also print the
PSNR of the specification's float decode (numpy, here: :func:`ramp_exact`), which is what
gputex's ramp encoder fits.

CPU encoders, same images, same run, on all cores (the image split into strips of block rows,
one thread per core; the header prints each library's speed-up on N threads against one, which
shows whether its calls release the GIL; etcpak threads itself and gets the whole image):
bc7enc-py (bc7enc_rdo's rgbcx at its default level 10: BC1, BC3, BC5; it has no BC4 entry),
etcpak (BC1, BC3, BC4, BC5, BC7), quicktex (level 5 defaults: BC1, BC3, BC4, BC5).
A library that is not installed gets "-" with the reason in the header. BC7: bc7enc-py with plain
weights (``m_perceptual = False``, weights 1, 1, 1, 1) at uber level 0 (its default) and 4 (its
slowest).

BC6H: a table of its own after the others, on the same image sets in linear light (x^2.2)
scaled to 0..16 (``bc6h-rgb-ufloat``) and to -2..6 (``bc6h-rgb-float``: blocks crossing zero):
MP/s and the RMS error of the values and of their log2, decoded by the adapter's texture unit
(texture2ddecoder's BC6H decode is 8-bit and clamped to [0, 1]), beside ISPC's BC6H encoder
(``pip install ispc-texcomp``: a binary wheel, unsigned only) at veryfast, basic and veryslow;
``--no-bc6h`` skips it.

Tuning: ``benchmarks/bc_tune.py`` runs variants of a quality's WGSL constants side by side;
``benchmarks/results/bc-h200-*.txt`` holds H200 runs of this script.

Compile cost: before anything else each (format, quality) pipeline, BC6H's two (``bc6h`` ufloat,
``bc6s`` signed; no PSNR table for them: the photos are not HDR) included, is built and run on a 256^2
image from a cold Mesa shader cache (``MESA_SHADER_CACHE_DISABLE=true`` is set for this
process unless --warm-cache): "cold 256^2" is that first call's wall time (compile + first
dispatch), "warm" the same call again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PHOTOS = ["astronaut", "chelsea", "coffee", "rocket", "motorcycle", "grass", "gravel", "brick"]
FORMATS = {"bc1": "bc1-rgba-unorm", "bc3": "bc3-rgba-unorm", "bc4": "bc4-r-unorm", "bc5": "bc5-rg-unorm",
           "bc7": "bc7-rgba-unorm"}
CHANNELS = {"bc1": 3, "bc3": 3, "bc4": 1, "bc5": 2, "bc7": 3}
#: encoders that thread internally: given the whole image (strips on threads oversubscribe:
#: etcpak measured 0.2x on 2 threads here)
WHOLE = {"etcpak"}


def photos(names):
    import numpy as np
    from skimage import data

    out = {}
    for name in names:
        a = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
        if a.ndim == 2:
            a = np.stack([a] * 3, -1)
        a = a[:, :, :3]
        h, w = a.shape[0] // 4 * 4, a.shape[1] // 4 * 4
        rgba = np.full((h, w, 4), 255, np.uint8)
        rgba[:, :, :3] = a[:h, :w]
        out[name] = rgba
    return out


def composite(images, size: int):
    """A size x size mosaic: the photos side by side in rows, repeated until it is full."""
    import numpy as np

    out = np.empty((size, size, 4), np.uint8)
    pics = list(images.values())
    y, i = 0, 0
    while y < size:
        row_h = min(p.shape[0] for p in pics)
        x = 0
        while x < size:
            p = pics[i % len(pics)]
            i += 1
            w = min(p.shape[1], size - x)
            hh = min(row_h, size - y)
            out[y: y + hh, x: x + w] = p[:hh, :w]
            x += w
        y += row_h
    return out


def psnr(fmt: str, blocks: bytes, src) -> float:
    import numpy as np
    import texture2ddecoder as t2d

    h, w = src.shape[:2]
    fn = {"bc1": t2d.decode_bc1, "bc3": t2d.decode_bc3, "bc4": t2d.decode_bc4, "bc5": t2d.decode_bc5,
          "bc7": t2d.decode_bc7}[fmt]
    dec = np.frombuffer(fn(bytes(blocks), w, h), np.uint8).reshape(h, w, 4)[:, :, [2, 1, 0, 3]]
    k = CHANNELS[fmt]
    mse = np.mean((dec[:, :, :k].astype(np.float64) - src[:, :, :k]) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def ramp_exact(blocks: bytes, w: int, h: int, step: int = 8):
    """BC4 blocks (every ``step`` bytes) decoded by the specification's float arithmetic (what
    hardware returns; texture2ddecoder truncates the interpolated values to whole codes),
    numpy only: an (h, w) float64 array in codes 0..255."""
    import numpy as np

    b = np.frombuffer(bytes(blocks), np.uint8).reshape(-1, step)[:, :8].astype(np.int64)
    e0, e1 = b[:, 0:1].astype(np.float64), b[:, 1:2].astype(np.float64)
    bits = sum(b[:, 2 + i] << (8 * i) for i in range(6))
    idx = np.stack([(bits >> (3 * t)) & 7 for t in range(16)], 1)
    k = idx.astype(np.float64)
    eight = ((8 - k) * e0 + (k - 1) * e1) / 7
    six = np.where(idx == 6, 0.0, np.where(idx == 7, 255.0, ((6 - k) * e0 + (k - 1) * e1) / 5))
    v = np.where(e0 > e1, eight, six)
    v = np.where(idx == 0, e0, np.where(idx == 1, e1, v))
    return v.reshape(h // 4, w // 4, 4, 4).transpose(0, 2, 1, 3).reshape(h, w)


def psnr_exact(fmt: str, blocks: bytes, src) -> float:
    """BC4 (R) / BC5 (RG) PSNR with the specification's float palette (see :func:`ramp_exact`)."""
    import numpy as np

    h, w = src.shape[:2]
    if fmt == "bc4":
        chans = [ramp_exact(blocks, w, h)]
    else:
        raw = bytes(blocks)
        chans = [ramp_exact(raw, w, h, 16), ramp_exact(bytes(np.frombuffer(raw, np.uint8).reshape(-1, 16)[:, 8:]), w, h)]
    mse = np.mean([(c - src[:, :, i].astype(np.float64)) ** 2 for i, c in enumerate(chans)])
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


# -- CPU encoders: fn(rgba strip) -> blocks -------------------------------------------------

def cpu_encoders():
    """{name: (reason it is missing or None, {fmt: encode(rgba) -> bytes})}"""
    encs = {}
    try:
        import bc7enc

        def bc7(fn, size):
            return lambda a: bc7enc._pack_dds_single_level(a.tobytes(), a.shape[1], a.shape[0], fn, size)

        def bc7_plain(uber: int):
            """BC7 with plain RGB(A) weights 1,1,1,1 (m_perceptual off) at uber level ``uber``."""
            import ctypes

            def run(a):
                p = bc7enc.bc7enc_compress_block_params_init()
                p.m_perceptual = False
                p.m_weights = (ctypes.c_uint * 4)(1, 1, 1, 1)
                p.m_uber_level = uber
                return bc7enc._pack_dds_single_level(a.tobytes(), a.shape[1], a.shape[0], bc7enc._pack_dds_bc7,
                                                     16, params=p)
            return run

        encs["bc7enc-py"] = (None, {"bc1": bc7(bc7enc._pack_dds_bc1, 8), "bc3": bc7(bc7enc._pack_dds_bc3, 16),
                                    "bc5": bc7(bc7enc._pack_dds_bc5, 16), "bc7": bc7_plain(0)})
        encs["bc7enc-py uber4"] = (None, {"bc7": bc7_plain(4)})
    except Exception as e:  # noqa: BLE001 - reported in the header
        encs["bc7enc-py"] = (f"{type(e).__name__}: {e}", {})
    try:
        import etcpak

        def etc(fn):
            return lambda a: fn(a.tobytes(), a.shape[1], a.shape[0])

        encs["etcpak"] = (None, {"bc1": etc(etcpak.compress_bc1), "bc3": etc(etcpak.compress_bc3),
                                 "bc4": etc(etcpak.compress_bc4), "bc5": etc(etcpak.compress_bc5),
                                 "bc7": etc(etcpak.compress_bc7)})
    except Exception as e:  # noqa: BLE001
        encs["etcpak"] = (f"{type(e).__name__}: {e}", {})
    try:
        import quicktex
        from quicktex.s3tc.bc1 import BC1Encoder
        from quicktex.s3tc.bc3 import BC3Encoder
        from quicktex.s3tc.bc4 import BC4Encoder
        from quicktex.s3tc.bc5 import BC5Encoder

        def qt(make):
            def run(a):
                raw = quicktex.RawTexture.frombytes(a.tobytes(), a.shape[1], a.shape[0])
                return make().encode(raw).tobytes()
            return run

        encs["quicktex"] = (None, {"bc1": qt(lambda: BC1Encoder(5)), "bc3": qt(lambda: BC3Encoder(5)),
                                   "bc4": qt(lambda: BC4Encoder(0)), "bc5": qt(lambda: BC5Encoder(0, 1))})
    except Exception as e:  # noqa: BLE001
        encs["quicktex"] = (f"{type(e).__name__}: {e}", {})
    return encs


def run_strips(fn, a, pool, threads: int) -> bytes:
    """Encode ``a`` in ``threads`` strips of whole block rows, concatenated in order."""
    rows = a.shape[0] // 4
    per = -(-rows // threads)
    parts = [a[i * 4: min(rows, i + per) * 4] for i in range(0, rows, per)]
    return b"".join(pool.map(fn, parts))


def timed(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


# -- GPU -----------------------------------------------------------------------------------

def gpu_encode(session, rgba, fmt_name: str, quality: str, repeat: int, warmup: float = 0.0):
    """(gpu seconds or None, wall seconds, level-0 blocks); first ``warmup`` seconds of untimed
    encodes of the same image (none at 0)"""
    import wgpu

    import gputex
    from gputex.bcenc import encode_levels
    from gputex.capture import capture_texture_file

    if fmt_name.startswith("bc6h"):  # linear float data in rgba16float
        tex = gputex.upload(session, gputex.from_array(rgba), "rgba16float", color_space="linear",
                            usage=wgpu.TextureUsage.TEXTURE_BINDING)
    else:
        tex = gputex.upload(session, gputex.from_array(rgba), "rgba8unorm", color_space="srgb",
                            usage=wgpu.TextureUsage.TEXTURE_BINDING)
    try:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < warmup:
            encode_levels(tex, fmt_name, quality, measure=True)[0].destroy()
        best_gpu, best_wall, blocks = None, float("inf"), None
        for _ in range(repeat):
            t0 = time.perf_counter()
            enc, rep = encode_levels(tex, fmt_name, quality, measure=True)
            wall = time.perf_counter() - t0
            best_wall = min(best_wall, wall)
            if rep.pass_ns:
                g = sum(rep.pass_ns) / 1e9
                best_gpu = g if best_gpu is None else min(best_gpu, g)
            if blocks is None:
                blocks = bytes(capture_texture_file(enc).levels[0])
            enc.destroy()
    finally:
        tex.destroy()
    return best_gpu, best_wall, blocks


def compile_times(session, formats, qualities):
    import numpy as np

    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (256, 256, 4), dtype=np.uint8)
    hdr = (rng.random((256, 256, 4)) * 16).astype(np.float32)
    rows = []
    for f, name in [(f, FORMATS[f]) for f in formats] + [("bc6h", "bc6h-rgb-ufloat"), ("bc6s", "bc6h-rgb-float")]:
        for q in qualities:
            src = hdr if name.startswith("bc6h") else img
            _, cold, _ = gpu_encode(session, src, name, q, 1)
            _, warm, _ = gpu_encode(session, src, name, q, 1)
            rows.append((f, q, cold, warm))
    return rows


# -- BC6H ---------------------------------------------------------------------------------

def hdr_images(images):
    """BC6H inputs: each photo in linear light (x^2.2) scaled to 0..16 for ``bc6h-rgb-ufloat``
    and to -2..6 (x 8 - 2: blocks crossing zero) for ``bc6h-rgb-float``, RGBA float32."""
    import numpy as np

    lin = {n: (a.astype(np.float32) / 255.0) ** 2.2 for n, a in images.items()}
    for a in lin.values():
        a[:, :, 3] = 1.0
    return ({n: a * np.float32(16) for n, a in lin.items()},
            {n: a * np.float32(8) - np.float32(2) for n, a in lin.items()})


def bc6h_errors(src, dec) -> tuple[float, float]:
    """(RMS error of the RGB values, RMS error of their log2: relative, as HDR is viewed)."""
    import numpy as np

    a = src[:, :, :3].astype(np.float16).astype(np.float64)  # as uploaded (rgba16float)
    b = dec[:, :, :3].astype(np.float64)
    lg = np.log2(np.abs(b) + 2.0 ** -14) - np.log2(np.abs(a) + 2.0 ** -14)
    return float(np.sqrt(np.mean((a - b) ** 2))), float(np.sqrt(np.mean(lg ** 2)))


def bc6h_decode(session, tf, blocks: bytes):
    """Level-0 ``blocks`` of the texture file ``tf`` decoded by the adapter's texture unit
    (lavapipe: Mesa's BPTC decoder; texture2ddecoder's BC6H decode is 8-bit and clamped, so it
    cannot judge HDR): float RGBA."""
    import dataclasses

    import wgpu

    import gputex
    from gputex.unblock import decode_blocks
    from gputex.upload import upload_texture_file

    tex = upload_texture_file(session, dataclasses.replace(tf, levels=[blocks]),
                              usage=wgpu.TextureUsage.TEXTURE_BINDING)
    try:
        dec = decode_blocks(tex, mode="sampler")
        try:
            return gputex.capture(dec)
        finally:
            dec.destroy()
    finally:
        tex.destroy()


def bc6h_table(session, sets, qualities, repeat: int, pool, threads: int, cpu: bool) -> None:
    """GPU BC6H against ISPC's (ispc-texcomp, unsigned only: its BC6H encoder has no signed
    mode) on :func:`hdr_images` of each image set: MP/s (GPU: timestamps where the adapter has
    them, else wall) and the errors of the adapter's decode (means over the set's images)."""
    import numpy as np
    import wgpu

    import gputex
    from gputex.bcenc import encode_blocks
    from gputex.capture import capture_texture_file

    try:
        import ispc_texcomp as ispc
        why = "--no-cpu"
    except ImportError as e:
        ispc, why = None, f"{type(e).__name__}: {e}; pip install ispc-texcomp"
    print(f"\nBC6H (RMS of the values and of their log2, decoded by {session.name}'s texture unit)"
          + ("" if ispc and cpu else f"; ispc-texcomp not run ({why})"))
    print(f"{'format':16s} {'images':16s} {'encoder':22s} {'MP/s':>9s} {'RMS':>8s} {'log2 RMS':>9s}")
    work = [(fmt, set_name, hdr_images(images)[i]) for set_name, images in sets
            for i, fmt in enumerate(("bc6h-rgb-ufloat", "bc6h-rgb-float"))]
    for fmt, set_name, imgs in sorted(work, key=lambda w: w[0], reverse=True):

        def row(name, mp, secs, errs, fmt=fmt, set_name=set_name):
            print(f"{fmt:16s} {set_name:16s} {name:22s} {mp / secs:9.1f} {np.mean([e[0] for e in errs]):8.4f} "
                  f"{np.mean([e[1] for e in errs]):9.4f}", flush=True)

        mp = sum(a.shape[0] * a.shape[1] for a in imgs.values()) / 1e6
        files = {}  # a texture file of each image's size and format (ISPC's blocks go in it)
        for n, a in imgs.items():
            tex = gputex.upload(session, gputex.from_array(a), "rgba16float", usage=wgpu.TextureUsage.TEXTURE_BINDING)
            enc = encode_blocks(tex, fmt, "fast")
            files[n] = capture_texture_file(enc)
            enc.destroy()
            tex.destroy()
        for q in qualities:
            secs, errs = 0.0, []
            for n, a in imgs.items():
                g, w, blocks = gpu_encode(session, a, fmt, q, repeat)
                secs += g if g is not None else w
                errs.append(bc6h_errors(a, bc6h_decode(session, files[n], blocks)))
            row(f"gputex {q}", mp, secs, errs)
        if ispc is None or not cpu or fmt != "bc6h-rgb-ufloat":
            continue
        for prof in ("veryfast", "basic", "veryslow"):
            settings = ispc.BC6HEncSettings.from_profile(prof)

            def enc_ispc(a, settings=settings):
                h = np.ascontiguousarray(a[:, :, :4].astype(np.float16))
                return ispc.compress_blocks_bc6h(ispc.RGBASurface(h.tobytes(), a.shape[1], a.shape[0],
                                                                  a.shape[1] * 8), settings)
            secs, errs = 0.0, []
            for n, a in imgs.items():
                t, blocks = timed(lambda a=a: run_strips(enc_ispc, a, pool, threads), repeat)
                secs += t
                errs.append(bc6h_errors(a, bc6h_decode(session, files[n], blocks)))
            row(f"ispc-texcomp {prof}", mp, secs, errs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", nargs="+", default=list(FORMATS), choices=list(FORMATS))
    ap.add_argument("--qualities", nargs="+", default=["fast", "normal", "best"])
    ap.add_argument("--photos", nargs="+", default=PHOTOS)
    ap.add_argument("--composite", type=int, default=4096, help="mosaic size (0: none)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=0.2,
                    help="seconds of untimed encodes of each image before its timed ones (0: none; "
                         "H200 timings of one pipeline varied up to 5x between runs without it)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="CPU encoders' threads")
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--no-bc6h", action="store_true", help="skip the BC6H table")
    ap.add_argument("--warm-cache", action="store_true", help="keep Mesa's shader cache")
    args = ap.parse_args()
    if not args.warm_cache:
        os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"

    import numpy as np

    import gputex

    session = gputex.Session()
    print(f"adapter: {session.name}; timestamps: {session.has_feature('timestamp-query')}; "
          f"CPU threads: {args.threads} of {os.cpu_count()} cores")
    print("\ncompile + first run on 256^2 (cold shader cache" + (" kept" if args.warm_cache else "") + "), then warm:")
    for f, q, cold, warm in compile_times(session, args.formats, args.qualities):
        print(f"  {f:4s} {q:6s} cold {cold:7.2f} s   warm {warm:7.3f} s")

    images = photos(args.photos)
    sets = [("photos", images)]
    if args.composite:
        sets.append((f"composite {args.composite}^2", {"composite": composite(images, args.composite)}))
    encs = {} if args.no_cpu else cpu_encoders()
    for name, (why, _) in encs.items():
        if why:
            print(f"{name}: not available ({why})")
    pool = ThreadPoolExecutor(args.threads)
    cpu_cache: dict = {}

    def cpu(name: str, f: str, set_name: str, imgs: dict):
        key = (name, f, set_name)
        if key not in cpu_cache:
            fn = encs[name][1].get(f)
            if fn is None:
                cpu_cache[key] = None
            else:
                secs, ps = 0.0, []
                for a in imgs.values():
                    t, blocks = timed((lambda: fn(a)) if name in WHOLE else
                                      (lambda: run_strips(fn, a, pool, args.threads)), args.repeat)
                    secs += t
                    ps.append(psnr(f, blocks, a))
                mp = sum(a.shape[0] * a.shape[1] for a in imgs.values()) / 1e6
                cpu_cache[key] = (mp / secs, float(np.mean(ps)))
        return cpu_cache[key]

    names = [n for n, (why, _) in encs.items() if not why]
    first = next(iter(images.values()))
    for n in names:  # does the library release the GIL? (N threads against one, same strips)
        f, fn = next(iter(encs[n][1].items()))
        one, _ = timed(lambda: run_strips(fn, first, ThreadPoolExecutor(1), args.threads), args.repeat)
        many, _ = timed(lambda: run_strips(fn, first, pool, args.threads), args.repeat)
        print(f"{n}: {f} in {args.threads} strips on {args.threads} threads {one / many:.2f}x one thread"
              + (" (so it runs on the whole image: it threads itself)" if n in WHOLE else ""))
    head = f"{'format':6s} {'quality':7s} {'images':16s} {'GPU MP/s':>9s} {'wall MP/s':>9s} {'PSNR':>6s}"
    for n in names:
        head += f" | {n + ' MP/s':>16s} {'PSNR':>6s}"
    print("\n" + head)
    print("-" * len(head))
    for f in args.formats:
        for q in args.qualities:
            for set_name, imgs in sets:
                gsecs, wsecs, ps, pe, have_gpu = 0.0, 0.0, [], [], True
                for a in imgs.values():
                    g, w, blocks = gpu_encode(session, a, FORMATS[f], q, args.repeat, args.warmup)
                    if g is None:
                        have_gpu = False
                    else:
                        gsecs += g
                    wsecs += w
                    ps.append(psnr(f, blocks, a))
                    if f in ("bc4", "bc5"):
                        pe.append(psnr_exact(f, blocks, a))
                mp = sum(a.shape[0] * a.shape[1] for a in imgs.values()) / 1e6
                line = (f"{f:6s} {q:7s} {set_name:16s} {(f'{mp / gsecs:9.1f}' if have_gpu else '        -')} "
                        f"{mp / wsecs:9.1f} {np.mean(ps):6.2f}")
                for n in names:
                    r = cpu(n, f, set_name, imgs)
                    line += f" | {'-':>16s} {'-':>6s}" if r is None else f" | {r[0]:16.1f} {r[1]:6.2f}"
                if pe:
                    line += f" | spec float decode {np.mean(pe):6.2f}"
                print(line, flush=True)
    if not args.no_bc6h:
        bc6h_table(session, sets, args.qualities, args.repeat, pool, args.threads, not args.no_cpu)
    pool.shutdown()


if __name__ == "__main__":
    main()
