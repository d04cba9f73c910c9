"""Several images' GPU steps in a few submissions: upload, mips and read-back of a group.

The per-image path (``upload`` -> ``generate_mips`` -> ``capture_texture_file``) pays, for
each image, a staging map, a submission per step and a read-back map and wait, plus the
Python and wgpu-py overhead of each call: 20-28 ms per 2048² image on the in-order thread of
a busy batch (issue 13). Here a *group* of images, sized to a byte budget, goes as:

1. every image converted (on the copy threads) straight into one mapped staging buffer, then
   one command encoder holding every ``copy_buffer_to_texture``, one submission;
2. each texture's mip chain recorded and submitted (``generate_mips``; no waits);
3. every level of every texture copied into one read-back buffer by one encoder, one map,
   the rows copied out on the read threads (``capture._read_pieces``).

The bytes are those of the per-image path (same conversion, same mip chain, same copy
arithmetic; ``tests/test_gpu_batch.py`` compares them). Images whose own staging and
read-back exceed the budget go alone, through the per-image functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

from .errors import FormatError
from .formats import Format, get_format
from .layout import align_up, copy_layout, mip_count

if TYPE_CHECKING:
    from .decode import Image
    from .device import Session
    from .texfile import TextureFile
    from .upload import Texture

__all__ = ["GpuSteps", "process_group", "plan_groups", "DEFAULT_GROUP_BUDGET"]

#: Host memory (staging + read-back buffers) one group may use, bytes.
DEFAULT_GROUP_BUDGET = 256 << 20


@dataclass(frozen=True)
class GpuSteps:
    """What happens to each image on the GPU: the upload's format and conversion, and the
    mip chain (``mips=False``: level 0 only). Mip fields are :func:`gputex.generate_mips`'s."""

    format: str | None = None
    color_space: str | None = None
    premultiply: bool = False
    flip_y: bool = False
    mips: bool = True
    filter: str = "box"
    alpha: str = "weighted"
    wrap: str = "clamp"
    precision: str = "exact"
    normal_map: bool = False
    alpha_coverage: float | None = None

    def texture_format(self, image: "Image", session: "Session") -> Format:
        from .upload import default_format

        return get_format(self.format) if self.format else default_format(image, session, self.color_space)

    def levels(self, image: "Image") -> int:
        return mip_count(image.width, image.height) if self.mips else 1


def _cost(image: "Image", fmt: Format, levels: int) -> tuple[int, int]:
    """(staging bytes of level 0, read-back bytes of every level), 256-aligned, padded rows."""
    up = align_up(copy_layout(fmt, image.width, image.height).staging_bytes, 256)
    down = 0
    for level in range(levels):
        lay = copy_layout(fmt, max(1, image.width >> level), max(1, image.height >> level))
        down += align_up(lay.padded_bytes_per_row * lay.blocks_down, 256)
    return up, down


def plan_groups(costs: Sequence[tuple[int, int]], budget: int) -> list[list[int]]:
    """Indices of consecutive images, grouped so each group's staging + read-back bytes stay
    within ``budget``; an image over the budget alone forms a group of one (input order kept)."""
    groups: list[list[int]] = []
    held = budget + 1
    for i, (up, down) in enumerate(costs):
        if held + up + down > budget:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += up + down
    return groups


def process_group(session: "Session", images: Sequence["Image"], steps: GpuSteps = GpuSteps(), *,
                  budget: int = DEFAULT_GROUP_BUDGET) -> list["TextureFile"]:
    """Upload, mip and read back ``images``; one :class:`TextureFile` per image, in order.

    Images go in groups of at most ``budget`` bytes of host staging + read-back memory (see
    the module docstring); an image that alone needs more goes through the per-image path
    with ``budget`` as its transfer bound. GPU textures live only while their group runs.
    """
    return list(iter_groups(session, images, steps, budget=budget))


def iter_groups(session: "Session", images: Sequence["Image"], steps: GpuSteps = GpuSteps(), *,
                budget: int = DEFAULT_GROUP_BUDGET) -> Iterator["TextureFile"]:
    """:func:`process_group`, yielding each image's result as soon as its group is read back."""
    fmts = [_checked_format(session, image, steps) for image in images]
    costs = [_cost(image, fmt, steps.levels(image)) for image, fmt in zip(images, fmts)]
    for group in plan_groups(costs, budget):
        if len(group) == 1 and sum(costs[group[0]]) > budget:
            yield _alone(session, images[group[0]], fmts[group[0]], steps, budget)
        else:
            yield from _one_group(session, [images[i] for i in group], [fmts[i] for i in group], steps)


def _checked_format(session: "Session", image: "Image", steps: GpuSteps) -> Format:
    from .convert import check_convertible

    fmt = steps.texture_format(image, session)
    if fmt.compressed:
        raise FormatError(f"{fmt.name} is block-compressed; gputex uploads images to uncompressed formats")
    check_convertible(image.kind, fmt)
    return fmt


def _space(image: "Image", fmt: Format, steps: GpuSteps) -> str:
    space = "srgb" if fmt.srgb else (steps.color_space or image.color_space)
    if space not in ("srgb", "linear"):
        raise FormatError(f"unknown colour space {space!r}; use srgb or linear")
    return space


def _mips(tex: "Texture", steps: GpuSteps) -> None:
    from .mips import generate_mips

    if tex.levels > 1:
        generate_mips(tex, filter=steps.filter, alpha=steps.alpha, wrap=steps.wrap, precision=steps.precision,
                      normal_map=steps.normal_map, alpha_coverage=steps.alpha_coverage)


def _alone(session, image, fmt, steps, budget) -> "TextureFile":
    """The per-image path, for an image too big for a group."""
    import wgpu

    from .capture import capture_texture_file
    from .upload import upload

    tex = upload(session, image, fmt, color_space=steps.color_space, levels=steps.levels(image),
                 premultiply=steps.premultiply, flip_y=steps.flip_y, budget=budget,
                 usage=wgpu.TextureUsage.TEXTURE_BINDING)
    try:
        _mips(tex, steps)
        return capture_texture_file(tex, budget=budget)
    finally:
        tex.destroy()


_STAGING = ("gpu-batch-staging",)


def _staging(session, size: int):
    """A reused ``MAP_WRITE | COPY_SRC`` buffer of at least ``size`` bytes, mapped for writing."""
    import wgpu

    held = session._cache.get(_STAGING)
    if held is not None:
        buf, pending = held
        if pending is not None:
            session.check("map staging buffer", pending.sync_wait)
            held[1] = None
        if buf.size >= size:
            return held
        buf.destroy()
        del session._cache[_STAGING]
    buf = session.check("staging buffer", session.device.create_buffer, size=size,
                        usage=wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC, mapped_at_creation=True)
    held = session._cache[_STAGING] = [buf, None]
    return held


def _fill_tasks(images, texs, offsets, mapped, steps) -> list:
    """Tasks converting every image's rows straight into the mapped staging memory."""
    from .convert import to_texture_rows
    from .parallel import MIN_CHUNK_BYTES

    tasks = []
    for image, tex, at in zip(images, texs, offsets):
        lay = tex.layout(0)
        view = mapped[at: at + lay.padded_bytes_per_row * lay.blocks_down].reshape(
            lay.blocks_down, lay.padded_bytes_per_row)
        pixels = image.pixels[::-1] if steps.flip_y else image.pixels
        step = max(1, MIN_CHUNK_BYTES // max(1, lay.bytes_per_row))
        for y0 in range(0, lay.blocks_down, step):
            def fill(view=view, pixels=pixels, tex=tex, y0=y0, y1=min(lay.blocks_down, y0 + step),
                     n=lay.bytes_per_row):
                view[y0:y1, :n] = to_texture_rows(pixels[y0:y1], tex.color_space, tex.format,
                                                  premultiply=steps.premultiply)
            tasks.append(fill)
    return tasks


def _upload_group(session, images, texs, steps) -> None:
    """Level 0 of every texture: converted into one mapped staging buffer, one encoder of
    copies, one submission. The buffer is asked to map again for the next group."""
    import numpy as np
    import wgpu

    from .parallel import COPY_THREADS, run_all

    offsets, total = [], 0
    for tex in texs:
        offsets.append(total)
        total = align_up(total + tex.layout(0).staging_bytes, 256)
    held = _staging(session, total)
    buf = held[0]
    try:
        mem = buf._experimental_get_mapped_range(0, buf.size)
        try:
            mapped = np.frombuffer(mem, np.uint8, count=total)
            run_all(_fill_tasks(images, texs, offsets, mapped, steps), COPY_THREADS)
            del mapped
        finally:
            del mem
            buf.unmap()
        enc = session.device.create_command_encoder()
        for tex, at in zip(texs, offsets):
            lay, (bw, bh) = tex.layout(0), tex.format.block
            session.check(f"{tex.source}: copy_buffer_to_texture", enc.copy_buffer_to_texture,
                          {"buffer": buf, "offset": at, "bytes_per_row": lay.padded_bytes_per_row,
                           "rows_per_image": lay.blocks_down},
                          {"texture": tex.texture, "mip_level": 0, "origin": (0, 0, 0)},
                          (lay.blocks_across * bw, lay.blocks_down * bh, 1))
        session.device.queue.submit([enc.finish()])
        held[1] = buf.map_async(wgpu.MapMode.WRITE)  # ready for the next group once these copies ran
    except BaseException:
        if session._cache.get(_STAGING) is held:  # its map state is unknown now: make a fresh one next time
            del session._cache[_STAGING]
        buf.destroy()
        raise


def _one_group(session, images, fmts, steps) -> list["TextureFile"]:
    import wgpu

    from .capture import _read_pieces, as_texture_file, texture_file_pieces
    from .upload import _usage, create_texture

    texs: list = []
    try:
        for image, fmt in zip(images, fmts):
            texs.append(create_texture(session, fmt, image.width, image.height, levels=steps.levels(image),
                                       usage=_usage(wgpu.TextureUsage.TEXTURE_BINDING),
                                       color_space=_space(image, fmt, steps), source=image.source))
        _upload_group(session, images, texs, steps)
        for tex in texs:
            tex.upload_path = "staging"
            _mips(tex, steps)
        levels, pieces = [], []
        limit = session.limits.get("max-buffer-size", 256 << 20)
        for tex in texs:
            lv, ps = texture_file_pieces(tex, None, limit)
            levels.append(lv)
            pieces += ps
        _read_pieces(pieces, budget=2 * limit)  # the group was sized to its budget: one map where it fits
        return [as_texture_file(tex, lv) for tex, lv in zip(texs, levels)]
    finally:
        for tex in texs:
            tex.destroy()
