"""The GPU texture type: :class:`Texture` (a wgpu texture with what its data means) and
:func:`create_texture`, which checks size, feature, layer and level limits before allocating.

Every step that makes a texture (upload, mips, resize, BC encode and decode, arrays/cubes)
makes it here. This module imports no step module: whether a texture's mip levels are drawn
(and so need ``RENDER_ATTACHMENT``) is the caller's ``render_target`` argument, and whether a
compute shader stores them (``store_levels``: the storage format they go through) the caller's too.

**Physical and logical formats.** An sRGB format cannot be a storage texture, so a texture whose
levels a compute shader stores (the exact single-pass chain, ``gputex.mips.stored_format``) is
made as its linear twin (``rgba8unorm`` for ``rgba8unorm-srgb``) with the sRGB format as a view
format (:mod:`gputex.wgpu_compat`: wgpu-py 0.32.0 needs a shim for it). :attr:`Texture.format`
stays the logical format (what reports, ``--json``, the file writers and every user see); the
GPU texture's own format is ``texture.format``. Steps that read values make their views with
:meth:`Texture.view`, which asks for the logical format where the two differ; copies between the
two formats are legal (they differ only in sRGB-ness) and move the same bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import FormatError, LimitError
from .formats import Format, get_format
from .layout import CopyLayout, copy_layout, mip_count, mip_size, physical_size

if TYPE_CHECKING:
    from .decode import Image
    from .device import Session

__all__ = ["Texture", "create_texture", "default_format", "copy_usage", "label", "reusing", "drop_pool",
           "POOL_MAX_BYTES"]


@dataclass
class Texture:
    """A GPU texture made by gputex, with what its data means."""

    session: Session
    texture: Any  # wgpu.GPUTexture
    format: Format
    width: int
    height: int
    layers: int = 1
    levels: int = 1
    color_space: str = "srgb"
    source: str = ""
    upload_path: str = ""
    depth: int = 1  # > 1: a 3D texture; ``layers`` is then 1
    faces: int = 1  # 6: a cube map (or cube array); ``layers`` counts every face
    array: bool = False  # an array texture (as a texture file stores it)
    #: Made inside :func:`reusing`: the pool's key, and what steps keep with this GPU texture
    #: across its reuses (``extras``: e.g. the mip chain's buffers and bind groups). None otherwise.
    pool_key: Any = field(default=None, repr=False, compare=False)
    extras: dict | None = field(default=None, repr=False, compare=False)
    #: The storage format a compute shader stores this texture's levels through (the GPU
    #: texture's own format, made with ``STORAGE_BINDING``: see the module docstring), or "".
    storage: str = ""

    def view(self, **kwargs: Any) -> Any:
        """``texture.create_view(**kwargs)`` in the logical format: where the GPU texture is
        the linear twin of an sRGB format, the view reads (and renders) sRGB. Every step that
        reads values makes its views here."""
        if self.texture.format != self.format.name:
            import wgpu

            kwargs.setdefault("format", self.format.name)
            kwargs.setdefault("usage", self.texture.usage & ~wgpu.TextureUsage.STORAGE_BINDING)
        return self.texture.create_view(**kwargs)

    def storage_view(self, level: int, layer: int = 0) -> Any:
        """A write view of one level of one layer in :attr:`storage` (its codes as stored, no
        sRGB conversion), for ``texture_storage_2d`` bindings."""
        import wgpu

        return self.texture.create_view(format=self.storage, dimension="2d", base_mip_level=level, mip_level_count=1,
                                        base_array_layer=layer, array_layer_count=1,
                                        usage=wgpu.TextureUsage.STORAGE_BINDING)

    def size(self, level: int = 0) -> tuple[int, int]:
        return mip_size(self.width, self.height, level)

    @property
    def images(self) -> int:
        """2D images per level: array layers (cube faces included), or depth slices of a level 0."""
        return self.depth if self.depth > 1 else self.layers

    def level_images(self, level: int) -> int:
        return max(1, self.depth >> level) if self.depth > 1 else self.layers

    def layout(self, level: int = 0) -> CopyLayout:
        w, h = self.size(level)
        return copy_layout(self.format, w, h, 1)

    def destroy(self) -> None:
        self.texture.destroy()
        if self.extras is not None:
            _destroy_extras(self.extras)

    def recycle(self) -> None:
        """Done with it, its work submitted: a texture made inside :func:`reusing` goes back to
        the session's pool for the next input of the same size, format, levels and usage (the
        queue runs the copies already submitted from it before any later write into it); any
        other, or one the pool has no room for, is destroyed."""
        if self.pool_key is None or self.extras is None or not _pool(self.session).give(self):
            self.destroy()


def default_format(image: Image, session: Session | None = None,
                   color_space: str | None = None) -> Format:
    """The format gputex picks for an image (documented in the README).

    8-bit colour -> ``rgba8unorm-srgb`` (sRGB data) or ``rgba8unorm`` (linear);
    8-bit grey -> ``r8unorm`` / ``rg8unorm``; 16-bit -> ``r/rg/rgba16unorm`` where the
    device has ``texture-format16bit-norm``, else the exact ``16uint`` formats;
    float -> ``32float``; 32-bit integers -> ``32sint``.
    """
    space = color_space or image.color_space
    prefix = {1: "r", 2: "rg", 3: "rgba", 4: "rgba"}[image.channels]
    if image.kind == "float":
        return get_format(prefix + "32float")
    if image.kind == "int":
        return get_format(prefix + "32sint")
    if image.bits == 16:
        if session is None or session.has_feature("texture-format16bit-norm"):
            return get_format(prefix + "16unorm")
        return get_format(prefix + "16uint")
    if prefix == "rgba" and space == "srgb":
        return get_format("rgba8unorm-srgb")
    return get_format(prefix + "8unorm")


def copy_usage(extra: int = 0) -> int:
    """COPY_DST | COPY_SRC (every gputex texture is written and read back) plus ``extra``."""
    import wgpu

    return wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC | extra


def create_texture(session: Session, fmt: Format, width: int, height: int, *, layers: int = 1,
                   levels: int = 1, usage: int | None = None, color_space: str = "srgb",
                   source: str = "", view_formats: list[str] | None = None, depth: int = 1,
                   render_target: bool = False, store_levels: str = "") -> Texture:
    """Create a 2D (array) texture, or a 3D one when ``depth > 1``, after checking size, feature
    and level count.

    Block-compressed textures of a size that is not a whole number of blocks are allocated
    rounded up to whole blocks (WebGPU requires it); ``Texture.width/height`` stay the logical
    size and every copy covers the logical level's blocks, so the extra texels are never read.

    ``render_target``: the caller's mip step draws the levels (``gputex.mips.render_target``
    says when), so a 2D texture of several levels also gets ``RENDER_ATTACHMENT``. The caller
    decides: this module does not know how mips are made.

    ``store_levels``: the caller's mip step stores the levels with a compute shader through this
    storage format (``gputex.mips.stored_format`` says when and which: ``fmt`` itself or its
    linear twin); a 2D texture of several levels is then made in that format with
    ``STORAGE_BINDING`` and ``fmt`` as a view format (the module docstring).
    """
    if not session.has_feature(fmt.feature):
        raise FormatError(f"{source + ': ' if source else 'format '}{fmt.name} needs the device feature "
                          f"{fmt.feature!r}, which {session.info.name} does not have")
    key = "max-texture-dimension-3d" if depth > 1 else "max-texture-dimension-2d"
    limit = session.limits.get(key, 2048 if depth > 1 else 8192)
    if width > limit or height > limit or depth > limit:
        size = f"{width}x{height}" + (f"x{depth}" if depth > 1 else "")
        raise LimitError(f"{source or 'texture'}: {size} exceeds the device's {key} of {limit}")
    max_layers = session.limits.get("max-texture-array-layers", 256)
    if layers > max_layers:
        raise LimitError(f"{source or 'texture'}: {layers} layers exceed max-texture-array-layers {max_layers}")
    if levels > mip_count(width, height, depth):
        raise LimitError(f"{levels} mip levels is more than {mip_count(width, height, depth)}, "
                         f"the most a {width}x{height} texture has")
    alloc_w, alloc_h = physical_size(fmt, width, height)
    if render_target and levels > 1 and depth == 1:  # its mips are drawn into its levels
        import wgpu

        usage = (copy_usage() if usage is None else usage) | wgpu.TextureUsage.RENDER_ATTACHMENT
    physical, storage = fmt.name, ""
    if store_levels and levels > 1 and depth == 1:  # its mips are stored by a compute shader
        import wgpu

        if store_levels not in (fmt.name, fmt.linear_name) or (store_levels == fmt.name and fmt.srgb):
            raise FormatError(f"{source or 'texture'}: {fmt.name} levels cannot be stored through {store_levels!r} "
                              f"(store_levels is the format itself or its linear twin {fmt.linear_name}, and a "
                              "storage-capable one: gputex.mips.stored_format says which)")

        physical, storage = store_levels, store_levels
        usage = (copy_usage() if usage is None else usage) | wgpu.TextureUsage.STORAGE_BINDING
        if physical != fmt.name:
            view_formats = list(view_formats or ()) + [fmt.name]
    pool_key = None
    if getattr(_REUSE, "session", None) is session and depth == 1:
        pool_key = (fmt.name, alloc_w, alloc_h, layers, levels, copy_usage() if usage is None else usage,
                    tuple(view_formats or ()), physical)
        kept = _pool(session).take(pool_key)
        if kept is not None:
            return Texture(session, kept[0], fmt, width, height, layers, levels, color_space, source,
                           pool_key=pool_key, extras=kept[1], storage=storage)
    from .wgpu_compat import create_texture as create

    tex = session.check(
        f"{source or 'texture'}: create {fmt.name} {width}x{height}",
        create, session.device,
        label=label(source), size=(alloc_w, alloc_h, depth if depth > 1 else layers), format=physical,
        mip_level_count=levels, usage=copy_usage() if usage is None else usage,
        dimension="3d" if depth > 1 else "2d", view_formats=view_formats or [],
    )
    return Texture(session, tex, fmt, width, height, 1 if depth > 1 else layers, levels, color_space, source,
                   depth=depth, pool_key=pool_key, extras=None if pool_key is None else {"device": session.device},
                   storage=storage)


def label(source: str | None) -> str:
    """A wgpu label (UTF-8 in C) for a path that may not be: a name that is not UTF-8 keeps its
    bytes in Python as surrogates (``caf\udce9.png``), which UTF-8 cannot encode."""
    if not source:
        return "gputex"
    return source.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# -- textures reused across a batch's inputs -------------------------------------------------

#: Bytes of GPU textures a session's pool keeps for reuse (at most one per key); a texture
#: bigger than a quarter of it is never kept.
POOL_MAX_BYTES = 128 << 20

_REUSE = threading.local()


@contextmanager
def reusing(session: Session) -> Iterator[None]:
    """Textures made for ``session`` on this thread inside the block come from its pool where
    one of the same format, size, levels and usage was recycled (:meth:`Texture.recycle`), and
    go back to it when recycled. A batch's in-order GPU step runs inside it: a 2048² input's
    texture, its single-pass chain's buffers, view and bind groups are then made once, not per
    input. Among the H200 host's busy codecs a texture's ``destroy`` took 1.6-1.9 ms and a
    ``create_bind_group`` 0.8 ms (cProfile); with the reuse the ``upload -o`` step of a 48 x 2048²
    batch fell from 9.0-9.7 to 7.3-7.8 ms per image (median, same call; docs/performance.md).
    The wgpu label stays the first input's; gputex's own errors name the input."""
    before = getattr(_REUSE, "session", None)
    _REUSE.session = session
    try:
        yield
    finally:
        _REUSE.session = before


def drop_pool(session: Session) -> None:
    """Destroy the textures ``session``'s pool keeps (the end of a run)."""
    pool = session.cache("texture-pool").peek("pool")
    if pool is not None:
        pool.clear()


def _destroy_extras(extras: dict) -> None:
    for obj in extras.pop("destroy", ()):
        try:
            obj.destroy()
        except Exception:  # noqa: BLE001 - gone with its device
            pass
    extras.clear()


class _Pool:
    """One session's recycled textures, by key (oldest first): the wgpu texture, its extras and
    its bytes. Locked: runs sharing a session (``serve``, a program's threads) take, give and
    clear it from their own threads."""

    def __init__(self, device: Any):
        self.device = device
        self.free: dict[Any, tuple[Any, dict, int]] = {}
        self.lock = threading.Lock()

    def take(self, key: Any) -> tuple[Any, dict] | None:
        with self.lock:
            kept = self.free.pop(key, None)
        return None if kept is None else kept[:2]

    def give(self, tex: Texture) -> bool:
        extras = tex.extras
        assert extras is not None
        nbytes = _texture_bytes(tex)
        gone = []
        with self.lock:
            if (extras.get("device") is not self.device or tex.pool_key in self.free
                    or nbytes > POOL_MAX_BYTES // 4):
                return False
            while self.free and sum(kept[2] for kept in self.free.values()) + nbytes > POOL_MAX_BYTES:
                gone.append(self.free.pop(next(iter(self.free))))  # the oldest key
            self.free[tex.pool_key] = (tex.texture, extras, nbytes)
        for kept in gone:
            _destroy(kept)
        return True

    def clear(self) -> None:
        with self.lock:
            gone, self.free = list(self.free.values()), {}
        for kept in gone:
            _destroy(kept)


def _destroy(kept: tuple[Any, dict, int]) -> None:
    texture, extras, _ = kept
    try:
        texture.destroy()
    except Exception:  # noqa: BLE001 - gone with its device
        pass
    _destroy_extras(extras)


def _pool(session: Session) -> _Pool:
    return session.cache("texture-pool").get("pool", lambda: _Pool(session.device))


def _texture_bytes(tex: Texture) -> int:
    """The texture's bytes, every level and layer (blocks rounded up)."""
    return sum(copy_layout(tex.format, *tex.size(lv)).data_bytes for lv in range(tex.levels)) * tex.layers
