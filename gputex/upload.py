"""Upload: a decoded image -> a GPU texture, in row bands of bounded size.

Two transfer paths, same result:

``write_texture``
    ``queue.write_texture`` with the tight ``bytes_per_row`` (block rows, no 256
    rule) per band. wgpu-native copies each call into a fresh staging buffer.
``staging``
    A reused ring of two ``MAP_WRITE | COPY_SRC`` buffers; each band is converted
    straight into the mapped memory through a strided numpy view (rows padded to
    256 bytes), then ``copy_buffer_to_texture``. Saves one host copy per byte.

``auto`` (the default) takes ``staging`` for uploads of at least
:data:`STAGING_MIN_BYTES` and ``write_texture`` below that; see
``benchmarks/transfer.py`` for the measurements behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import FormatError, LimitError
from .formats import Format, get_format
from .layout import bands, copy_layout
from .parallel import for_row_chunks
from .texture import Texture, copy_usage, create_texture, default_format

if TYPE_CHECKING:
    from .decode import Image
    from .device import Session
    from .texfile import TextureFile

__all__ = ["Texture", "create_texture", "upload", "write_image", "default_format", "resolve_format", "upload_texture_file",
           "DEFAULT_BUDGET", "STAGING_MIN_BYTES"]

#: Default bound on host staging memory per transfer (bytes).
DEFAULT_BUDGET = 64 << 20
#: ``path="auto"`` uses the staging ring from this many bytes of texture data up.
STAGING_MIN_BYTES = 1 << 20

Progress = Callable[[int, int], None]


def upload(session: Session, image: Image, format: str | Format | None = None, *,
           color_space: str | None = None, levels: int = 1, premultiply: bool = False,
           flip_y: bool = False, budget: int = DEFAULT_BUDGET, path: str = "auto",
           usage: int = 0, progress: Progress | None = None, render_target: bool = False,
           store_levels: str = "") -> Texture:
    """Upload ``image`` as level 0 of a new texture.

    Parameters
    ----------
    format
        A WebGPU format name (or :class:`Format`); default :func:`default_format`.
    color_space
        ``"srgb"`` or ``"linear"``: how the data is meant; default from the file.
        An ``-srgb`` format always means sRGB.
    levels
        Mip levels to allocate (filled by :func:`gputex.generate_mips`).
    budget
        Bound on the host staging memory of one transfer, in bytes.
    path
        ``"auto"``, ``"write_texture"`` or ``"staging"`` (see the module docstring).
    usage
        Extra ``wgpu.TextureUsage`` bits a later step needs (mips add TEXTURE_BINDING).
    render_target
        The mip step will draw the levels (see :func:`gputex.texture.create_texture`).
    store_levels
        The mip step will store the levels through this storage format
        (:func:`gputex.mips.stored_format`; see :func:`gputex.texture.create_texture`).
    """
    from .convert import check_convertible

    fmt = resolve_format(image, format, session, color_space)
    space = "srgb" if fmt.srgb else (color_space or image.color_space)
    if space not in ("srgb", "linear"):
        raise FormatError(f"unknown colour space {space!r}; use srgb or linear")
    check_convertible(image.kind, fmt)
    if fmt.compressed:
        raise FormatError(f"{fmt.name} is block-compressed; gputex uploads images to uncompressed formats")
    tex = create_texture(session, fmt, image.width, image.height, levels=levels,
                         usage=copy_usage(usage), color_space=space, source=image.source,
                         render_target=render_target, store_levels=store_levels)
    try:
        write_image(tex, image, premultiply=premultiply, flip_y=flip_y, budget=budget,
                    path=path, progress=progress)
    except BaseException:
        tex.destroy()
        raise
    return tex


def resolve_format(image: Image, format: str | Format | None, session: Session | None = None,
                   color_space: str | None = None) -> Format:
    """The :class:`Format` an upload of ``image`` gets: ``format`` (a name or a Format), else
    :func:`~gputex.texture.default_format`."""
    if isinstance(format, Format):
        return format
    return get_format(format) if format else default_format(image, session, color_space)


def write_image(tex: Texture, image: Image, *, level: int = 0, layer: int = 0,
                premultiply: bool = False, flip_y: bool = False, budget: int = DEFAULT_BUDGET,
                path: str = "auto", progress: Progress | None = None) -> str:
    """Convert and write ``image`` into one level/layer of ``tex``; returns the path used."""
    from .convert import to_texture_rows

    w, h = tex.size(level)
    if (image.width, image.height) != (w, h):
        raise LimitError(f"{image.source}: {image.width}x{image.height} does not match "
                         f"level {level} of the texture ({w}x{h})")
    lay = copy_layout(tex.format, w, h)
    if path == "auto":
        path = "staging" if lay.data_bytes >= STAGING_MIN_BYTES else "write_texture"
    if path not in ("staging", "write_texture"):
        raise ValueError(f"unknown upload path {path!r}")
    pixels = image.pixels[::-1] if flip_y else image.pixels
    row_bytes = lay.padded_bytes_per_row if path == "staging" else lay.bytes_per_row
    parts = bands(lay.blocks_down, row_bytes, budget if path == "write_texture" else budget // 2)

    def convert(y0: int, y1: int, out=None):
        if out is None:
            return to_texture_rows(pixels[y0:y1], tex.color_space, tex.format, premultiply=premultiply)

        def fill(a: int, b: int) -> None:
            out[a:b, : lay.bytes_per_row] = to_texture_rows(
                pixels[y0 + a : y0 + b], tex.color_space, tex.format, premultiply=premultiply)

        for_row_chunks(y1 - y0, lay.bytes_per_row, fill)
        return out

    writer = _write_texture_bands if path == "write_texture" else _staging_bands
    writer(tex, lay, parts, convert, level, layer, progress)
    tex.upload_path = path
    return path


def _write_texture_bands(tex, lay, parts, convert, level, layer, progress) -> None:
    queue = tex.session.device.queue
    bh = tex.format.block[1]
    for y0, y1 in parts:
        data = convert(y0, y1)
        tex.session.check(
            f"{tex.source}: write_texture", queue.write_texture,
            {"texture": tex.texture, "mip_level": level, "origin": (0, y0 * bh, layer)},
            data, {"offset": 0, "bytes_per_row": lay.bytes_per_row, "rows_per_image": y1 - y0},
            (lay.blocks_across * tex.format.block[0], (y1 - y0) * bh, 1),
        )
        if progress:
            progress(y1 * lay.bytes_per_row, lay.data_bytes)


def _staging_ring(session: Session, size: int) -> list:
    """Two reusable MAP_WRITE|COPY_SRC buffers of at least ``size`` bytes (cached per session),
    each as ``[buffer, pending map promise or None]``."""
    import wgpu

    key = ("upload-ring",)
    ring = session.cache("transfer").peek(key)
    if ring is None or ring[0][0].size < size:
        for buf, pending in ring or []:
            if pending is not None:
                pending.sync_wait()
            buf.destroy()
        ring = [[session.check("staging buffer", session.device.create_buffer, size=size,
                               usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC,
                               mapped_at_creation=True), None] for _ in range(2)]
        session.cache("transfer").put(key, ring)
    return ring


def _staging_bands(tex, lay, parts, convert, level, layer, progress) -> None:
    import numpy as np
    import wgpu

    session = tex.session
    pitch = lay.padded_bytes_per_row
    biggest = max(y1 - y0 for y0, y1 in parts) * pitch
    ring = _staging_ring(session, biggest)
    for y0, y1 in parts:
        # the buffers take turns across bands and across uploads: the next image's first band
        # does not wait for this image's last copy (nor for what was submitted after it)
        slot = ring[0]
        ring.append(ring.pop(0))
        buf, pending = slot
        if pending is not None:  # mapped once the copy from it two bands ago finished
            session.check("map staging buffer", pending.sync_wait)
            slot[1] = None
        mem = buf._experimental_get_mapped_range(0, buf.size)
        view = np.frombuffer(mem, np.uint8, count=(y1 - y0) * pitch).reshape(y1 - y0, pitch)
        convert(y0, y1, out=view)  # overlaps the GPU copy of the previous band
        del view, mem
        buf.unmap()
        enc = session.device.create_command_encoder()
        session.check(
            f"{tex.source}: copy_buffer_to_texture", enc.copy_buffer_to_texture,
            {"buffer": buf, "offset": 0, "bytes_per_row": pitch, "rows_per_image": y1 - y0},
            {"texture": tex.texture, "mip_level": level, "origin": (0, y0 * tex.format.block[1], layer)},
            (lay.blocks_across * tex.format.block[0], (y1 - y0) * tex.format.block[1], 1),
        )
        session.device.queue.submit([enc.finish()])
        # ask for the map now: it resolves once this copy is done, before the next is submitted
        slot[1] = buf.map_async(wgpu.MapMode.WRITE)
        if progress:
            progress(y1 * lay.bytes_per_row, lay.data_bytes)



def upload_texture_file(session: Session, tf: TextureFile, *, levels: int | None = None,
                        color_space: str | None = None, budget: int = DEFAULT_BUDGET, usage: int = 0,
                        progress: Progress | None = None, render_target: bool = False,
                        store_levels: str = "") -> Texture:
    """Put every level, layer, face and slice of a texture file on the GPU with ``write_texture``.

    Each level goes in block rows: ``bytes_per_row = blocks_across x bytes_per_block``,
    ``rows_per_image = blocks_down``, sizes in texels rounded up to whole blocks (a 2x2 or 1x1
    level of BC7 still copies one 4x4 block). A level whose bytes fit in ``budget`` goes in one
    call covering all its layers/slices; bigger ones go image by image in row bands of at most
    ``budget`` bytes, so wgpu-native's staging copy stays bounded. ``levels`` allocates more
    levels than the file holds (for mips made afterwards).
    """
    from .texfile import image_bytes

    fmt = tf.format
    space = "srgb" if fmt.srgb else (color_space or tf.color_space)
    nlevels = max(len(tf.levels), levels or 0)
    tex = create_texture(session, fmt, tf.width, tf.height, layers=tf.images, depth=tf.depth, levels=nlevels,
                         usage=copy_usage(usage), color_space=space, source=tf.source, render_target=render_target,
                         store_levels=store_levels)
    tex.faces, tex.array = tf.faces, tf.array
    queue = session.device.queue
    bw, bh = fmt.block
    done, total = 0, sum(len(lv) for lv in tf.levels)
    try:
        for level, data in enumerate(tf.levels):
            w, h = tex.size(level)
            lay = copy_layout(fmt, w, h)
            images = tex.level_images(level)
            per_image = image_bytes(fmt, w, h)
            view = memoryview(data).cast("B")
            extent_w = lay.blocks_across * bw
            if per_image * images <= budget:  # the whole level, every layer/slice, in one call
                parts = [(0, 0, lay.blocks_down, images)]
            else:
                parts = [(z, y0, y1, 1) for z in range(images)
                         for y0, y1 in bands(lay.blocks_down, lay.bytes_per_row, budget)]
            for z, y0, y1, count in parts:
                start = z * per_image + y0 * lay.bytes_per_row
                chunk = view[start: start + (y1 - y0) * lay.bytes_per_row * count]
                session.check(
                    f"{tf.source}: write_texture level {level}", queue.write_texture,
                    {"texture": tex.texture, "mip_level": level, "origin": (0, y0 * bh, z)},
                    chunk, {"offset": 0, "bytes_per_row": lay.bytes_per_row, "rows_per_image": y1 - y0},
                    (extent_w, (y1 - y0) * bh, count),
                )
                done += len(chunk)
                if progress:
                    progress(done, total)
    except BaseException:
        tex.destroy()
        raise
    tex.upload_path = "write_texture"
    return tex
