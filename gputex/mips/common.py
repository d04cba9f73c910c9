"""What the mip chains (and the resize, :mod:`gputex.transform`) share: the format's encoding
kind, bind group layouts, stand-in bindings, reused work resources, the box source level."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import FormatError
from ..kernels import Entry, compute_pipeline, render_pipeline
from ..layout import mip_size

if TYPE_CHECKING:
    from ..device import Session
    from ..formats import Format
    from ..texture import Texture

__all__ = ["PACK_FMT", "integer_entries", "REUSE_MAX_BYTES", "format_kind", "pack_kind", "pipeline", "reduce_render_pipeline",
           "entries", "plain_entries", "stand_in", "kernel_tables", "reused", "storage_twin", "box_source_level",
           "REUSE_CACHE"]

#: FMT override of the mip shaders per encoding kind.
PACK_FMT = {"unorm8": 0, "unorm16": 1, "float16": 2, "float32": 3, "rgb10a2": 4}
#: Mip work resources up to this size are kept for reuse (a 2048^2 float32 chain's are ~22 MB
#: each, a 4096^2 one's 89 MB, an 8192^2 one's 358 MB): a texture made fresh costs the GPU its
#: allocation, ~28 ms a GB on the H200 (``benchmarks/fresh_textures.py``), which at 4096^2 was
#: more than the float32 Kaiser chain's passes. At most one of each kind is held (:func:`reused`),
#: for the session; the bound keeps what a session holds idle to a few hundred MB on the GPUs
#: without ``shader-f64`` that run the float32 chains (integrated and mobile ones among them).
REUSE_MAX_BYTES = 256 << 20
#: The session cache holding them (one resource per kind).
REUSE_CACHE = "mip-reuse"


def format_kind(fmt: Format) -> str | None:
    """The encoding the mip shaders write for ``fmt`` (``FMT``), or None for integer formats."""
    if fmt.packed and fmt.kind == "unorm":
        return "rgb10a2"
    if fmt.kind == "unorm" and fmt.bits in (8, 16):
        return f"unorm{fmt.bits}"
    if fmt.kind == "float":
        return f"float{fmt.bits}"
    return None


def pack_kind(tex: Texture) -> str:
    """:func:`format_kind` of ``tex``, or a clear error for formats mips cannot filter."""
    kind = format_kind(tex.format)
    if kind is None:
        raise FormatError(f"{tex.source}: mips need a unorm or float format; {tex.format.name} holds "
                          "integers (upload with --format rgba16unorm or rgba32float)")
    return kind


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


def pipeline(session: Session, shader: str, constants: dict[str, Any], entries: list[Entry], entry: str = "main",
             out_format: str | None = None) -> tuple[Any, Any]:
    """(pipeline, bind group layout) of a mip shader (``out_format``: the storage format
    ``OUT_FORMAT`` of ``mip_reduce.wgsl``'s ``main_direct``, ``unblock.wgsl``, ...)."""
    subs = {"OUT_FORMAT": out_format} if out_format else {}
    return compute_pipeline(session, shader, entries, entry=entry, constants=constants, subs=subs)


def reduce_render_pipeline(session: Session, constants: dict[str, Any], entries: list[Entry],
                           target: str) -> tuple[Any, Any]:
    """The render path's pipeline: ``mip_reduce.wgsl``'s full-screen triangle writing ``target``."""
    return render_pipeline(session, "mip_reduce.wgsl", entries, target, vertex="vs_level", fragment="fs_level",
                           constants=constants)


def integer_entries(buffers: str) -> list[Entry]:
    """Bind group layout of the integer chains (integer, spd, odd): the base texture at binding
    0, then one buffer a letter of ``buffers`` at bindings 1, 2, ...: ``s`` storage, ``r``
    read-only storage, ``u`` uniform."""
    import wgpu

    s = wgpu.ShaderStage.COMPUTE
    kinds = {"s": wgpu.BufferBindingType.storage, "r": wgpu.BufferBindingType.read_only_storage,
             "u": wgpu.BufferBindingType.uniform}
    return [{"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                        "view_dimension": "2d", "multisampled": False}}] + [
        {"binding": b, "visibility": s, "buffer": {"type": kinds[k]}} for b, k in enumerate(buffers, start=1)]


def entries(kind: str, out_format: str = "", stage: int = 0) -> list[Entry]:
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
    out: list[Entry] = [src, dst, uni, {"binding": 3, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}}]
    if out_format:
        out.append({"binding": 4, "visibility": s,
                    "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                        "format": out_format, "view_dimension": "2d"}})
    return out + plain_entries(True, s) + [{"binding": 7, "visibility": s,
                                            "buffer": {"type": wgpu.BufferBindingType.read_only_storage}}]


def plain_entries(storage: bool, stage: int = 0) -> list[Entry]:
    """Bindings 5 (source plain colour) and, for the reduce pass, 6 (this level's plain colour)."""
    import wgpu

    s = stage or wgpu.ShaderStage.COMPUTE
    out: list[Entry] = [{"binding": 5, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                       "view_dimension": "2d", "multisampled": False}}]
    if storage:
        out.append({"binding": 6, "visibility": s,
                    "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                        "format": "rgba32float", "view_dimension": "2d"}})
    return out


def stand_in(session: Session, kind: str, format: str = "rgba32float") -> Any:
    """A 1x1 view of ``format`` (``kind``: ``sampled`` or ``storage``) bound where a shader
    declares a binding it does not use here, made once per session."""
    import wgpu

    def make() -> Any:
        usage = wgpu.TextureUsage.TEXTURE_BINDING if kind == "sampled" else wgpu.TextureUsage.STORAGE_BINDING
        return session.device.create_texture(size=(1, 1, 1), format=format, usage=usage).create_view()

    return session.cache(REUSE_CACHE).get(("stand-in", kind, format), make)


def kernel_tables(session: Session, kind: str, filter: str, steps: list[tuple[int, int, int, int]]) -> list[Any]:
    """Binding 7 of ``mip_reduce.wgsl`` (``ktab``) for each step (source width and height,
    destination width and height) of a chain or resize under ``filter``: each kernel filter's
    table (:func:`.filters.kernel_table`) at its own offset of one buffer, kept as ``kind`` for
    the next chain of the same shape (:func:`reused`); a 16-byte stand-in for ``box``."""
    import wgpu

    from .filters import kernel_table

    usage = wgpu.BufferUsage.STORAGE
    if filter == "box":
        buf = session.cache(REUSE_CACHE).get(("stand-in", "ktab"), lambda: session.device.create_buffer(
            size=16, usage=usage))
        return [{"buffer": buf, "offset": 0, "size": 16} for _ in steps]
    align = session.limits.get("min-storage-buffer-offset-alignment", 256)
    tables = [kernel_table(*step, filter) for step in steps]
    offsets, end = [], 0
    for t in tables:
        offsets.append(end)
        end += -(-len(t) // align) * align

    def make() -> Any:
        data = bytearray(end)
        for off, t in zip(offsets, tables):
            data[off:off + len(t)] = t
        return session.check(f"mip kernel taps ({end} bytes)", session.device.create_buffer_with_data,
                             data=bytes(data), usage=usage)

    buf = reused(session, kind, (filter, tuple(steps)), make)
    return [{"buffer": buf, "offset": off, "size": len(t)} for off, t in zip(offsets, tables)]


def reused(session: Session, kind: str, key: Any, make: Callable[[], Any]) -> Any:
    """One GPU resource per ``kind``, kept in the session and reused while ``key`` (its shape)
    matches; a different key destroys the old one first, so at most one of each is held."""
    cache = session.cache(REUSE_CACHE)
    slot = cache.peek(kind)
    if slot is not None and slot[0] == key:
        cache.hits += 1
        return slot[1]
    if slot is not None:
        slot[1].destroy()
    cache.misses += 1
    obj = make()
    cache.put(kind, (key, obj))
    return obj


def storage_twin(session: Session, fmt: Format) -> str | None:
    """A storage-capable format copy-compatible with ``fmt`` (itself or its non-sRGB twin)."""
    from ..formats import get_format

    twin = get_format(fmt.linear_name)
    if twin.storage or (twin.bgra and session.has_feature("bgra8unorm-storage")):
        return twin.name
    return None
