"""The order of the steps: decode -> upload -> (mips) -> capture -> encode.

This is the only module that knows that order. Each function handles one input and
returns a :class:`Result`; errors of that input are caught into the result so a
batch goes on (the CLI turns failed results into exit code 1).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .errors import GputexError, OutputError

if TYPE_CHECKING:
    from .device import Session
    from .texture import Texture

__all__ = ["Options", "Result", "OutputNames", "Thresholds", "upload_file", "capture_file", "compare_files",
           "assemble_file",
           "stats_file", "output_name", "decode_stage", "capture_gpu_stage", "capture_encode_stage",
           "upload_gpu_stage"]


@dataclass
class Options:
    """Everything the steps need to know; the CLI fills it from flags."""

    format: str | None = None
    color_space: str | None = None
    premultiply: bool = False
    flip_y: bool = False
    exif_rotate: bool = True
    max_pixels: int | None = None
    max_ratio: float | None = None
    budget: int = 64 << 20
    upload_path: str = "auto"
    # mips
    mips: bool = False
    mip_levels: int | None = None
    mip_options: dict[str, Any] = field(default_factory=dict)
    # capture
    level: str = "0"  # "N" or "all"
    float_as: str = "tiff"
    png_level: int | None = None  # None: fast (fpng for 8-bit RGB/RGBA, zlib level 1 otherwise)
    sheet: bool = False
    skip_existing: bool = False
    # texture files (upload -o)
    out: str | None = None  # a .ktx2 / .dds path, or a folder
    container: str = "ktx2"
    zstd: int | None = None
    bc_decode: str = "spec"  # BC1-BC5 capture: "spec" (compute decoder) or "sampler" (texture units)
    # transforms (resize on the GPU before mips; swizzle on the decoded image): gputex.transform
    transform: Any = None  # a gputex.transform.Transform, or None
    # block compression (upload --format bc*: gputex.bcenc)
    quality: str = "normal"
    report: bool = False  # PSNR of every encoded level against its source


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
def _timed(result: Result, stage: str):
    from .trace import span

    t0 = time.perf_counter()
    try:
        with span("stage:" + stage):
            yield
    finally:
        result.timings[stage] = result.timings.get(stage, 0.0) + time.perf_counter() - t0


def _decode(path: str, opts: Options, result: Result, item=None):
    """An :class:`Image`, or a :class:`TextureFile` for KTX2 / KTX / DDS files (by their magic);
    a ``--pack`` item's channels packed into one image; ``--swizzle`` applied to images."""
    image = _decode_file(path, opts, result, item)
    swizzle = opts.transform.swizzle if opts.transform else None
    if swizzle and not _is_texfile(image):
        from .transform import apply_swizzle

        image = apply_swizzle(image, swizzle)
    return image


def _decode_file(path: str, opts: Options, result: Result, item=None):
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
    from .texfile import is_texture_file, read_texture_file

    if getattr(item, "sources", None):
        from .transform import pack_channels

        return pack_channels(item.channels, lambda p: _decode_file(p, opts, result),
                             color_space=_color_space(opts), source=item.path)
    with _timed(result, "decode"):
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


def _is_texfile(obj) -> bool:
    from .texfile import TextureFile

    return isinstance(obj, TextureFile)


def _mip_levels(opts: Options, width: int, height: int, depth: int = 1) -> int:
    from .layout import mip_count

    if not opts.mips:
        return 1
    full = mip_count(width, height, depth)
    return min(opts.mip_levels or full, full)


def _all_mips(tex: "Texture", opts: Options) -> None:
    """Generate the chain for every layer / cube face (a 3D texture gets one 3D chain)."""
    from .mips import generate_mips

    for layer in range(tex.layers):  # a 3D texture is one "layer": its chain is 3D
        generate_mips(tex, layer=layer, **opts.mip_options)


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

    want = _mip_levels(opts, tf.width, tf.height, tf.depth) if len(tf.levels) == 1 else len(tf.levels)
    make_mips = want > len(tf.levels)
    keep_compressed = tf.format.compressed and not decode_blocks
    if make_mips and keep_compressed:
        from .errors import FormatError

        raise FormatError(f"{tf.source}: mips cannot be written into {tf.format.name} (gputex does not re-encode "
                          "a block-compressed file; upload the source image with --format and --mips); capture "
                          "decodes it and can make mips of the decoded texture")
    with _timed(result, "upload"):
        alloc = None if (tf.format.compressed or not make_mips) else want
        tex = upload_texture_file(session, tf, levels=alloc, color_space=opts.color_space, budget=opts.budget,
                                  usage=usage | wgpu.TextureUsage.TEXTURE_BINDING,
                                  render_target=drawn_levels(session, tf.format, max(len(tf.levels), alloc or 0),
                                                             tf.depth))
    if tf.format.compressed and not keep_compressed:
        from .unblock import decode_blocks as _decode_blocks

        try:
            with _timed(result, "decode_blocks"):
                plain = _decode_blocks(tex, levels=want if make_mips else None, mode=opts.bc_decode)
        finally:
            tex.destroy()
        tex = plain
    _note_texture(result, tex, tf.format.name)
    result.texture = tf.kind()
    if make_mips and not keep_compressed:
        with _timed(result, "mips"):
            _all_mips(tex, opts)
    return tex


def _upload(session: "Session", image, opts: Options, result: Result, usage: int = 0,
            decode_blocks: bool = True) -> "Texture":
    import wgpu

    from .upload import resolve_format, upload

    if _is_texfile(image):
        t = opts.transform
        if t is not None and (t.resize or t.max_size or t.pot):
            from .errors import FormatError

            raise FormatError(f"{image.source}: --resize, --max-size and --pot apply to images, "
                              "not texture files")
        return _upload_texfile(session, image, opts, result, usage, decode_blocks)
    size = opts.transform.target_size(image.width, image.height) if opts.transform else None
    if size == (image.width, image.height):
        size = None
    levels = _mip_levels(opts, *(size or (image.width, image.height)))
    fmt, space, bc = _upload_format(opts)
    alloc = 1 if size else levels
    with _timed(result, "upload"):
        tex = upload(session, image, fmt, color_space=space, levels=alloc,
                     premultiply=opts.premultiply, flip_y=opts.flip_y, budget=opts.budget,
                     path=opts.upload_path,
                     render_target=alloc > 1 and drawn_levels(session, resolve_format(image, fmt, session, space),
                                                              alloc),
                     usage=usage | (wgpu.TextureUsage.TEXTURE_BINDING if levels > 1 or size or bc else 0))
    if size:
        from .transform import resize_texture

        with _timed(result, "resize"):
            try:
                resized = resize_texture(tex, *size, levels=levels, usage=usage | (
                    wgpu.TextureUsage.TEXTURE_BINDING if levels > 1 or bc else 0), **opts.mip_options)
            finally:
                tex.destroy()
        result.resized_from = [image.width, image.height]
        resized.upload_path, tex = tex.upload_path, resized
    _note_texture(result, tex)
    if levels > 1:
        from .mips import generate_mips

        with _timed(result, "mips"):
            generate_mips(tex, **opts.mip_options)
    return tex


def _color_space(opts: Options) -> str | None:
    """``--color-space``, else linear for ``--normal-map`` (normals are data, never sRGB), else
    None (the file decides)."""
    if opts.color_space is None and opts.mip_options.get("normal_map"):
        return "linear"
    return opts.color_space


def _upload_format(opts: Options) -> tuple[str | None, str | None, bool]:
    """(format to upload to, colour space, whether it is then block-encoded): a BC format gputex
    encodes (``gputex.bcenc``) is reached through its uncompressed source format."""
    from .bcenc import encodable

    if not opts.format or not encodable(opts.format):
        return opts.format, _color_space(opts), False
    from .bcenc import source_format
    from .formats import get_format

    target = get_format(opts.format)
    return source_format(target), "srgb" if target.srgb else _color_space(opts), True


def _bc_encode(tex: "Texture", opts: Options, result: Result) -> "Texture | None":
    """``tex`` (mips included) block-encoded into ``opts.format``; None when that is not a BC
    format gputex encodes. With ``opts.report`` the PSNR of every level goes into the result."""
    if not _upload_format(opts)[2]:
        return None
    from .bcenc import encode_blocks, psnr_report

    with _timed(result, "bc_encode"):
        encoded = encode_blocks(tex, opts.format, opts.quality)
    encoded.upload_path = tex.upload_path
    try:
        if opts.report:
            with _timed(result, "report"):
                result.bc_report = psnr_report(tex, encoded)
    except BaseException:
        encoded.destroy()
        raise
    _note_texture(result, encoded)
    return encoded


def _note_texture(result: Result, tex: "Texture", format_name: str | None = None) -> None:
    """What a result reports about the texture made for it."""
    result.format, result.width, result.height = format_name or tex.format.name, tex.width, tex.height
    result.levels, result.color_space, result.upload_path = tex.levels, tex.color_space, tex.upload_path


def _run(result: Result, fn: Callable[[], None], session: "Session | None" = None) -> Result:
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

    def run(item, holder, result: Result):
        image = holder.pop()

        def work() -> None:
            tex = _upload(session, image, opts, result, decode_blocks=False)
            try:
                _verify_and_write(tex, image, item, opts, names, result)
            finally:
                tex.destroy()

        _run(result, work, session)
        return None

    return run


def _verify_and_write(tex: "Texture", source, item, opts: Options, names, result: Result) -> None:
    encoded = None if _is_texfile(source) else _bc_encode(tex, opts, result)
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
    from .convert import to_texture_rows

    result.layout = tex.layout(0).as_dict()
    stored = None
    shape = (result.layout["rows_per_image"], result.layout["bytes_per_row"])
    with _timed(result, "capture"):
        if opts.out or _is_texfile(source):
            stored = capture_texture_file(encoded or tex, budget=opts.budget)
    if encoded is not None:
        result.layout = encoded.layout(0).as_dict()

    def level0(z: int):
        if stored is None or encoded is not None:
            return capture_bytes(tex, 0, z, budget=opts.budget)
        n = stored.image_bytes(0)
        return np.frombuffer(memoryview(stored.levels[0])[z * n: (z + 1) * n], np.uint8).reshape(shape)

    with _timed(result, "verify"):
        if _is_texfile(source):
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
    if opts.out and result.ok:
        from .texfile import write_texture_file

        stored.premultiplied = opts.premultiply or (_is_texfile(source) and source.premultiplied)
        path = _texture_output(opts, names, item)
        with _timed(result, "encode"):
            write_texture_file(stored, path, zstd=opts.zstd)
        result.outputs.append(path)


def _stem(item) -> str:
    """The output name stem of an input: its file name without the suffix (packs: their own)."""
    stem = getattr(item, "stem", None)
    return stem or os.path.splitext(os.path.basename(item.path))[0]


def _texture_output(opts: Options, names: "OutputNames | None", item) -> str:
    if os.path.splitext(opts.out)[1].lower() in (".ktx2", ".dds"):
        refuse_overwriting_inputs(opts.out, [item.path])
        return opts.out
    stem = _stem(item)
    assert names is not None
    return names.take(stem, "." + opts.container, item.subdir)


def refuse_overwriting_inputs(out: str, inputs: list[str]) -> None:
    """OutputError if ``out`` is one of ``inputs`` (the same file, by any name or hard link):
    inputs are never overwritten."""
    for p in inputs:
        try:
            same = os.path.samefile(out, p)
        except (OSError, ValueError):
            same = False
        if same:
            raise OutputError(f"{out}: output would overwrite the input {p}; choose another output name")


def assemble_file(session: "Session", paths: list[str], kind: str, opts: Options,
                  names: "OutputNames | None" = None) -> Result:
    """Several images -> one array (``kind="array"``), cube map (``"cube"``, 6 per cube:
    +x -x +y -y +z -z) or volume (``"volume"``, one depth slice each) texture, with mips per
    layer/face, verified and (with ``opts.out``) written as KTX2 / DDS."""
    from .batch import Item
    from .errors import FormatError, LimitError
    from .texture import create_texture, default_format
    from .upload import write_image

    result = Result(source=paths[0] if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1})")

    def work() -> None:
        import wgpu

        from .formats import get_format

        if opts.out:
            refuse_overwriting_inputs(opts.out, paths)
        images, labels = _decode_layers(paths, opts, result)
        for p, im in zip(labels, images):
            if _is_texfile(im):
                raise FormatError(f"{p}: --{kind} assembles images; this is a texture file")
        first = images[0]
        for p, im in zip(labels[1:], images[1:]):
            if (im.width, im.height) != (first.width, first.height) or im.pixels.dtype != first.pixels.dtype \
                    or im.channels != first.channels:
                raise FormatError(f"{p}: {im.width}x{im.height} {im.channels}-channel {im.pixels.dtype} does not "
                                  f"match {labels[0]} ({first.width}x{first.height} {first.channels}-channel "
                                  f"{first.pixels.dtype}); --{kind} inputs must share size and format")
        if kind == "cube":
            if len(images) % 6:
                raise LimitError(f"--cube needs 6 images per cube (+x -x +y -y +z -z), got {len(images)}")
            if first.width != first.height:
                raise LimitError(f"{labels[0]}: cube faces must be square, got {first.width}x{first.height}")
        up_fmt, up_space, _ = _upload_format(opts)
        fmt = get_format(up_fmt) if up_fmt else default_format(first, session, _color_space(opts))
        space = "srgb" if fmt.srgb else (up_space or first.color_space)
        size = opts.transform.target_size(first.width, first.height) if opts.transform else None
        size = None if size == (first.width, first.height) else size
        if size and kind == "volume":
            from .errors import UsageError

            raise UsageError("--volume textures are not resized (--resize, --max-size and --pot are 2D)")
        if size and kind == "cube" and size[0] != size[1]:
            raise LimitError(f"cube faces must stay square; the resize makes them {size[0]}x{size[1]}")
        levels = _mip_levels(opts, *(size or (first.width, first.height)), len(images) if kind == "volume" else 1)
        n = len(images)
        with _timed(result, "upload"):
            tex = create_texture(session, fmt, first.width, first.height, layers=1 if kind == "volume" else n,
                                 depth=n if kind == "volume" else 1, levels=1 if size else levels, color_space=space,
                                 source=result.source,
                                 render_target=drawn_levels(session, fmt, 1 if size else levels,
                                                            n if kind == "volume" else 1),
                                 usage=wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC
                                 | wgpu.TextureUsage.TEXTURE_BINDING)
        tex.faces, tex.array = (6 if kind == "cube" else 1), (kind == "array" or (kind == "cube" and n > 6))
        try:
            with _timed(result, "upload"):
                for z, im in enumerate(images):
                    tex.upload_path = write_image(tex, im, layer=z, premultiply=opts.premultiply, flip_y=opts.flip_y,
                                                  budget=opts.budget, path=opts.upload_path)
            if size:  # every layer / face resized on the GPU; the chain starts from them
                from .transform import resize_texture

                with _timed(result, "resize"):
                    resized = resize_texture(tex, *size, levels=levels, usage=wgpu.TextureUsage.TEXTURE_BINDING,
                                             **opts.mip_options)
                resized.upload_path = tex.upload_path
                tex.destroy()
                tex = resized
                result.resized_from = [first.width, first.height]
            _note_texture(result, tex)
            result.texture = {"array": "2d-array", "cube": "cube-array" if n > 6 else "cube", "volume": "3d"}[kind]
            if levels > 1:
                with _timed(result, "mips"):
                    _all_mips(tex, opts)
            _verify_and_write(tex, images, Item(paths[0]), opts, names, result)
            result.bytes = sum(int(im.pixels.nbytes) for im in images)
        finally:
            tex.destroy()

    return _run(result, work, session)


def _decode_layers(paths: list[str], opts: Options, result: Result) -> tuple[list, list[str]]:
    """The images of ``--array/--cube/--volume``: every page of a multi-page TIFF is one layer
    (face, slice), in page order; labels name each (``file[page N]`` for pages after the first)."""
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO, decode

    images, labels = [], []
    for p in paths:
        first = _decode(p, opts, result)
        images.append(first)
        labels.append(p)
        if _is_texfile(first) or first.pages == 1:
            continue
        result.warnings[:] = [w for w in result.warnings if not w.startswith(f"{p}: has {first.pages} pages")]
        _check_pages(p, first, opts)
        with _timed(result, "decode"):
            for i in range(1, first.pages):
                images.append(decode(p, page=i, exif_rotate=opts.exif_rotate,
                                     max_pixels=opts.max_pixels or DEFAULT_MAX_PIXELS,
                                     max_ratio=DEFAULT_MAX_RATIO if opts.max_ratio is None else opts.max_ratio))
                labels.append(f"{p}[page {i}]")
    return images, labels


def _check_pages(path: str, first, opts: Options) -> None:
    """Every page of a multi-page file together within the decode limits (pages sharing one
    strip would make a small file a bomb), and at most 2048 of them (KTX2's layer limit)."""
    from .decode import DEFAULT_MAX_RATIO, _check_ratio
    from .errors import LimitError

    if first.pages > 2048:
        raise LimitError(f"{path}: {first.pages} pages; at most 2048 layers are taken")
    ratio = DEFAULT_MAX_RATIO if opts.max_ratio is None else opts.max_ratio
    _check_ratio(path, int(first.pixels.nbytes) * first.pages, os.path.getsize(path), ratio)


def upload_file(session: "Session", path: str, opts: Options) -> Result:
    """Decode, upload, read back and verify that the GPU holds exactly what was sent."""
    from .batch import Item

    item = Item(path)
    result, holder = decode_stage(opts)(item)
    if holder is not None:
        upload_gpu_stage(session, opts)(item, holder, result)
    return result


def output_name(stem: str, level: int | None = None, layer: int | None = None, *, faces: int = 1,
                slice_: int | None = None, array: bool = False) -> str:
    """``stem``, plus ``_level<L>``, then ``_layer<N>`` (arrays), ``_face<F>`` (cube maps, F = 0..5
    for +x -x +y -y +z -z; cube arrays get ``_layer<N>_face<F>``) or ``_slice<Z>`` (volumes),
    where they apply."""
    name = stem
    if level is not None:
        name += f"_level{level}"
    if slice_ is not None:
        name += f"_slice{slice_}"
    elif layer is not None:
        if faces == 6:
            cube, face = divmod(layer, 6)
            name += (f"_layer{cube}" if array else "") + f"_face{face}"
        else:
            name += f"_layer{layer}"
    return name


class OutputNames:
    """Hands out output paths that never collide within one run and never hit an input."""

    def __init__(self, out_dir: str, inputs: list[str]):
        self.out_dir = out_dir
        self.used: set[str] = set()
        self.inputs = {os.path.realpath(p) for p in inputs}
        self._real: dict[str, str] = {}  # output folder -> its real path

    def _realpath(self, folder: str, name: str) -> str:
        """``realpath(folder/name)``, resolving the folder once (one lstat per output, not one per
        path component: ~12 outputs per image, on the in-order GPU thread)."""
        path = os.path.join(folder, name)
        if os.path.islink(path):
            return os.path.realpath(path)
        real = self._real.get(folder)
        if real is None:
            real = self._real[folder] = os.path.realpath(folder)
        return os.path.join(real, name)

    def folder(self, subdir: str = "") -> str:
        return os.path.join(self.out_dir, subdir) if subdir else self.out_dir

    def take(self, stem: str, suffix: str, subdir: str = "") -> str:
        folder = self.folder(subdir)
        if subdir:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as e:  # e.g. the sub-folder's name is taken by a file
                what = "exists and is not a folder" if os.path.lexists(folder) else (e.strerror or str(e))
                raise OutputError(f"{folder}: cannot create output folder ({what})") from None
        n, name = 1, stem
        while True:
            path = os.path.join(folder, name + suffix)
            if path not in self.used:
                break
            n += 1
            name = f"{stem}-{n}"
        if self._realpath(folder, name + suffix) in self.inputs:
            raise OutputError(f"{path}: output would overwrite an input; choose another -o folder")
        self.used.add(path)
        return path


class SingleOutput:
    """``capture -o FILE.png``: the one output of a one-input run goes to ``path``; a second
    output, or data that the file's suffix cannot hold, is a usage error."""

    SUFFIXES = (".png", ".tiff", ".tif", ".npy", ".exr", ".hdr")

    def __init__(self, path: str, inputs: list[str]):
        self.path = path
        self.out_dir = os.path.dirname(path) or "."
        self.used: set[str] = set()
        self.inputs = {os.path.realpath(p) for p in inputs}

    def folder(self, subdir: str = "") -> str:
        return self.out_dir

    def take(self, stem: str, suffix: str, subdir: str = "") -> str:
        from .errors import UsageError

        if self.used:
            raise UsageError(f"{self.path}: this capture has more than one output (levels, layers, faces or "
                             "a sheet); give -o a folder")
        ext = os.path.splitext(self.path)[1].lower()
        want = ".tiff" if ext == ".tif" else ext
        if want != suffix:
            raise UsageError(f"{self.path}: this capture is written as {suffix} (its data does not fit {want}); "
                             f"name the output *{suffix}")
        if os.path.realpath(self.path) in self.inputs:
            raise OutputError(f"{self.path}: output would overwrite an input; choose another -o")
        self.used.add(self.path)
        return self.path


def _levels_wanted(opts: Options, tex: "Texture") -> list[int]:
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
        if opts.skip_existing and _up_to_date(item, names, opts):
            result.skipped = True
            return result, None
        holder: list = []  # the GPU stage pops the image, so it is freed right after upload
        _run(result, lambda: holder.append(_decode(item.path, opts, result, item)))
        if holder:
            got = holder[0]
            result.warnings.extend(w for w in getattr(got, "warnings", ()) if w not in result.warnings)
            result.bytes = sum(len(lv) for lv in got.levels) if _is_texfile(got) else int(got.pixels.nbytes)
        return result, (holder if holder else None)

    return run


def _up_to_date(item, names: "OutputNames | SingleOutput | None", opts: Options) -> bool:
    """An output of this input (capture: level 0 or the only level; upload -o: its texture
    file) exists and is at least as new as the input (every source of a pack)."""
    stem = _stem(item)
    try:
        since = max(os.path.getmtime(p) for p in getattr(item, "sources", None) or [item.path])
    except OSError:
        return False
    if isinstance(names, SingleOutput):
        candidates = [names.path]
    elif opts.out is not None:  # upload -o: a texture file, or one per input in a folder
        single = os.path.splitext(opts.out)[1].lower() in (".ktx2", ".dds")
        candidates = [opts.out] if single or names is None else \
            [os.path.join(names.folder(item.subdir), stem + "." + opts.container)]
    elif names is not None:
        folder = names.folder(item.subdir)
        candidates = [os.path.join(folder, name + suffix) for name in (stem, output_name(stem, 0))
                      for suffix in (".png", ".tiff", ".npy", ".exr", ".hdr")]
    else:
        return False
    return any(os.path.exists(p) and os.path.getmtime(p) >= since for p in candidates)


def capture_gpu_stage(session: "Session", names: OutputNames, opts: Options):
    """Upload (and mips), capture the wanted levels, and reserve their output names.

    Runs on one thread in input order, so names are handed out deterministically.
    """
    from .capture import capture_levels
    from .encode import output_suffix

    def run(item, holder, result: Result):
        outputs: list = []  # (path, pixels) in order
        shown: list = []  # every captured image, for --sheet
        meta: list = []  # colour space, packed 10-bit
        image = holder.pop()

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
            tex = _upload(session, image, opts, result)
            image = None  # the texture has it now: free the pixels before capturing
            try:
                stem = _stem(item)
                levels = _levels_wanted(opts, tex)
                sheet = opts.sheet and (tex.levels > 1 or tex.images > 1)  # levels (and layers) side by side
                if opts.sheet and not sheet:
                    result.warnings.append(f"{item.path}: one level, no sheet written (add --mips for a chain)")
                wanted, levels = levels, (list(range(tex.levels)) if sheet else levels)  # the sheet: every level
                keep = _stored_channels(result)
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
                    with _timed(result, "capture"):
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
        _run(result, work, session)
        if result.ok and outputs:
            return (outputs, *meta)
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
    if not _is_texfile(source):
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
            with _timed(result, "capture"):
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


def _trim_channels(d: dict, keep: int) -> dict:
    """Per-channel lists cut to the channels a block-compressed file holds (its twin has 4)."""
    if keep:
        d = {k: (v[:keep] if isinstance(v, list) and len(v) == d.get("channels") else v) for k, v in d.items()}
        d["channels"] = keep
    return d


def _stored_channels(result: Result) -> int:
    """Channels a block-compressed file's format holds (its decoded twin has 4), else 0."""
    from .formats import FORMATS

    fmt = FORMATS.get(result.format or "")
    return fmt.channels if fmt is not None and fmt.compressed and fmt.channels < 4 else 0


def capture_encode_stage(opts: Options):
    """Encode each captured level to its reserved path (runs in the encode pool)."""
    def run(item, payload, result: Result) -> None:
        outputs, space, packed, block = payload
        _run(result, lambda: _encode_into(result, outputs, space, packed, opts, block))

    return run


def capture_file(session: "Session", path: str, names: OutputNames, opts: Options) -> Result:
    """Decode, upload (and make mips), capture the wanted levels, encode each to a file."""
    from .batch import Item

    item = Item(path)
    result, holder = decode_stage(opts, names)(item)
    if holder is not None:
        payload = capture_gpu_stage(session, names, opts)(item, holder, result)
        if payload is not None:
            capture_encode_stage(opts)(item, payload, result)
    return result


def _upload_for_reduce(session: "Session", path: str, opts: Options, result: Result) -> "Texture":
    import wgpu

    image = _decode(path, opts, result)
    return _upload(session, image, opts, result, usage=wgpu.TextureUsage.TEXTURE_BINDING)


@dataclass
class Thresholds:
    max_diff: float | None = None
    min_psnr: float | None = None

    def passes(self, r) -> bool:
        if self.max_diff is None and self.min_psnr is None:
            return r.identical
        ok = True
        if self.max_diff is not None:
            ok &= max(r.max_abs_diff) <= self.max_diff
        if self.min_psnr is not None:
            ok &= r.psnr_all is None or r.psnr_all >= self.min_psnr
        return bool(ok)


def compare_files(session: "Session", a: str, b: str, opts: Options, limits: Thresholds,
                  diff_image: str | None = None) -> dict:
    """Upload A and B, compare the wanted levels on the GPU; a dict for JSON and rendering.

    Raises GputexError for unreadable or mismatched inputs.
    """
    from .compare import compare

    if diff_image:
        refuse_overwriting_inputs(diff_image, [a, b])
    ra, rb = Result(source=a), Result(source=b)
    ta = _upload_for_reduce(session, a, opts, ra)
    try:
        tb = _upload_for_reduce(session, b, opts, rb)
        try:
            levels = _levels_wanted(opts, ta)
            t0 = time.perf_counter()
            results = [compare(ta, tb, level) for level in levels]
            seconds = time.perf_counter() - t0
            if diff_image:
                _write_diff_image(ta, tb, levels[0], diff_image)
        finally:
            tb.destroy()
    finally:
        ta.destroy()
    return {
        "a": a, "b": b, "format": results[0].format,
        "levels": [r.as_dict() for r in results],
        "within": all(limits.passes(r) for r in results),
        "thresholds": {"max_diff": limits.max_diff, "min_psnr": limits.min_psnr},
        "readback_bytes": sum(r.readback_bytes for r in results),
        "compare_seconds": round(seconds, 6),
        "diff_image": diff_image,
    }


def _write_diff_image(ta: "Texture", tb: "Texture", level: int, path: str) -> None:
    """|A - B| amplified so the largest difference is full white (8-bit RGB(A) PNG)."""
    import numpy as np

    from .capture import capture
    from .encode import encode

    a = capture(ta, level).astype(np.float64)
    b = capture(tb, level).astype(np.float64)
    d = np.abs(a - b)
    peak = d.max()
    scaled = np.floor(d * (255.0 / peak) + 0.5) if peak > 0 else d
    out = scaled.astype(np.uint8)
    if out.shape[2] == 4:
        out[:, :, 3] = 255
    encode(out, path, color_space="linear")


def stats_file(session: "Session", path: str, opts: Options, bins: int) -> Result:
    """Upload one image and compute its per-channel statistics on the GPU."""
    from .compare import stats

    result = Result(source=path)

    def work() -> None:
        tex = _upload_for_reduce(session, path, opts, result)
        try:
            with _timed(result, "stats"):
                result.stats = [_trim_channels(stats(tex, lv, bins=bins).as_dict(), _stored_channels(result))
                                for lv in _levels_wanted(opts, tex)]
        finally:
            tex.destroy()

    return _run(result, work, session)
