"""Developer timeline: ``GPUTEX_TRACE=FILE`` appends one JSON line per span of work.

``GPUTEX_PROFILE=FILE`` writes a cProfile of the batch's in-order GPU thread to FILE.

Each line is ``{"what", "pid", "t0", "t1", ...}`` with wall-clock seconds (``time.time()``, so
spans of worker processes and the GPU process line up). ``benchmarks/timeline.py`` turns a
trace into where a batch's wall time went. Off (one dict lookup) unless the variable is set.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

__all__ = ["span", "mark", "enabled", "profiled"]

from .devflags import flag as _flag  # noqa: E402

_PATH = _flag("GPUTEX_TRACE")


def enabled() -> bool:
    return _PATH is not None


def mark(what: str, t0: float, t1: float | None = None, **extra) -> None:
    """Record a span from ``t0`` to ``t1`` (now if None), wall-clock seconds."""
    if _PATH is None:
        return
    import json

    line = json.dumps({"what": what, "pid": os.getpid(), "t0": t0, "t1": time.time() if t1 is None else t1,
                       **extra}) + "\n"
    fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())  # one write of a short line with O_APPEND: lines never interleave
    finally:
        os.close(fd)


def process_start() -> float:
    """Wall-clock time this process started (Linux: from /proc), else now."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()


@contextmanager
def span(what: str, **extra):
    """Record the block as a span; ``cpu`` is the seconds this thread ran on a core meanwhile
    (a span whose cpu is far below its length was waiting: for the GIL, a lock, the GPU)."""
    if _PATH is None:
        yield
        return
    t0, c0 = time.time(), time.thread_time()
    try:
        yield
    finally:
        mark(what, t0, cpu=round(time.thread_time() - c0, 6), **extra)


@contextmanager
def profiled():
    """cProfile the block (this thread only) into ``GPUTEX_PROFILE``, if set."""
    path = _flag("GPUTEX_PROFILE")
    if not path:
        yield
        return
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        prof.dump_stats(path)
