"""Reports that read back a summary, not the texture: ``compare`` (two inputs, every
metric on the GPU) and ``stats`` (per-channel min, max, mean, std, histogram).

Each input is uploaded by the same steps as ``capture`` (:mod:`gputex.pipeline`); only the
small summary buffers come back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .outputs import refuse_overwriting_inputs
from .pipeline import Options, Result, decode_input, levels_wanted, run_one, stored_channels, timed, upload_image

if TYPE_CHECKING:
    from .device import Session
    from .texture import Texture

__all__ = ["Thresholds", "compare_files", "stats_file"]


def _upload_for_reduce(session: Session, path: str, opts: Options, result: Result) -> Texture:
    import wgpu

    image = decode_input(path, opts, result)
    return upload_image(session, image, opts, result, usage=wgpu.TextureUsage.TEXTURE_BINDING)


@dataclass
class Thresholds:
    max_diff: float | None = None
    min_psnr: float | None = None

    def passes(self, r) -> bool:
        if self.max_diff is None and self.min_psnr is None:
            return r.identical
        ok = True
        if self.max_diff is not None:
            ok &= max(r.max_abs_diff) <= self.max_diff
        if self.min_psnr is not None:
            ok &= r.psnr_all is None or r.psnr_all >= self.min_psnr
        return bool(ok)


def compare_files(session: Session, a: str, b: str, opts: Options, limits: Thresholds,
                  diff_image: str | None = None) -> dict:
    """Upload A and B, compare the wanted levels on the GPU; a dict for JSON and rendering.

    Raises GputexError for unreadable or mismatched inputs.
    """
    from .compare import compare

    if diff_image:
        refuse_overwriting_inputs(diff_image, [a, b])
    ra, rb = Result(source=a), Result(source=b)
    ta = _upload_for_reduce(session, a, opts, ra)
    try:
        tb = _upload_for_reduce(session, b, opts, rb)
        try:
            levels = levels_wanted(opts, ta)
            t0 = time.perf_counter()
            results = [compare(ta, tb, level) for level in levels]
            seconds = time.perf_counter() - t0
            if diff_image:
                _write_diff_image(ta, tb, levels[0], diff_image)
        finally:
            tb.destroy()
    finally:
        ta.destroy()
    return {
        "a": a, "b": b, "format": results[0].format,
        "levels": [r.as_dict() for r in results],
        "within": all(limits.passes(r) for r in results),
        "thresholds": {"max_diff": limits.max_diff, "min_psnr": limits.min_psnr},
        "readback_bytes": sum(r.readback_bytes for r in results),
        "compare_seconds": round(seconds, 6),
        "diff_image": diff_image,
    }


def _write_diff_image(ta: Texture, tb: Texture, level: int, path: str) -> None:
    """|A - B| amplified so the largest difference is full white (8-bit RGB(A) PNG)."""
    import numpy as np

    from .capture import capture
    from .encode import encode

    a = capture(ta, level).astype(np.float64)
    b = capture(tb, level).astype(np.float64)
    d = np.abs(a - b)
    peak = d.max()
    scaled = np.floor(d * (255.0 / peak) + 0.5) if peak > 0 else d
    out = scaled.astype(np.uint8)
    if out.shape[2] == 4:
        out[:, :, 3] = 255
    encode(out, path, color_space="linear")


def stats_file(session: Session, path: str, opts: Options, bins: int) -> Result:
    """Upload one image and compute its per-channel statistics on the GPU."""
    from .compare import stats

    result = Result(source=path)

    def work() -> None:
        tex = _upload_for_reduce(session, path, opts, result)
        try:
            with timed(result, "stats"):
                result.stats = [_trim_channels(stats(tex, lv, bins=bins).as_dict(), stored_channels(result))
                                for lv in levels_wanted(opts, tex)]
        finally:
            tex.destroy()

    return run_one(result, work, session)


def _trim_channels(d: dict, keep: int) -> dict:
    """Per-channel lists cut to the channels a block-compressed file holds (its twin has 4)."""
    if keep:
        d = {k: (v[:keep] if isinstance(v, list) and len(v) == d.get("channels") else v) for k, v in d.items()}
        d["channels"] = keep
    return d
