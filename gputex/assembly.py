"""Several images -> one texture: a 2D array, a cube map (or cube array) or a 3D texture.

``upload A B C... --array|--cube|--volume -o OUT.ktx2``: every input (every page of a
multi-page TIFF) is one layer, face or depth slice, uploaded into one texture, resized and
mipped per layer/face, verified and written by the same steps as one image
(:mod:`gputex.pipeline`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .outputs import refuse_overwriting_inputs
from .pipeline import (
    Options,
    Result,
    all_mips,
    color_space_of,
    decode_input,
    drawn_levels,
    is_texfile,
    mip_levels,
    note_texture,
    run_one,
    timed,
    upload_format,
)
from .upload_stage import verify_and_write

if TYPE_CHECKING:
    from .device import Session
    from .outputs import OutputNames

__all__ = ["assemble_file"]


def assemble_file(session: Session, paths: list[str], kind: str, opts: Options,
                  names: OutputNames | None = None) -> Result:
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
            if is_texfile(im):
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
        up_fmt, up_space, _ = upload_format(opts)
        fmt = get_format(up_fmt) if up_fmt else default_format(first, session, color_space_of(opts))
        space = "srgb" if fmt.srgb else (up_space or first.color_space)
        size = opts.transform.target_size(first.width, first.height) if opts.transform else None
        size = None if size == (first.width, first.height) else size
        if size and kind == "volume":
            from .errors import UsageError

            raise UsageError("--volume textures are not resized (--resize, --max-size and --pot are 2D)")
        if size and kind == "cube" and size[0] != size[1]:
            raise LimitError(f"cube faces must stay square; the resize makes them {size[0]}x{size[1]}")
        levels = mip_levels(opts, *(size or (first.width, first.height)), len(images) if kind == "volume" else 1)
        n = len(images)
        with timed(result, "upload"):
            tex = create_texture(session, fmt, first.width, first.height, layers=1 if kind == "volume" else n,
                                 depth=n if kind == "volume" else 1, levels=1 if size else levels, color_space=space,
                                 source=result.source,
                                 render_target=drawn_levels(session, fmt, 1 if size else levels,
                                                            n if kind == "volume" else 1, opts.mip_options.path),
                                 usage=wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC
                                 | wgpu.TextureUsage.TEXTURE_BINDING)
        tex.faces, tex.array = (6 if kind == "cube" else 1), (kind == "array" or (kind == "cube" and n > 6))
        try:
            with timed(result, "upload"):
                for z, im in enumerate(images):
                    tex.upload_path = write_image(tex, im, layer=z, premultiply=opts.premultiply, flip_y=opts.flip_y,
                                                  budget=opts.budget, path=opts.upload_path)
            if size:  # every layer / face resized on the GPU; the chain starts from them
                from .transform import resize_texture

                with timed(result, "resize"):
                    resized = resize_texture(tex, *size, levels=levels, usage=wgpu.TextureUsage.TEXTURE_BINDING,
                                             **opts.mip_options.resize_kwargs(),
                                             render_target=drawn_levels(session, fmt, levels,
                                                                        n if kind == "volume" else 1,
                                                                        opts.mip_options.path))
                resized.upload_path = tex.upload_path
                tex.destroy()
                tex = resized
                result.resized_from = [first.width, first.height]
            note_texture(result, tex)
            result.texture = {"array": "2d-array", "cube": "cube-array" if n > 6 else "cube", "volume": "3d"}[kind]
            if levels > 1:
                with timed(result, "mips"):
                    all_mips(tex, opts)
            verify_and_write(tex, images, Item(paths[0]), opts, names, result)
            result.bytes = sum(int(im.pixels.nbytes) for im in images)
        finally:
            tex.destroy()

    return run_one(result, work, session)


def _decode_layers(paths: list[str], opts: Options, result: Result) -> tuple[list, list[str]]:
    """The images of ``--array/--cube/--volume``: every page of a multi-page TIFF is one layer
    (face, slice), in page order; labels name each (``file[page N]`` for pages after the first)."""
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO, decode

    images, labels = [], []
    for p in paths:
        first = decode_input(p, opts, result)
        images.append(first)
        labels.append(p)
        if is_texfile(first) or first.pages == 1:
            continue
        result.warnings[:] = [w for w in result.warnings if not w.startswith(f"{p}: has {first.pages} pages")]
        _check_pages(p, first, opts)
        with timed(result, "decode"):
            for i in range(1, first.pages):
                images.append(decode(p, page=i, exif_rotate=opts.exif_rotate,
                                     max_pixels=opts.max_pixels or DEFAULT_MAX_PIXELS,
                                     max_ratio=DEFAULT_MAX_RATIO if opts.max_ratio is None else opts.max_ratio))
                labels.append(f"{p}[page {i}]")
    return images, labels


def _check_pages(path: str, first, opts: Options) -> None:
    """Every page of a multi-page file together within the decode limits (pages sharing one
    strip would make a small file a bomb), and at most 2048 of them (KTX2's layer limit)."""
    from .budget import check_ratio
    from .decode import DEFAULT_MAX_RATIO
    from .errors import LimitError

    if first.pages > 2048:
        raise LimitError(f"{path}: {first.pages} pages; at most 2048 layers are taken")
    ratio = DEFAULT_MAX_RATIO if opts.max_ratio is None else opts.max_ratio
    check_ratio(path, int(first.pixels.nbytes) * first.pages, os.path.getsize(path), ratio)
