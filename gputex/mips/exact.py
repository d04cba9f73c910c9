"""The float64 paths (``shader-f64``): box levels of 16-bit and float32 formats summed from the
base and rounded once (``mip_exact.wgsl``), and Kaiser/Lanczos/... chains whose taps and
weights come from the CPU in float64 (``mip_exact_kernel.wgsl``, :func:`.filters.kernel_taps`).
:func:`record_exact_bands` is shared with the resize (:mod:`gputex.transform`)."""

from __future__ import annotations

import functools
import re
import struct
from math import gcd
from typing import TYPE_CHECKING

from ..kernels import compute_pipeline, dispatch, submit_timed, timestamps
from ..layout import align_up, bands
from .common import entries as layout_entries
from .common import pipeline
from .filters import kernel_taps

if TYPE_CHECKING:
    from ..texture import Texture

__all__ = ["EXACT_FORMATS", "EXACT_KERNEL_FORMATS", "EXACT_LOOP_LIMIT", "exact_ok", "ff_ok", "ff_self_check", "exact_chain",
           "exact_kernel_ok", "exact_kernel_chain", "record_exact_bands", "kernel_shader", "sep_tables",
           "KERNEL_SHADER", "KERNEL_SHADERS"]


#: Formats whose box mips are computed in float64 (mip_exact.wgsl) where the device has
#: shader-f64: float32 arithmetic cannot round 16-bit and float32 results correctly.
EXACT_FORMATS = {"rg16unorm": (1, 2), "rgba16unorm": (1, 4), "r32float": (3, 1), "rg32float": (3, 2),
                 "rgba32float": (3, 4)}


#: Source texels one invocation of the float64 and float-float box paths sums per dispatch
#: (larger footprints go in chunks of rows, at least a row a chunk). lavapipe stops loops after
#: 65535 iterations; on a GPU a deep level's few texels are as many invocations as chunks, each a
#: serial loop: at 32768 an H200 took 60 ms for a 2048^2 rgba32float chain in float64 and 118 ms
#: in float-float, against 0.7 ms for the float32 chain. The float-float path's bytes depend on
#: this plan (its sums' order), so it is the same on every adapter.
EXACT_LOOP_LIMIT = 1024


def exact_ok(tex: Texture, filter: str, normal_map: bool, coverage, float64: bool) -> bool:
    """Whether the float64 box path makes ``tex``'s mips (``float64``: the policy allows it,
    :func:`gputex.mips.use_float64`)."""
    return (float64 and filter == "box" and not normal_map and coverage is None
            and tex.format.name in EXACT_FORMATS)


def ff_ok(tex: Texture, filter: str, normal_map: bool, coverage, float64: bool) -> bool:
    """Whether the float-float box path (``mip_ff.wgsl``) makes ``tex``'s mips: float formats of
    linear data where the float64 path does not (16-bit floats always; 32-bit ones where
    ``float64`` is not allowed, :func:`gputex.mips.use_float64`)."""
    from .floatfloat import FF_FORMATS

    name = tex.format.name
    return (filter == "box" and not normal_map and coverage is None and name in FF_FORMATS
            and tex.color_space != "srgb" and not (float64 and name in EXACT_FORMATS))


def ff_check_image(w: int, h: int, channels: int, half: bool):
    """A float-float self-check image: values from an integer hash (no random generator whose
    stream could change), signed, magnitudes over 2^-12 .. 2^12 (2^-6 .. 2^6 for float16), alpha
    in [0, 1) with some texels 0."""
    import numpy as np

    from .integer import hashed_words

    mix = hashed_words(w, h, channels)
    span = 6 if half else 12
    frac = ((mix >> np.uint64(8)) & np.uint64(0xFFFFFF)).astype(np.float64) / 2.0 ** 24
    sign = np.where((mix & np.uint64(1)) == 1, -1.0, 1.0)
    v = sign * 2.0 ** (frac * 2 * span - span)
    if channels in (2, 4):
        v[..., -1] = np.where(((mix[..., -1] >> np.uint64(3)) % np.uint64(3)) == 0, 0.0, frac[..., -1])
    return v.astype(np.float16 if half else np.float32).astype(np.float32)


def ff_self_check(session, fmt, alpha: str) -> tuple[bool, str]:
    """Once per session and kind (format, weighted alpha): the float-float chains of a 16x8 image
    (levels from the level before) and a 13x7 one (weights from 1 to 13) must give the bytes of
    :func:`.floatfloat.model_levels`, the same float32 operations in numpy. An adapter that
    flushes subnormals or whose compiler sees through ``mip_ff.wgsl``'s walls would not. Returns
    (passed, what differed)."""
    from .floatfloat import FF_FORMATS

    channels = FF_FORMATS[fmt.name][1]
    key = ("ff-self-check", fmt.name, alpha == "weighted" and channels in (2, 4))
    return session.cache("mip-ff").get(key, lambda: _ff_matches(session, fmt, alpha))


def _ff_matches(session, fmt, alpha: str) -> tuple[bool, str]:
    import numpy as np
    import wgpu

    from ..capture import capture
    from ..decode import from_array
    from ..upload import upload
    from .floatfloat import FF_FORMATS, model_levels

    channels = FF_FORMATS[fmt.name][1]
    half = fmt.name.endswith("16float")
    for w, h in ((16, 8), (13, 7)):
        img = ff_check_image(w, h, channels, half)
        levels = max(w, h).bit_length()
        tex = upload(session, from_array(img, "linear"), fmt.name, levels=levels, color_space="linear",
                     usage=wgpu.TextureUsage.TEXTURE_BINDING)
        try:
            exact_chain(tex, alpha, 0, floatfloat=True)
            got = [np.asarray(capture(tex, lv), np.float32).reshape(max(1, h >> lv), max(1, w >> lv), channels)
                   for lv in range(1, levels)]
        finally:
            tex.destroy()
        want = model_levels(img, levels, weighted=alpha == "weighted", half=half, loop_limit=EXACT_LOOP_LIMIT)
        for lv, (g, m) in enumerate(zip(got, want), start=1):
            bad = np.argwhere(g.view(np.uint32) != m.view(np.uint32))
            if len(bad):
                y, x, c = (int(v) for v in bad[0])
                return False, f"{w}x{h} level {lv} texel ({x}, {y}) channel {c}: {g[y, x, c]!r}, not {m[y, x, c]!r}"
    return True, ""


def exact_chain(tex: Texture, alpha: str, layer: int, floatfloat: bool = False,
                measure: bool = False) -> tuple[list[int], int | None, list[int]]:
    """Every level from the base, box filter, float64 sums and final rounding (``floatfloat``:
    float-float sums from float32 arithmetic, ``mip_ff.wgsl``, for :func:`ff_ok`'s formats; a
    level of :func:`~gputex.mips.floatfloat.chain_plan`'s tree adds the level before's kept sums).
    Returns each level's source level (:attr:`MipReport.sources`) and, with ``measure`` (and
    timestamp queries), (GPU ns, each pass's ns), else (None, [])."""
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    if floatfloat:
        from .floatfloat import FF_FORMATS, STEPS, axis_flags, chain_plan, kept_values

        code, channels = FF_FORMATS[fmt.name]
        shader = "mip_ff.wgsl"
        weighted = alpha == "weighted" and channels in (2, 4)
        consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": weighted, "STEPS": STEPS,
                  "KEPT": kept_values(weighted)}
    else:
        code, channels = EXACT_FORMATS[fmt.name]
        srgb = tex.color_space == "srgb"
        shader = "mip_exact.wgsl"
        consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": alpha == "weighted" and channels in (2, 4),
                  "DECODE_SRGB": srgb, "ENCODE_SRGB": srgb}
    s = wgpu.ShaderStage.COMPUTE
    entries = layout_entries("pack") + [{"binding": 3, "visibility": s,
                                   "buffer": {"type": wgpu.BufferBindingType.storage}}]
    if floatfloat:  # the levels' kept sums: the previous level's (read), this level's (written)
        entries += [{"binding": 4, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
                    {"binding": 5, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}}]
    base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer, array_layer_count=1, dimension="2d")
    limit = min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
    w0, h0 = tex.size(0)
    how = chain_plan(w0, h0, tex.levels, weighted) if floatfloat else [("base", False)] * (tex.levels - 1)
    sources = [0 if tree == "base" else level - 1 for level, (tree, _) in enumerate(how, start=1)]
    plan = []
    for level in range(1, tex.levels):
        dw, dh = tex.size(level)
        pitch = align_up(dw * fmt.block_bytes, 256)
        fw, fh = -(-w0 // dw) + 1, -(-h0 // dh) + 1  # widest footprint, in texels
        rows = fh if fw * fh <= EXACT_LOOP_LIMIT else max(1, EXACT_LOOP_LIMIT // fw)
        chunks = 1 if how[level - 1][0] == "tree" else -(-fh // rows)
        parts = bands(dh, pitch, limit) if chunks == 1 else bands(dh, pitch, min(limit, (64 << 20) // chunks))
        plan.append((level, dw, dh, pitch, parts, rows, chunks))
    size = max(pitch * (r1 - r0) for _, _, _, pitch, parts, _, _ in plan for r0, r1 in parts)
    partial_size = max([64 * dw * (r1 - r0) * chunks for _, dw, _, _, parts, _, chunks in plan if chunks > 1
                        for r0, r1 in parts] + [64])
    scratch = session.check(f"{tex.source}: mip buffer", device.create_buffer, size=size,
                            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    partial = session.check(f"{tex.source}: mip partial sums", device.create_buffer, size=partial_size,
                            usage=wgpu.BufferUsage.STORAGE)
    passes = sum(len(parts) * (2 if chunks > 1 else 1) for _, _, _, _, parts, _, chunks in plan)
    query = timestamps(session, passes) if measure else None
    made = [scratch, partial]
    kept: list = [None, None]  # levels keep their sums in turn in these two
    if floatfloat:
        for i in (0, 1):
            need = [dw * dh * kept_values(weighted) * 8 for level, dw, dh, *_ in plan
                    if how[level - 1][1] and level % 2 == i]
            kept[i] = session.check(f"{tex.source}: mip level sums", device.create_buffer,
                                    size=max(need + [16]), usage=wgpu.BufferUsage.STORAGE)
            made.append(kept[i])
    try:
        enc = device.create_command_encoder()
        for level, dw, dh, pitch, parts, rows, chunks in plan:
            extra, prev, entry = [], (0, 0), "main"
            if floatfloat:  # each axis's weights: all 1, all below 2^12, or any (pipeline constants)
                (ux, sx), (uy, sy) = axis_flags(w0, dw), axis_flags(h0, dh)
                tree, keep = how[level - 1]
                consts.update(UNIT_X=ux, SMALL_X=sx, UNIT_Y=uy, SMALL_Y=sy, KEEP=keep)
                read, write = kept[(level - 1) % 2], kept[level % 2]
                extra = [{"binding": 4, "resource": {"buffer": read, "offset": 0, "size": read.size}},
                         {"binding": 5, "resource": {"buffer": write, "offset": 0, "size": write.size}}]
                if tree == "tree":
                    prev, entry = tex.size(level - 1), "tree"
            pipe, bgl = pipeline(session, shader, consts, entries, entry)
            # (compiled only where a level's footprints go in chunks: lavapipe compiles each variant)
            finish = pipeline(session, shader, consts, entries, "finish")[0] if chunks > 1 else None
            record_exact_bands(enc, session, (pipe, finish, bgl), base, scratch, partial, (w0, h0),
                               (dw, dh, pitch, parts, rows, chunks), tex.texture, level, layer, query, extra, prev)
        return (sources, *submit_timed(session, enc, query,
                                       f"{tex.source}: mip chain ({'float-float' if floatfloat else 'float64'})"))
    finally:
        for b in made:
            b.destroy()


#: Kernel chains in float64: the exact formats, and the 4-byte 8-bit ones (a kernel with weighted
#: alpha divides by a filtered alpha that negative lobes can bring near 0: float32 was off by
#: up to 160 LSB there at 8 bits).
EXACT_KERNEL_FORMATS = {**EXACT_FORMATS, "rgba8unorm": (0, 4), "rgba8unorm-srgb": (0, 4), "bgra8unorm": (0, 4),
                        "bgra8unorm-srgb": (0, 4)}


def exact_kernel_ok(tex: Texture, filter: str, normal_map: bool, coverage, float64: bool) -> bool:
    """Kernels in float64 where the policy allows it (``float64``) and the first level's float64
    values fit one storage binding."""
    if not float64 or filter == "box" or normal_map or coverage is not None \
            or tex.format.name not in EXACT_KERNEL_FORMATS:
        return False
    w1, h1 = tex.size(1)
    limit = tex.session.limits.get("max-storage-buffer-binding-size", 128 << 20)
    return w1 * h1 * 64 <= limit


#: Tile of a level one workgroup of ``mip_exact_sep.wgsl`` makes, and the most distinct source
#: columns / rows its taps may reach (the shader's TW, TH, SXMAX, SYMAX).
SEP_TILE = (8, 16)
SEP_SLOTS = (32, 48)
#: The most taps a texel of ``mip_exact_sep.wgsl`` may have on one axis (its KMAX: the tile's taps are
#: copied into workgroup memory).
SEP_TAPS = 16
#: The float64 kernel chains keep each level's values a plane per value (``mip_kernel_out.wgsl``'s
#: SOA) instead of a texel's 8 words side by side: the separable shader's invocations then read
#: neighbouring words. H200, 4096^2 sRGB RGBA8 Kaiser, weighted alpha: level 2 1.44 -> 0.76 ms, the
#: chain 6.20 -> 5.02 ms, the same bytes (``benchmarks/mip_kernel_variants.py``, variant ``aos``).
SOA = True


def _tile_axis(taps, tile: int, cap: int):
    """Per tile of ``tile`` texels: the distinct source indices its taps reach (None if more than
    ``cap``), and each texel's taps as positions in that list."""
    slots, lists, weights = [], [], []
    for g0 in range(0, len(taps), tile):
        group = taps[g0:g0 + tile]
        union = sorted(set().union(*(ids for ids, _ in group)))
        if len(union) > cap:
            return None
        pos = {v: i for i, v in enumerate(union)}
        lists += [len(union)] + union + [0] * (cap - len(union))
        for ids, w in group:
            slots.append([pos[i] for i in ids])
            weights.append(w)
    return slots, lists, weights


@functools.lru_cache(maxsize=64)
def sep_tables(pw: int, ph: int, dw: int, dh: int, filter: str, wrap: str) -> tuple[bytes, bytes, tuple[int, ...]] | None:
    """``mip_exact_sep.wgsl``'s taps (u32: x and y (start, count) pairs, the taps as slots, the
    tiles' source lists), weights (float64) and offsets (ytaps, xlists, ylists, widx) for a level
    going from pw x ph to dw x dh; None where a tile would reach more source texels than the
    shader holds (not in a mip chain: a level is at most 2 + 1/size times smaller)."""
    import numpy as np

    xt, yt = kernel_taps(pw, dw, filter, wrap), kernel_taps(ph, dh, filter, wrap)
    if max(len(ids) for ids, _ in xt + yt) > SEP_TAPS:
        return None
    ax = _tile_axis(xt, SEP_TILE[0], SEP_SLOTS[0])
    ay = _tile_axis(yt, SEP_TILE[1], SEP_SLOTS[1])
    if ax is None or ay is None:
        return None
    widx = 2 * (dw + dh)
    pairs: list[int] = []
    flat: list[int] = []
    for slots in (ax[0], ay[0]):
        for s in slots:
            pairs += [widx + len(flat), len(s)]
            flat += s
    xlists = widx + len(flat)
    ylists = xlists + len(ax[1])
    data = np.array(pairs + flat + ax[1] + ay[1], np.uint32).tobytes()
    w = np.concatenate(ax[2] + ay[2]).astype(np.float64).tobytes()
    return data, w, (2 * dw, xlists, ylists, widx)


#: ``mip_exact_sep.wgsl``'s two forms: with its tile's taps copied into workgroup memory (measured on
#: the H200) and, for devices whose workgroup memory is smaller, with each sum reading them from the
#: storage buffers (the placeholders for the second).
SEP_GLOBAL_TAPS = {"SMEM_TAPS": "false", "TTAB": 1}
_WORKGROUP_VAR = re.compile(r"var<workgroup>\s+\w+\s*:\s*(array<(\w+),\s*(\d+)>|vec2<u32>|u32)")


def workgroup_bytes(code: str) -> int:
    """Bytes of workgroup memory a shader's ``var<workgroup>`` declarations take (arrays of u32, f32
    or f64; a vec2<u32> or u32 alone)."""
    total = 0
    for m in _WORKGROUP_VAR.finditer(code):
        if m.group(2):
            total += int(m.group(3)) * (8 if m.group(2) == "f64" else 4)
        else:
            total += 8 if m.group(1).startswith("vec2") else 4
    return total


@functools.lru_cache(maxsize=8)
def sep_form(limit: int) -> dict | None:
    """The placeholders of the ``mip_exact_sep.wgsl`` form that fits ``limit`` bytes of workgroup
    memory (the device's ``max-compute-workgroup-storage-size``): ``{}`` (the taps in workgroup
    memory), :data:`SEP_GLOBAL_TAPS`, or None where neither fits (the 2D shader then)."""
    from ..kernels import load_wgsl

    for subs in ({}, SEP_GLOBAL_TAPS):
        if workgroup_bytes(load_wgsl("mip_exact_sep.wgsl", **subs)) <= limit:
            return subs
    return None


def workgroup_limit(session) -> int:
    return int(session.limits.get("max-compute-workgroup-storage-size", 16384))


#: ``mip_exact_sep.wgsl`` (``sep``) or ``mip_exact_kernel.wgsl`` (``2d``) for the float64 kernel
#: chains: adapter types that take the ``2d`` shader instead of the default ``sep`` (none).
#: Measured (``benchmarks/mips_kernels.py --shaders``, 4096^2 rgba8unorm-srgb, the same level
#: bytes from both): on lavapipe the separable shader is 3-5x faster; on the H200 6.17 ms against
#: 12.85 ms, 2.08x (``benchmarks/results/mips-kernels-h200-integ.txt``; its first version, with
#: local arrays, had been 1.6x slower there: ``mips-kernels-h200-8f10067.txt``), and 5.02 ms with
#: the values in planes and the tile's taps in workgroup memory (``mips-kernels-h200-s35-call4.txt``).
KERNEL_SHADER: dict[str, str] = {}
KERNEL_SHADERS = ("sep", "2d")


def kernel_shader(session) -> str:
    """Which float64 kernel shader runs on ``session``'s adapter: the developer override
    ``GPUTEX_MIPS_KERNEL`` (``sep`` or ``2d``), else :data:`KERNEL_SHADER` by adapter type
    (``sep`` where it has no entry), and ``2d`` where no form of the separable shader fits the
    device's workgroup memory (:func:`sep_form`)."""
    from ..devflags import flag
    from ..errors import FormatError

    env = flag("GPUTEX_MIPS_KERNEL")
    if env is not None:
        if env.lower() not in KERNEL_SHADERS:
            raise FormatError(f"GPUTEX_MIPS_KERNEL must be sep or 2d, got {env!r}")
        return env.lower()
    if sep_form(workgroup_limit(session)) is None:
        return "2d"
    return KERNEL_SHADER.get(getattr(session.info, "adapter_type", ""), "sep")


def exact_kernel_chain(tex: Texture, filter: str, wrap: str, alpha: str, layer: int,
                       measure: bool = False) -> tuple[int | None, list[int]]:
    """Each level from the previous one's float64 values: ``mip_exact_sep.wgsl`` (separable, in
    tiles) where :func:`kernel_shader` says ``sep`` and the level fits its tiles, else
    ``mip_exact_kernel.wgsl`` (each texel's 2D footprint). With ``measure`` (and
    timestamp queries): (GPU ns from the first pass's begin to the last one's end, each pass's ns)."""
    import numpy as np
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    code, channels = EXACT_KERNEL_FORMATS[fmt.name]
    srgb = tex.color_space == "srgb"
    weighted = alpha == "weighted" and channels in (2, 4)
    s = wgpu.ShaderStage.COMPUTE

    def ro(b):
        return {"binding": b, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.read_only_storage}}

    entries = layout_entries("pack") + [ro(3), {"binding": 4, "visibility": s,
                                          "buffer": {"type": wgpu.BufferBindingType.storage}}, ro(5), ro(6)]
    base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer, array_layer_count=1, dimension="2d")
    keep = []
    sep = kernel_shader(session) == "sep"
    form = sep_form(workgroup_limit(session))
    sep_subs = SEP_GLOBAL_TAPS if form is None else form  # (the override forces sep: its smaller form)
    query = timestamps(session, tex.levels) if measure else None
    try:
        enc = device.create_command_encoder()
        # level 1 reads the base; where its codes are decoded by tables (4-byte 8-bit formats,
        # separable shader), `prev` holds them: 256 colour values, 256 alpha values
        prev = device.create_buffer(size=512 * 8, usage=wgpu.BufferUsage.STORAGE)
        keep.append(prev)
        for level in range(1, tex.levels):
            (pw, ph), (dw, dh) = tex.size(level - 1), tex.size(level)
            tables = sep_tables(pw, ph, dw, dh, filter, wrap) if sep else None
            if tables is not None:
                tap_data, weight_data, (ytaps, xlists, ylists, widx) = tables
                shader, groups = "mip_exact_sep.wgsl", (-(-dw // SEP_TILE[0]), -(-dh // SEP_TILE[1]), 1)
            else:
                xt, yt = kernel_taps(pw, dw, filter, wrap), kernel_taps(ph, dh, filter, wrap)
                pairs, idx, wts = [], [], []
                widx = 2 * (dw + dh)
                for taps_ in (xt, yt):
                    for ids, w in taps_:
                        pairs += [widx + len(idx), len(ids)]
                        idx += ids
                        wts.append(w)
                tap_data = np.array(pairs + idx, np.uint32).tobytes()
                weight_data = np.concatenate(wts).astype(np.float64).tobytes()
                shader, groups = "mip_exact_kernel.wgsl", (-(-dw // 8), -(-dh // 8), 1)
            taps_buf = device.create_buffer_with_data(data=tap_data, usage=wgpu.BufferUsage.STORAGE)
            w_buf = device.create_buffer_with_data(data=weight_data, usage=wgpu.BufferUsage.STORAGE)
            values = 8 * (7 if weighted else 4) if SOA else 64  # bytes a texel (mip_kernel_out.wgsl)
            nxt = session.check(f"{tex.source}: mip level values", device.create_buffer, size=dw * dh * values,
                                usage=wgpu.BufferUsage.STORAGE)
            pitch = align_up(dw * fmt.block_bytes, 256)
            out = session.check(f"{tex.source}: mip buffer", device.create_buffer, size=pitch * dh,
                                usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
            keep += [taps_buf, w_buf, nxt, out]
            consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": weighted, "DECODE_SRGB": srgb,
                      "ENCODE_SRGB": srgb, "SRC_IS_BASE": level == 1, "SRGB_FORMAT": fmt.srgb, "BGRA": fmt.bgra,
                      "SOA": SOA}
            subs = sep_subs if tables is not None else {}
            pipe, bgl = compute_pipeline(session, shader, entries, constants=consts, subs=subs)
            if tables is not None and level == 1 and code == 0 and channels == 4:  # the tables first (their own pass)
                make, _ = compute_pipeline(session, shader, entries, entry="make_tables", constants=consts, subs=subs)
                dispatch(enc, make, device.create_bind_group(layout=bgl, entries=[
                    {"binding": 0, "resource": base},
                    {"binding": 1, "resource": {"buffer": out, "offset": 0, "size": out.size}},
                    {"binding": 2, "resource": {"buffer": session.uniform(bytes(48))}},
                    {"binding": 3, "resource": {"buffer": nxt, "offset": 0, "size": nxt.size}},
                    {"binding": 4, "resource": {"buffer": prev, "offset": 0, "size": prev.size}},
                    {"binding": 5, "resource": {"buffer": taps_buf, "offset": 0, "size": taps_buf.size}},
                    {"binding": 6, "resource": {"buffer": w_buf, "offset": 0, "size": w_buf.size}}]), (4, 1, 1),
                    query.next() if query else None)
            if tables is not None:
                prm = struct.pack("<9I", dw, dh, pitch // 4, pw, ytaps, xlists, ylists, widx, pw * ph)
            else:
                prm = struct.pack("<6I", dw, dh, pitch // 4, pw, widx, pw * ph)
            bind = device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": base},
                {"binding": 1, "resource": {"buffer": out, "offset": 0, "size": out.size}},
                {"binding": 2, "resource": {"buffer": session.uniform(prm)}},
                {"binding": 3, "resource": {"buffer": prev, "offset": 0, "size": prev.size}},
                {"binding": 4, "resource": {"buffer": nxt, "offset": 0, "size": nxt.size}},
                {"binding": 5, "resource": {"buffer": taps_buf, "offset": 0, "size": taps_buf.size}},
                {"binding": 6, "resource": {"buffer": w_buf, "offset": 0, "size": w_buf.size}}])
            dispatch(enc, pipe, bind, groups, query.next() if query else None)
            enc.copy_buffer_to_texture({"buffer": out, "offset": 0, "bytes_per_row": pitch, "rows_per_image": dh},
                                       {"texture": tex.texture, "mip_level": level, "origin": (0, 0, layer)},
                                       (dw, dh, 1))
            prev = nxt
        return submit_timed(session, enc, query, f"{tex.source}: mip chain (float64 kernels)")
    finally:
        for b in keep:
            b.destroy()


def record_exact_bands(enc, session, pipes, base, scratch, partial, src_size, plan, target, level: int,
                       layer: int, query=None, extra=(), prev=(0, 0)) -> None:
    """Record one float64 box level (``mip_exact.wgsl``) into ``enc``: each row band of the
    ``(dw, dh, pitch, parts, rows, chunks)`` plan summed from ``base`` into ``scratch`` (in
    ``chunks`` partial sums when the footprints are long), then copied into ``target``'s
    ``level`` (each pass timed where ``query`` is a :class:`gputex.kernels.Timestamps`; ``extra``:
    more bind group entries, ``prev``: the previous level's size, for ``mip_ff.wgsl``). Shared by
    the mip chain and the resize (:mod:`gputex.transform`)."""
    pipe, finish, bgl = pipes
    w0, h0 = src_size
    dw, dh, pitch, parts, rows, chunks = plan
    for r0, r1 in parts:
        # mip_ff.wgsl's `zero` (0) and `gcd` follow mip_exact.wgsl's Params
        prm = struct.pack("<14I", w0, h0, dw, dh, pitch // 4, r0, r1 - r0, chunks, rows, 0, gcd(w0, dw), gcd(h0, dh),
                          *prev)
        bind = session.device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": base},
            {"binding": 1, "resource": {"buffer": scratch, "offset": 0, "size": scratch.size}},
            {"binding": 2, "resource": {"buffer": session.uniform(prm)}},
            {"binding": 3, "resource": {"buffer": partial, "offset": 0, "size": partial.size}}, *extra])
        dispatch(enc, pipe, bind, (-(-dw // 8), -(-(r1 - r0) // 8), chunks), query.next() if query else None)
        if chunks > 1:  # its own pass: the partial sums are complete before they are added
            dispatch(enc, finish, bind, (-(-dw // 8), -(-(r1 - r0) // 8), 1), query.next() if query else None)
        enc.copy_buffer_to_texture(
            {"buffer": scratch, "offset": 0, "bytes_per_row": pitch, "rows_per_image": r1 - r0},
            {"texture": target, "mip_level": level, "origin": (0, r0, layer)}, (dw, r1 - r0, 1))
