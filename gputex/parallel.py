"""Row-chunked copies on a few threads (numpy releases the GIL while it copies).

Freshly mapped staging memory is first touched page by page; one thread copying a 32 MiB
band spends much of its time in page faults. Splitting the rows over a few threads
overlaps them (measured on the H200: benchmarks/transfer.py).
"""

from __future__ import annotations

import os
from typing import Any, Callable

__all__ = ["for_row_chunks", "COPY_THREADS", "MIN_CHUNK_BYTES"]

#: Threads used for one band's copy (``GPUTEX_COPY_THREADS`` overrides; 1 disables).
COPY_THREADS = max(1, min(4, int(os.environ.get("GPUTEX_COPY_THREADS", os.cpu_count() or 1))))
#: Bands smaller than this are copied on the calling thread.
MIN_CHUNK_BYTES = 4 << 20

_pool: Any = None  # a ThreadPoolExecutor, made on first use


def for_row_chunks(rows: int, row_bytes: int, fn: Callable[[int, int], None]) -> None:
    """Call ``fn(start, stop)`` over ``[0, rows)`` split into up to COPY_THREADS chunks, and wait."""
    global _pool
    from .caps import capped

    parts = min(capped(COPY_THREADS), max(1, rows * row_bytes // MIN_CHUNK_BYTES), rows)
    if parts <= 1:
        fn(0, rows)
        return
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max_workers=COPY_THREADS, thread_name_prefix="gputex-copy")
    step = -(-rows // parts)
    futures = [_pool.submit(fn, a, min(rows, a + step)) for a in range(0, rows, step)]
    for f in futures:
        f.result()
