"""Mips: the whole chain on the GPU, from level 0, no CPU round trip between levels.

:func:`generate_mips` is the one entry point; it checks the options and picks the path
(the *policy*, all of it in this file):

1. 3D textures: box mips in float32 (:mod:`.volume`).
2. ``precision="exact"`` (default), box filter, 8- and 16-bit unorm formats: the integer
   chain, correctly rounded and the same bytes on every adapter that passes its self-check
   (:mod:`.integer`, arithmetic in :mod:`.intbox`); six levels a dispatch (:mod:`.spd`, the
   same bytes) where every level halves each axis, else each level from a grid of cell sums
   (:mod:`.odd`, the same bytes) instead of the whole base. On a CPU adapter (lavapipe,
   SwiftShader) the same integers are computed natively on the host (:mod:`.cpu`, the C
   extension ``gputex._mipcpu``; ``GPUTEX_MIPS_ENGINE`` overrides) and written into the levels.
3. Where float64 is allowed (:func:`use_float64`): box mips of 16-bit and float32 formats
   and kernel chains of those and the 4-byte 8-bit formats in float64 (:mod:`.exact`).
4. ``precision="exact"``, box filter, float formats of linear data that float64 does not serve
   (rg/rgba16float; r/rg/rgba32float without float64): float-float sums from float32 arithmetic,
   correctly rounded and the same bytes on every adapter (:mod:`.floatfloat`, ``mip_ff.wgsl``).
5. Everything else: the float32 chain (:mod:`.chain`), drawn by a fragment shader instead
   of a compute pass where ``path="render"`` applies (:func:`needs_render_target`).

The pieces: :mod:`.filters` (the filter registry: adding a filter is one function and one
registration there), :mod:`.common` (layouts, reused resources, shared by the resize),
shaders and pipelines from :mod:`gputex.kernels`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..devflags import flag
from ..errors import FormatError
from .common import box_source_level, format_kind, pack_kind, storage_twin
from .filters import ALPHA_MODES, FILTER_NAMES, FILTERS, WRAPS, check_options, kernel_taps

if TYPE_CHECKING:
    import numpy as np

    from ..device import Session
    from ..formats import Format
    from ..texture import Texture

__all__ = ["generate_mips", "MipReport", "FILTERS", "FILTER_NAMES", "ALPHA_MODES", "WRAPS", "PRECISIONS", "PATHS",
           "box_source_level", "kernel_taps", "mips_path", "needs_render_target", "stored_format", "use_float64",
           "check_precision"]

#: ``exact``: integer chain where it applies, float64 where the device has it, float-float for
#: box mips of float formats, else float32; ``fast``: no integer or float-float chain;
#: ``float32``: the float32 chain only;
#: ``int``: ``exact`` with the multi-pass integer chain only (the reference the single-pass form,
#: :mod:`.spd`, and the cell form, :mod:`.odd`, are checked and timed against: the same bytes).
PRECISIONS = ("exact", "fast", "float32", "int")
#: How renderable formats without a storage-capable twin get their levels (the default is
#: chosen by measurement: ``benchmarks/mips.py --paths``; see README).
PATHS = ("compute", "render")
DEFAULT_PATH = "compute"
#: Encodings that can take the render path (renderable, not storage-capable, no storage twin).
RENDER_KINDS = ("unorm8", "float16", "rgb10a2")


@dataclass
class MipReport:
    levels: int
    sources: list[int] = field(default_factory=list)  # source level of each level >= 1 (cells: grid G(k))
    alpha_scales: list[float] = field(default_factory=list)
    gpu_ns: int | None = None  # GPU time of the chain (timestamp queries), when measured
    pass_ns: list[int] = field(default_factory=list)  # time inside each compute pass
    exact: bool = False  # made by the float64 path (mip_exact.wgsl), the float-float one or the integer chain
    precision: str = "float"  # "integer" (mips.integer), "float64", "float-float" (mips.floatfloat) or "float"
    note: str = ""  # why the integer chain was not used where it was asked for (self-check)
    engine: str = "shader"  # "cpu": the integer chain made on the host (:mod:`.cpu`, the same bytes)


def mips_path(path: str | None = None) -> str:
    """``path``, or the developer override ``GPUTEX_MIPS_PATH``, or :data:`DEFAULT_PATH`."""
    if path is not None:
        if path not in PATHS:
            raise FormatError(f"unknown mip path {path!r}; use compute or render")
        return path
    env = (flag("GPUTEX_MIPS_PATH") or DEFAULT_PATH).lower()
    if env not in PATHS:
        raise FormatError(f"GPUTEX_MIPS_PATH must be compute or render, got {env!r}")
    return env


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise FormatError(f"unknown mip precision {precision!r}; use exact, fast, float32 or int")
    return precision


def use_float64(session: Session, precision: str = "exact") -> bool:
    """Whether the float64 paths may run: the device has ``shader-f64``, ``precision`` is not
    ``float32`` and the developer override ``GPUTEX_MIPS_F64=0`` is not set."""
    return (check_precision(precision) != "float32" and session.has_feature("shader-f64")
            and flag("GPUTEX_MIPS_F64") != "0")


def stored_format(session: Session, fmt: Format | str, width: int, height: int, levels: int, depth: int = 1, *,
                  filter: str = "box", precision: str = "exact", normal_map: bool = False,
                  coverage: float | None = None) -> str:
    """The storage format through which the exact chain will store a texture's levels
    (pass it as ``create_texture(..., store_levels=...)``), or "" (:func:`.stored.stored_format`)."""
    from ..formats import get_format
    from .stored import stored_format as spd_stored

    fmt = get_format(fmt) if isinstance(fmt, str) else fmt
    return spd_stored(session, fmt, width, height, levels, depth, filter=filter, precision=precision,
                      normal_map=normal_map, coverage=coverage)


def needs_render_target(session: Session, fmt: Format | str, path: str | None = None) -> bool:
    """Whether ``fmt``'s mip levels would be drawn by the render path, so its texture needs
    ``RENDER_ATTACHMENT`` (pass it as ``create_texture(..., render_target=...)``)."""
    from ..formats import get_format
    from .exact import EXACT_FORMATS

    fmt = get_format(fmt) if isinstance(fmt, str) else fmt

    if fmt.compressed or not fmt.renderable or storage_twin(session, fmt) or mips_path(path) != "render":
        return False
    return format_kind(fmt) in RENDER_KINDS and fmt.name not in EXACT_FORMATS


def generate_mips(tex: Texture, *, filter: str = "box", alpha: str = "weighted",
                  alpha_coverage: float | None = None, normal_map: bool = False, wrap: str = "clamp",
                  layer: int = 0, measure: bool = False, precision: str = "exact",
                  path: str | None = None, base: np.ndarray | None = None) -> MipReport:
    """Fill levels 1.. of ``tex`` from level 0 on the GPU.

    Parameters
    ----------
    filter
        ``box`` (exact area average over the base footprint) or a kernel of
        :data:`FILTERS` (``kaiser``, ``lanczos``: radius 3; ``triangle``: radius 1; scaled by
        the level ratio).
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
        :mod:`gputex.mips.integer`); float32 formats use float64 where the device has
        ``shader-f64``, else (and 16-bit floats always) float-float sums, correctly rounded and
        the same bytes on every adapter (:mod:`gputex.mips.floatfloat`). ``fast``: the float
        chains (float32, within 1 LSB at 8 bits; float64 for 16-bit and float32 formats where
        the device has ``shader-f64``). ``float32``: the float32 chain only. ``int``: ``exact`` without the
        single-pass and cell forms of the integer chain (:mod:`.spd`, :mod:`.odd`, the same
        bytes): the multi-pass chain they are checked and timed against (the shader also on a
        CPU adapter, where ``exact`` computes the same integers on the host: :mod:`.cpu`).
    path
        ``compute`` or ``render``: how renderable formats without a storage-capable twin
        (r8unorm, rg8unorm, rgb10a2unorm, r16float, rg16float) get their levels; the render
        path needs a texture made with ``render_target=`` :func:`needs_render_target`.
        Default: the developer override ``GPUTEX_MIPS_PATH``, else ``compute``.
    base
        Level 0's bytes of ``layer`` as the texture holds them (``(height, width * texel
        bytes)`` uint8: what the upload wrote, e.g. :func:`gputex.convert.native_rows` of the
        image), where the caller has them: the host's engine on a CPU adapter (:mod:`.cpu`)
        then reads no level back. Ignored elsewhere.
    """
    check_options(filter, alpha, wrap)
    check_precision(precision)
    path = mips_path(path)
    kind = pack_kind(tex)
    if normal_map and tex.format.srgb:
        raise FormatError(f"{tex.source}: a normal map must not be stored in {tex.format.name}; "
                          "use --color-space linear or a non-sRGB format")
    report = MipReport(tex.levels)
    if tex.levels < 2:
        return report
    from ..capabilities import require

    require(tex.session, "mips", tex.source)  # OpenGL: zeros in some levels
    if tex.depth > 1:
        if filter != "box" or normal_map or alpha_coverage is not None:
            raise FormatError(f"{tex.source}: 3D textures get box mips only (no kernels, normal maps or "
                              "alpha coverage)")
        from .volume import chain3d

        report.sources = chain3d(tex, kind, alpha)
        return report
    if precision in ("exact", "int") and _int_chain(tex, report, filter, alpha, normal_map, alpha_coverage, layer,
                                                   measure, single_pass=precision == "exact", base=base):
        return report
    from .exact import exact_chain, exact_kernel_chain, exact_kernel_ok, exact_ok, ff_ok, ff_self_check

    float64 = use_float64(tex.session, precision)
    ff_failed = ""  # why the float-float chain's self-check failed, where it did: the float32 chain runs
    if precision in ("exact", "int") and ff_ok(tex, filter, normal_map, alpha_coverage, float64):
        passed, why = ff_self_check(tex.session, tex.format, alpha)
        if passed:
            report.exact, report.precision = True, "float-float"
            report.sources, report.gpu_ns, report.pass_ns = exact_chain(tex, alpha, layer, floatfloat=True,
                                                                        measure=measure)
            return report
        ff_failed = f"{tex.session.name}: the float-float mip chain failed its self-check ({why})"
    if exact_kernel_ok(tex, filter, normal_map, alpha_coverage, float64):
        report.sources = list(range(tex.levels - 1))
        report.exact, report.precision = True, "float64"
        report.gpu_ns, report.pass_ns = exact_kernel_chain(tex, filter, wrap, alpha, layer, measure)
        return report
    if exact_ok(tex, filter, normal_map, alpha_coverage, float64):
        report.exact, report.precision = True, "float64"
        report.sources, report.gpu_ns, report.pass_ns = exact_chain(tex, alpha, layer, measure=measure)
        return report
    _float_chain(tex, report, kind, filter, alpha, alpha_coverage, normal_map, wrap, layer, measure,
                 needs_render_target(tex.session, tex.format, path))
    report.note = f"{ff_failed}; the float32 chain was used" if ff_failed else report.note
    return report


def _float_chain(tex: Texture, report: MipReport, kind: str, filter: str, alpha: str, alpha_coverage: float | None,
                 normal_map: bool, wrap: str, layer: int, measure: bool, render: bool) -> None:
    from .chain import Chain, coverage_scales

    chain = Chain(tex, kind, filter, alpha, normal_map, wrap, layer, measure, alpha_coverage is not None, render)
    try:
        report.sources = chain.reduce_all()
        scales = [1.0] * tex.levels
        if alpha_coverage is not None and tex.format.channels in (2, 4) and not normal_map:
            chain.submit()
            scales = coverage_scales(tex, chain.work, alpha_coverage, layer)
        report.alpha_scales = scales
        chain.pack_all(scales)
        chain.submit()
        if chain.query:
            report.gpu_ns, report.pass_ns = chain.query.read()
    finally:
        chain.release()


def _int_chain(tex: Texture, report: MipReport, filter: str, alpha: str, normal_map: bool, coverage: float | None,
               layer: int, measure: bool, single_pass: bool = True, base: np.ndarray | None = None) -> bool:
    """The integer chain, where it applies and this adapter passes its self-check; its
    single-pass form (:mod:`.spd`, the same bytes) where that serves the sizes, else its cell
    form (:mod:`.odd`, the same bytes)."""
    from . import cpu, odd, spd, stored
    from .integer import int_chain, int_ok, self_check

    if not int_ok(tex, filter, normal_map, coverage):
        return False

    def host() -> bool:
        """The chain by the host's C engine (the same integers natively); False where its sums
        did not fit in memory."""
        try:
            report.sources = cpu.cpu_chain(tex, alpha, layer, base)
        except MemoryError:
            return False
        report.exact, report.precision, report.engine = True, "integer", "cpu"
        return True

    if single_pass and cpu.engine(tex, layer) == "cpu":  # on a CPU adapter
        if host():
            return True
        # the host's sums did not fit: the shader makes the same bytes
        report.note = f"{tex.source}: no host memory for the C mip engine's sums; the shader was used"
    # the first faster form (same bytes) that serves the sizes, where its self-check passes;
    # else the multi-pass chain, saying why
    forms = (("single-pass integer", spd.spd_ok, spd.self_check, spd.spd_chain),
             ("cell", odd.odd_ok, odd.self_check, odd.odd_chain))
    for name, serves, check, chain in forms if single_pass else ():
        if not serves(tex, filter, normal_map, coverage):
            continue
        ok, why = check(tex.session, tex.format, tex.color_space, alpha, tex.storage)
        if ok:
            report.sources, report.gpu_ns, report.pass_ns = chain(tex, alpha, layer, measure)
            report.exact, report.precision = True, "integer"
            stored_note = stored.store_note(tex, alpha, "mip-spd" if chain is spd.spd_chain else "mip-odd")
            sg_note = spd.subgroup_note(tex.session) if chain is spd.spd_chain else ""
            hand_note = spd.handoff_note(tex.session) if chain is spd.spd_chain else ""
            second_note = spd.second_note(tex.session) if chain is spd.spd_chain else ""
            report.note = "; ".join(n for n in (report.note, stored_note, sg_note, hand_note, second_note) if n)
            return True
        report.note = f"{tex.session.name}: the {name} mip chain failed its self-check ({why}); the integer chain was used"
        break
    passed, why = self_check(tex.session, tex.format, tex.color_space, alpha)
    # an adapter that disagrees: the exact bytes all the same from the host's C engine (no other
    # file than one that agrees gives, or than a batch's decode workers write: upload_stage.HostSplit)
    if not passed and single_pass and cpu.engine_flag() != "shader" and cpu.cpu_ok(tex, layer) and host():
        report.note = (f"{tex.session.name}: the integer mip chain failed its self-check ({why}); "
                       "the host's C engine made it")
        return True
    if not passed:
        report.note = (f"{tex.session.name}: the integer mip chain failed its self-check ({why}); "
                       "the float path was used")
        return False
    report.sources, report.gpu_ns, report.pass_ns = int_chain(tex, alpha, layer, measure)
    report.exact, report.precision = True, "integer"
    return True
