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

__all__ = ["write_atomic", "AtomicFile", "sweep_stale", "TMP_PREFIX", "set_fsync", "fsync_enabled"]

TMP_PREFIX = ".gputex-"
#: The environment variable that turns :func:`set_fsync` on in this process and the worker
#: processes it starts (they inherit it).
FSYNC_ENV = "GPUTEX_FSYNC"


def set_fsync(on: bool) -> None:
    """Flush every output to the disk before it gets its name (``--fsync``), or not (the default).

    Off, an output still appears whole or not at all whatever happens to the process (a
    crash, a kill, Ctrl-C): it is written unnamed (or under a temporary name) and linked or
    renamed only once complete. What ``fsync`` adds is durability across a power loss or a
    kernel crash: without it the file's name may reach the disk before its data, and such a
    crash can leave a file of the right name with missing data. Khronos ``ktx``, texconv and
    compilers do not fsync their outputs either. Its cost, H200 host (ext4 on a virtual disk):
    0.18 s for the 341 MiB KTX2 file of one 8192² image whose whole conversion takes about
    1.9 s (``benchmarks/single_parts.py``). Set through the environment (:data:`FSYNC_ENV`),
    so codec worker processes started afterwards inherit it."""
    if on:
        os.environ[FSYNC_ENV] = "1"
    else:
        os.environ.pop(FSYNC_ENV, None)


def fsync_enabled() -> bool:
    """Whether outputs are flushed to the disk before they are named (:func:`set_fsync`)."""
    from .devflags import flag

    return flag(FSYNC_ENV) not in (None, "0")


def _check_target(path: str) -> str:
    """The folder ``path`` goes in; :class:`OutputError` where it cannot be written there."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: output folder {folder} does not exist")
    if os.path.isdir(path):
        raise OutputError(f"{path}: is a folder; cannot write the output there")
    return folder


def write_atomic(path: str, data: bytes | list[bytes]) -> None:
    """Write ``data`` (bytes, or a list of parts written in turn) to ``path``, whole or not at all.

    An :class:`AtomicFile` written from the start: on Linux the data goes into an unnamed
    ``O_TMPFILE`` in the target folder, written, and only then linked under a name (after an
    ``fsync`` where :func:`set_fsync` asked for one), so a process killed at any moment
    leaves nothing behind. Elsewhere (or where the filesystem
    lacks O_TMPFILE) a named temporary file ``.gputex-<pid>-*.part`` in the folder is renamed
    over ``path``; stale ones of dead processes are removed by :func:`sweep_stale`.
    """
    with AtomicFile(path) as f:
        at = 0
        try:
            for part in _parts(data):
                f.write_at(at, part)
                at += memoryview(part).nbytes
        except OutputError:  # a write's own error: it names the file already
            raise
        except OSError as e:  # from a streamed encoder's own reads
            raise f._error(e) from None


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


def _parts(data: Any) -> Any:
    """The parts to write: a list, one bytes-like, or a function returning an iterator of parts
    (streamed encoders)."""
    if callable(data):
        return data()
    return data if isinstance(data, list) else [data]


class AtomicFile:
    """A file written in place, piece by piece or through a memory map, that appears at ``path``
    whole on :meth:`commit` or not at all (a context manager: committed when the block ends
    without an error, discarded otherwise).

    What :func:`write_atomic` does for data held whole in memory, for writers that stream: the
    texture-file writers put levels in as the GPU copies them out (:meth:`map`: the capture's
    threads copy rows straight into the file's pages, one copy in all) or as worker threads
    compress them, and fill a reserved index last (:meth:`write_at`). On Linux the file is an
    unnamed ``O_TMPFILE`` linked under its name once complete (after an ``fsync`` of it and
    then of its folder with :func:`set_fsync`); elsewhere a named
    ``.gputex-<pid>-*.part`` renamed over ``path``. Write errors raise :class:`OutputError`
    naming ``path``.
    """

    def __init__(self, path: str):
        self.path = path
        self.folder = _check_target(path)
        self.tmp: str | None = None  # the named temporary, where O_TMPFILE is not used
        self.fd = -1
        self._maps: list[Any] = []
        from .portable import disabled

        flag = 0 if disabled("otmpfile") else getattr(os, "O_TMPFILE", 0)
        try:
            if flag:
                try:
                    self.fd = os.open(self.folder, flag | os.O_RDWR, 0o666)  # the umask applies
                except OSError as e:
                    if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                        raise
            if self.fd < 0:
                self.fd, self.tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".part",
                                                     dir=self.folder)
                if hasattr(os, "fchmod"):
                    os.fchmod(self.fd, 0o666 & ~_umask())
        except OSError as e:
            raise self._error(e) from None

    def _error(self, e: OSError) -> OutputError:
        if isinstance(e, PermissionError):
            return OutputError(f"{self.path}: output folder {self.folder} is not writable")
        return OutputError(f"{self.path}: write failed ({e.strerror or e})")

    def write_at(self, offset: int, data: Any) -> None:
        """Write ``data`` (bytes-like) at byte ``offset``."""
        view = memoryview(data).cast("B")
        try:
            while view:
                n = os.pwrite(self.fd, view, offset)
                view, offset = view[n:], offset + n
        except OSError as e:
            raise self._error(e) from None

    def map(self, size: int) -> Any:
        """Make the file ``size`` bytes long and return a writable ``mmap`` of all of it (closed
        before the commit; hold no view of it past that)."""
        import mmap

        try:
            os.ftruncate(self.fd, size)
            if hasattr(os, "posix_fallocate"):  # the blocks now: a full disk fails here, not in a page fault
                try:
                    os.posix_fallocate(self.fd, 0, size)
                except OSError as e:
                    if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                        raise
            m = mmap.mmap(self.fd, size) if size else None
        except OSError as e:
            raise self._error(e) from None
        if m is not None:
            self._maps.append(m)
        return m

    def _close_maps(self) -> None:
        for m in self._maps:
            try:
                m.close()
            except BufferError:  # a view still holds it: its pages are the file's all the same
                pass
        self._maps.clear()

    def commit(self) -> None:
        """Give the file its name (atomic: the old file, if any, is replaced); with
        :func:`set_fsync`, its data is flushed to the disk first and the folder's entry after.
        Where that fails, the temporary is removed too (nothing is left behind)."""
        self._close_maps()
        durable = fsync_enabled()
        try:
            if durable:
                os.fsync(self.fd)
            if self.tmp is None:
                self._link()
            else:
                os.replace(self.tmp, self.path)
                self.tmp = None
            if durable:
                _fsync_folder(self.folder)
        except BaseException as e:
            self.discard()
            if isinstance(e, OSError):
                raise self._error(e) from None
            raise
        finally:
            self._close()

    def _link(self) -> None:
        dfd = os.open(self.folder, os.O_RDONLY)
        proc = f"/proc/self/fd/{self.fd}"
        try:
            try:
                os.link(proc, self.path, src_dir_fd=dfd, follow_symlinks=True)
                return
            except FileExistsError:
                pass
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                self._copy_out()  # no linkat through /proc here: a named copy is renamed instead
                return
            tmp = os.path.join(self.folder, f"{TMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}.part")
            os.link(proc, tmp, src_dir_fd=dfd, follow_symlinks=True)
            try:
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        finally:
            os.close(dfd)

    def _copy_out(self) -> None:
        size = os.fstat(self.fd).st_size
        fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".part", dir=self.folder)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            at = 0
            while at < size:
                chunk = os.pread(self.fd, min(64 << 20, size - at), at)
                os.write(fd, chunk)
                at += len(chunk)
            if fsync_enabled():
                os.fsync(fd)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def discard(self) -> None:
        """Drop what was written: nothing appears at ``path``."""
        self._close_maps()
        self._close()
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def _fsync_folder(folder: str) -> None:
    """Flush ``folder``'s entries (the new name) to the disk, where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # a folder cannot be fsynced here (some systems): the file's own flush stands
        pass
    finally:
        os.close(fd)


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
