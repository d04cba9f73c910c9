"""Texture files (KTX2, KTX 1, DDS): the in-memory model and the format code tables.

Pure, no GPU import. A :class:`TextureFile` is what any container holds once parsed: a
format, a size, how many layers / cube faces / depth slices, and per mip level the tight
bytes of every image of that level in KTX2 order (layer, face, z slice, rows of blocks).
``ktx2.py``, ``ktx1.py`` and ``dds.py`` turn files into this and back; ``upload.py`` puts it
on the GPU in block rows, ``capture.py`` reads a texture back into one.

Readers check every header number against the file size before they allocate anything
sized by it (a lying header costs nothing), and raise :class:`DecodeError` naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .errors import DecodeError, FormatError, LimitError
from .formats import FORMATS, Format
from .layout import blocks, mip_count

__all__ = ["TextureFile", "read_texture_file", "write_texture_file", "is_texture_file", "sniff",
           "level_bytes", "image_bytes", "VK_FORMATS", "DXGI_FORMATS", "MAX_TEXTURE_DIMENSION",
           "MAX_TEXTURE_BYTES"]

#: Largest width/height/depth a texture file may claim (WebGPU adapters stop at 16384).
MAX_TEXTURE_DIMENSION = 1 << 16
#: Largest decoded size of a whole texture file (all levels), before anything is allocated.
MAX_TEXTURE_BYTES = 8 << 30

KTX2_MAGIC = b"\xabKTX 20\xbb\r\n\x1a\n"
KTX1_MAGIC = b"\xabKTX 11\xbb\r\n\x1a\n"
DDS_MAGIC = b"DDS "


@dataclass
class TextureFile:
    """One texture as a container holds it.

    ``levels[i]`` holds level ``i`` of every layer, face and slice, tight (KTX2's
    ``levelImages`` order), as bytes or a memoryview into the file.
    """

    format: Format
    width: int
    height: int
    depth: int = 1  # > 1: a 3D texture (volume)
    layers: int = 1  # array elements (cube maps: cubes)
    faces: int = 1  # 6 for cube maps
    levels: list = field(default_factory=list)
    color_space: str = "srgb"
    container: str = ""
    source: str = ""
    array: bool = False  # stored as an array (even of one layer)
    supercompression: str = "none"
    premultiplied: bool = False
    metadata: dict = field(default_factory=dict)
    file_bytes: int = 0
    level_file_bytes: list = field(default_factory=list)  # stored (supercompressed) size per level

    @property
    def volume(self) -> bool:
        return self.depth > 1

    @property
    def cube(self) -> bool:
        return self.faces == 6

    @property
    def images(self) -> int:
        """2D images per level for an array/cube (layers x faces); 1 for a volume."""
        return self.layers * self.faces

    def level_size(self, level: int) -> tuple[int, int, int]:
        return (max(1, self.width >> level), max(1, self.height >> level), max(1, self.depth >> level))

    def image_bytes(self, level: int) -> int:
        w, h, _ = self.level_size(level)
        return image_bytes(self.format, w, h)

    @property
    def orientation(self) -> str:
        """``KTXorientation`` (KTX2), e.g. ``rd`` (gputex's order: x right, rows top
        first), ``ru`` (rows bottom first), ``rdi`` for volumes; ``rd``/``rdi`` when absent."""
        kvd = self.metadata.get("kvd") or {}
        return kvd.get("KTXorientation") or ("rdi" if self.volume else "rd")

    def flips(self) -> tuple[bool, bool, bool]:
        """(x, y, z) axes to reverse so the images read like gputex's ``rd``(``i``) order."""
        o = self.orientation
        return (o[:1] == "l", o[1:2] == "u", self.volume and o[2:3] == "o")

    def kind(self) -> str:
        if self.volume:
            return "3d"
        if self.cube:
            return "cube-array" if self.array else "cube"
        return "2d-array" if self.array else "2d"

    def describe(self) -> dict:
        """What ``gputex info FILE --json`` prints."""
        levels = []
        for i in range(len(self.levels)):
            w, h, d = self.level_size(i)
            entry = {"level": i, "width": w, "height": h, "bytes": level_bytes(self, i)}
            if d > 1 or self.volume:
                entry["depth"] = d
            if i < len(self.level_file_bytes) and self.supercompression != "none":
                entry["stored_bytes"] = self.level_file_bytes[i]
            levels.append(entry)
        return {
            "file": self.source, "container": self.container, "format": self.format.name,
            "type": self.kind(), "width": self.width, "height": self.height, "depth": self.depth,
            "layers": self.layers, "faces": self.faces, "levels": levels,
            "color_space": self.color_space, "supercompression": self.supercompression,
            "premultiplied": self.premultiplied, "file_bytes": self.file_bytes,
            **({"dfd": self.metadata["dfd"]} if "dfd" in self.metadata else {}),
            **({"key_values": self.metadata["kvd"]} if self.metadata.get("kvd") else {}),
        }


def image_bytes(fmt: Format, width: int, height: int) -> int:
    """Tight bytes of one 2D image (whole blocks)."""
    across, down = blocks(fmt, width, height)
    return across * down * fmt.block_bytes


def level_bytes(tf: TextureFile, level: int) -> int:
    """Tight bytes of one level: every layer, face and slice."""
    w, h, d = tf.level_size(level)
    return image_bytes(tf.format, w, h) * d * tf.images


def check_shape(tf: TextureFile, nlevels: int, what: str) -> None:
    """Header sanity shared by all readers (before anything is sized by the header)."""
    src = tf.source
    for name, v in (("width", tf.width), ("height", tf.height), ("depth", tf.depth)):
        if v <= 0:
            raise DecodeError(f"{src}: {what} header gives a {name} of {v}")
        if v > MAX_TEXTURE_DIMENSION:
            raise DecodeError(f"{src}: {what} header gives a {name} of {v}, beyond the limit of "
                              f"{MAX_TEXTURE_DIMENSION}")
    if tf.layers <= 0 or tf.layers > 2048:
        raise DecodeError(f"{src}: {what} header gives {tf.layers} layers (1 to 2048 allowed)")
    if tf.cube and tf.width != tf.height:
        raise DecodeError(f"{src}: {what} cube map faces must be square, got {tf.width}x{tf.height}")
    if tf.volume and (tf.cube or tf.layers > 1):
        raise DecodeError(f"{src}: {what} volume textures cannot also be arrays or cube maps")
    most = mip_count(tf.width, tf.height, tf.depth)
    if not 1 <= nlevels <= most:
        raise DecodeError(f"{src}: {what} header claims {nlevels} mip levels; a "
                          f"{tf.width}x{tf.height}" + (f"x{tf.depth}" if tf.volume else "")
                          + f" texture has 1 to {most}")
    total = sum(level_bytes(tf, i) for i in range(nlevels))
    if total > MAX_TEXTURE_BYTES:
        raise DecodeError(f"{src}: {what} header describes {total / 2**30:.1f} GiB of texture data, "
                          f"beyond the limit of {MAX_TEXTURE_BYTES >> 30} GiB")


# -- format codes ------------------------------------------------------------------------------

#: WebGPU format -> VkFormat (the KTX2 ``vkFormat`` field).
VK_FORMATS: dict[str, int] = {
    "r8unorm": 9, "r8snorm": 10, "r8uint": 13, "r8sint": 14,
    "rg8unorm": 16, "rg8snorm": 17, "rg8uint": 20, "rg8sint": 21,
    "rgba8unorm": 37, "rgba8snorm": 38, "rgba8uint": 41, "rgba8sint": 42, "rgba8unorm-srgb": 43,
    "bgra8unorm": 44, "bgra8unorm-srgb": 50,
    "rgb10a2unorm": 64, "rgb10a2uint": 68,
    "r16unorm": 70, "r16snorm": 71, "r16uint": 74, "r16sint": 75, "r16float": 76,
    "rg16unorm": 77, "rg16snorm": 78, "rg16uint": 81, "rg16sint": 82, "rg16float": 83,
    "rgba16unorm": 91, "rgba16snorm": 92, "rgba16uint": 95, "rgba16sint": 96, "rgba16float": 97,
    "r32uint": 98, "r32sint": 99, "r32float": 100,
    "rg32uint": 101, "rg32sint": 102, "rg32float": 103,
    "rgba32uint": 107, "rgba32sint": 108, "rgba32float": 109,
    "rg11b10ufloat": 122, "rgb9e5ufloat": 123,
    "bc1-rgba-unorm": 133, "bc1-rgba-unorm-srgb": 134, "bc2-rgba-unorm": 135, "bc2-rgba-unorm-srgb": 136,
    "bc3-rgba-unorm": 137, "bc3-rgba-unorm-srgb": 138, "bc4-r-unorm": 139, "bc4-r-snorm": 140,
    "bc5-rg-unorm": 141, "bc5-rg-snorm": 142, "bc6h-rgb-ufloat": 143, "bc6h-rgb-float": 144,
    "bc7-rgba-unorm": 145, "bc7-rgba-unorm-srgb": 146,
    "etc2-rgb8unorm": 147, "etc2-rgb8unorm-srgb": 148, "etc2-rgb8a1unorm": 149,
    "etc2-rgb8a1unorm-srgb": 150, "etc2-rgba8unorm": 151, "etc2-rgba8unorm-srgb": 152,
    "eac-r11unorm": 153, "eac-r11snorm": 154, "eac-rg11unorm": 155, "eac-rg11snorm": 156,
}
for _i, _name in enumerate(n for n in FORMATS if n.startswith("astc-")):
    VK_FORMATS[_name] = 157 + _i  # the ASTC rows are in VkFormat order: unorm, srgb per size

#: VkFormats with no WebGPU twin that hold the same bytes as one (format, colour space).
VK_ALIASES: dict[int, tuple[str, str]] = {
    15: ("r8unorm", "srgb"), 22: ("rg8unorm", "srgb"),  # R8_SRGB, R8G8_SRGB
    131: ("bc1-rgba-unorm", ""), 132: ("bc1-rgba-unorm-srgb", ""),  # BC1 RGB (alpha ignored)
    51: ("rgba8unorm", ""), 52: ("rgba8snorm", ""), 55: ("rgba8uint", ""), 56: ("rgba8sint", ""),
    57: ("rgba8unorm-srgb", ""),  # A8B8G8R8_*_PACK32: the same bytes as R8G8B8A8 (KTX2 spec note)
}
VK_BY_CODE: dict[int, str] = {v: k for k, v in VK_FORMATS.items()}

#: VkFormats the KTX2 specification prohibits (SCALED and multi-planar).
VK_PROHIBITED = {11, 12, 18, 19, 25, 26, 32, 33, 39, 40, 46, 47, 53, 54, 60, 61, 66, 67, 72, 73, 79, 80,
                 86, 87, 93, 94} | set(range(1000156002, 1000156034)) | set(range(1000330000, 1000330004))


def vk_format_for(fmt: Format, color_space: str) -> int:
    """The VkFormat gputex writes: 8-bit unorm data that is sRGB gets the ``_SRGB`` VkFormat
    (Vulkan has R8_SRGB and R8G8_SRGB, which WebGPU lacks), so the colour space survives."""
    if not fmt.srgb and color_space == "srgb":
        twin = {"r8unorm": 15, "rg8unorm": 22, "rgba8unorm": 43, "bgra8unorm": 50}.get(fmt.name)
        if twin:
            return twin
    try:
        return VK_FORMATS[fmt.name]
    except KeyError:
        raise FormatError(f"{fmt.name} has no VkFormat; KTX2 cannot hold it") from None


def format_from_vk(code: int, source: str) -> tuple[Format, str]:
    """(format, colour space forced by the code or "") for a VkFormat."""
    if code in VK_BY_CODE:
        return FORMATS[VK_BY_CODE[code]], ""
    if code in VK_ALIASES:
        name, space = VK_ALIASES[code]
        return FORMATS[name], space
    if code == 0:
        raise DecodeError(f"{source}: vkFormat is VK_FORMAT_UNDEFINED (a Basis Universal or custom "
                          "format); gputex does not transcode these")
    raise DecodeError(f"{source}: VkFormat {code} is not supported by gputex")


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


def default_color_space(fmt: Format) -> str:
    """What data of a format means when the container does not say."""
    if fmt.srgb:
        return "srgb"
    return "linear"


# -- files -------------------------------------------------------------------------------------

def sniff(head: bytes) -> str | None:
    """The container a file's first bytes announce, or None."""
    if head.startswith(KTX2_MAGIC):
        return "ktx2"
    if head.startswith(KTX1_MAGIC):
        return "ktx"
    if head.startswith(DDS_MAGIC):
        return "dds"
    return None


def is_texture_file(path: str) -> bool:
    """True if ``path`` starts like a KTX2, KTX or DDS file (its contents decide, not its name).
    Only regular files are looked at (a FIFO would block an ordinary open)."""
    from .inputs import sniff_input

    return sniff(sniff_input(path, 12)) is not None


def read_texture_file(path: str, *, data: bytes | None = None, inflate: bool = True,
                      max_pixels: int | None = None, max_ratio: float | None = None) -> TextureFile:
    """Parse a KTX2, KTX 1 or DDS file (the magic decides). Supercompressed KTX2 levels are
    inflated within the budget of :mod:`gputex.budget` (``max_pixels``, ``max_ratio``: as for
    images); ``inflate=False`` reads only headers and the index (``gputex info``)."""
    if data is None:
        from .inputs import read_input  # once, regular files only, size-capped

        data = read_input(path)
    kind = sniff(data[:12])
    kwargs: dict = {}
    if kind == "ktx2":
        from .ktx2 import read_ktx2 as reader

        kwargs = {"inflate": inflate, "max_pixels": max_pixels, "max_ratio": max_ratio}
    elif kind == "ktx":
        from .ktx1 import read_ktx1 as reader
    elif kind == "dds":
        from .dds import read_dds as reader
    else:
        raise DecodeError(f"{path}: not a KTX2, KTX or DDS file")
    try:
        tf = reader(data, str(path), **kwargs)
    except (DecodeError, FormatError, LimitError):
        raise
    except (ValueError, IndexError, OverflowError, MemoryError) as e:  # a reader bug must stay one line
        raise DecodeError(f"{path}: corrupt {kind.upper()} file ({type(e).__name__}: {e})") from e
    tf.file_bytes = len(data)
    return tf


def write_texture_file(tf: TextureFile, path: str, *, zstd: int | None = None) -> None:
    """Write ``tf`` as KTX2 or DDS (by the suffix of ``path``), whole or not at all."""
    from .encode import write_atomic

    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".ktx2":
        from .ktx2 import write_ktx2

        parts = write_ktx2(tf, zstd=zstd)
    elif suffix == ".dds":
        if zstd is not None:
            raise FormatError(f"{path}: --zstd applies to KTX2 only")
        from .dds import write_dds

        parts = write_dds(tf)
    else:
        raise FormatError(f"{path}: texture files are written as .ktx2 or .dds")
    write_atomic(path, parts)
