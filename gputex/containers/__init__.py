"""Texture file containers (KTX2, KTX 1, DDS, ...): one module per format, found by a registry.

Each container module owns its magic, its code tables, its reader and writer, and ends with
a :func:`register` call (as Pillow's ``*ImagePlugin`` modules do). The core looks formats up
here and never names one: adding a container is one new module in this package (every
module that is not ``model``, ``vkformat``, ``expand`` or private is imported once, on the
first lookup). :mod:`.model` holds the in-memory :class:`TextureFile` every reader returns.

Pure, no GPU import; numpy only where a reader expands a format (``expand``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import DecodeError, FormatError, LimitError
from .model import (
    MAX_TEXTURE_BYTES,
    MAX_TEXTURE_DIMENSION,
    TextureFile,
    check_shape,
    default_color_space,
    image_bytes,
    level_bytes,
)

__all__ = ["Container", "FileLayout", "register", "texture_file_layout", "containers", "sniff", "is_texture_file", "read_texture_file",
           "write_texture_file", "TextureFile", "image_bytes", "level_bytes", "check_shape",
           "default_color_space", "MAX_TEXTURE_DIMENSION", "MAX_TEXTURE_BYTES"]


@dataclass(frozen=True)
class Container:
    """One registered file format.

    ``reader(data, source, **options)`` returns a :class:`TextureFile` (options named in
    ``read_options`` only); ``writer(tf, **options)`` returns the file as a list of parts.
    ``rank`` orders containers in messages ("not a KTX2, KTX or DDS file"). Writers that
    stream have ``layout(tf)`` (a :class:`FileLayout`: where each level's bytes go, so the
    capture can copy them straight into the file) and ``streamer(tf, f, **options)`` (writes
    into a :class:`~gputex.atomic.AtomicFile`, e.g. levels compressed on threads as they finish).
    """

    name: str
    label: str
    magic: bytes
    reader: Callable
    writer: Callable | None = None
    suffixes: tuple[str, ...] = ()
    read_options: tuple[str, ...] = ()
    write_options: tuple[str, ...] = ()
    rank: int = 100
    layout: Callable | None = None
    streamer: Callable | None = None


@dataclass
class FileLayout:
    """Where a texture file's bytes go: ``head`` at offset 0 (headers, index), then each
    ``(level, offset in the level's bytes, length, offset in the file)`` of ``places``; the
    file is ``size`` bytes, anything not covered zeros (alignment padding)."""

    head: bytes
    places: list[tuple[int, int, int, int]]
    size: int


_REGISTRY: dict[str, Container] = {}
_NOT_CONTAINERS = {"model", "vkformat", "expand"}
_loaded = False


def register(container: Container) -> None:
    """Make ``container`` known (called once by each container module at import)."""
    _REGISTRY[container.name] = container


def containers() -> list[Container]:
    """Every registered container, in ``rank`` order (the built-in modules loaded first)."""
    global _loaded
    if not _loaded:
        import importlib
        import pkgutil

        for mod in pkgutil.iter_modules(__path__):
            if not mod.name.startswith("_") and mod.name not in _NOT_CONTAINERS:
                importlib.import_module(f"{__name__}.{mod.name}")
        _loaded = True
    return sorted(_REGISTRY.values(), key=lambda c: (c.rank, c.name))


def _labels(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def sniff(head: bytes) -> str | None:
    """The container a file's first bytes announce (its registered name), or None."""
    for c in containers():
        if head.startswith(c.magic):
            return c.name
    return None


def is_texture_file(path: str) -> bool:
    """True if ``path`` starts like a registered texture file (its contents decide, not its
    name). Only regular files are looked at (a FIFO would block an ordinary open)."""
    from ..inputs import sniff_input

    return sniff(sniff_input(path, 16)) is not None


def read_texture_file(path: str, *, data: bytes | None = None, inflate: bool = True,
                      max_pixels: int | None = None, max_ratio: float | None = None) -> TextureFile:
    """Parse a texture file (the magic decides). Supercompressed KTX2 levels are inflated
    within the budget of :mod:`gputex.budget` (``max_pixels``, ``max_ratio``: as for images);
    ``inflate=False`` reads only headers and the index (``gputex info``)."""
    if data is None:
        from ..inputs import read_input  # once, regular files only, size-capped

        data = read_input(path)
    kind = sniff(data[:16])
    if kind is None:
        raise DecodeError(f"{path}: not a {_labels([c.label for c in containers()])} file")
    c = _REGISTRY[kind]
    given = {"inflate": inflate, "max_pixels": max_pixels, "max_ratio": max_ratio}
    kwargs = {k: v for k, v in given.items() if k in c.read_options}
    try:
        tf = c.reader(data, str(path), **kwargs)
    except (DecodeError, FormatError, LimitError):
        raise
    except (ValueError, IndexError, OverflowError, MemoryError) as e:  # a reader bug must stay one line
        raise DecodeError(f"{path}: corrupt {kind.upper()} file ({type(e).__name__}: {e})") from e
    tf.file_bytes = len(data)
    return tf


def _writer(path: str, zstd: int | None) -> Container:
    """The container ``path``'s suffix names, checked to take ``zstd``."""
    suffix = os.path.splitext(path)[1].lower()
    writers = [c for c in containers() if c.writer is not None]
    match = [c for c in writers if suffix in c.suffixes]
    if not match:
        raise FormatError(f"{path}: texture files are written as "
                          f"{_labels([s for c in writers for s in c.suffixes])}")
    c = match[0]
    if zstd is not None and "zstd" not in c.write_options:
        raise FormatError(f"{path}: --zstd applies to "
                          f"{_labels([w.label for w in writers if 'zstd' in w.write_options])} only")
    return c


def write_texture_file(tf: TextureFile, path: str, *, zstd: int | None = None) -> None:
    """Write ``tf`` in the container its suffix names (``.ktx2``, ``.dds``), whole or not at all.

    Streamed where the container can (no whole-file buffer; with ``zstd`` the levels are
    compressed on threads while the finished ones are written), else from the writer's parts."""
    from ..atomic import AtomicFile, write_atomic

    c = _writer(path, zstd)
    options = {"zstd": zstd} if zstd is not None else {}
    if c.streamer is not None and zstd is not None:
        with AtomicFile(path) as f:
            c.streamer(tf, f, **options)
        return
    assert c.writer is not None
    write_atomic(path, c.writer(tf, **options))


def texture_file_layout(tf: TextureFile, path: str) -> FileLayout | None:
    """Where each level of ``tf`` (its shape; its level contents are not read) goes in the
    uncompressed file ``path`` names, or None where that container has no fixed layout."""
    c = _writer(path, None)
    return c.layout(tf) if c.layout is not None else None
