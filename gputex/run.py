"""The owner of a run: start-up and the schedule, for every command and the library alike.

A run is: sweep the temporary files an earlier, killed run left in the output folders; mark
the start-up in the trace (``GPUTEX_TRACE``); start the codec worker processes (batches that
encode, from 3 jobs up: :mod:`gputex.workers`); make the device on a thread of its own while
they start and the first inputs decode; then the overlapped schedule of
:func:`gputex.batch.run_overlapped` (decodes and encodes in the pool, GPU steps in input
order on the calling thread). :func:`run` does that and nothing else; the CLI parses options,
calls it, renders each result as it comes and maps exceptions to exit codes; the library's
:func:`upload_files` / :func:`capture_files` and :class:`gputex.Converter` call the same.

What one input goes through (decode, upload, mips, capture, encode) is :mod:`gputex.pipeline`'s
stages; :func:`stages` picks them for a command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .batch import Item
    from .device import Session
    from .pipeline import Options, Result

__all__ = ["Stages", "stages", "run", "upload_files", "capture_files"]


@dataclass
class Stages:
    """One input's steps for the batch runner: ``decode(item) -> (result, data)`` in the pool;
    ``gpu(session) -> (item, data, result) -> payload`` in input order; ``encode(item, payload,
    result)`` in the pool (None: the command writes nothing from the pool). ``pools``: the
    kinds of codec worker processes the run starts (see :func:`gputex.workers.codec_workers`);
    ``processes(jobs)``: at most that many per kind when neither ``--workers`` nor
    ``GPUTEX_WORKERS`` chose (None: ``jobs``)."""

    decode: Callable[[Item], tuple[Any, Any]]
    gpu: Callable[[Session], Callable[..., Any]]
    encode: Callable[..., None] | None = None
    pools: tuple[str, ...] = ("decode", "encode")
    processes: Callable[[int], int] | None = None
    #: ``warm(input paths, first_ready)``: what the device thread runs once the session is
    #: made, or None (:func:`rehearsal`); ``first_ready()`` says whether the first input is
    #: decoded.
    warm: Callable[[list, Callable[[], bool] | None], Callable[[Session], None] | None] | None = None
    #: Modules the steps import on their first input (:func:`preload`).
    modules: tuple[str, ...] = ()
    #: ``upload -o``'s :class:`gputex.upload_stage.HostSplit` (the decode workers may make chains
    #: and write texture files themselves), or None.
    split: Any = None


#: What the GPU and decode steps of ``capture`` and ``upload`` import on their first input
#: (besides what the CLI imported already; the modules a run added to ``sys.modules``): numpy,
#: the conversion, the read-back, and every container (the first ``is_texture_file`` loads them).
_STEP_MODULES = ("numpy", "gputex.convert", "gputex.gpu_batch", "gputex.containers")
#: ... and the integer mip chains' (with ``--mips``).
_MIP_MODULES = ("gputex.mips.integer", "gputex.mips.intbox", "gputex.mips.spd", "gputex.mips.odd",
                "gputex.mips.cells", "gputex.mips.exact")


def preload(modules: Sequence[str]) -> None:
    """Import ``modules`` now, on the calling thread, while the device is made on its own thread
    and the worker processes start: the first decoded image's and the first GPU step's imports
    would otherwise come when the pixels are there (on the H200 host the first 17 decodes were
    done in the workers at 0.64-0.73 s and reached the GPU step at 0.84-0.86 s, one pool thread
    importing and the others waiting for its import lock). The device thread's native calls
    (adapter, device: ~0.14 s there) leave the GIL free for them. Errors are left to the step
    that imports the module again."""
    import importlib

    from .trace import span

    with span("preload"):
        for name in modules:
            try:
                importlib.import_module(name)
                if name == "gputex.containers":
                    from .containers import containers

                    containers()  # the registry loads every container module on its first use
            except Exception:  # noqa: BLE001 - the step meets it itself
                pass


def _half(jobs: int) -> int:
    """Decode processes for ``upload -o``: half of ``jobs``, at least 3. Its in-order GPU thread
    needs 20-40 ms per 2048² image and one process decodes one in 70-100 ms, so a few keep it
    fed; each process more only starts (imports) beside the device and the GPU thread. H200
    host, 48 images, ``--jobs 16``: 2.27 s with 8 decode processes, 2.87 s with 16 (one run each,
    ``benchmarks/peer_ktx.py --variants GPUTEX_WORKERS=8``)."""
    return max(3, -(-jobs // 2))


def _spawn_first() -> bool:
    """Whether a split batch asks for all its worker processes before the device thread and the
    GPU step's imports begin (``GPUTEX_SPAWN_FIRST``: 1, the default, or 0). Asked for on the
    starter thread while those two ran Python, the 15 processes of ``--jobs 16`` came one every
    ~9 ms (the GIL shared three ways): the spawn took 0.13-0.16 s and the workers' first decodes
    began 0.06 s later on average; asked for first, 0.03 s, and the device was ready no later
    (0.72-0.79 s against 0.74-0.78). H200 host, 48 x 2048² -> KTX2, five alternating rounds
    (``benchmarks/batch_variants.py``, ``benchmarks/results/spawn-first-h200-9bde322.txt``):
    0.881 0.929 0.909 0.870 0.994 s against 0.908 0.937 0.983 1.013 (and a cold 5.89)."""
    from .devflags import flag

    return flag("GPUTEX_SPAWN_FIRST") != "0"


def _split_processes(jobs: int) -> int:
    """Decode processes for ``upload --mips -o DIR`` when they make chains and write files too
    (:class:`gputex.upload_stage.HostSplit`): ``jobs - 1``, at least 3; one core is left to the
    main process (the device, the GPU step, the read-backs and writes of the GPU's images).
    Before the GPU's slots waited for its device (``GPUTEX_GPU_SLOTS_AT``), three quarters of
    ``jobs`` were as fast as more (h13hybrid, h13start: 12 against 14 and 16 processes within
    noise). Since, H200 host, 48 x 2048² -> KTX2, ``--jobs 16``, four alternating rounds in each of
    two calls (``benchmarks/batch_variants.py``, ``benchmarks/results/split-ready-h200-2b484b9-*.txt``;
    median / best, s): 12 processes 1.020 / 0.938, 14 0.821 / 0.808,
    15 0.826 / 0.778 and 0.863 / 0.790, 16 0.850 / 0.814, 13 0.968 / 0.882; the GPU's device was
    ready at 0.53-0.65 s and took few or no images, so the processes bound the batch."""
    return max(3, jobs - 1)


#: Seconds of work a split batch estimates it has left (:class:`DeviceOnDemand`) beyond which it
#: makes its device for the GPU to take chains, where no input needed it earlier. The device is
#: ready ~0.55-0.8 s after it is asked for on the H200 host (1.3 s of the cores on lavapipe), and
#: its thread takes a core meanwhile; past about twice that the chains it takes repay it.
DEVICE_AFTER = 1.5


def _demand(split: bool, session: Session | None, adapter: str | None, backend: str | None,
            paths: Sequence[Any] = ()) -> bool:
    """Whether a run makes its device on demand (:class:`DeviceOnDemand`): a split batch (the
    decode workers make chains and write files), no device given, no adapter or backend chosen
    (``--adapter``/``--backend`` or ``GPUTEX_ADAPTER``/``GPUTEX_BACKEND``: a device asked for is
    made, and a bad choice fails the run at once), ``GPUTEX_SPLIT_DEVICE`` not ``start``, and no
    PNG among the first :data:`REHEARSE_INPUTS` of ``paths`` (their headers read) that the host
    engine would not take before a device is there (16-bit data, more than
    :data:`gputex.mips.cpu.MAX_TEXELS` texels; :func:`gputex.warmup.png_wants_device`): such a batch
    wants its device at once."""
    import os

    from .devflags import SPLIT_DEVICE, choice_flag

    if not split or session is not None or adapter or backend:
        return False
    if os.environ.get("GPUTEX_ADAPTER", "").strip() or os.environ.get("GPUTEX_BACKEND", "").strip():
        return False
    if choice_flag("GPUTEX_SPLIT_DEVICE", SPLIT_DEVICE) != "demand":
        return False
    from .warmup import png_wants_device

    return not any(isinstance(path, str) and png_wants_device(path) for path in paths[:REHEARSE_INPUTS])


def _two_on_demand(steps: Stages, jobs: int, inputs: int, workers: int | None) -> bool:
    """Whether a 2-job batch that may split (``upload --mips -o DIR``) tries two decode processes:
    kept where the split makes its device on demand. A 2-job batch otherwise decodes in threads
    beside its device (:func:`gputex.caps.worker_count`); without a device the two processes
    have the two cores to themselves. 2-core lavapipe machine, 16 x 2048² -> KTX2 (every sixth
    1537x1999), alternating (``benchmarks/batch_variants.py --jobs 2 --count 16``,
    ``benchmarks/results/split-device-lavapipe.txt``): 0.73-0.77 s against 1.00-1.17 s (threads and
    the device at the start)."""
    if steps.split is None or steps.encode is None or jobs != 2 or inputs < 2 or workers is not None:
        return False
    from .devflags import int_flag

    return int_flag("GPUTEX_WORKERS") is None


class DeviceOnDemand:
    """A split batch's device made when it is wanted, not as the batch starts: when a decoded
    input comes back for the GPU step (one the host engine does not serve), or when the work left
    (inputs not finished x the mean worker seconds of those finished, over the processes) exceeds
    :data:`DEVICE_AFTER` (:meth:`due`). Until then every chain and file is made by the decode
    workers and results are reported as they come (their lines name no adapter). Why: on the H200
    host the device was ready at 0.72-0.79 s, after the 48-image batch's codecs alone had finished,
    so it took no chain, while its thread, the GPU step's imports and the rehearsal took ~0.8 s of
    one core. Without it, same call, alternating (``benchmarks/batch_variants.py``,
    ``benchmarks/results/split-device-h200-de0a98b.txt``): 48 x 2048² -> KTX2, ``--jobs 16``, median /
    best 0.769 / 0.719 s (15 processes) and 0.755 / 0.741 s (16) against 0.912 / 0.848 s.
    ``start()`` makes it (once) and returns its Future."""

    def __init__(self, make: Callable[[], Any], processes: int, long: bool = True):
        self._make = make
        self.processes = max(1, processes)
        self.long = long  # whether the work left may ask for it (not where no decode workers hold GPU slots)
        self.future: Any = None
        self.busy = 0.0  # worker seconds of the inputs finished so far
        self.finished = 0

    def due(self, finished: Sequence[Result], left: int) -> bool:
        """Whether the work left outlasts :data:`DEVICE_AFTER`; ``finished``: results of inputs
        finished since the last call (their timings: the worker's decode, chain and write),
        ``left``: inputs not finished."""
        for r in finished:
            self.busy += sum(r.timings.get(k, 0.0) for k in ("decode", "mips", "encode"))
            self.finished += 1
        if not self.finished or not self.long:
            return False
        return left * self.busy / self.finished / self.processes > DEVICE_AFTER

    def start(self, why: str = "") -> Any:
        if self.future is None:
            from .trace import enabled, mark

            if enabled():
                import time

                mark("device-asked", time.time(), why=why)
            self.future = self._make()
        return self.future


def stages(command: str, opts: Options, names=None) -> Stages:
    """The stages of ``capture`` (decode, upload + mips + capture, encode) or ``upload``
    (decode, upload + verify + capture, texture-file write)."""
    from .capture_stage import capture_encode_stage, capture_gpu_stage
    from .pipeline import decode_stage
    from .upload_stage import upload_gpu_stage

    modules = _STEP_MODULES + (_MIP_MODULES if opts.mips else ())

    def ahead(decode: Any, gpu: Any, encode: Any = None, **kw: Any) -> Stages:
        """Stages with what every command's run shares: the rehearsal on the device thread and
        the modules preloaded."""
        split = kw.get("split")
        waiting = (lambda: split.on and split.waiting.is_set()) if split is not None else None
        return Stages(decode, gpu, encode, warm=lambda paths, ready: rehearsal(opts, paths, first_ready=ready,
                                                                              waiting=waiting),
                      modules=modules, **kw)

    if command == "capture":
        return ahead(decode_stage(opts, names), lambda session: capture_gpu_stage(session, names, opts),
                     capture_encode_stage(opts))
    if command == "upload":
        if opts.out:
            # texture files are written by the pool's threads, not on the GPU thread; images are
            # decoded in worker processes (a write is a copy into the page cache: no process for it)
            from .upload_stage import HostSplit, upload_encode_stage

            split = HostSplit(opts, names)
            return ahead(decode_stage(opts, names, split),
                         lambda session: upload_gpu_stage(session, opts, names, defer=True, split=split),
                         upload_encode_stage(opts), pools=("decode",), processes=_half, split=split)
        return ahead(decode_stage(opts, names), lambda session: upload_gpu_stage(session, opts, names))
    raise ValueError(f"unknown command {command!r}; use capture or upload")


#: Inputs whose PNG headers :func:`rehearsal` reads for the chains a run will meet.
REHEARSE_INPUTS = 12
#: A size that is not a power of two is rehearsed at its own size (the cell chain's plan, hence
#: its pipelines, depends on both sides), up to this many pixels, and only on a GPU: on a CPU
#: adapter (lavapipe) the rehearsal's mips would take the cores the decodes need.
REHEARSE_MAX_PIXELS = 4096 * 4096


def rehearsal(opts: Options, paths: Sequence[Any], *, full_size: bool | None = None,
              first_ready: Callable[[], bool] | None = None,
              waiting: Callable[[], bool] | None = None) -> Callable[[Session], None] | None:
    """What the device thread runs once the session is made, while the first inputs decode: the
    upload and mips of a zero image for each kind of chain among the first
    :data:`REHEARSE_INPUTS` inputs (PNGs; their headers read, :func:`gputex.warmup.png_shape`),
    so their pipelines and self-checks are made before the pixels arrive. Power-of-two sizes
    as :func:`gputex.mips.spd.rehearsal_shape` makes them (the long side kept, the short one as
    small as gives the same passes: one texel with CPU adapters' forms); other sizes at their
    own size (see :data:`REHEARSE_MAX_PIXELS`). A 48-image batch
    of 2048² PNGs, every sixth 1537x1999, meets two chains (cells and single pass): on the H200
    host, the first process of a machine spent 1.46 s in them on its first two images. None
    where nothing applies; errors are ignored (the real input meets them itself).
    ``full_size``: whether other sizes are rehearsed (None: on a GPU, not a CPU adapter); they
    stop at the first one that made no pipeline. ``first_ready()``: whether the first input is
    decoded; where it is by the time its kind's turn comes, that kind is not rehearsed (the
    first GPU step, waiting for this one, meets the same pipelines at once: rehearsing them
    on a zero image first only delays it. H200 host, 48 x 2048², every sixth 1537x1999, the
    first odd-sized: the first decode done at 0.34 s, the device at 0.40 s, then 0.09 s of
    rehearsing the first image's own chain at its size before its real step of 0.025 s).
    ``waiting()``: whether decoded images wait for a GPU that takes them in any order (the
    split of ``upload --mips -o DIR``); once it is true nothing more is rehearsed: their own
    steps make the pipelines, and the GPU does not sit on a zero image while they wait (H200
    host, same batch: where the first input's chain went to a worker, the rehearsal made the
    1999x1537 chain for 0.15 s, then the power-of-two one, with 8 decoded images waiting; the
    first GPU step came at 0.70 s against 0.54-0.57 s)."""
    from .warmup import png_shape

    t = opts.transform
    if not opts.mips or t is not None and (t.resize or t.max_size or t.pot):
        return None
    kinds: dict[tuple, bool] = {}  # ((height, width), channels, depth, space) -> whether a power of two
    first: tuple | None = None  # the first input's kind
    for i, path in enumerate(paths[:REHEARSE_INPUTS]):
        shape = png_shape(path) if isinstance(path, str) else None
        if shape is None:
            continue
        w, h, channels, depth, space = shape
        kind = ((h, w), channels, depth, space)
        kinds.setdefault(kind, not (w & (w - 1) or h & (h - 1)))
        if i == 0:
            first = kind
    if not kinds:
        return None

    def run(session: Session) -> None:
        import numpy as np

        from .image import from_array
        from .kernels import PIPELINES
        from .mips.spd import rehearsal_shape
        from .pipeline import Result, upload_image
        from .trace import span

        full = session.info.adapter_type != "CPU" if full_size is None else full_size
        pipelines = session.cache(PIPELINES)
        done: set[tuple] = set()
        for kind, pot in kinds.items():
            hw, channels, depth, space = kind
            if waiting is not None and waiting():
                break  # decoded images wait: their own steps make what they need
            if not pot and (not full or hw[0] * hw[1] > REHEARSE_MAX_PIXELS):
                continue
            if kind == first and first_ready is not None and first_ready():
                continue  # its pixels are there: the first GPU step makes these pipelines itself
            if pot:  # the smallest image with the same passes
                hw = rehearsal_shape(session, hw[1], hw[0])
            if (hw, channels, depth, space) in done:
                continue
            done.add((hw, channels, depth, space))
            made = pipelines.misses
            try:
                with span("rehearsal", shape=list(hw)):
                    pixels = np.zeros(hw + (channels,), np.uint8 if depth == 8 else np.uint16)
                    tex = upload_image(session, from_array(pixels, space, source="<rehearsal>"), opts,
                                       Result("<rehearsal>"))
                    tex.destroy()
            except Exception:  # noqa: BLE001 - the real input meets any problem itself
                pass
            if not pot and pipelines.misses == made:
                # a whole-size image that made no pipeline: the other sizes most likely meet the
                # same ones (a folder of photos of many sizes does not wait for each of them)
                full = False

    return run


def run(items: Sequence[Item], steps: Stages, *, on_result: Callable[[Result, Session], None],
        jobs: int = 1, session: Session | None = None, adapter: str | None = None,
        backend: str | None = None, workers: int | None = None, copy_threads: int | None = None,
        stop: Callable[[], bool] | None = None, gate=None, sweep: Sequence[str] = ()) -> Session | None:
    """Run ``items`` through ``steps``; ``on_result(result, session)`` once per input, in input order.

    Parameters
    ----------
    session
        A device to use; None: one is made (``adapter``/``backend``) on its own thread while
        the first inputs decode. Its errors (:class:`~gputex.errors.NoAdapterError`, a
        ``ValueError`` for a bad backend) are raised from here.
    jobs, workers
        Pool threads, and codec worker processes per kind (None: from ``jobs``, see
        :func:`gputex.workers.worker_count`; 0: none). Commands that encode nothing in the
        pool start no workers.
    copy_threads
        Threads for one band's host copy (:func:`gputex.parallel.set_copy_threads`); None:
        the default.
    stop
        Asked before each input's GPU step: once true no further input starts.
    gate
        A :class:`~gputex.caps.MemoryGate` for the decoded images in flight.
    sweep
        Output folders whose stale temporary files (of a killed run) are removed first.

    Returns
    -------
    Session or None
        The session used (None when the run stopped before it was needed).
    """
    from .atomic import sweep_stale
    from .batch import run_overlapped
    from .trace import enabled, mark, process_start
    from .workers import codec_workers, start_processes, worker_count

    for folder in sweep:
        sweep_stale(folder)  # temporary files of an earlier run that was killed
    if copy_threads is not None:
        from .parallel import set_copy_threads

        set_copy_threads(copy_threads)
    if enabled():
        mark("startup", process_start())  # interpreter, imports, argument parsing
    n = worker_count(jobs, len(items), workers) if steps.encode is not None else 0
    two = n == 0 and _two_on_demand(steps, jobs, len(items), workers)
    if two:  # (kept only where the split makes its device on demand)
        n = 2
    inline = n == 0 and steps.split is not None and bool(items)  # (kept only on demand, too)
    split = steps.split is not None and (n > 0 or inline) and steps.split.prepare(list(items), session, inline, jobs)
    demand = _demand(split, session, adapter, backend, [item.path for item in items])
    if (two or inline) and not demand:  # threads, and the device at the start, as before
        n = 0
        if split:
            steps.split.on = split = False
    if steps.processes is not None and workers is None:
        from .devflags import int_flag

        if int_flag("GPUTEX_WORKERS") is None:
            # on demand: a process a core (no device thread beside them, unless it is wanted)
            n = min(n, max(1, jobs) if demand else (_split_processes if split else steps.processes)(jobs))
    held: list = [session]
    decode = steps.decode
    first_done = None
    if session is None and steps.warm is not None and items:
        import threading

        event, first = threading.Event(), items[0]
        first_done = event

        def decode(item: Item, _decode=steps.decode, _done=event.set):
            try:
                return _decode(item)
            finally:
                if item is first:
                    _done()  # the rehearsal leaves the first input's own kind to its real step

    with codec_workers(n, steps.pools, split=split, later=True):
        if split:  # a caller's device: the GPU's slots offered before the first decode is planned
            steps.split.opened(ready=session is not None)
        soon: list = [None]

        def make_device(aside: bool = False):
            """The device on its own thread (rehearsed there), the GPU's slots offered once it is
            made; the GPU step's modules imported meanwhile (``aside``: on a thread of their
            own, not holding up the loop that feeds the workers)."""
            from .device import session_soon

            warm = steps.warm([item.path for item in items], first_done.is_set if first_done else None
                              ) if steps.warm is not None and items else None
            soon[0] = session_soon(adapter, backend, warm=warm)
            if split:  # the GPU's slots offered once it is made and rehearsed
                soon[0].add_done_callback(steps.split.warmed)
            if items and aside:
                import threading

                threading.Thread(target=preload, args=(steps.modules,), name="gputex-preload", daemon=True).start()
            elif items:
                preload(steps.modules)
            return soon[0]

        # (inline: the GPU takes only inputs the engine does not serve: no slots, no work-left trigger)
        later = DeviceOnDemand(lambda: make_device(aside=True), n, long=not inline) if demand else None

        def begin():
            """Once the first decodes are submitted (so the workers start on them as soon as
            they exist, not once the main thread has also started the device and imported the
            GPU step's modules: on the H200 host the first decode began 0.09-0.12 s after the
            pool was made, with this thread the last to get there): the device is made on a
            thread of its own while the first inputs decode and the GPU step's modules are
            imported (the GPU's slots are offered once it is made and rehearsed). The
            worker processes the first decodes did not ask for are asked for first
            (:func:`gputex.workers.start_processes`)."""
            start_processes(wait=split and _spawn_first())
            if later is not None:  # made when wanted (DeviceOnDemand)
                from .device import resume_gc

                resume_gc()  # (paused for a device's start-up that may never come)
                return None
            if session is None:
                return make_device()
            if items:
                preload(steps.modules)
            return soon[0]

        def start():
            if held[0] is None:
                held[0] = soon[0].result()
            return steps.gpu(held[0])

        run_overlapped(list(items), jobs, decode, None, steps.encode,
                       lambda result: on_result(result, held[0]), start, stop=stop, gate=gate,
                       # None: as it decides for its capped jobs (two: the 2-job split's processes,
                       # which worker_count would not start: the pool's threads sized for them)
                       workers=n if workers is not None or two else None,
                       any_order=split, begin=begin, later=later)
    if session is not None:  # the caller's device: the textures kept for reuse go
        from .texture import drop_pool

        drop_pool(session)
    return held[0]


def upload_files(paths: Sequence[str], opts: Options | None = None, *, session: Session | None = None,
                 out: str | None = None, jobs: int = 1, **run_kw: Any) -> list[Result]:
    """Upload each file (images or texture files), verify what the GPU holds, and with ``out``
    (``X.ktx2``/``X.dds`` for one input, or a folder) write the textures; one
    :class:`~gputex.pipeline.Result` per input, in order (a failed input's error is in its result)."""
    from dataclasses import replace

    from .batch import expand_inputs
    from .outputs import texture_names
    from .pipeline import Options

    opts = replace(opts or Options(), out=out) if out is not None else (opts or Options())
    items = expand_inputs(paths)
    names, folder = texture_names(opts.out, [i.path for i in items])
    results: list = []
    run(items, stages("upload", opts, names), on_result=lambda r, s: results.append(r), jobs=jobs,
        session=session, sweep=[folder] if folder else [], **run_kw)
    return results


def capture_files(paths: Sequence[str], out: str, opts: Options | None = None, *,
                  session: Session | None = None, jobs: int = 1, **run_kw: Any) -> list[Result]:
    """Decode, upload (and mips), capture the wanted levels and encode them into the folder
    ``out`` (names as the CLI's); one :class:`~gputex.pipeline.Result` per input, in order."""
    import os

    from .batch import expand_inputs
    from .outputs import OutputNames, prepare_folder
    from .pipeline import Options

    opts = opts or Options()
    items = expand_inputs(paths)
    prepare_folder(out)
    names = OutputNames(out, [i.path for i in items])
    results: list = []
    run(items, stages("capture", opts, names), on_result=lambda r, s: results.append(r), jobs=jobs,
        session=session, sweep=[os.fspath(out)], **run_kw)
    return results
