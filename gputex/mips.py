"""Mips: the whole chain on the GPU, in one command encoder, no CPU round trip between levels.

For each level two compute passes run:

1. ``mip_reduce.wgsl`` filters a source level into a linear-light ``rgba32float`` work
   level (intermediate levels are kept at float precision, so chaining never
   accumulates 8-bit rounding). For ``box`` the source is the deepest earlier level
   whose size divides this level's size on both axes (then its texels tile the
   footprint exactly: a 2x2 average on power-of-two sizes), else the base image with
   fractional edge weights: every level is the exact area average over the **base**
   footprint. ``kaiser`` and ``lanczos`` chain from the previous level.
2. ``mip_pack.wgsl`` turns the work level into the format's bytes (sRGB-encoded where
   the data is sRGB, rounded to nearest) in a padded storage buffer, then
   ``copy_buffer_to_texture`` writes the level. This path serves every format alike,
   sRGB ones included, which cannot be storage textures.

With ``alpha_coverage`` the chain is submitted first, the work levels' alpha is read
once, and each level's alpha scale is solved on the CPU before packing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

from .errors import FormatError
from .layout import align_up, bands, mip_size

if TYPE_CHECKING:
    from .upload import Texture

__all__ = ["generate_mips", "MipReport", "FILTERS", "ALPHA_MODES", "WRAPS", "box_source_level"]

FILTERS = {"box": 0, "kaiser": 1, "lanczos": 2}
ALPHA_MODES = ("weighted", "straight", "premultiplied")
WRAPS = {"clamp": 0, "repeat": 1, "mirror": 2}
_PACK_FMT = {"unorm8": 0, "unorm16": 1, "float16": 2, "float32": 3, "rgb10a2": 4}


@dataclass
class MipReport:
    levels: int
    sources: list[int] = field(default_factory=list)  # source level of each level >= 1
    alpha_scales: list[float] = field(default_factory=list)
    gpu_ns: int | None = None  # GPU time of the chain (timestamp queries), when measured


def shader_source(name: str) -> str:
    return resources.files("gputex").joinpath("shaders", name).read_text()


def box_source_level(width: int, height: int, level: int) -> int:
    """Level whose texels tile ``level``'s box footprint exactly: the deepest earlier
    level whose size is a multiple of this level's size on both axes, else 0 (the base)."""
    w, h = mip_size(width, height, level)
    for k in range(level - 1, 0, -1):
        kw, kh = mip_size(width, height, k)
        if kw % w == 0 and kh % h == 0:
            return k
    return 0


def _pack_kind(tex: "Texture") -> str:
    fmt = tex.format
    if fmt.packed and fmt.kind == "unorm":
        return "rgb10a2"
    if fmt.kind == "unorm" and fmt.bits in (8, 16):
        return f"unorm{fmt.bits}"
    if fmt.kind == "float":
        return f"float{fmt.bits}"
    raise FormatError(f"{tex.source}: mips need a unorm or float format; {fmt.name} holds "
                      "integers (upload with --format rgba16unorm or rgba32float)")


def _pipeline(session, shader: str, constants: dict, entries: list[dict]):
    import wgpu

    key = ("pipeline", shader, tuple(sorted(constants.items())))

    def make():
        module = session.device.create_shader_module(code=shader_source(shader), label=shader)
        bgl = session.device.create_bind_group_layout(entries=entries)
        layout = session.device.create_pipeline_layout(bind_group_layouts=[bgl])
        pipe = session.device.create_compute_pipeline(
            layout=layout, compute={"module": module, "entry_point": "main", "constants": constants})
        return pipe, bgl

    _ = wgpu
    return session.cached(key, make)


def _entries(out_kind: str) -> list[dict]:
    import wgpu

    s = wgpu.ShaderStage.COMPUTE
    src = {"binding": 0, "visibility": s,
           "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                       "view_dimension": "2d", "multisampled": False}}
    if out_kind == "storage-texture":
        dst = {"binding": 1, "visibility": s,
               "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                   "format": "rgba32float", "view_dimension": "2d"}}
    else:
        dst = {"binding": 1, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}}
    uni = {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}}
    return [src, dst, uni]


def _uniform(session, data: bytes):
    import wgpu

    return session.device.create_buffer_with_data(data=data.ljust(32, b"\0"), usage=wgpu.BufferUsage.UNIFORM)


def generate_mips(tex: "Texture", *, filter: str = "box", alpha: str = "weighted",
                  alpha_coverage: float | None = None, normal_map: bool = False, wrap: str = "clamp",
                  layer: int = 0, measure: bool = False) -> MipReport:
    """Fill levels 1.. of ``tex`` from level 0 on the GPU.

    Parameters
    ----------
    filter
        ``box`` (exact area average over the base footprint), ``kaiser`` or ``lanczos``
        (radius 3, scaled by the level ratio).
    alpha
        ``weighted`` (default: colour averaged by alpha, plain average where all alpha is 0,
        so colour neither bleeds from nor vanishes under transparent texels; identical
        to ``straight`` on opaque images), ``straight`` (channels independently), or
        ``premultiplied`` (data already premultiplied: averaged as stored).
    alpha_coverage
        Scale each level's alpha so the fraction of texels with alpha >= this cutoff
        stays that of level 0.
    normal_map
        Unpack (2 channels: reconstruct z), average, renormalize each level.
    wrap
        ``clamp``, ``repeat`` or ``mirror`` for kernel taps beyond the edge.
    measure
        Time the chain with timestamp queries (when the device has them).
    """
    import wgpu

    if filter not in FILTERS:
        raise FormatError(f"unknown filter {filter!r}; use box, kaiser or lanczos")
    if alpha not in ALPHA_MODES:
        raise FormatError(f"unknown alpha mode {alpha!r}; use weighted, straight or premultiplied")
    if wrap not in WRAPS:
        raise FormatError(f"unknown wrap mode {wrap!r}; use clamp, repeat or mirror")
    kind = _pack_kind(tex)
    fmt = tex.format
    if normal_map and fmt.srgb:
        raise FormatError(f"{tex.source}: a normal map must not be stored in {fmt.name}; "
                          "use --color-space linear or a non-sRGB format")
    report = MipReport(tex.levels)
    if tex.levels < 2:
        return report
    session, device = tex.session, tex.session.device
    weighted = alpha == "weighted" and fmt.channels in (2, 4) and not normal_map
    space_srgb = tex.color_space == "srgb" and not normal_map
    w1, h1 = mip_size(tex.width, tex.height, 1)
    work = session.check(f"{tex.source}: mip work texture", device.create_texture,
                         size=(w1, h1, 1), format="rgba32float", mip_level_count=tex.levels - 1,
                         usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
                         | (wgpu.TextureUsage.COPY_SRC if alpha_coverage is not None else 0))
    base_view = tex.texture.create_view(base_mip_level=0, mip_level_count=1,
                                        base_array_layer=layer, array_layer_count=1, dimension="2d")
    work_views = [work.create_view(base_mip_level=j, mip_level_count=1) for j in range(tex.levels - 1)]

    common = {"CHANNELS": fmt.channels, "WEIGHTED": weighted, "NORMAL": normal_map}
    query = _timestamps(session) if measure else None
    enc = device.create_command_encoder()
    for level in range(1, tex.levels):
        src_level = box_source_level(tex.width, tex.height, level) if filter == "box" else level - 1
        report.sources.append(src_level)
        consts = dict(common, SRC_IS_BASE=src_level == 0, FILTER=FILTERS[filter], WRAP=WRAPS[wrap],
                      DECODE_SRGB=space_srgb and not fmt.srgb and src_level == 0)
        pipe, bgl = _pipeline(session, "mip_reduce.wgsl", consts, _entries("storage-texture"))
        sw, sh = mip_size(tex.width, tex.height, src_level)
        dw, dh = mip_size(tex.width, tex.height, level)
        bind = device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": base_view if src_level == 0 else work_views[src_level - 1]},
            {"binding": 1, "resource": work_views[level - 1]},
            {"binding": 2, "resource": {"buffer": _uniform(session, struct.pack("<4I", sw, sh, dw, dh))}},
        ])
        ts = query.writes(begin=level == 1) if query else None
        cpass = enc.begin_compute_pass(timestamp_writes=ts) if ts else enc.begin_compute_pass()
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, bind)
        cpass.dispatch_workgroups(-(-dw // 8), -(-dh // 8), 1)
        cpass.end()

    scales = [1.0] * tex.levels
    if alpha_coverage is not None and fmt.channels in (2, 4) and not normal_map:
        device.queue.submit([enc.finish()])
        scales = _coverage_scales(tex, work, alpha_coverage, layer)
        enc = device.create_command_encoder()
    report.alpha_scales = scales

    pack_consts = {"FMT": _PACK_FMT[kind], "CHANNELS": fmt.channels, "BPT": fmt.block_bytes,
                   "BGRA": fmt.bgra, "ENCODE_SRGB": space_srgb, "WEIGHTED": weighted, "NORMAL": normal_map}
    pipe, bgl = _pipeline(session, "mip_pack.wgsl", pack_consts, _entries("buffer"))
    limit = min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
    pitch1 = align_up(w1 * fmt.block_bytes, 256)
    band_rows = max(1, min(h1, limit // pitch1))
    scratch = session.check(f"{tex.source}: mip pack buffer", device.create_buffer,
                            size=pitch1 * band_rows,
                            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    last = tex.levels - 1
    for level in range(1, tex.levels):
        dw, dh = mip_size(tex.width, tex.height, level)
        pitch = align_up(dw * fmt.block_bytes, 256)
        for i, (y0, y1) in enumerate(bands(dh, pitch, pitch1 * band_rows)):
            prm = struct.pack("<4If", dw, y1 - y0, y0, pitch // 4, scales[level])
            bind = device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": work_views[level - 1]},
                {"binding": 1, "resource": {"buffer": scratch, "offset": 0, "size": scratch.size}},
                {"binding": 2, "resource": {"buffer": _uniform(session, prm)}},
            ])
            ts = query.writes(end=True) if query and level == last and y1 == dh else None
            cpass = enc.begin_compute_pass(timestamp_writes=ts) if ts else enc.begin_compute_pass()
            cpass.set_pipeline(pipe)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(-(-((dw * fmt.block_bytes + 3) // 4) // 64), y1 - y0, 1)
            cpass.end()
            enc.copy_buffer_to_texture(
                {"buffer": scratch, "offset": 0, "bytes_per_row": pitch, "rows_per_image": y1 - y0},
                {"texture": tex.texture, "mip_level": level, "origin": (0, y0, layer)},
                (dw, y1 - y0, 1))
    if query:
        query.resolve(enc)
    session.check(f"{tex.source}: mip chain", device.queue.submit, [enc.finish()])
    if query:
        report.gpu_ns = query.read()
    work.destroy()
    scratch.destroy()
    return report


class _Timestamps:
    def __init__(self, session):
        import wgpu

        self.session = session
        self.qs = session.device.create_query_set(type=wgpu.QueryType.timestamp, count=2)
        self.resolve_buf = session.device.create_buffer(
            size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        self.read_buf = session.device.create_buffer(
            size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def writes(self, begin: bool = False, end: bool = False):
        if not (begin or end):
            return None
        ts = {"query_set": self.qs}
        if begin:
            ts["beginning_of_pass_write_index"] = 0
        if end:
            ts["end_of_pass_write_index"] = 1
        return ts

    def resolve(self, enc) -> None:
        enc.resolve_query_set(self.qs, 0, 2, self.resolve_buf, 0)
        enc.copy_buffer_to_buffer(self.resolve_buf, 0, self.read_buf, 0, 16)

    def read(self) -> int:
        import wgpu

        self.read_buf.map_sync(wgpu.MapMode.READ)
        t0, t1 = struct.unpack("<2Q", bytes(self.read_buf.read_mapped()))
        self.read_buf.unmap()
        return int(t1 - t0)


def _timestamps(session):
    return _Timestamps(session) if session.has_feature("timestamp-query") else None


def _coverage_scales(tex: "Texture", work, cutoff: float, layer: int) -> list[float]:
    """Per-level alpha scale so that coverage at ``cutoff`` matches level 0 (one readback)."""
    import numpy as np

    from .capture import capture
    from .formats import get_format
    from .upload import Texture as _T

    fmt = tex.format
    bits = 2 if fmt.packed else fmt.bits
    amax = (1 << bits) - 1
    base = capture(tex, 0, layer).astype(np.float64)
    a0 = base[:, :, -1] / (amax if fmt.kind == "unorm" else 1)
    # the stored value passes the test when it quantizes to >= cutoff
    threshold = (np.ceil(cutoff * amax - 1e-9) - 0.5) / amax if fmt.kind == "unorm" else cutoff
    target = float((a0 >= cutoff - 1e-12).mean())
    wtex = _T(tex.session, work, get_format("rgba32float"), *mip_size(tex.width, tex.height, 1),
              1, tex.levels - 1, source=tex.source)
    scales = [1.0]
    for level in range(1, tex.levels):
        a = np.sort(capture(wtex, level - 1)[:, :, 3].astype(np.float64).ravel())[::-1]
        k = int(round(target * a.size))
        if k <= 0:  # nothing passed at level 0: keep every texel below the cutoff
            scales.append(1.0 if a[0] < threshold else float(threshold / a[0] * (1 - 1e-6)))
        elif a[k - 1] <= 0:  # not enough alpha left to reach the coverage
            scales.append(1.0)
        else:
            scales.append(float(threshold / a[k - 1] * (1 + 1e-6)))
    return scales
