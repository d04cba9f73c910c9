"""Opening inputs: once, as regular files only, with a size cap.

A FIFO named ``x.png`` would block ``open()`` forever, ``/dev/zero`` would be read until
memory runs out, and a socket or a terminal is no image either. So every input is opened
with ``O_NONBLOCK`` (a FIFO's open returns at once), checked with ``fstat`` on the open
descriptor (no race between a check and the open), refused unless it is a regular file, and
read to at most the cap. Pure, no GPU import.

One large input can be read ahead (:func:`prefetch`): the CLI starts reading it on a thread
while it imports its modules and makes the device (and then decoding it:
:func:`gputex.pngdec.decode_ahead`); the decode then takes those bytes (:func:`read_input`)
if the file is still the one read (same device, inode, size and modification time before
and after the read), else reads it itself.
"""

from __future__ import annotations

import os
import stat
import threading

from .errors import InputError, LimitError

__all__ = ["read_input", "sniff_input", "prefetch", "read_ahead", "DEFAULT_MAX_FILE_BYTES", "PREFETCH_MIN_BYTES"]

#: Largest input file read (a texture file describes at most 8 GiB, see texfile.py).
DEFAULT_MAX_FILE_BYTES = (8 << 30) + (64 << 20)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _open(path: str) -> tuple[int, int]:
    """(descriptor, size) of a regular file, or InputError naming the problem."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
                     | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not an image file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as e:
        if e.errno is not None and os.path.isdir(path):
            raise InputError(f"{path}: is a directory, not an image file") from None
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
    except OSError as e:
        os.close(fd)
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise InputError(f"{path}: is a directory, not an image file")
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(f"{path}: is {_kind(st.st_mode)}, not a regular file")
    return fd, st.st_size


def read_input(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The whole content of the regular file ``path`` (at most ``max_bytes``); the bytes
    :func:`prefetch` read where it read this very file, unchanged since."""
    fd, size = _open(path)
    try:
        early = _take(path, fd)
        if early is not None and len(early) <= max_bytes:
            return early
        if size > max_bytes:
            raise LimitError(f"{path}: file is {size} bytes, over the limit of {max_bytes} for one input")
        try:
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(size + 1)  # (read(n) allocates n bytes up front)
                while len(data) > size and len(data) <= max_bytes:  # grew since fstat: read on, capped
                    more = f.read(min(1 << 20, max_bytes + 1 - len(data)))
                    if not more:
                        break
                    data += more
        except OSError as e:
            raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
        if len(data) > max_bytes:
            raise LimitError(f"{path}: file grew past the limit of {max_bytes} bytes while being read")
        return data
    finally:
        os.close(fd)


#: Smaller files are not read ahead (their read and decode take a few milliseconds). A 2048²
#: photo is a ~10 MB PNG: its ~90 ms decode (2-core lavapipe machine) overlaps the device's
#: creation only when read ahead (one 2048² → KTX2 there: 0.72 → 0.63 s, median of 5).
PREFETCH_MIN_BYTES = 1 << 20
#: The largest file read ahead (before the command line's options, ``--memory`` among them, are
#: parsed): 1 GiB (an 8192² RGBA8 PNG is ~170 MiB).
PREFETCH_MAX_BYTES = 1 << 30
_PNG = b"\x89PNG\r\n\x1a\n"
_Identity = tuple[int, int, int, int]
_Box = list[tuple[_Identity, bytes]]  # the bytes read, once read
_early: dict[str, tuple[threading.Event, _Box]] = {}  # path -> (read done, the bytes)
_early_lock = threading.Lock()


def _identity(st: os.stat_result) -> _Identity:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def prefetch(path: str, *, decode: tuple[int, float] | None = None) -> None:
    """Start reading the PNG file ``path`` on a thread of its own, for :func:`read_input` to take;
    with ``decode`` (the limits ``(max_pixels, max_ratio)``), that thread then decodes it too
    (:func:`gputex.pngdec.decode_ahead`: the inflate and unfilter), for the decode of those
    bytes to take.

    For one large image the read and the decode are the critical path (H200 host: an 8192²
    PNG, a 165 MiB file in the page cache, read in 0.11 s and decoded in ~0.9 s): the CLI
    calls this before it imports its modules (0.08-0.1 s there), parses its options and makes
    the device, as ``python -c "import gputex; gputex.decode(...)"`` would begin at once.
    Only PNGs (the signature is checked first) of at least :data:`PREFETCH_MIN_BYTES` and at
    most :data:`PREFETCH_MAX_BYTES`; anything else, and any error, leaves the read to the
    decode as before. A file changed after it was read is read again (see :func:`read_input`),
    and then decoded again."""
    from .trace import span  # here: the thread's own import would wait for the GIL

    def run(box: _Box, ready: threading.Event) -> None:
        try:
            with span("prefetch", path=path):
                data = read(box)
        finally:
            ready.set()
        if data is not None and work is not None:
            with span("decode-ahead", path=path):
                work()

    work = None

    def read(box: _Box) -> bytes | None:
        nonlocal work
        try:
            fd, size = _open(path)
        except InputError:
            return None
        try:
            if not PREFETCH_MIN_BYTES <= size <= PREFETCH_MAX_BYTES or os.pread(fd, 8, 0) != _PNG:
                return None
            before = _identity(os.fstat(fd))
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read(size + 1)
            if len(data) != size or _identity(os.fstat(fd)) != before:
                return None
            if decode is not None:  # reserved before the bytes are handed over: their decode waits for it
                from .pngdec import decode_ahead

                work = decode_ahead(data, max_pixels=decode[0], max_ratio=decode[1])
            box.append((before, data))
            return data
        except (OSError, MemoryError):
            return None
        finally:
            os.close(fd)

    with _early_lock:
        if path in _early:
            return
        box: _Box = []
        ready = threading.Event()
        thread = threading.Thread(target=run, args=(box, ready), name="gputex-prefetch", daemon=True)
        _early[path] = (ready, box)
    thread.start()


def read_ahead(argv: list[str], *, max_pixels: int, max_ratio: float) -> None:
    """The command line's one input, read and decoded ahead (:func:`prefetch`) for
    ``upload``/``capture`` with one input file first and options after it (``upload big.png
    --mips -o big.ktx2``), before the CLI imports its modules and parses the line (not decoded
    ahead where the line sets ``--max-pixels`` or ``--max-ratio``, not read ahead where it sets
    ``--workers`` or ``--memory``; ``max_pixels`` and
    ``max_ratio`` are their defaults, :mod:`gputex.decode`'s). Several inputs are left alone (a
    batch decodes in worker processes, which would read them again), as are ``--help``, ``-``
    (stdin) and ``@list`` files."""
    if argv[:1] not in (["upload"], ["capture"]) or {"--help", "-h"} & set(argv):
        return
    args = argv[1:]
    if any(a.startswith(("--workers", "--memory")) for a in args):
        return  # a worker process would decode it again; a memory limit is the run's to keep
    if args and not args[0].startswith(("-", "@")) and (len(args) == 1 or args[1].startswith("-")):
        # decoded too, unless the line sets limits the decode ahead does not know
        limits = any(a.startswith(("--max-pixels", "--max-ratio")) for a in args)
        prefetch(args[0], decode=None if limits else (max_pixels, max_ratio))


def _take(path: str, fd: int) -> bytes | None:
    """The prefetched bytes of ``path`` (once), where the open file ``fd`` is the file they were
    read from and unchanged since; else None."""
    with _early_lock:
        got = _early.pop(path, None)
    if got is None:
        return None
    ready, box = got
    ready.wait()
    if not box:
        return None
    ident, data = box[0]
    try:
        same = _identity(os.fstat(fd)) == ident
    except OSError:
        same = False
    if not same:  # the file changed: its early bytes and their decode go now
        from .pngdec import drop_ahead

        drop_ahead(data)
        return None
    return data


def sniff_input(path: str, n: int = 12) -> bytes:
    """The first ``n`` bytes of a regular file; b"" for anything else (the full read reports it)."""
    try:
        fd, _ = _open(path)
    except InputError:
        return b""
    try:
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)
