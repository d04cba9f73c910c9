"""Opening inputs: once, as regular files only, with a size cap.

A FIFO named ``x.png`` would block ``open()`` forever, ``/dev/zero`` would be read until
memory runs out, and a socket or a terminal is no image either. So every input is opened
with ``O_NONBLOCK`` (a FIFO's open returns at once), checked with ``fstat`` on the open
descriptor (no race between a check and the open), refused unless it is a regular file, and
read to at most the cap. Pure, no GPU import.
"""

from __future__ import annotations

import os
import stat

from .errors import InputError, LimitError

__all__ = ["read_input", "sniff_input", "DEFAULT_MAX_FILE_BYTES"]

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
    """The whole content of the regular file ``path`` (at most ``max_bytes``)."""
    fd, size = _open(path)
    try:
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
