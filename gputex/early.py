"""The batch's codec workers forked from a warm server started at the process's first moment.

A batch's worker processes cannot be forked from the GPU process (forking a process that holds,
or is creating, a GPU device, or runs threads, is unsafe), so :mod:`gputex.workers` spawned
them: each a fresh interpreter importing numpy, the decoders and gputex's host path before its
first decode. On the H200 host (48 x 2048² -> KTX2, ``--jobs 16``, branch h13hybrid) the 12
workers were spawned at 0.23 s, once the CLI had imported and parsed; each then imported for
~70 ms and the first decode began at 0.36 s.

So where the command line looks like a batch (:func:`looks_like_batch`), :mod:`gputex.start`
calls :func:`start` before anything else: a multiprocessing *forkserver* is started (its server
is forked from gputex at that first moment, before any thread or device exists, and runs
multiprocessing's server code: :func:`_forked_in_place`; else a fresh interpreter, fork + exec;
the GPU process never forks once it has threads or a device) and imports
:data:`WORKER_MODULES` while the CLI imports; the batch's pools (:func:`context`) then fork their
workers from it in milliseconds. A wrong guess costs one idle process, stopped at exit; a miss,
and library use, spawn the workers as before. Either way the workers run the same code on the
same inputs: the outputs are the same bytes.

The server is started with SIGINT blocked (:func:`gputex.signals.spawn_shielded`): its
workers inherit that mask as spawned ones do. They inherit the server's environment, not the
command's: the pool hands them the command's (``--threads`` sets ``GPUTEX_THREADS`` after the
server started). :func:`stop` ends the server when the command exits (``atexit``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["WORKER_MODULES", "looks_like_batch", "start", "started", "context", "stop"]

#: What a decode worker imports before its first image, imported once by the server instead:
#: numpy, the decoders, the decode and encode paths, and the host path of ``upload --mips -o``
#: (:mod:`gputex.host_texture`: the C engine, the conversion, the texture-file writers).
WORKER_MODULES = (
    "numpy", "PIL.Image", "PIL.PngImagePlugin", "PIL.JpegImagePlugin", "imagecodecs", "imagecodecs._deflate",
    "imagecodecs._zlib",
    "gputex.workers", "gputex.decode", "gputex.pngdec", "gputex._pngfilter", "gputex.encode", "gputex.png",
    "gputex.chatter", "gputex.trace", "gputex.atomic",
    "gputex.host_texture", "gputex.convert", "gputex.layout", "gputex.upload", "gputex.texfile",
    "gputex.containers.ktx2", "gputex.containers.dds", "gputex.containers.ktx1",
    "gputex.mips.cpu", "gputex.mips.integer", "gputex._mipcpu",
    "gputex.worker_warm",  # (last: the code tables built in the server, for every worker)
)

_CONTEXT: Any = None  # the forkserver context, once its server is started (this process only)
_GLOB = frozenset("*?[")


def _int_after(args: list[str], names: tuple[str, ...]) -> int | None:
    """The last integer value given to one of the options ``names`` (``--jobs 4``, ``--jobs=4``,
    ``-j4``), or None."""
    value = None
    for i, a in enumerate(args):
        for name in names:
            text = None
            if a == name and i + 1 < len(args):
                text = args[i + 1]
            elif a.startswith(name + "=") or (len(name) == 2 and a.startswith(name) and len(a) > 2):
                text = a[len(name) + 1:] if a.startswith(name + "=") else a[2:]
            if text is not None:
                try:
                    value = int(text)
                except ValueError:
                    pass
    return value


def looks_like_batch(argv: list[str], cpus: int | None = None) -> bool:
    """Whether the command line (without the program name) looks like a batch that starts codec
    worker processes: ``upload ... -o`` or ``capture``, with several inputs before the first
    option, or a glob, a folder or an ``@list``; workers on (``--workers``, ``GPUTEX_WORKERS``,
    else at least 3 ``--jobs``, by default the cores, or 2 for ``upload --mips``; not under 6
    ``--threads``). A cheap guess
    on the raw words: a wrong one costs an idle process, never a different result."""
    if argv[:1] not in (["upload"], ["capture"]) or {"--help", "-h"} & set(argv):
        return False
    from .portable import disabled

    if disabled("forkserver"):
        return False
    args = argv[1:]
    if argv[0] == "upload" and not any(a in ("-o", "--out") or a.startswith(("--out=", "-o")) for a in args):
        return False  # no texture files: an upload starts no workers
    inputs = []
    for a in args:
        if a.startswith("-"):
            break
        inputs.append(a)
    if len(inputs) < 2 and not any(_GLOB & set(a) or a.startswith("@") or os.path.isdir(a) for a in inputs):
        return False
    workers = _int_after(args, ("--workers",))
    if workers is None:
        from .devflags import int_flag

        workers = int_flag("GPUTEX_WORKERS")
    if workers is not None:
        return workers > 0
    threads = _int_after(args, ("--threads",))
    if threads is not None and threads < 6:
        return False  # codecs in threads (gputex.caps.cap_jobs)
    jobs = _int_after(args, ("--jobs", "-j"))
    jobs = jobs if jobs is not None else (cpus or os.cpu_count() or 1)
    # (``upload --mips -o DIR`` at 2 jobs: two decode processes where the split makes its device
    # on demand, :func:`gputex.run.run`)
    return jobs >= 3 or jobs == 2 and argv[0] == "upload" and "--mips" in args


def host_likely(argv: list[str]) -> bool:
    """Whether an ``upload`` command line (without the program name) looks like one whose files
    the host engine makes with no device (:class:`gputex.run.DeviceOnDemand`, the inline split):
    ``--mips`` and ``-o``, no ``--verify``, ``--adapter`` or ``--backend`` (nor their variables),
    ``GPUTEX_SPLIT_DEVICE`` not ``start``, ``GPUTEX_MIPS_ENGINE`` not ``shader``, and inputs before
    the first option that are PNGs the host engine takes with no device
    (:func:`gputex.warmup.png_wants_device`: 8-bit data, at most 2^28 texels; the first 12).
    Then the CLI does not begin wgpu's import and the adapter list at once
    (:func:`gputex.cli._prestart`): 2-core lavapipe machine, one 2048² PNG -> KTX2, 0.30-0.32 s
    without against 0.40-0.43 s with. A cheap guess: a wrong one costs that overlap where a
    device is wanted after all, never a different result."""
    if argv[:1] != ["upload"] or "--mips" not in argv or {"--help", "-h"} & set(argv):
        return False
    args = argv[1:]
    if not any(a in ("-o", "--out") or a.startswith(("--out=", "-o")) for a in args):
        return False
    if any(a.startswith(("--verify", "--adapter", "--backend")) for a in args):
        return False
    env = os.environ
    if env.get("GPUTEX_ADAPTER", "").strip() or env.get("GPUTEX_BACKEND", "").strip():
        return False
    if env.get("GPUTEX_SPLIT_DEVICE", "").strip().lower() == "start" or \
            env.get("GPUTEX_MIPS_ENGINE", "").strip().lower() == "shader":
        return False
    inputs = []
    for a in args:
        if a.startswith("-"):
            break
        inputs.append(a)
    if not inputs:
        return False
    from .warmup import png_wants_device

    return not any(png_wants_device(path) is not False for path in inputs[:12])


def started() -> bool:
    """Whether :func:`start` started the fork server in this process (the command line looked like a batch)."""
    return _CONTEXT is not None


def start(argv: list[str]) -> bool:
    """Start the workers' fork server where ``argv`` looks like a batch (:func:`looks_like_batch`);
    whether it started. Any failure leaves the workers to be spawned as before."""
    global _CONTEXT
    if _CONTEXT is not None or not looks_like_batch(argv):
        return False
    try:
        import multiprocessing
        import time
        from multiprocessing import forkserver

        from .signals import spawn_shielded

        t0 = time.time()
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(WORKER_MODULES))
        with spawn_shielded():  # the server, and every worker it forks, begins with SIGINT blocked
            with _forked_in_place() as forked:
                forkserver.ensure_running()
    except Exception:  # noqa: BLE001 - no server: the workers are spawned
        return False
    import atexit

    _CONTEXT = ctx
    atexit.register(stop)
    from .trace import enabled, mark

    if enabled():
        mark("forkserver", t0, server=_server_pid(), forked=bool(forked))
    return True


@contextmanager
def _forked_in_place() -> Iterator[list]:
    """Within this block, multiprocessing starts its fork server by forking this process and
    running the server's command in the child, not by fork + exec of a fresh interpreter: the
    server skips the interpreter's start and the imports this process already made (``gputex``,
    ``multiprocessing``), ~20 ms on the 2-core machine (the first task of a pool done 0.189 ->
    0.169 s after the start). Safe here only: this process has no other thread and no device
    yet (:func:`start` runs first of all). With another thread alive (Python's or a native
    one), wgpu imported, or ``GPUTEX_PORTABLE=serverfork``, the server is exec'd as before.
    The child keeps only the descriptors the exec'd server would get (the listener, the
    "alive" pipe's read end, 0-2) and ends with ``os._exit`` (none of this process's exit
    handlers). The server runs the same code either way, so the workers it forks are the same;
    the block yields a list that holds True once the server was forked here."""
    import sys
    import threading
    from multiprocessing import forkserver, resource_tracker, util

    from .portable import disabled

    forked: list = []  # True once the server is forked here (what the block yields)
    if (disabled("serverfork") or not os.path.isdir("/proc/self/task") or threading.active_count() > 1
            or len(os.listdir("/proc/self/task")) > 1 or "wgpu" in sys.modules):  # (a native thread, a device)
        yield forked
        return
    resource_tracker.ensure_running()  # (spawned as before: only the server is forked in place)
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    spawnv = util.spawnv_passfds

    def fork_passfds(path: Any, args: Any, passfds: Any) -> int:
        if args[-2:-1] != ["-c"]:
            return spawnv(path, args, passfds)
        pid = os.fork()
        if pid:
            forked.append(True)
            return pid
        code = 1
        try:  # the child: what ``python -c CMD`` would run, with only ``passfds`` open
            keep = {0, 1, 2, *passfds}
            for name in os.listdir("/proc/self/fd"):
                if int(name) not in keep:
                    try:
                        os.close(int(name))
                    except OSError:  # (the listing's own descriptor, closed by now)
                        pass
            # the parent holds the fork server's lock while it starts the server (this fork):
            # the copy here would stay locked in the server and every worker it forks
            forkserver._forkserver._lock = threading.Lock()  # type: ignore[attr-defined]
            exec(compile(args[-1], "<forkserver>", "exec"), {"__name__": "__mp_forkserver__"})
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        except BaseException:  # noqa: BLE001 - said on stderr as the exec'd server's would be
            try:
                import traceback

                traceback.print_exc()
            except BaseException:  # noqa: BLE001
                pass
        os._exit(code)

    util.spawnv_passfds = fork_passfds
    try:
        yield forked
    finally:
        util.spawnv_passfds = spawnv


def context():
    """The forkserver context whose server :func:`start` started (None where none was)."""
    return _CONTEXT


def _server_pid() -> int | None:
    from multiprocessing import forkserver

    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]  # no public way to ask
    return pid if isinstance(pid, int) else None


def stop() -> None:
    """End the server :func:`start` started (at exit: the batch's pools are shut down by then;
    a worker still running ends when this process does, :func:`gputex.workers._init`'s watch)."""
    global _CONTEXT
    if _CONTEXT is None:
        return
    _CONTEXT = None
    import signal

    pid = _server_pid()
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGTERM)  # its default action: no interpreter teardown to wait for
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass
