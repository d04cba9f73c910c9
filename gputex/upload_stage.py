"""The ``upload`` command's GPU step for one input: upload (and mips, BC encoding), read back and
verify, and with ``-o`` write the texture file (KTX2 / DDS). Runs in input order on the run's
one device thread (:mod:`gputex.run`); errors go into the input's :class:`~gputex.pipeline.Result`."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import pipeline
from .pipeline import Decoded, Options, Result, is_texfile, note_texture, run_one, timed, upload_format

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .device import Session
    from .outputs import OutputNames
    from .texfile import TextureFile
    from .texture import Texture
from .errors import GputexError
from .outputs import texture_output
from .texture import reusing

__all__ = ["upload_gpu_stage", "upload_encode_stage", "PendingWrite", "verify_and_write", "HostSplit", "GPU_SLOTS"]

#: Decoded images that may wait for the GPU step (offered once the device is made and rehearsed,
#: :meth:`HostSplit.warmed`): a decoded image that finds none free gets its chain and file made
#: by its worker (:class:`HostSplit`). H200 host, 48 x 2048²: the step takes ~8 ms an image and a
#: worker's chain and write ~100 ms, so a worker hands the GPU its image while the wait there is
#: shorter than that.
GPU_SLOTS = 8


class HostSplit:
    """``upload --mips -o DIR`` with decode workers: the batch's chains split between the GPU and
    the host's C engine (:mod:`gputex.host_texture`). Each image's texture file name is reserved
    before it decodes (:meth:`plan`), so a worker that makes the chain itself writes the file under
    it; the GPU's slots are offered once the device is made and rehearsed (:meth:`warmed`; or as
    the workers start, :meth:`opened`, where the caller gave the device or ``GPUTEX_GPU_SLOTS_AT=start``)
    and given back after each GPU step (:meth:`step_done`). Why not from the start: H200 host,
    48 x 2048² -> KTX2 (traced at 71793ed, ``benchmarks/results/peer-ktx-h200-71793ed-trace.jsonl``),
    the 8 images decoded first took the slots at 0.28-0.45 s and waited for a device ready at
    0.70 s, whose first two steps then carried the self-checks and pipelines (0.16 s, 0.07 s):
    the GPU finished last (1.09 s) while the 12 workers' own 39 images were done at 0.81-0.99 s.
    Without decode workers (one input, ``--workers 0``) and with the device made on demand
    (:class:`gputex.run.DeviceOnDemand`), the split is *inline*: the thread that decodes an input
    makes its chain (over the cores) and writes its file, a single output file too, and the GPU
    is used only for inputs the engine does not serve. Off (:meth:`prepare` returns False) for
    ``GPUTEX_MIPS_ENGINE=shader``, ``--verify``, transforms, BC formats, a single output file
    (unless inline), and inputs whose output stems repeat (their names depend on the order of
    the steps)."""

    def __init__(self, opts: Options, names: OutputNames | None):
        import threading

        from .devflags import int_flag

        self.opts, self.names = opts, names
        self.on = False
        #: Set once a decoded image waits for its GPU step (:meth:`written` saw no worker-written
        #: file): the rehearsal stops then (:func:`gputex.run.rehearsal`'s ``waiting``).
        self.waiting = threading.Event()
        self.always = False
        self.norm16 = False
        slots = int_flag("GPUTEX_GPU_SLOTS")
        self.slots = GPU_SLOTS if slots is None else slots
        self.at_start = False  # GPUTEX_GPU_SLOTS_AT=start (read by prepare, where the split runs)
        self.inline = False  # no decode workers: the files written where the images decode (prepare)
        self.threads = 1  # the C engine's threads for one chain (inline: the cores over the jobs)
        self._offered = False
        self._sem: Any = None  # the batch's semaphore of GPU slots (opened)
        self._lock = threading.Lock()

    def prepare(self, items: list, session: Session | None = None, inline: bool = False, jobs: int = 1) -> bool:
        """Whether the split runs for these inputs (see the class); ``session``: the device, where
        the run was given one (16-bit images can then be planned from the start). ``inline``: no
        decode workers (one input, or ``--workers 0``): the process that decodes writes the files
        (:attr:`HostPlan.inline`, each chain over the cores shared among ``jobs`` threads at
        once), a single output file too."""
        from .mips import cpu
        from .outputs import is_texture_file_out, stem_of

        opts = self.opts
        t = opts.transform
        transformed = t is not None and bool(t.resize or t.max_size or t.pot or t.swizzle)
        try:
            mode = cpu.engine_flag()
        except GputexError:  # a bad value: each input's GPU step reports it
            mode = "shader"
        stems = [(item.subdir, stem_of(item)) for item in items]
        self.on = bool(opts.out and opts.mips and mode != "shader" and not opts.verifies() and not transformed
                       and not upload_format(opts)[2] and opts.mip_options.filter == "box"
                       and not opts.mip_options.normal_map and opts.mip_options.alpha_coverage is None
                       and opts.mip_options.precision == "exact"
                       and (inline or self.names is not None and not is_texture_file_out(opts.out))
                       and len(set(stems)) == len(stems) and cpu.available())
        self.always = mode == "cpu"
        self.inline = inline
        if inline:
            self.threads = max(1, cpu.threads() // max(1, min(jobs, len(items))))
        if self.on:
            from .devflags import SLOTS_AT, choice_flag

            self.at_start = choice_flag("GPUTEX_GPU_SLOTS_AT", SLOTS_AT) == "start"  # as before
        if session is not None:
            self.norm16 = bool(session.has_feature("texture-format16bit-norm"))
        return self.on

    def plan(self, item):
        """A :class:`~gputex.host_texture.HostPlan` for ``item`` (its file name reserved), or None."""
        if not self.on or getattr(item, "sources", None):
            return None
        from .host_texture import HostPlan
        from .pipeline import color_space_of

        opts = self.opts
        return HostPlan(texture_output(opts.out, opts.container, self.names, item), opts.format,
                        color_space_of(opts), opts.premultiply, opts.flip_y, opts.mip_levels,
                        opts.mip_options.alpha == "weighted", opts.zstd, self.always, self.norm16,
                        inline=self.inline, threads=self.threads)

    def release(self, plan) -> None:
        """The input failed before a file was written: its reserved name is given back."""
        import os

        if self.names is not None and not os.path.lexists(plan.out):
            self.names.used.discard(plan.out)

    def written(self, got, result: Result) -> bool:
        """Fill ``result`` where ``got`` says a worker wrote the texture file itself."""
        from .host_texture import HostWritten

        if not isinstance(got, HostWritten):
            self.waiting.set()  # an image (or texture file) for the GPU step
            return False
        result.format, result.width, result.height, result.levels = got.format, got.width, got.height, got.levels
        result.color_space, result.layout, result.bytes = got.color_space, got.layout, got.nbytes
        result.verified, result.mips_engine = None, "host"
        result.outputs.append(got.path)
        result.warnings.extend(w for w in got.warnings if w not in result.warnings)
        worked = got.mips_seconds + got.encode_seconds
        result.timings["decode"] = max(0.0, result.timings.get("decode", 0.0) - worked)
        result.timings["mips"] = got.mips_seconds
        result.timings["encode"] = got.encode_seconds
        return True

    def opened(self, ready: bool) -> None:
        """The decode workers run. ``ready``: whether the device is there already (the caller's):
        then the GPU's slots are offered now, else at :meth:`warmed` (with
        ``GPUTEX_GPU_SLOTS_AT=start``: now as well), into this batch's semaphore (a later batch's
        cannot receive them: review)."""
        from .workers import gpu_slots

        self._sem = gpu_slots()
        if ready or self.at_start:
            self._offer()

    def warmed(self, made: Future) -> None:
        """The Future of the run's own device is done (made, and rehearsed on its thread): the GPU's
        slots are offered, where it was made (else none: the workers take every image the engine
        serves, and the others meet the device's error in their GPU step)."""
        if not made.cancelled() and made.exception() is None:
            self._offer()

    def _offer(self) -> None:
        """The GPU's slots offered to the decode workers, once (not with ``GPUTEX_MIPS_ENGINE=cpu``)."""
        from .workers import free_gpu_slots

        with self._lock:
            if self._offered or not self.on or self.always:
                return
            self._offered = True
            sem = self._sem
        if sem is not None:
            free_gpu_slots(self.slots, sem)

    def gpu_ready(self, session: Session) -> None:
        """The device is made (and rehearsed): 16-bit images can be planned from now on."""
        if self.on:
            self.norm16 = bool(session.has_feature("texture-format16bit-norm"))

    def step_done(self) -> None:
        from .workers import free_gpu_slots

        free_gpu_slots()


def upload_gpu_stage(session: Session, opts: Options, names: OutputNames | None = None, *,
                     defer: bool = False, split: HostSplit | None = None):
    """Upload, read back and verify that the GPU holds exactly what was sent.

    Texture files are uploaded as stored (block-compressed ones stay compressed) and every
    level, layer and face is compared. With ``opts.out`` the texture, mips included, is
    written as KTX2 or DDS: a path ending in ``.ktx2``/``.dds``, or a folder (then
    ``<stem>.<opts.container>``, names never colliding). ``defer``: the file is not written
    here but returned as a :class:`PendingWrite` for :func:`upload_encode_stage` (the pool's
    threads), with the read-back itself left to it where the texture allows
    (:func:`gputex.gpu_batch.start_readback`): the in-order thread then only uploads, makes
    the mips and submits the copies.
    """

    if split is not None:
        split.gpu_ready(session)

    def run(item, decoded: Decoded, result: Result, group=None):
        try:
            return step(item, decoded, result, group)
        finally:
            if decoded.slot and split is not None:
                split.step_done()

    def many(entries: list, between=None) -> list:
        """The steps of several decoded inputs ``[(item, decoded, result)]`` in one go, their
        read-backs in shared buffers with one map (:class:`~gputex.gpu_batch.ReadbackGroup`):
        what each returns, in order. Each input is traced as its own ``gpu`` span;
        ``between()``, if given, runs after each (the schedule feeds its decodes there)."""
        from .gpu_batch import ReadbackGroup
        from .trace import span

        group = ReadbackGroup(session, expect=len(entries))
        out: list = []
        with span("gpu-group", count=len(entries)):
            try:
                for item, decoded, result in entries:
                    with span("gpu", path=item.path):
                        out.append(run(item, decoded, result, group))
                    if between is not None:
                        between()
            finally:
                group.close()  # the map asked for: the pool's writers wait for it
        return out

    def step(item, decoded: Decoded, result: Result, group=None):
        image = decoded.take()
        pending: list = []
        name = OutputName(opts, names, item)  # taken once: a retry after a device loss writes the same file
        name.path = decoded.out  # reserved while it decoded (HostSplit), or None

        def work() -> None:
            _drop(pending)  # a retry after a device loss
            early = _open_early(session, image, opts, name, defer)  # level 0 into the file meanwhile
            try:
                with reusing(session) if defer else nullcontext():
                    tex = pipeline.upload_image(session, image, opts, result, decode_blocks=False)
                done = False
                try:
                    verify_and_write(tex, image, item, opts, names, result, pending if defer else None,
                                     name=name, early=early, group=group)
                    done = True
                finally:
                    if done:  # the next input of its size reuses it (its copies are submitted)
                        tex.recycle()
                    else:
                        tex.destroy()
            finally:
                if early is not None:  # (a no-op once it was committed or discarded)
                    early.discard()

        run_one(result, work, session)
        if not result.ok:
            _drop(pending)
            name.release()  # a later input may have the name its file never got
        return pending[0] if pending else None

    if defer:
        run.many = many  # type: ignore[attr-defined]  # the schedule's several-inputs step (gputex.batch)
    return run


class OutputName:
    """The texture file of one input for ``opts.out``
    (:func:`~gputex.outputs.texture_output`), reserved on the first call and the same on every
    call after it (the streamed write's fallback, a retry after a device loss)."""

    def __init__(self, opts: Options, names, item):
        self.opts, self.names, self.item = opts, names, item
        self.path: str | None = None

    def __call__(self) -> str:
        if self.path is None:
            self.path = texture_output(self.opts.out, self.opts.container, self.names, self.item)
        return self.path

    def release(self) -> None:
        """Give the name back to the run's names where no file got it (the input failed after
        its file was opened early, :func:`_open_early`): the next input of the same stem takes
        it, as it would have had the name been reserved only for a written file."""
        import os

        if self.path is not None and self.names is not None and not os.path.lexists(self.path):
            self.names.used.discard(self.path)
            self.path = None


@dataclass
class PendingWrite:
    """A texture file to be written in the pool; with ``readback``, its levels are still being
    copied out of the GPU (:meth:`~gputex.gpu_batch.Readback.finish` fills them)."""

    stored: TextureFile
    path: str
    readback: Any = None  # a gputex.gpu_batch.Readback still to finish (it fills ``stored``)


def _drop(pending: list) -> None:
    while pending:
        job = pending.pop()
        if job.readback is not None:
            job.readback.cancel()


def upload_encode_stage(opts: Options):
    """Write each :class:`PendingWrite` (runs in the encode pool: in a worker process when
    they run, through :func:`gputex.workers.write_texture`)."""
    def run(item, pending: PendingWrite, result: Result) -> None:
        from .workers import write_texture

        def work() -> None:
            if pending.readback is not None:
                readback, pending.readback = pending.readback, None
                with timed(result, "capture"):
                    readback.finish()
            with timed(result, "encode"):
                write_texture(pending.stored, pending.path, zstd=opts.zstd)
            result.outputs.append(pending.path)

        try:
            run_one(result, work)
        finally:
            _drop([pending])

    return run


def verify_and_write(tex: Texture, source, item, opts: Options, names, result: Result,
                     pending: list | None = None, *, name: OutputName | None = None, early=None,
                     group=None) -> None:
    """Verify (``opts.verifies()``) and write the texture file of ``opts.out``; with a
    ``pending`` list, the write is appended to it as a :class:`PendingWrite` instead.
    ``name``: the input's :class:`OutputName` where the caller may call this again for it.
    ``early``: the texture file opened before the upload (:func:`_open_early`), handed over
    (committed or discarded here). ``group``: a :class:`~gputex.gpu_batch.ReadbackGroup` the
    deferred read-back joins (one map for several inputs) instead of a buffer of its own."""
    try:
        encoded = None if is_texfile(source) else _bc_encode(tex, opts, result)
    except BaseException:
        if early is not None:
            early.discard()
        raise
    try:
        _check_and_write(tex, encoded, source, item, opts, name or OutputName(opts, names, item), result, pending,
                         early, group)
    finally:
        if encoded is not None:
            encoded.destroy()


def _check_and_write(tex: Texture, encoded: Texture | None, source, item, opts: Options, name: OutputName,
                     result: Result, pending: list | None = None, early=None, group=None) -> None:
    """Verify ``tex`` against what was sent; write ``encoded`` (its BC encoding) or ``tex``
    (with ``pending``: hand the write over as a :class:`PendingWrite`)."""
    import numpy as np

    from .capture import capture_bytes, capture_texture_file

    streams = opts.out and not opts.verifies() and opts.zstd is None
    if early is not None and (encoded is not None or not streams):  # not the file to write after all
        early.discard()
        early = None
    try:
        result.layout = tex.layout(0).as_dict()
        if early is None and pending is not None and opts.out and not opts.verifies() and _defer_readback(
                tex, encoded, source, opts, name, result, pending, group):
            return
        # too big to defer (or no pool): the levels copied straight into the mapped file (where it
        # cannot map, the whole write below uses the same name)
        if streams:
            path = name()
            streamed, early = early, None  # handed over
            if _stream_to_file(tex, encoded, source, path, opts, result, streamed):
                return
    finally:
        if early is not None:
            early.discard()
    stored = None
    shape = (result.layout["rows_per_image"], result.layout["bytes_per_row"])
    with timed(result, "capture"):
        if opts.out or (is_texfile(source) and opts.verifies()):
            stored = capture_texture_file(encoded or tex, budget=opts.budget)
    if encoded is not None:
        result.layout = encoded.layout(0).as_dict()

    def level0(z: int):
        if stored is None or encoded is not None:
            return capture_bytes(tex, 0, z, budget=opts.budget)
        n = stored.image_bytes(0)
        return np.frombuffer(memoryview(stored.levels[0])[z * n: (z + 1) * n], np.uint8).reshape(shape)

    if not opts.verifies():
        result.verified = None
    else:
        _verify(source, stored, level0, item, opts, tex, result)
    if opts.out and result.ok:
        from .texfile import write_texture_file

        stored.premultiplied = _premultiplied(opts, source)
        path = name()
        if pending is not None:
            pending.append(PendingWrite(stored, path))
            return
        with timed(result, "encode"):
            write_texture_file(stored, path, zstd=opts.zstd)
        result.outputs.append(path)


def _defer_readback(tex: Texture, encoded: Texture | None, source, opts: Options, name: OutputName,
                    result: Result, pending: list, group=None) -> bool:
    """No check wanted: the copies of every level are submitted and the read-back is left to
    the write in the pool (:class:`~gputex.gpu_batch.Readback`), so the in-order thread goes on
    to the next input while the GPU copies; False when the texture is too big for that."""
    from .gpu_batch import start_readback

    with timed(result, "capture"):
        readback = start_readback(encoded or tex) if group is None else group.add(encoded or tex)
    if readback is None:
        return False
    if encoded is not None:
        result.layout = encoded.layout(0).as_dict()
    result.verified = None
    readback.stored.premultiplied = _premultiplied(opts, source)
    try:
        path = name()
    except BaseException:
        readback.cancel()
        raise
    pending.append(PendingWrite(readback.stored, path, readback=readback))
    return True


def _stream_to_file(tex: Texture, encoded: Texture | None, source, path: str, opts: Options,
                    result: Result, early=None) -> bool:
    """Capture ``encoded`` or ``tex`` straight into its texture file ``path`` (nothing to verify,
    no Zstandard): :func:`~gputex.capture.capture_to_file`, the levels copied from the read-back
    buffer into the file's pages; timed as ``capture``. False where it cannot (nothing written).
    ``early``: the file as :func:`_open_early` opened it (handed over)."""
    from .capture import capture_to_file

    try:
        premultiplied = _premultiplied(opts, source)
        level0 = None if encoded is not None or early is not None else _sent_rows(tex, source, opts)
    except BaseException:
        if early is not None:
            early.discard()
        raise
    with timed(result, "capture"):
        if not capture_to_file(encoded or tex, path, budget=opts.budget, premultiplied=premultiplied, level0=level0,
                               opened=early):
            return False
    if encoded is not None:
        result.layout = encoded.layout(0).as_dict()
    result.verified = None
    result.outputs.append(path)
    return True


def _sent_rows(tex: Texture, source, opts: Options):
    """Level 0's bytes as the upload wrote them, where they are the decoded pixels themselves
    (no conversion, no flip, no resize: ``to_texture_rows`` gives the image's own memory, as
    :func:`gputex.upload.write_image` got it), so the texture file takes them from the host
    (:func:`~gputex.capture.capture_to_file`'s ``level0``); else None (level 0 is read back)."""
    if is_texfile(source) or isinstance(source, list) or tex.level_images(0) != 1 or tex.format.compressed:
        return None
    if (source.width, source.height) != tex.size(0):
        return None
    return _unconverted(source, tex.format, tex.color_space, opts)


def _unconverted(image, fmt, space: str, opts: Options):
    """The image's pixels as the texture bytes of ``fmt``/``space`` where the upload stores them
    as they are (:func:`gputex.convert.native_rows`: no conversion, no flip, no copy), else None."""
    if fmt.compressed:
        return None
    from .convert import native_rows

    return native_rows(image.pixels, space, fmt, premultiply=opts.premultiply, flip_y=opts.flip_y)


def _open_early(session: Session, image, opts: Options, name: OutputName, defer: bool):
    """The texture file of one image opened before its upload, with its level 0 (the decoded
    pixels, unconverted) being copied into it on threads meanwhile: the
    :class:`~gputex.capture.StreamedFile` that :func:`_stream_to_file` fills after the mips
    (the other levels read back), or None where that write will not happen or level 0 is not
    the pixels as they are. H200 host, 8192² RGBA8 → KTX2: the upload took 44 ms and the
    capture into the file 87 ms after it, 42 ms of which the host copy of level 0
    (``benchmarks/single_parts.py``). The shape is predicted as ``upload_image`` will make the
    texture (format, colour space, levels); where the texture differs, the file is discarded
    and written as before."""
    if not (opts.out and not opts.verifies() and opts.zstd is None) or is_texfile(image) or isinstance(image, list):
        return None
    fmt_name, space_opt, bc = upload_format(opts)
    t = opts.transform
    if bc or t is not None and t.target_size(image.width, image.height) != (image.width, image.height):
        return None
    from .capture import open_streamed
    from .gpu_batch import DEFER_MAX_BYTES
    from .texfile import TextureFile, level_bytes
    from .upload import resolve_format

    try:
        fmt = resolve_format(image, fmt_name, session, space_opt)
    except Exception:  # noqa: BLE001 - the upload reports it
        return None
    space = "srgb" if fmt.srgb else (space_opt or image.color_space)
    rows = _unconverted(image, fmt, space, opts)
    if rows is None:
        return None
    levels = pipeline.mip_levels(opts, image.width, image.height)
    shape = TextureFile(fmt, image.width, image.height, levels=[b""] * levels, color_space=space,
                        source=image.source)
    shape.premultiplied = _premultiplied(opts, image)
    if defer and sum(level_bytes(shape, i) for i in range(levels)) <= DEFER_MAX_BYTES:
        return None  # it may go to the pool's deferred read-back instead
    try:
        return open_streamed(shape, name(), level0=rows)
    except Exception:  # noqa: BLE001 - the write after the upload meets it again and reports it
        return None


def _premultiplied(opts: Options, source) -> bool:
    """Whether the written texture file is marked premultiplied: ``--premultiply``, or a texture
    file uploaded as stored that was marked so."""
    return bool(opts.premultiply or (is_texfile(source) and source.premultiplied))


def _verify(source, stored, level0, item, opts: Options, tex: Texture, result: Result) -> None:
    """Compare what the GPU holds with what was sent (texture files: every level; images: level 0
    of each layer, unless it was resized); a difference fails the input."""
    import numpy as np

    from .convert import to_texture_rows

    with timed(result, "verify"):
        if is_texfile(source):
            bad = [i for i, lv in enumerate(source.levels) if bytes(lv) != bytes(stored.levels[i])]
            result.verified = not bad
            if bad:
                result.ok = False
                result.error = f"{item.path}: GPU data differs from the file at level {bad[0]}"
        elif result.resized_from:  # level 0 is the resized image: nothing sent to compare it with
            result.verified = None
        else:
            result.verified = True
            for z, im in enumerate(source if isinstance(source, list) else [source]):
                pixels = im.pixels[::-1] if opts.flip_y else im.pixels
                sent = to_texture_rows(pixels, tex.color_space, tex.format, premultiply=opts.premultiply)
                back = level0(z)
                if not np.array_equal(sent, back):
                    rows = np.nonzero((sent != back).any(axis=1))[0]
                    result.ok = result.verified = False
                    result.error = (f"{im.source}: GPU data differs from what was sent "
                                    f"({len(rows)} rows differ, first at row {rows[0]})")
                    break


def _bc_encode(tex: Texture, opts: Options, result: Result) -> Texture | None:
    """``tex`` (mips included) block-encoded into ``opts.format``; None when that is not a BC
    format gputex encodes. With ``opts.report`` the PSNR of every level goes into the result."""
    if not upload_format(opts)[2]:
        return None
    from .bcenc import encode_blocks, psnr_report

    with timed(result, "bc_encode"):
        encoded = encode_blocks(tex, opts.format, opts.quality)
    encoded.upload_path = tex.upload_path
    try:
        if opts.report:
            with timed(result, "report"):
                result.bc_report = psnr_report(tex, encoded)
    except BaseException:
        encoded.destroy()
        raise
    note_texture(result, encoded)
    return encoded
