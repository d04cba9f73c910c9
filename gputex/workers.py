"""Codec worker processes for batches: decode and encode outside the GPU process's GIL.

In one process, codec threads and the in-order GPU thread share the GIL: fpng holds it for a
whole encode (~33 ms for 2048^2 RGBA), Python bookkeeping of 16 threads takes it in slices,
and the GPU thread, which gives it up and takes it back around each of its ~200 wgpu calls
per image, waits each time (measured on the H200 host: its stages took 3x longer with 16
codec threads than alone). So a batch of several inputs with ``--jobs`` >= 3 runs image
decodes and encodes in worker processes (``jobs`` for each): spawned, or forked from the server
that ``gputex`` started for a batch command line before anything else (:mod:`gputex.early`),
never forked from the GPU process (forking a process that holds a GPU device is unsafe).
Pixels travel through files in ``/dev/shm`` (memory, no pickling of images): a decoded image
is mapped by the GPU process, captured levels are written once and mapped by the encoder. The
threads of the batch pool then only submit and wait.

:func:`decode_image` and :func:`encode_images` run in-process when no pool is active, so
every caller (the pipeline, ``benchmarks/batch.py``'s codecs-alone baseline) goes the same way.
Worker processes ignore Ctrl-C: the parent stops the batch between inputs and waits for the
encodes in flight, so every output is whole.

``upload --mips -o DIR`` batches split the chains (:func:`decode_or_write`): a decode worker
that finds no free GPU slot makes its image's chain with the C engine and writes the texture
file itself (:mod:`gputex.host_texture`); the slots are a semaphore created before the workers
spawn, which they inherit.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .errors import GputexError

if TYPE_CHECKING:
    import numpy as np

    from .decode import Image
    from .host_texture import HostPlan, HostWritten

from .caps import worker_count  # noqa: E402,F401  (lives with the other resource caps)

__all__ = ["codec_workers", "start_processes", "worker_count", "sweep_shared", "decode_image", "decode_or_write", "encode_images",
           "SharedBlock", "shared_block", "write_texture", "free_gpu_slots", "gpu_slots"]

_POOLS: dict = {}  # "decode" and "encode": two pools, so decodes never wait behind encodes
_PREFIX = ".gputex-"
#: Niceness added to worker processes: the in-order GPU thread is the batch's critical path
#: (alone it needs ~8 ms per 2048^2 image on the H200 host; among busy codecs it got ~70).
WORKER_NICE = 10


@contextmanager
def codec_workers(n: int, kinds: tuple[str, ...] = ("decode", "encode"), split: bool = False,
                  later: bool = False):
    """Within this block, :func:`decode_image` / :func:`encode_images` run in worker processes:
    ``n`` for decoding and ``n`` for encoding (separate, so the in-order GPU thread's next
    decode never queues behind encodes; processes start as work arrives). ``kinds``: the pools
    to start; without an ``"encode"`` pool encodes and texture-file writes run in the calling
    process (``upload -o``: a write is one copy into the page cache, not worth 16 more
    processes starting beside the device on a 16-core host). ``split``: the decode workers
    share the GPU's slots with the main process (:func:`decode_or_write`). ``later``: processes
    forked from the early server are asked for at once on a thread, with no task
    (:func:`_prespawn`; ``GPUTEX_PRESPAWN=0``: as before, by the first tasks
    submitted, the rest once :func:`start_processes` is called (:func:`gputex.run.run` calls it
    right after the first decodes are submitted: on the H200 host the 12 forks, one server
    round trip each, took 50 ms, and the first decode waited behind them, queued after the
    placeholder tasks that asked for the processes))."""
    if n <= 0 or _POOLS:
        yield
        return
    import multiprocessing

    global _FREE_MAX, _CTX
    sweep_shared()  # files of an earlier batch that was killed
    _FREE_MAX = 2 * n + 2
    from .early import context

    _CTX = context() or multiprocessing.get_context("spawn")  # forked from the warm server where one was started
    from .trace import span

    global _SLOTS
    _SLOTS = _new_slots(_CTX) if split and "decode" in kinds else None
    # two pools, measured on the H200 host against one shared pool of n (0.52-0.57 at fast PNG
    # against 0.67): a decode the in-order thread waits for never queues behind encodes
    _POOLS.update({kind: _new_pool(n) for kind in ("decode", "encode") if kind in kinds})
    pools = list(_POOLS.values())
    starter = None
    if _CTX.get_start_method() == "forkserver":
        # forked by the early server: each start waits for the server's reply (and the first one
        # for its imports), so they are asked for on a thread of their own while this one goes
        # on to the device and the first decodes
        prespawn = later and _can_prespawn(pools)
        starter = threading.Thread(target=_prespawn if prespawn else _start_later if later else _start_processes,
                                   args=(pools, n), name="gputex-workers-start", daemon=True)
        if later and not prespawn:
            _SUBMITTED.clear()
            _STARTER[:] = [starter]
        else:
            starter.start()
    else:
        _start_processes(pools, n)
    try:
        yield
    finally:
        _STARTER.clear()
        if starter is not None and starter.is_alive():
            starter.join()
        with _POOL_LOCK:
            pools = list(_POOLS.values()) + _REPLACED  # the ones in use now (a dead worker's replaced)
            _POOLS.clear()
            _REPLACED.clear()
            _SLOTS = None
            _CTX = None
        with span("workers-stop"):
            for pool in pools:
                pool.shutdown(wait=True, cancel_futures=True)
        _drop_free_blocks()


_CTX: Any = None  # the multiprocessing context of the pools (main process, while they run)
_STARTER: list = []  # codec_workers(later=True)'s thread that asks for the rest of the processes


_SUBMITTED = threading.Event()  # a task was submitted to a pool (what the deferred starter waits for)


def start_processes(wait: bool = False) -> None:
    """Ask for the rest of the worker processes of a ``codec_workers(later=True)`` block (once;
    nothing where there is none to ask for): on a thread that first waits, up to 0.2 s, for the
    first task to be submitted, so the tasks that ask for the processes queue behind it.
    ``wait``: on this thread, returning once they are asked for."""
    if _STARTER:
        starter = _STARTER.pop()
        if wait:
            starter.run()
        else:
            starter.start()


def _can_prespawn(pools: list) -> bool:
    """Whether :func:`_prespawn` can start ``pools``' processes (``GPUTEX_PRESPAWN`` not ``0``, and
    the executors have the parts of CPython's ``ProcessPoolExecutor`` it uses: private, so looked for;
    run here on 3.11 and on the H200 host's 3.12)."""
    from .devflags import flag

    return flag("GPUTEX_PRESPAWN") != "0" and all(
        callable(getattr(p, "_spawn_process", None)) and hasattr(p, "_shutdown_lock") and
        callable(getattr(p, "_start_executor_manager_thread", None)) and
        hasattr(p, "_executor_manager_thread_wakeup") and
        isinstance(getattr(p, "_processes", None), dict) and isinstance(getattr(p, "_max_workers", None), int)
        for p in pools)


def _prespawn(pools: list, n: int) -> None:
    """Start the ``n`` processes of each pool now, with no task: each forked by the early server, one
    round trip each (~2 ms on the H200 host), while the main thread goes on to the first decodes.

    Before, the first tasks asked for the processes (a placeholder task each would have queued
    ahead of the decodes): on the H200 host (48 x 2048² -> KTX2, ``--jobs 16``, traced) the first
    task reached the pool 16 ms after the decodes were submitted and the 16 forks followed it one
    by one, so the workers' first decodes began over the next 35 ms. Each process is added as
    ``submit`` adds one: under the pool's own lock (a task submitted meanwhile finds the pool as it
    would have, never more than its processes; it waits for a fork's round trip at most), with the
    pool's manager thread started and woken, so the manager watches the new process (one that
    dies fails its task, not hangs it) and ``shutdown`` stops it even where no task ever came
    (review: a pool without the thread left its processes running)."""
    from .signals import spawn_shielded
    from .trace import span

    with spawn_shielded(), _main_script_hidden(), span("spawn"):
        for _ in range(n):
            for pool in pools:
                try:
                    with pool._shutdown_lock:
                        if (getattr(pool, "_shutdown_thread", False) or getattr(pool, "_broken", False)
                                or len(pool._processes) >= pool._max_workers):
                            continue
                        pool._spawn_process()
                        pool._start_executor_manager_thread()
                        pool._executor_manager_thread_wakeup.wakeup()
                except Exception:  # noqa: BLE001 - a start failed: the tasks start processes as they
                    return  # need them and meet any error themselves


def _start_later(pools: list, n: int) -> None:
    _SUBMITTED.wait(0.2)
    _start_processes(pools, n)


def _start_processes(pools: list, n: int) -> None:
    """Start the ``n`` processes of each pool now, in parallel with whatever comes next."""
    from .signals import spawn_shielded
    from .trace import span

    with spawn_shielded(), _main_script_hidden(), span("spawn"):  # a terminal's Ctrl-C never reaches a starting worker
        for pool in pools:
            for _ in range(n):
                try:
                    pool.submit(_warm)
                except Exception:  # noqa: BLE001 - ended meanwhile (RuntimeError), or a start failed:
                    return  # the decodes start processes as they need them and meet any error themselves


def _new_pool(n: int):
    """A pool of ``n`` worker processes of :data:`_CTX`. Workers forked from the early server
    (:mod:`gputex.early`) begin with the server's environment: they are handed this one's."""
    from concurrent.futures import ProcessPoolExecutor

    env = dict(os.environ) if _CTX.get_start_method() == "forkserver" else None
    return ProcessPoolExecutor(n, mp_context=_CTX, initializer=_init, initargs=(_SLOTS, env))


@contextmanager
def _main_script_hidden():
    """Within this block, processes spawned do not run the program's main script first.

    multiprocessing's spawn re-runs the parent's ``__main__`` in every child when it is a script
    (not for ``python -m gputex``): for the ``gputex`` console script that is the CLI's imports
    (typer and the command modules, ~0.18 s of CPU on the 2-core machine) in every worker,
    before its first decode, for nothing: the workers run gputex's own functions. So the
    script's ``__file__`` is hidden while the pool starts its processes (a worker that replaces
    a dead one later starts the usual way)."""
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    main.__file__ = None  # (what spawn reads: no path, no re-run)
    try:
        yield
    finally:
        main.__file__ = path


def sweep_shared() -> int:
    """Remove shared-memory files (``/dev/shm``, the temp folder) left by gputex processes that
    are no longer running (a batch killed with kill -9); returns how many."""
    from .atomic import sweep_stale

    return sum(sweep_stale(folder) for folder in _folders())


def _warm() -> None:
    from .trace import span

    with span("worker-warm", parent=os.getppid()):  # (the early server, or gputex)
        import numpy  # noqa: F401  (what the first real task would import anyway)

        from . import decode, encode  # noqa: F401


_CAPTURE = None  # in a worker process: its gputex.chatter capture


def _init(slots=None, env: dict | None = None) -> None:
    import atexit

    t0 = time.time()
    global _WORKER_SLOTS
    _WORKER_SLOTS = slots
    if env is not None:  # the batch's environment, not the early server's
        for name in set(os.environ) - set(env):
            del os.environ[name]
        os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    atexit.register(_quick_exit)  # first registered, so it runs last of the worker's own handlers
    os.environ.setdefault("GPUTEX_DECODE_THREADS", "1")  # the pool already fills the cores: one PNG, one thread
    from .chatter import captured

    global _CAPTURE
    _CAPTURE = captured()  # kept: for the worker's life, C libraries' stderr becomes per-task warnings
    _CAPTURE.__enter__()
    # A worker must not outlive gputex: if the parent is killed (kill -9), the pool's pipes do
    # not close (every worker holds their write ends), so a watchdog ends the worker instead.
    # A worker forked by the early server (gputex.early) is the server's child: it watches the
    # pipe multiprocessing keeps open from gputex to it (closed when gputex ends).
    import multiprocessing

    parent, gputex = os.getppid(), multiprocessing.parent_process()
    spawned = gputex is None or gputex.pid == parent

    def watch() -> None:
        if gputex is None or spawned:
            while os.getppid() == parent:
                time.sleep(0.5)
        else:
            gputex.join()
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="gputex-parent-watch").start()
    if slots is not None:  # it may make chains and write texture files: imported beside its first decode
        threading.Thread(target=_preload_host, daemon=True, name="gputex-host-preload").start()
    try:  # the GPU thread's process goes first when the cores are all busy with codecs
        os.nice(WORKER_NICE)
    except OSError:
        pass
    from .trace import enabled, mark

    if enabled():  # (a worker started with no task, _prespawn's, runs no _warm: its start is marked here)
        mark("worker-warm", t0, parent=parent)


def _preload_host() -> None:
    from .host_texture import preload

    try:
        preload()
    except Exception:  # noqa: BLE001 - the task that needs them imports them again and reports
        pass


def _quick_exit() -> None:
    """A worker's end, once the pool has shut it down: its streams flushed and the process ended
    with ``os._exit``, without the interpreter's teardown (numpy, the codecs and gputex's modules
    dropped one by one), which the parent waits for while the pool shuts down. It runs after the
    handlers registered since :func:`_init` (the worker's finalizers: its shared-memory files
    unlinked). On the 2-core lavapipe machine the pool's shutdown at the end of a 48-image batch
    took 0.29 s before, 0.005-0.02 s now (``GPUTEX_TRACE``, span ``workers-stop``)."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(0)


def _shm_folder() -> str:
    """Where pixels travel between processes: ``/dev/shm`` (memory), else the temp folder.
    ``GPUTEX_SHM_DIR`` (developer override, :mod:`gputex.devflags`) names another folder."""
    from .devflags import flag
    from .portable import disabled

    folder = flag("GPUTEX_SHM_DIR") or "/dev/shm"
    usable = not disabled("shm") and os.path.isdir(folder) and os.access(folder, os.W_OK)
    return folder if usable else tempfile.gettempdir()


def _folders() -> list[str]:
    """Shared memory first, then the temp folder (a small /dev/shm, Docker's 64 MB, fills up)."""
    first, fallback = _shm_folder(), tempfile.gettempdir()
    return [first] if os.path.realpath(first) == os.path.realpath(fallback) else [first, fallback]


def _shm_file(nbytes: int = 0) -> tuple[int, str]:
    """A new file of ``nbytes`` reserved (``posix_fallocate``: a full tmpfs says ENOSPC now,
    not SIGBUS when a mapped page is first written) in the first folder with room for it.
    Shared memory is an optimisation, never a requirement."""
    import errno

    folders = _folders()
    for i, folder in enumerate(folders):
        last = i == len(folders) - 1
        if not last and not _has_room(folder, nbytes):
            continue
        fd, name = tempfile.mkstemp(prefix=f"{_PREFIX}{os.getpid()}-", suffix=".part", dir=folder)
        if nbytes <= 0 or not hasattr(os, "posix_fallocate"):
            return fd, name
        try:
            os.posix_fallocate(fd, 0, nbytes)
            return fd, name
        except OSError as e:
            os.close(fd)
            _unlink_quietly(name)
            if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or last:
                if e.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # no fallocate here: plain file
                    return tempfile.mkstemp(prefix=f"{_PREFIX}{os.getpid()}-", suffix=".part", dir=folder)
                raise
    raise AssertionError("unreachable")


#: Free space kept in shared memory for everyone else (other blocks in flight, other programs).
SHM_HEADROOM = 16 << 20


def _has_room(folder: str, nbytes: int) -> bool:
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):  # no statvfs (Windows): try, fallocate decides
        return True
    return st.f_bavail * st.f_frsize >= nbytes + SHM_HEADROOM


def _map_file(name: str, nbytes: int, write: bool):
    """The file mapped whole (MAP_POPULATE where there is one: one call sets up every page
    instead of a fault per 4 KiB on first touch)."""
    import mmap

    from .portable import disabled

    flags = mmap.MAP_SHARED | (0 if disabled("populate") else getattr(mmap, "MAP_POPULATE", 0))
    fd = os.open(name, os.O_RDWR if write else os.O_RDONLY)
    try:
        if write:
            os.ftruncate(fd, nbytes)
        return mmap.mmap(fd, nbytes, flags=flags,
                         prot=mmap.PROT_READ | (mmap.PROT_WRITE if write else 0))
    finally:
        os.close(fd)


class SharedBlock:
    """One shared-memory file, mapped here, that arrays are carved from: captured levels are
    written into it straight from the GPU's readback buffer, and an encode worker maps it by
    name (no copy into a file on the way). :meth:`close` hands it back for the next image
    (a fresh block costs the kernel zeroing its pages, on the in-order GPU thread); the file
    is unlinked when the worker pool ends, or when the block is garbage-collected."""

    def __init__(self, nbytes: int):
        import weakref

        import numpy as np

        self.size = max(64, nbytes)
        fd, self.name = _shm_file(self.size)
        os.close(fd)
        try:
            self._mm = _map_file(self.name, self.size, write=True)
        except BaseException:
            os.unlink(self.name)
            raise
        self._base = np.frombuffer(self._mm, np.uint8)
        self._used = 0
        self._closer = weakref.finalize(self, _unlink_quietly, self.name)

    def array(self, shape, dtype) -> np.ndarray:
        """A new C-contiguous array in the block (64-byte aligned)."""
        import numpy as np

        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if self._used + nbytes > self.size:
            return np.empty(shape, dtype)  # did not fit: an ordinary array (encode_images copies it)
        a = self._base[self._used: self._used + nbytes].view(dtype).reshape(shape)
        self._used = -(-(self._used + nbytes) // 64) * 64
        return a

    def offset_of(self, a: np.ndarray) -> int | None:
        """Byte offset of ``a`` in the block, or None if it is not one of the block's arrays."""
        start = a.__array_interface__["data"][0] - self._base.__array_interface__["data"][0]
        if a.flags.c_contiguous and 0 <= start and start + a.nbytes <= self.size:
            return start
        return None

    def close(self) -> None:
        """Done with its arrays: kept for reuse while a worker pool runs, else unlinked."""
        with _FREE_LOCK:
            if _POOLS and len(_FREE) < _FREE_MAX and self._closer.alive:
                self._used = 0
                _FREE.append(self)
                return
        self._closer()

    def unlink(self) -> None:
        self._closer()


_FREE: list[SharedBlock] = []  # blocks handed back, for the next images
_FREE_LOCK = threading.Lock()
_FREE_MAX = 0  # set when a pool starts: as many as can be in flight at once


def _unlink_quietly(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def shared_block(nbytes: int) -> SharedBlock | None:
    """A :class:`SharedBlock` of at least ``nbytes`` when worker processes are running (else
    None: no one to share with); one handed back is reused if it is not over twice the size."""
    if "encode" not in _POOLS:
        return None
    with _FREE_LOCK:
        for i, block in enumerate(_FREE):
            if nbytes <= block.size <= 2 * max(nbytes, 64):
                del _FREE[i]
                if os.path.getsize(block.name) != block.size:  # outputs were appended last time
                    os.truncate(block.name, block.size)
                return block
    return SharedBlock(nbytes)


def _drop_free_blocks() -> None:
    with _FREE_LOCK:
        blocks = list(_FREE)
        _FREE.clear()
    for block in blocks:
        block.unlink()


_RETRY_LOCK = threading.Lock()  # retries after a worker died run one at a time
_POOL_LOCK = threading.Lock()


def _call(kind: str, fn, *args, path: str = ""):
    """``fn(*args)`` in the ``kind`` pool. A worker that dies (killed, out of memory, a decoder
    crash on a hostile file) breaks the whole pool: the pool is replaced and the work retried
    once, alone, so an input is blamed only if it kills a fresh worker by itself; the error
    names it and the batch goes on."""
    from concurrent.futures.process import BrokenProcessPool

    from .signals import spawn_shielded

    pool = _POOLS[kind]
    try:
        with spawn_shielded():  # submit may start a worker process
            fut = pool.submit(fn, *args)
        _SUBMITTED.set()
        return fut.result()
    except BrokenProcessPool:
        pass
    with _RETRY_LOCK:
        pool = _replace_pool(kind, pool)
        try:
            with spawn_shielded():
                fut = pool.submit(fn, *args)
            return fut.result()
        except BrokenProcessPool:
            _replace_pool(kind, pool)
    what = ("decoding it (or writing its texture file)" if kind == "decode" and _SLOTS is not None
            else "decoding it" if kind == "decode" else "encoding it")
    raise GputexError(f"{path}: a codec worker process died while {what}, twice (killed, out of memory, "
                      "or a decoder crash on this file)")


def _replace_pool(kind: str, broken):
    """A fresh pool in place of ``broken`` (once, whoever notices first); the pool now in use."""
    with _POOL_LOCK:
        pool = _POOLS.get(kind)
        if pool is None:
            raise GputexError("the codec worker pool has ended")
        if pool is broken:
            pool = _new_pool(broken._max_workers)
            _POOLS[kind] = pool
            _REPLACED.append(broken)
            broken.shutdown(wait=False, cancel_futures=True)
        return pool


_REPLACED: list = []  # broken pools, shut down with the others when the batch ends


# -- decode ------------------------------------------------------------------------------------

def decode_image(path: str, **kwargs) -> Image:
    """``gputex.decode(path, **kwargs)``, in a worker process when a pool is active."""
    from .decode import decode

    if "decode" not in _POOLS:
        from .trace import span

        with span("decode", path=path):
            return decode(path, **kwargs)
    out = _call("decode", _decode_in_worker, path, kwargs, path=path)
    if "error" in out:
        raise out["error"]
    return _mapped_image(out)


def _mapped_image(out: dict) -> Image:
    """The image a worker decoded into a shared-memory file (the file unlinked)."""
    import numpy as np

    from .decode import Image

    try:
        dtype, shape = np.dtype(out["dtype"]), tuple(out["shape"])
        nbytes = int(np.prod(shape)) * dtype.itemsize
        pixels = (np.frombuffer(_map_file(out["file"], nbytes, write=False), dtype).reshape(shape)
                  if nbytes else np.zeros(shape, dtype))
    finally:
        os.unlink(out["file"])
    return Image(pixels, out["color_space"], out["source"], out["mode"], out["pages"], out["warnings"])


def decode_or_write(path: str, plan: HostPlan, **kwargs) -> tuple[Image | HostWritten, bool]:
    """:func:`decode_image` in a decode worker that, where the C engine serves the image's chain
    (:func:`gputex.host_texture.plan_texture`) and the GPU has no free slot (or ``plan.always``),
    makes the chain and writes ``plan.out`` itself: then a
    :class:`~gputex.host_texture.HostWritten` comes back instead of the pixels. Also returns
    whether the image holds a GPU slot (:func:`free_gpu_slots` gives it back once its GPU step
    is done). Without a decode pool: :func:`decode_image`, no slot, and where ``plan.inline``
    the chain and file made here (:func:`_write_inline`)."""
    if "decode" not in _POOLS or _SLOTS is None:
        image = decode_image(path, **kwargs)
        return (_write_inline(image, plan) if plan.inline else image), False
    out = _call("decode", _decode_in_worker, path, kwargs, plan, path=path)
    if "error" in out:
        raise out["error"]
    if "written" in out:
        return out["written"], False
    try:
        return _mapped_image(out), bool(out["slot"])
    except BaseException:
        if out["slot"]:
            free_gpu_slots()
        raise


def _write_inline(image: Image, plan: HostPlan) -> Image | HostWritten:
    """The texture file of ``image`` written in this process where the C engine serves its chain
    (a split without decode workers: one input, or ``--workers 0``); else the image, for the GPU."""
    from .host_texture import plan_texture, write_host_texture

    texture = plan_texture(image, plan)
    if texture is None:
        return image
    try:
        return write_host_texture(image, plan, texture)
    except MemoryError:  # no host memory for the engine's sums: the GPU makes the same bytes
        return image


def gpu_slots() -> Any:
    """The running split batch's semaphore of GPU slots (None where none runs): a later release
    that names it (:func:`free_gpu_slots`) cannot reach another batch's."""
    return _SLOTS


def free_gpu_slots(n: int = 1, slots: Any = None) -> None:
    """Tell the decode workers that the GPU can take ``n`` more images (:func:`decode_or_write`):
    ``slots`` (a :func:`gpu_slots`), else the running batch's."""
    slots = _SLOTS if slots is None else slots
    if slots is not None:
        for _ in range(n):
            slots.release()


def _new_slots(ctx):
    """The GPU's free slots, a semaphore the decode workers inherit (none free until the GPU is
    ready); None where the platform has no process-shared semaphores (then no split)."""
    try:
        return ctx.Semaphore(0)
    except (OSError, ImportError):
        return None


_SLOTS: Any = None  # the GPU's free slots (main process, while a decode pool runs)
_WORKER_SLOTS: Any = None  # the same semaphore, in a worker process


def _take_slot() -> bool:
    return _WORKER_SLOTS is not None and bool(_WORKER_SLOTS.acquire(False))


def _decode_in_worker(path: str, kwargs: dict, plan: HostPlan | None = None) -> dict:
    from .chatter import watch
    from .decode import decode
    from .trace import span

    warnings: list[str] = []
    try:
        with span("decode", path=path), watch(path, warnings, claim=True):
            image = decode(path, **kwargs)
    except GputexError as e:
        return {"error": e}
    slot = False
    if plan is not None:
        from .host_texture import plan_texture, write_host_texture

        texture = plan_texture(image, plan)
        if texture is not None:
            slot = not plan.always and _take_slot()
            if not slot:
                try:
                    with watch(path, warnings):
                        written = write_host_texture(image, plan, texture)
                except GputexError as e:
                    return {"error": e}
                except MemoryError:  # no host memory for the engine's sums: the GPU makes the same bytes
                    written = None
                if written is not None:
                    written.warnings += [w for w in warnings if w not in written.warnings]
                    return {"written": written}
    try:
        fd, name = _shm_file(image.pixels.nbytes)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(memoryview(image.pixels.reshape(-1)).cast("B") if image.pixels.flags.c_contiguous
                        else image.pixels.tobytes())
        except BaseException:
            os.unlink(name)
            raise
    except BaseException:
        if slot:  # the main process never hears of it: the GPU's slot goes back here
            _WORKER_SLOTS.release()
        raise
    return {"file": name, "dtype": image.pixels.dtype.str, "shape": image.pixels.shape,
            "color_space": image.color_space, "source": image.source, "mode": image.mode,
            "pages": image.pages, "warnings": image.warnings + warnings, "slot": slot}


# -- encode ------------------------------------------------------------------------------------

def encode_images(outputs: list[tuple[str, np.ndarray]], block: SharedBlock | None = None,
                  **kwargs) -> tuple[list[str], list[str], float]:
    """``gputex.encode`` each ``(path, pixels)`` in order (in a worker process when a pool is
    active); returns (paths written, warnings, seconds spent encoding). Raises the first
    GputexError; the outputs before it are written and returned in its ``written`` attribute.
    Pixels that live in ``block`` reach the worker by offset; others are appended to its file.
    The block is closed (its file unlinked) on return."""
    import numpy as np

    if "encode" not in _POOLS:
        from .trace import span

        try:
            with span("encode", path=outputs[0][0] if outputs else ""):
                return _encode_all([(p, a) for p, a in outputs], kwargs)
        finally:
            if block is not None:
                block.close()
    if block is None:
        fd, name = _shm_file(sum(-(-np.asarray(p).nbytes // 64) * 64 for _, p in outputs))
        os.close(fd)
        end = 0
    else:
        name, end = block.name, block.size
    jobs = []
    try:
        with open(name, "r+b") as f:
            for path, pixels in outputs:
                offset = block.offset_of(pixels) if block is not None else None
                if offset is None:
                    a = np.ascontiguousarray(pixels)
                    end = -(-end // 64) * 64
                    f.seek(end)
                    f.write(memoryview(a.reshape(-1)).cast("B"))
                    offset, end = end, end + a.nbytes
                jobs.append((path, offset, pixels.shape, pixels.dtype.str))
        written, warnings, seconds, error = _call("encode", _encode_in_worker, name, jobs, kwargs,
                                                  path=outputs[0][0] if outputs else "")
    finally:
        if block is not None:
            block.close()
        else:
            _unlink_quietly(name)
    if error is not None:
        error.written = written
        raise error
    return written, warnings, seconds


def _encode_all(outputs, kwargs) -> tuple[list[str], list[str], float]:
    from .encode import encode

    written: list[str] = []
    warnings: list[str] = []
    t0 = time.perf_counter()
    for path, pixels in outputs:
        try:
            encode(pixels, path, warn=warnings.append, **kwargs)
        except GputexError as e:
            e.written = written
            e.warnings = warnings
            raise
        written.append(path)
    return written, warnings, time.perf_counter() - t0


def _encode_in_worker(name: str, jobs: list, kwargs: dict):
    import numpy as np

    from .trace import span

    outputs = []
    size = os.path.getsize(name)
    whole = np.frombuffer(_map_file(name, size, write=False), np.uint8) if size else None
    for path, offset, shape, dtype in jobs:
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        outputs.append((path, whole[offset: offset + nbytes].view(dtype).reshape(shape) if nbytes
                        else np.zeros(shape, dtype)))

    from .chatter import watch

    chatter: list[str] = []
    try:
        with span("encode", path=jobs[0][0] if jobs else ""), watch(jobs[0][0] if jobs else "", chatter):
            written, warnings, seconds = _encode_all(outputs, kwargs)
        return written, warnings + chatter, seconds, None
    except GputexError as e:
        return e.written, getattr(e, "warnings", []), 0.0, e


# -- texture files (upload -o) -----------------------------------------------------------------

def write_texture(tf, path: str, *, zstd: int | None = None) -> float:
    """``gputex.texfile.write_texture_file(tf, path, zstd=zstd)``, in an encode worker process
    when that pool is active (the levels pickled to it), else here; returns the seconds spent
    writing. Raises what the writer raises. (``upload -o`` starts no encode pool: a write is
    one copy into the page cache, done by the batch pool's threads.)"""
    if "encode" not in _POOLS:
        return _write(tf, path, zstd)
    seconds, error = _call("encode", _write_in_worker, tf, path, zstd, path=path)
    if error is not None:
        raise error
    return seconds


def _write(tf, path: str, zstd: int | None) -> float:
    from .texfile import write_texture_file
    from .trace import span

    t0 = time.perf_counter()
    with span("encode", path=path):
        write_texture_file(tf, path, zstd=zstd)
    return time.perf_counter() - t0


def _write_in_worker(tf, path: str, zstd: int | None):
    try:
        return _write(tf, path, zstd), None
    except GputexError as e:
        return 0.0, e
