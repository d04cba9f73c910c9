"""Decode block-compressed textures on the GPU into an uncompressed twin gputex can capture.

Two decoders, both on the GPU, both reading exactly the blocks the texture holds:

``sampler``
    A compute pass ``textureLoad``s every texel of every level and layer: the texture units
    decode, at their own precision (lavapipe: within 1 code of the specification except
    BC3's alpha, 2; NVIDIA H200: BC1-BC5 up to 4-5 codes off). What a shader on this GPU sees.
``spec`` (default for BC1-BC5)
    Each level's blocks are copied into a buffer (``copy_texture_to_buffer``, rows padded to
    256 bytes) and a compute shader (``bc_decode.wgsl``) decodes them with the
    specification's arithmetic: the same codes on every adapter, as pipelines comparing
    builds need. BC6H, BC7, ETC2 and ASTC always use the sampler (BC7 measured exact).

The target is ``rgba8unorm`` holding 8-bit codes for the unorm formats (sRGB formats: the
codes stay sRGB and the result is marked sRGB), ``rgba16float`` for BC6H and the snorm
formats. 3D block-compressed textures are not decoded.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .errors import FormatError

if TYPE_CHECKING:
    from .texture import Texture

__all__ = ["decode_blocks", "decoded_format", "SPEC_KINDS"]

#: Formats the ``spec`` decoder handles: name prefix -> KIND of bc_decode.wgsl
SPEC_KINDS = {"bc1": 1, "bc2": 2, "bc3": 3, "bc4": 4, "bc5": 5}


def decoded_format(fmt) -> str:
    """The uncompressed format a compressed format decodes into."""
    return "rgba16float" if fmt.kind in ("float", "ufloat", "snorm") else "rgba8unorm"


def decode_blocks(tex: Texture, *, levels: int | None = None, mode: str = "spec") -> Texture:
    """A new uncompressed texture holding the decoded texels of every level/layer of ``tex``.

    ``levels`` allocates more levels than ``tex`` has (for mips made afterwards); ``mode`` is
    ``spec`` or ``sampler`` (see the module docstring).
    """
    import wgpu

    from .capabilities import require
    from .formats import get_format
    from .kernels import dispatch
    from .mips import needs_render_target
    from .mips.common import pipeline
    from .texture import create_texture

    require(tex.session, "bc-decode", tex.source)
    if tex.depth > 1:
        raise FormatError(f"{tex.source}: decoding 3D {tex.format.name} textures is not supported")
    session = tex.session
    target = decoded_format(tex.format)
    nlevels = max(tex.levels, levels or 0)
    out = create_texture(
        session, get_format(target), tex.width, tex.height, layers=tex.layers, levels=nlevels,
        render_target=nlevels > 1 and needs_render_target(session, get_format(target)),
        usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_SRC
        | wgpu.TextureUsage.COPY_DST,
        color_space="srgb" if tex.format.srgb else tex.color_space, source=tex.source)
    out.faces, out.array = tex.faces, tex.array
    s = wgpu.ShaderStage.COMPUTE
    entries = [
        {"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.float,
                                                    "view_dimension": "2d-array"}},
        {"binding": 1, "visibility": s, "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                                            "format": target, "view_dimension": "2d-array"}},
        {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}},
    ]
    if mode not in ("spec", "sampler"):
        raise FormatError(f"unknown BC decoder {mode!r}; use spec or sampler")
    kind = SPEC_KINDS.get(tex.format.name.split("-")[0])
    if mode == "spec" and kind:
        try:
            _spec_decode(tex, out, kind, target)
        except BaseException:
            out.destroy()
            raise
        return out
    consts = {"ENCODE_SRGB": tex.format.srgb, "QUANTIZE_8": target == "rgba8unorm"}
    try:
        pipe, bgl = pipeline(session, "unblock.wgsl", consts, entries, "main", target)
        enc = session.device.create_command_encoder()
        for level in range(tex.levels):
            w, h = tex.size(level)
            src_view = tex.view(dimension="2d-array", base_mip_level=level, mip_level_count=1)
            dst_view = out.texture.create_view(dimension="2d-array", base_mip_level=level, mip_level_count=1)
            bind = session.device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": src_view}, {"binding": 1, "resource": dst_view},
                {"binding": 2, "resource": {"buffer": session.uniform(struct.pack("<2I", w, h))}}])
            dispatch(enc, pipe, bind, (-(-w // 8), -(-h // 8), tex.layers))
        session.check(f"{tex.source}: decode {tex.format.name} on the GPU", session.device.queue.submit,
                      [enc.finish()])
    except BaseException:
        out.destroy()
        raise
    return out


def _spec_decode(tex: Texture, out: Texture, kind: int, target: str) -> None:
    import wgpu

    from .kernels import dispatch
    from .layout import copy_layout
    from .mips.common import pipeline

    session, device, fmt = tex.session, tex.session.device, tex.format
    s = wgpu.ShaderStage.COMPUTE
    entries = [
        {"binding": 0, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.read_only_storage}},
        {"binding": 1, "visibility": s, "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                                            "format": target, "view_dimension": "2d-array"}},
        {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}},
    ]
    pipe, bgl = pipeline(session, "bc_decode.wgsl", {"KIND": kind, "SIGNED": fmt.kind == "snorm"}, entries,
                          "main", target)
    buffers = []
    try:
        enc = device.create_command_encoder()
        for level in range(tex.levels):
            w, h = tex.size(level)
            lay = copy_layout(fmt, w, h, tex.layers)
            pitch, down = lay.padded_bytes_per_row, lay.blocks_down
            size = pitch * down * tex.layers
            buf = session.check(f"{tex.source}: block buffer", device.create_buffer, size=size,
                                usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.STORAGE)
            buffers.append(buf)
            enc.copy_texture_to_buffer(
                {"texture": tex.texture, "mip_level": level, "origin": (0, 0, 0)},
                {"buffer": buf, "offset": 0, "bytes_per_row": pitch, "rows_per_image": down},
                (lay.blocks_across * fmt.block[0], down * fmt.block[1], tex.layers))
            prm = struct.pack("<4I", w, h, pitch // 4, pitch * down // 4)
            bind = device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": size}},
                {"binding": 1, "resource": out.texture.create_view(dimension="2d-array", base_mip_level=level,
                                                                   mip_level_count=1)},
                {"binding": 2, "resource": {"buffer": session.uniform(prm)}}])
            dispatch(enc, pipe, bind, (-(-w // 8), -(-h // 8), tex.layers))
        session.check(f"{tex.source}: decode {fmt.name} (spec)", device.queue.submit, [enc.finish()])
    finally:
        for buf in buffers:
            buf.destroy()
