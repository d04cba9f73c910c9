"""The order of the steps: decode -> upload -> (mips) -> capture -> encode.

This is the only module that knows that order. Each function handles one input and
returns a :class:`Result`; errors of that input are caught into the result so a
batch goes on (the CLI turns failed results into exit code 1).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .errors import GputexError
from .outputs import (OutputNames, SingleOutput, output_name, refuse_overwriting_inputs, stem_of, texture_output,
                      up_to_date)

if TYPE_CHECKING:
    from .device import Session
    from .texture import Texture

__all__ = ["Options", "InputOptions", "ChainOptions", "CaptureOptions", "ContainerOptions", "MipOptions", "Decoded", "Captured", "Result", "decode_stage", "capture_gpu_stage", "capture_encode_stage", "upload_gpu_stage",
           "upload_image", "decode_input", "is_texfile", "mip_levels", "all_mips",
           "note_texture", "upload_format", "color_space_of", "verify_and_write", "drawn_levels", "levels_wanted", "stored_channels", "run_one", "timed",
           # where they live now (gputex.outputs), for importers of the old names
           "OutputNames", "SingleOutput", "output_name", "refuse_overwriting_inputs"]


@dataclass
class MipOptions:
    """How the mip chain (and a resize) filters: the keyword arguments of
    :func:`gputex.generate_mips` that the CLI's ``--filter``/``--alpha``/``--alpha-coverage``/
    ``--normal-map``/``--wrap`` set."""

    filter: str = "box"
    alpha: str = "weighted"
    alpha_coverage: float | None = None
    normal_map: bool = False
    wrap: str = "clamp"
    precision: str = "exact"  # generate_mips only: "exact" or "fast"

    def kwargs(self) -> dict[str, Any]:
        """As keyword arguments of :func:`gputex.generate_mips`."""
        return {**self.resize_kwargs(), "precision": self.precision}

    def resize_kwargs(self) -> dict[str, Any]:
        """As keyword arguments of :func:`gputex.resize_texture`."""
        return {"filter": self.filter, "alpha": self.alpha, "alpha_coverage": self.alpha_coverage,
                "normal_map": self.normal_map, "wrap": self.wrap}


@dataclass
class Decoded:
    """A decoded input on its way to the GPU step, which takes it (:meth:`take`) so the pixels
    are freed right after the upload."""

    image: Any  # a gputex.decode.Image or a gputex.texfile.TextureFile

    def take(self) -> Any:
        image, self.image = self.image, None
        return image


@dataclass
class Captured:
    """What the capture GPU step hands the encode pool: ``(path, pixels)`` pairs in order, how
    to write them, and the shared-memory block the pixels live in (closed by the encode)."""

    outputs: list
    color_space: str
    packed: bool
    block: Any = None  # a gputex.workers.SharedBlock, or None


@dataclass
class InputOptions:
    """How an input is read and put on the GPU (decode limits, format, upload path, transforms)."""

    format: str | None = None
    color_space: str | None = None
    premultiply: bool = False
    flip_y: bool = False
    exif_rotate: bool = True
    max_pixels: int | None = None
    max_ratio: float | None = None
    budget: int = 64 << 20
    upload_path: str = "auto"
    # transforms (resize on the GPU before mips; swizzle on the decoded image): gputex.transform
    transform: Any = None  # a gputex.transform.Transform, or None
    skip_existing: bool = False  # an input whose output is newer is skipped


@dataclass
class ChainOptions:
    """Whether and how the mip chain is made (the filter settings are a :class:`MipOptions`)."""

    mips: bool = False
    mip_levels: int | None = None
    mip_options: MipOptions = field(default_factory=MipOptions)

    def __post_init__(self) -> None:
        if isinstance(self.mip_options, dict):  # the old form: generate_mips' keyword arguments
            self.mip_options = MipOptions(**self.mip_options)


@dataclass
class CaptureOptions:
    """``capture``: which levels, and how they are written."""

    level: str = "0"  # "N" or "all" (the CLI checks it once, while parsing)
    float_as: str = "tiff"
    png_level: int | None = None  # None: fast (fpng for 8-bit RGB/RGBA, zlib level 1 otherwise)
    sheet: bool = False
    bc_decode: str = "spec"  # BC1-BC5 capture: "spec" (compute decoder) or "sampler" (texture units)


@dataclass
class ContainerOptions:
    """``upload``: the texture file written with ``-o``, block compression, and the check."""

    out: str | None = None  # a .ktx2 / .dds path, or a folder
    container: str = "ktx2"
    zstd: int | None = None
    quality: str = "normal"  # block compression (upload --format bc*: gputex.bcenc)
    report: bool = False  # PSNR of every encoded level against its source
    # read level 0 (texture files: every level) back and compare with what was sent.
    # None: verify unless the texture is written to a file (-o), where the check is extra work
    verify: bool | None = None

    def verifies(self) -> bool:
        """Whether ``upload`` compares what the GPU holds with what was sent."""
        return self.verify if self.verify is not None else not self.out


@dataclass
class Options(ContainerOptions, CaptureOptions, ChainOptions, InputOptions):
    """Everything the steps need to know, by group (each group is a dataclass of its own: the
    fields are those of :class:`InputOptions`, :class:`ChainOptions` (mips, with a
    :class:`MipOptions`), :class:`CaptureOptions` and :class:`ContainerOptions`); the CLI fills
    it from flags, :mod:`gputex.settings` from request settings."""


@dataclass
class Result:
    """What happened to one input (one JSON object per input with ``--json``)."""

    source: str
    ok: bool = True
    error: str | None = None
    format: str | None = None
    width: int | None = None
    height: int | None = None
    levels: int | None = None
    color_space: str | None = None
    upload_path: str | None = None
    layout: dict | None = None
    verified: bool | None = None
    outputs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said on the result line (e.g. flipped on capture)
    timings: dict[str, float] = field(default_factory=dict)
    stats: list[dict] | None = None
    skipped: bool | None = None
    bytes: int | None = None  # decoded image bytes (for MB/s)
    texture: str | None = None  # texture files: 2d, 2d-array, cube, cube-array, 3d
    resized_from: list[int] | None = None  # --resize/--max-size/--pot: the size before
    bc_report: list[dict] | None = None  # --report: PSNR per encoded level (gputex.bcenc.psnr_report)
    exception: BaseException | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if v is not None and k != "exception"}
        d["timings"] = {k: round(v, 6) for k, v in self.timings.items()}
        if not self.notes:
            del d["notes"]
        return d


@contextmanager
def timed(result: Result, stage: str):
    from .trace import span

    t0 = time.perf_counter()
    try:
        with span("stage:" + stage):
            yield
    finally:
        result.timings[stage] = result.timings.get(stage, 0.0) + time.perf_counter() - t0


def decode_input(path: str, opts: Options, result: Result, item=None):
    """An :class:`Image`, or a :class:`TextureFile` for KTX2 / KTX / DDS files (by their magic);
    a ``--pack`` item's channels packed into one image; ``--swizzle`` applied to images."""
    image = _decode_file(path, opts, result, item)
    swizzle = opts.transform.swizzle if opts.transform else None
    if swizzle and not is_texfile(image):
        from .transform import apply_swizzle

        image = apply_swizzle(image, swizzle)
    return image


def _decode_file(path: str, opts: Options, result: Result, item=None):
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
    from .texfile import is_texture_file, read_texture_file

    if getattr(item, "sources", None):
        from .transform import pack_channels

        return pack_channels(item.channels, lambda p: _decode_file(p, opts, result),
                             color_space=color_space_of(opts), source=item.path)
    with timed(result, "decode"):
        if is_texture_file(path):
            tf = read_texture_file(path, max_pixels=opts.max_pixels, max_ratio=opts.max_ratio)
            if opts.format and opts.format.replace("_", "-").lower() != tf.format.name:
                from .errors import FormatError

                raise FormatError(f"{path}: is a {tf.format.name} texture file; --format cannot convert it")
            return tf
        from .workers import decode_image

        image = decode_image(path, exif_rotate=opts.exif_rotate, max_pixels=opts.max_pixels or DEFAULT_MAX_PIXELS,
                             max_ratio=DEFAULT_MAX_RATIO if opts.max_ratio is None else opts.max_ratio)
        result.warnings.extend(image.warnings)
        return image


def is_texfile(obj) -> bool:
    from .texfile import TextureFile

    return isinstance(obj, TextureFile)


def mip_levels(opts: Options, width: int, height: int, depth: int = 1) -> int:
    from .layout import mip_count

    if not opts.mips:
        return 1
    full = mip_count(width, height, depth)
    return min(opts.mip_levels or full, full)


def all_mips(tex: "Texture", opts: Options) -> None:
    """Generate the chain for every layer / cube face (a 3D texture gets one 3D chain)."""
    from .mips import generate_mips

    for layer in range(tex.layers):  # a 3D texture is one "layer": its chain is 3D
        generate_mips(tex, layer=layer, **opts.mip_options.kwargs())


def drawn_levels(session: "Session", fmt, levels: int, depth: int = 1) -> bool:
    """Whether the mip step will draw this texture's levels (it then needs ``RENDER_ATTACHMENT``:
    the ``render_target`` argument of :func:`gputex.texture.create_texture`)."""
    if levels <= 1 or depth > 1:
        return False
    from .mips import render_target

    return render_target(session, fmt)


def _upload_texfile(session: "Session", tf, opts: Options, result: Result, usage: int = 0,
                    decode_blocks: bool = True) -> "Texture":
    """Upload a texture file's levels as stored; with ``decode_blocks`` a compressed texture is
    replaced by its GPU-decoded twin. ``--mips`` fills the chain of a file that holds one level."""
    import wgpu

    from .upload import upload_texture_file

    want = mip_levels(opts, tf.width, tf.height, tf.depth) if len(tf.levels) == 1 else len(tf.levels)
    make_mips = want > len(tf.levels)
    keep_compressed = tf.format.compressed and not decode_blocks
    if make_mips and keep_compressed:
        from .errors import FormatError

        raise FormatError(f"{tf.source}: mips cannot be written into {tf.format.name} (gputex does not re-encode "
                          "a block-compressed file; upload the source image with --format and --mips); capture "
                          "decodes it and can make mips of the decoded texture")
    with timed(result, "upload"):
        alloc = None if (tf.format.compressed or not make_mips) else want
        tex = upload_texture_file(session, tf, levels=alloc, color_space=opts.color_space, budget=opts.budget,
                                  usage=usage | wgpu.TextureUsage.TEXTURE_BINDING,
                                  render_target=drawn_levels(session, tf.format, max(len(tf.levels), alloc or 0),
                                                             tf.depth))
    if tf.format.compressed and not keep_compressed:
        from .unblock import decode_blocks as _decode_blocks

        try:
            with timed(result, "decode_blocks"):
                plain = _decode_blocks(tex, levels=want if make_mips else None, mode=opts.bc_decode)
        finally:
            tex.destroy()
        tex = plain
    note_texture(result, tex, tf.format.name)
    result.texture = tf.kind()
    if make_mips and not keep_compressed:
        with timed(result, "mips"):
            all_mips(tex, opts)
    return tex


def upload_image(session: "Session", image, opts: Options, result: Result, usage: int = 0,
                 decode_blocks: bool = True, progress=None) -> "Texture":
    """Upload one decoded image (or texture file) as ``opts`` say: format, resize, mip levels
    allocated and made. The CLI's stages and :func:`gputex.upload` both come here."""
    import wgpu

    from .upload import resolve_format, upload

    if is_texfile(image):
        t = opts.transform
        if t is not None and (t.resize or t.max_size or t.pot):
            from .errors import FormatError

            raise FormatError(f"{image.source}: --resize, --max-size and --pot apply to images, "
                              "not texture files")
        return _upload_texfile(session, image, opts, result, usage, decode_blocks)
    size = opts.transform.target_size(image.width, image.height) if opts.transform else None
    if size == (image.width, image.height):
        size = None
    levels = mip_levels(opts, *(size or (image.width, image.height)))
    fmt, space, bc = upload_format(opts)
    alloc = 1 if size else levels
    with timed(result, "upload"):
        tex = upload(session, image, fmt, color_space=space, levels=alloc,
                     premultiply=opts.premultiply, flip_y=opts.flip_y, budget=opts.budget,
                     path=opts.upload_path, progress=progress,
                     render_target=alloc > 1 and drawn_levels(session, resolve_format(image, fmt, session, space),
                                                              alloc),
                     usage=usage | (wgpu.TextureUsage.TEXTURE_BINDING if levels > 1 or size or bc else 0))
    if size:
        from .transform import resize_texture

        with timed(result, "resize"):
            try:
                resized = resize_texture(tex, *size, levels=levels, usage=usage | (
                    wgpu.TextureUsage.TEXTURE_BINDING if levels > 1 or bc else 0), **opts.mip_options.resize_kwargs())
            finally:
                tex.destroy()
        result.resized_from = [image.width, image.height]
        resized.upload_path, tex = tex.upload_path, resized
    note_texture(result, tex)
    if levels > 1:
        from .mips import generate_mips

        with timed(result, "mips"):
            generate_mips(tex, **opts.mip_options.kwargs())
    return tex


def color_space_of(opts: Options) -> str | None:
    """``--color-space``, else linear for ``--normal-map`` (normals are data, never sRGB), else
    None (the file decides)."""
    if opts.color_space is None and opts.mip_options.normal_map:
        return "linear"
    return opts.color_space


def upload_format(opts: Options) -> tuple[str | None, str | None, bool]:
    """(format to upload to, colour space, whether it is then block-encoded): a BC format gputex
    encodes (``gputex.bcenc``) is reached through its uncompressed source format."""
    from .bcenc import encodable

    if not opts.format or not encodable(opts.format):
        return opts.format, color_space_of(opts), False
    from .bcenc import source_format
    from .formats import get_format

    target = get_format(opts.format)
    return source_format(target), "srgb" if target.srgb else color_space_of(opts), True


def _bc_encode(tex: "Texture", opts: Options, result: Result) -> "Texture | None":
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


def note_texture(result: Result, tex: "Texture", format_name: str | None = None) -> None:
    """What a result reports about the texture made for it."""
    result.format, result.width, result.height = format_name or tex.format.name, tex.width, tex.height
    result.levels, result.color_space, result.upload_path = tex.levels, tex.color_space, tex.upload_path


def run_one(result: Result, fn: Callable[[], None], session: "Session | None" = None) -> Result:
    """Run one input's work; its errors go into ``result``. A lost device is recreated and
    the input retried once."""
    from .chatter import watch
    from .errors import DeviceLostError

    chatter: list[str] = []  # C libraries' stderr and wgpu's log, as one line (gputex.chatter)
    try:
        try:
            with watch(result.source, chatter):
                fn()
        except DeviceLostError as e:
            if session is None:
                raise
            session.recreate()
            result.warnings.append(f"{result.source}: {e}; device recreated, input retried")
            chatter.clear()
            with watch(result.source, chatter):
                fn()
        result.warnings.extend(w for w in chatter if w not in result.warnings)  # a failure's line says it all
    except GputexError as e:
        result.ok, result.error, result.exception = False, str(e), e
    except MemoryError as e:
        result.ok, result.error, result.exception = False, f"{result.source}: out of memory", e
    except Exception as e:  # anything else is still this input's error, named, and the batch goes on
        result.ok, result.error, result.exception = False, f"{result.source}: {_unexpected(e)}", e
    return result


def _unexpected(e: BaseException) -> str:
    """One line for an exception gputex did not raise itself: an OS error as the OS says it
    (disk full, a name that is a folder...), anything else an internal error (a gputex bug)."""
    if isinstance(e, OSError) and e.strerror:
        where = e.filename if isinstance(e.filename, str) else None
        return f"{e.strerror}" + (f" ({where})" if where else "")
    msg = " ".join(str(e).split())
    return f"internal error: {type(e).__name__}" + (f": {msg}" if msg else "") + " (run with --debug for the traceback)"


def upload_gpu_stage(session: "Session", opts: Options, names: "OutputNames | None" = None):
    """Upload, read back and verify that the GPU holds exactly what was sent.

    Texture files are uploaded as stored (block-compressed ones stay compressed) and every
    level, layer and face is compared. With ``opts.out`` the texture, mips included, is
    written as KTX2 or DDS: a path ending in ``.ktx2``/``.dds``, or a folder (then
    ``<stem>.<opts.container>``, names never colliding).
    """

    def run(item, decoded: Decoded, result: Result):
        image = decoded.take()

        def work() -> None:
            tex = upload_image(session, image, opts, result, decode_blocks=False)
            try:
                verify_and_write(tex, image, item, opts, names, result)
            finally:
                tex.destroy()

        run_one(result, work, session)
        return None

    return run


def verify_and_write(tex: "Texture", source, item, opts: Options, names, result: Result) -> None:
    encoded = None if is_texfile(source) else _bc_encode(tex, opts, result)
    try:
        _check_and_write(tex, encoded, source, item, opts, names, result)
    finally:
        if encoded is not None:
            encoded.destroy()


def _check_and_write(tex: "Texture", encoded: "Texture | None", source, item, opts: Options, names,
                     result: Result) -> None:
    """Verify ``tex`` against what was sent; write ``encoded`` (its BC encoding) or ``tex``."""
    import numpy as np

    from .capture import capture_bytes, capture_texture_file

    result.layout = tex.layout(0).as_dict()
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

        stored.premultiplied = opts.premultiply or (is_texfile(source) and source.premultiplied)
        path = texture_output(opts.out, opts.container, names, item)
        with timed(result, "encode"):
            write_texture_file(stored, path, zstd=opts.zstd)
        result.outputs.append(path)


def _verify(source, stored, level0, item, opts: Options, tex: "Texture", result: Result) -> None:
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


def levels_wanted(opts: Options, tex: "Texture") -> list[int]:
    from .errors import LimitError

    if opts.level == "all":
        return list(range(tex.levels))
    try:
        level = int(opts.level)
    except ValueError:
        raise LimitError(f"--level must be a number or 'all', got {opts.level!r}") from None
    if not 0 <= level < tex.levels:
        raise LimitError(f"{tex.source}: level {level} does not exist "
                         f"(texture has {tex.levels}; add --mips for a chain)")
    return [level]


def decode_stage(opts: Options, names: "OutputNames | None" = None):
    """The decode step for the batch runner: ``item -> (Result, Image or None)``."""

    def run(item) -> tuple[Result, Any]:
        result = Result(source=item.path)
        if item.error:
            result.ok, result.error = False, item.error
            return result, None
        if opts.skip_existing and up_to_date(item, names, opts.out, opts.container):
            result.skipped = True
            return result, None
        holder: list = []
        run_one(result, lambda: holder.append(decode_input(item.path, opts, result, item)))
        if holder:
            got = holder[0]
            result.warnings.extend(w for w in getattr(got, "warnings", ()) if w not in result.warnings)
            result.bytes = sum(len(lv) for lv in got.levels) if is_texfile(got) else int(got.pixels.nbytes)
        return result, (Decoded(holder.pop()) if holder else None)

    return run


def capture_gpu_stage(session: "Session", names: OutputNames, opts: Options):
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
            tex = upload_image(session, image, opts, result)
            image = None  # the texture has it now: free the pixels before capturing
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
                    meta[:] = [tex.color_space, tex.format.packed, None]
                    return
                if not keep and not sheet and tex.format.image:  # levels go straight to memory encoders map
                    from .workers import shared_block

                    block = shared_block(_level_bytes(tex, levels))
                into = (lambda level, shape, dtype: block.array(shape, dtype)) if block is not None else None
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
                meta[:] = [tex.color_space, tex.format.packed, block]
            finally:
                tex.destroy()

        block = None
        run_one(result, work, session)
        if result.ok and outputs:
            return Captured(outputs, *meta)
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


def _flip(pixels, flips: tuple[bool, bool, bool], tex: "Texture", level: int, z: int):
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


def _level_bytes(tex: "Texture", levels: list[int]) -> int:
    """Bytes of the captured arrays of ``levels`` (every layer), each rounded up to 64."""
    import numpy as np

    fmt, total = tex.format, 0
    item = 2 if fmt.packed else np.dtype(fmt.component_dtype).itemsize  # rgb10a2: four uint16 codes
    channels = 4 if fmt.packed else fmt.channels
    for lv in levels:
        w, h = tex.size(lv)
        total += tex.level_images(lv) * -(-(w * h * channels * item) // 64) * 64
    return total


def _images_by_layer(tex: "Texture", levels: list[int]):
    """``(z, levels that have image z)`` for each layer, face or depth slice ``z``."""
    for z in range(max(tex.level_images(lv) for lv in levels)):
        yield z, [lv for lv in levels if z < tex.level_images(lv)]


def _image_name(tex: "Texture", stem: str, level: int, z: int) -> str:
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


def stored_channels(result: Result) -> int:
    """Channels a block-compressed file's format holds (its decoded twin has 4), else 0."""
    from .formats import FORMATS

    fmt = FORMATS.get(result.format or "")
    return fmt.channels if fmt is not None and fmt.compressed and fmt.channels < 4 else 0


def capture_encode_stage(opts: Options):
    """Encode each captured level to its reserved path (runs in the encode pool)."""
    def run(item, captured: Captured, result: Result) -> None:
        run_one(result, lambda: _encode_into(result, captured.outputs, captured.color_space, captured.packed, opts,
                                             captured.block))

    return run


