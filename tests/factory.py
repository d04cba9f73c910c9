"""One image factory for the tests: arrays (noise, gradients, checkers, alpha patterns, any size,
dtype and channel count) and the files they are written as (PNG 8/16-bit, JPEG, TIFF, anything
Pillow writes).

Every random builder takes the test's own generator (the ``rng`` fixture of ``conftest.py``,
seeded from the test's name), so a test's input never depends on which tests ran before it.
Hostile and spec-built files (broken chunks, lying headers) stay in ``pngmaker.py``,
``texmaker.py`` and ``bombs.py``.
"""

from __future__ import annotations

import os

import numpy as np

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SAMPLES = os.path.join(ROOT, "samples")


def _top(dtype) -> int:
    return int(np.iinfo(dtype).max)


def noise(rng, h: int, w: int, c: int | None = 4, dtype=np.uint8) -> np.ndarray:
    """Uniform noise over every code of an integer ``dtype``, or in [0, 1) for a float one;
    ``c=None``: an (h, w) array."""
    shape = (h, w) if c is None else (h, w, c)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.random(shape).astype(dtype)
    return rng.integers(0, _top(dtype) + 1, shape, dtype=np.int64).astype(dtype)


def gradient(h: int, w: int, c: int = 4, dtype=np.uint8) -> np.ndarray:
    """A smooth ramp, channel k running along x, y or the diagonal (alpha: opaque)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    ramps = [x / max(w - 1, 1), y / max(h - 1, 1), (x + y) / max(w + h - 2, 1), np.ones((h, w))]
    v = np.dstack(ramps[:c] if c < 4 else ramps)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return v.astype(dtype)
    return np.rint(v * _top(dtype)).astype(dtype)


def checker(h: int, w: int, cell: int = 1, c: int = 4, dtype=np.uint8) -> np.ndarray:
    """Black and white squares of ``cell`` texels (alpha opaque)."""
    y, x = np.mgrid[0:h, 0:w]
    on = ((x // cell + y // cell) % 2).astype(np.float64)
    v = np.dstack([on] * min(c, 3) + ([np.ones((h, w))] if c == 4 else []))
    dtype = np.dtype(dtype)
    return v.astype(dtype) if dtype.kind == "f" else (v * _top(dtype)).astype(dtype)


def alpha_holes(rng, a: np.ndarray, fraction: float) -> np.ndarray:
    """``a`` with its last channel set to 0 at about ``fraction`` of the texels (in place)."""
    a[..., -1] = np.where(rng.random(a.shape[:-1]) < fraction, 0, a[..., -1])
    return a


def exact_source(rng, fmt, h: int, w: int) -> np.ndarray:
    """Random image data that ``fmt`` holds exactly (so values round-trip, not only bytes)."""
    c = 4 if fmt.channels == 4 else fmt.channels
    if fmt.kind == "float":
        a = rng.random((h, w, c)).astype(np.float32)
        if fmt.bits == 16:
            a = a.astype(np.float16).astype(np.float32)
        return a
    if fmt.kind == "sint":
        lo, hi = (-128, 128) if fmt.bits == 8 else ((-32768, 32768) if fmt.bits == 16 else (-2**31, 2**31))
        return rng.integers(lo, hi, (h, w, c), dtype=np.int64).astype(np.int32)
    if fmt.packed and fmt.kind == "uint":  # raw 10/10/10/2-bit codes
        return np.stack([rng.integers(0, m, (h, w)) for m in (1024, 1024, 1024, 4)], -1).astype(np.uint16)
    if fmt.packed:  # 16-bit data rounded to 10/10/10/2 bits: bytes compared, not values
        return rng.integers(0, 65536, (h, w, c), np.uint16)
    if fmt.kind == "uint" and fmt.bits == 32:
        return rng.integers(0, 2**31, (h, w, c), dtype=np.int64).astype(np.int32)
    return rng.integers(0, 1 << fmt.bits, (h, w, c), dtype=np.uint32).astype(np.uint8 if fmt.bits == 8 else np.uint16)


def write(path, a: np.ndarray, **pillow_options) -> str:
    """Write ``a`` to ``path`` (made with its folder) and return it as a string. PNGs go through
    libpng (imagecodecs: 8- and 16-bit, 1-4 channels; an (h, w, 1) array is grey) unless Pillow
    options are given; other suffixes (.jpg, .tif, .bmp, .webp...) through Pillow."""
    import imagecodecs

    path = str(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    arr = a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a
    if path.lower().endswith(".png") and not pillow_options:
        with open(path, "wb") as f:
            f.write(imagecodecs.png_encode(np.ascontiguousarray(arr)))
    else:
        from PIL import Image

        Image.fromarray(arr).save(path, **pillow_options)
    return path


def recorded_fsyncs(monkeypatch) -> list[str]:
    """``os.fsync`` recorded (as what each descriptor is: ``"folder"`` or ``"file"``) and still done."""
    import stat

    calls: list[str] = []
    real = os.fsync

    def fsync(fd):
        calls.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def spd_forms(gpu, monkeypatch, flags: dict, after: tuple = ()):
    """For fixtures (``yield from``): the single-pass chain's module flags set
    (:mod:`gputex.mips.spd`, e.g. ``{"ROUND_A_LEVEL": True}``), every ``mip_spd.wgsl`` it compiles
    recorded in the list yielded; the session's pipeline caches cleared before and after (and the
    caches named in ``after``, after)."""
    from gputex import kernels
    from gputex.mips import spd

    seen: list[str] = []
    load = kernels.load_wgsl

    def recording(name, **subs):
        code = load(name, **subs)
        if name == "mip_spd.wgsl":
            seen.append(code)
        return code

    for name, value in flags.items():
        monkeypatch.setattr(spd, name, value)
    monkeypatch.setattr(kernels, "load_wgsl", recording)
    caches = (kernels.PIPELINES, "mip-spd")
    for cache in caches:
        gpu.cache(cache).items.clear()
    yield seen
    monkeypatch.undo()
    for cache in caches + tuple(after):
        gpu.cache(cache).items.clear()
