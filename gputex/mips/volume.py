"""Box mips of 3D textures (``mip3d.wgsl``): each level from the deepest earlier level whose
texels tile its footprint exactly on all three axes (else the base), work levels in float32."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..errors import FormatError, LimitError
from ..kernels import dispatch
from ..layout import align_up
from .common import PACK_FMT, pipeline

if TYPE_CHECKING:
    from ..texture import Texture

__all__ = ["chain3d"]


def _size3(tex: Texture, level: int) -> tuple[int, int, int]:
    return max(1, tex.width >> level), max(1, tex.height >> level), max(1, tex.depth >> level)


def chain3d(tex: Texture, kind: str, alpha: str) -> list[int]:
    """Box mips of a 3D texture: each level from the deepest earlier level whose texels tile its
    footprint exactly on all three axes (else the base), work levels kept in float32."""
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    if fmt.block_bytes % 4:
        raise FormatError(f"{tex.source}: 3D mips need a format of 4 or more bytes per texel "
                          f"({fmt.name} has {fmt.block_bytes}); use rgba8unorm, rgba16float, ...")
    weighted = alpha == "weighted" and fmt.channels in (2, 4)
    srgb = tex.color_space == "srgb"
    common = {"FMT": PACK_FMT[kind], "CHANNELS": fmt.channels, "BPT": fmt.block_bytes, "BGRA": fmt.bgra,
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
        base = tex.view(dimension="3d", base_mip_level=0, mip_level_count=1)
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
            pipe, bgl = pipeline(session, "mip3d.wgsl", consts, entries)
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
