"""Signals: keep a terminal's Ctrl-C away from codec workers, and stop a batch cleanly.

A terminal sends Ctrl-C (SIGINT) to the whole process group. Worker processes ignore it once
their initializer has run, but a worker still starting (interpreter start-up, imports: the
first second of a batch) would die with a KeyboardInterrupt traceback each (11-157 lines of
stderr were seen). Signal masks are inherited through fork and exec, so processes are spawned
with SIGINT blocked in the spawning thread (:func:`spawn_shielded`): the worker never sees it,
and a Ctrl-C that arrives meanwhile stays pending for gputex itself, delivered when the mask is
restored. Where ``pthread_sigmask`` does not exist (Windows), or with
``GPUTEX_PORTABLE=sigmask`` (:mod:`gputex.portable`), the workers' initializer ignoring SIGINT
is what remains.

SIGTERM (``kill``, ``timeout``, ``docker stop``) stops a batch like Ctrl-C does: between inputs,
every output written complete, a summary line, exit code 143. It is not blocked for workers:
a pool ends broken workers with SIGTERM.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

from .portable import disabled

__all__ = ["spawn_shielded", "STOP_SIGNALS", "exit_code"]

#: Signals that stop a batch between inputs (a second one of them stops at once).
STOP_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s)


def exit_code(signum: int) -> int:
    """The shell's code for a run ended by ``signum``: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + int(signum)


@contextmanager
def spawn_shielded():
    """Within this block, processes started by this thread begin with SIGINT blocked; a SIGINT
    arriving meanwhile is delivered to gputex when the block ends."""
    if disabled("sigmask") or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    try:  # multiprocessing's resource tracker, started on first use, *unblocks* SIGINT after
        from multiprocessing import resource_tracker  # spawning itself: start it before blocking

        resource_tracker.ensure_running()
    except Exception:
        pass
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
