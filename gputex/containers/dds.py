"""DDS: read (legacy and DX10 headers) and write (DX10 header).

A DDS file stores, for each array element (each cube face of each cube), its whole mip chain;
gputex's :class:`TextureFile` stores per level every layer. Reading and writing reorder
between the two. Legacy headers are read for the FourCC formats (DXT1-5, ATI1/2, BC4/5 U/S,
and the D3DFMT float/16-bit codes) and the common RGBA/BGRA/luminance bit masks; everything
else the DX10 header names by DXGI format.

DDS holds no colour space: DXGI ``*_SRGB`` formats are sRGB, everything else is taken as
linear (the format's own meaning); ``--color-space`` overrides where that is wrong. Files gputex
writes carry the colour space in the header's reserved words (``GPTX`` then 1 sRGB / 2 linear,
where other writers put their own tag; readers ignore them), so its own DDS round trips keep it.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError, FormatError
from ..formats import FORMATS, Format
from . import Container, FileLayout, register
from .expand import expand_levels, stored_format
from .model import TextureFile, check_shape, default_color_space, image_bytes, level_bytes

__all__ = ["read_dds", "write_dds", "dds_layout"]

DDS_MAGIC = b"DDS "
#: WebGPU format -> DXGI_FORMAT (the DDS DX10 header).
DXGI_FORMATS: dict[str, int] = {
    "rgba32float": 2, "rgba32uint": 3, "rgba32sint": 4,
    "rgba16float": 10, "rgba16unorm": 11, "rgba16uint": 12, "rgba16snorm": 13, "rgba16sint": 14,
    "rg32float": 16, "rg32uint": 17, "rg32sint": 18,
    "rgb10a2unorm": 24, "rgb10a2uint": 25, "rg11b10ufloat": 26,
    "rgba8unorm": 28, "rgba8unorm-srgb": 29, "rgba8uint": 30, "rgba8snorm": 31, "rgba8sint": 32,
    "rg16float": 34, "rg16unorm": 35, "rg16uint": 36, "rg16snorm": 37, "rg16sint": 38,
    "r32float": 41, "r32uint": 42, "r32sint": 43,
    "rg8unorm": 49, "rg8uint": 50, "rg8snorm": 51, "rg8sint": 52,
    "r16float": 54, "r16unorm": 56, "r16uint": 57, "r16snorm": 58, "r16sint": 59,
    "r8unorm": 61, "r8uint": 62, "r8snorm": 63, "r8sint": 64,
    "rgb9e5ufloat": 67,
    "bc1-rgba-unorm": 71, "bc1-rgba-unorm-srgb": 72, "bc2-rgba-unorm": 74, "bc2-rgba-unorm-srgb": 75,
    "bc3-rgba-unorm": 77, "bc3-rgba-unorm-srgb": 78, "bc4-r-unorm": 80, "bc4-r-snorm": 81,
    "bc5-rg-unorm": 83, "bc5-rg-snorm": 84,
    "bgra8unorm": 87, "bgra8unorm-srgb": 91,
    "bc6h-rgb-ufloat": 95, "bc6h-rgb-float": 96, "bc7-rgba-unorm": 98, "bc7-rgba-unorm-srgb": 99,
}
DXGI_BY_CODE: dict[int, str] = {v: k for k, v in DXGI_FORMATS.items()}
#: TYPELESS DXGI formats read as their unorm member.
DXGI_TYPELESS = {1: "rgba32uint", 9: "rgba16unorm", 15: "rg32uint", 23: "rgb10a2unorm", 27: "rgba8unorm",
                 33: "rg16unorm", 39: "r32float", 48: "rg8unorm", 53: "r16unorm", 60: "r8unorm",
                 70: "bc1-rgba-unorm", 73: "bc2-rgba-unorm", 76: "bc3-rgba-unorm", 79: "bc4-r-unorm",
                 82: "bc5-rg-unorm", 87: "bgra8unorm", 90: "bgra8unorm", 94: "bc6h-rgb-ufloat",
                 97: "bc7-rgba-unorm"}

HEADER = struct.Struct("<4s7I44s8I5I")  # magic, size..mipMapCount, reserved1, pixel format, caps
DX10 = struct.Struct("<5I")

# flags
DDSD_CAPS, DDSD_HEIGHT, DDSD_WIDTH, DDSD_PITCH = 0x1, 0x2, 0x4, 0x8
DDSD_PIXELFORMAT, DDSD_MIPMAPCOUNT, DDSD_LINEARSIZE, DDSD_DEPTH = 0x1000, 0x20000, 0x80000, 0x800000
DDPF_ALPHAPIXELS, DDPF_ALPHA, DDPF_FOURCC, DDPF_RGB, DDPF_LUMINANCE = 0x1, 0x2, 0x4, 0x40, 0x20000
DDSCAPS_COMPLEX, DDSCAPS_TEXTURE, DDSCAPS_MIPMAP = 0x8, 0x1000, 0x400000
DDSCAPS2_CUBEMAP, DDSCAPS2_ALLFACES, DDSCAPS2_VOLUME = 0x200, 0xFC00, 0x200000
DIM_TEXTURE1D, DIM_TEXTURE2D, DIM_TEXTURE3D = 2, 3, 4
MISC_TEXTURECUBE = 0x4
GPTX = b"GPTX"  # gputex's tag in reserved1: the colour space follows

FOURCC = {
    b"DXT1": "bc1-rgba-unorm", b"DXT2": "bc2-rgba-unorm", b"DXT3": "bc2-rgba-unorm",
    b"DXT4": "bc3-rgba-unorm", b"DXT5": "bc3-rgba-unorm", b"ATI1": "bc4-r-unorm", b"BC4U": "bc4-r-unorm",
    b"BC4S": "bc4-r-snorm", b"ATI2": "bc5-rg-unorm", b"BC5U": "bc5-rg-unorm", b"BC5S": "bc5-rg-snorm",
}
D3DFMT = {36: "rgba16unorm", 110: "rgba16snorm", 111: "r16float", 112: "rg16float", 113: "rgba16float",
          114: "r32float", 115: "rg32float", 116: "rgba32float"}
#: (flags subset, bit count, R, G, B, A masks) -> format, for legacy uncompressed headers
MASKS = {
    (32, 0xFF, 0xFF00, 0xFF0000, 0xFF000000): "rgba8unorm",
    (32, 0xFF0000, 0xFF00, 0xFF, 0xFF000000): "bgra8unorm",
    (32, 0x3FF, 0xFFC00, 0x3FF00000, 0xC0000000): "rgb10a2unorm",
    (32, 0xFFFF, 0xFFFF0000, 0, 0): "rg16unorm",
    (32, 0xFFFFFFFF, 0, 0, 0): "r32float",
    (8, 0xFF, 0, 0, 0): "r8unorm",
    (16, 0xFFFF, 0, 0, 0): "r16unorm",
    (16, 0xFF, 0, 0, 0xFF00): "rg8unorm",
    (16, 0xFF, 0xFF00, 0, 0): "rg8unorm",
}


#: DXGI formats read by expansion (:mod:`.expand`): DXGI code -> the VkFormat of the same bytes
DXGI_EXPANDED = {85: 4, 86: 8, 115: 1000340000, 65: 1000470001, 26: 122, 67: 123, 55: 124, 40: 126}
#: legacy bit masks (bits, R, G, B, A) -> VkFormat, read by expansion
MASKS_EXPANDED = {
    (16, 0xF800, 0x7E0, 0x1F, 0): 4, (16, 0x7C00, 0x3E0, 0x1F, 0x8000): 8, (16, 0x7C00, 0x3E0, 0x1F, 0): 8,
    (16, 0xF00, 0xF0, 0xF, 0xF000): 1000340000, (24, 0xFF0000, 0xFF00, 0xFF, 0): 30, (24, 0xFF, 0xFF00, 0xFF0000, 0): 23,
    (8, 0, 0, 0, 0xFF): 1000470001,
}


def _legacy_format(pf: tuple, source: str) -> tuple[str | int, bool]:
    """(format name, premultiplied) from a legacy DDS_PIXELFORMAT."""
    size, flags, fourcc, bits, r, g, b, a = pf
    if flags & DDPF_FOURCC:
        if fourcc in FOURCC:
            return FOURCC[fourcc], fourcc in (b"DXT2", b"DXT4")
        code = struct.unpack("<I", fourcc)[0]
        if code in D3DFMT:
            return D3DFMT[code], False
        shown = fourcc.decode("latin-1") if fourcc.isalnum() else str(code)
        raise DecodeError(f"{source}: DDS FourCC {shown!r} is not supported by gputex")
    if flags & (DDPF_RGB | DDPF_LUMINANCE | DDPF_ALPHA):
        if not flags & DDPF_ALPHAPIXELS and not flags & DDPF_ALPHA:
            a = 0
        key = (bits, r, g, b, a)
        if key in MASKS:
            return MASKS[key], False
        if key in MASKS_EXPANDED:
            return MASKS_EXPANDED[key], False
        raise DecodeError(f"{source}: DDS pixel format with {bits} bits and masks "
                          f"{r:#x}/{g:#x}/{b:#x}/{a:#x} is not supported by gputex")
    raise DecodeError(f"{source}: DDS pixel format flags {flags:#x} describe no known format")


def read_dds(data: bytes, source: str) -> TextureFile:
    size = len(data)
    if size < HEADER.size:
        raise DecodeError(f"{source}: truncated DDS file ({size} bytes, the header needs {HEADER.size})")
    (magic, hsize, flags, height, width, pitch, depth, mips, _reserved, pf_size, pf_flags, fourcc,
     bits, rmask, gmask, bmask, amask, caps, caps2, _caps3, _caps4, _reserved2) = HEADER.unpack_from(data, 0)
    fourcc = struct.pack("<I", fourcc)
    if magic != DDS_MAGIC:
        raise DecodeError(f"{source}: not a DDS file")
    if hsize != 124 or pf_size != 32:
        raise DecodeError(f"{source}: corrupt DDS header (header size {hsize}, pixel format size {pf_size}; "
                          "124 and 32 expected)")
    offset = HEADER.size
    layers, faces, volume, premultiplied = 1, 1, False, False
    array = False
    if pf_flags & DDPF_FOURCC and fourcc == b"DX10":
        if size < offset + DX10.size:
            raise DecodeError(f"{source}: truncated DDS file (the DX10 header is cut off)")
        dxgi, dim, misc, array_size, misc2 = DX10.unpack_from(data, offset)
        offset += DX10.size
        name = DXGI_EXPANDED.get(dxgi) or DXGI_BY_CODE.get(dxgi) or DXGI_TYPELESS.get(dxgi)
        if name is None:
            raise DecodeError(f"{source}: DXGI format {dxgi} is not supported by gputex")
        if dim == DIM_TEXTURE1D:
            height = max(1, height)  # a 1D texture: one row
        elif dim not in (DIM_TEXTURE2D, DIM_TEXTURE3D):
            raise DecodeError(f"{source}: DDS resource dimension {dim} is not a texture")
        volume = dim == DIM_TEXTURE3D
        if array_size == 0:
            raise DecodeError(f"{source}: DDS DX10 header gives an array size of 0")
        layers = array_size
        array = array_size > 1
        if misc & MISC_TEXTURECUBE:
            faces = 6
        premultiplied = (misc2 & 0x7) == 2
    else:
        name, premultiplied = _legacy_format((pf_size, pf_flags, fourcc, bits, rmask, gmask, bmask, amask),
                                             source)
        volume = bool(caps2 & DDSCAPS2_VOLUME) and depth > 1
        if caps2 & DDSCAPS2_CUBEMAP:
            if caps2 & DDSCAPS2_ALLFACES != DDSCAPS2_ALLFACES:
                raise DecodeError(f"{source}: DDS cube map without all six faces is not supported")
            faces = 6
    vk = name if isinstance(name, int) else None
    fmt = stored_format(vk) if vk is not None else FORMATS[str(name)]
    nlevels = mips if (flags & DDSD_MIPMAPCOUNT or mips > 1) and mips > 0 else 1
    space = default_color_space(fmt)
    if _reserved[:4] == GPTX and not fmt.srgb:
        space = {1: "srgb", 2: "linear"}.get(struct.unpack_from("<I", _reserved, 4)[0], space)
    tf = TextureFile(fmt, width, height, depth if volume else 1, layers, faces, container="dds",
                     source=source, array=array, premultiplied=premultiplied, color_space=space)
    check_shape(tf, nlevels, "DDS")
    need = sum(level_bytes(tf, i) for i in range(nlevels))
    have = size - offset
    if have < need:
        full = sum(level_bytes(tf, i) for i in range(1))
        hint = (f"; it holds {_levels_that_fit(tf, have)} level(s)" if have >= full else "")
        raise DecodeError(f"{source}: DDS header claims {nlevels} mip level(s) of {width}x{height}"
                          + (f"x{depth}" if volume else "") + f" {fmt.name} ({need} bytes) but the file holds "
                          f"{have} bytes of data{hint}")
    # file order: for each layer/face, every level; ours: for each level, every layer/face
    view = memoryview(data)
    per_level: list[list] = [[] for _ in range(nlevels)]
    pos = offset
    for _ in range(tf.images):
        for i in range(nlevels):
            w, h, d = tf.level_size(i)
            n = image_bytes(fmt, w, h) * d
            per_level[i].append(view[pos: pos + n])
            pos += n
    tf.levels = [parts[0] if len(parts) == 1 else b"".join(parts) for parts in per_level]
    if vk is not None:
        expand_levels(tf, vk)
    return tf


def _levels_that_fit(tf: TextureFile, have: int) -> int:
    n, total = 0, 0
    while n < 32:
        try:
            total += level_bytes(tf, n)
        except Exception:
            break
        if total > have:
            break
        n += 1
    return n


def _head(tf: TextureFile) -> bytes:
    """The DDS and DX10 headers of ``tf`` (every format gputex writes has a DXGI code)."""
    fmt: Format = tf.format
    try:
        dxgi = DXGI_FORMATS[fmt.name]
    except KeyError:
        raise FormatError(f"{tf.source}: {fmt.name} has no DXGI format; DDS cannot hold it") from None
    nlevels = len(tf.levels)
    flags = DDSD_CAPS | DDSD_HEIGHT | DDSD_WIDTH | DDSD_PIXELFORMAT
    if nlevels > 1:
        flags |= DDSD_MIPMAPCOUNT
    if fmt.compressed:
        flags |= DDSD_LINEARSIZE
        pitch = image_bytes(fmt, tf.width, tf.height)
    else:
        flags |= DDSD_PITCH
        pitch = image_bytes(fmt, tf.width, 1)
    if tf.volume:
        flags |= DDSD_DEPTH
    caps = DDSCAPS_TEXTURE | (DDSCAPS_COMPLEX | DDSCAPS_MIPMAP if nlevels > 1 else 0)
    caps2 = 0
    if tf.cube:
        caps |= DDSCAPS_COMPLEX
        caps2 = DDSCAPS2_CUBEMAP | DDSCAPS2_ALLFACES
    if tf.volume:
        caps |= DDSCAPS_COMPLEX
        caps2 = DDSCAPS2_VOLUME
    reserved = (GPTX + struct.pack("<I", 1 if tf.color_space == "srgb" else 2)).ljust(44, b"\0")
    header = HEADER.pack(DDS_MAGIC, 124, flags, tf.height, tf.width, pitch, tf.depth if tf.volume else 0,
                         nlevels, reserved, 32, DDPF_FOURCC, struct.unpack("<I", b"DX10")[0], 0, 0, 0, 0, 0,
                         caps, caps2, 0, 0, 0)
    dx10 = DX10.pack(dxgi, DIM_TEXTURE3D if tf.volume else DIM_TEXTURE2D, MISC_TEXTURECUBE if tf.cube else 0,
                     tf.layers, 2 if tf.premultiplied else 1)
    return header + dx10


def write_dds(tf: TextureFile) -> list[bytes]:
    """Serialize as DDS with a DX10 header (every format gputex writes has a DXGI code)."""
    lay = dds_layout(tf)
    parts = [lay.head]
    for i, at, n, _ in lay.places:
        parts.append(memoryview(tf.levels[i])[at: at + n])
    return parts


def dds_layout(tf: TextureFile) -> FileLayout:
    """Where each image of each level goes in the DDS of ``tf`` (``tf.levels``: how many there
    are): every level of image 0, then of image 1, ... (DDS's order), no padding."""
    head = _head(tf)
    places, pos = [], len(head)
    for image in range(tf.images):
        for i in range(len(tf.levels)):
            w, h, d = tf.level_size(i)
            n = image_bytes(tf.format, w, h) * d
            places.append((i, image * n, n, pos))
            pos += n
    return FileLayout(head, places, pos)


register(Container("dds", "DDS", DDS_MAGIC, read_dds, write_dds, suffixes=(".dds",), rank=30, layout=dds_layout))
