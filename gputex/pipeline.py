"""One input's way through the steps: decode -> upload -> (resize, mips) -> ...

The typed options (:class:`Options` and its groups), the per-input :class:`Result`, what travels
between the stages (:class:`Decoded`, :class:`Captured`), the decode stage, and
:func:`upload_image` (format, resize, levels, mips: shared by every command and by
:func:`gputex.upload`). The commands' GPU steps build on these: :mod:`gputex.capture_stage`
(capture + encode), :mod:`gputex.upload_stage` (verify + texture file), :mod:`gputex.assembly`
(arrays, cubes, volumes), :mod:`gputex.report` (compare, stats). :mod:`gputex.run` owns the run.
Errors of one input are caught into its result (:func:`run_one`) so a batch goes on (the CLI
turns failed results into exit code 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import GputexError
from .outputs import OutputNames, SingleOutput, output_name, refuse_overwriting_inputs, up_to_date

if TYPE_CHECKING:
    from .device import Session
    from .texture import Texture

__all__ = ["Options", "InputOptions", "ChainOptions", "CaptureOptions", "ContainerOptions", "MipOptions", "Decoded",
           "Captured", "Result", "decode_stage", "upload_image", "decode_input", "is_texfile", "mip_levels", "all_mips",
           "note_texture", "upload_format", "color_space_of", "drawn_levels", "stored_levels", "levels_wanted", "stored_channels",
           "run_one", "timed",
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
    precision: str = "exact"  # gputex.mips.PRECISIONS
    path: str | None = None  # generate_mips only: "compute" or "render" (None: the default)

    def kwargs(self) -> dict[str, Any]:
        """As keyword arguments of :func:`gputex.generate_mips`."""
        return {**self.resize_kwargs(), "path": self.path}

    def resize_kwargs(self) -> dict[str, Any]:
        """As keyword arguments of :func:`gputex.resize_texture`."""
        return {"filter": self.filter, "alpha": self.alpha, "alpha_coverage": self.alpha_coverage,
                "normal_map": self.normal_map, "wrap": self.wrap, "precision": self.precision}


@dataclass
class Decoded:
    """A decoded input on its way to the GPU step, which takes it (:meth:`take`) so the pixels
    are freed right after the upload."""

    image: Any  # a gputex.decode.Image or a gputex.texfile.TextureFile
    slot: bool = False  # it holds one of the GPU's slots (gputex.workers.decode_or_write)
    out: str | None = None  # its texture file's name, reserved while it decoded (upload -o)

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
    readback: Any = None  # a gputex.gpu_batch.Readback that fills the outputs' pixels, or None


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
    mips_engine: str | None = None  # upload: "gpu" (shaders) or "host" (the C engine) made the chain
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


def decode_input(path: str, opts: Options, result: Result, item=None, plan=None, slot: list | None = None):
    """An :class:`Image`, or a :class:`TextureFile` for KTX2 / KTX / DDS files (by their magic);
    a ``--pack`` item's channels packed into one image; ``--swizzle`` applied to images.
    ``plan``: a :class:`gputex.host_texture.HostPlan`: the decode worker may write the texture
    file itself (a :class:`~gputex.host_texture.HostWritten` is returned); ``slot``: gets True
    appended where the image holds a GPU slot (:func:`gputex.workers.decode_or_write`)."""
    image = _decode_file(path, opts, result, item, plan, slot)
    swizzle = opts.transform.swizzle if opts.transform else None
    if swizzle and not is_texfile(image):
        from .transform import apply_swizzle

        image = apply_swizzle(image, swizzle)
    return image


def _decode_file(path: str, opts: Options, result: Result, item=None, plan=None, slot: list | None = None):
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
    from .inputs import sniff_input
    from .png import SIGNATURE

    if getattr(item, "sources", None):
        from .transform import pack_channels

        return pack_channels(item.channels, lambda p: _decode_file(p, opts, result),
                             color_space=color_space_of(opts), source=item.path)
    with timed(result, "decode"):
        head = sniff_input(path, 16)
        # a PNG is no texture file: the containers' registry (its modules' first import, 4-9 ms
        # that a batch's first decodes waited behind on the main process) is not asked for one
        if not head.startswith(SIGNATURE) and _texture_magic(head):
            from .texfile import read_texture_file

            tf = read_texture_file(path, max_pixels=opts.max_pixels, max_ratio=opts.max_ratio)
            if opts.format and opts.format.replace("_", "-").lower() != tf.format.name:
                from .errors import FormatError

                raise FormatError(f"{path}: is a {tf.format.name} texture file; --format cannot convert it")
            return tf
        from .workers import decode_image, decode_or_write

        kwargs = {"exif_rotate": opts.exif_rotate, "max_pixels": opts.max_pixels or DEFAULT_MAX_PIXELS,
                  "max_ratio": DEFAULT_MAX_RATIO if opts.max_ratio is None else opts.max_ratio}
        image: Any
        if plan is None:
            image = decode_image(path, **kwargs)
        else:
            image, held = decode_or_write(path, plan, **kwargs)
            if held and slot is not None:
                slot.append(True)
        result.warnings.extend(image.warnings)
        return image


def _texture_magic(head: bytes) -> bool:
    from .texfile import sniff

    return sniff(head) is not None


def is_texfile(obj) -> bool:
    from .texfile import TextureFile

    return isinstance(obj, TextureFile)


def mip_levels(opts: Options, width: int, height: int, depth: int = 1) -> int:
    from .layout import mip_count

    if not opts.mips:
        return 1
    full = mip_count(width, height, depth)
    return min(opts.mip_levels or full, full)


def all_mips(tex: Texture, opts: Options) -> None:
    """Generate the chain for every layer / cube face (a 3D texture gets one 3D chain)."""
    from .mips import generate_mips

    for layer in range(tex.layers):  # a 3D texture is one "layer": its chain is 3D
        generate_mips(tex, layer=layer, **opts.mip_options.kwargs())


def drawn_levels(session: Session, fmt, levels: int, depth: int = 1, path: str | None = None) -> bool:
    """Whether the mip step will draw this texture's levels (it then needs ``RENDER_ATTACHMENT``:
    the ``render_target`` argument of :func:`gputex.texture.create_texture`); ``path``: the mip
    path asked for (:attr:`MipOptions.path`)."""
    if levels <= 1 or depth > 1:
        return False
    from .mips import needs_render_target

    return needs_render_target(session, fmt, path)


def stored_levels(session: Session, fmt, width: int, height: int, levels: int, mip: MipOptions,
                  depth: int = 1, *, wanted: bool = True) -> str:
    """The storage format the mip step will store this texture's levels through (the
    ``store_levels`` argument of :func:`gputex.texture.create_texture`), or "" (also where not
    ``wanted``: :func:`upload_image`'s ``store``)."""
    if not wanted or levels <= 1 or depth > 1:
        return ""
    from .mips import stored_format

    return stored_format(session, fmt, width, height, levels, depth, filter=mip.filter, precision=mip.precision,
                         normal_map=mip.normal_map, coverage=mip.alpha_coverage)


def _upload_texfile(session: Session, tf, opts: Options, result: Result, usage: int = 0,
                    decode_blocks: bool = True, store: bool = True) -> Texture:
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
                                                             tf.depth, opts.mip_options.path),
                                  store_levels=stored_levels(session, tf.format, tf.width, tf.height, want,
                                                             opts.mip_options, tf.depth,
                                                             wanted=store and make_mips and not tf.format.compressed))
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


def upload_image(session: Session, image, opts: Options, result: Result, usage: int = 0,
                 decode_blocks: bool = True, progress=None, store: bool = True) -> Texture:
    """Upload one decoded image (or texture file) as ``opts`` say: format, resize, mip levels
    allocated and made. The CLI's stages and :func:`gputex.upload` both come here. ``store``: the
    texture may be made for stored levels where the exact chain stores them (:func:`stored_levels`:
    then its GPU texture is the linear twin with the sRGB view format); the CLI's steps keep their
    textures to themselves, :func:`gputex.upload` hands its texture to the caller and asks only
    when the caller does (``store_levels=True``)."""
    import wgpu

    from .upload import resolve_format, upload

    if is_texfile(image):
        t = opts.transform
        if t is not None and (t.resize or t.max_size or t.pot):
            from .errors import FormatError

            raise FormatError(f"{image.source}: --resize, --max-size and --pot apply to images, "
                              "not texture files")
        return _upload_texfile(session, image, opts, result, usage, decode_blocks, store)
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
                                                              alloc, path=opts.mip_options.path),
                     store_levels=stored_levels(session, resolve_format(image, fmt, session, space), image.width,
                                                image.height, alloc, opts.mip_options, wanted=store),
                     usage=usage | (wgpu.TextureUsage.TEXTURE_BINDING if levels > 1 or size or bc else 0))
    if size:
        from .transform import resize_texture

        with timed(result, "resize"):
            try:
                resized = resize_texture(tex, *size, levels=levels, usage=usage | (
                    wgpu.TextureUsage.TEXTURE_BINDING if levels > 1 or bc else 0), **opts.mip_options.resize_kwargs(),
                    render_target=drawn_levels(session, tex.format, levels, path=opts.mip_options.path),
                    store_levels=stored_levels(session, tex.format, size[0], size[1], levels, opts.mip_options,
                                               wanted=store))
            finally:
                tex.destroy()
        result.resized_from = [image.width, image.height]
        resized.upload_path, tex = tex.upload_path, resized
    note_texture(result, tex)
    if levels > 1:
        from .convert import native_rows
        from .mips import generate_mips

        # level 0's bytes where they are the image's own (the host's mip engine reads none back)
        base = None if size else native_rows(image.pixels, tex.color_space, tex.format,
                                             premultiply=opts.premultiply, flip_y=opts.flip_y)
        with timed(result, "mips"):
            report = generate_mips(tex, base=base, **opts.mip_options.kwargs())
        result.mips_engine = "host" if report.engine == "cpu" else "gpu"
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


def note_texture(result: Result, tex: Texture, format_name: str | None = None) -> None:
    """What a result reports about the texture made for it."""
    result.format, result.width, result.height = format_name or tex.format.name, tex.width, tex.height
    result.levels, result.color_space, result.upload_path = tex.levels, tex.color_space, tex.upload_path


def run_one(result: Result, fn: Callable[[], None], session: Session | None = None, *,
            decode: bool = False) -> Result:
    """Run one input's work; its errors go into ``result``. A lost device is recreated and
    the input retried once. ``decode``: the work is a decode, whose C libraries' chatter it
    claims (:func:`gputex.chatter.watch`)."""
    from .chatter import watch
    from .errors import DeviceLostError

    chatter: list[str] = []  # C libraries' stderr and wgpu's log, as one line (gputex.chatter)
    try:
        try:
            with watch(result.source, chatter, claim=decode):
                fn()
        except DeviceLostError as e:
            if session is None:
                raise
            session.recreate()
            result.warnings.append(f"{result.source}: {e}; device recreated, input retried")
            chatter.clear()
            with watch(result.source, chatter, claim=decode):
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


def levels_wanted(opts: Options, tex: Texture) -> list[int]:
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


def decode_stage(opts: Options, names: OutputNames | None = None, split=None):
    """The decode step for the batch runner: ``item -> (Result, Image or None)``. ``split``: a
    :class:`gputex.upload_stage.HostSplit` (``upload -o``): its plan lets the decode worker write
    the texture file itself; the result then comes back with no image (nothing for the GPU)."""

    def run(item) -> tuple[Result, Any]:
        result = Result(source=item.path)
        if item.error:
            result.ok, result.error = False, item.error
            return result, None
        if opts.skip_existing and up_to_date(item, names, opts.out, opts.container):
            result.skipped = True
            return result, None
        holder: list = []
        slot: list = []
        plan = None
        if split is not None:
            run_one(result, lambda: holder.append(split.plan(item)))
            plan = holder.pop() if holder else None
            if not result.ok:
                return result, None
        run_one(result, lambda: holder.append(decode_input(item.path, opts, result, item, plan, slot)), decode=True)
        if not holder and plan is not None:
            split.release(plan)
        if holder and split is not None and split.written(holder[0], result):
            return result, None
        if holder:
            got = holder[0]
            result.warnings.extend(w for w in getattr(got, "warnings", ()) if w not in result.warnings)
            result.bytes = sum(len(lv) for lv in got.levels) if is_texfile(got) else int(got.pixels.nbytes)
        return result, (Decoded(holder.pop(), bool(slot), plan.out if plan is not None else None) if holder
                        else None)

    return run


def stored_channels(result: Result) -> int:
    """Channels a block-compressed file's format holds (its decoded twin has 4), else 0."""
    from .formats import FORMATS

    fmt = FORMATS.get(result.format or "")
    return fmt.channels if fmt is not None and fmt.compressed and fmt.channels < 4 else 0
