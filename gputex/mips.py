"""Mips: the whole chain on the GPU, in one command encoder, no CPU round trip between levels.

For each level two compute passes run:

1. ``mip_reduce.wgsl`` filters a source level into a linear-light ``rgba32float`` work
   level (intermediate levels are kept at float precision, so chaining never
   accumulates 8-bit rounding). For ``box`` the source is the deepest earlier level
   (from 2 on) whose size divides this level's size on both axes (then its texels tile
   the footprint exactly: a 2x2 average on power-of-two sizes), else the base image with
   fractional edge weights: every level is the exact area average over the **base**
   footprint. ``kaiser`` and ``lanczos`` chain from the previous level.
2. The level's bytes (sRGB-encoded where the data is sRGB, rounded to nearest in the
   shader) reach the texture by the fastest path the format allows:

   * **direct**: where the format or its non-sRGB twin is storage-capable (rgba8unorm
     serves rgba8unorm-srgb; rgba16float, rgba32float, r/rg32float; bgra8 with
     ``bgra8unorm-storage``), the reduce pass stores into a twin texture, and
     ``copy_texture_to_texture`` moves each level (on the H200 ``copy_buffer_to_texture``
     took over half of the chain's GPU time);
   * **fused**: other formats of 4+ bytes per texel encode whole u32 words into a padded
     storage buffer in the same pass, then ``copy_buffer_to_texture``;
   * **pack**: 1- and 2-byte formats (and alpha coverage) run ``mip_pack.wgsl``, one u32
     word per invocation, then ``copy_buffer_to_texture``.

With ``alpha_coverage`` the chain is submitted first, the work levels' alpha is read
once, and each level's alpha scale is solved on the CPU before packing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

from .errors import FormatError, LimitError
from .layout import align_up, bands, mip_size

if TYPE_CHECKING:
    import numpy as np

    from .texture import Texture

__all__ = ["generate_mips", "MipReport", "FILTERS", "ALPHA_MODES", "WRAPS", "box_source_level"]

FILTERS = {"box": 0, "kaiser": 1, "lanczos": 2}
ALPHA_MODES = ("weighted", "straight", "premultiplied")
WRAPS = {"clamp": 0, "repeat": 1, "mirror": 2}
PRECISIONS = ("exact", "fast")
_PACK_FMT = {"unorm8": 0, "unorm16": 1, "float16": 2, "float32": 3, "rgb10a2": 4}


@dataclass
class MipReport:
    levels: int
    sources: list[int] = field(default_factory=list)  # source level of each level >= 1
    alpha_scales: list[float] = field(default_factory=list)
    gpu_ns: int | None = None  # GPU time of the chain (timestamp queries), when measured
    pass_ns: list[int] = field(default_factory=list)  # time inside each compute pass
    exact: bool = False  # made by the float64 path (mip_exact.wgsl) or the integer chain
    precision: str = "float"  # "integer" (mips_int.py), "float64" or "float"
    note: str = ""  # why the integer chain was not used where it was asked for (self-check)


def shader_source(name: str, out_format: str = "rgba8unorm") -> str:
    """A shader's WGSL; the mip shaders get ``mip_common.wgsl`` (shared encoding) in front,
    and ``OUT_FORMAT`` names the storage format ``main_direct`` writes."""
    folder = resources.files("gputex").joinpath("shaders")
    code = folder.joinpath(name).read_text()
    if name in ("mip_reduce.wgsl", "mip_pack.wgsl", "mip3d.wgsl"):
        code = folder.joinpath("mip_common.wgsl").read_text() + "\n" + code
    elif name in ("mip_exact.wgsl", "mip_exact_kernel.wgsl"):
        code = folder.joinpath("mip_f64.wgsl").read_text() + "\n" + code
    return code.replace("OUT_FORMAT", out_format)


def box_source_level(width: int, height: int, level: int) -> int:
    """Level whose texels tile ``level``'s box footprint exactly: the deepest earlier
    level (from 2 on) whose size is a multiple of this level's size on both axes, else 0
    (the base). Level 1 is never a source: reading the base instead costs the same as
    reading level 1's float work texture, and level 1 then needs no work texture at all."""
    w, h = mip_size(width, height, level)
    for k in range(level - 1, 1, -1):
        kw, kh = mip_size(width, height, k)
        if kw % w == 0 and kh % h == 0:
            return k
    return 0


def _format_kind(fmt) -> str | None:
    """The encoding the mip shaders write for ``fmt`` (``FMT``), or None for integer formats."""
    if fmt.packed and fmt.kind == "unorm":
        return "rgb10a2"
    if fmt.kind == "unorm" and fmt.bits in (8, 16):
        return f"unorm{fmt.bits}"
    if fmt.kind == "float":
        return f"float{fmt.bits}"
    return None


def _pack_kind(tex: "Texture") -> str:
    kind = _format_kind(tex.format)
    if kind is None:
        raise FormatError(f"{tex.source}: mips need a unorm or float format; {tex.format.name} holds "
                          "integers (upload with --format rgba16unorm or rgba32float)")
    return kind


def _module_and_layout(session, shader: str, out_format: str, entries: list[dict]):
    """The (cached) shader module, a bind group layout of ``entries`` and a pipeline layout of it."""
    module = session.cached(("module", shader, out_format), lambda: session.device.create_shader_module(
        code=shader_source(shader, out_format), label=shader))
    bgl = session.device.create_bind_group_layout(entries=entries)
    return module, bgl, session.device.create_pipeline_layout(bind_group_layouts=[bgl])


def _pipeline(session, shader: str, constants: dict, entries: list[dict], entry: str = "main",
              out_format: str = "rgba8unorm"):
    key = ("pipeline", shader, entry, out_format, tuple(sorted(constants.items())))

    def make():
        module, bgl, layout = _module_and_layout(session, shader, out_format, entries)
        pipe = session.device.create_compute_pipeline(
            layout=layout, compute={"module": module, "entry_point": entry, "constants": constants})
        return pipe, bgl

    return session.cached(key, make)


def _render_pipeline(session, constants: dict, entries: list[dict], target: str):
    """The render path's pipeline: ``mip_reduce.wgsl``'s full-screen triangle writing ``target``."""
    key = ("render-pipeline", target, tuple(sorted(constants.items())))

    def make():
        module, bgl, layout = _module_and_layout(session, "mip_reduce.wgsl", "rgba8unorm", entries)
        pipe = session.device.create_render_pipeline(
            layout=layout, vertex={"module": module, "entry_point": "vs_level", "constants": constants},
            primitive={"topology": "triangle-list"},
            fragment={"module": module, "entry_point": "fs_level", "constants": constants,
                      "targets": [{"format": target}]})
        return pipe, bgl

    return session.cached(key, make)


#: Formats that go through the render path (renderable, not storage-capable, and no storage-capable
#: twin on this device) where ``GPUTEX_MIPS_PATH`` is ``render``; the default is chosen by
#: measurement (``benchmarks/mips.py --path``; see README).
RENDER_KINDS = ("unorm8", "float16", "rgb10a2")
DEFAULT_PATH = "compute"


def mips_path() -> str:
    """``compute`` or ``render`` for renderable non-storage formats (``GPUTEX_MIPS_PATH``)."""
    import os

    path = os.environ.get("GPUTEX_MIPS_PATH", "").strip().lower() or DEFAULT_PATH
    if path not in ("compute", "render"):
        raise FormatError(f"GPUTEX_MIPS_PATH must be compute or render, got {path!r}")
    return path


def render_target(session, fmt) -> bool:
    """Whether ``fmt``'s mip levels would be rendered (its texture then needs RENDER_ATTACHMENT)."""
    if fmt.compressed or not fmt.renderable or _storage_twin(session, fmt) or mips_path() != "render":
        return False
    return _format_kind(fmt) in RENDER_KINDS and fmt.name not in EXACT_FORMATS


def dispatch(enc, pipe, bind, groups: tuple[int, int, int]) -> None:
    """One compute pass of ``pipe`` with bind group 0 over ``groups`` workgroups."""
    cpass = enc.begin_compute_pass()
    cpass.set_pipeline(pipe)
    cpass.set_bind_group(0, bind)
    cpass.dispatch_workgroups(*groups)
    cpass.end()


def _entries(kind: str, out_format: str = "", stage: int = 0) -> list[dict]:
    """Bind group layout of the ``reduce`` or ``pack`` pass (``out_format``: main_direct's target;
    ``stage``: the shader stage that binds them, compute unless given)."""
    import wgpu

    s = stage or wgpu.ShaderStage.COMPUTE
    src = {"binding": 0, "visibility": s,
           "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                       "view_dimension": "2d", "multisampled": False}}
    uni = {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}}
    if kind == "pack":
        return [src, {"binding": 1, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}}, uni]
    dst = {"binding": 1, "visibility": s,
           "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                               "format": "rgba32float", "view_dimension": "2d"}}
    entries = [src, dst, uni, {"binding": 3, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}}]
    if out_format:
        entries.append({"binding": 4, "visibility": s,
                        "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                            "format": out_format, "view_dimension": "2d"}})
    return entries + _plain_entries(True, s)


def _plain_entries(storage: bool, stage: int = 0) -> list[dict]:
    """Bindings 5 (source plain colour) and, for the reduce pass, 6 (this level's plain colour)."""
    import wgpu

    s = stage or wgpu.ShaderStage.COMPUTE
    out = [{"binding": 5, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                       "view_dimension": "2d", "multisampled": False}}]
    if storage:
        out.append({"binding": 6, "visibility": s,
                    "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                        "format": "rgba32float", "view_dimension": "2d"}})
    return out


def _stand_in(session, kind: str):
    """A 1x1 rgba32float view bound where a shader declares a binding it does not use here."""
    import wgpu

    def make():
        usage = wgpu.TextureUsage.TEXTURE_BINDING if kind == "sampled" else wgpu.TextureUsage.STORAGE_BINDING
        return session.device.create_texture(size=(1, 1, 1), format="rgba32float", usage=usage).create_view()

    return session.cached(("mip-stand-in", kind), make)


def generate_mips(tex: "Texture", *, filter: str = "box", alpha: str = "weighted",
                  alpha_coverage: float | None = None, normal_map: bool = False, wrap: str = "clamp",
                  layer: int = 0, measure: bool = False, precision: str = "exact") -> MipReport:
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
    precision
        ``exact`` (default): box chains of 8- and 16-bit unorm formats are correctly rounded
        and the same bytes on every adapter that passes the self-check (integer arithmetic,
        ``mips_int.py``); float32 formats use float64 where the device has ``shader-f64``.
        ``fast``: the float chains (float32, within 1 LSB at 8 bits; float64 for 16-bit and
        float32 formats where the device has ``shader-f64``).
    """
    if filter not in FILTERS:
        raise FormatError(f"unknown filter {filter!r}; use box, kaiser or lanczos")
    if alpha not in ALPHA_MODES:
        raise FormatError(f"unknown alpha mode {alpha!r}; use weighted, straight or premultiplied")
    if wrap not in WRAPS:
        raise FormatError(f"unknown wrap mode {wrap!r}; use clamp, repeat or mirror")
    if precision not in PRECISIONS:
        raise FormatError(f"unknown mip precision {precision!r}; use exact or fast")
    kind = _pack_kind(tex)
    if normal_map and tex.format.srgb:
        raise FormatError(f"{tex.source}: a normal map must not be stored in {tex.format.name}; "
                          "use --color-space linear or a non-sRGB format")
    report = MipReport(tex.levels)
    if tex.levels < 2:
        return report
    from .capabilities import require

    require(tex.session, "mips", tex.source)  # OpenGL: zeros in some levels
    if tex.depth > 1:
        if filter != "box" or normal_map or alpha_coverage is not None:
            raise FormatError(f"{tex.source}: 3D textures get box mips only (no kernels, normal maps or "
                              "alpha coverage)")
        report.sources = _chain3d(tex, kind, alpha)
        return report
    if precision == "exact" and _int_chain(tex, report, filter, alpha, normal_map, alpha_coverage, layer, measure):
        return report
    if _exact_kernel_ok(tex, filter, normal_map, alpha_coverage):
        report.sources = list(range(tex.levels - 1))
        report.exact, report.precision = True, "float64"
        _exact_kernel_chain(tex, filter, wrap, alpha, layer)
        return report
    if _exact_ok(tex, filter, normal_map, alpha_coverage):
        report.sources = [0] * (tex.levels - 1)
        report.exact, report.precision = True, "float64"
        _exact_chain(tex, alpha, layer)
        return report
    chain = _Chain(tex, kind, filter, alpha, normal_map, wrap, layer, measure, alpha_coverage is not None)
    try:
        report.sources = chain.reduce_all()
        scales = [1.0] * tex.levels
        if alpha_coverage is not None and tex.format.channels in (2, 4) and not normal_map:
            chain.submit()
            scales = _coverage_scales(tex, chain.work, alpha_coverage, layer)
        report.alpha_scales = scales
        chain.pack_all(scales)
        chain.submit()
        if chain.query:
            report.gpu_ns, report.pass_ns = chain.query.read()
    finally:
        chain.release()
    return report


def _int_chain(tex, report, filter, alpha, normal_map, coverage, layer, measure) -> bool:
    """The integer chain, where it applies and this adapter passes its self-check."""
    from .mips_int import int_chain, int_ok, self_check

    if not int_ok(tex, filter, normal_map, coverage):
        return False
    passed, why = self_check(tex.session, tex.format, tex.color_space, alpha)
    if not passed:
        report.note = (f"{tex.session.name}: the integer mip chain failed its self-check ({why}); "
                       "the float path was used")
        return False
    report.sources, report.gpu_ns, report.pass_ns = int_chain(tex, alpha, layer, measure)
    report.exact, report.precision = True, "integer"
    return True


def _size3(tex: "Texture", level: int) -> tuple[int, int, int]:
    return max(1, tex.width >> level), max(1, tex.height >> level), max(1, tex.depth >> level)


def _chain3d(tex: "Texture", kind: str, alpha: str) -> list[int]:
    """Box mips of a 3D texture: each level from the deepest earlier level whose texels tile its
    footprint exactly on all three axes (else the base), work levels kept in float32."""
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    if fmt.block_bytes % 4:
        raise FormatError(f"{tex.source}: 3D mips need a format of 4 or more bytes per texel "
                          f"({fmt.name} has {fmt.block_bytes}); use rgba8unorm, rgba16float, ...")
    weighted = alpha == "weighted" and fmt.channels in (2, 4)
    srgb = tex.color_space == "srgb"
    common = {"FMT": _PACK_FMT[kind], "CHANNELS": fmt.channels, "BPT": fmt.block_bytes, "BGRA": fmt.bgra,
              "ENCODE_SRGB": srgb, "WEIGHTED": weighted, "NORMAL": False}
    s = wgpu.ShaderStage.COMPUTE
    entries = [
        {"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                    "view_dimension": "3d"}},
        {"binding": 1, "visibility": s, "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                                            "format": "rgba32float", "view_dimension": "3d"}},
        {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}},
        {"binding": 3, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}},
    ]
    sizes = [_size3(tex, lv) for lv in range(tex.levels)]
    sources = [0]
    for lv in range(1, tex.levels):
        src = 0
        for k in range(lv - 1, 0, -1):
            if all(a % b == 0 for a, b in zip(sizes[k], sizes[lv])):
                src = k
                break
        sources.append(src)
    limit = session.limits.get("max-storage-buffer-binding-size", 128 << 20)
    w1, h1, d1 = sizes[1]
    work = session.check(f"{tex.source}: 3D mip work texture", device.create_texture, size=(w1, h1, d1),
                         dimension="3d", format="rgba32float", mip_level_count=tex.levels - 1,
                         usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING)
    buffers = []
    try:
        enc = device.create_command_encoder()
        base = tex.texture.create_view(dimension="3d", base_mip_level=0, mip_level_count=1)
        for lv in range(1, tex.levels):
            (sw, sh, sd), (dw, dh, dd) = sizes[sources[lv]], sizes[lv]
            pitch = align_up(dw * fmt.block_bytes, 256)
            size = pitch * dh * dd
            if size > limit:
                raise LimitError(f"{tex.source}: 3D level {lv} ({dw}x{dh}x{dd}) needs a {size >> 20} MiB buffer, "
                                 f"more than the device's storage binding limit")
            buf = device.create_buffer(size=size, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
            buffers.append(buf)
            consts = dict(common, SRC_IS_BASE=sources[lv] == 0, DECODE_SRGB=srgb and not fmt.srgb)
            pipe, bgl = _pipeline(session, "mip3d.wgsl", consts, entries)
            src_view = base if sources[lv] == 0 else work.create_view(
                dimension="3d", base_mip_level=sources[lv] - 1, mip_level_count=1)
            prm = struct.pack("<8I", sw, sh, sd, pitch // 4, dw, dh, dd, dh)
            bind = device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": src_view},
                {"binding": 1, "resource": work.create_view(dimension="3d", base_mip_level=lv - 1, mip_level_count=1)},
                {"binding": 2, "resource": {"buffer": session.uniform(prm)}},
                {"binding": 3, "resource": {"buffer": buf, "offset": 0, "size": size}}])
            dispatch(enc, pipe, bind, (-(-dw // 4), -(-dh // 4), -(-dd // 4)))
            enc.copy_buffer_to_texture({"buffer": buf, "offset": 0, "bytes_per_row": pitch, "rows_per_image": dh},
                                       {"texture": tex.texture, "mip_level": lv}, (dw, dh, dd))
        session.check(f"{tex.source}: 3D mip chain", device.queue.submit, [enc.finish()])
    finally:
        work.destroy()
        for buf in buffers:
            buf.destroy()
    return sources[1:]


#: Formats whose box mips are computed in float64 (mip_exact.wgsl) where the device has
#: shader-f64: float32 arithmetic cannot round 16-bit and float32 results correctly.
EXACT_FORMATS = {"rg16unorm": (1, 2), "rgba16unorm": (1, 4), "r32float": (3, 1), "rg32float": (3, 2),
                 "rgba32float": (3, 4)}


#: Source texels one invocation of the float64 path sums per dispatch (lavapipe stops loops
#: after 65535 iterations; larger footprints go in chunks of rows).
EXACT_LOOP_LIMIT = 32768


def _exact_ok(tex: "Texture", filter: str, normal_map: bool, coverage) -> bool:
    import os

    return (filter == "box" and not normal_map and coverage is None and tex.format.name in EXACT_FORMATS
            and tex.session.has_feature("shader-f64") and os.environ.get("GPUTEX_MIPS_F64", "1") != "0")


def _exact_chain(tex: "Texture", alpha: str, layer: int) -> None:
    """Every level from the base, box filter, float64 sums and final rounding."""
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    code, channels = EXACT_FORMATS[fmt.name]
    srgb = tex.color_space == "srgb"
    consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": alpha == "weighted" and channels in (2, 4),
              "DECODE_SRGB": srgb, "ENCODE_SRGB": srgb}
    s = wgpu.ShaderStage.COMPUTE
    entries = _entries("pack") + [{"binding": 3, "visibility": s,
                                   "buffer": {"type": wgpu.BufferBindingType.storage}}]
    pipe, bgl = _pipeline(session, "mip_exact.wgsl", consts, entries)
    finish, _ = _pipeline(session, "mip_exact.wgsl", consts, entries, "finish")
    base = tex.texture.create_view(base_mip_level=0, mip_level_count=1, base_array_layer=layer,
                                   array_layer_count=1, dimension="2d")
    limit = min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
    w0, h0 = tex.size(0)
    plan = []
    for level in range(1, tex.levels):
        dw, dh = tex.size(level)
        pitch = align_up(dw * fmt.block_bytes, 256)
        fw, fh = -(-w0 // dw) + 1, -(-h0 // dh) + 1  # widest footprint, in texels
        rows = fh if fw * fh <= EXACT_LOOP_LIMIT else max(1, EXACT_LOOP_LIMIT // fw)
        chunks = -(-fh // rows)
        parts = bands(dh, pitch, limit) if chunks == 1 else bands(dh, pitch, min(limit, (64 << 20) // chunks))
        plan.append((level, dw, dh, pitch, parts, rows, chunks))
    size = max(pitch * (r1 - r0) for _, _, _, pitch, parts, _, _ in plan for r0, r1 in parts)
    partial_size = max([64 * dw * (r1 - r0) * chunks for _, dw, _, _, parts, _, chunks in plan if chunks > 1
                        for r0, r1 in parts] + [64])
    scratch = session.check(f"{tex.source}: mip buffer", device.create_buffer, size=size,
                            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    partial = session.check(f"{tex.source}: mip partial sums", device.create_buffer, size=partial_size,
                            usage=wgpu.BufferUsage.STORAGE)
    try:
        enc = device.create_command_encoder()
        for level, dw, dh, pitch, parts, rows, chunks in plan:
            record_exact_bands(enc, session, (pipe, finish, bgl), base, scratch, partial, (w0, h0),
                               (dw, dh, pitch, parts, rows, chunks), tex.texture, level, layer)
        session.check(f"{tex.source}: mip chain (float64)", device.queue.submit, [enc.finish()])
    finally:
        scratch.destroy()
        partial.destroy()


#: Kernel chains in float64: the exact formats, and the 4-byte 8-bit ones (a kernel with weighted
#: alpha divides by a filtered alpha that negative lobes can bring near 0: float32 was off by
#: up to 160 LSB there at 8 bits).
EXACT_KERNEL_FORMATS = {**EXACT_FORMATS, "rgba8unorm": (0, 4), "rgba8unorm-srgb": (0, 4), "bgra8unorm": (0, 4),
                        "bgra8unorm-srgb": (0, 4)}


def _exact_kernel_ok(tex: "Texture", filter: str, normal_map: bool, coverage) -> bool:
    """Kernels in float64 where the first level's float64 values fit one storage binding."""
    import os

    if filter == "box" or normal_map or coverage is not None or tex.format.name not in EXACT_KERNEL_FORMATS:
        return False
    if not tex.session.has_feature("shader-f64") or os.environ.get("GPUTEX_MIPS_F64", "1") == "0":
        return False
    w1, h1 = tex.size(1)
    limit = tex.session.limits.get("max-storage-buffer-binding-size", 128 << 20)
    return w1 * h1 * 64 <= limit


def kernel_taps(n: int, m: int, filter: str, wrap: str) -> list[tuple[list[int], "np.ndarray"]]:
    """Per destination texel of an axis going from n to m texels: source indices (after the wrap
    mode) and normalized float64 weights of the Kaiser (beta 4) or Lanczos (a = 3) kernel, radius 3
    scaled by the ratio: what the float64 path filters with, computed here in float64."""
    import math

    import numpy as np

    r = n / m
    scale = max(r, 1.0)
    out = []
    for j in range(m):
        c = (j + 0.5) * r
        reach = 3 * scale
        acc: dict[int, float] = {}
        for t in range(math.floor(c - reach), math.ceil(c + reach) + 1):
            x = (t + 0.5 - c) / scale
            if abs(x) >= 3:
                continue
            if filter == "lanczos":
                k = float(np.sinc(x) * np.sinc(x / 3))
            else:
                k = float(np.sinc(x) * np.i0(4 * math.sqrt(max(0.0, 1 - (x / 3) ** 2))) / np.i0(4))
            if wrap == "repeat":
                idx = t % n
            elif wrap == "mirror":
                mm = t % (2 * n)
                idx = 2 * n - 1 - mm if mm >= n else mm
            else:
                idx = min(max(t, 0), n - 1)
            acc[idx] = acc.get(idx, 0.0) + k
        total = sum(acc.values())
        idxs = sorted(acc)
        out.append((idxs, np.array([acc[i] / total for i in idxs], np.float64)))
    return out


def _exact_kernel_chain(tex: "Texture", filter: str, wrap: str, alpha: str, layer: int) -> None:
    import numpy as np
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    code, channels = EXACT_KERNEL_FORMATS[fmt.name]
    srgb = tex.color_space == "srgb"
    weighted = alpha == "weighted" and channels in (2, 4)
    s = wgpu.ShaderStage.COMPUTE

    def ro(b):
        return {"binding": b, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.read_only_storage}}

    entries = _entries("pack") + [ro(3), {"binding": 4, "visibility": s,
                                          "buffer": {"type": wgpu.BufferBindingType.storage}}, ro(5), ro(6)]
    base = tex.texture.create_view(base_mip_level=0, mip_level_count=1, base_array_layer=layer,
                                   array_layer_count=1, dimension="2d")
    keep = []
    try:
        enc = device.create_command_encoder()
        prev = device.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE)  # level 1 reads the base
        keep.append(prev)
        for level in range(1, tex.levels):
            (pw, ph), (dw, dh) = tex.size(level - 1), tex.size(level)
            xt, yt = kernel_taps(pw, dw, filter, wrap), kernel_taps(ph, dh, filter, wrap)
            pairs, idx, wts = [], [], []
            start = 2 * (dw + dh)
            for taps_ in (xt, yt):
                for ids, w in taps_:
                    pairs += [start + len(idx), len(ids)]
                    idx += ids
                    wts.append(w)
            tap_data = np.array(pairs + idx, np.uint32).tobytes()
            weight_data = np.concatenate(wts).astype(np.float64).tobytes()
            taps_buf = device.create_buffer_with_data(data=tap_data, usage=wgpu.BufferUsage.STORAGE)
            w_buf = device.create_buffer_with_data(data=weight_data, usage=wgpu.BufferUsage.STORAGE)
            nxt = session.check(f"{tex.source}: mip level values", device.create_buffer, size=dw * dh * 64,
                                usage=wgpu.BufferUsage.STORAGE)
            pitch = align_up(dw * fmt.block_bytes, 256)
            out = session.check(f"{tex.source}: mip buffer", device.create_buffer, size=pitch * dh,
                                usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
            keep += [taps_buf, w_buf, nxt, out]
            consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": weighted, "DECODE_SRGB": srgb,
                      "ENCODE_SRGB": srgb, "SRC_IS_BASE": level == 1, "SRGB_FORMAT": fmt.srgb, "BGRA": fmt.bgra}
            pipe, bgl = _pipeline(session, "mip_exact_kernel.wgsl", consts, entries)
            prm = struct.pack("<5I", dw, dh, pitch // 4, pw, start)
            bind = device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": base},
                {"binding": 1, "resource": {"buffer": out, "offset": 0, "size": out.size}},
                {"binding": 2, "resource": {"buffer": session.uniform(prm)}},
                {"binding": 3, "resource": {"buffer": prev, "offset": 0, "size": prev.size}},
                {"binding": 4, "resource": {"buffer": nxt, "offset": 0, "size": nxt.size}},
                {"binding": 5, "resource": {"buffer": taps_buf, "offset": 0, "size": taps_buf.size}},
                {"binding": 6, "resource": {"buffer": w_buf, "offset": 0, "size": w_buf.size}}])
            dispatch(enc, pipe, bind, (-(-dw // 8), -(-dh // 8), 1))
            enc.copy_buffer_to_texture({"buffer": out, "offset": 0, "bytes_per_row": pitch, "rows_per_image": dh},
                                       {"texture": tex.texture, "mip_level": level, "origin": (0, 0, layer)},
                                       (dw, dh, 1))
            prev = nxt
        session.check(f"{tex.source}: mip chain (float64 kernels)", device.queue.submit, [enc.finish()])
    finally:
        for b in keep:
            b.destroy()


class _Chain:
    """The passes of one mip chain, recorded into command encoders.

    A level's reduce pass also writes the format's bytes (``FUSED``) when a texel is a whole
    number of u32 words, no alpha-coverage scale is pending, and the level fits one storage
    binding; otherwise a pack pass per row band does it. Work levels no later level reads
    are not stored.
    """

    def __init__(self, tex, kind, filter, alpha, normal_map, wrap, layer, measure, coverage):
        import wgpu

        self.tex, self.session, self.device = tex, tex.session, tex.session.device
        self.layer, self.filter, self.wrap, fmt = layer, filter, wrap, tex.format
        weighted = alpha == "weighted" and fmt.channels in (2, 4) and not normal_map
        self.space_srgb = tex.color_space == "srgb" and not normal_map
        self.split = weighted and filter != "box"
        self.common = {"FMT": _PACK_FMT[kind], "CHANNELS": fmt.channels, "BPT": fmt.block_bytes,
                       "BGRA": fmt.bgra, "ENCODE_SRGB": self.space_srgb, "WEIGHTED": weighted,
                       "NORMAL": normal_map, "SPLIT_PLAIN": self.split}
        self.sizes = [mip_size(tex.width, tex.height, lv) for lv in range(tex.levels)]
        self.sources = [None] + [box_source_level(tex.width, tex.height, lv) if filter == "box" else lv - 1
                                 for lv in range(1, tex.levels)]
        w1, h1 = self.sizes[1]
        limit = min(self.session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
        self.pitch1 = align_up(w1 * fmt.block_bytes, 256)
        self.band_rows = max(1, min(h1, limit // self.pitch1))
        self.direct = None if coverage else _storage_twin(self.session, fmt)
        self.render = (not coverage and render_target(self.session, fmt)
                       and bool(tex.texture.usage & wgpu.TextureUsage.RENDER_ATTACHMENT))
        self.fused = (not self.direct and not self.render and fmt.block_bytes % 4 == 0 and not coverage
                      and self.band_rows >= h1)
        # work, scratch and output resources are kept for the next chain of the same shape
        # (a batch of same-size images, layers of an array): allocating and clearing a
        # 4096^2 rgba32float work level costs more than the whole chain on a fast GPU
        self.owned: list = []  # resources too big to keep for the next chain: freed in release()
        work_bytes = w1 * h1 * 16 * 4 // 3
        self.work = self._reused("work", (w1, h1, tex.levels - 1, bool(coverage)), work_bytes, lambda: self.session.check(
            f"{tex.source}: mip work texture", self.device.create_texture,
            size=(w1, h1, 1), format="rgba32float", mip_level_count=tex.levels - 1,
            usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
            | (wgpu.TextureUsage.COPY_SRC if coverage else 0)))
        scratch_size = 4 if self.direct or self.render else self.pitch1 * self.band_rows
        self.scratch = self._reused("scratch", scratch_size, scratch_size, lambda: self.session.check(
            f"{tex.source}: mip pack buffer", self.device.create_buffer, size=scratch_size,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC))
        self.out = None
        if self.direct:
            self.out = self._reused("out", (w1, h1, tex.levels - 1, self.direct), w1 * h1 * fmt.block_bytes * 4 // 3,
                                    lambda: self.session.check(
                f"{tex.source}: mip output texture", self.device.create_texture, size=(w1, h1, 1),
                format=self.direct, mip_level_count=tex.levels - 1,
                usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.COPY_SRC))
            self.out_views = [self.out.create_view(base_mip_level=j, mip_level_count=1)
                              for j in range(tex.levels - 1)]
        self.base_view = tex.texture.create_view(base_mip_level=0, mip_level_count=1, base_array_layer=layer,
                                                 array_layer_count=1, dimension="2d")
        self.work_views = [self.work.create_view(base_mip_level=j, mip_level_count=1)
                           for j in range(tex.levels - 1)]
        self.plain_views = None
        if self.split:  # the plain colour of every level, chained beside the premultiplied one
            plain = self._reused("plain", (w1, h1, tex.levels - 1), work_bytes, lambda: self.session.check(
                f"{tex.source}: mip plain-colour texture", self.device.create_texture,
                size=(w1, h1, 1), format="rgba32float", mip_level_count=tex.levels - 1,
                usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING))
            self.plain_views = [plain.create_view(base_mip_level=j, mip_level_count=1)
                                for j in range(tex.levels - 1)]
        self.query = _timestamps(self.session, 4 * tex.levels + 8) if measure else None
        self.enc = self.device.create_command_encoder()

    def _pass(self, pipe, bind, groups) -> None:
        ts = self.query.next() if self.query else None
        cpass = self.enc.begin_compute_pass(timestamp_writes=ts) if ts else self.enc.begin_compute_pass()
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, bind)
        cpass.dispatch_workgroups(*groups)
        cpass.end()

    def _copy(self, level: int, pitch: int, y0: int, y1: int) -> None:
        self.enc.copy_buffer_to_texture(
            {"buffer": self.scratch, "offset": 0, "bytes_per_row": pitch, "rows_per_image": y1 - y0},
            {"texture": self.tex.texture, "mip_level": level, "origin": (0, y0, self.layer)},
            (self.sizes[level][0], y1 - y0, 1))

    def reduce_all(self) -> list[int]:
        import wgpu

        levels = self.tex.levels
        read = {s for s in self.sources[1:] if s}
        fmt = self.tex.format
        for level in range(1, levels):
            src = self.sources[level]
            consts = dict(self.common, SRC_IS_BASE=src == 0, FILTER=FILTERS[self.filter], WRAP=WRAPS[self.wrap],
                          DECODE_SRGB=self.space_srgb and not fmt.srgb and src == 0, FUSED=self.fused,
                          STORE_WORK=level in read or not (self.fused or self.direct or self.render))
            if self.render:
                pipe, bgl = _render_pipeline(self.session, consts, _entries("reduce", stage=wgpu.ShaderStage.FRAGMENT),
                                             fmt.name)
            elif self.direct:
                pipe, bgl = _pipeline(self.session, "mip_reduce.wgsl", consts, _entries("reduce", self.direct),
                                      "main_direct", self.direct)
            else:
                pipe, bgl = _pipeline(self.session, "mip_reduce.wgsl", consts, _entries("reduce"))
            (sw, sh), (dw, dh) = self.sizes[src], self.sizes[level]
            pitch = align_up(dw * fmt.block_bytes, 256)
            entries = [
                {"binding": 0, "resource": self.base_view if src == 0 else self.work_views[src - 1]},
                {"binding": 1, "resource": self.work_views[level - 1]},
                {"binding": 2, "resource": {"buffer": self.session.uniform(struct.pack("<5I", sw, sh, dw, dh, pitch // 4))}},
                {"binding": 3, "resource": {"buffer": self.scratch, "offset": 0, "size": self.scratch.size}},
            ]
            if self.direct:
                entries.append({"binding": 4, "resource": self.out_views[level - 1]})
            if self.split:
                entries += [{"binding": 5, "resource": self.plain_views[src - 1] if src else _stand_in(
                                self.session, "sampled")},
                            {"binding": 6, "resource": self.plain_views[level - 1]}]
            else:
                entries += [{"binding": 5, "resource": _stand_in(self.session, "sampled")},
                            {"binding": 6, "resource": _stand_in(self.session, "storage")}]
            bind = self.device.create_bind_group(layout=bgl, entries=entries)
            if self.render:
                self._draw(pipe, bind, level)
                continue
            self._pass(pipe, bind, (-(-dw // 8), -(-dh // 8), 1))
            if self.fused:
                self._copy(level, pitch, 0, dh)
        if self.direct:  # the output texture's levels into the texture (copy-compatible formats)
            for level in range(1, levels):
                w, h = self.sizes[level]
                self.enc.copy_texture_to_texture({"texture": self.out, "mip_level": level - 1},
                                                 {"texture": self.tex.texture, "mip_level": level,
                                                  "origin": (0, 0, self.layer)}, (w, h, 1))
        return self.sources[1:]

    def _draw(self, pipe, bind, level: int) -> None:
        """The render path: one full-screen triangle into ``level``'s texels."""
        view = self.tex.texture.create_view(base_mip_level=level, mip_level_count=1, base_array_layer=self.layer,
                                            array_layer_count=1, dimension="2d")
        ts = self.query.next() if self.query else None
        attach = {"view": view, "load_op": "clear", "store_op": "store", "clear_value": (0, 0, 0, 0)}
        rpass = (self.enc.begin_render_pass(color_attachments=[attach], timestamp_writes=ts) if ts
                 else self.enc.begin_render_pass(color_attachments=[attach]))
        rpass.set_pipeline(pipe)
        rpass.set_bind_group(0, bind)
        rpass.draw(3)
        rpass.end()

    def pack_all(self, scales: list[float]) -> None:
        if self.fused or self.direct or self.render:
            return
        fmt = self.tex.format
        pipe, bgl = _pipeline(self.session, "mip_pack.wgsl", self.common, _entries("pack") + _plain_entries(False))
        for level in range(1, self.tex.levels):
            dw, dh = self.sizes[level]
            pitch = align_up(dw * fmt.block_bytes, 256)
            for y0, y1 in bands(dh, pitch, self.pitch1 * self.band_rows):
                prm = struct.pack("<4If", dw, y1 - y0, y0, pitch // 4, scales[level])
                bind = self.device.create_bind_group(layout=bgl, entries=[
                    {"binding": 0, "resource": self.work_views[level - 1]},
                    {"binding": 1, "resource": {"buffer": self.scratch, "offset": 0, "size": self.scratch.size}},
                    {"binding": 2, "resource": {"buffer": self.session.uniform(prm)}},
                    {"binding": 5, "resource": self.plain_views[level - 1] if self.split
                     else _stand_in(self.session, "sampled")},
                ])
                self._pass(pipe, bind, (-(-((dw * fmt.block_bytes + 3) // 4) // 64), y1 - y0, 1))
                self._copy(level, pitch, y0, y1)

    def submit(self) -> None:
        if self.query:
            self.query.resolve(self.enc)
        self.session.check(f"{self.tex.source}: mip chain", self.device.queue.submit, [self.enc.finish()])
        self.enc = self.device.create_command_encoder()

    def _reused(self, kind: str, key, nbytes: int, make):
        """Resources up to REUSE_MAX_BYTES are kept in the session for the next chain of the same
        shape (one per kind); bigger ones are this chain's own and freed in release()."""
        if nbytes > REUSE_MAX_BYTES:
            obj = make()
            self.owned.append(obj)
            return obj
        return _reused(self.session, kind, key, make)

    def release(self) -> None:
        for obj in self.owned:
            obj.destroy()
        self.owned.clear()


#: Mip work resources up to this size are kept for reuse (a 2048^2 chain's are ~22 MB).
REUSE_MAX_BYTES = 64 << 20


def _reused(session, kind: str, key, make):
    """One GPU resource per ``kind``, kept in the session and reused while ``key`` (its shape)
    matches; a different key destroys the old one first, so at most one of each is held."""
    slot = session._cache.get(("mip-reuse", kind))
    if slot is not None and slot[0] == key:
        return slot[1]
    if slot is not None:
        slot[1].destroy()
    obj = make()
    session._cache[("mip-reuse", kind)] = (key, obj)
    return obj


def _storage_twin(session, fmt) -> str | None:
    """A storage-capable format copy-compatible with ``fmt`` (itself or its non-sRGB twin)."""
    from .formats import get_format

    twin = get_format(fmt.linear_name)
    if twin.storage or (twin.bgra and session.has_feature("bgra8unorm-storage")):
        return twin.name
    return None


class _Timestamps:
    """Begin/end timestamps of every compute pass (the gaps between passes are copies and barriers)."""

    def __init__(self, session, passes: int):
        import wgpu

        self.count = 2 * passes
        self.used = 0
        self.resolved = 0
        self.qs = session.device.create_query_set(type=wgpu.QueryType.timestamp, count=self.count)
        self.resolve_buf = session.device.create_buffer(
            size=8 * self.count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        self.read_buf = session.device.create_buffer(
            size=8 * self.count, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def next(self):
        if self.used + 2 > self.count:
            return None
        i = self.used
        self.used += 2
        return {"query_set": self.qs, "beginning_of_pass_write_index": i, "end_of_pass_write_index": i + 1}

    def resolve(self, enc) -> None:
        if self.used > self.resolved:
            a, n = self.resolved, self.used - self.resolved
            enc.resolve_query_set(self.qs, a, n, self.resolve_buf, 8 * a)
            enc.copy_buffer_to_buffer(self.resolve_buf, 8 * a, self.read_buf, 8 * a, 8 * n)
            self.resolved = self.used

    def read(self) -> tuple[int, list[int]]:
        """(last end - first begin, [duration of each pass]) in nanoseconds."""
        import wgpu

        self.read_buf.map_sync(wgpu.MapMode.READ)
        t = struct.unpack(f"<{self.used}Q", bytes(self.read_buf.read_mapped(0, 8 * self.used)))
        self.read_buf.unmap()
        return int(t[-1] - t[0]), [int(t[i + 1] - t[i]) for i in range(0, self.used, 2)]


def _timestamps(session, passes: int):
    return _Timestamps(session, passes) if session.has_feature("timestamp-query") else None


def _coverage_scales(tex: "Texture", work, cutoff: float, layer: int) -> list[float]:
    """Per-level alpha scale so that coverage at ``cutoff`` matches level 0 (one readback)."""
    import numpy as np

    from .capture import capture
    from .formats import get_format
    from .texture import Texture as _T

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


def record_exact_bands(enc, session, pipes, base, scratch, partial, src_size, plan, target, level: int,
                       layer: int) -> None:
    """Record one float64 box level (``mip_exact.wgsl``) into ``enc``: each row band of the
    ``(dw, dh, pitch, parts, rows, chunks)`` plan summed from ``base`` into ``scratch`` (in
    ``chunks`` partial sums when the footprints are long), then copied into ``target``'s
    ``level``. Shared by the mip chain and the resize (:mod:`gputex.transform`)."""
    pipe, finish, bgl = pipes
    w0, h0 = src_size
    dw, dh, pitch, parts, rows, chunks = plan
    for r0, r1 in parts:
        prm = struct.pack("<9I", w0, h0, dw, dh, pitch // 4, r0, r1 - r0, chunks, rows)
        bind = session.device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": base},
            {"binding": 1, "resource": {"buffer": scratch, "offset": 0, "size": scratch.size}},
            {"binding": 2, "resource": {"buffer": session.uniform(prm)}},
            {"binding": 3, "resource": {"buffer": partial, "offset": 0, "size": partial.size}}])
        dispatch(enc, pipe, bind, (-(-dw // 8), -(-(r1 - r0) // 8), chunks))
        if chunks > 1:  # its own pass: the partial sums are complete before they are added
            dispatch(enc, finish, bind, (-(-dw // 8), -(-(r1 - r0) // 8), 1))
        enc.copy_buffer_to_texture(
            {"buffer": scratch, "offset": 0, "bytes_per_row": pitch, "rows_per_image": r1 - r0},
            {"texture": target, "mip_level": level, "origin": (0, r0, layer)}, (dw, r1 - r0, 1))
