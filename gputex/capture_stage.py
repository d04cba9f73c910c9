"""The ``capture`` command's steps for one input: on the device thread (in input order) upload,
mips, capture of the wanted levels (straight into shared memory the encoders map) and output
names reserved; then in the pool the encode of each level (:class:`~gputex.pipeline.Captured`
between them). Big chains go one level at a time (:data:`BIG_CAPTURE_BYTES`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import pipeline
from .pipeline import Captured, Decoded, Options, Result, is_texfile, levels_wanted, run_one, stored_channels, timed

if TYPE_CHECKING:
    from .device import Session
    from .outputs import OutputNames
    from .texture import Texture
from .errors import GputexError
from .outputs import output_name, stem_of
from .texture import reusing

__all__ = ["capture_gpu_stage", "capture_encode_stage", "BIG_CAPTURE_BYTES"]


def capture_gpu_stage(session: Session, names: OutputNames, opts: Options):
    """Upload (and mips), capture the wanted levels, and reserve their output names.

    Runs on one thread in input order, so names are handed out deterministically.
    """
    from .capture import capture_levels
    from .encode import output_suffix

    def run(item, decoded: Decoded, result: Result) -> Captured | None:
        outputs: list = []  # (path, pixels) in order
        shown: list = []  # every captured image, for --sheet
        meta: list = []  # colour space, packed 10-bit, block: a Captured's
        image = decoded.take()

        def work() -> None:
            nonlocal image, block
            outputs.clear()
            shown.clear()
            if block is not None:  # a retry after a device loss
                block.close()
                block = None
            if image is None:  # a device loss after the pixels were freed: cannot upload again
                from .errors import GPUError

                raise GPUError(f"{item.path}: GPU device lost after the upload; not retried")
            flips = _capture_flips(image, result)
            with reusing(session):  # the next input of its size gets this texture back (recycle)
                tex = pipeline.upload_image(session, image, opts, result)
            image = None  # the texture has it now: free the pixels before capturing
            done = False
            try:
                stem = stem_of(item)
                levels = levels_wanted(opts, tex)
                sheet = opts.sheet and (tex.levels > 1 or tex.images > 1)  # levels (and layers) side by side
                if opts.sheet and not sheet:
                    result.warnings.append(f"{item.path}: one level, no sheet written (add --mips for a chain)")
                wanted, levels = levels, (list(range(tex.levels)) if sheet else levels)  # the sheet: every level
                keep = stored_channels(result)
                total = sum(tex.layout(lv).data_bytes * tex.level_images(lv) for lv in levels)
                if total > BIG_CAPTURE_BYTES and not sheet:
                    _capture_encode_each(tex, levels, keep, stem, item, names, opts, result, flips)
                    meta[:] = [tex.color_space, tex.format.packed, None, None]
                    done = True
                    return
                if not keep and not sheet and tex.format.image:  # levels go straight to memory encoders map
                    from .workers import shared_block

                    block = shared_block(_level_bytes(tex, levels))
                into = (lambda level, shape, dtype: block.array(shape, dtype)) if block is not None else None
                if into is not None and tex.images == 1 and not any(flips):
                    from .gpu_batch import start_level_readback

                    # the copies are submitted and the read-back left to the encode in the pool:
                    # this thread goes on to the next input while the GPU copies
                    with timed(result, "capture"):
                        readback = start_level_readback(tex, levels, 0, into)
                    if readback is not None:
                        try:
                            for level, pixels in zip(levels, readback.stored):
                                outputs.append((names.take(_image_name(tex, stem, level, 0),
                                                           output_suffix(pixels.dtype, opts.float_as), item.subdir),
                                                pixels))
                        except BaseException:  # no name: the buffer goes back to the ring unread
                            readback.cancel()
                            raise
                        meta[:] = [tex.color_space, tex.format.packed, block, readback]
                        done = True
                        return
                for z, here in _images_by_layer(tex, levels):
                    with timed(result, "capture"):
                        captured = capture_levels(tex, here, layer=z, budget=opts.budget, into=into)
                    for level, pixels in zip(here, captured):
                        if keep:
                            pixels = pixels[:, :, :keep].copy()  # canonical strides for the encoders
                        pixels, zname = _flip(pixels, flips, tex, level, z)
                        shown.append(pixels)
                        if level not in wanted:  # only on the sheet
                            continue
                        outputs.append((names.take(_image_name(tex, stem, level, zname),
                                                   output_suffix(pixels.dtype, opts.float_as), item.subdir), pixels))
                if sheet:
                    from .sheet import contact_sheet

                    whole = contact_sheet(shown)
                    outputs.append((names.take(stem + "_sheet", output_suffix(whole.dtype, opts.float_as),
                                               item.subdir), whole))
                meta[:] = [tex.color_space, tex.format.packed, block, None]
                done = True
            finally:
                if done:  # read back, or its copies submitted (the queue runs them first)
                    tex.recycle()
                else:
                    tex.destroy()

        block = None
        run_one(result, work, session)
        if result.ok and outputs:
            return Captured(outputs, *meta)
        if len(meta) > 3 and meta[3] is not None:
            meta[3].cancel()
        if block is not None:
            block.close()
        return None

    return run


#: Above this many bytes of wanted levels, capture and encode go one level at a time in the
#: GPU thread (largest first, each freed before the next): a 16384^2 RGBA8 chain would
#: otherwise hold all its levels and the level-0 PNG at once.
BIG_CAPTURE_BYTES = 256 << 20


def _capture_flips(source, result: Result) -> tuple[bool, bool, bool]:
    """Axes to reverse on capture so a texture file's images come out top row first, left to
    right (its ``KTXorientation``), with a note for the result line."""
    if not is_texfile(source):
        return (False, False, False)
    flips = source.flips()
    if any(flips):
        what = ", ".join(n for n, f in zip(("columns", "rows", "slices"), flips) if f)
        note = f"KTXorientation {source.orientation}: {what} flipped"
        if note not in result.notes:  # (a retry after a device loss comes here again)
            result.notes.append(note)
    return flips


def _flip(pixels, flips: tuple[bool, bool, bool], tex: Texture, level: int, z: int):
    """(pixels, image index for the name) after the ``KTXorientation`` flips."""
    import numpy as np

    fx, fy, fz = flips
    if fx or fy:
        pixels = np.ascontiguousarray(pixels[::-1 if fy else 1, ::-1 if fx else 1])
    return pixels, (tex.level_images(level) - 1 - z if fz else z)


def _capture_encode_each(tex, levels, keep, stem, item, names, opts: Options, result: Result,
                         flips: tuple[bool, bool, bool] = (False, False, False)) -> None:
    from .capture import capture
    from .encode import output_suffix

    for z, here in _images_by_layer(tex, levels):
        for level in here:
            with timed(result, "capture"):
                pixels = capture(tex, level, z, budget=opts.budget)
            if keep:
                pixels = pixels[:, :, :keep].copy()
            pixels, zname = _flip(pixels, flips, tex, level, z)
            path = names.take(_image_name(tex, stem, level, zname), output_suffix(pixels.dtype, opts.float_as),
                              item.subdir)
            _encode_into(result, [(path, pixels)], tex.color_space, tex.format.packed, opts)
            del pixels


def _level_bytes(tex: Texture, levels: list[int]) -> int:
    """Bytes of the captured arrays of ``levels`` (every layer), each rounded up to 64."""
    import numpy as np

    fmt, total = tex.format, 0
    item = 2 if fmt.packed else np.dtype(fmt.component_dtype).itemsize  # rgb10a2: four uint16 codes
    channels = 4 if fmt.packed else fmt.channels
    for lv in levels:
        w, h = tex.size(lv)
        total += tex.level_images(lv) * -(-(w * h * channels * item) // 64) * 64
    return total


def _images_by_layer(tex: Texture, levels: list[int]):
    """``(z, levels that have image z)`` for each layer, face or depth slice ``z``."""
    for z in range(max(tex.level_images(lv) for lv in levels)):
        yield z, [lv for lv in levels if z < tex.level_images(lv)]


def _image_name(tex: Texture, stem: str, level: int, z: int) -> str:
    """Output name of image ``z`` (layer, face or slice) of ``level`` (see :func:`output_name`)."""
    return output_name(stem, None if tex.levels == 1 else level,
                       None if tex.images == 1 or tex.depth > 1 else z, faces=tex.faces,
                       slice_=z if tex.depth > 1 else None, array=tex.array)


def _encode_into(result: Result, outputs: list, space: str, packed: bool, opts: Options, block=None) -> None:
    """Encode ``(path, pixels)`` pairs; what was written, warned and spent goes into ``result``
    (also the outputs written before an error, which is raised on). ``block``: the
    :class:`~gputex.workers.SharedBlock` the pixels live in, if any (closed here)."""
    from .workers import encode_images

    try:
        written, warnings, seconds = encode_images(outputs, block, color_space=space, packed_10bit=packed,
                                                   float_as=opts.float_as, png_level=opts.png_level)
    except GputexError as e:
        result.outputs.extend(getattr(e, "written", []))
        result.warnings.extend(getattr(e, "warnings", []))
        raise
    result.outputs.extend(written)
    result.warnings.extend(warnings)
    result.timings["encode"] = result.timings.get("encode", 0.0) + seconds


def capture_encode_stage(opts: Options):
    """Encode each captured level to its reserved path (runs in the encode pool)."""
    def run(item, captured: Captured, result: Result) -> None:
        def work() -> None:
            if captured.readback is not None:  # the copies were submitted by the GPU step: rows out now
                readback, captured.readback = captured.readback, None
                try:
                    with timed(result, "capture"):
                        readback.finish()
                except BaseException:
                    if captured.block is not None:
                        captured.block.close()
                    raise
            _encode_into(result, captured.outputs, captured.color_space, captured.packed, opts, captured.block)

        run_one(result, work)

    return run
