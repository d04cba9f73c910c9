"""Row-chunked copies on a few threads (numpy releases the GIL while it copies).

Freshly mapped staging memory is first touched page by page; one thread copying a 32 MiB
band spends much of its time in page faults. Splitting the rows over a few threads
overlaps them (measured on the H200: benchmarks/transfer.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["for_row_chunks", "run_all", "copy_threads", "set_copy_threads", "read_threads", "set_read_threads", "MAX_COPY_THREADS",
           "MAX_READ_THREADS", "MIN_CHUNK_BYTES", "shutdown"]

#: At most this many threads copy one band into staging memory (more did not pay on the H200:
#: benchmarks/transfer.py).
MAX_COPY_THREADS = 4
#: At most this many threads copy out of a mapped read-back buffer. Every map of a read-back
#: buffer is a fresh mapping, first touched a page fault per 4 KiB, so more threads than for an
#: upload pay off (``benchmarks/transfer.py --threads``; H200, 16 cores, 8192² RGBA8, 128-256 MiB
#: budget: 4 threads 1.66-1.84x a one-thread memcpy, 8 threads 2.35x, 16 2.56-2.73x).
MAX_READ_THREADS = 16
#: Bands smaller than this are copied on the calling thread.
MIN_CHUNK_BYTES = 4 << 20

_pool: Any = None  # a ThreadPoolExecutor, made on first use
_chosen: list[int | None] = [None]  # set_copy_threads
_read_chosen: list[int | None] = [None]  # set_read_threads


def set_copy_threads(n: int | None) -> None:
    """Threads for one band's copy from now on in this process (``copy_threads=`` of
    :class:`gputex.Session`/:class:`gputex.Converter` and the batch run; 1: no threads;
    None: the default)."""
    _chosen[0] = None if n is None else max(1, int(n))


def copy_threads() -> int:
    """Threads for one band's copy: :func:`set_copy_threads`, else the developer override
    ``GPUTEX_COPY_THREADS`` (:mod:`gputex.devflags`), else the cores; 1 to 4."""
    n = _chosen[0]
    if n is None:
        from .devflags import int_flag

        n = int_flag("GPUTEX_COPY_THREADS")
    return max(1, min(MAX_COPY_THREADS, n if n is not None else (os.cpu_count() or 1)))


def set_read_threads(n: int | None) -> None:
    """Threads copying out of mapped read-back memory from now on in this process (None: the
    default; ``benchmarks/transfer.py --threads`` compares them)."""
    _read_chosen[0] = None if n is None else max(1, int(n))


def read_threads() -> int:
    """Threads copying out of mapped read-back memory: :func:`set_read_threads`, else 1 when
    :func:`set_copy_threads` chose 1 (no threads), else the developer override
    ``GPUTEX_READ_THREADS``, else the cores; 1 to 16."""
    n = _read_chosen[0]
    if n is None and _chosen[0] == 1:
        return 1
    if n is None:
        from .devflags import int_flag

        n = int_flag("GPUTEX_READ_THREADS")
    return max(1, min(MAX_READ_THREADS, n if n is not None else (os.cpu_count() or 1)))


def for_row_chunks(rows: int, row_bytes: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(start, stop)`` over ``[0, rows)`` split into up to :func:`copy_threads` chunks, and wait."""
    from .caps import capped

    parts = min(capped(copy_threads()), max(1, rows * row_bytes // MIN_CHUNK_BYTES), rows)
    if parts <= 1:
        fn(0, rows)
        return
    step = -(-rows // parts)
    def part(a: int) -> Callable[[], None]:
        return lambda: fn(a, min(rows, a + step))

    run_all([part(a) for a in range(0, rows, step)])


def _get_pool() -> Any:
    """One pool for every copy; its threads start as tasks need them, so its size is only a cap."""
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=max(MAX_COPY_THREADS, MAX_READ_THREADS, os.cpu_count() or 1),
                                   thread_name_prefix="gputex-copy")
    return _pool


def shutdown() -> None:
    """Stop the copy pool's threads (idle once every :func:`run_all` has returned) and wait for
    them; a later copy starts a new pool. The CLI calls it before its lean exit, which only runs
    where no other non-daemon thread is alive (``gputex.cli._lean_exit``)."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True)


def run_all(tasks: list[Callable[[], None]], threads: int | None = None) -> None:
    """Run ``tasks`` on at most ``threads`` pool threads at once (default :func:`copy_threads`,
    held to the process's thread cap) and wait; the first exception is raised once every
    thread has stopped. With one thread the tasks run on the calling thread."""
    import threading

    from .caps import capped

    n = min(len(tasks), capped(threads or copy_threads()))
    if n <= 1:
        for t in tasks:
            t()
        return
    queue = iter(tasks)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                task = next(queue, None)
            if task is None:
                return
            task()

    futures = [_get_pool().submit(worker) for _ in range(n)]
    errors = []
    for f in futures:
        try:
            f.result()
        except BaseException as e:  # noqa: BLE001 - raised below once every copy has stopped
            errors.append(e)
    if errors:
        raise errors[0]
