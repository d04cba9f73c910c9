"""Compare and stats: reductions on the GPU, only the summary read back.

``compare(a, b)`` gives, per channel, the max absolute difference, mean absolute error,
MSE and PSNR, the count of texels that differ in any channel, and SSIM of luminance.
``stats(t)`` gives per-channel min, max, mean, standard deviation and an optional
histogram. Values are the integer codes of unorm / uint / sint formats (so for 8-bit data
a difference of 1 is one LSB) and the stored floats of float formats. Sums of 8/16-bit
codes are exact (64-bit integers on the GPU); float sums are float32 with Kahan
compensation. The passes: ``metrics`` (one partial per invocation), ``combine`` (64
partials into one, repeated until one is left), ``ssim`` (interior pixels), ``histogram``.

Definitions (float64 on the CPU from the GPU sums):

* MAE = sum|d| / N, MSE = sum d^2 / N, PSNR = 10 log10(peak^2 / MSE), peak = 2^bits - 1 for
  unorm and integer formats, 1 for float formats; ``psnr_all`` uses the MSE over all channels.
* SSIM: Wang et al. (2004) on luma 0.299 R + 0.587 G + 0.114 B of values in [0, 1] (grey:
  the value), Gaussian window 11x11, sigma 1.5, K1 = 0.01, K2 = 0.03, data range 1, mean over
  the pixels whose window lies inside the image: the same number scikit-image's
  ``structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
  data_range=1)`` reports. Images under 11x11 have no SSIM (None).
"""

from __future__ import annotations

import math
import struct
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from .errors import FormatError, LimitError

if TYPE_CHECKING:
    from .texture import Texture

__all__ = ["compare", "stats", "CompareResult", "Stats"]

_PARTIAL_BYTES = 176
_FOLD = 64


@dataclass
class CompareResult:
    level: int
    width: int
    height: int
    format: str
    channels: int
    max_abs_diff: list[float]
    mae: list[float]
    mse: list[float]
    psnr: list[float | None]  # None: identical channel (infinite PSNR)
    psnr_all: float | None
    differing_texels: int
    ssim: float | None
    readback_bytes: int

    @property
    def identical(self) -> bool:
        return self.differing_texels == 0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["identical"] = self.identical
        return d


@dataclass
class Stats:
    level: int
    width: int
    height: int
    format: str
    channels: int
    min: list[float]
    max: list[float]
    mean: list[float]
    std: list[float]
    histogram: list[list[int]] = field(default_factory=list)
    histogram_range: list[list[float]] = field(default_factory=list)
    readback_bytes: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _kind(fmt) -> tuple[str, bool, list[float], float]:
    """(sample type, exact integer sums, code_max per channel, stats offset) of a format."""
    if fmt.compressed or fmt.kind in ("depth", "stencil", "ufloat", "snorm"):
        raise FormatError(f"compare/stats do not support {fmt.name}")
    if fmt.kind == "unorm":
        return "f32", True, _channel_max(fmt), 0.0
    if fmt.kind == "float":
        return "f32", False, [0.0] * 4, 0.0
    exact = fmt.bits <= 16
    offset = float(1 << (fmt.bits - 1)) if fmt.kind == "sint" and exact else 0.0
    return ("u32" if fmt.kind == "uint" else "i32"), exact, [0.0] * 4, offset


_BINDINGS = {"metrics": (0, 1, 3, 4), "combine": (2, 3, 4), "ssim": (0, 1, 3, 4), "histogram": (0, 4, 5)}


def _pipeline(session, sampled: str, entry: str, constants: dict):
    """(pipeline, layout) of ``reduce.wgsl``'s ``entry`` for textures loading ``sampled`` values."""
    import wgpu

    from .kernels import compute_pipeline

    stype = {"f32": wgpu.TextureSampleType.unfilterable_float, "u32": wgpu.TextureSampleType.uint,
             "i32": wgpu.TextureSampleType.sint}[sampled]
    vis = wgpu.ShaderStage.COMPUTE
    entries = []
    for b in _BINDINGS[entry]:
        if b in (0, 1):
            entries.append({"binding": b, "visibility": vis,
                            "texture": {"sample_type": stype, "view_dimension": "2d", "multisampled": False}})
        elif b == 4:
            entries.append({"binding": b, "visibility": vis, "buffer": {"type": wgpu.BufferBindingType.uniform}})
        else:
            entries.append({"binding": b, "visibility": vis, "buffer": {"type": wgpu.BufferBindingType.storage}})
    return compute_pipeline(session, "reduce.wgsl", entries, entry=entry, constants=constants,
                            subs={"SAMPLED": sampled}, label=f"reduce.wgsl<{sampled}>")


def _view(tex: Texture, level: int, layer: int):
    """A view of one level/layer that loads the stored codes.

    Sampling an ``-srgb`` view decodes to linear light: a texture made as its linear twin
    (``gputex/texture.py``: its levels are stored by the mip chain) is viewed in that format;
    any other sRGB level is first copied (GPU to GPU, the formats are copy-compatible) into a
    texture of its linear twin.
    """
    import wgpu

    fmt = tex.format
    if not tex.texture.format.endswith("-srgb"):  # the GPU texture's own format: the codes as stored
        return tex.texture.create_view(base_mip_level=level, mip_level_count=1,
                                       base_array_layer=layer, array_layer_count=1, dimension="2d")
    w, h = tex.size(level)
    twin = tex.session.device.create_texture(
        size=(w, h, 1), format=fmt.linear_name,
        usage=wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.TEXTURE_BINDING)
    enc = tex.session.device.create_command_encoder()
    enc.copy_texture_to_texture({"texture": tex.texture, "mip_level": level, "origin": (0, 0, layer)},
                                {"texture": twin}, (w, h, 1))
    tex.session.device.queue.submit([enc.finish()])
    return twin.create_view()


def _params(w: int, h: int, count: int, code_max, lo=(0, 0, 0, 0), hi=(0, 0, 0, 0)) -> bytes:
    return struct.pack("<4I12f", w, h, count, 0, *code_max, *lo, *hi)


class _Reducer:
    """Records the passes of one reduction into an encoder and reads the final partial."""

    def __init__(self, tex: Texture, level: int):
        self.tex, self.session, self.device = tex, tex.session, tex.session.device
        self.sampled, self.exact, self.code_max, self.offset = _kind(tex.format)
        self.w, self.h = tex.size(level)
        self.enc = self.device.create_command_encoder()
        self.readback_bytes = 0

    def _buffer(self, n: int):
        import wgpu

        return self.device.create_buffer(size=max(n, 1) * _PARTIAL_BYTES,
                                         usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)

    def _dispatch(self, entry: str, constants: dict, resources_: dict, threads: int) -> None:
        pipe, bgl = _pipeline(self.session, self.sampled, entry, constants)
        bind = self.device.create_bind_group(layout=bgl, entries=[
            {"binding": b, "resource": resources_[b]} for b in _BINDINGS[entry]])
        p = self.enc.begin_compute_pass()
        p.set_pipeline(pipe)
        p.set_bind_group(0, bind)
        p.dispatch_workgroups(-(-threads // 64), 1, 1)
        p.end()

    def constants(self, mode: int, texels: int) -> dict:
        return {"MODE": mode, "EXACT": self.exact, "CODES": self.sampled == "f32" and self.code_max[0] > 0,
                "OFFSET": self.offset, "CHANNELS": self.tex.format.channels, "TEXELS": texels, "FOLD": _FOLD}

    def reduce(self, entry: str, mode: int, view_a, view_b, count: int, shift=(0, 0, 0, 0)):
        """Record ``entry`` over ``count`` items, then combine passes down to one partial.

        ``shift``: stats of float data sum ``x - shift`` and its square (``shift`` = a first
        pass's mean), so the variance does not cancel catastrophically in float32."""
        texels = max(64, -(-count // 262144))
        threads = -(-count // texels)
        consts = self.constants(mode, texels)
        out = self._buffer(threads)
        self._dispatch(entry, consts, {0: view_a, 1: view_b, 3: {"buffer": out},
                                       4: {"buffer": self.session.uniform(
                                           _params(self.w, self.h, count, self.code_max, lo=shift))}},
                       threads)
        n = threads
        while n > 1:
            m = -(-n // _FOLD)
            nxt = self._buffer(m)
            self._dispatch("combine", consts, {2: {"buffer": out}, 3: {"buffer": nxt},
                                               4: {"buffer": self.session.uniform(_params(0, 0, n, self.code_max))}}, m)
            out, n = nxt, m
        return out

    def read(self, buffers: list) -> list[dict]:
        import numpy as np
        import wgpu

        staging = self.device.create_buffer(size=_PARTIAL_BYTES * len(buffers),
                                            usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        for i, b in enumerate(buffers):
            self.enc.copy_buffer_to_buffer(b, 0, staging, i * _PARTIAL_BYTES, _PARTIAL_BYTES)
        self.session.check(f"{self.tex.source}: reduce", self.device.queue.submit, [self.enc.finish()])
        staging.map_sync(wgpu.MapMode.READ)
        raw = bytes(staging.read_mapped())
        staging.unmap()
        self.readback_bytes += len(raw)
        out = []
        for i in range(len(buffers)):
            chunk = raw[i * _PARTIAL_BYTES:(i + 1) * _PARTIAL_BYTES]
            u = np.frombuffer(chunk, "<u4")
            f = np.frombuffer(chunk, "<f4").astype(np.float64)
            lo = lambda k, u=u: u[4 * k:4 * k + 4].astype(np.uint64)  # noqa: E731
            out.append({
                "s1": (lo(0) + (lo(1) << np.uint64(32))).astype(np.float64) if self.exact else f[16:20] - f[20:24],
                "s2": (lo(2) + (lo(3) << np.uint64(32))).astype(np.float64) if self.exact else f[24:28] - f[28:32],
                "f1": f[16:20] - f[20:24],
                "mn": f[32:36], "mx": f[36:40], "count": int(u[40]),
            })
        return out


def _channel_max(fmt) -> list[float]:
    """Largest code of each channel: 2^bits - 1 (rgb10a2: 10, 10, 10, 2 bits)."""
    bits = [10, 10, 10, 2] if fmt.packed else [fmt.bits] * 4
    return [float((1 << b) - 1) for b in bits]


def _peak(tex: Texture) -> list[float]:
    return [1.0] * 4 if tex.format.kind == "float" else _channel_max(tex.format)


def compare(a: Texture, b: Texture, level: int = 0, layer: int = 0) -> CompareResult:
    """Compare one level of two textures of the same size and format on the GPU."""
    if a.format.name != b.format.name:
        raise FormatError(f"{a.source} is {a.format.name} but {b.source} is {b.format.name}; "
                          "use --format to compare both in one format")
    if a.size(level) != b.size(level):
        (aw, ah), (bw, bh) = a.size(level), b.size(level)
        raise LimitError(f"{a.source} is {aw}x{ah} but {b.source} is {bw}x{bh} at level {level}")
    r = _Reducer(a, level)
    va, vb = _view(a, level, layer), _view(b, level, layer)
    n = r.w * r.h
    bufs = [r.reduce("metrics", 0, va, vb, n)]
    has_ssim = r.w >= 11 and r.h >= 11
    if has_ssim:
        bufs.append(r.reduce("ssim", 0, va, vb, (r.w - 10) * (r.h - 10)))
    parts = r.read(bufs)
    m = parts[0]
    c = a.format.channels
    mae = [float(x) / n for x in m["s1"][:c]]
    mse = [float(x) / n for x in m["s2"][:c]]
    peak = _peak(a)
    psnr = [10 * math.log10(peak[i] ** 2 / mse[i]) if mse[i] > 0 else None for i in range(c)]
    mse_all = sum(mse) / c
    psnr_all = (10 * math.log10(sum(p * p for p in peak[:c]) / c / mse_all)) if mse_all > 0 else None
    ssim = float(parts[1]["f1"][0]) / parts[1]["count"] if has_ssim else None
    return CompareResult(level, r.w, r.h, a.format.name, c, [float(x) for x in m["mx"][:c]], mae, mse,
                         psnr, psnr_all, m["count"], ssim, r.readback_bytes)


def stats(tex: Texture, level: int = 0, layer: int = 0, bins: int = 0) -> Stats:
    """Per-channel min, max, mean, standard deviation (population) and optional histogram."""
    import numpy as np
    import wgpu

    r = _Reducer(tex, level)
    va = _view(tex, level, layer)
    n = r.w * r.h
    m = r.read([r.reduce("metrics", 1, va, va, n)])[0]
    c = tex.format.channels
    off = r.offset
    mean = m["s1"][:c] / n
    if r.exact:  # exact 64-bit integer sums
        var = np.maximum(m["s2"][:c] / n - mean * mean, 0.0)
    else:
        # float32 sums: E[x^2] - E[x]^2 cancels (a constant image had a std of 2e-4 |x|), so a
        # second pass sums the deviations from the first pass's mean (rounded to float32)
        shift = np.zeros(4, np.float32)
        shift[:c] = mean.astype(np.float32)
        r2 = _Reducer(tex, level)
        d = r2.read([r2.reduce("metrics", 1, va, va, n, shift=tuple(float(x) for x in shift))])[0]
        r.readback_bytes += r2.readback_bytes
        dev = d["s1"][:c] / n
        mean = shift[:c].astype(np.float64) + dev
        var = np.maximum(d["s2"][:c] / n - dev * dev, 0.0)
    result = Stats(level, r.w, r.h, tex.format.name, c, [float(x - off) for x in m["mn"][:c]],
                   [float(x - off) for x in m["mx"][:c]], [float(x - off) for x in mean],
                   [float(math.sqrt(v)) for v in var], readback_bytes=r.readback_bytes)
    if bins > 0:
        lo, hi = list(m["mn"][:4]), list(m["mx"][:4])
        hi = [h if h > low else low + 1 for low, h in zip(lo, hi)]  # a constant channel: one bin holds all
        if r.exact or tex.format.kind in ("uint", "sint"):
            hi = [h + 1 for h in hi]  # integer codes: [min, max + 1) so max lands in the last bin
        rr = _Reducer(tex, level)
        texels = max(64, -(-n // 262144))
        consts = dict(rr.constants(1, texels), BINS=bins)
        hist = tex.session.device.create_buffer(size=4 * bins * 4, usage=wgpu.BufferUsage.STORAGE
                                                | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
        rr._dispatch("histogram", consts, {0: va, 4: {"buffer": tex.session.uniform(_params(rr.w, rr.h, n, rr.code_max, lo, hi))},
                                           5: {"buffer": hist}}, -(-n // texels))
        staging = tex.session.device.create_buffer(size=4 * bins * 4, usage=wgpu.BufferUsage.MAP_READ
                                                   | wgpu.BufferUsage.COPY_DST)
        rr.enc.copy_buffer_to_buffer(hist, 0, staging, 0, 4 * bins * 4)
        tex.session.device.queue.submit([rr.enc.finish()])
        staging.map_sync(wgpu.MapMode.READ)
        counts = np.frombuffer(bytes(staging.read_mapped()), "<u4").reshape(4, bins)
        staging.unmap()
        result.readback_bytes += 16 * bins
        result.histogram = [[int(x) for x in counts[i]] for i in range(c)]
        result.histogram_range = [[float(lo[i] - off), float(hi[i] - off)] for i in range(c)]
    return result
