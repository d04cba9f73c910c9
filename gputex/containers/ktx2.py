"""KTX 2.0: write, read (validation in :mod:`.ktx2_rules`, the DFD in :mod:`.dfd`).

Writing follows the KTX File Format Specification 2.0: level index, smallest level stored
first with ``lcm(texel block size, 4)`` alignment (none when supercompressed), the DFD
Khronos's ``vk2dfd`` gives for the ``vkFormat`` (checked against ``ktx create``'s for every
format in ``tests/containers/test_ktx2_validate.py``), sorted key/value pairs, Zstandard levels.

Reading walks the file with :func:`.ktx2_rules.walk` first: a broken rule is a DecodeError
naming Khronos's id (``invalid KTX2 file: [6015] ...``); a valid file gputex cannot read says
so (``valid KTX2; gputex cannot upload VK_FORMAT_R10X6_UNORM_PACK16: ...``). Formats WebGPU has
no texture format for are expanded by :mod:`.expand`; 1D textures read as one row.
"""

from __future__ import annotations

import math
import struct
import threading
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError, FormatError
from ..formats import FORMATS, Format
from ..layout import align_up
from . import Container, FileLayout, register
from .dfd import dfd_for
from .expand import plan
from .ktx2_rules import HEADER, KTX2_MAGIC, LEVEL, MODEL_ETC1S, MODEL_UASTC, SCHEMES, Problem, Walk, report, walk
from .model import TextureFile, check_shape, level_bytes
from .vkformat import VK_ALIASES, VK_BY_CODE, VK_FORMATS, has_srgb_variant, vk_name

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future

    from ..atomic import AtomicFile

__all__ = ["write_ktx2", "ktx2_layout", "stream_ktx2", "read_ktx2", "validate", "validate_report", "Problem", "dfd_for", "WRITER",
           "default_swizzle", "KTX2_MAGIC"]

WRITER = "gputex"

def vk_format_for(fmt: Format, color_space: str) -> int:
    """The VkFormat gputex writes: 8-bit unorm data that is sRGB gets the ``_SRGB`` VkFormat
    (Vulkan has R8_SRGB and R8G8_SRGB, which WebGPU lacks), so the colour space survives."""
    if not fmt.srgb and color_space == "srgb":
        twin = {"r8unorm": 15, "rg8unorm": 22, "rgba8unorm": 43, "bgra8unorm": 50}.get(fmt.name)
        if twin:
            return twin
    try:
        return VK_FORMATS[fmt.name]
    except KeyError:
        raise FormatError(f"{fmt.name} has no VkFormat; KTX2 cannot hold it") from None


def format_from_vk(code: int, source: str) -> tuple[Format, str]:
    """(format, colour space forced by the code or "") for a VkFormat."""
    if code in VK_BY_CODE:
        return FORMATS[VK_BY_CODE[code]], ""
    if code in VK_ALIASES:
        name, space = VK_ALIASES[code]
        return FORMATS[name], space
    if code == 0:
        raise DecodeError(f"{source}: vkFormat is VK_FORMAT_UNDEFINED (a Basis Universal or custom "
                          "format); gputex does not transcode these")
    raise DecodeError(f"{source}: VkFormat {code} is not supported by gputex")


# -- writing -----------------------------------------------------------------------------------

def _kvd(entries: dict[str, bytes]) -> bytes:
    out = b""
    for key in sorted(entries):
        kv = key.encode() + b"\0" + entries[key]
        out += struct.pack("<I", len(kv)) + kv + b"\0" * (-len(kv) % 4)
    return out


def write_ktx2(tf: TextureFile, *, zstd: int | None = None) -> list[bytes]:
    """Serialize ``tf`` as KTX2; returns the file as a list of parts (header first).

    ``zstd``: a Zstandard level (1-22) to supercompress each level with, or None.
    """
    payloads = []
    for i, data in enumerate(tf.levels):
        raw = _level(tf, i, data)
        if zstd is not None:
            import imagecodecs

            payloads.append(imagecodecs.zstd_encode(raw, level=zstd))
        else:
            payloads.append(raw)
    head, offsets = _layout(tf, [len(p) for p in payloads], zstd)
    parts = [head]
    pos = len(head)
    for i in reversed(range(len(payloads))):  # levels are stored smallest first
        if offsets[i] > pos:
            parts.append(b"\0" * (offsets[i] - pos))
        parts.append(payloads[i])
        pos = offsets[i] + len(payloads[i])
    return parts


def _level(tf: TextureFile, i: int, data) -> bytes:
    raw = bytes(data) if not isinstance(data, bytes) else data
    if len(raw) != level_bytes(tf, i):
        raise FormatError(f"{tf.source}: level {i} holds {len(raw)} bytes, {level_bytes(tf, i)} expected")
    return raw


def _layout(tf: TextureFile, stored: list[int], zstd: int | None) -> tuple[bytes, list[int]]:
    """The bytes before the first level (header, level index, DFD, key/value data) and each
    level's offset, for levels of ``stored`` bytes each (compressed sizes with ``zstd``)."""
    fmt = tf.format
    vk = vk_format_for(fmt, tf.color_space)
    vfmt, _ = format_from_vk(vk, tf.source)
    # sRGB transfer: the _SRGB VkFormats, and sRGB data in formats that have no _SRGB variant
    # (never for the formats ktx validate says have an _SRGB variant: 8-bit SNORM/UINT/SINT data
    # is written as linear, rule 6014)
    srgb_tf = vfmt.srgb or vk in (15, 22) or (tf.color_space == "srgb" and not vfmt.srgb_name
                                              and not has_srgb_variant(vk))
    scheme = 2 if zstd is not None else 0
    n = len(stored)
    type_size = 1 if fmt.compressed else (4 if fmt.packed else max(1, fmt.block_bytes // max(fmt.channels, 1)))
    dfd = dfd_for(vfmt, bool(srgb_tf), tf.premultiplied)
    orientation = b"rdi\0" if tf.volume else b"rd\0"
    kv = {"KTXorientation": orientation, "KTXwriter": f"{WRITER} {_version()}".encode() + b"\0"}
    swizzle = default_swizzle(fmt)
    if swizzle:
        kv["KTXswizzle"] = swizzle.encode() + b"\0"
    if zstd is not None:
        kv["KTXwriterScParams"] = f"--zstd {zstd}".encode() + b"\0"
    kvd = _kvd(kv)
    index_at = HEADER.size
    dfd_at = index_at + LEVEL.size * n
    kvd_at = dfd_at + len(dfd)
    data_at = kvd_at + len(kvd)
    align = 1 if scheme else math.lcm(fmt.block_bytes, 4)
    offsets = [0] * n
    pos = data_at
    for i in reversed(range(n)):  # levels are stored smallest first
        offsets[i] = pos = align_up(pos, align)
        pos += stored[i]
    layer_count = tf.layers if tf.array else 0
    header = HEADER.pack(KTX2_MAGIC, vk, type_size, tf.width, tf.height, tf.depth if tf.volume else 0,
                         layer_count, tf.faces, n, scheme,
                         dfd_at, len(dfd), kvd_at, len(kvd), 0, 0)
    index = b"".join(LEVEL.pack(offsets[i], stored[i], level_bytes(tf, i)) for i in range(n))
    return b"".join([header, index, dfd, kvd]), offsets


def ktx2_layout(tf: TextureFile) -> FileLayout:
    """Where each level of an uncompressed KTX2 of ``tf``'s shape goes (``tf.levels``: how many
    there are; their contents are not read): what :func:`write_ktx2` writes, placed."""
    sizes = [level_bytes(tf, i) for i in range(len(tf.levels))]
    head, offsets = _layout(tf, sizes, None)
    return FileLayout(head, [(i, 0, sizes[i], offsets[i]) for i in range(len(sizes))],
                      offsets[0] + sizes[0] if sizes else len(head))


def stream_ktx2(tf: TextureFile, f: AtomicFile, *, zstd: int | None = None) -> None:
    """Write ``tf`` as KTX2 into ``f``, the same bytes as :func:`write_ktx2`: with ``zstd`` the
    levels are compressed on the process's one Zstandard pool (:func:`_zstd_submit`; zstd
    releases the GIL), each written as soon as it and the smaller levels before it in the file
    are done, and the level index (its place reserved) last; no whole-file buffer."""
    if zstd is None:
        lay = ktx2_layout(tf)
        f.write_at(0, lay.head)
        for i, _, _n, at in lay.places:
            f.write_at(at, _level(tf, i, tf.levels[i]))
        return
    import imagecodecs

    n = len(tf.levels)
    raws = [_level(tf, i, data) for i, data in enumerate(tf.levels)]
    head_probe, _ = _layout(tf, [0] * n, zstd)  # the head's size does not depend on the level sizes
    pos = len(head_probe)
    stored = [0] * n
    # the largest first, so the one that takes longest starts first; written in file order
    futures = {i: _zstd_submit(imagecodecs.zstd_encode, raws[i], level=zstd) for i in range(n)}
    try:
        for i in reversed(range(n)):
            payload = futures.pop(i).result()
            f.write_at(pos, payload)
            stored[i] = len(payload)
            pos += len(payload)
            del payload
    finally:
        for fut in futures.values():  # a failed write: the levels not yet started are dropped
            fut.cancel()
    head, _ = _layout(tf, stored, zstd)
    f.write_at(0, head)


# -- the Zstandard pool: one per process, shared by every write --------------------------------

_ZSTD_LOCK = threading.Lock()
_ZSTD_TASKS: Any = None  # a queue.SimpleQueue of (future, fn, args, kwargs), made on first use
_zstd_threads = 0  # started (they never stop)
_zstd_idle = 0  # waiting for a task


def _zstd_submit(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """``fn(*args, **kwargs)`` on the process's Zstandard threads: started as tasks need them, at
    most :func:`~gputex.caps.capped` (the cores) however many writes run at once (``upload -o``
    writes several on the pool's threads); daemon threads, so an idle pool holds no exit up."""
    import os
    import queue
    from concurrent.futures import Future

    from ..caps import capped

    global _ZSTD_TASKS, _zstd_threads
    fut: Future = Future()
    with _ZSTD_LOCK:
        if _ZSTD_TASKS is None:
            _ZSTD_TASKS = queue.SimpleQueue()
        _ZSTD_TASKS.put((fut, fn, args, kwargs))
        if _zstd_threads < capped(os.cpu_count() or 1) and _zstd_idle < _ZSTD_TASKS.qsize():
            _zstd_threads += 1
            threading.Thread(target=_zstd_worker, args=(_ZSTD_TASKS,), name=f"gputex-zstd_{_zstd_threads - 1}",
                             daemon=True).start()
    return fut


def _zstd_worker(tasks: Any) -> None:
    global _zstd_idle
    while True:
        with _ZSTD_LOCK:
            _zstd_idle += 1
        fut, fn, args, kwargs = tasks.get()
        with _ZSTD_LOCK:
            _zstd_idle -= 1
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the writer waiting on it
            fut.set_exception(e)
        del fut, fn, args, kwargs  # no level held while idle


def default_swizzle(fmt: Format) -> str | None:
    """The ``KTXswizzle`` gputex writes: ``rrr1`` for one-channel data and ``rrrg`` for two
    (gputex stores grey as r and grey+alpha as rg, so viewers show grey, not red); None for
    others, and for two-channel block formats (BC5 / EAC RG11 hold normal maps' x and y, not
    grey+alpha)."""
    if fmt.compressed:
        return "rrr1" if fmt.name.startswith(("bc4", "eac-r11")) else None
    return {1: "rrr1", 2: "rrrg"}.get(fmt.channels)


def _version() -> str:
    """gputex's version as ``gputex.__version__`` says (installed or not: outputs depend on the
    code's version only, never on how it was installed)."""
    from ..version import __version__

    return __version__


# -- reading and validating --------------------------------------------------------------------

def _limits(w: Walk, source: str) -> tuple[list[Problem], TextureFile | None]:
    """What gputex cannot do with a file that is valid (rule ``gputex``, severity ``limit``),
    and the texture it reads it as otherwise (levels not yet filled)."""
    def limit(message: str) -> tuple[list[Problem], None]:
        return [Problem("gputex", message, "limit")], None

    if w.scheme == 1 or (w.vk == 0 and w.dfd.get("model") in (MODEL_ETC1S, MODEL_UASTC)):
        return limit("BasisLZ/UASTC textures need transcoding, which gputex does not do")
    if w.vk == 0:
        return limit("vkFormat is VK_FORMAT_UNDEFINED (a custom format); gputex reads only defined VkFormats")
    if w.scheme not in SCHEMES:
        return limit(f"supercompressionScheme {w.scheme:#x} is a vendor scheme gputex cannot inflate")
    if w.depth and w.layers:
        return limit("3D array textures are not supported by gputex (nor by any graphics API)")
    try:
        fmt, forced_space, expansion = plan(w.vk)
    except LookupError as e:
        return limit(str(e))
    tf = TextureFile(fmt, w.width, max(1, w.height), max(1, w.depth), max(1, w.layers), w.faces,
                     container="ktx2", source=source, array=w.layers > 0, supercompression=SCHEMES[w.scheme])
    try:
        check_shape(tf, max(1, w.levels), "KTX2")
    except DecodeError as e:
        return limit(str(e).split(": ", 1)[1])
    transfer = w.dfd.get("transfer", 1)
    tf.color_space = forced_space or ("srgb" if transfer == 2 else "linear")
    tf.premultiplied = bool(w.dfd.get("flags", 0) & 1)
    d = w.dfd
    tf.metadata["dfd"] = {"color_model": d["model"], "color_primaries": d["primaries"],
                          "transfer_function": d["transfer"], "flags": d["flags"],
                          "texel_block": [x + 1 for x in d["block_dims"][:2]], "bytes_plane0": d["bytes_planes"][0],
                          "samples": [{"bit_offset": s.offset, "bit_length": s.length, "channel": s.channel,
                                       "qualifiers": s.qualifiers} for s in d["samples"]]}
    tf.metadata["kvd"] = w.kvd
    tf.metadata["vk_format"] = vk_name(w.vk)
    tf.metadata["expansion"] = expansion
    tf.level_file_bytes = [e[1] for e in w.entries]
    return [], tf


def _check_budget(tf: TextureFile, entries, limits: tuple[int, float] | None) -> list[Problem]:
    """Supercompressed levels: pixels and inflation ratio, before inflating. With ``limits``
    a refusal is a LimitError naming the file (reading); without, a ``limit`` problem
    (validating: the level is not inflated)."""
    from ..budget import check_ratio, check_size
    from ..decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
    from ..errors import LimitError

    max_pixels, max_ratio = limits if limits is not None else (DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO)
    for i, (_, length, ulen) in enumerate(entries):
        w, h, d = tf.level_size(i)
        try:
            check_size(tf.source, w, h * d, max_pixels, f"level {i}:")
            check_ratio(tf.source, ulen, length, max_ratio, f"{tf.supercompression} level {i} would inflate",
                        "stored level")
        except LimitError as e:
            if limits is not None:
                raise
            return [Problem("gputex", str(e).split(": ", 1)[1] + "; not inflated", "limit")]
    return []


def _inflate(data: bytes, off: int, length: int, ulen: int, scheme: int, source: str, level: int):
    view = memoryview(data)[off: off + length]
    if scheme == 0:
        return view
    import imagecodecs

    try:
        if scheme == 2:
            out = imagecodecs.zstd_decode(bytes(view), out=ulen)
        else:
            out = imagecodecs.zlib_decode(bytes(view), out=ulen)
    except Exception as e:
        raise DecodeError(f"{source}: [4008] level {level}: corrupt {SCHEMES[scheme]} data ({e})") from None
    out = bytes(out)
    if len(out) != ulen:
        raise DecodeError(f"{source}: [4008] level {level} inflates to {len(out)} bytes, {ulen} expected")
    return out


def _expand(tf: TextureFile, levels: list, expansion) -> list:
    out = []
    for i, raw in enumerate(levels):
        w, h, d = tf.level_size(i)
        out.append(expansion(raw, w * h * d * tf.images))
    return out


def read_ktx2(data: bytes, source: str, *, inflate: bool = True, max_pixels: int | None = None,
              max_ratio: float | None = None) -> TextureFile:
    """Parse a KTX2 file (Zstandard / ZLIB levels inflated, formats WebGPU lacks expanded by
    :mod:`.expand`); a broken rule is a DecodeError naming it (``[3012] ...``), a valid file
    gputex cannot read one saying so. Supercompressed levels over ``max_pixels`` /
    ``max_ratio`` (:mod:`gputex.budget`) are a LimitError before anything is inflated.
    ``inflate=False``: only the header and index are read (``levels`` then hold the stored
    bytes; ``gputex info``)."""
    from ..decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO

    problems, w = walk(data)
    errors = [p for p in problems if p.fatal]
    if errors:
        raise DecodeError(f"{source}: invalid KTX2 file: {errors[0]}")
    limits, tf = _limits(w, source)
    if tf is None:
        raise DecodeError(f"{source}: valid KTX2; {limits[0].message}")
    expansion = tf.metadata.pop("expansion")
    if not inflate:
        tf.levels = [memoryview(data)[off: off + length] for off, length, _ in w.entries]
        return tf
    if w.scheme:
        budget = (max_pixels or DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO if max_ratio is None else max_ratio)
        _check_budget(tf, w.entries, budget)
    levels = [_inflate(data, off, length, ulen, w.scheme, source, i) for i, (off, length, ulen) in enumerate(w.entries)]
    for i, raw in enumerate(levels):
        if len(raw) != w.level_bytes(i):
            raise DecodeError(f"{source}: invalid KTX2 file: [4008] level {i} holds {len(raw)} bytes, "
                              f"{w.level_bytes(i)} expected")
    tf.levels = _expand(tf, levels, expansion) if expansion else levels
    return tf


def validate(data: bytes, source: str) -> list[Problem]:
    """Every rule of the KTX 2.0 specification the file breaks, as ``ktx validate`` reports them
    (``severity`` "error" or "warning", ``rule`` Khronos's id), then gputex's own limits for a
    file without errors (``severity`` "limit"). Supercompressed levels are inflated one at a
    time (each freed before the next), none beyond the budget."""
    problems, w = walk(data)
    if any(p.fatal for p in problems):
        return problems
    limits, tf = _limits(w, source)
    problems += limits
    if tf is not None and w.scheme:
        over = _check_budget(tf, w.entries, None)
        problems += over
        if not over:
            for i, (off, length, ulen) in enumerate(w.entries):
                try:
                    _inflate(data, off, length, ulen, w.scheme, source, i)
                except DecodeError as e:
                    problems.append(Problem("4008", str(e).split("] ", 1)[1]))
                    break
                if ulen != w.level_bytes(i):
                    problems.append(Problem("4008", f"level {i}: uncompressedByteLength is {ulen}; a level of this "
                                            f"format and size is {w.level_bytes(i)} bytes"))
                    break
    return problems


def validate_report(data: bytes, path: str, *, strict: bool = False) -> tuple[dict, list[tuple[str, str]], bool]:
    """``gputex validate`` for one file: (the ``--json`` object, the text lines as (stream,
    line), failed). See :func:`.ktx2_rules.report`."""
    return report(path, validate(data, path), strict=strict)


register(Container("ktx2", "KTX2", KTX2_MAGIC, read_ktx2, write_ktx2, suffixes=(".ktx2",),
                   read_options=("inflate", "max_pixels", "max_ratio"), write_options=("zstd",), rank=10,
                   layout=ktx2_layout, streamer=stream_ktx2))
