"""KTX 1.1: read (little-endian files; the OpenGL internal format decides the texture format).

Layout (KTX 1.1 specification): a 64-byte header, key/value data, then per mip level a
``UInt32 imageSize`` followed by the level's images (array elements, cube faces, depth
slices), each cube face of a non-array cube map padded to 4 bytes, each level padded to 4.
Rows of uncompressed data are padded to 4 bytes (``GL_UNPACK_ALIGNMENT`` 4); gputex
removes that padding.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError
from ..formats import FORMATS
from ..layout import align_up, blocks
from . import Container, register
from .expand import expand_levels, stored_format
from .model import TextureFile, check_shape, image_bytes

__all__ = ["read_ktx1", "GL_FORMATS"]

KTX1_MAGIC = b"\xabKTX 11\xbb\r\n\x1a\n"
HEADER = struct.Struct("<12s13I")

#: OpenGL internal format -> (WebGPU format, colour space or "" for the format's own)
GL_FORMATS: dict[int, tuple[str, str]] = {
    0x8229: ("r8unorm", "linear"), 0x822B: ("rg8unorm", "linear"), 0x8058: ("rgba8unorm", "linear"),
    0x8C43: ("rgba8unorm-srgb", ""), 0x8F94: ("r8snorm", ""), 0x8F95: ("rg8snorm", ""),
    0x8F97: ("rgba8snorm", ""), 0x8232: ("r8uint", ""), 0x8231: ("r8sint", ""), 0x8238: ("rg8uint", ""),
    0x8237: ("rg8sint", ""), 0x8D7C: ("rgba8uint", ""), 0x8D8E: ("rgba8sint", ""),
    0x822A: ("r16unorm", "linear"), 0x822C: ("rg16unorm", "linear"), 0x805B: ("rgba16unorm", "linear"),
    0x8F98: ("r16snorm", ""), 0x8F99: ("rg16snorm", ""), 0x8F9B: ("rgba16snorm", ""),
    0x8234: ("r16uint", ""), 0x8233: ("r16sint", ""), 0x823A: ("rg16uint", ""), 0x8239: ("rg16sint", ""),
    0x8D76: ("rgba16uint", ""), 0x8D88: ("rgba16sint", ""), 0x822D: ("r16float", ""),
    0x822F: ("rg16float", ""), 0x881A: ("rgba16float", ""), 0x8236: ("r32uint", ""), 0x8235: ("r32sint", ""),
    0x823C: ("rg32uint", ""), 0x823B: ("rg32sint", ""), 0x8D70: ("rgba32uint", ""),
    0x8D82: ("rgba32sint", ""), 0x822E: ("r32float", ""), 0x8230: ("rg32float", ""),
    0x8814: ("rgba32float", ""), 0x8059: ("rgb10a2unorm", "linear"), 0x906F: ("rgb10a2uint", ""),
    0x8C3A: ("rg11b10ufloat", ""), 0x8C3D: ("rgb9e5ufloat", ""),
    0x83F0: ("bc1-rgba-unorm", ""), 0x83F1: ("bc1-rgba-unorm", ""), 0x8C4C: ("bc1-rgba-unorm-srgb", ""),
    0x8C4D: ("bc1-rgba-unorm-srgb", ""), 0x83F2: ("bc2-rgba-unorm", ""), 0x8C4E: ("bc2-rgba-unorm-srgb", ""),
    0x83F3: ("bc3-rgba-unorm", ""), 0x8C4F: ("bc3-rgba-unorm-srgb", ""), 0x8DBB: ("bc4-r-unorm", ""),
    0x8DBC: ("bc4-r-snorm", ""), 0x8DBD: ("bc5-rg-unorm", ""), 0x8DBE: ("bc5-rg-snorm", ""),
    0x8E8C: ("bc7-rgba-unorm", ""), 0x8E8D: ("bc7-rgba-unorm-srgb", ""), 0x8E8E: ("bc6h-rgb-float", ""),
    0x8E8F: ("bc6h-rgb-ufloat", ""),
    0x9274: ("etc2-rgb8unorm", ""), 0x9275: ("etc2-rgb8unorm-srgb", ""), 0x9276: ("etc2-rgb8a1unorm", ""),
    0x9277: ("etc2-rgb8a1unorm-srgb", ""), 0x9278: ("etc2-rgba8unorm", ""),
    0x9279: ("etc2-rgba8unorm-srgb", ""), 0x9270: ("eac-r11unorm", ""), 0x9271: ("eac-r11snorm", ""),
    0x9272: ("eac-rg11unorm", ""), 0x9273: ("eac-rg11snorm", ""),
}


#: OpenGL internal format -> the VkFormat of the same bytes, for formats read by expansion
#: (:mod:`.expand`): packed 16-bit, 3-component, shared-exponent and packed floats.
GL_EXPANDED: dict[int, int] = {
    0x8D62: 4, 0x8056: 2, 0x8057: 6,  # GL_RGB565, GL_RGBA4, GL_RGB5_A1 (UNSIGNED_SHORT_5_6_5 / 4_4_4_4 / 5_5_5_1)
    0x8051: 23, 0x8C41: 29, 0x8F96: 24, 0x8D7D: 27, 0x8D8F: 28,  # GL_RGB8, GL_SRGB8, _SNORM, UI, I
    0x8054: 84, 0x8F9A: 85, 0x8D77: 88, 0x8D89: 89, 0x881B: 90,  # GL_RGB16, _SNORM, UI, I, F
    0x8D71: 104, 0x8D83: 105, 0x8815: 106,  # GL_RGB32UI, I, F
    0x8C3A: 122, 0x8C3D: 123,  # GL_R11F_G11F_B10F, GL_RGB9_E5
    0x81A5: 124, 0x8CAC: 126,  # GL_DEPTH_COMPONENT16, GL_DEPTH_COMPONENT32F
}


def read_ktx1(data: bytes, source: str) -> TextureFile:
    size = len(data)
    if size < HEADER.size:
        raise DecodeError(f"{source}: truncated KTX file ({size} bytes, the header needs {HEADER.size})")
    (_, endian, gl_type, type_size, gl_format, internal, _base, width, height, depth, elements, faces,
     mips, kvd) = HEADER.unpack_from(data, 0)
    if endian == 0x01020304:
        raise DecodeError(f"{source}: big-endian KTX files are not supported by gputex")
    if endian != 0x04030201:
        raise DecodeError(f"{source}: corrupt KTX header (endianness word {endian:#010x})")
    vk = GL_EXPANDED.get(internal)
    if vk is not None:
        fmt, space = stored_format(vk), ""
    elif internal in GL_FORMATS:
        name, space = GL_FORMATS[internal]
        fmt = FORMATS[name]
    else:
        raise DecodeError(f"{source}: OpenGL internal format {internal:#06x} is not supported by gputex")
    height = max(1, height)  # a 1D texture: one row
    if faces not in (1, 6):
        raise DecodeError(f"{source}: KTX header gives {faces} faces (1 or 6 allowed)")
    tf = TextureFile(fmt, width, height, max(1, depth), max(1, elements), faces, container="ktx", source=source,
                     array=elements > 0, color_space=space or ("srgb" if fmt.srgb else "linear"))
    nlevels = max(1, mips)
    check_shape(tf, nlevels, "KTX")
    pos = HEADER.size + kvd
    if kvd % 4 or pos > size:
        raise DecodeError(f"{source}: KTX key/value data ({kvd} bytes) does not fit in the file")
    view = memoryview(data)
    cube_padding = faces == 6 and elements == 0
    levels = []
    for i in range(nlevels):
        if pos + 4 > size:
            raise DecodeError(f"{source}: KTX file ends before mip level {i} of {nlevels}")
        (image_size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        w, h, d = tf.level_size(i)
        across, down = blocks(fmt, w, h)
        tight_row = across * fmt.block_bytes
        row = tight_row if fmt.compressed else align_up(tight_row, 4)  # GL_UNPACK_ALIGNMENT 4
        per_image = row * down * d
        want = per_image if cube_padding else per_image * tf.images
        if image_size != want:
            raise DecodeError(f"{source}: KTX level {i} says {image_size} bytes; a {w}x{h} level of {fmt.name} "
                              f"needs {want}")
        images = []
        for _ in range(tf.images):
            if pos + per_image > size:
                raise DecodeError(f"{source}: KTX file ends inside mip level {i} (needs {per_image} more bytes "
                                  f"at {pos}, file is {size})")
            chunk: bytes | memoryview = view[pos: pos + per_image]
            if row != tight_row:
                import numpy as np

                rows = np.frombuffer(chunk, np.uint8).reshape(down * d, row)[:, :tight_row]
                chunk = rows.tobytes()
            images.append(chunk)
            pos += per_image
            if cube_padding:
                pos = align_up(pos, 4)
        pos = align_up(pos, 4)
        levels.append(images[0] if len(images) == 1 else b"".join(images))
        assert len(levels[-1]) == image_bytes(fmt, w, h) * d * tf.images
    tf.levels = levels
    if vk is not None:
        expand_levels(tf, vk)
    return tf


register(Container("ktx", "KTX", KTX1_MAGIC, read_ktx1, rank=20))
