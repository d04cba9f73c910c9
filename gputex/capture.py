"""Capture: any level / layer of a texture -> numpy, through ``copy_texture_to_buffer``.

Rows travel padded to 256 bytes into a ``MAP_READ | COPY_DST`` buffer; the padding
is removed with one numpy slice-assignment per band into a preallocated array
(no Python loop per row), copied out before ``unmap``. Textures larger than the
memory budget (or the device's max buffer size) go in row bands through two
reused buffers; band k is mapped before band k+1 is submitted (a map waits for all work
submitted before it), so the GPU copies band k+1 while the CPU unpads band k.
wgpu-py's ``queue.read_texture`` is not used: it unpads in a Python row loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .errors import LimitError
from .layout import bands, copy_layout
from .parallel import for_row_chunks

if TYPE_CHECKING:
    import numpy as np

    from .texture import Texture

__all__ = ["capture", "capture_bytes", "capture_levels", "capture_texture_file"]

Progress = Callable[[int, int], None]


def _readback_ring(session, size: int, count: int = 2) -> list:
    import wgpu

    key = ("readback-ring",)
    ring = session._cache.get(key)
    if ring is None or ring[0].size < size or len(ring) != count:
        for b in ring or []:
            b.destroy()
        ring = [session.check("readback buffer", session.device.create_buffer, size=size,
                              usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
                for _ in range(count)]
        session._cache[key] = ring
    return ring


def _unpad(dst: "np.ndarray", src: "np.ndarray", width: int) -> None:
    """dst[:] = src[:, :width], the rows split over a few threads."""

    def part(a: int, b: int) -> None:
        dst[a:b] = src[a:b, :width]

    for_row_chunks(dst.shape[0], src.shape[1], part)


def capture_bytes(tex: "Texture", level: int = 0, layer: int = 0, *, budget: int = 64 << 20,
                  out: "np.ndarray | None" = None, progress: Progress | None = None,
                  buffers: int = 2, timings: dict | None = None) -> "np.ndarray":
    """Read one level/layer back as tight bytes: ``(blocks_down, blocks_across * block_bytes)`` uint8.

    ``out`` may be a preallocated array of that shape (reused across captures).
    ``buffers`` (1 or 2) readback buffers share the ``budget``. ``timings``, if given,
    collects seconds spent waiting for maps, copying out and unmapping (benchmarks).
    """
    import time

    import numpy as np
    import wgpu

    if not 0 <= level < tex.levels:
        raise LimitError(f"{tex.source}: level {level} does not exist (texture has {tex.levels})")
    if not 0 <= layer < tex.level_images(level):
        raise LimitError(f"{tex.source}: layer {layer} does not exist at level {level} "
                         f"(texture has {tex.level_images(level)})")
    session = tex.session
    w, h = tex.size(level)
    lay = copy_layout(tex.format, w, h)
    pitch = lay.padded_bytes_per_row
    limit = min(budget // buffers, session.limits.get("max-buffer-size", 256 << 20))
    parts = bands(lay.blocks_down, pitch, limit)
    if out is None:
        out = np.empty((lay.blocks_down, lay.bytes_per_row), np.uint8)
    elif out.shape != (lay.blocks_down, lay.bytes_per_row) or out.dtype != np.uint8:
        raise ValueError(f"out must be uint8 {(lay.blocks_down, lay.bytes_per_row)}, got {out.dtype} {out.shape}")
    ring = _readback_ring(session, max(y1 - y0 for y0, y1 in parts) * pitch, buffers)
    bw, bh = tex.format.block

    def submit(i: int) -> None:
        y0, y1 = parts[i]
        enc = session.device.create_command_encoder()
        session.check(
            f"{tex.source}: copy_texture_to_buffer", enc.copy_texture_to_buffer,
            {"texture": tex.texture, "mip_level": level, "origin": (0, y0 * bh, layer)},
            {"buffer": ring[i % len(ring)], "offset": 0, "bytes_per_row": pitch, "rows_per_image": y1 - y0},
            (lay.blocks_across * bw, (y1 - y0) * bh, 1),
        )
        session.device.queue.submit([enc.finish()])

    def request(i: int):
        y0, y1 = parts[i]
        submit(i)
        return ring[i % len(ring)].map_async(wgpu.MapMode.READ, 0, (y1 - y0) * pitch)

    # Band i is mapped (waited for) before band i+1 is submitted: a map waits for all work
    # submitted before it, so this order lets the GPU copy band i+1 while the CPU unpads band i.
    clock = {"wait": 0.0, "copy": 0.0, "unmap": 0.0, "bands": len(parts)}
    pending = request(0)
    for i, (y0, y1) in enumerate(parts):
        t0 = time.perf_counter()
        session.check(f"{tex.source}: map readback buffer", pending.sync_wait)
        buf, nbytes = ring[i % len(ring)], (y1 - y0) * pitch
        if i + 1 < len(parts) and len(ring) > 1:
            pending = request(i + 1)
        t1 = time.perf_counter()
        try:
            src = np.frombuffer(buf.read_mapped(0, nbytes, copy=False), np.uint8).reshape(y1 - y0, pitch)
            _unpad(out[y0:y1], src, lay.bytes_per_row)
            del src  # no view of the mapped memory may outlive the unmap
            t2 = time.perf_counter()
        finally:
            buf.unmap()
        clock["wait"] += t1 - t0
        clock["copy"] += t2 - t1
        clock["unmap"] += time.perf_counter() - t2
        if i + 1 < len(parts) and len(ring) == 1:
            pending = request(i + 1)
        if progress:
            progress(y1 * lay.bytes_per_row, lay.data_bytes)
    if timings is not None:
        timings.update(clock)
    return out


def capture(tex: "Texture", level: int = 0, layer: int = 0, *, budget: int = 64 << 20,
            progress: Progress | None = None) -> "np.ndarray":
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


def capture_levels(tex: "Texture", levels: list[int], layer: int = 0, *, budget: int = 64 << 20,
                   into: "Callable[[int, tuple, np.dtype], np.ndarray] | None" = None) -> list["np.ndarray"]:
    """Capture several levels; those small enough share one buffer, one submission and one map.

    A full mip chain otherwise costs one GPU round trip per level. Levels whose padded copy
    takes more than a quarter of ``budget`` go through :func:`capture` (row bands). The
    readback buffer is kept by the session and reused (a fresh mapping costs a page fault
    per 4 KiB on first touch). ``into(level, shape, dtype)``, if given, returns the array each
    level is written to (e.g. shared memory an encoder process reads): rows go straight from
    the mapped buffer into it when the format needs no conversion.
    """
    import numpy as np

    from .convert import from_texture_rows

    if tex.format.compressed:
        raise LimitError(f"{tex.source}: {tex.format.name} is block-compressed; use capture_bytes")
    fmt = tex.format
    out: dict[int, np.ndarray] = {}
    small = []
    for level in levels:
        if tex.layout(level).staging_bytes > budget // 4:
            out[level] = _placed(capture(tex, level, layer, budget=budget), level, into)
        else:
            small.append(level)
    direct = into is not None and not fmt.packed and not fmt.bgra  # bytes as stored: no conversion

    def take(level: int, padded: "np.ndarray") -> None:
        lay = tex.layout(level)
        if direct:
            dst = into(level, (lay.height, lay.width, fmt.channels), np.dtype(fmt.component_dtype))
            _unpad(dst.reshape(-1).view(np.uint8).reshape(lay.blocks_down, lay.bytes_per_row), padded,
                   lay.bytes_per_row)
            out[level] = dst
        else:
            raw = np.empty((lay.blocks_down, lay.bytes_per_row), np.uint8)
            _unpad(raw, padded, lay.bytes_per_row)
            out[level] = _placed(from_texture_rows(raw, fmt, lay.width), level, into)

    if small:
        _read_in_one_map(tex, {level: (layer, 1) for level in small}, take)
    return [out[level] for level in levels]


def _placed(a: "np.ndarray", level: int, into) -> "np.ndarray":
    """``a``, copied into ``into``'s array for ``level`` when there is one."""
    if into is None:
        return a
    dst = into(level, a.shape, a.dtype)
    dst[...] = a
    return dst


#: Readback buffers up to this size are kept by the session for the next capture.
KEEP_READBACK = 256 << 20


def _readback_buffer(session, size: int):
    """A ``MAP_READ | COPY_DST`` buffer of at least ``size`` bytes, reused while it is big enough."""
    import wgpu

    key = ("levels-readback",)
    buf = session._cache.get(key)
    if buf is not None and buf.size >= size:
        return buf
    if buf is not None:
        buf.destroy()
        del session._cache[key]
    buf = session.check("readback buffer", session.device.create_buffer, size=size,
                        usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    if size <= KEEP_READBACK:
        session._cache[key] = buf
    return buf


def _read_in_one_map(tex: "Texture", parts: dict, take: Callable) -> None:
    """Copy ``parts`` (``{level: (first layer, layer count)}``) into one reused readback buffer
    in one submission, map it once, and call ``take(level, padded)`` with each level's rows
    (``(blocks_down * count, padded_bytes_per_row)`` uint8, valid until ``take`` returns)."""
    import numpy as np
    import wgpu

    from .layout import align_up

    session, (bw, bh) = tex.session, tex.format.block
    offsets, total = {}, 0
    for level, (_, count) in parts.items():
        lay = tex.layout(level)
        offsets[level] = total
        total = align_up(total + lay.padded_bytes_per_row * lay.blocks_down * count, 256)
    buf = _readback_buffer(session, total)
    enc = session.device.create_command_encoder()
    for level, (first, count) in parts.items():
        lay = tex.layout(level)
        session.check(f"{tex.source}: copy_texture_to_buffer", enc.copy_texture_to_buffer,
                      {"texture": tex.texture, "mip_level": level, "origin": (0, 0, first)},
                      {"buffer": buf, "offset": offsets[level], "bytes_per_row": lay.padded_bytes_per_row,
                       "rows_per_image": lay.blocks_down},
                      (lay.blocks_across * bw, lay.blocks_down * bh, count))
    session.device.queue.submit([enc.finish()])
    session.check(f"{tex.source}: map readback buffer", buf.map_sync, wgpu.MapMode.READ, 0, total)
    try:
        mapped = np.frombuffer(buf.read_mapped(0, total, copy=False), np.uint8)
        for level, (_, count) in parts.items():
            lay = tex.layout(level)
            size = lay.padded_bytes_per_row * lay.blocks_down * count
            take(level, mapped[offsets[level]: offsets[level] + size].reshape(-1, lay.padded_bytes_per_row))
        del mapped  # no view of the mapped memory may outlive the unmap
    finally:
        buf.unmap()
        if session._cache.get(("levels-readback",)) is not buf:
            buf.destroy()


def capture_texture_file(tex: "Texture", *, budget: int = 64 << 20, levels: list[int] | None = None):
    """Read every level (or ``levels``), layer, face and slice back as a :class:`TextureFile`:
    exactly the bytes the GPU holds, tight, in block rows (for writing KTX2 / DDS)."""
    from .texfile import TextureFile

    if tex.format.compressed:
        from .capabilities import require

        require(tex.session, "compressed-copy", tex.source)
    wanted = list(levels if levels is not None else range(tex.levels))
    got: dict[int, bytes] = {}
    small = {}  # levels whose layers all fit a quarter of the budget: one copy each, one map
    for level in wanted:
        lay, n = tex.layout(level), tex.level_images(level)
        if lay.padded_bytes_per_row * lay.blocks_down * n > budget // 4:
            got[level] = b"".join(capture_bytes(tex, level, z, budget=budget).tobytes() for z in range(n))
        else:
            small[level] = (0, n)

    def take(level: int, padded) -> None:
        got[level] = padded[:, : tex.layout(level).bytes_per_row].tobytes()

    if small:
        _read_in_one_map(tex, small, take)
    out = [got[level] for level in wanted]
    return TextureFile(tex.format, tex.width, tex.height, tex.depth, max(1, tex.layers // tex.faces), tex.faces,
                       levels=out, color_space=tex.color_space, source=tex.source, array=tex.array)
