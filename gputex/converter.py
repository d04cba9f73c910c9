"""A long-lived converter: one device and warm codec pools for many requests.

``gputex capture``/``upload`` pay ~1-1.5 s per process for the device, wgpu's C types and the
codec workers; a build that calls them per file spends most of its time there. A
:class:`Converter` pays it once::

    with gputex.Converter(threads=8) as conv:
        for r in conv.convert(["a.png", "b.png"], "capture", out="out/", mips=True, level="all"):
            print(r.source, r.ok, r.outputs)

Each :meth:`Converter.convert` call is one batch of the CLI's own machinery
(:func:`gputex.batch.run_overlapped` with the pipeline's stages: decodes and encodes overlapped
in the pool, GPU steps in input order), so its outputs are the CLI's, byte for byte. Calls
may come from several threads at once: their GPU steps take turns on the one device (a lock
per image), their codec work shares the pools. Settings are the CLI's long options with
underscores (:mod:`gputex.settings`). Inputs may be paths (globs, folders with
``recursive=True``, ``@list`` files) or bytes (``(name, data)`` pairs or bare ``bytes``);
``out="-"`` returns the outputs in memory (``result.data``: name -> bytes) instead of files.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from .errors import GputexError, OutputError
from .pipeline import Result

__all__ = ["Converter", "ConvertResult", "MEMORY_OUT"]

#: ``out`` value that returns outputs in memory (``ConvertResult.data``).
MEMORY_OUT = "-"


@dataclass
class ConvertResult(Result):
    """A :class:`gputex.pipeline.Result`, plus the outputs' bytes with ``out="-"`` and the
    cache key (:func:`gputex.keys.input_key`) when asked for."""

    data: dict[str, bytes] | None = field(default=None, repr=False)
    key: str | None = None
    worker: str | None = None  # distributed runs: host:pid of the process that made it

    def as_dict(self) -> dict[str, Any]:
        d = super().as_dict()
        d.pop("data", None)
        return d


def _plan(threads: int, processes: bool | None) -> tuple[int, int]:
    """(jobs, worker processes per kind) for a cap of ``threads`` codec tasks at once.

    Worker processes come in two pools (decode, encode) fed by ``2 * jobs`` threads, so with
    processes ``jobs = threads // 2``; they pay from 3 jobs up (see :mod:`gputex.workers`)."""
    if processes is None:
        import multiprocessing

        processes = threads >= 6 and not multiprocessing.current_process().daemon
    from .devflags import int_flag

    env = int_flag("GPUTEX_WORKERS")
    if env is not None:
        processes = env > 0
    if processes and threads >= 2:
        jobs = threads // 2
        return jobs, jobs
    return threads, 0


class Converter:
    """One adapter + device and the codec pools, kept warm for many :meth:`convert` calls.

    Parameters
    ----------
    adapter, backend
        As the CLI's ``--adapter`` / ``--backend``.
    threads
        Cap on every pool (codec threads or processes, staging copies, PNG deflate, lavapipe's
        threads); default: the cores.
    memory
        MiB of decoded images in flight at once (:class:`gputex.caps.MemoryGate`); default none.
    processes
        Run codecs in worker processes (default: from 6 threads up, not inside a daemon process).
    """

    def __init__(self, *, adapter: str | None = None, backend: str | None = None, threads: int | None = None,
                 memory: int | None = None, processes: bool | None = None):
        from .caps import MemoryGate

        self.adapter, self.backend = adapter, backend
        self.threads = max(1, int(threads or os.cpu_count() or 1))
        self.jobs, self.workers = _plan(self.threads, processes)
        self.gate = MemoryGate(memory) if memory else None
        self.memory = memory
        self._gpu = threading.Lock()
        self._starting = threading.Lock()
        # codec tasks running at once, over every concurrent convert() call (each call's batch
        # has a pool of its own): the thread cap holds for the Converter, not per call
        self._codecs = threading.BoundedSemaphore(2 * self.jobs if self.workers else self.jobs)
        self._stack: ExitStack | None = None
        self._session_future = None
        self._closed = False

    # -- lifetime ---------------------------------------------------------------------------
    def start(self) -> Converter:
        """Start the worker pools and make the device (on a thread of its own); idempotent."""
        self._started()
        return self

    def _started(self):
        """The session's Future, the pools and the device started first where they are not (taken under
        the lock close() drops it with)."""
        with self._starting:
            if self._closed:
                raise GputexError("this Converter is closed")
            if self._stack is None:
                self._start()
            return self._session_future

    def _start(self) -> None:
        from .caps import set_thread_cap
        from .device import session_soon
        from .workers import codec_workers

        self._env = {k: os.environ.get(k) for k in ("GPUTEX_THREADS", "LP_NUM_THREADS")}
        if self.threads != (os.cpu_count() or 1) or "GPUTEX_THREADS" in os.environ:
            set_thread_cap(self.threads)  # until close(): the process's other work is not capped after
        self._stack = ExitStack()
        self._stack.enter_context(codec_workers(self.workers))
        self._session_future = session_soon(self.adapter, self.backend)

    def __enter__(self) -> Converter:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the pools (work in flight finishes first) and let the device go (with the session, once
        no result still holds it)."""
        self._closed = True
        if self._stack is not None:
            self._stack.close()
            self._stack = None
            with self._starting:  # (after the pools: work in flight may still ask for the session)
                self._session_future = None
            for k, v in self._env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    @property
    def session(self):
        """The :class:`gputex.Session` (waits for the device; raises NoAdapterError)."""
        return self._started().result()

    # -- work -------------------------------------------------------------------------------
    def convert(self, inputs: Iterable[Any], command: str = "capture", out: str | None = None,
                **settings: Any) -> Iterator[ConvertResult]:
        """Run ``command`` (``"capture"`` or ``"upload"``) over ``inputs``; one result per input
        (one per texture with ``array``/``cube``/``volume``), in input order, as each finishes.

        Bad settings raise :class:`~gputex.settings.SettingsError` here, before anything runs;
        a bad input is a result with ``ok=False``. ``out``: capture's output folder, upload's
        ``X.ktx2``/``X.dds`` or folder (None: verify only), or ``"-"``: outputs in memory.
        """
        from .settings import make_options

        if self._closed:
            raise GputexError("this Converter is closed")
        key = settings.pop("key", False)
        inputs = [inputs] if isinstance(inputs, (str, bytes, tuple)) else list(inputs)
        if command == "capture" and out is None:
            raise OutputError("capture needs out: a folder, or '-' for outputs in memory")
        make_options(command, settings, out=_target(command, out, settings, "memory"))  # checked now
        # the work (and any temporary folder) starts with the iteration: an iterator dropped
        # unstarted leaves nothing behind
        return self._results(inputs, command, out, settings, key)

    def _results(self, inputs, command, out, settings, key):
        from .settings import make_options

        memory_out = out == MEMORY_OUT
        tmp = tempfile.mkdtemp(prefix=".gputex-conv-") if memory_out or _has_bytes(inputs) else None
        q: queue.Queue = queue.Queue()
        stop = threading.Event()
        done = object()
        worker = None
        try:
            target = _target(command, out, settings, tmp)
            opts = make_options(command, settings, out=target)
            paths, names = _materialise(inputs, tmp)
            key_of = self._key_function(paths, command, settings, out) if key else None

            def emit(result) -> None:
                if stop.is_set():
                    raise _Stopped
                q.put(result)

            def run() -> None:
                try:
                    self._run(paths, command, opts, target, settings, emit)
                except _Stopped:
                    pass
                except BaseException as e:  # handed to the caller's thread
                    q.put(_Failure(e))
                finally:
                    q.put(done)

            worker = threading.Thread(target=run, name="gputex-convert", daemon=True)
            worker.start()
            while True:
                got = q.get()
                if got is done:
                    break
                if isinstance(got, _Failure):
                    raise got.error
                yield self._finish(got, names, memory_out, target, key_of)
        finally:
            stop.set()
            if worker is not None:
                worker.join()
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def keys(self, inputs: Iterable[str], command: str = "capture", out: str | None = None,
             **settings: Any) -> list[tuple[str, str]]:
        """``(source, cache key)`` per input path (one pair for ``array``/``cube``/``volume``),
        without converting: what ``gputex key`` prints, with this Converter's adapter."""
        from .batch import expand_inputs
        from .errors import InputError
        from .settings import make_options

        make_options(command, settings, out=_target(command, out, settings, "memory"))
        items = expand_inputs([inputs] if isinstance(inputs, str) else list(inputs),
                              bool(settings.get("recursive")), stdin=[])
        for item in items:
            if item.error or not os.path.isfile(item.path):
                raise InputError(item.error or f"{item.path}: no such file")
        paths = [i.path for i in items]
        key_of = self._key_function(paths, command, settings, out)
        if any(settings.get(k) for k in ("array", "cube", "volume")):
            return [(", ".join(paths), key_of(None))]
        return [(p, key_of(p)) for p in paths]

    def _key_function(self, paths: list[str], command: str, settings: dict, out):
        """``source path -> cache key`` for this call's results (one key over all inputs for an
        assembled texture)."""
        from .keys import cache_key, file_sha256, input_key

        adapter = self.session.info
        if any(settings.get(k) for k in ("array", "cube", "volume")):
            return lambda _: cache_key([file_sha256(p) for p in paths], command, settings, out, adapter)
        return lambda path: input_key(path, command, settings, out, adapter)

    def _finish(self, result: Result, names: dict, memory_out: bool, target, key_of) -> ConvertResult:
        r = ConvertResult(**{k: getattr(result, k) for k in Result.__dataclass_fields__})
        path = r.source
        if path in names:  # an input given as bytes: report it by its name
            r.source = names[path]
            r.error = r.error.replace(path, r.source) if r.error else r.error
            r.warnings = [w.replace(path, r.source) for w in r.warnings]
        if memory_out:
            data: dict[str, bytes] = {}
            base = target if os.path.isdir(target) else os.path.dirname(target)
            for p in r.outputs:
                with open(p, "rb") as f:
                    data[os.path.relpath(p, base)] = f.read()
                os.unlink(p)
            r.data, r.outputs = data, list(data)
        if key_of is not None and r.ok:
            r.key = key_of(path)
        return r

    def _run(self, paths: list[str], command: str, opts, target, settings: dict, emit) -> None:
        from .assembly import assemble_file
        from .atomic import sweep_stale
        from .batch import expand_inputs, run_overlapped
        from .capture_stage import capture_encode_stage, capture_gpu_stage
        from .outputs import OutputNames
        from .pipeline import decode_stage
        from .upload_stage import upload_gpu_stage

        session = self.session
        items = expand_inputs(paths, bool(settings.get("recursive")), stdin=[])
        if self.gate is not None:
            opts.budget = min(opts.budget, max(1 << 20, self.gate.cap // 4))
        kind = next((k for k in ("array", "cube", "volume") if settings.get(k)), None)
        single = command == "upload" and target is not None and target.lower().endswith((".ktx2", ".dds"))
        folder = target if not single else (os.path.dirname(target) or ".")
        if target is not None:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as e:
                raise OutputError(f"{folder}: cannot create output folder ({e.strerror or e})") from None
            sweep_stale(folder)
        if kind is not None:
            bad = [i for i in items if i.error]
            if bad:
                emit(Result(source=bad[0].path, ok=False, error=bad[0].error))
                return
            if not single:
                raise OutputError(f"{kind} makes one texture: out must be a .ktx2 or .dds file")
            with self._gpu:
                emit(assemble_file(session, [i.path for i in items], kind, opts))
            return
        if single and len(items) > 1:
            raise OutputError(f"{target}: one output file for {len(items)} inputs; give out a folder")
        names = OutputNames(target, [i.path for i in items]) if target is not None and not single else None
        if command == "capture":
            stage, encode = capture_gpu_stage(session, names, opts), capture_encode_stage(opts)
        else:
            stage, encode = upload_gpu_stage(session, opts, names), None

        def gpu(item, data, result):
            with self._gpu:  # one device: calls from several threads take turns, image by image
                return stage(item, data, result)

        run_overlapped(items, self.jobs, self._held(decode_stage(opts, names)), gpu,
                       self._held(encode) if encode is not None else None, emit, gate=self.gate)

    def _held(self, fn):
        """``fn`` run under the Converter-wide codec semaphore."""
        def run(*args):
            with self._codecs:
                return fn(*args)
        return run


class _Stopped(Exception):
    """The caller dropped the iterator: stop the batch between inputs."""


@dataclass
class _Failure:
    error: BaseException


def _target(command: str, out: str | None, settings: dict, tmp: str | None) -> str | None:
    """Where outputs go: ``out``, or with ``out="-"`` a folder (a file for an assembled texture)
    in the call's temporary folder ``tmp``."""
    if out != MEMORY_OUT:
        return out
    target = os.path.join(tmp or "", "out")
    if command == "upload" and any(settings.get(k) for k in ("array", "cube", "volume")):
        target = os.path.join(target, "texture." + (settings.get("container") or "ktx2"))
    return target


def _has_bytes(inputs) -> bool:
    return not isinstance(inputs, (str, bytes)) and any(not isinstance(i, str) for i in inputs)


def _materialise(inputs, tmp: str | None) -> tuple[list[str], dict[str, str]]:
    """Paths for the inputs: bytes (``(name, data)`` or bare) are written to files in ``tmp``
    under their name's basename (bare bytes: ``input<N>``). Returns (paths, path -> name)."""
    if isinstance(inputs, (str, bytes)):
        inputs = [inputs]
    paths: list[str] = []
    names: dict[str, str] = {}
    for n, x in enumerate(inputs):
        if isinstance(x, str):
            paths.append(x)
            continue
        name, data = (x if isinstance(x, tuple) else (f"input{n}", x))
        if not isinstance(data, (bytes, bytearray, memoryview)) or not isinstance(name, str):
            raise GputexError(f"input {n}: not a path, bytes, or a (name, bytes) pair")
        sub = os.path.join(tmp, "in", str(n))  # a folder each: names may repeat
        os.makedirs(sub)
        path = os.path.join(sub, os.path.basename(name) or f"input{n}")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
        names[path] = name
    return paths, names
