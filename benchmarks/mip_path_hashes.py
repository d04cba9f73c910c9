"""SHA-256 of every mip level over the paths ``benchmarks/mips.py --hashes`` does not reach, to
prove a refactor byte-identical (run before and after, compare the two files):

    python benchmarks/mip_path_hashes.py OUT.json [--against BEFORE.json]

Formats of every encoding kind x box/kaiser/lanczos x precision exact/fast x compute/render path x
float64 on/off (the developer overrides GPUTEX_MIPS_PATH / GPUTEX_MIPS_F64, so the same script runs
on code from before those became parameters) x 61x37 and 64x32, plus alpha coverage, normal maps,
wrap modes and the GPU resize. Inputs are seeded from the case (zlib.crc32), not the run.
"""
import hashlib
import inspect
import json
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import wgpu  # noqa: E402

import gputex  # noqa: E402

FORMATS = [("rgba8unorm-srgb", 4, 8), ("rgba8unorm", 4, 8), ("bgra8unorm", 4, 8), ("r8unorm", 1, 8),
           ("rg8unorm", 2, 8), ("rgb10a2unorm", 4, 8), ("rgba16unorm", 4, 16), ("rgba16float", 4, 0),
           ("rg16float", 2, 0), ("rgba32float", 4, 0), ("r32float", 1, 0)]  # bits 0: float data
EXTRA = [("rgba8unorm", 4, 8, "box", "fast", "compute", "1", 61, 37, {"alpha_coverage": 0.5}),
         ("rgba8unorm", 4, 8, "kaiser", "fast", "compute", "1", 40, 30, {"alpha_coverage": 0.5}),
         ("rgba8unorm", 4, 8, "box", "fast", "compute", "1", 61, 37, {"normal_map": True}),
         ("rg8unorm", 2, 8, "lanczos", "fast", "compute", "1", 33, 20, {"normal_map": True, "wrap": "repeat"}),
         ("rgba8unorm", 4, 8, "kaiser", "exact", "compute", "1", 33, 20, {"wrap": "mirror", "alpha": "straight"})]


def image(channels: int, bits: int, w: int, h: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if not bits:
        a = rng.random((h, w, channels), np.float32) * 2
        if channels > 1:
            a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, rng.random((h, w)))
        return a
    a = rng.integers(0, 1 << bits, (h, w, channels), np.uint8 if bits == 8 else np.uint16)
    if channels > 1:
        a[..., -1] = np.where(rng.random((h, w)) < 0.4, 0, a[..., -1])
    return a


def chains(gpu) -> dict:
    out = {}
    cases = [(fmt, ch, bits, filt, prec, path, f64, w, h, {}) for fmt, ch, bits in FORMATS
             for filt in ("box", "kaiser", "lanczos") for prec in ("exact", "fast") for path in ("compute", "render")
             for f64 in ("1", "0") for w, h in ((61, 37), (64, 32))] + EXTRA
    for case in cases:
        fmt, ch, bits, filt, prec, path, f64, w, h, kw = case
        os.environ["GPUTEX_MIPS_PATH"], os.environ["GPUTEX_MIPS_F64"] = path, f64
        a = image(ch, bits, w, h, zlib.crc32(f"{fmt} {w} {h}".encode()))
        space = "linear" if kw.get("normal_map") else "srgb"
        tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, filter=filt, precision=prec, **kw)
        digest = hashlib.sha256()
        for lv in range(1, tex.levels):
            digest.update(gputex.capture_bytes(tex, lv).tobytes())
        tex.destroy()
        out[repr(case[:9] + (sorted(kw.items()),))] = digest.hexdigest()
    return out


def resizes(gpu) -> dict:
    from gputex.transform import resize_texture

    out = {}
    os.environ.pop("GPUTEX_MIPS_PATH", None)
    for fmt, ch, bits in [("rgba8unorm-srgb", 4, 8), ("rgba16unorm", 4, 16), ("rgba32float", 4, 0), ("r8unorm", 1, 8)]:
        for filt in ("box", "kaiser", "lanczos"):
            for f64 in ("1", "0"):
                os.environ["GPUTEX_MIPS_F64"] = f64
                src = gputex.upload(gpu, gputex.from_array(image(ch, bits, 50, 41, 7), "srgb"), fmt,
                                    usage=wgpu.TextureUsage.TEXTURE_BINDING)
                kw = ({"precision": "float32"} if f64 == "0"
                      and "precision" in inspect.signature(resize_texture).parameters else {})
                r = resize_texture(src, 23, 17, filter=filt, **kw)
                out[f"resize {fmt} {filt} {f64}"] = hashlib.sha256(gputex.capture_bytes(r, 0).tobytes()).hexdigest()
                r.destroy()
                src.destroy()
    return out


def main() -> None:
    gpu = gputex.Session()
    try:
        out = {**chains(gpu), **resizes(gpu)}
    finally:
        os.environ.pop("GPUTEX_MIPS_PATH", None)
        os.environ.pop("GPUTEX_MIPS_F64", None)
    print(len(out), "cases ->", sys.argv[1])
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    if len(sys.argv) > 3 and sys.argv[2] == "--against":
        with open(sys.argv[3]) as f:
            other = json.load(f)
        differ = sorted(k for k in out if other.get(k) != out[k])
        print(f"against {sys.argv[3]}: {len(out) - len(differ)} identical, {len(differ)} differ or missing")
        for k in differ:
            print("  differs:", k)


if __name__ == "__main__":
    main()
