"""Float, HDR and raw-array inputs and outputs: float TIFF, OpenEXR, Radiance ``.hdr``, ``.npy``.

Pillow opens none of these (it reads only single-channel float TIFF), so they are decoded
here, by their first bytes, before Pillow is asked:

==================  ==========================================  =========================
input               decoder                                     becomes
==================  ==========================================  =========================
TIFF, float         imagecodecs' libtiff: 16/32/64-bit float    float32 (float16 widened,
samples             samples, 1-4 channels, every page           exact; float64 rounded)
TIFF, 16-bit        imagecodecs' libtiff (Pillow keeps 8 bits)  uint16, all 16 bits
grey+alpha / RGB(A)
OpenEXR             OpenEXR (the ASWF bindings): first part,    float32 (half widened,
                    R G B A / Y (A) / up to 4 other channels    exact); UINT -> int32
Radiance .hdr       imagecodecs' RGBE codec                     float32 RGB: exactly the
                                                                values RGBE stores
.npy                numpy (no pickles)                          uint8/uint16/float32/int32
PFM (``Pf``/``PF``)  here (Pillow reads grey PFM only, from        float32 grey / RGB, rows
                    10.3 on)                                    top to bottom
==================  ==========================================  =========================

All of them are linear data (``color_space="linear"``). ``.npy`` keeps every value exactly:
uint8 and uint16 stay unorm codes, float16 widens to float32, bool becomes 0/255, other
integers become int32 when every value fits (else an error naming the range), float64
becomes float32 with a warning when that changes any value.

Multi-page TIFFs (any sample type) are counted here from their IFD chain, so a decode can
say how many pages it did not take, and an ``--array`` upload can take every page.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING

from .errors import DecodeError, FormatError, OutputError

if TYPE_CHECKING:
    import numpy as np

    from .image import Image

__all__ = ["sniff", "tiff_pages", "tiff_for_libtiff", "decode_float", "encode_exr", "encode_hdr",
           "EXR_MAGIC", "NPY_MAGIC"]

EXR_MAGIC = b"\x76\x2f\x31\x01"
NPY_MAGIC = b"\x93NUMPY"
_HDR_MAGICS = (b"#?RADIANCE", b"#?RGBE")
_TIFF_MAGICS = (b"II*\x00", b"MM\x00*")
#: Pages counted at most (a hostile IFD chain could be long or circular).
MAX_PAGES = 4096


def sniff(data: bytes) -> str | None:
    """"exr", "hdr", "npy", "pfm" or "tiff" from a file's first bytes; None for anything else."""
    if data.startswith(EXR_MAGIC):
        return "exr"
    if data.startswith(_HDR_MAGICS):
        return "hdr"
    if data.startswith(NPY_MAGIC):
        return "npy"
    if data.startswith(_TIFF_MAGICS):
        return "tiff"
    if data[:3] in (b"Pf\n", b"PF\n", b"Pf\r", b"PF\r", b"Pf ", b"PF "):
        return "pfm"
    return None


def tiff_pages(data: bytes) -> list[dict]:
    """One dict per page of a classic TIFF (``width``, ``height``, ``samples``, ``bits``,
    ``sample_format``: 1 uint, 2 int, 3 float), following the IFD chain; [] for BigTIFF or a
    chain that cannot be read (the decoder then reports the problem)."""
    if len(data) < 8 or not data.startswith(_TIFF_MAGICS):
        return []
    end = "<" if data[:2] == b"II" else ">"
    (offset,) = struct.unpack(end + "I", data[4:8])
    pages: list[dict] = []
    seen: set[int] = set()
    types = {3: ("H", 2), 4: ("I", 4)}
    while offset and offset not in seen and len(pages) < MAX_PAGES:
        seen.add(offset)
        if offset + 2 > len(data):
            break
        (count,) = struct.unpack(end + "H", data[offset: offset + 2])
        if offset + 2 + 12 * count + 4 > len(data):
            break
        tags: dict[int, int] = {}
        present: set[int] = set()
        for i in range(count):
            at = offset + 2 + 12 * i
            tag, typ, n = struct.unpack(end + "HHI", data[at: at + 8])
            present.add(tag)
            if typ in types and n >= 1:
                code, size = types[typ]
                if n * size <= 4:
                    (tags[tag],) = struct.unpack(end + code, data[at + 8: at + 8 + size])
                else:  # a per-sample array elsewhere in the file: its first value
                    (ptr,) = struct.unpack(end + "I", data[at + 8: at + 12])
                    if ptr + size <= len(data):
                        (tags[tag],) = struct.unpack(end + code, data[ptr: ptr + size])
        pages.append({"width": tags.get(256, 0), "height": tags.get(257, 0), "samples": tags.get(277, 1),
                      "bits": tags.get(258, 1), "sample_format": tags.get(339, 1),
                      "photometric": tags.get(262, -1), "icc": 34675 in present,
                      "orientation": tags.get(274, 1)})
        (offset,) = struct.unpack(end + "I", data[offset + 2 + 12 * count: offset + 6 + 12 * count])
    return pages


def tiff_for_libtiff(pages: list[dict]) -> bool:
    """True when the first page is for libtiff rather than Pillow: float samples (Pillow reads
    only 1-channel float32), or 16-bit grey+alpha / RGB / RGBA (Pillow keeps 8 of the bits)."""
    if not pages:
        return False
    p = pages[0]
    if p["sample_format"] == 3:
        return True
    return p["bits"] == 16 and p["samples"] >= 2 and p["photometric"] in (1, 2) and p["sample_format"] == 1


def float_dimensions(path: str, data: bytes, kind: str, page: int = 0,
                     pages: list[dict] | None = None) -> tuple[int, int, int]:
    """(width, height, decoded bytes) from the header alone, for the pixel and bomb limits."""
    import numpy as np

    if kind == "tiff":
        p = (pages or tiff_pages(data))[page]
        return p["width"], p["height"], p["width"] * p["height"] * max(1, p["samples"]) * 4
    if kind == "npy":
        try:
            f = io.BytesIO(data)
            major, _ = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
        except Exception as e:
            raise DecodeError(f"{path}: corrupt .npy header ({' '.join(str(e).split())})") from None
        if len(shape) not in (2, 3):
            raise DecodeError(f"{path}: .npy array of shape {shape} is not an image (H, W) or (H, W, C)")
        c = shape[2] if len(shape) == 3 else 1
        return shape[1], shape[0], shape[0] * shape[1] * c * max(4, dtype.itemsize)
    if kind == "pfm":
        (w, h, c), _, _ = _pfm_header(path, data)
        return w, h, w * h * c * 4
    if kind == "hdr":
        import re

        m = re.search(rb"\n([-+])([XY]) (\d+) ([-+])([XY]) (\d+)\n", data[:65536])
        if not m:
            raise DecodeError(f"{path}: corrupt Radiance HDR header (no resolution line)")
        a, b = int(m[3]), int(m[6])
        w, h = (b, a) if m[2] == b"Y" else (a, b)
        return w, h, w * h * 12
    import OpenEXR

    try:
        with OpenEXR.File(io.BytesIO(data), header_only=True) as f:
            header = f.header()
            n = max(1, len(header.get("channels", [])))
            (x0, y0), (x1, y1) = header["dataWindow"]
    except Exception as e:
        raise DecodeError(f"{path}: corrupt EXR header ({' '.join(str(e).split()) or type(e).__name__})") from None
    w, h = int(x1) - int(x0) + 1, int(y1) - int(y0) + 1
    return w, h, w * h * min(n, 4) * 4


def decode_float(path: str, data: bytes, kind: str, *, page: int = 0, pages: list[dict] | None = None) -> Image:
    """Decode a float TIFF, EXR, Radiance HDR or NPY file (``kind`` from :func:`sniff`)."""
    import numpy as np

    from .image import Image

    warnings: list[str] = []
    try:
        if kind == "tiff":
            import imagecodecs

            a = imagecodecs.tiff_decode(data, index=page)
            mode = f"TIFF:{a.dtype}"
        elif kind == "exr":
            a, mode = _exr_pixels(path, data)
        elif kind == "hdr":
            import imagecodecs

            a, mode = imagecodecs.rgbe_decode(data), "RGBE"
        elif kind == "npy":
            a, mode = _npy_pixels(path, data, warnings)
        elif kind == "pfm":
            a, mode = _pfm_pixels(path, data)
        else:
            raise DecodeError(f"{path}: not a float image")
    except (DecodeError, FormatError):
        raise
    except MemoryError:
        raise
    except Exception as e:  # each codec raises its own error type on damaged files
        msg = " ".join(str(e).split()) or type(e).__name__
        raise DecodeError(f"{path}: corrupt {kind.upper()} data ({msg})") from None
    a = np.asarray(a)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3:
        raise DecodeError(f"{path}: {kind.upper()} data of shape {a.shape} is not an image (H, W[, C])")
    if not 1 <= a.shape[2] <= 4:
        raise DecodeError(f"{path}: {a.shape[2]} channels; gputex takes images of 1 to 4 channels")
    if a.dtype.kind == "f" and a.dtype != np.float32:
        with np.errstate(over="ignore"):
            wide = a.astype(np.float32)
        if a.dtype.itemsize > 4 and not np.array_equal(wide.astype(a.dtype), a, equal_nan=True):
            warnings.append(f"{path}: {a.dtype} values rounded to float32 (GPU textures hold 32-bit floats)")
        a = wide
    elif a.dtype.kind in "ui" and a.dtype not in (np.uint8, np.uint16, np.int32):
        a = _to_int32(path, a)
    a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="), copy=False))
    # (README "Colour space by input kind": unorm data that says nothing of colour is linear,
    # except 8-bit arrays, as gputex.from_array; an ICC profile in a TIFF says sRGB)
    icc = kind == "tiff" and bool(pages) and pages[page]["icc"]
    space = "srgb" if (kind == "npy" and a.dtype == np.uint8) or (icc and a.dtype.kind == "u") else "linear"
    image = Image(a, space, path, mode)
    image.warnings.extend(warnings)
    return image


def _to_int32(path: str, a: np.ndarray) -> np.ndarray:
    import numpy as np

    if a.size and (a.min() < -(1 << 31) or a.max() > (1 << 31) - 1):
        raise DecodeError(f"{path}: {a.dtype} values {a.min()}..{a.max()} do not fit the 32-bit signed "
                          "integers a texture holds")
    return a.astype(np.int32)


def _pfm_header(path: str, data: bytes) -> tuple[tuple[int, int, int], str, int]:
    """((width, height, channels), byte order, offset of the pixels) of a Portable FloatMap."""
    fields: list[bytes] = []
    pos = 0
    while len(fields) < 4:  # "PF"/"Pf", width, height, scale: whitespace-separated, one byte after
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        end = pos
        while end < len(data) and not data[end:end + 1].isspace():
            end += 1
        if end == pos or end >= len(data) or end - pos > 32:
            raise DecodeError(f"{path}: corrupt PFM header")
        fields.append(data[pos:end])
        pos = end
    try:
        w, h, scale = int(fields[1]), int(fields[2]), float(fields[3])
    except ValueError:
        raise DecodeError(f"{path}: corrupt PFM header") from None
    return (w, h, 3 if fields[0] == b"PF" else 1), "<" if scale < 0 else ">", pos + 1


def _pfm_pixels(path: str, data: bytes):
    import numpy as np

    (w, h, c), order, at = _pfm_header(path, data)
    n = w * h * c * 4
    if len(data) < at + n:
        raise DecodeError(f"{path}: truncated or corrupt image data")
    a = np.frombuffer(data, order + "f4", w * h * c, at).reshape(h, w, c)[::-1]  # stored bottom row first
    return a.astype(np.float32), "PFM"


def _npy_pixels(path: str, data: bytes, warnings: list[str]):
    import numpy as np

    try:
        a = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as e:
        raise DecodeError(f"{path}: not a numeric .npy array ({' '.join(str(e).split())})") from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
        raise DecodeError(f"{path}: .npy holds {getattr(a, 'dtype', type(a))} data; gputex takes numeric "
                          "arrays (H, W) or (H, W, 1-4)")
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    return a, f"npy:{a.dtype}"


#: Scan lines per chunk of each EXR compression code (the OpenEXR file layout document).
_EXR_LINES = {0: 1, 1: 1, 2: 1, 3: 16, 4: 32, 5: 16, 6: 32, 7: 32, 8: 32, 9: 256}


def exr_chunk_problem(data: bytes) -> str | None:
    """What is wrong with a single-part scan-line EXR's chunk table, or None (also for layouts
    not checked here: tiled, deep, multi-part, newer compressions). OpenEXR prints its own
    complaints about such files on stdout, which would land in ``--json`` output: checked first."""
    if len(data) < 8 or struct.unpack("<I", data[4:8])[0] & 0x1E00:  # tiled, long names, deep, multi-part
        return None
    pos, attrs = 8, {}
    while True:
        name_end = data.find(b"\0", pos)
        if name_end < 0:
            return "header not terminated"
        if name_end == pos:
            pos += 1
            break
        type_end = data.find(b"\0", name_end + 1)
        if type_end < 0 or type_end + 5 > len(data):
            return "header cut off"
        (size,) = struct.unpack("<i", data[type_end + 1: type_end + 5])
        if size < 0 or type_end + 5 + size > len(data):
            return "header attribute runs past the end"
        attrs[data[pos:name_end]] = data[type_end + 5: type_end + 5 + size]
        pos = type_end + 5 + size
    window, compression = attrs.get(b"dataWindow"), attrs.get(b"compression")
    if window is None or len(window) != 16 or compression is None or len(compression) != 1:
        return "no dataWindow or compression"
    lines = _EXR_LINES.get(compression[0])
    if lines is None:
        return None
    _, y0, _, y1 = struct.unpack("<4i", window)
    if y1 < y0:
        return "empty dataWindow"
    chunks = -(-(y1 - y0 + 1) // lines)
    if pos + 8 * chunks > len(data):
        return "chunk offset table cut off"
    for (offset,) in struct.iter_unpack("<Q", data[pos: pos + 8 * chunks]):
        if offset + 8 > len(data):
            return "a chunk lies past the end of the file"
        y, size = struct.unpack("<ii", data[offset: offset + 8])
        if not y0 <= y <= y1 or size < 0 or offset + 8 + size > len(data):
            return "a chunk's scan line or size is out of range"
    return None


def _exr_pixels(path: str, data: bytes):
    import numpy as np
    import OpenEXR

    problem = exr_chunk_problem(data)
    if problem:
        raise DecodeError(f"{path}: corrupt EXR data ({problem})")

    with OpenEXR.File(io.BytesIO(data), separate_channels=True) as f:
        parts = f.parts
        channels = {name: ch.pixels for name, ch in f.channels().items()}
    for group in (("R", "G", "B", "A"), ("R", "G", "B"), ("Y", "A"), ("Y",)):
        if all(c in channels for c in group):
            names = list(group)
            break
    else:
        names = sorted(channels)
        if not 1 <= len(names) <= 4:
            raise DecodeError(f"{path}: EXR channels {names}: gputex takes R G B (A), Y (A), or 1 to 4 "
                              "other channels")
    arrays = [np.asarray(channels[n]) for n in names]
    if any(a.shape != arrays[0].shape for a in arrays):
        raise DecodeError(f"{path}: EXR channels {names} are subsampled; gputex takes full-size channels")
    kinds = {a.dtype.kind for a in arrays}
    dtype = np.uint32 if kinds == {"u"} else np.float32
    out = np.stack([a.astype(dtype) for a in arrays], axis=2)
    mode = "EXR:" + "".join(names) + (f" (part 1 of {len(parts)})" if len(parts) > 1 else "")
    return out, mode


# -- writing -----------------------------------------------------------------------------------

def encode_exr(a: np.ndarray) -> bytes:
    """An OpenEXR file (ZIP compression, FLOAT channels: exact) of float data (H, W, 1/2/4):
    grey -> Y, grey+alpha -> Y A, RGBA -> R G B A."""
    import numpy as np
    import OpenEXR

    f = np.ascontiguousarray(a.astype(np.float32))
    names = {1: "Y", 2: "YA", 3: "RGB", 4: "RGBA"}[f.shape[2]]
    channels = {n: np.ascontiguousarray(f[:, :, i]) for i, n in enumerate(names)}
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    buf = io.BytesIO()
    with OpenEXR.File(header, channels) as out:
        out.write(buf)
    return buf.getvalue()


def encode_hdr(a: np.ndarray, path: str = "", warn=None) -> bytes:
    """A Radiance RGBE file of float data (H, W, C): grey is written as R = G = B; alpha is
    dropped (with a warning). Exact for values RGBE can hold (8-bit mantissas sharing an
    exponent, non-negative): the values another RGBE file held come back unchanged."""
    import imagecodecs
    import numpy as np

    f = a.astype(np.float32)
    c = f.shape[2]
    if c in (2, 4) and warn:
        warn(f"{path}: Radiance HDR has no alpha; the alpha channel was dropped")
    rgb = np.repeat(f[:, :, :1], 3, axis=2) if c <= 2 else f[:, :, :3]
    if warn and (not np.isfinite(rgb).all() or (rgb < 0).any()):
        warn(f"{path}: Radiance HDR holds non-negative finite values; others were clamped")
    rgb = np.clip(np.nan_to_num(rgb, nan=0.0, posinf=0.0), 0, None)
    try:
        return bytes(imagecodecs.rgbe_encode(np.ascontiguousarray(rgb)))
    except Exception as e:
        raise OutputError(f"{path or 'hdr'}: cannot encode Radiance HDR ({e})") from None
