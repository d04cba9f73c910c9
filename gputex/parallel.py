"""Row-chunked copies on a few threads (numpy releases the GIL while it copies).

Freshly mapped staging memory is first touched page by page; one thread copying a 32 MiB
band spends much of its time in page faults. Splitting the rows over a few threads
overlaps them (measured on the H200: benchmarks/transfer.py).
"""

from __future__ import annotations

import os
from typing import Any, Callable

__all__ = ["for_row_chunks", "copy_threads", "set_copy_threads", "MAX_COPY_THREADS", "MIN_CHUNK_BYTES"]

#: At most this many threads copy one band (more did not pay on the H200: benchmarks/transfer.py).
MAX_COPY_THREADS = 4
#: Bands smaller than this are copied on the calling thread.
MIN_CHUNK_BYTES = 4 << 20

_pool: Any = None  # a ThreadPoolExecutor, made on first use
_chosen: list[int | None] = [None]  # set_copy_threads


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


def for_row_chunks(rows: int, row_bytes: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(start, stop)`` over ``[0, rows)`` split into up to :func:`copy_threads` chunks, and wait."""
    global _pool
    from .caps import capped

    parts = min(capped(copy_threads()), max(1, rows * row_bytes // MIN_CHUNK_BYTES), rows)
    if parts <= 1:
        fn(0, rows)
        return
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=MAX_COPY_THREADS, thread_name_prefix="gputex-copy")
    step = -(-rows // parts)
    futures = [_pool.submit(fn, a, min(rows, a + step)) for a in range(0, rows, step)]
    for f in futures:
        f.result()
