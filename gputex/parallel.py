"""Row-chunked copies on a few threads (numpy releases the GIL while it copies).

Freshly mapped staging memory is first touched page by page; one thread copying a 32 MiB
band spends much of its time in page faults. Splitting the rows over a few threads
overlaps them (measured on the H200: benchmarks/transfer.py).
"""

from __future__ import annotations

import os
from typing import Any, Callable

__all__ = ["for_row_chunks", "run_all", "COPY_THREADS", "READ_THREADS", "MIN_CHUNK_BYTES"]

#: Threads used for one band's copy (``GPUTEX_COPY_THREADS`` overrides; 1 disables).
COPY_THREADS = max(1, min(4, int(os.environ.get("GPUTEX_COPY_THREADS", os.cpu_count() or 1))))
#: Threads copying out of a mapped read-back buffer (``GPUTEX_READ_THREADS`` overrides). Every
#: map of a read-back buffer is a fresh mapping, first touched a page fault per 4 KiB, so more
#: threads than for an upload pay off (``benchmarks/transfer.py --threads``; H200, 16 cores, 8192²
#: RGBA8, 128-256 MiB budget: 4 threads 1.66-1.84x a one-thread memcpy, 8 threads 2.35x, 16 2.56-2.73x).
READ_THREADS = max(1, min(16, int(os.environ.get("GPUTEX_READ_THREADS", os.cpu_count() or 1))))
#: Bands smaller than this are copied on the calling thread.
MIN_CHUNK_BYTES = 4 << 20

_pool: Any = None  # a ThreadPoolExecutor, made on first use


def for_row_chunks(rows: int, row_bytes: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(start, stop)`` over ``[0, rows)`` split into up to COPY_THREADS chunks, and wait."""
    from .caps import capped

    parts = min(capped(COPY_THREADS), max(1, rows * row_bytes // MIN_CHUNK_BYTES), rows)
    if parts <= 1:
        fn(0, rows)
        return
    step = -(-rows // parts)
    run_all([(lambda a=a: fn(a, min(rows, a + step))) for a in range(0, rows, step)])


def _get_pool():
    """One pool for every copy; its threads start as tasks need them, so its size is only a cap."""
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=max(COPY_THREADS, READ_THREADS, os.cpu_count() or 1),
                                   thread_name_prefix="gputex-copy")
    return _pool


def run_all(tasks: list[Callable[[], None]], threads: int | None = None) -> None:
    """Run ``tasks`` on at most ``threads`` pool threads at once (default :data:`COPY_THREADS`,
    held to the process's thread cap) and wait; the first exception is raised once every
    thread has stopped. With one thread the tasks run on the calling thread."""
    import threading

    from .caps import capped

    n = min(len(tasks), capped(threads or COPY_THREADS))
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
