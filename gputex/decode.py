"""Decode: an image file -> :class:`Image` (pixels as numpy, plus what they mean).

Pillow opens everything it can; 8- and 16-bit PNGs other than palette ones go through
``pngdec`` (libdeflate + a C unfilter, ~2x libpng) or imagecodecs' libpng instead: Pillow opens
16-bit RGB/RGBA and grey+alpha as 8-bit, and both decode straight into one numpy array.
Every Pillow mode lands in one of four shapes of data:

============  =========================  ========  ==================
Pillow mode   becomes                    dtype     colour space
============  =========================  ========  ==================
1             L (0 / 255)                uint8     srgb
L, LA         as is                      uint8     srgb
P, PA         RGB, or RGBA when the      uint8     srgb
              palette has transparency
RGB, RGBA     as is (RGBX -> RGB,        uint8     srgb
              RGBa/La un-premultiplied)
CMYK, YCbCr,  RGB (Pillow's conversion)  uint8     srgb
LAB, HSV
I;16*         L, 16 bits                 uint16    linear (srgb with an ICC
                                                   profile)
16-bit PNG    L / LA / RGB / RGBA        uint16    linear; srgb with sRGB,
                                                   iCCP or a gAMA other
                                                   than 1.0
I             L, 32-bit signed           int32     linear
F (TIF)       L, float                   float32   linear
============  =========================  ========  ==================

16-bit data that says nothing of its colour is linear: such files are mostly heightmaps,
normal maps and other data (a photo editor writes ``sRGB``/``iCCP``). Float TIFF, 16-bit
colour TIFF, OpenEXR, Radiance HDR, PFM and ``.npy`` files are decoded in ``hdr.py``.

Grey and RGB colour keys (``tRNS`` / Pillow's ``transparency``) become an alpha channel,
also in grey PNGs of 1, 2 and 4 bits (Pillow scales those samples to 8 bits but not the key).
EXIF orientation is applied unless ``exif_rotate=False``, wherever Pillow's
``exif_transpose`` finds it (``orient.py``). PSD files give their composite image.
"""

from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING

from .budget import RATIO_FLOOR_BYTES  # noqa: F401  (re-exported)
from .budget import check_ratio as _check_ratio
from .budget import check_size as _check_size
from .errors import DecodeError, LimitError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Image", "decode", "from_array", "DEFAULT_MAX_PIXELS"]

from .image import Image, from_array  # noqa: E402  (the decoded-image type lives in gputex.image)

#: Refuse images above this many pixels before decoding (decompression bombs).
DEFAULT_MAX_PIXELS = 16384 * 16384
#: Refuse images that would decode to more than this many times their file size, once they
#: decode to more than RATIO_FLOOR_BYTES (gputex.budget: one budget for every reader).
DEFAULT_MAX_RATIO = 1000.0


def _read_bytes(path: str) -> bytes:
    from .inputs import read_input  # once, regular files only, size-capped

    return read_input(path)


def _orient(a: np.ndarray, orientation: int) -> np.ndarray:
    """Apply an EXIF orientation (1-8) to an (H, W, C) array, as Pillow's exif_transpose does."""
    import numpy as np

    ops = {
        2: lambda x: x[:, ::-1],
        3: lambda x: x[::-1, ::-1],
        4: lambda x: x[::-1],
        5: lambda x: x.transpose(1, 0, 2),
        6: lambda x: np.rot90(x, -1),
        7: lambda x: x[::-1, ::-1].transpose(1, 0, 2),
        8: lambda x: np.rot90(x, 1),
    }
    op = ops.get(orientation)
    return np.ascontiguousarray(op(a)) if op else a


def _decode_png_direct(path: str, data: bytes, header) -> Image:
    import imagecodecs
    import numpy as np

    from . import pngdec

    a = pngdec.decode(data, header)  # libdeflate + C unfilter (~2x libpng); None: libpng decodes
    try:
        a = imagecodecs.png_decode(data) if a is None else a
    except Exception as e:  # imagecodecs raises its own PngError: same message as Pillow's path
        raise DecodeError(f"{path}: truncated or corrupt image data") from e
    if a.ndim == 2:
        a = a[:, :, None]
    dtype = np.uint16 if header.bit_depth == 16 else np.uint8
    a = a.astype(dtype, copy=False)
    key = header.transparent_key()
    if key is not None and a.shape[2] == header.channels:  # libpng may already have expanded tRNS
        alpha = np.where((a == np.array(key, dtype)).all(axis=2), 0, np.iinfo(dtype).max).astype(dtype)
        a = np.concatenate([a, alpha[:, :, None]], axis=2)
    names = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
    mode = names[a.shape[2]] + (";16" if header.bit_depth == 16 else "")
    default = "linear" if header.bit_depth == 16 else "srgb"  # (the table above)
    return Image(np.ascontiguousarray(a), header.color_space or default, path, mode)


def _pillow_pixels(im) -> tuple[np.ndarray, str]:
    """Pillow image -> (H, W, C) array and its colour space, through the mode table."""
    import numpy as np

    mode = im.mode
    trns = im.info.get("transparency")
    if mode == "1":
        return np.asarray(im.convert("L")), "srgb"
    if mode in ("P", "PA"):
        has_alpha = mode == "PA" or trns is not None
        return np.asarray(im.convert("RGBA" if has_alpha else "RGB")), "srgb"
    if mode in ("L", "RGB") and trns is not None:  # colour key
        a = np.asarray(im)
        a3 = a[:, :, None] if a.ndim == 2 else a
        key = np.array(trns if isinstance(trns, tuple) else (trns,), dtype=a.dtype)
        alpha = np.where((a3 == key[: a3.shape[2]]).all(axis=2), 0, 255).astype(np.uint8)
        return np.concatenate([a3, alpha[:, :, None]], axis=2), "srgb"
    if mode in ("L", "LA", "RGB", "RGBA"):
        return np.asarray(im), "srgb"
    if mode in ("La", "RGBa"):
        return np.asarray(im.convert(mode.upper())), "srgb"
    if mode == "RGBX":
        return np.asarray(im)[:, :, :3], "srgb"
    if mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        return np.asarray(im.convert("RGB")), "srgb"
    if mode.startswith("I;16"):
        return np.asarray(im).astype(np.uint16), "srgb"
    if mode == "I":
        return np.asarray(im).astype(np.int32), "linear"
    if mode == "F":
        return np.asarray(im).astype(np.float32), "linear"
    raise DecodeError(f"unsupported image mode {mode}")


def decode(path: str | os.PathLike, *, exif_rotate: bool = True,
           max_pixels: int = DEFAULT_MAX_PIXELS, max_ratio: float = DEFAULT_MAX_RATIO,
           page: int = 0) -> Image:
    """Decode an image file.

    Parameters
    ----------
    path
        Any file Pillow opens; 16-bit PNGs keep all 16 bits.
    exif_rotate
        Apply the EXIF orientation tag (default) or keep the stored orientation.
    max_pixels
        Refuse (``LimitError``) images with more pixels than this, from the header,
        before the pixel data is decoded.
    max_ratio
        Refuse images that would decode to more than ``RATIO_FLOOR_BYTES`` (64 MiB) and
        more than ``max_ratio`` times their file size (decompression bombs); 0 disables.
    page
        Which page of a multi-page TIFF (``Image.pages`` says how many there are; a decode
        of page 0 of several adds a warning naming the count).

    Raises
    ------
    InputError, DecodeError, LimitError
    """
    import io

    import numpy as np
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    from . import png

    path = os.fspath(path)
    data = _read_bytes(path)
    if not data:
        raise DecodeError(f"{path}: empty file")
    from . import hdr

    kind = hdr.sniff(data)
    pages = hdr.tiff_pages(data) if kind == "tiff" else []
    if page and not 0 <= page < len(pages):
        raise DecodeError(f"{path}: has no page {page} ({max(1, len(pages))} page(s))")
    if kind in ("exr", "hdr", "npy", "pfm") or (kind == "tiff" and hdr.tiff_for_libtiff(pages)):
        return _decode_hdr(path, data, kind, pages, page, exif_rotate, max_pixels, max_ratio)
    header = None
    if data.startswith(png.SIGNATURE):
        try:
            header = png.read_header(data)
        except ValueError as e:
            raise DecodeError(f"{path}: {e}") from None
        _check_size(path, header.width, header.height, max_pixels)
    from .budget import check_ico, check_tiff

    check_ico(path, data, max_pixels, max_ratio)  # Pillow decodes the embedded image while opening
    # gputex checks pixels (and bytes) itself, below; Pillow's own check stays as a backstop for
    # images nested in other containers (it raises above twice this)
    PILImage.MAX_IMAGE_PIXELS = max_pixels
    try:
        with PILImage.open(io.BytesIO(data)) as im:
            _check_size(path, im.width, im.height, max_pixels)
            _check_ratio(path, _decoded_bytes(im, header), len(data), max_ratio)
            if im.format == "TIFF":  # libtiff allocates whole tiles / strips, whatever the image size
                check_tiff(path, data, max_pixels, max_ratio)
            # (Pillow's getexif() decodes a whole PNG to look for a trailing eXIf chunk)
            orientation = 1
            if exif_rotate:
                from .orient import orientation_value

                orientation = (header.orientation() if header is not None
                               else orientation_value(im.getexif().get(0x0112)) or 1)
            if header is not None and (header.bit_depth == 16 or (header.bit_depth == 8 and header.color_type != 3)):
                # libpng decodes straight into one array (Pillow holds its own copy as well)
                image = _decode_png_direct(path, data, header)
            else:
                if getattr(im, "_min_frame", 0) == 0:  # (PSD's frame 1 is its first layer, not the image)
                    im.seek(page)
                im.load()
                key = header.transparent_key() if header is not None and header.bit_depth < 8 else None
                if key is not None:
                    pixels, space = _low_bit_grey_key(im, header.bit_depth, key[0]), "srgb"
                else:
                    pixels, space = _pillow_pixels(im)
                if im.mode.startswith("I;16") and not im.info.get("icc_profile"):
                    space = "linear"  # 16-bit data that says nothing of colour: heightmaps, normals
                if header is not None and header.color_space:
                    space = header.color_space
                pixels = pixels[:, :, None] if pixels.ndim == 2 else pixels
                image = Image(np.ascontiguousarray(pixels), space, path, im.mode)
                if im.format == "TIFF":  # Pillow's TIFF loader applies the Orientation tag itself
                    from .orient import orientation_value

                    applied = orientation_value(pages[page]["orientation"]) if pages else orientation
                    orientation = 1 if exif_rotate else {6: 8, 8: 6}.get(applied or 1, applied or 1)
    except UnidentifiedImageError:
        raise DecodeError(f"{path}: {_unidentified(data)}") from None
    except PILImage.DecompressionBombError as e:  # Pillow's backstop (an image nested in a container)
        raise LimitError(f"{path}: {' '.join(str(e).split())} (raise it with --max-pixels)") from None
    except (DecodeError, LimitError) as e:
        if str(e).startswith(path):
            raise
        raise type(e)(f"{path}: {e}") from None
    except (OSError, SyntaxError, ValueError, EOFError, zlib.error) as e:
        raise DecodeError(f"{path}: {_corrupt_message(e)}") from None
    except MemoryError:
        raise
    except Exception as e:  # a decoder's own bug on a hostile file (found by fuzzing): still corrupt input
        raise DecodeError(f"{path}: {_corrupt_message(e)}") from e
    if image.width == 0 or image.height == 0:
        raise DecodeError(f"{path}: image has zero width or height")
    image.pixels = _orient(image.pixels, orientation)
    return _paged(image, pages, page)


def _paged(image: Image, pages: list, page: int) -> Image:
    """Note a multi-page file's page count (and, for page 0, a warning that only it was taken)."""
    image.pages = max(1, len(pages))
    if image.pages > 1 and page == 0:
        image.warnings.append(f"{image.source}: has {image.pages} pages; only the first was taken "
                              "(upload --array takes every page as a layer)")
    return image


def _decode_hdr(path: str, data: bytes, kind: str, pages: list, page: int, exif_rotate: bool,
                max_pixels: int, max_ratio: float) -> Image:
    """Float / HDR / ``.npy`` files and the TIFFs libtiff reads (``hdr.py``), limits checked first."""
    from . import hdr

    w, h, nbytes = hdr.float_dimensions(path, data, kind, page, pages)
    _check_size(path, w, h, max_pixels)
    _check_ratio(path, nbytes, len(data), max_ratio)
    image = hdr.decode_float(path, data, kind, page=page, pages=pages)
    if exif_rotate and pages:  # a TIFF's Orientation tag, as Pillow applies it to the TIFFs it reads
        from .orient import orientation_value

        image.pixels = _orient(image.pixels, orientation_value(pages[page]["orientation"]) or 1)
    return _paged(image, pages, page)


def _unidentified(data: bytes) -> str:
    """Why Pillow could not identify ``data``, where gputex can say more."""
    from .texfile import sniff

    if sniff(data[:12]) is not None:
        return "a texture file (KTX2, KTX or DDS), not an image; read it with gputex.read_texture_file"
    if data[:4] == b"\0\0\1\0" and data[4:6] == b"\0\0":  # Pillow < 13 writes these for images under 16x16
        return "ICO file holds no images"
    return "not an image (unknown or unsupported file format)"


def _low_bit_grey_key(im, depth: int, key: int) -> np.ndarray:
    """Grey PNG of bit depth 1, 2 or 4 with a tRNS key -> grey+alpha. Pillow scales the samples
    to 8 bits (x * 255 / (2^depth - 1)) but compares the key unscaled, so it is compared here
    at the file's depth, scaled the same way (the spec uses the key's low ``depth`` bits)."""
    import numpy as np

    grey = np.asarray(im.convert("L") if im.mode == "1" else im)
    grey = grey[:, :, 0] if grey.ndim == 3 else grey
    key8 = (key & ((1 << depth) - 1)) * (255 // ((1 << depth) - 1))
    alpha = np.where(grey == key8, 0, 255).astype(np.uint8)
    return np.stack([grey.astype(np.uint8), alpha], axis=2)


def _corrupt_message(e: BaseException) -> str:
    """One stable line for the many ways Pillow reports a damaged file."""
    msg = " ".join(str(e).split()) or type(e).__name__
    low = msg.lower()
    if isinstance(e, EOFError) or any(k in low for k in ("truncated", "broken data stream", "premature end",
                                                         "unrecognized data stream")):
        return "truncated or corrupt image data"
    if "max_text_chunk" in low or low == "decompressed data too large":  # Pillow >= 10.1, and 10.0
        return "oversized text chunk (over Pillow's MAX_TEXT_CHUNK; a decompression bomb?)"
    if msg.lstrip("-").isdigit():  # Pillow 10.0 says "-2" where later versions say "decoder error -2"
        msg = f"decoder error {msg}"
    return f"corrupt image data ({msg})"


def _decoded_bytes(im, header) -> int:
    """Bytes the decoded pixels will take, from the header alone."""
    if header is not None:  # PNG: palette images expand to RGB(A) bytes
        per = 4 if header.color_type == 3 else header.channels * max(1, header.bit_depth // 8)
        return header.width * header.height * per
    per_band = 4 if im.mode in ("I", "F") else (2 if ";16" in im.mode else 1)
    return im.width * im.height * max(1, len(im.getbands())) * per_band
