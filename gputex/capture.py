"""Capture: any level / layer of a texture -> numpy, through ``copy_texture_to_buffer``.

Every capture -- one level, several levels, or a whole texture file -- is planned as a list of
copies (whole layers where they fit, else row bands) packed into groups of at most
``budget / 2`` bytes. Each group is one command encoder, one submission and one map of a
reused ``MAP_READ | COPY_DST`` buffer; rows travel padded to 256 bytes and are unpadded by numpy
slice-assignments split over :func:`~gputex.parallel.read_threads` threads (a fresh mapping is
first touched a page fault per 4 KiB; threads fault in parallel). Group k is mapped before group
k+1 is submitted (a map waits for all work submitted before it), so the GPU copies group k+1
while the CPU copies group k out. A 14-level chain is thus a few maps, not one per level or layer.
wgpu-py's ``queue.read_texture`` is not used: it unpads in a Python row loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import LimitError, OutputError
from .layout import bands

if TYPE_CHECKING:
    import numpy as np

    from .texture import Texture

__all__ = ["capture", "capture_bytes", "capture_levels", "capture_texture_file", "capture_to_file", "open_streamed",
           "StreamedFile"]

Progress = Callable[[int, int], None]


class _Piece:
    """One copy: block rows ``[y0, y1)`` of layers ``[z0, z0 + nz)`` of ``level``, into ``dst``
    (``(nz * (y1 - y0), bytes_per_row)`` uint8; whole layers when ``nz > 1``)."""

    __slots__ = ("tex", "level", "z0", "nz", "y0", "y1", "dst", "pitch", "offset")

    def __init__(self, tex: Texture, level: int, z0: int, nz: int, y0: int, y1: int, dst: np.ndarray,
                 pitch: int):
        self.tex, self.level, self.z0, self.nz, self.y0, self.y1 = tex, level, z0, nz, y0, y1
        self.dst, self.pitch, self.offset = dst, pitch, 0

    @property
    def size(self) -> int:
        return self.pitch * (self.y1 - self.y0) * self.nz


def _pieces(tex: Texture, level: int, z0: int, nz: int, dst: np.ndarray, limit: int) -> list[_Piece]:
    """Split layers ``[z0, z0 + nz)`` of ``level`` (``dst`` holds their tight rows, layer after
    layer) into copies of at most ``limit`` padded bytes: several whole layers per copy where
    they fit, else one layer in row bands."""
    lay = tex.layout(level)
    pitch, down = lay.padded_bytes_per_row, lay.blocks_down
    per_layer = pitch * down
    out = []
    if per_layer <= limit:
        step = max(1, limit // per_layer)
        for z in range(z0, z0 + nz, step):
            n = min(step, z0 + nz - z)
            out.append(_Piece(tex, level, z, n, 0, down, dst[(z - z0) * down: (z - z0 + n) * down], pitch))
    else:
        for z in range(z0, z0 + nz):
            for y0, y1 in bands(down, pitch, limit):
                out.append(_Piece(tex, level, z, 1, y0, y1, dst[(z - z0) * down + y0: (z - z0) * down + y1], pitch))
    return out


def copy_groups(pieces: list[_Piece], limit: int) -> list[list[_Piece]]:
    """Pack consecutive pieces into groups of at most ``limit`` bytes (one buffer, one map each);
    sets each piece's offset in its group's buffer (256-aligned)."""
    from .layout import align_up

    groups: list[list[_Piece]] = []
    end = 0
    for p in pieces:
        at = align_up(end, 256)
        if not groups or at + p.size > limit:
            groups.append([])
            at = 0
        p.offset = at
        groups[-1].append(p)
        end = at + p.size
    return groups


def group_bytes(group: list[_Piece]) -> int:
    return group[-1].offset + group[-1].size


def _readback_ring(session, size: int, count: int) -> tuple[list, bool]:
    """``count`` reused ``MAP_READ | COPY_DST`` buffers of at least ``size`` bytes. Rings up to
    :data:`KEEP_READBACK` bytes in all are kept by the session (a fresh buffer costs its
    allocation and a page fault per 4 KiB on first touch); bigger ones are made per capture.
    Returns the buffers and whether the session keeps them."""
    import wgpu

    key = ("readback-ring",)
    cache = session.cache("transfer")
    ring = cache.peek(key)
    if ring is not None and ring[0].size >= size and len(ring) >= count:
        return ring[:count], True
    if ring is not None:
        for b in ring:
            b.destroy()
        cache.pop(key)
    ring = [session.check("readback buffer", session.device.create_buffer, size=size,
                          usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            for _ in range(count)]
    keep = size * count <= KEEP_READBACK
    if keep:
        cache.put(key, ring)
    return ring, keep


#: Read-back buffers up to this many bytes in all are kept by the session for the next capture.
KEEP_READBACK = 1 << 30


def _copy_tasks(group: list[_Piece], mapped: np.ndarray, threads: int) -> list[Callable[[], None]]:
    """Tasks that unpad every piece of ``group`` out of ``mapped``, cut into about ``threads``
    equal runs of rows (pieces are cut at row boundaries; a small group is one task)."""
    from .parallel import MIN_CHUNK_BYTES

    total = sum(p.dst.nbytes for p in group)
    share = max(MIN_CHUNK_BYTES, -(-total // max(1, threads)))
    tasks: list[Callable[[], None]] = []
    current: list[tuple] = []
    held = 0
    for p in group:
        rows, width = p.dst.shape
        src = mapped[p.offset: p.offset + p.size].reshape(rows, p.pitch)
        y = 0
        while y < rows:
            n = min(rows - y, max(1, -(-(share - held) // max(width, 1))))
            current.append((p.dst[y: y + n], src[y: y + n, :width]))
            held += n * width
            y += n
            if held >= share:
                tasks.append(_copier(current))
                current, held = [], 0
    if current:
        tasks.append(_copier(current))
    return tasks


def _copier(pairs: list[tuple]) -> Callable[[], None]:
    def run() -> None:
        for dst, src in pairs:
            dst[...] = src
    return run


def record_copies(enc, group: list[_Piece], buf) -> None:
    """Record the copies of one group of pieces (offsets from :func:`copy_groups`) into ``buf``."""
    for p in group:
        lay, (bw, bh) = p.tex.layout(p.level), p.tex.format.block
        p.tex.session.check(
            f"{p.tex.source}: copy_texture_to_buffer", enc.copy_texture_to_buffer,
            {"texture": p.tex.texture, "mip_level": p.level, "origin": (0, p.y0 * bh, p.z0)},
            {"buffer": buf, "offset": p.offset, "bytes_per_row": p.pitch, "rows_per_image": p.y1 - p.y0},
            (lay.blocks_across * bw, (p.y1 - p.y0) * bh, p.nz),
        )


def copy_mapped(group: list[_Piece], mapped: np.ndarray, threads: int = 1) -> None:
    """Copy ``group``'s rows into the pieces' arrays out of ``mapped`` (a read-back buffer's mapped
    bytes from offset 0, uint8; the caller keeps it mapped and unmaps): several textures' groups
    in one buffer (``gpu_batch``'s shared read-backs) each copy their own."""
    from .parallel import run_all

    run_all(_copy_tasks(group, mapped, threads), threads)


def copy_out(group: list[_Piece], buf, threads: int | None = None) -> None:
    """Copy a mapped group's rows into the pieces' arrays on ``threads`` threads, then unmap."""
    import numpy as np

    from .caps import capped
    from .parallel import read_threads

    threads = threads or capped(read_threads())
    try:
        mapped = np.frombuffer(buf.read_mapped(0, group_bytes(group), copy=False), np.uint8)
        copy_mapped(group, mapped, threads)
        del mapped  # no view of the mapped memory may outlive the unmap
    finally:
        buf.unmap()


def _read_pieces(pieces: list[_Piece], *, budget: int, buffers: int = 2,
                 progress: Progress | None = None, timings: dict | None = None) -> None:
    """Copy every piece out of its texture (textures of one session): pieces packed into groups of at most
    ``budget / buffers`` bytes, each group one command encoder, one submission and one map of a
    reused read-back buffer, its rows copied out on :func:`~gputex.parallel.read_threads` threads.

    Group k is mapped (waited for) before group k+1 is submitted: a map waits for all work
    submitted before it, so this order lets the GPU copy group k+1 while the CPU copies group k
    out. No view of the mapped memory outlives its unmap.
    """
    import time

    import wgpu

    from .caps import capped
    from .parallel import read_threads

    if not pieces:
        return
    tex = pieces[0].tex
    session = tex.session
    limit = max(256, min(budget // max(1, buffers), session.limits.get("max-buffer-size", 256 << 20)))
    groups = copy_groups(pieces, limit)
    ring, kept = _readback_ring(session, max(group_bytes(g) for g in groups), max(1, min(buffers, len(groups))))
    threads = capped(read_threads())
    total, done = sum(p.dst.nbytes for p in pieces), 0

    def request(i: int):
        buf = ring[i % len(ring)]
        enc = session.device.create_command_encoder()
        record_copies(enc, groups[i], buf)
        session.device.queue.submit([enc.finish()])
        return buf.map_async(wgpu.MapMode.READ, 0, group_bytes(groups[i])), buf

    clock = {"wait": 0.0, "copy": 0.0, "unmap": 0.0, "bands": len(groups)}  # copy includes the unmap
    pending = None
    try:
        pending = request(0)
        for i, group in enumerate(groups):
            t0 = time.perf_counter()
            promise, buf = pending
            pending = None
            session.check(f"{tex.source}: map readback buffer", promise.sync_wait)
            if i + 1 < len(groups) and len(ring) > 1:
                pending = request(i + 1)
            t1 = time.perf_counter()
            copy_out(group, buf, threads)
            t2 = time.perf_counter()
            clock["wait"] += t1 - t0
            clock["copy"] += t2 - t1
            if i + 1 < len(groups) and len(ring) == 1:
                pending = request(i + 1)
            done += sum(p.dst.nbytes for p in group)
            if progress:
                progress(done, total)
    finally:
        if pending is not None:  # an error mid-way: let the other buffer's map finish first
            try:
                pending[0].sync_wait()
                pending[1].unmap()
            except Exception:  # noqa: BLE001 - the first error is the one reported
                pass
        if not kept:
            for b in ring:
                b.destroy()
    if timings is not None:
        timings.update(clock)


def capture_bytes(tex: Texture, level: int = 0, layer: int = 0, *, budget: int = 64 << 20,
                  out: np.ndarray | None = None, progress: Progress | None = None,
                  buffers: int = 2, timings: dict | None = None) -> np.ndarray:
    """Read one level/layer back as tight bytes: ``(blocks_down, blocks_across * block_bytes)`` uint8.

    ``out`` may be a preallocated array of that shape (reused across captures).
    ``buffers`` (1 or 2) readback buffers share the ``budget``. ``timings``, if given,
    collects seconds spent waiting for maps, copying out and unmapping (benchmarks).
    """
    import numpy as np

    _check_level(tex, level, layer)
    lay = tex.layout(level)
    if out is None:
        out = np.empty((lay.blocks_down, lay.bytes_per_row), np.uint8)
    elif out.shape != (lay.blocks_down, lay.bytes_per_row) or out.dtype != np.uint8:
        raise ValueError(f"out must be uint8 {(lay.blocks_down, lay.bytes_per_row)}, got {out.dtype} {out.shape}")
    limit = min(budget // max(1, buffers), tex.session.limits.get("max-buffer-size", 256 << 20))
    _read_pieces(_pieces(tex, level, layer, 1, out, limit), budget=budget, buffers=buffers,
                 progress=progress, timings=timings)
    return out


def _check_level(tex: Texture, level: int, layer: int = 0) -> None:
    if not 0 <= level < tex.levels:
        raise LimitError(f"{tex.source}: level {level} does not exist (texture has {tex.levels})")
    if not 0 <= layer < tex.level_images(level):
        raise LimitError(f"{tex.source}: layer {layer} does not exist at level {level} "
                         f"(texture has {tex.level_images(level)})")


def capture(tex: Texture, level: int = 0, layer: int = 0, *, budget: int = 64 << 20,
            progress: Progress | None = None) -> np.ndarray:
    """Read one level/layer back as components ``(height, width, channels)``.

    Values come back as the texture stores them (see :func:`gputex.convert.from_texture_rows`):
    uint8 for 8-bit formats, uint16 for 16-bit and rgb10a2, float16/float32 for float formats.
    Block-compressed textures cannot be read this way (use their raw bytes).
    """
    from .convert import from_texture_rows

    if tex.format.compressed:
        raise LimitError(f"{tex.source}: {tex.format.name} is block-compressed; use capture_bytes")
    raw = capture_bytes(tex, level, layer, budget=budget, progress=progress)
    return from_texture_rows(raw, tex.format, tex.size(level)[0])


def capture_levels(tex: Texture, levels: list[int], layer: int = 0, *, budget: int = 64 << 20,
                   into: Callable[[int, tuple, np.dtype], np.ndarray] | None = None) -> list[np.ndarray]:
    """Capture several levels of one layer; their copies share buffers, submissions and maps
    (groups of at most ``budget / 2`` bytes; a full chain that fits is one map).

    The read-back buffers are kept by the session and reused. ``into(level, shape, dtype)``, if given, returns the array each
    level is written to (e.g. shared memory an encoder process reads): rows go straight from
    the mapped buffer into it when the format needs no conversion.
    """
    import numpy as np

    from .convert import from_texture_rows

    if tex.format.compressed:
        raise LimitError(f"{tex.source}: {tex.format.name} is block-compressed; use capture_bytes")
    fmt = tex.format
    for level in levels:
        _check_level(tex, level, layer)
    direct = into is not None and not fmt.packed and not fmt.bgra  # bytes as stored: no conversion
    limit = min(budget // 2, tex.session.limits.get("max-buffer-size", 256 << 20))
    raws, pieces = [], []
    for level in levels:
        lay = tex.layout(level)
        if direct:
            dst = into(level, (lay.height, lay.width, fmt.channels), np.dtype(fmt.component_dtype))
            raw = dst.reshape(-1).view(np.uint8).reshape(lay.blocks_down, lay.bytes_per_row)
        else:
            dst = raw = np.empty((lay.blocks_down, lay.bytes_per_row), np.uint8)
        raws.append((dst, raw))
        pieces += _pieces(tex, level, layer, 1, raw, limit)
    _read_pieces(pieces, budget=budget)
    if direct:
        return [dst for dst, _ in raws]
    return [_placed(from_texture_rows(raw, fmt, tex.size(level)[0]), level, into)
            for level, (_, raw) in zip(levels, raws)]


def level_pieces(tex: Texture, levels: list[int], layer: int, into: Callable[[int, tuple, np.dtype], np.ndarray],
                 limit: int) -> tuple[list[np.ndarray], list[_Piece]] | None:
    """The arrays ``into(level, shape, dtype)`` gives for ``levels`` of ``layer`` and the copies
    that fill them straight from a read-back buffer (each at most ``limit`` padded bytes), as
    :func:`capture_levels` plans them; None when the format needs a conversion on the way
    (packed, BGRA, block-compressed). ``gputex.gpu_batch.start_level_readback`` submits them."""
    import numpy as np

    fmt = tex.format
    if fmt.compressed or fmt.packed or fmt.bgra:
        return None
    for level in levels:
        _check_level(tex, level, layer)
    arrays, pieces = [], []
    for level in levels:
        lay = tex.layout(level)
        dst = into(level, (lay.height, lay.width, fmt.channels), np.dtype(fmt.component_dtype))
        pieces += _pieces(tex, level, layer, 1, dst.reshape(-1).view(np.uint8).reshape(lay.blocks_down,
                                                                                     lay.bytes_per_row), limit)
        arrays.append(dst)
    return arrays, pieces


def _placed(a: np.ndarray, level: int, into) -> np.ndarray:
    """``a``, copied into ``into``'s array for ``level`` when there is one."""
    if into is None:
        return a
    dst = into(level, a.shape, a.dtype)
    dst[...] = a
    return dst


def capture_texture_file(tex: Texture, *, budget: int = 64 << 20, levels: list[int] | None = None):
    """Read every level (or ``levels``), layer, face and slice back as a :class:`TextureFile`:
    exactly the bytes the GPU holds, tight, in block rows (for writing KTX2 / DDS). Levels are
    ``bytes`` filled in place (:func:`fresh_bytes`); every copy is planned at once (see the
    module docstring)."""
    if tex.format.compressed:
        from .capabilities import require

        require(tex.session, "compressed-copy", tex.source)
    limit = min(budget // 2, tex.session.limits.get("max-buffer-size", 256 << 20))
    out, pieces = texture_file_pieces(tex, levels, limit)
    _read_pieces(pieces, budget=budget)
    return as_texture_file(tex, out)


def capture_to_file(tex: Texture, path: str, *, budget: int = 64 << 20, premultiplied: bool = False,
                    level0: np.ndarray | None = None, opened: StreamedFile | None = None) -> bool:
    """Write every level, layer, face and slice of ``tex`` into the texture file ``path`` (KTX2
    or DDS by its suffix, uncompressed), the same bytes as ``write_texture_file(
    capture_texture_file(tex), path)``, with the levels streamed: the file is made its final
    size and mapped, and the capture's threads copy each group's rows out of the read-back
    buffer straight into the file's pages as the GPU hands them over (one host copy in all,
    where the other way copies each level into memory and then once more into the file, on one
    thread). Whole or not at all (:class:`~gputex.atomic.AtomicFile`). False (nothing
    written) where the container has no fixed layout.

    ``level0``: the bytes level 0 holds, already on the host (tight block rows, ``(blocks_down,
    bytes_per_row)`` uint8, a texture of one layer): the rows the upload wrote, where it wrote
    the caller's pixels unconverted. They are copied into the file on threads of their own
    while the GPU hands the other levels over, and level 0 is not read back (three quarters of
    a mip chain's bytes: H200 host, 8192² RGBA8, the read-back and copy of all 14 levels into
    the file took 111 ms, the host copy of level 0 alone 42 ms and the read-back of levels 1..
    18 ms, ``benchmarks/single_parts.py``). A check of what the GPU holds is
    ``upload --verify``'s (a real read-back), not this.

    ``opened``: the file already opened for ``tex``'s shape by :func:`open_streamed` (its level
    0 perhaps being copied from the host since before the upload); filled and committed here,
    or discarded when its layout is not ``tex``'s (then written as above). Either way the
    caller hands it over: it is closed when this returns or raises.
    """
    if tex.format.compressed:
        from .capabilities import require

        try:
            require(tex.session, "compressed-copy", tex.source)
        except BaseException:
            if opened is not None:
                opened.discard()
            raise
    shape = as_texture_file(tex, [b""] * tex.levels)
    shape.premultiplied = premultiplied
    if opened is not None:
        if opened.fits(shape):
            opened.fill(tex, budget)
            return True
        opened.discard()
    f = open_streamed(shape, path, level0=level0)
    if f is None:
        return False
    f.fill(tex, budget)
    return True


def open_streamed(shape, path: str, *, level0: np.ndarray | None = None) -> StreamedFile | None:
    """The texture file ``path`` for a texture of ``shape`` (a :class:`TextureFile`, levels not
    read), laid out, mapped, its headers written, and where ``level0`` is given (level 0's
    rows: see :func:`capture_to_file`) their copy into it started on threads; None where the
    container has no fixed layout or the file cannot be mapped (nothing left behind)."""
    from .atomic import AtomicFile
    from .containers import texture_file_layout
    from .texfile import level_bytes

    lay = texture_file_layout(shape, path)
    if lay is None:
        return None
    if level0 is not None and (shape.layers * shape.faces * shape.depth != 1 or level0.ndim != 2
                               or level0.dtype.itemsize != 1 or level0.nbytes != level_bytes(shape, 0)):
        raise ValueError(f"level0 must be the rows of level 0 of a one-layer texture, got {level0.shape}")
    f = AtomicFile(path)
    try:
        mapped = f.map(lay.size)
    except BaseException as e:  # nothing left behind, whatever the error
        f.discard()
        if isinstance(e, OutputError):  # a file system that cannot map it (or no room): the other way decides
            return None
        raise
    return StreamedFile(f, mapped, lay, level0)


class StreamedFile:
    """A texture file being written through its memory map (:func:`open_streamed`): headers in,
    level 0 perhaps being copied from the host; :meth:`fill` reads the other levels back into
    it and commits it, :meth:`discard` drops it (whole or nothing either way)."""

    def __init__(self, f, mapped, lay, level0: np.ndarray | None):
        import numpy as np

        self.file, self.lay = f, lay
        self.whole: Any = np.frombuffer(mapped, np.uint8)
        self.whole[: len(lay.head)] = np.frombuffer(lay.head, np.uint8)
        self.host: _HostCopy | None = None
        self.level0 = level0  # (the caller's rows, for tests and traces)
        if level0 is not None:
            (at, length), = [(at, length) for level, _, length, at in lay.places if level == 0]
            dst = self.whole[at: at + length].reshape(level0.shape)
            self.host = _HostCopy(dst, level0)  # starts now

    def fits(self, shape) -> bool:
        """Whether this file is laid out as a texture of ``shape`` needs (same bytes to come)."""
        from .containers import texture_file_layout

        return texture_file_layout(shape, self.file.path) == self.lay

    def fill(self, tex: Texture, budget: int) -> None:
        """Read every level of ``tex`` not copied from the host into the file, then commit it
        (on an error: discarded, the error raised)."""

        def read() -> None:
            limit = min(budget // 2, tex.session.limits.get("max-buffer-size", 256 << 20))
            pieces = []
            for level, start, length, at in self.lay.places:
                if level == 0 and self.host is not None:
                    continue
                lv = tex.layout(level)
                per_image = lv.bytes_per_row * lv.blocks_down
                z0, nz = start // per_image, length // per_image
                rows = self.whole[at: at + length].reshape(nz * lv.blocks_down, lv.bytes_per_row)
                pieces += _pieces(tex, level, z0, nz, rows, limit)
            _read_pieces(pieces, budget=budget)

        self._fill_then_commit(read)

    def fill_host(self, levels: list) -> None:
        """Copy levels 1.. from the host (``levels``: their tight bytes, as ``cpu.host_chain``
        returns them; level 0 is the copy started at :func:`open_streamed`) into the file, on the
        copy pool's threads, then commit it (on an error: discarded, the error raised)."""
        import numpy as np

        from .parallel import for_row_chunks

        def copy() -> None:
            for level, _start, length, at in self.lay.places:
                if level == 0 and self.host is not None:
                    continue
                src = np.ascontiguousarray(levels[level - 1]).view(np.uint8).reshape(-1)
                if src.nbytes != length:
                    raise ValueError(f"level {level}: {src.nbytes} bytes for a place of {length}")
                full = length >> 16  # whole bands of 64 KiB, split over the copy pool
                if full:
                    bands = src[: full << 16].reshape(full, 1 << 16)
                    dst = self.whole[at: at + (full << 16)].reshape(full, 1 << 16)

                    def band(a: int, b: int, bands=bands, dst=dst) -> None:
                        dst[a:b] = bands[a:b]

                    for_row_chunks(full, 1 << 16, band)
                if length > full << 16:
                    self.whole[at + (full << 16): at + length] = src[full << 16:]

        self._fill_then_commit(copy)

    def _fill_then_commit(self, fill: Callable[[], None]) -> None:
        """Run ``fill`` (it writes the mapped file's bytes), wait for the host copy and drop the
        map's views, then commit the file; on an error from either, discard it and raise. Views
        ``fill``'s frame held are gone once it returns; where it raised, its traceback keeps them
        until the discard, whose closing of the map tolerates them (``AtomicFile._close_maps``)."""
        try:
            try:
                fill()
            finally:
                error = self._release()
            if error is not None:
                raise error
        except BaseException:
            self.file.discard()
            raise
        self.file.commit()

    def _release(self) -> BaseException | None:
        """Wait for the host copy (its error, if any) and drop every view of the map."""
        error = self.host.finish() if self.host is not None else None
        self.host = self.whole = None
        return error

    def discard(self) -> None:
        """Drop the file: nothing appears at its path."""
        self._release()
        self.file.discard()


class _HostCopy:
    """``dst[...] = src`` in row bands on the copy pool's threads
    (:func:`~gputex.parallel.for_row_chunks`), run from a thread of its own (started at once); :meth:`finish` waits and returns its error."""

    def __init__(self, dst: np.ndarray, src: np.ndarray):
        import threading

        from .parallel import for_row_chunks

        def band(a: int, b: int) -> None:
            dst[a:b] = src[a:b]

        self.error: BaseException | None = None

        def main() -> None:
            try:
                for_row_chunks(dst.shape[0], dst.shape[1], band)
            except BaseException as e:  # noqa: BLE001 - raised by finish() on the caller's thread
                self.error = e

        self.thread = threading.Thread(target=main, name="gputex-level0", daemon=True)
        self.thread.start()

    def finish(self) -> BaseException | None:
        """Wait for the copy; its error, if any."""
        self.thread.join()
        return self.error


def texture_file_pieces(tex: Texture, levels: list[int] | None, limit: int) -> tuple[list, list[_Piece]]:
    """The level buffers (tight ``bytes``, every layer) of ``tex`` and the copies that fill
    them, each at most ``limit`` padded bytes (for :func:`_read_pieces`; ``gpu_batch`` plans
    several textures' copies into one map this way)."""
    wanted = list(levels if levels is not None else range(tex.levels))
    out, pieces = [], []
    for level in wanted:
        _check_level(tex, level)
        lay, n = tex.layout(level), tex.level_images(level)
        data, flat = fresh_bytes(lay.bytes_per_row * lay.blocks_down * n)
        out.append(data)
        rows = flat.reshape(n * lay.blocks_down, lay.bytes_per_row)
        pieces += _pieces(tex, level, 0, n, rows, limit)
    return out, pieces


_MAKE_BYTES: Any = None  # ctypes prototype of PyBytes_FromStringAndSize, or False where unusable


def fresh_bytes(n: int) -> tuple:
    """A new ``bytes`` of ``n`` bytes not yet written, and a writable uint8 view of its storage.

    The caller fills the view before the bytes are handed to anyone (as C code fills what
    ``PyBytes_FromStringAndSize(NULL, n)`` returns) and keeps the bytes alive while the view is
    in use. Why: a ``bytearray(n)`` is zero-filled on one thread first (a 341 MB 8192² chain:
    ~0.1 s of memset and page faults before any copy; the copy threads fault the pages of an
    untouched buffer in parallel instead), and the KTX2 writer copies anything that is not
    ``bytes`` once more. Where the object layout cannot be checked (not CPython, or the
    check at first use fails) this is a ``bytearray``.
    """
    import ctypes

    import numpy as np

    global _MAKE_BYTES
    if _MAKE_BYTES is None:
        _MAKE_BYTES = False
        try:
            import sys

            if sys.implementation.name == "cpython":
                make = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_char_p, ctypes.c_ssize_t)(
                    ("PyBytes_FromStringAndSize", ctypes.pythonapi))
                probe = make(None, 16)
                view = np.ctypeslib.as_array((ctypes.c_ubyte * 16).from_address(id(probe) + bytes.__basicsize__ - 1))
                view[:] = np.arange(16, dtype=np.uint8) * 7
                if probe == bytes(range(0, 112, 7)):
                    _MAKE_BYTES = make
        except Exception:  # noqa: BLE001 - the bytearray path below is always right
            _MAKE_BYTES = False
    if not _MAKE_BYTES or n == 0:
        data = bytearray(n)
        return data, np.frombuffer(data, np.uint8)
    data = _MAKE_BYTES(None, n)
    return data, np.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(id(data) + bytes.__basicsize__ - 1))


def as_texture_file(tex: Texture, levels: list):
    """A :class:`TextureFile` of ``tex``'s shape holding ``levels``."""
    from .texfile import TextureFile

    return TextureFile(tex.format, tex.width, tex.height, tex.depth, max(1, tex.layers // tex.faces), tex.faces,
                       levels=levels, color_space=tex.color_space, source=tex.source, array=tex.array)
