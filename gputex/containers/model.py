"""The in-memory model of a texture file, shared by every container module.

Pure, no GPU import. A :class:`TextureFile` is what any container holds once parsed: a
format, a size, how many layers / cube faces / depth slices, and per mip level the tight
bytes of every image of that level in KTX2 order (layer, face, z slice, rows of blocks).
The container modules (``ktx2``, ``ktx1``, ``dds``) turn files into this and back;
``upload.py`` puts it on the GPU in block rows, ``capture.py`` reads a texture back into one.

Readers check every header number against the file size before they allocate anything
sized by it (a lying header costs nothing), and raise :class:`DecodeError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import DecodeError
from ..formats import Format
from ..layout import blocks, mip_count

__all__ = ["TextureFile", "level_bytes", "image_bytes", "check_shape", "default_color_space",
           "MAX_TEXTURE_DIMENSION", "MAX_TEXTURE_BYTES"]

#: Largest width/height/depth a texture file may claim (WebGPU adapters stop at 16384).
MAX_TEXTURE_DIMENSION = 1 << 16
#: Largest decoded size of a whole texture file (all levels), before anything is allocated.
MAX_TEXTURE_BYTES = 8 << 30



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
            **({"vk_format": self.metadata["vk_format"]} if "vk_format" in self.metadata else {}),
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


def default_color_space(fmt: Format) -> str:
    """What data of a format means when the container does not say."""
    if fmt.srgb:
        return "srgb"
    return "linear"
