"""Several images' GPU steps in a few submissions: upload, mips and read-back of a group.

The per-image path (``upload`` -> ``generate_mips`` -> ``capture_texture_file``) pays, for
each image, a staging map, a submission per step and a read-back map and wait, plus the
Python and wgpu-py overhead of each call: 20-28 ms per 2048² image on the in-order thread of
a busy batch (issue 13). Here a *group* of images, sized to a byte budget, goes as:

1. every image converted (on the copy threads) straight into one mapped staging buffer, then
   one command encoder holding every ``copy_buffer_to_texture``, one submission;
2. each texture's mip chain recorded and submitted (``generate_mips``; no waits);
3. every level of every texture copied into one read-back buffer by one encoder, one map,
   the rows copied out on the read threads (``capture.copy_out``).

Groups are pipelined two deep: group k+1 is converted into the other staging buffer while
the GPU works on group k, and submitted as soon as group k is mapped, so the GPU runs group
k+1 while the CPU copies group k out. Host memory: two staging and two read-back buffers,
together at most ``budget``.

The bytes are those of the per-image path (same conversion, same mip chain, same copy
arithmetic; ``tests/capture/test_gpu_batch.py`` compares them). Images whose own staging and
read-back exceed the budget go alone, through the per-image functions.

What the run uses today (issue 13): :func:`start_readback` / :func:`start_level_readback`.
The in-order thread uploads one input, makes its mips, records the copies of its levels into
a read-back buffer of a small ring (:data:`DEFER_BUFFERS`), submits and requests the map, and
goes on to the next input; the pool thread that writes the input's texture file (``upload
-o``) or encodes its levels (``capture``) waits for that map and copies the rows out
(:class:`Readback`). On the H200 host the in-order thread's share per 2048² image fell from
~49 to ~39 ms (traced run, mostly the mip chain's own CPU time now). ``upload -o``'s step now
takes the inputs already decoded together (``gputex.batch.GPU_GROUP``) and their read-backs
share ring buffers, one map each (:class:`ReadbackGroup`, at the end of this module); each
input's upload and chain are still its own submissions (the texture pool keeps one texture per
size, so an input's copies are submitted before the next input reuses its texture). Grouping
several images' uploads into one submission (:func:`iter_groups`, below) is not wired into the
run: on the H200 host it measured 1.22x the blocking per-image path alone, and the per-image
wgpu calls it saves are a small part of that thread's time. To wire it, images
that are plain 2D images (not texture files, no resize / BC encoding / cube / array), decoded
in input order, would go as

    steps = GpuSteps(format=opts.format, color_space=opts.color_space, premultiply=opts.premultiply,
                     flip_y=opts.flip_y, mips=opts.mips, mip_levels=opts.mip_levels, **opts.mip_options)
    for image, tf in zip(images, iter_groups(session, images, steps, budget=4 * opts.budget)):
        write_texture_file(tf, out_path(image), zstd=opts.zstd)

``iter_groups`` yields each result as soon as its group is read back (results keep input
order); errors are the per-image path's (a format that cannot hold the image raises before
any GPU work).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import FormatError
from .formats import Format, get_format
from .layout import align_up, copy_layout, mip_count

if TYPE_CHECKING:
    from .decode import Image
    from .device import Session
    from .texfile import TextureFile
    from .texture import Texture

__all__ = ["GpuSteps", "process_group", "iter_groups", "plan_groups", "DEFAULT_GROUP_BUDGET", "Readback",
           "start_readback", "start_level_readback", "DEFER_MAX_BYTES", "DEFER_BUFFERS", "RING_BYTES",
           "ReadbackGroup", "GROUP_MAX_BYTES"]

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
    mip_levels: int | None = None  # at most this many levels (``--levels``); None: the full chain
    filter: str = "box"
    alpha: str = "weighted"
    wrap: str = "clamp"
    precision: str = "exact"
    normal_map: bool = False
    alpha_coverage: float | None = None

    def texture_format(self, image: Image, session: Session) -> Format:
        from .texture import default_format

        return get_format(self.format) if self.format else default_format(image, session, self.color_space)

    def levels(self, image: Image) -> int:
        if not self.mips:
            return 1
        full = mip_count(image.width, image.height)
        return min(self.mip_levels or full, full)


def _cost(image: Image, fmt: Format, levels: int) -> tuple[int, int]:
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


def process_group(session: Session, images: Sequence[Image], steps: GpuSteps | None = None, *,
                  budget: int = DEFAULT_GROUP_BUDGET) -> list[TextureFile]:
    """Upload, mip and read back ``images``; one :class:`TextureFile` per image, in order.

    Images go in groups of at most ``budget / 2`` bytes of host staging + read-back memory,
    two groups in flight (see the module docstring); an image that alone needs more goes
    through the per-image path. GPU textures live only while their group runs.
    """
    return list(iter_groups(session, images, steps, budget=budget))


def iter_groups(session: Session, images: Sequence[Image], steps: GpuSteps | None = None, *,
                budget: int = DEFAULT_GROUP_BUDGET) -> Iterator[TextureFile]:
    """:func:`process_group`, yielding each image's result as soon as its group is read back."""
    steps = steps or GpuSteps()
    fmts = [_checked_format(session, image, steps) for image in images]
    costs = [_cost(image, fmt, steps.levels(image)) for image, fmt in zip(images, fmts)]
    share = min(budget // 2, session.limits.get("max-buffer-size", 256 << 20))  # two groups in flight
    yield from _grouped(session, images, fmts, costs, plan_groups(costs, share), steps, share)


def _checked_format(session: Session, image: Image, steps: GpuSteps) -> Format:
    from .convert import check_convertible

    fmt = steps.texture_format(image, session)
    if fmt.compressed:
        raise FormatError(f"{fmt.name} is block-compressed; gputex uploads images to uncompressed formats")
    check_convertible(image.kind, fmt)
    return fmt


def _space(image: Image, fmt: Format, steps: GpuSteps) -> str:
    space = "srgb" if fmt.srgb else (steps.color_space or image.color_space)
    if space not in ("srgb", "linear"):
        raise FormatError(f"unknown colour space {space!r}; use srgb or linear")
    return space


def _mips(tex: Texture, steps: GpuSteps, image=None) -> None:
    from .convert import native_rows
    from .mips import generate_mips

    if tex.levels > 1:
        # level 0's bytes where they are the image's own (the host's mip engine reads none back)
        base = None if image is None else native_rows(image.pixels, tex.color_space, tex.format,
                                                      premultiply=steps.premultiply, flip_y=steps.flip_y)
        generate_mips(tex, filter=steps.filter, alpha=steps.alpha, wrap=steps.wrap, precision=steps.precision,
                      normal_map=steps.normal_map, alpha_coverage=steps.alpha_coverage, base=base)


def _stored(session, image, fmt, steps) -> str:
    """``create_texture``'s ``store_levels`` for ``image``'s texture (:func:`gputex.mips.stored_format`)."""
    from .mips import stored_format

    return stored_format(session, fmt, image.width, image.height, steps.levels(image), filter=steps.filter,
                         precision=steps.precision, normal_map=steps.normal_map, coverage=steps.alpha_coverage)


def _alone(session, image, fmt, steps, budget) -> TextureFile:
    """The per-image path, for an image too big for a group."""
    import wgpu

    from .capture import capture_texture_file
    from .upload import upload

    tex = upload(session, image, fmt, color_space=steps.color_space, levels=steps.levels(image),
                 premultiply=steps.premultiply, flip_y=steps.flip_y, budget=budget,
                 usage=wgpu.TextureUsage.TEXTURE_BINDING, store_levels=_stored(session, image, fmt, steps))
    try:
        _mips(tex, steps, image)
        return capture_texture_file(tex, budget=budget)
    finally:
        tex.destroy()


def _buffer(session, kind: str, slot: int, size: int):
    """Reused buffer ``slot`` (0 or 1) of ``kind`` ("staging": MAP_WRITE | COPY_SRC, mapped for
    writing when returned; "readback": MAP_READ | COPY_DST), at least ``size`` bytes, kept by
    the session as ``[buffer, pending map or None]``."""
    import wgpu

    cache = session.cache("gpu-batch")
    key = (kind, slot)
    held = cache.peek(key)
    if held is not None:
        buf, pending = held
        if pending is not None:
            session.check(f"map {kind} buffer", pending.sync_wait)
            held[1] = None
        if buf.size >= size:
            return held
        buf.destroy()
        cache.pop(key)
    usage = (wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC if kind == "staging"
             else wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    buf = session.check(f"{kind} buffer", session.device.create_buffer, size=max(size, 256), usage=usage,
                        mapped_at_creation=kind == "staging")
    held = [buf, None]
    cache.put(key, held)
    return held


def _forget(session) -> None:
    """Drop the reused buffers (their map state is unknown after an error)."""
    cache = session.cache("gpu-batch")
    for key in list(cache.items):
        buf, _ = cache.pop(key)
        try:
            buf.destroy()
        except Exception:  # noqa: BLE001 - already gone with the device
            pass


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
            def fill(view=view, pixels=pixels, tex=tex, y0=y0, y1=min(lay.blocks_down, y0 + step),  # noqa: B008
                     n=lay.bytes_per_row):
                view[y0:y1, :n] = to_texture_rows(pixels[y0:y1], tex.color_space, tex.format,
                                                  premultiply=steps.premultiply)
            tasks.append(fill)
    return tasks


class _Group:
    """One group in flight: its textures, level buffers and read-back copies, in one buffer slot."""

    def __init__(self, session, images, fmts, steps: GpuSteps, slot: int):
        self.session, self.images, self.steps, self.slot = session, images, steps, slot
        self.texs: list = []
        self.pending = None
        self.readback = None
        try:
            self._prepare(fmts)
        except BaseException:
            self.release()
            raise

    def _prepare(self, fmts) -> None:
        """CPU side, before the GPU is needed: textures made, pixels converted into staging."""
        import numpy as np
        import wgpu

        from .capture import copy_groups, texture_file_pieces
        from .parallel import copy_threads, run_all
        from .texture import copy_usage, create_texture

        session, steps = self.session, self.steps
        for image, fmt in zip(self.images, fmts):
            self.texs.append(create_texture(session, fmt, image.width, image.height, levels=steps.levels(image),
                                            usage=copy_usage(wgpu.TextureUsage.TEXTURE_BINDING),
                                            color_space=_space(image, fmt, steps), source=image.source,
                                            store_levels=_stored(session, image, fmt, steps)))
        self.offsets, total = [], 0
        for tex in self.texs:
            self.offsets.append(total)
            total = align_up(total + tex.layout(0).staging_bytes, 256)
        self.staging = _buffer(session, "staging", self.slot, total)
        buf = self.staging[0]
        mem = buf._experimental_get_mapped_range(0, buf.size)
        try:
            mapped = np.frombuffer(mem, np.uint8, count=total)
            run_all(_fill_tasks(self.images, self.texs, self.offsets, mapped, steps), copy_threads())
            del mapped
        finally:
            del mem
            buf.unmap()
        self.levels, pieces = [], []
        for tex in self.texs:
            lv, ps = texture_file_pieces(tex, None, 1 << 62)
            self.levels.append(lv)
            pieces += ps
        groups = copy_groups(pieces, 1 << 62)  # one read-back buffer: the plan kept the group under the limit
        self.pieces = groups[0]

    def submit(self) -> None:
        """GPU side: level 0 copies, the mip chains, the read-back copies; one map asked for."""
        import wgpu

        from .capture import group_bytes, record_copies

        session = self.session
        enc = session.device.create_command_encoder()
        for tex, at in zip(self.texs, self.offsets):
            lay, (bw, bh) = tex.layout(0), tex.format.block
            session.check(f"{tex.source}: copy_buffer_to_texture", enc.copy_buffer_to_texture,
                          {"buffer": self.staging[0], "offset": at, "bytes_per_row": lay.padded_bytes_per_row,
                           "rows_per_image": lay.blocks_down},
                          {"texture": tex.texture, "mip_level": 0, "origin": (0, 0, 0)},
                          (lay.blocks_across * bw, lay.blocks_down * bh, 1))
        session.device.queue.submit([enc.finish()])
        self.staging[1] = self.staging[0].map_async(wgpu.MapMode.WRITE)  # for the group after next
        for tex, image in zip(self.texs, self.images):
            tex.upload_path = "staging"
            _mips(tex, self.steps, image)
        nbytes = group_bytes(self.pieces)
        self.readback = _buffer(session, "readback", self.slot, nbytes)
        enc = session.device.create_command_encoder()
        record_copies(enc, self.pieces, self.readback[0])
        session.device.queue.submit([enc.finish()])
        self.pending = self.readback[0].map_async(wgpu.MapMode.READ, 0, nbytes)

    def wait(self) -> None:
        self.session.check("map readback buffer", self.pending.sync_wait)
        self.pending = None

    def finish(self) -> list[TextureFile]:
        """Copy the levels out (the group must be mapped: :meth:`wait`) and free the textures."""
        from .capture import as_texture_file, copy_out

        try:
            copy_out(self.pieces, self.readback[0])
            return [as_texture_file(tex, lv) for tex, lv in zip(self.texs, self.levels)]
        finally:
            self.release()

    def release(self) -> None:
        for tex in self.texs:
            tex.destroy()
        self.texs = []


def _grouped(session, images, fmts, costs, groups, steps, budget) -> Iterator[TextureFile]:
    """Groups pipelined: group k+1 is converted while the GPU works on group k, and submitted
    once group k is mapped (a map waits for all work submitted before it), so the GPU runs
    group k+1 while the CPU copies group k out. Two staging and two read-back buffers."""
    inflight: _Group | None = None
    slot = 0
    try:
        for group in groups:
            if len(group) == 1 and sum(costs[group[0]]) > budget:
                if inflight is not None:
                    inflight.wait()
                    done, inflight = inflight, None
                    yield from done.finish()
                yield _alone(session, images[group[0]], fmts[group[0]], steps, budget)
                continue
            current = _Group(session, [images[i] for i in group], [fmts[i] for i in group], steps, slot)
            slot ^= 1
            if inflight is not None:
                try:
                    inflight.wait()
                except BaseException:
                    current.release()
                    raise
            try:
                current.submit()
            except BaseException:
                current.release()
                raise
            if inflight is not None:
                done, inflight = inflight, None
                yield from done.finish()
            inflight = current
        if inflight is not None:
            inflight.wait()
            done, inflight = inflight, None
            yield from done.finish()
    except BaseException:
        if inflight is not None:
            inflight.release()
        _forget(session)
        raise


# -- one texture's read-back, finished on another thread ---------------------------------------

#: A texture file whose padded read-back is at most this many bytes may be read back after the
#: in-order thread has moved on (:func:`start_readback`); bigger ones go through
#: :func:`gputex.capture.capture_texture_file` (several maps, copies on the read threads).
DEFER_MAX_BYTES = 64 << 20
#: Read-back buffers in flight at once for deferred read-backs: their (mapped) memory is bounded
#: by this many times :data:`DEFER_MAX_BYTES` however long the batch (the in-order thread waits
#: for one). Besides that, each pending write holds its own level bytes (what the rows are
#: copied into: up to :data:`DEFER_MAX_BYTES` each, allocated when its copies are submitted and
#: held until its file is written), one per deferred input not yet written.
DEFER_BUFFERS = 6
#: And at most this many bytes of them (a group's buffer, :data:`GROUP_MAX_BYTES`, holds
#: several textures): the bound single read-backs always had.
RING_BYTES = DEFER_BUFFERS * DEFER_MAX_BYTES


class Readback:
    """Copies out of one texture into a read-back buffer of its own, its map requested.
    :meth:`finish` (on any thread) waits for it, copies the rows into their arrays and returns
    ``stored`` (what the arrays belong to: a :class:`~gputex.texfile.TextureFile` holding
    exactly :func:`~gputex.capture.capture_texture_file`'s bytes, or a list of captured
    levels); :meth:`cancel` gives the buffer back unread. One of the two must be called.

    :meth:`finish` runs after the input's GPU step, so a device lost by then is not retried as
    :func:`~gputex.pipeline.run_one` retries one lost in that step: the input fails with one line
    that says so (its buffer is dropped; the next GPU step meets the loss and recreates the device)."""

    def __init__(self, ring: _Ring, buf, group: list, stored: Any, promise, source: str):
        self._ring, self._buf, self._group, self.stored, self._promise = ring, buf, group, stored, promise
        self._source = source

    def finish(self) -> Any:
        from .capture import copy_out
        from .errors import DeviceLostError

        buf, self._buf = self._buf, None
        if buf is None:
            raise RuntimeError("read-back already finished")
        try:
            self._ring.session.check(f"{self._source}: map readback buffer", self._promise.sync_wait)
            copy_out(self._group, buf, threads=1)  # one thread: the pool's other threads copy other images
        except DeviceLostError as e:
            self._ring.give(buf, usable=False)
            raise DeviceLostError(f"{e}; not retried (read back after its GPU step), nothing written") from e
        except BaseException:
            self._ring.give(buf, usable=False)
            raise
        self._ring.give(buf)
        return self.stored

    def __del__(self) -> None:  # dropped unfinished (a run torn down mid-way): the ring gets its slot back
        buf, self._buf = getattr(self, "_buf", None), None
        if buf is not None:
            self._ring.give(buf, usable=False)

    def cancel(self) -> None:
        buf, self._buf = self._buf, None
        if buf is None:
            return
        try:
            self._promise.sync_wait()
            buf.unmap()
        except Exception:  # noqa: BLE001 - the buffer is dropped instead
            self._ring.give(buf, usable=False)
            return
        self._ring.give(buf)


class _Ring:
    """At most :data:`DEFER_BUFFERS` ``MAP_READ | COPY_DST`` buffers, handed from the in-order
    thread (:meth:`take`, waiting while all are in flight) to the pool and back (:meth:`give`).

    A new buffer is made at least as big as the biggest one so far, so a batch of mixed sizes
    replaces a small buffer at most once per size it grows to; and a replaced buffer is dropped,
    not destroyed, on the in-order thread (``destroy`` waits for the GPU there; h13batch4 measured
    such a wait at 40-50 ms on the H200 host). Not the cause of the one GPU step per run of the
    48-image batch that spends 29-48 ms of CPU in the read-back's submission (still there with
    this; a buffer made ahead on another thread did not remove it either: unexplained)."""

    def __init__(self, session: Session):
        import threading

        self.session = session
        self.free: list = []
        self.count = 0
        self.held = 0  # bytes of the buffers made and not dropped
        self.biggest = 0
        self.cond = threading.Condition()

    def take(self, size: int, wait: bool = True):
        """A buffer of at least ``size`` bytes: a free one, else a new one within the ring's
        bounds, else (``wait``) once one is given back; None where ``wait`` is false and there
        is none now (a :class:`ReadbackGroup` holding buffers of its own: its members give them
        back only after its step, so waiting there would wait on itself)."""
        import wgpu

        with self.cond:
            while True:
                fit = next((b for b in self.free if b.size >= size), None)
                if fit is not None:
                    self.free.remove(fit)
                    return fit
                new = max(align_up(max(size, 256), 1 << 20), self.biggest)
                if self.count < DEFER_BUFFERS and (self.held + new <= RING_BYTES or not self.count):
                    self.count += 1  # a new one before replacing a small one: a destroy
                    break  # waited 40-50 ms on the H200 host mid-batch
                if self.free:  # too small: replaced by a bigger one (released once unreferenced)
                    small = min(self.free, key=lambda b: b.size)
                    self.free.remove(small)
                    self.held -= small.size
                    self.count -= 1
                    continue
                if not wait:
                    return None
                self.cond.wait()
            size = self.biggest = new
            self.held += size
        try:
            return self.session.check("readback buffer", self.session.device.create_buffer,
                                      size=size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        except BaseException:
            with self.cond:
                self.count -= 1
                self.held -= size
                self.cond.notify()
            raise

    def give(self, buf, usable: bool = True) -> None:
        with self.cond:
            if usable:
                self.free.append(buf)
            else:
                self.count -= 1
                self.held -= buf.size
            self.cond.notify()
        if not usable and buf is not None:
            try:
                buf.destroy()
            except Exception:  # noqa: BLE001 - already gone with the device
                pass


def start_readback(tex: Texture) -> Readback | None:
    """Record the copies of every level of ``tex`` into a read-back buffer, submit them and
    request the map, without waiting; None when the padded copy exceeds
    :data:`DEFER_MAX_BYTES` (read it back with :func:`gputex.capture.capture_texture_file`).
    ``tex`` may be destroyed once this returns (WebGPU keeps it for the submitted copies)."""
    from .capture import as_texture_file

    planned = _file_pieces(tex)
    if planned is None:
        return None
    out, pieces, limit = planned
    return _submit(tex, pieces, limit, lambda: as_texture_file(tex, out))


def _file_pieces(tex: Texture) -> tuple[Any, list, int] | None:
    """(the texture file's levels, their copy pieces, the byte limit) of every level of ``tex``
    for a deferred read-back; None where the padded copy exceeds :data:`DEFER_MAX_BYTES`."""
    from .capture import texture_file_pieces

    if tex.format.compressed:
        from .capabilities import require

        require(tex.session, "compressed-copy", tex.source)
    limit = _defer_limit(tex.session)
    if _padded(tex, range(tex.levels), tex.level_images) > limit:
        return None
    out, pieces = texture_file_pieces(tex, None, limit)
    return out, pieces, limit


def start_level_readback(tex: Texture, levels: list[int], layer: int, into) -> Readback | None:
    """:func:`start_readback` for ``levels`` of one ``layer``, each into the array
    ``into(level, shape, dtype)`` returns (as :func:`gputex.capture.capture_levels` with
    ``into``); :meth:`Readback.finish` returns those arrays. None when the format needs a
    conversion on the way or the copies exceed :data:`DEFER_MAX_BYTES`."""
    from .capture import level_pieces

    limit = _defer_limit(tex.session)
    if _padded(tex, levels, lambda lv: 1) > limit:
        return None
    planned = level_pieces(tex, levels, layer, into, limit)
    if planned is None:
        return None
    arrays, pieces = planned
    return _submit(tex, pieces, limit, lambda: arrays)


def _defer_limit(session: Session) -> int:
    return min(DEFER_MAX_BYTES, session.limits.get("max-buffer-size", 256 << 20))


def _padded(tex: Texture, levels, images) -> int:
    return sum(images(lv) * copy_layout(tex.format, *tex.size(lv)[:2]).staging_bytes for lv in levels)


def _one_group(pieces: list, limit: int) -> list | None:
    """``pieces`` as one copy group of at most ``limit`` bytes, or None where they need more."""
    from .capture import copy_groups

    groups = copy_groups(pieces, limit)
    return groups[0] if len(groups) == 1 else None


def _ring(session: Session) -> _Ring:
    """The session's read-back ring."""
    return session.cache("gpu-batch").get("readback-ring", lambda: _Ring(session))


def _submit(tex: Texture, pieces: list, limit: int, stored) -> Readback | None:
    """Record ``pieces`` (one group of at most ``limit`` bytes, else None) into a ring buffer,
    submit, request the map."""
    import wgpu

    from .capture import group_bytes, record_copies

    group = _one_group(pieces, limit)
    if group is None:
        return None
    session = tex.session
    ring = _ring(session)
    buf = ring.take(group_bytes(group))
    try:
        enc = session.device.create_command_encoder()
        record_copies(enc, group, buf)
        session.device.queue.submit([enc.finish()])
        promise = buf.map_async(wgpu.MapMode.READ, 0, group_bytes(group))
    except BaseException:
        ring.give(buf, usable=False)
        raise
    return Readback(ring, buf, group, stored(), promise, tex.source)


# -- several textures' read-backs in one buffer, one map ----------------------------------------

#: A group's read-back buffer holds the levels of several textures, up to this many bytes: one
#: map (and one wait in the pool) for all of them instead of one each. 2048² RGBA8 with mips:
#: 22.4 MB, so 2 of them (1024²: 11). As :data:`DEFER_MAX_BYTES`, so the ring keeps its six
#: buffers in flight within :data:`RING_BYTES` (new buffers are made as big as the biggest so
#: far: 128 MiB group buffers would leave three); a texture above it is never grouped.
GROUP_MAX_BYTES = 64 << 20


class ReadbackGroup:
    """The read-backs of the textures of one in-order step over several inputs
    (:func:`gputex.upload_stage.upload_gpu_stage`'s ``many``): each :meth:`add` records the
    copies of every level of one texture into a shared buffer of the ring and submits them at
    once (so its texture may be recycled and the next input of its size reuse it: the queue
    runs those copies before any later upload into it); :meth:`close` asks for one map of the
    buffer. Each texture's :class:`Readback`-like handle (``finish``/``cancel``, on any thread)
    waits for that map, copies its own rows out and the last one done gives the buffer back.
    A texture that does not fit in what is left of the buffer closes it and opens the next.

    Why: on the H200 host every map pending while the in-order thread submits makes wgpu-py's
    poll thread hold the device's lock in a blocking poll (h13batch3), and on lavapipe a
    ``map_async`` took ~3 ms of the in-order thread (``gpu_stage.py --upload-o``): one map a
    group instead of one an input. Memory: the ring's bound (:data:`RING_BYTES`) as for single
    read-backs; a buffer is at most :data:`GROUP_MAX_BYTES`."""

    def __init__(self, session: Session, expect: int = 1):
        self.session = session
        self.expect = max(1, expect)  # inputs still to come in this step, for the buffer's size
        self._open: _Shared | None = None
        self.taken = 0  # ring buffers this step took

    def add(self, tex: Texture) -> _Member | None:
        """Record and submit the copies of every level of ``tex``; None where the padded copy
        exceeds :data:`DEFER_MAX_BYTES` (read it back otherwise, as :func:`start_readback`)."""
        from .capture import as_texture_file, group_bytes, record_copies

        self.expect = max(1, self.expect - 1)
        planned = _file_pieces(tex)
        if planned is None:
            return None
        out, pieces, limit = planned
        group = _one_group(pieces, limit)
        if group is None:
            return None
        size = group_bytes(group)
        shared = self._open
        if shared is not None and (align_up(shared.used, 256) + size > shared.cap
                                   or shared.device is not self.session.device):  # (recreated: a loss)
            self.close()
            shared = None
        if shared is None:
            cap = max(size, min(_group_limit(self.session), size * (self.expect + 1)))
            ring = _ring(self.session)
            # the step's first buffer may wait for earlier steps' members to give theirs back;
            # a later one may not (its own members give theirs back only after the step): with
            # none free the input is read back alone (start_readback's path)
            buf = ring.take(cap, wait=not self.taken)
            if buf is None:
                return None
            self.taken += 1
            shared = self._open = _Shared(ring, buf, self.session)
            shared.cap = cap  # (a reused buffer may be bigger: the group still ends here)
        base = align_up(shared.used, 256)
        for p in group:
            p.offset += base
        session = self.session
        try:
            enc = session.device.create_command_encoder()
            record_copies(enc, group, shared.buf)
            session.device.queue.submit([enc.finish()])
        except BaseException:
            if shared.members == 0:  # nothing of it submitted: the buffer goes back unused
                self._open = None
                shared.ring.give(shared.buf, usable=False)
            else:
                self.close()
            raise
        shared.used = base + size
        shared.members += 1
        shared.left += 1
        return _Member(shared, group, as_texture_file(tex, out), tex.source)

    def close(self) -> None:
        """Ask for the map of the open buffer (its members' handles wait for it); a no-op
        when none is open. Must be called once the step is done, also after an error."""
        shared, self._open = self._open, None
        if shared is not None:
            shared.request()


def _group_limit(session: Session) -> int:
    return min(GROUP_MAX_BYTES, session.limits.get("max-buffer-size", 256 << 20))


class _Shared:
    """One read-back buffer holding several textures' copies: mapped once, copied out by each
    member on its own thread, unmapped and given back to the ring by the last member done."""

    def __init__(self, ring: _Ring, buf, session: Session):
        import threading

        self.ring, self.buf, self.session, self.device = ring, buf, session, session.device
        self.used = 0
        self.cap = buf.size  # what the group may fill
        self.members = 0  # handed out
        self.left = 0  # handed out and not yet finished or cancelled
        self.requested = threading.Event()
        self.lock = threading.Lock()
        self.promise: Any = None
        self.mapped: Any = None  # the mapped bytes (uint8 array) once waited for
        self.error: BaseException | None = None  # the map's own failure (wgpu's), for every member
        self.bad = False  # a member failed: the buffer is not reused
        self.gone = False

    def request(self) -> None:
        import wgpu

        try:
            self.promise = self.buf.map_async(wgpu.MapMode.READ, 0, self._size())
        except Exception as e:  # noqa: BLE001 - each member reports it
            self.error = e
        finally:
            self.requested.set()
            with self.lock:
                if self.left == 0:  # every member cancelled before the map was asked for
                    self._release()

    def _size(self) -> int:
        return max(4, align_up(self.used, 4))

    def view(self, source: str):
        """The mapped bytes (waiting for the map the first time); the map's failure is raised
        as :meth:`gputex.device.Session.check` raises it, naming ``source``."""
        import numpy as np

        self.requested.wait()
        with self.lock:
            if self.error is None and self.mapped is None:
                try:
                    self.promise.sync_wait()
                    self.mapped = np.frombuffer(self.buf.read_mapped(0, self._size(), copy=False), np.uint8)
                except Exception as e:  # noqa: BLE001 - raised below, for this member and the others
                    self.error = e
            error, mapped = self.error, self.mapped
        if error is not None:
            def fail():
                raise error

            self.session.check(f"{source}: map readback buffer", fail)
        return mapped

    def done(self, ok: bool = True) -> None:
        """One member finished (or cancelled): the last one unmaps and gives the buffer back."""
        with self.lock:
            self.bad = self.bad or not ok
            self.left -= 1
            if self.left == 0 and self.requested.is_set():
                self._release()

    def _release(self) -> None:
        """(Under the lock.) Unmap and give the buffer back; dropped where the map failed."""
        if self.gone:
            return
        self.gone = True
        usable = self.error is None and not self.bad and self.promise is not None
        waited, self.mapped = self.mapped is not None, None  # no view may outlive the unmap
        if usable:
            try:
                if not waited:
                    self.promise.sync_wait()
                self.buf.unmap()
            except Exception:  # noqa: BLE001 - the buffer is dropped instead
                usable = False
        self.ring.give(self.buf, usable=usable)


class _Member:
    """One texture's part of a :class:`_Shared` buffer, with :class:`Readback`'s interface."""

    def __init__(self, shared: _Shared, group: list, stored: Any, source: str):
        self._shared, self._group, self.stored, self._source = shared, group, stored, source
        self._live = True

    def finish(self) -> Any:
        from .capture import copy_mapped
        from .errors import DeviceLostError

        if not self._live:
            raise RuntimeError("read-back already finished")
        self._live = False
        try:
            copy_mapped(self._group, self._shared.view(self._source))
        except DeviceLostError as e:
            self._shared.done(ok=False)
            raise DeviceLostError(f"{e}; not retried (read back after its GPU step), nothing written") from e
        except BaseException:
            self._shared.done(ok=False)
            raise
        self._shared.done()
        return self.stored

    def cancel(self) -> None:
        if self._live:
            self._live = False
            self._shared.done()

    def __del__(self) -> None:  # dropped unfinished (a run torn down mid-way): the buffer is released
        if getattr(self, "_live", False):
            self._live = False
            self._shared.done()
