"""An image's mipped texture file made on the host: the batch's split between the GPU and the C
engine (issue 13).

``upload ... --mips -o DIR`` batches decode in worker processes (:mod:`gputex.workers`) while
one thread of the main process runs every GPU step in turn (~8 ms per 2048² image on the H200
host, a serial Python + wgpu path). A worker that has decoded an image whose chain the C engine
(:mod:`gputex.mips.cpu`, the same bytes as the shaders) serves either hands it to that thread,
when the GPU has a free slot, or makes the chain itself (one thread) and writes the texture file
itself with the same writer (:func:`gputex.texfile.write_texture_file`: the same bytes, whole or
not at all), returning only what the report needs. :func:`plan_texture` says which images it
serves; :func:`write_host_texture` makes the file. Pure host code: no wgpu, no device.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .formats import Format
    from .image import Image

__all__ = ["HostPlan", "HostWritten", "plan_texture", "write_host_texture", "preload"]


@dataclass(frozen=True)
class HostPlan:
    """What a worker needs to write one input's texture file itself (picklable): the file, and
    the options that decide its bytes as the GPU step would (``upload_image``'s format, colour
    space, conversion and levels, the integer box chain)."""

    out: str  # the texture file (.ktx2 / .dds), its name already reserved by the run
    format: str | None  # --format (None: the image decides, as gputex.texture.default_format)
    color_space: str | None  # pipeline.color_space_of(opts)
    premultiply: bool
    flip_y: bool
    mip_levels: int | None  # --mip-levels (None: the whole chain)
    weighted: bool  # --alpha weighted
    zstd: int | None
    always: bool  # GPUTEX_MIPS_ENGINE=cpu: every image it serves is made here, no GPU slot asked
    norm16: bool  # the device stores 16-bit data as *16unorm (unknown yet: 16-bit images go to the GPU)
    #: Made in the process that decodes (no decode workers: one input, or ``--workers 0``), its
    #: chain's rows over ``threads`` threads (:func:`gputex.workers.decode_or_write`).
    inline: bool = False
    threads: int = 1


@dataclass
class HostWritten:
    """What the main process reports for an input whose file a worker wrote (:func:`write_host_texture`)."""

    path: str
    format: str
    width: int
    height: int
    levels: int
    color_space: str
    layout: dict
    nbytes: int  # the decoded image's bytes
    warnings: list
    mips_seconds: float
    encode_seconds: float


def plan_texture(image: Image, plan: HostPlan) -> tuple[Format, str, int] | None:
    """(format, colour space, levels) of ``image``'s texture where the C engine makes its chain
    as the GPU step would (an 8- or 16-bit unorm format of the integer chain, 1, 2 or 4 channels,
    16-bit data linear, at most 2^28 texels (:data:`gputex.mips.cpu.MAX_TEXELS`), two levels or
    more, the extension built); else None."""
    from .layout import mip_count
    from .mips import cpu
    from .mips.integer import INT_FORMATS
    from .upload import resolve_format

    if not cpu.available() or image.kind != "unorm":
        return None
    try:
        fmt = resolve_format(image, plan.format, None, plan.color_space)
    except Exception:  # noqa: BLE001 - an unknown format: the GPU step reports it
        return None
    if fmt.feature and not (fmt.feature == "texture-format16bit-norm" and plan.norm16):
        return None  # a format the device may lack (16-bit unorm): its GPU step says whether it can
    space = "srgb" if fmt.srgb else (plan.color_space or image.color_space)
    full = mip_count(image.width, image.height)
    levels = min(plan.mip_levels or full, full)
    if fmt.name not in INT_FORMATS or levels < 2 or space not in ("srgb", "linear"):
        return None
    if not cpu.serves(fmt.channels, fmt.bits, space == "srgb", image.width, image.height):
        return None
    return fmt, space, levels


def write_host_texture(image: Image, plan: HostPlan, texture: tuple[Format, str, int]) -> HostWritten:
    """Level 0 converted as the upload would, levels 1.. by the C engine (on this thread, or over
    ``plan.threads``), and the texture file written (atomically) to ``plan.out``."""
    import numpy as np

    from .convert import to_texture_rows
    from .layout import copy_layout
    from .mips.cpu import host_chain
    from .texfile import TextureFile, write_texture_file
    from .trace import span

    fmt, space, levels = texture
    t0 = time.perf_counter()
    pixels = image.pixels[::-1] if plan.flip_y else image.pixels
    with span("mips:host-chain", path=plan.out):
        rows = to_texture_rows(pixels, space, fmt, premultiply=plan.premultiply)
        streamed = _open_streamed(image, plan, texture, rows)
        try:
            with _engine_span():  # the C engine alone (the span around it adds the conversion)
                chain = host_chain(rows, fmt.channels, fmt.bits, space == "srgb", plan.weighted, levels,
                                   nthreads=plan.threads)
        except BaseException:
            if streamed is not None:
                streamed.discard()
            raise
    t1 = time.perf_counter()
    if streamed is not None:
        with span("encode", path=plan.out):
            streamed.fill_host(chain)
        return HostWritten(plan.out, fmt.name, image.width, image.height, levels, space,
                           copy_layout(fmt, image.width, image.height, 1).as_dict(), int(image.pixels.nbytes),
                           list(image.warnings), t1 - t0, time.perf_counter() - t1)
    data: list[Any] = [np.ascontiguousarray(a).view(np.uint8).reshape(-1).data for a in [rows, *chain]]
    tf = TextureFile(fmt, image.width, image.height, levels=data, color_space=space, source=image.source)
    tf.premultiplied = plan.premultiply
    with span("encode", path=plan.out):
        write_texture_file(tf, plan.out, zstd=plan.zstd)
    return HostWritten(plan.out, fmt.name, image.width, image.height, levels, space,
                       copy_layout(fmt, image.width, image.height, 1).as_dict(), int(image.pixels.nbytes),
                       list(image.warnings), t1 - t0, time.perf_counter() - t1)


#: Level 0 bytes from which a file made in the process that decodes (``plan.inline``, its chain over
#: several threads) is written through its memory map, level 0 copied into it on the copy pool's
#: threads while the C engine makes the chain (:func:`_open_streamed`); smaller ones, and a
#: batch's decode workers (one thread each), write the file after the chain.
STREAM_MIN_BYTES = 128 << 20


def _open_streamed(image: Image, plan: HostPlan, texture: tuple[Format, str, int], rows):
    """The texture file opened through its memory map (:func:`gputex.capture.open_streamed`),
    level 0's copy from ``rows`` started on threads, where the file is one of
    :data:`STREAM_MIN_BYTES` or more made inline over several threads without ``--zstd``
    (a fixed layout); else None (then written after the chain, as before). The same bytes either
    way. 8192² RGBA8: the 256 MiB copy overlaps the chain instead of following it."""
    if not (plan.inline and plan.threads > 1 and plan.zstd is None) or rows.nbytes < STREAM_MIN_BYTES:
        return None
    from .capture import open_streamed
    from .texfile import TextureFile

    fmt, space, levels = texture
    shape = TextureFile(fmt, image.width, image.height, levels=[b""] * levels, color_space=space,
                        source=image.source)
    shape.premultiplied = plan.premultiply
    try:  # (rows: to_texture_rows's (h, w * texel bytes) uint8)
        return open_streamed(shape, plan.out, level0=rows)
    except Exception:  # noqa: BLE001 - the write after the chain meets it again and reports it
        return None


@contextmanager
def _engine_span():
    """``GPUTEX_TRACE``'s ``mips:host-engine`` span, with the thread's system seconds (``sys``) and
    minor page faults (``faults``) meanwhile: the kernel's part of a chain (its sums' pages
    mapped and zeroed) beside the arithmetic."""
    from .trace import enabled, mark

    if not enabled():
        yield
        return
    try:
        import resource

        who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    except ImportError:  # not POSIX
        yield
        return
    t0, r0 = time.time(), resource.getrusage(who)
    try:
        yield
    finally:
        r1 = resource.getrusage(who)
        mark("mips:host-engine", t0, cpu=round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 6),
             sys=round(r1.ru_stime - r0.ru_stime, 6), faults=r1.ru_minflt - r0.ru_minflt)


def preload() -> None:
    """Import what :func:`write_host_texture` needs (a decode worker runs it on a thread of its
    own while it decodes its first image: the imports then do not come after that decode)."""
    from . import convert, layout, texfile, upload  # noqa: F401
    from .containers import containers
    from .mips import cpu, integer  # noqa: F401

    containers()
