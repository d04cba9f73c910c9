"""Linux-only mechanisms and their portable fallbacks, and the switch that turns them off.

gputex uses six mechanisms that only some systems have, each with a fallback that gives
the same outputs and file modes:

===========  =======================================  ==========================================
name         mechanism                                fallback
===========  =======================================  ==========================================
shm          pixels between processes in ``/dev/shm``  files in the temp folder (also when
                                                       ``/dev/shm`` is small or full)
otmpfile     outputs written into an unnamed           a named ``.gputex-<pid>-*.part`` renamed
             ``O_TMPFILE``, linked when complete       over the output (mode set from the umask)
populate     ``MAP_POPULATE`` when mapping shared      plain ``mmap`` (pages faulted on touch)
             blocks
sigmask      workers spawned with SIGINT blocked       the workers' initializer ignores SIGINT
             (``pthread_sigmask``)
forkserver   a batch's workers forked from a server    workers spawned when the batch begins
             started at the process's first moment
             (:mod:`gputex.early`)
serverfork   that server forked from gputex itself     the server started as a fresh interpreter
             (no second interpreter start)             (multiprocessing's fork + exec)
===========  =======================================  ==========================================

``GPUTEX_PORTABLE`` (a developer and test switch, :mod:`gputex.devflags`) lists mechanisms to turn off,
comma-separated, or ``all``: the tests run the fallbacks on Linux this way.
"""

from __future__ import annotations

__all__ = ["disabled", "MECHANISMS"]

MECHANISMS = ("shm", "otmpfile", "populate", "sigmask", "forkserver", "serverfork")


def disabled(name: str) -> bool:
    """True when ``GPUTEX_PORTABLE`` turns mechanism ``name`` off (read at each call: a test
    may set it; worker processes inherit it)."""
    from .devflags import flag

    value = flag("GPUTEX_PORTABLE") or ""
    if not value:
        return False
    names = {v.strip() for v in value.split(",")}
    return "all" in names or name in names
