"""Decode block-compressed textures on the GPU: sample them into an uncompressed twin.

BC (and ETC2/ASTC where the adapter has them) cannot be read back as pixels, so gputex has
the GPU decode them: a compute pass ``textureLoad``s every texel of every level and layer
and stores it into a texture gputex can capture. The target is ``rgba8unorm`` holding
8-bit codes for the unorm formats (sRGB formats: the loaded linear value is encoded back to
sRGB and rounded, and the result is marked sRGB), ``rgba16float`` for BC6H and the snorm
formats. 3D block-compressed textures are not decoded.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .errors import FormatError

if TYPE_CHECKING:
    from .upload import Texture

__all__ = ["decode_blocks", "decoded_format"]


def decoded_format(fmt) -> str:
    """The uncompressed format a compressed format decodes into."""
    return "rgba16float" if fmt.kind in ("float", "ufloat", "snorm") else "rgba8unorm"


def decode_blocks(tex: "Texture", *, levels: int | None = None) -> "Texture":
    """A new uncompressed texture holding the decoded texels of every level/layer of ``tex``.

    ``levels`` allocates more levels than ``tex`` has (for mips made afterwards).
    """
    import wgpu

    from .formats import get_format
    from .mips import _pipeline
    from .upload import create_texture

    if tex.depth > 1:
        raise FormatError(f"{tex.source}: decoding 3D {tex.format.name} textures is not supported")
    session = tex.session
    target = decoded_format(tex.format)
    out = create_texture(
        session, get_format(target), tex.width, tex.height, layers=tex.layers, levels=max(tex.levels, levels or 0),
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
    consts = {"ENCODE_SRGB": tex.format.srgb, "QUANTIZE_8": target == "rgba8unorm"}
    try:
        pipe, bgl = _pipeline(session, "unblock.wgsl", consts, entries, "main", target)
        enc = session.device.create_command_encoder()
        for level in range(tex.levels):
            w, h = tex.size(level)
            src_view = tex.texture.create_view(dimension="2d-array", base_mip_level=level, mip_level_count=1)
            dst_view = out.texture.create_view(dimension="2d-array", base_mip_level=level, mip_level_count=1)
            bind = session.device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": src_view}, {"binding": 1, "resource": dst_view},
                {"binding": 2, "resource": {"buffer": session.uniform(struct.pack("<2I", w, h))}}])
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(pipe)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(-(-w // 8), -(-h // 8), tex.layers)
            cpass.end()
        session.check(f"{tex.source}: decode {tex.format.name} on the GPU", session.device.queue.submit,
                      [enc.finish()])
    except BaseException:
        out.destroy()
        raise
    return out
