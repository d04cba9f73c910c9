"""Developer timeline: ``GPUTEX_TRACE=FILE`` appends one JSON line per span of work.

Each line is ``{"what", "pid", "t0", "t1", ...}`` with wall-clock seconds (``time.time()``, so
spans of worker processes and the GPU process line up). ``benchmarks/timeline.py`` turns a
trace into where a batch's wall time went. Off (one dict lookup) unless the variable is set.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

__all__ = ["span", "mark", "enabled"]

_PATH = os.environ.get("GPUTEX_TRACE") or None


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
    if _PATH is None:
        yield
        return
    t0 = time.time()
    try:
        yield
    finally:
        mark(what, t0, **extra)
