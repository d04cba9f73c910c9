"""C-library chatter (libpng, libtiff, wgpu-hal) turned into at most one warning per input.

libpng prints ``PNG warning: sBIT: invalid`` and libtiff ``TIFFFillTile: ...`` straight to file
descriptor 2, without a prefix or a file name, and wgpu-hal's warnings come through wgpu-py's
``wgpu`` logger, several lines each. During a batch (:func:`captured`) descriptor 2 goes to an
unlinked temporary file while Python's own ``sys.stderr`` keeps writing to the real stderr, and
the ``wgpu`` logger to a collector; :func:`watch` around one input's step then turns whatever
appeared meanwhile into one line: ``<file>: <first line> (+N more lines)``.

In a worker process one task runs at a time, so what it collects is exactly its input's. In
the batch's own process, decodes on several threads overlap: a line printed while two of them
run is reported for both (never lost, never a bare line on stderr). A decode's watch is a
*claim* (``watch(..., claim=True)``): another input's GPU step watched meanwhile (the GPU
thread works on input k while input k + 1 decodes) leaves out what appeared during a claim,
since descriptor 2's text comes from the C decoders, and wgpu's warnings, which do belong to
the GPU step, come through the logger, per thread.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager

__all__ = ["captured", "watch", "summarize"]

_state: dict = {}  # "file": the capture file, "saved": the real stderr's descriptor
#: the capture file's byte ranges [start, end) of claiming watches (end None: still running);
#: the last _CLAIMS_KEPT, enough for the watches that can overlap one another
_claims: list[list] = []
_CLAIMS_KEPT = 256
_LOCK = threading.RLock()
_local = threading.local()


class _Collector:
    """Logging handler for the ``wgpu`` logger: records go to the watching thread's list."""

    def __new__(cls):
        import logging

        class Handler(logging.Handler):
            def emit(self, record) -> None:
                sink = getattr(_local, "records", None)
                text = record.getMessage()
                if sink is not None:
                    sink.append(text + "\n")
                else:
                    _state.setdefault("orphans", []).append(text)

        return Handler()


class _Router:
    """``sys.stderr`` during a batch: text written by a thread inside :func:`watch` (C extensions
    such as imagecodecs' libpng warnings write through ``PySys_WriteStderr``) goes to that
    watch; everything else (gputex's own lines) to the real stderr."""

    def __init__(self, real):
        self._real = real

    def write(self, text: str) -> int:
        sink = getattr(_local, "records", None)
        if sink is not None:
            sink.append(text)
            return len(text)
        return self._real.write(text)

    def __getattr__(self, name):
        return getattr(self._real, name)


@contextmanager
def captured():
    """Within this block (process-wide, re-entrant), descriptor 2 is captured; Python's stderr
    still reaches the terminal. Left as it was on exit."""
    import logging
    import tempfile

    with _LOCK:
        _state["depth"] = _state.get("depth", 0) + 1
        first = _state["depth"] == 1
        if first:
            try:
                sys.stderr.flush()
            except (AttributeError, OSError, ValueError):
                pass
            _claims.clear()  # byte ranges of an earlier capture file mean nothing in this one
            saved = os.dup(2)
            tmp = tempfile.TemporaryFile()
            os.dup2(tmp.fileno(), 2)
            try:
                on_fd2 = sys.stderr.fileno() == 2
            except (AttributeError, OSError, ValueError):  # already redirected in Python (a test runner)
                on_fd2 = False
            real = _Router(os.fdopen(os.dup(saved), "w", buffering=1, encoding=getattr(sys.stderr, "encoding", None)
                                     or "utf-8", errors="surrogateescape") if on_fd2 else sys.stderr)
            _state.update(file=tmp, saved=saved, real=real, old_stderr=sys.stderr)
            sys.stderr = real
            _attach_wgpu_log()
    try:
        yield
    finally:
        with _LOCK:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                if "handler" in _state:
                    wgpu_log = logging.getLogger("wgpu")
                    wgpu_log.removeHandler(_state["handler"])
                    wgpu_log.propagate = _state["propagate"]
                real = _state["real"]
                try:
                    real.flush()
                except (OSError, ValueError):
                    pass
                sys.stderr = _state["old_stderr"]
                os.dup2(_state["saved"], 2)
                os.close(_state["saved"])
                if real._real is not _state["old_stderr"]:
                    real._real.close()
                _state["file"].close()
                _state.clear()


def _attach_wgpu_log() -> None:
    """Collect the ``wgpu`` logger's warnings, once wgpu-py has made that logger: creating it
    first (``getLogger``) would break wgpu-py's import, which installs its own logger class
    (and the device is made on another thread, importing wgpu meanwhile)."""
    import logging

    if "handler" in _state or "file" not in _state:
        return
    log = logging.Logger.manager.loggerDict.get("wgpu")
    if not isinstance(log, logging.Logger):
        return
    with _LOCK:
        if "handler" in _state or "file" not in _state:
            return
        handler = _Collector()
        handler.setLevel(logging.WARNING)  # what Python's last-resort handler would have printed
        _state.update(handler=handler, propagate=log.propagate)
        log.addHandler(handler)
        log.propagate = False


def _size() -> int | None:
    f = _state.get("file")
    if f is None:
        return None
    try:
        return os.fstat(f.fileno()).st_size
    except (OSError, ValueError):
        return None


def _unclaimed(start: int, end: int) -> list[tuple[int, int]]:
    """The parts of [start, end) of the capture file no claiming watch covered (or covers)."""
    parts = [(start, end)]
    with _LOCK:
        claims = [(a, end if b is None else b) for a, b in _claims]
    for a, b in claims:
        parts = [piece for s, e in parts
                 for piece in ((s, min(e, a)), (max(s, b), e)) if piece[0] < piece[1]]
    return parts


@contextmanager
def watch(path: str, warnings: list, claim: bool = False):
    """What the C libraries print (and wgpu logs) during this block becomes at most one line
    appended to ``warnings``; nothing happens outside :func:`captured`. ``claim``: a decode,
    whose descriptor-2 text other inputs' unclaimed watches leave out (module docstring)."""
    start = _size()
    if start is None:
        yield
        return
    _attach_wgpu_log()
    records: list = []
    outer = getattr(_local, "records", None)
    _local.records = records
    mine = [start, None]
    if claim:
        with _LOCK:
            _claims.append(mine)
            del _claims[:-_CLAIMS_KEPT]
    try:
        yield
    finally:
        _local.records = outer
        end = _size()
        text = ""
        if end is not None and end > start:
            if claim:
                mine[1] = end
            parts = [(start, end)] if claim else _unclaimed(start, end)
            try:
                text = "".join(os.pread(_state["file"].fileno(), min(e - s, 1 << 16), s).decode("utf-8", "replace")
                               for s, e in parts)
            except (OSError, KeyError, ValueError):
                text = ""
        elif claim:
            mine[1] = start
        line = summarize(path, text.splitlines() + "".join(records).splitlines())
        if line:
            warnings.append(line)


def summarize(path: str, lines: list[str]) -> str | None:
    """``<path>: <first distinct line> (+N more lines)`` or None when there is nothing."""
    lines = [" ".join(ln.split()) for ln in lines if ln.strip()]
    if not lines:
        return None
    more = len(set(lines)) - 1
    return f"{path}: {lines[0]}" + (f" (+{more} more line{'s' * (more > 1)})" if more else "")
