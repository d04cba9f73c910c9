"""Transforms: resize on the GPU with the mip filters, channel swizzles, channel packing.

**Resize** (``--resize WxH``, ``--max-size N``, ``--pot``): level 0 of a new texture is the
old level 0 filtered to the new size by the same shaders and arithmetic the mip chain uses
(``mip_reduce.wgsl`` into a float32 work level, ``mip_pack.wgsl`` into the format's bytes):
``box`` is the exact area average over the source footprint, with fractional edge weights
(on 5 -> 2 texels: 0.4, 0.4, 0.2; enlarging, each texel is the average of the one or two
source texels its footprint overlaps); ``kaiser`` and ``lanczos`` are the radius-3 kernels
scaled by the ratio (not scaled when enlarging), ``--wrap`` resolving taps beyond the edge.
Colour is filtered in linear light for sRGB data, alpha with the ``--alpha`` modes, normal
maps renormalized. The mip chain then starts from the resized image. Where the mips take
their float64 path (device feature ``shader-f64``: box for 16-bit unorm and float32 formats,
``mip_exact.wgsl``; kernels also for the 4-byte 8-bit formats, ``mip_exact_kernel.wgsl`` with
the taps computed here in float64), so does the resize: correctly rounded, within half a unit
in the last place of a float64 reference. Elsewhere it runs the mips' float32 passes: within
1 LSB at 8 bits and 0.55 LSB at 16 bits. Sizes are pure arithmetic (:func:`target_size`).

**Swizzle** (``--swizzle``) and **pack** (``--pack``) work on the decoded image's stored
codes on the CPU, before upload, so they are exact and the upload check still compares
what was sent.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .batch import Item
from .errors import DecodeError, FormatError, UsageError

if TYPE_CHECKING:
    from .decode import Image
    from .texture import Texture

__all__ = ["Transform", "parse_size", "check_swizzle", "target_size", "nearest_pot", "apply_swizzle",
           "resize_texture", "PackItem", "pack_item", "pack_channels"]


@dataclass(frozen=True)
class Transform:
    """What to do to each input besides uploading it (the CLI fills it from flags)."""

    resize: tuple[int, int] | None = None  # (W, H); one side 0: keep the aspect ratio
    max_size: int | None = None
    pot: bool = False
    swizzle: str | None = None

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        return target_size(width, height, self.resize, self.max_size, self.pot)


def parse_size(text: str) -> tuple[int, int]:
    """``"WxH"`` -> ``(W, H)``; one of them may be 0 (keep the aspect ratio)."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise UsageError(f"--resize wants WxH, e.g. 512x256 or 512x0, got {text!r}")
    w, h = int(parts[0]), int(parts[1])
    if w == 0 and h == 0:
        raise UsageError(f"--resize {text}: give at least one side")
    return w, h


SWIZZLE_CHARS = "rgba01"


def check_swizzle(spec: str) -> str:
    """A swizzle is 1 to 4 of ``r g b a 0 1``; the count is the output's channel count."""
    s = spec.strip().lower()
    if not 1 <= len(s) <= 4 or any(c not in SWIZZLE_CHARS for c in s):
        raise UsageError(f"--swizzle wants 1-4 of r, g, b, a, 0, 1 (e.g. bgra, rrr1, rgb1), got {spec!r}")
    return s


def nearest_pot(n: int) -> int:
    """The power of two nearest to ``n`` (ties go up: 48 -> 64, 40 -> 32)."""
    lower = 1 << (n.bit_length() - 1)
    if lower == n:
        return n
    upper = lower << 1
    return upper if upper - n <= n - lower else lower


def _scaled(x: int, num: int, den: int) -> int:
    """``round(x * num / den)``, halves up, at least 1 (exact integers)."""
    return max(1, (2 * x * num + den) // (2 * den))


def target_size(width: int, height: int, resize: tuple[int, int] | None = None, max_size: int | None = None,
                pot: bool = False) -> tuple[int, int]:
    """The size after ``--resize`` (a 0 side keeps the aspect ratio), then ``--pot`` (each side to
    its nearest power of two), then ``--max-size`` (the longer side down to N, the other in
    proportion; with ``--pot`` both sides are halved until they fit, so they stay powers of two)."""
    w, h = width, height
    if resize is not None:
        rw, rh = resize
        w, h = (rw or _scaled(width, rh, height)), (rh or _scaled(height, rw, width))
    if pot:
        w, h = nearest_pot(w), nearest_pot(h)
    if max_size is not None and max(w, h) > max_size:
        if pot:
            while max(w, h) > max_size:
                w, h = max(1, w >> 1), max(1, h >> 1)
        elif w >= h:
            w, h = max_size, _scaled(h, max_size, w)
        else:
            w, h = _scaled(w, max_size, h), max_size
    return w, h


def _canonical(pixels):
    """``(H, W, 4)`` rgba view of 1-4 channel pixels: grey -> r = g = b, alpha at its maximum
    where absent (as the uploads convert)."""
    import numpy as np

    c = pixels.shape[2]
    one = _one(pixels.dtype)
    if c == 4:
        return pixels
    full = np.full(pixels.shape[:2] + (1,), one, pixels.dtype)
    if c == 1:
        return np.concatenate([pixels] * 3 + [full], axis=2)
    if c == 2:
        return np.concatenate([pixels[:, :, :1]] * 3 + [pixels[:, :, 1:]], axis=2)
    return np.concatenate([pixels, full], axis=2)


def _one(dtype):
    import numpy as np

    return np.iinfo(dtype).max if dtype.kind == "u" else (1 if dtype.kind == "i" else 1.0)


def apply_swizzle(image: Image, spec: str) -> Image:
    """``image`` with its channels reordered: each character of ``spec`` (``r g b a 0 1``) is
    one output channel, read from the image as rgba (grey is r = g = b; a missing alpha is
    the maximum); ``0``/``1`` are the constants (1 = the maximum code, 1.0 for floats).
    Two output channels make a grey+alpha image (an ``rg`` texture). Codes are copied
    unchanged and the colour space is kept."""
    import numpy as np

    from .decode import Image

    spec = check_swizzle(spec)
    src = _canonical(image.pixels)
    one = _one(src.dtype)
    chans = [np.full(src.shape[:2], 0 if c == "0" else one, src.dtype) if c in "01" else src[:, :, "rgba".index(c)]
             for c in spec]
    return Image(np.ascontiguousarray(np.stack(chans, axis=2)), image.color_space, image.source, image.mode)


# -- channel packing ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PackItem(Item):
    """One ``--pack`` input: ``channels`` is ``((dest, path or None, source channel or constant), ...)``."""

    sources: tuple[str, ...] = ()
    channels: tuple[tuple[str, str | None, str], ...] = ()
    stem: str = ""


def pack_item(spec: str) -> PackItem:
    """Parse ``r=rough.png,g=metal.png:g,b=ao.png,a=1``: each of r, g, b, a at most once, from a
    file (its channel ``:r``/``:g``/``:b``/``:a``, default its first) or a constant ``0``/``1``."""
    seen: dict[str, tuple[str | None, str]] = {}
    for part in (p.strip() for p in spec.split(",")):
        dest, eq, what = part.partition("=")
        dest = dest.strip().lower()
        if not eq or dest not in ("r", "g", "b", "a") or not what.strip():
            raise UsageError(f"--pack {spec!r}: each part is CHANNEL=FILE[:c] or CHANNEL=0|1 with CHANNEL one "
                             f"of r, g, b, a; got {part!r}")
        if dest in seen:
            raise UsageError(f"--pack {spec!r}: channel {dest} given twice")
        what = what.strip()
        if what in ("0", "1"):
            seen[dest] = (None, what)
        elif len(what) > 2 and what[-2] == ":" and what[-1].lower() in "rgba":
            seen[dest] = (what[:-2], what[-1].lower())
        else:
            seen[dest] = (what, "r")
    order = "rgba"
    n = max(order.index(d) for d in seen) + 1
    channels = tuple((d, *seen.get(d, (None, "0"))) for d in order[:n])
    sources = tuple(dict.fromkeys(p for _, p, _ in channels if p is not None))
    if not sources:
        raise UsageError(f"--pack {spec!r}: no image file in it")
    stem = os.path.splitext(os.path.basename(sources[0]))[0] + "_packed"
    return PackItem(spec, sources=sources, channels=channels, stem=stem)


def pack_channels(channels, decode: Callable[[str], Image], *, color_space: str | None = None,
                  source: str | None = None) -> Image:
    """One image whose channels come from several images (``channels`` as in :class:`PackItem`;
    ``decode(path)`` reads each file once). The result has as many channels as the highest
    one named (r: 1, rg: 2, rgb: 3, rgba: 4); channels named by nobody below it are 0. All
    sources must share their size; the result takes the widest sample type among them
    (8-bit codes become 16-bit as ``x * 257``, unorm codes become float as ``x / (2^n - 1)``)
    and is linear data unless ``color_space`` says otherwise."""
    import numpy as np

    from .decode import Image

    images: dict[str, Image] = {}
    for _, path, _ in channels:
        if path is not None and path not in images:
            im = decode(path)
            if not hasattr(im, "pixels"):
                raise FormatError(f"{path}: --pack takes images; this is a texture file")
            if im.kind == "int":
                raise FormatError(f"{path}: --pack takes unorm or float images; this holds integers")
            images[path] = im
    first_path, first = next(iter(images.items()))
    for path, im in images.items():
        if (im.width, im.height) != (first.width, first.height):
            raise DecodeError(f"{path}: {im.width}x{im.height} does not match {first_path} "
                              f"({first.width}x{first.height}); --pack inputs must share their size")
    kinds = {im.pixels.dtype for im in images.values()}
    dtype = np.dtype(np.float32) if any(k.kind == "f" for k in kinds) else (
        np.dtype(np.uint16) if np.dtype(np.uint16) in kinds else np.dtype(np.uint8))
    out = np.zeros((first.height, first.width, len(channels)), dtype)
    for i, (_, path, what) in enumerate(channels):
        if path is None:
            out[:, :, i] = 0 if what == "0" else _one(dtype)
            continue
        plane = _canonical(images[path].pixels)[:, :, "rgba".index(what)]
        out[:, :, i] = _widen(plane, dtype)
    return Image(out, color_space or "linear", source or ",".join(images), "pack")


def _widen(plane, dtype):
    import numpy as np

    if plane.dtype == dtype:
        return plane
    if dtype.kind == "f":
        return plane.astype(np.float64) / np.iinfo(plane.dtype).max if plane.dtype.kind == "u" else plane
    return plane.astype(np.uint16) * 257  # uint8 -> uint16, exact


# -- resize on the GPU -------------------------------------------------------------------------

def resize_texture(tex: Texture, width: int, height: int, *, levels: int = 1, filter: str = "box",
                   alpha: str = "weighted", normal_map: bool = False, wrap: str = "clamp",
                   alpha_coverage: float | None = None, usage: int = 0, precision: str = "exact",
                   render_target: bool = False, store_levels: str = "") -> Texture:
    """A new texture of ``width`` x ``height`` (``levels`` mip levels allocated, not filled)
    whose level 0 is ``tex``'s level 0 (every layer) filtered on the GPU (see the module
    docstring); ``tex`` is left as it is. ``alpha_coverage`` is accepted for the mip options'
    sake and does not apply to the resize itself. ``precision``: as :func:`gputex.generate_mips`'s
    (``float32``: never the float64 path); ``render_target``: the new texture's mips will be drawn
    (:func:`gputex.mips.needs_render_target`); ``store_levels``: they will be stored through that
    format (:func:`gputex.mips.stored_format`)."""
    import wgpu

    from .mips import check_options, use_float64
    from .mips.common import pack_kind
    from .texture import create_texture

    check_options(filter, alpha, wrap)
    float64 = use_float64(tex.session, precision)
    if tex.depth > 1 or tex.format.compressed:
        raise FormatError(f"{tex.source}: resizing needs an uncompressed 2D texture")
    pack_kind(tex)  # integer formats cannot be filtered: one clear error
    if normal_map and tex.format.srgb:
        raise FormatError(f"{tex.source}: a normal map must not be stored in {tex.format.name}; "
                          "use --color-space linear or a non-sRGB format")
    out = create_texture(tex.session, tex.format, width, height, layers=tex.layers, levels=levels,
                         usage=wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC | usage,
                         color_space=tex.color_space, source=tex.source, render_target=render_target,
                         store_levels=store_levels)
    out.faces, out.array = tex.faces, tex.array
    exact = _exact_path(tex, width, height, filter, normal_map) if float64 else None
    try:
        for layer in range(tex.layers):
            if exact == "box":
                _exact_box_layer(tex, out, layer, alpha)
            elif exact == "kernel":
                _exact_kernel_layer(tex, out, layer, filter, wrap, alpha)
            else:
                _resize_layer(tex, out, layer, filter, alpha, normal_map, wrap)
    except BaseException:
        out.destroy()
        raise
    return out


def _exact_path(tex: Texture, width: int, height: int, filter: str, normal_map: bool) -> str | None:
    """``"box"`` / ``"kernel"`` where the mips would take their float64 path for this format and
    filter (``mip_exact.wgsl`` / ``mip_exact_kernel.wgsl``: correctly rounded box averages of 16-bit
    and float32 data; kernels of those and of the 4-byte 8-bit formats), else None (float32).
    The caller has checked that float64 is allowed (:func:`gputex.mips.use_float64`)."""
    from .mips.exact import EXACT_FORMATS, EXACT_KERNEL_FORMATS

    if normal_map:
        return None
    if filter == "box":
        return "box" if tex.format.name in EXACT_FORMATS else None
    limit = tex.session.limits.get("max-storage-buffer-binding-size", 128 << 20)
    return "kernel" if tex.format.name in EXACT_KERNEL_FORMATS and width * height * 64 <= limit else None


def _exact_box_layer(tex: Texture, out: Texture, layer: int, alpha: str) -> None:
    """One level of ``mip_exact.wgsl`` from ``tex``'s level 0 to ``out``'s: float64 sums, one
    rounding (large footprints summed in chunks of rows, as the mips do)."""
    import wgpu

    from .layout import align_up, bands
    from .mips import common
    from .mips.exact import EXACT_FORMATS, EXACT_LOOP_LIMIT, record_exact_bands

    session, device, fmt = tex.session, tex.session.device, tex.format
    code, channels = EXACT_FORMATS[fmt.name]
    srgb = tex.color_space == "srgb"
    consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": alpha == "weighted" and channels in (2, 4),
              "DECODE_SRGB": srgb, "ENCODE_SRGB": srgb}
    entries = common.entries("pack") + [{"binding": 3, "visibility": wgpu.ShaderStage.COMPUTE,
                                   "buffer": {"type": wgpu.BufferBindingType.storage}}]
    pipe, bgl = common.pipeline(session, "mip_exact.wgsl", consts, entries)
    finish, _ = common.pipeline(session, "mip_exact.wgsl", consts, entries, "finish")
    (w0, h0), (dw, dh) = tex.size(0), out.size(0)
    limit = min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
    pitch = align_up(dw * fmt.block_bytes, 256)
    fw, fh = -(-w0 // dw) + 1, -(-h0 // dh) + 1  # widest footprint, in texels
    rows = fh if fw * fh <= EXACT_LOOP_LIMIT else max(1, EXACT_LOOP_LIMIT // fw)
    chunks = -(-fh // rows)
    parts = bands(dh, pitch, limit) if chunks == 1 else bands(dh, pitch, min(limit, (64 << 20) // chunks))
    made = []
    try:
        scratch = session.check(f"{tex.source}: resize buffer", device.create_buffer,
                                size=max(pitch * (r1 - r0) for r0, r1 in parts),
                                usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
        made.append(scratch)
        partial = session.check(f"{tex.source}: resize partial sums", device.create_buffer,
                                size=max([64 * dw * (r1 - r0) * chunks for r0, r1 in parts if chunks > 1] + [64]),
                                usage=wgpu.BufferUsage.STORAGE)
        made.append(partial)
        base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer, array_layer_count=1,
                        dimension="2d")
        enc = device.create_command_encoder()
        record_exact_bands(enc, session, (pipe, finish, bgl), base, scratch, partial, (w0, h0),
                           (dw, dh, pitch, parts, rows, chunks), out.texture, 0, layer)
        session.check(f"{tex.source}: resize (float64)", device.queue.submit, [enc.finish()])
    finally:
        for obj in made:
            obj.destroy()


def _exact_kernel_layer(tex: Texture, out: Texture, layer: int, filter: str, wrap: str, alpha: str) -> None:
    """``mip_exact_kernel.wgsl`` from ``tex``'s level 0 to ``out``'s: the kernel taps and weights
    computed on the CPU in float64 (:func:`gputex.mips.filters.kernel_taps`), float64 sums on the GPU."""
    import numpy as np
    import wgpu

    from .kernels import dispatch
    from .layout import align_up
    from .mips import common
    from .mips.exact import EXACT_KERNEL_FORMATS
    from .mips.filters import kernel_taps

    session, device, fmt = tex.session, tex.session.device, tex.format
    code, channels = EXACT_KERNEL_FORMATS[fmt.name]
    srgb = tex.color_space == "srgb"
    s = wgpu.ShaderStage.COMPUTE

    def ro(b):
        return {"binding": b, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.read_only_storage}}

    entries = common.entries("pack") + [ro(3), {"binding": 4, "visibility": s,
                                          "buffer": {"type": wgpu.BufferBindingType.storage}}, ro(5), ro(6)]
    (pw, ph), (dw, dh) = tex.size(0), out.size(0)
    pairs, idx, wts = [], [], []
    start = 2 * (dw + dh)
    for taps_ in (kernel_taps(pw, dw, filter, wrap), kernel_taps(ph, dh, filter, wrap)):
        for ids, w in taps_:
            pairs += [start + len(idx), len(ids)]
            idx += ids
            wts.append(w)
    pitch = align_up(dw * fmt.block_bytes, 256)
    made = []
    try:
        for make in (lambda: device.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE),  # the base is read
                     lambda: device.create_buffer_with_data(data=np.array(pairs + idx, np.uint32).tobytes(),
                                                            usage=wgpu.BufferUsage.STORAGE),
                     lambda: device.create_buffer_with_data(data=np.concatenate(wts).astype(np.float64).tobytes(),
                                                            usage=wgpu.BufferUsage.STORAGE),
                     lambda: session.check(f"{tex.source}: resize values", device.create_buffer, size=dw * dh * 64,
                                           usage=wgpu.BufferUsage.STORAGE),
                     lambda: session.check(f"{tex.source}: resize buffer", device.create_buffer, size=pitch * dh,
                                           usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)):
            made.append(make())
        prev, taps_buf, w_buf, values, buf = made
        consts = {"FMT": code, "CHANNELS": channels, "WEIGHTED": alpha == "weighted" and channels in (2, 4),
                  "DECODE_SRGB": srgb, "ENCODE_SRGB": srgb, "SRC_IS_BASE": True, "SRGB_FORMAT": fmt.srgb,
                  "BGRA": fmt.bgra}
        pipe, bgl = common.pipeline(session, "mip_exact_kernel.wgsl", consts, entries)
        base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer, array_layer_count=1,
                        dimension="2d")
        bind = device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": base},
            {"binding": 1, "resource": {"buffer": buf, "offset": 0, "size": buf.size}},
            {"binding": 2, "resource": {"buffer": session.uniform(struct.pack("<6I", dw, dh, pitch // 4, pw, start, 0))}},
            {"binding": 3, "resource": {"buffer": prev, "offset": 0, "size": prev.size}},
            {"binding": 4, "resource": {"buffer": values, "offset": 0, "size": values.size}},
            {"binding": 5, "resource": {"buffer": taps_buf, "offset": 0, "size": taps_buf.size}},
            {"binding": 6, "resource": {"buffer": w_buf, "offset": 0, "size": w_buf.size}}])
        enc = device.create_command_encoder()
        dispatch(enc, pipe, bind, (-(-dw // 8), -(-dh // 8), 1))
        enc.copy_buffer_to_texture({"buffer": buf, "offset": 0, "bytes_per_row": pitch, "rows_per_image": dh},
                                   {"texture": out.texture, "mip_level": 0, "origin": (0, 0, layer)}, (dw, dh, 1))
        session.check(f"{tex.source}: resize (float64 kernels)", device.queue.submit, [enc.finish()])
    finally:
        for obj in made:
            obj.destroy()


def _resize_layer(tex: Texture, out: Texture, layer: int, filter: str, alpha: str, normal_map: bool,
                  wrap: str) -> None:
    """mip_reduce.wgsl (source level 0 -> float32 work texture of the new size), then mip_pack.wgsl
    in row bands into the format's bytes, copied into ``out``'s level 0."""
    import wgpu

    from .kernels import dispatch
    from .layout import align_up, bands
    from .mips import common
    from .mips.chain import tiled
    from .mips.common import REUSE_MAX_BYTES
    from .mips.filters import FILTERS, WRAPS

    session, device, fmt = tex.session, tex.session.device, tex.format
    kind = common.pack_kind(tex)
    weighted = alpha == "weighted" and fmt.channels in (2, 4) and not normal_map
    space_srgb = tex.color_space == "srgb" and not normal_map
    split = weighted and filter != "box"
    pack_consts = {"FMT": common.PACK_FMT[kind], "CHANNELS": fmt.channels, "BPT": fmt.block_bytes, "BGRA": fmt.bgra,
              "ENCODE_SRGB": space_srgb, "WEIGHTED": weighted, "NORMAL": normal_map, "SPLIT_PLAIN": split}
    consts = dict(pack_consts, SRC_IS_BASE=True, FILTER=FILTERS[filter].code, WRAP=WRAPS[wrap],
                  DECODE_SRGB=space_srgb and not fmt.srgb, FUSED=False, STORE_WORK=True)
    (sw, sh), (dw, dh) = tex.size(0), out.size(0)
    pitch = align_up(dw * fmt.block_bytes, 256)
    limit = min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
    parts = bands(dh, pitch, limit)
    work_usage = wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
    made = []  # resources too big to keep for the next resize of the same shape: freed at the end
    scratch_size = max(pitch * (r1 - r0) for r0, r1 in parts)

    def kept(kind: str, key, nbytes: int, make):
        """As the mips do: up to REUSE_MAX_BYTES kept in the session for the next image of the same
        size (allocating and clearing a float32 work texture can cost more than the pass)."""
        if nbytes > REUSE_MAX_BYTES:
            made.append(make())
            return made[-1]
        return common.reused(session, kind, key, make)

    def texture(what: str):
        return lambda: session.check(f"{tex.source}: resize {what}", device.create_texture, size=(dw, dh, 1),
                                     format="rgba32float", usage=work_usage)

    try:
        work = kept("resize-work", (dw, dh), dw * dh * 16, texture("work texture"))
        plain = kept("resize-plain", (dw, dh), dw * dh * 16, texture("plain-colour texture")) if split else None
        scratch = kept("resize-scratch", scratch_size, scratch_size, lambda: session.check(
            f"{tex.source}: resize buffer", device.create_buffer, size=scratch_size,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC))
        base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer, array_layer_count=1,
                        dimension="2d")
        enc = device.create_command_encoder()
        pipe, bgl = common.pipeline(session, "mip_reduce.wgsl", consts, common.entries("reduce"),
                                    "tile_main" if tiled(filter, sh, dh) else "main")
        bind = device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": base},
            {"binding": 1, "resource": work.create_view()},
            {"binding": 2, "resource": {"buffer": session.uniform(struct.pack("<5I", sw, sh, dw, dh, pitch // 4))}},
            {"binding": 3, "resource": {"buffer": scratch, "offset": 0, "size": scratch.size}},
            {"binding": 5, "resource": common.stand_in(session, "sampled")},
            {"binding": 6, "resource": plain.create_view() if split else common.stand_in(session, "storage")},
            {"binding": 7, "resource": common.kernel_tables(session, "resize-ktab", filter, [(sw, sh, dw, dh)])[0]}])
        dispatch(enc, pipe, bind, (-(-dw // 8), -(-dh // 8), 1))
        pack, pbgl = common.pipeline(session, "mip_pack.wgsl", pack_consts,
                                      common.entries("pack") + common.plain_entries(False))
        for y0, y1 in parts:
            prm = struct.pack("<4If", dw, y1 - y0, y0, pitch // 4, 1.0)
            pbind = device.create_bind_group(layout=pbgl, entries=[
                {"binding": 0, "resource": work.create_view()},
                {"binding": 1, "resource": {"buffer": scratch, "offset": 0, "size": scratch.size}},
                {"binding": 2, "resource": {"buffer": session.uniform(prm)}},
                {"binding": 5, "resource": plain.create_view() if split else common.stand_in(session, "sampled")}])
            dispatch(enc, pack, pbind, (-(-((dw * fmt.block_bytes + 3) // 4) // 64), y1 - y0, 1))
            enc.copy_buffer_to_texture(
                {"buffer": scratch, "offset": 0, "bytes_per_row": pitch, "rows_per_image": y1 - y0},
                {"texture": out.texture, "mip_level": 0, "origin": (0, y0, layer)}, (dw, y1 - y0, 1))
        session.check(f"{tex.source}: resize", device.queue.submit, [enc.finish()])
    finally:
        for obj in made:
            obj.destroy()
