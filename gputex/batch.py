"""Batch: expand inputs, and run decode / GPU / encode overlapped over many files.

Inputs: files, globs (quoted, expanded here, ``**`` included), directories with
``recursive`` (their tree is kept under the output folder), ``@listfile`` (one path a
line), and ``-`` (paths on stdin).

Overlap: decodes and encodes share one pool of ``jobs`` threads (decodes run ahead, at
most ``jobs + 1`` decoded images wait at any time; at most ``2 * jobs`` encodes are
pending), and the GPU steps run in input order on the calling thread with the one device.
Pillow, imagecodecs and fpng release the GIL while they work, so threads keep the cores
busy while memory stays bounded however many files come in; the GIL switch interval is
shortened during the run so the in-order GPU thread is not starved by the workers.
Results come back in input order.
"""

from __future__ import annotations

import glob
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Item", "expand_inputs", "run_overlapped", "IMAGE_SUFFIXES", "GPU_GROUP"]

#: At most this many decoded inputs go through one in-order step when the GPU step can take
#: several (``gpu.many``: ``upload -o``'s, one read-back map for them): those already decoded
#: when the step begins, in input order (or completion order, ``any_order``). It bounds no
#: memory of its own (they are decoded already; their read-backs share the ring's bound,
#: :data:`gputex.gpu_batch.RING_BYTES`: once the ring has no buffer free, the step's later inputs
#: are read back alone rather than wait for buffers only its own members give back), only how
#: long ``stop()`` may go unasked: as many as the GPU's slots (:data:`gputex.upload_stage.GPU_SLOTS`).
#: ``GPUTEX_GPU_GROUP`` overrides it.
#: Between the inputs of one step the schedule goes on feeding the decodes (H200 host: a first
#: step of 8 inputs that fed none took 0.38-0.45 s, the first chains' pipelines included, and
#: left the decode workers idle meanwhile: the batch 0.74x main).
GPU_GROUP = 8


def _group_size() -> int:
    from .devflags import int_flag

    n = int_flag("GPUTEX_GPU_GROUP")
    return GPU_GROUP if n is None else max(1, n)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tga", ".tif", ".tiff", ".webp", ".gif", ".ppm",
                  ".pgm", ".pbm", ".pfm", ".ico", ".dds", ".ktx", ".ktx2")


@dataclass(frozen=True)
class Item:
    """One input: its path, the sub-folder of the output folder it goes to, or an error."""

    path: str
    subdir: str = ""
    error: str | None = None


def _lines(stream) -> list[str]:
    """Paths one a line. Bytes are decoded as file names are (UTF-8, other bytes kept as
    surrogates: ``os.fsdecode``), so a list of names that are not UTF-8 still names them."""
    data = getattr(stream, "buffer", stream).read()
    text = os.fsdecode(data) if isinstance(data, bytes) else data
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def expand_inputs(args: Iterable[str], recursive: bool = False, stdin=None) -> list[Item]:
    """Turn command-line inputs into items, in order; problems become items with ``error``."""
    items: list[Item] = []
    for arg in args:
        if arg == "-":
            items += expand_inputs(_lines(stdin or sys.stdin), recursive)
        elif arg.startswith("@") and len(arg) > 1:
            try:
                with open(arg[1:], "rb") as f:
                    items += expand_inputs(_lines(f), recursive)
            except OSError as e:
                items.append(Item(arg, error=f"{arg[1:]}: cannot read list file ({e.strerror or e})"))
        elif glob.has_magic(arg) and not os.path.exists(arg):
            matches = _glob(arg)
            if not matches:
                items.append(Item(arg, error=f"{arg}: no files match"))
            items += [Item(m) for m in matches if not os.path.isdir(m)]
        elif os.path.isdir(arg):
            if not recursive:
                items.append(Item(arg, error=f"{arg}: is a directory (add -r to take the images in it)"))
                continue
            for root, _dirs, files in _walk_once(arg):
                rel = os.path.relpath(root, arg)
                for name in sorted(files):
                    if name.lower().endswith(IMAGE_SUFFIXES):
                        items.append(Item(os.path.join(root, name), "" if rel == "." else rel))
        else:
            items.append(Item(arg))
    return items


def _walk_once(top: str):
    """``os.walk`` following links to folders, but into each real folder once (a ``link -> .``
    inside the tree would otherwise repeat it, two such links without end); sorted."""
    seen: set = set()
    for root, dirs, files in os.walk(top, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs.sort()
        yield root, dirs, files


def _glob(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, sorted, except that ``**`` visits each real folder
    once (Python's follows every link to a folder, so a ``link -> .`` loops)."""
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    import re

    parts = pattern.split("/")
    i = next(k for k, part in enumerate(parts) if glob.has_magic(part))
    base = "/".join(parts[:i]) or ("/" if pattern.startswith("/") else ".")
    regex = re.compile(_translate("/".join(parts[i:])))
    out = []
    for root, dirs, files in _walk_once(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # like glob: wildcards skip hidden names
        rel = os.path.relpath(root, base)
        for name in files:
            if name.startswith("."):
                continue
            sub = name if rel == "." else f"{rel}/{name}"
            if regex.fullmatch(sub):
                out.append(os.path.join(root, name) if parts[:i] else (sub if base == "." else os.path.join(base, sub)))
    return sorted(out)


def _translate(pattern: str) -> str:
    """A glob pattern (``**`` any number of folders, ``*``, ``?``, ``[...]`` within one name) as a regex."""
    import re

    out, i, n = [], 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            j = pattern.index("]", i + 2)
            body = pattern[i + 1: j]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def run_overlapped(items: list[Item], jobs: int, decode: Callable[[Item], tuple[Any, Any]],
                   gpu: Callable[[Item, Any, Any], Any] | None, encode: Callable[[Item, Any, Any], None] | None,
                   emit: Callable[[Any], None], start: Callable[[], Callable] | None = None,
                   stop: Callable[[], bool] | None = None, gate=None, workers: int | None = None,
                   any_order: bool = False, begin: Callable[[], Any] | None = None, later: Any = None) -> None:
    """Run ``decode`` (pool) -> ``gpu`` (this thread, in order) -> ``encode`` (pool) over items.

    ``decode(item) -> (result, data_or_None)``; ``gpu(item, data, result) -> payload_or_None``;
    ``encode(item, payload, result)``. Each must record its own errors in ``result``. Where
    ``gpu`` has a ``many`` attribute (``many([(item, data, result), ...], between=f) -> [payload,
    ...]``, calling ``f()`` after each input), the inputs already decoded when a step begins go
    through it together, up to :data:`GPU_GROUP` of them.
    ``emit(result)`` is called once per item, in input order. ``start() -> gpu``, if given,
    runs on this thread once the first decodes are submitted (it makes the device: ~0.35 s on
    the H200 host, ~0.7 s on lavapipe, during which the pool already decodes). ``stop()``,
    if given, is asked before each input's GPU step (each ``many`` step's): once true no further input starts, and
    those already past the GPU step are encoded and emitted (decodes in flight are dropped).
    ``gate``: a :class:`~gputex.caps.MemoryGate` holding the decoded images in flight to its cap.
    ``workers``: codec worker processes per kind (None: :func:`gputex.workers.worker_count`).
    ``any_order``: the GPU steps take the decoded inputs as they come (the first one done in
    input order among those done), not in input order: for ``upload -o``'s split between the
    GPU and the decode workers (:class:`gputex.upload_stage.HostSplit`), where a worker that
    makes an input's chain itself takes longer than the decodes after it; results are still
    emitted in input order (decoded inputs holding one of the GPU's slots may wait beyond the
    ``jobs + 1`` decodes in flight; the others count against them). ``begin()``, if given, runs
    on this thread right after the first decodes are submitted (before ``start``); what it
    returns, if not None, is the Future of the device that ``start`` waits for (inputs that
    need no GPU step are taken meanwhile; :func:`gputex.run.run` makes the device there).
    ``later`` (``any_order`` only; :class:`gputex.run.DeviceOnDemand`): the device is made when
    it is wanted, not by ``begin``: ``later.start(why)`` returns its Future once a decoded input
    needs the GPU step or ``later.due(results finished, inputs left)`` says so; ``start`` is
    called once that Future is done, and results are emitted meanwhile.
    Start-up (output folders, trace, the device on its own thread) is :func:`gputex.run.run`'s.
    """
    from concurrent.futures import ThreadPoolExecutor

    from .workers import codec_workers, sweep_shared, worker_count

    sweep_shared()  # shared-memory files of an earlier batch that was killed (any --jobs)
    jobs = max(1, min(jobs, len(items)))  # no more threads (or worker processes) than inputs
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, 0.0005))
    try:
        # a batch that encodes runs its codecs in worker processes (see workers.py); the
        # pool's threads then only wait on them, so there are enough for both kinds at once
        if workers is None or encode is None:
            workers = worker_count(jobs, len(items)) if encode is not None else 0
        from .chatter import captured

        with captured(), codec_workers(workers), \
                ThreadPoolExecutor(2 * jobs if workers else jobs, thread_name_prefix="gputex-codec") as pool:
            lane = gate.lane() if gate is not None else None
            try:
                if any_order:
                    _any_order(items, jobs, pool, decode, gpu, encode, emit, start, stop, lane, begin, later)
                else:
                    _overlap(items, jobs, pool, decode, gpu, encode, emit, start, stop, lane, begin)
            finally:
                if lane is not None:
                    lane.close()
    finally:
        sys.setswitchinterval(switch)


def _overlap(items, jobs, pool, decode, gpu, encode, emit, start, stop=None, lane=None, begin=None) -> None:
    from .trace import profiled, span

    todo = iter(items)
    decoding: deque = deque()
    encoding: deque = deque()

    held: list = []  # the next item, while the memory gate holds it back

    def feed(busy: bool = False) -> None:
        while len(decoding) < jobs + 1:
            item = held.pop() if held else next(todo, None)
            if item is None:
                return
            if lane is not None and not lane.admit(item, busy or bool(decoding or encoding)):
                held.append(item)
                return
            decoding.append((item, pool.submit(decode, item)))

    def drain(limit: int) -> None:
        while encoding and (encoding[0][1] is None or encoding[0][1].done() or len(encoding) > limit):
            result, fut = encoding.popleft()
            if fut is not None:
                fut.result()
            if lane is not None:
                lane.done()
            emit(result)

    feed()
    if begin is not None:
        begin()
    if start is not None:
        gpu = start()
    group = _group_size()
    with profiled():  # GPUTEX_PROFILE: where the in-order thread's time goes
        while (decoding or held) and not (stop and stop()):
            if not decoding:  # the gate holds the next input back: finish what is in flight first
                drain(0)
                feed()
                continue
            item, fut = decoding.popleft()
            taken = [(item, *fut.result())]
            many = getattr(gpu, "many", None)
            while many is not None and decoding and len(taken) < group and decoding[0][1].done():
                item, fut = decoding.popleft()  # decoded already: the same step takes it
                taken.append((item, *fut.result()))
            feed(busy=True)
            for (item, result, _), payload in zip(taken, _steps(gpu, many, taken, span, lambda: feed(busy=True))):
                job = pool.submit(encode, item, payload, result) if payload is not None and encode else None
                encoding.append((result, job))
            del taken
            drain(2 * jobs)
    for _, fut in decoding:  # stopped: decodes not started yet are not started at all
        fut.cancel()
    drain(0)


def _steps(gpu, many, taken: list, span, between) -> list:
    """The GPU steps of ``taken`` (``[(item, result, data)]``): one ``many`` call for those with
    data where the step takes several (``between()`` after each input: the decodes are fed),
    else one ``gpu`` call each; None for those without."""
    todo = [k for k, (_, _, data) in enumerate(taken) if data is not None]
    out: list = [None] * len(taken)
    if many is not None and todo:
        entries = [(taken[k][0], taken[k][2], taken[k][1]) for k in todo]
        for k, payload in zip(todo, many(entries, between=between)):
            out[k] = payload
        return out
    for k in todo:
        item, result, data = taken[k]
        with span("gpu", path=item.path):
            out[k] = gpu(item, data, result)
    return out


def _any_order(items, jobs, pool, decode, gpu, encode, emit, start, stop=None, lane=None, begin=None,
               later=None) -> None:
    """:func:`_overlap` with the GPU steps taken as the decodes finish (see ``any_order`` of
    :func:`run_overlapped`); emitted in input order. An input that comes back with nothing for
    the GPU (a decode worker wrote its file) leaves the window of decodes in flight at once, also
    while the device is being made (the Future ``begin()`` returns), so the workers never wait for it.
    Once ``stop()`` is true no further GPU step starts; decodes already running finish (a
    decode worker may be writing its input's file: that input is emitted with it), the others
    are not started. ``later``: the device made on demand (see :func:`run_overlapped`)."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from .trace import profiled, span

    todo = enumerate(items)
    decoding: dict = {}  # index -> (item, future): decoding, or decoded and waiting for the GPU step
    done: dict = {}  # index -> (result, encode future or None), until emitted in input order
    emitted = [0]
    held: list = []
    fresh: list = []  # results of inputs finished with nothing for the GPU, for ``later.due``

    def running() -> int:
        return sum(not f.done() for _, f in decoding.values())

    def waiting() -> int:
        """Decoded inputs waiting for their GPU step without a GPU slot (images the C engine does
        not serve): they count against the window as decodes in flight do. Those holding a slot
        are bounded by the slots themselves."""
        n = 0
        for _, f in decoding.values():
            if f.done() and not f.cancelled() and f.exception() is None:
                data = f.result()[1]
                n += data is not None and not getattr(data, "slot", False)
        return n

    def feed(busy: bool = False) -> None:
        while running() + waiting() < jobs + 1:
            nxt = held.pop() if held else next(todo, None)
            if nxt is None:
                return
            if lane is not None and not lane.admit(nxt[1], busy or bool(decoding or done)):
                held.append(nxt)
                return
            decoding[nxt[0]] = (nxt[1], pool.submit(decode, nxt[1]))

    def settle() -> list[int]:
        """Inputs done with nothing for the GPU moved to ``done``; the decoded ones' indices."""
        ready = []
        for index, (_, fut) in list(decoding.items()):
            if fut.done():
                result, data = fut.result()
                if data is None:
                    del decoding[index]
                    done[index] = (result, None)
                    if later is not None and gpu is None:  # (only read until the GPU step exists)
                        fresh.append(result)
                else:
                    ready.append(index)
        return ready

    def drain(limit: int) -> None:
        while emitted[0] in done:
            result, fut = done[emitted[0]]
            if fut is not None and not fut.done() and len(done) <= limit:
                return
            del done[emitted[0]]
            emitted[0] += 1
            if fut is not None:
                fut.result()
            if lane is not None:
                lane.done()
            emit(result)

    def wait_some(extra=()) -> None:
        pending = [f for _, f in decoding.values() if not f.done()] + list(extra)
        if pending:
            wait(pending, return_when=FIRST_COMPLETED)

    def discard() -> None:
        """The device could not be made: the run fails before any result is emitted, so the files
        the decode workers wrote meanwhile are removed (none is reported; a later run with
        ``--skip-existing`` must not take them for done)."""
        import os

        for index, (_, fut) in list(decoding.items()):
            if fut.cancel():
                del decoding[index]
        written = [r for r, _ in done.values()]
        for _, fut in decoding.values():
            try:
                result, data = fut.result()
            except Exception:  # noqa: BLE001 - a decode's own failure: nothing of it was written
                continue
            if data is None:
                written.append(result)
        for result in written:
            for path in result.outputs:
                try:
                    os.unlink(path)
                except OSError:
                    pass

    def get_gpu():
        try:
            return start()
        except Exception:
            discard()
            raise

    feed()
    device = begin() if begin is not None else None
    while device is not None and not device.done() and not (stop and stop()):
        settle()  # (nothing is emitted before the device is there: a result line may name it)
        feed()
        wait_some([device])
    if start is not None and later is None:
        gpu = get_gpu()
    elif later is not None:
        gpu = None  # made once wanted, below
    group = _group_size()

    def between() -> None:
        """Between the inputs of one ``many`` step: the decodes go on."""
        settle()
        feed(busy=True)

    with profiled():
        while (decoding or held) and not (stop and stop()):
            ready = settle()
            if later is not None and gpu is None:
                if device is None and (ready or later.due(fresh, len(items) - emitted[0] - len(done))):
                    device = later.start("an input for the GPU step" if ready else "the work left")
                fresh.clear()
                if ready and device is not None:  # (asked for above, where not before)
                    if not device.done():  # the inputs for it wait; the others go on
                        drain(2 * jobs)
                        feed(busy=True)
                        wait_some([device])
                        continue
                    gpu = get_gpu()
            drain(2 * jobs)
            feed(busy=True)
            if not ready:
                if not decoding:  # the gate holds the next input back: finish what is in flight first
                    drain(0)
                    feed()
                else:
                    wait_some()
                continue
            many = getattr(gpu, "many", None)
            indices = sorted(ready)[:group] if many is not None else [min(ready)]
            taken = [(decoding[i][0], *decoding.pop(i)[1].result()) for i in indices]
            feed(busy=True)
            for index, (item, result, _), payload in zip(indices, taken, _steps(gpu, many, taken, span, between)):
                job = pool.submit(encode, item, payload, result) if payload is not None and encode else None
                done[index] = (result, job)
            del taken
            drain(2 * jobs)
    for index, (_, fut) in list(decoding.items()):  # stopped: decodes not started are not started at all
        if fut.cancel():
            del decoding[index]
    for index, (_, fut) in sorted(decoding.items()):  # running: a worker may be writing its file
        result, data = fut.result()
        if data is None and result.outputs:
            done[index] = (result, None)
    while done:  # what is done, in input order (gaps left by dropped decodes skipped)
        if emitted[0] not in done:
            emitted[0] = min(done)
        drain(0)
