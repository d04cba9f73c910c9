"""Resource caps for shared build machines: threads and memory.

**Threads** (``--threads N``, ``GPUTEX_THREADS``): every pool gputex makes stays at or under
N: the batch's decode/encode pool (and its worker processes), the staging-copy threads
(:mod:`gputex.parallel`), the band-parallel PNG deflate, and on Mesa's lavapipe / llvmpipe
the driver's own threads (``LP_NUM_THREADS``, read when the device is made). The cap lives
in the environment so spawned codec workers inherit it.

**Memory** (``--memory MiB``): a :class:`MemoryGate` admits an input into a batch only while
the decoded images in flight (from before their decode until their outputs are written) fit
in the cap; each is counted at its decoded RGBA size from the file's header (texture files:
8x their file size, what a BC1 file decodes to). An image larger than the cap alone still
runs, alone: a batch never stalls. Host staging per transfer is also held to a quarter of it.
"""

from __future__ import annotations

import os
import threading
from collections import deque

__all__ = ["ENV_THREADS", "thread_cap", "capped", "set_thread_cap", "cap_jobs", "worker_count", "MemoryGate",
           "estimate_bytes"]

ENV_THREADS = "GPUTEX_THREADS"


def thread_cap() -> int | None:
    """The thread cap of this process (``GPUTEX_THREADS``: set by :func:`set_thread_cap`, inherited by
    worker processes; :mod:`gputex.devflags`), or None."""
    from .devflags import int_flag

    v = int_flag(ENV_THREADS)
    return max(1, v) if v is not None else None


def capped(n: int) -> int:
    """``n`` threads, held to the cap."""
    cap = thread_cap()
    return max(1, min(n, cap) if cap else n)


def set_thread_cap(threads: int | None) -> None:
    """Cap every pool of this process (and the workers it spawns) at ``threads``; on lavapipe
    also the driver's threads, if no device is made yet and ``LP_NUM_THREADS`` is unset."""
    if threads is None:
        return
    os.environ[ENV_THREADS] = str(max(1, int(threads)))
    os.environ.setdefault("LP_NUM_THREADS", str(max(1, int(threads))))


def cap_jobs(jobs: int, threads: int | None) -> int:
    """``--jobs`` held to ``--threads`` (and the cap set for this process): at most ``threads``
    codec tasks at once. Worker processes come in two pools of ``jobs`` fed by ``2 * jobs``
    threads (:mod:`gputex.workers`), so with them ``jobs`` is ``threads // 2``; under 6
    threads the codecs run in threads instead (``GPUTEX_WORKERS=0`` for this process)."""
    if threads is None:
        return jobs
    set_thread_cap(threads)
    jobs = max(1, min(jobs, threads))
    if worker_count(jobs, 2) > 0:
        if threads >= 6:
            return max(1, min(jobs, threads // 2))
        os.environ["GPUTEX_WORKERS"] = "0"
    return jobs


def estimate_bytes(path: str) -> int:
    """Bytes the decoded image of ``path`` takes, from its header (0 when unreadable: the
    decode reports that)."""
    try:
        with open(path, "rb") as f:
            head = f.read(32)
        if head[:4] in (b"DDS ", b"\xabKTX"):
            return 8 * os.path.getsize(path)
        from PIL import Image

        with Image.open(path) as im:
            w, h = im.size
            mode = im.mode
        sample = 4 if mode in ("F", "I") else 2 if ("16" in mode or _png_depth(head) == 16) else 1
        return w * h * 4 * sample
    except Exception:  # noqa: BLE001 (the decode step reports what is wrong with the file)
        return 0


def _png_depth(head: bytes) -> int:
    return head[24] if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) > 24 else 0


class MemoryGate:
    """Bytes of decoded images in flight, shared by every batch of a process (or Converter)."""

    def __init__(self, mib: int):
        self.cap = max(1, int(mib)) << 20
        self.used = 0
        self.peak = 0
        self._lock = threading.Lock()

    def lane(self) -> Lane:
        """One batch's view: it admits items in input order and releases them in that order."""
        return Lane(self)


class Lane:
    def __init__(self, gate: MemoryGate):
        self.gate = gate
        self.held: deque[int] = deque()

    def admit(self, item, busy: bool) -> bool:
        """Reserve ``item``'s bytes if they fit, or if this batch has nothing else in flight."""
        n = 0 if getattr(item, "error", None) else estimate_bytes(item.path)
        g = self.gate
        with g._lock:
            if busy and g.used + n > g.cap:
                return False
            g.used += n
            g.peak = max(g.peak, g.used)
        self.held.append(n)
        return True

    def done(self) -> None:
        """The oldest admitted item is finished (results are emitted in input order)."""
        n = self.held.popleft() if self.held else 0
        with self.gate._lock:
            self.gate.used -= n

    def close(self) -> None:
        """Release whatever is still held (a batch stopped early)."""
        while self.held:
            self.done()


def worker_count(jobs: int, inputs: int, workers: int | None = None) -> int:
    """Worker processes for a batch of ``inputs`` with ``--jobs`` (0: codecs run in threads):
    ``jobs`` from 3 jobs and 2 inputs up, at most one per input. ``workers`` (``--workers``)
    chooses the number (0 turns them off); without it the developer override
    ``GPUTEX_WORKERS`` (:mod:`gputex.devflags`) does."""
    if workers is None:
        from .devflags import int_flag

        workers = int_flag("GPUTEX_WORKERS")
    if workers is not None:
        return min(int(workers), inputs) if inputs > 1 else 0
    return min(jobs, inputs) if jobs >= 3 and inputs > 1 else 0  # never more workers than inputs
