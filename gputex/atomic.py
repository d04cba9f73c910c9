"""Outputs that appear whole or not at all: :func:`write_atomic` and :func:`sweep_stale`.

Pure file-system code (no numpy, no GPU, no other gputex step): the containers, the encoders
and the run's start-up all write through it, so it sits below them in the import graph.
"""

from __future__ import annotations

import errno
import os
import tempfile
from typing import Any

from .errors import OutputError

__all__ = ["write_atomic", "sweep_stale", "TMP_PREFIX"]

TMP_PREFIX = ".gputex-"


def write_atomic(path: str, data: bytes | list[bytes]) -> None:
    """Write ``data`` (bytes, or a list of parts written in turn) to ``path``, whole or not at all.

    On Linux the data goes into an unnamed ``O_TMPFILE`` in the target folder, is flushed,
    and only then linked under a name: a process killed at any moment leaves nothing
    behind. Elsewhere (or where the filesystem lacks O_TMPFILE) a named temporary file
    ``.gputex-<pid>-*.part`` in the folder is renamed over ``path``; stale ones of dead
    processes are removed by :func:`sweep_stale`.
    """
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: output folder {folder} does not exist")
    if os.path.isdir(path):
        raise OutputError(f"{path}: is a folder; cannot write the output there")
    try:
        if _write_tmpfile(folder, path, data):
            return
        fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".part", dir=folder)
    except PermissionError:
        raise OutputError(f"{path}: output folder {folder} is not writable") from None
    except OSError as e:
        raise OutputError(f"{path}: write failed ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):  # mkstemp makes 0600; outputs follow the umask, as open() does
                os.fchmod(f.fileno(), 0o666 & ~_umask())
            for part in _parts(data):
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise OutputError(f"{path}: write failed ({e.strerror or e})") from None
        raise


def _umask() -> int:
    """The process umask (read from /proc where it can be: setting it to read it back races
    with threads creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_tmpfile(folder: str, path: str, data: bytes | list[bytes]) -> bool:
    """O_TMPFILE write + link; False where unsupported (the caller falls back)."""
    from .portable import disabled

    flag = 0 if disabled("otmpfile") else getattr(os, "O_TMPFILE", 0)
    if not flag:
        return False
    try:
        fd = os.open(folder, flag | os.O_WRONLY, 0o666)  # the umask applies, as for open()
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return False
        raise
    try:
        for part in _parts(data):
            view = memoryview(part)
            while view:
                view = view[os.write(fd, view):]
        os.fsync(fd)
        proc = f"/proc/self/fd/{fd}"
        # linkat(..., AT_SYMLINK_FOLLOW): CPython calls linkat (not link) only when a dir_fd
        # is given, and only linkat can name an O_TMPFILE through /proc.
        dfd = os.open(folder, os.O_RDONLY)
        try:
            try:
                os.link(proc, path, src_dir_fd=dfd, follow_symlinks=True)  # atomic; fails if path exists
            except FileExistsError:
                tmp = os.path.join(folder, f"{TMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.part")
                os.link(proc, tmp, src_dir_fd=dfd, follow_symlinks=True)  # complete data, temporary name
                try:
                    os.replace(tmp, path)
                except BaseException:
                    os.unlink(tmp)  # (e.g. the name became a folder): no stray temporary
                    raise
        finally:
            os.close(dfd)
        return True
    except OSError as e:
        if e.errno == errno.EXDEV:  # no linkat through /proc here: fall back
            return False
        raise
    finally:
        os.close(fd)


def _parts(data: Any) -> Any:
    """The parts to write: a list, one bytes-like, or a function returning an iterator of parts
    (streamed encoders; called again if a write has to start over)."""
    if callable(data):
        return data()
    return data if isinstance(data, list) else [data]


def sweep_stale(folder: str) -> int:
    """Remove ``.gputex-<pid>-*.part`` files left in ``folder`` by processes no longer running."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not (name.startswith(TMP_PREFIX) and name.endswith(".part")):
            continue
        pid = name[len(TMP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                os.unlink(os.path.join(folder, name))
                removed += 1
            except OSError:
                pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
