"""The one format table: texture format <-> layout facts and capabilities.

Pure data, no GPU import. Every member of ``wgpu.TextureFormat`` has a row
(``tests/core/test_formats.py`` checks that), so the layout arithmetic works for every
format, including compressed and depth ones that gputex cannot fill from an image.

Columns
-------
name          the WebGPU format string
block         (block width, block height) in texels: (1, 1) for plain formats
block_bytes   bytes per texel block
channels      components the texture holds (1, 2 or 4); 0 for depth/stencil
kind          "unorm", "snorm", "uint", "sint", "float", "ufloat" (packed float),
              "depth", "stencil"
bits          bits per component (rgb10a2: 10, alpha 2)
srgb          stores sRGB-encoded colour; the hardware decodes on sampling
feature       device feature the format needs, or ""
storage       usable as a storage texture in core WebGPU
renderable    usable as a render attachment in core WebGPU
filterable    filterable without extra features ("float32-filterable" adds r/rg/rgba32float)
image         gputex can fill it from a decoded image (``--format`` accepts it)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Format", "FORMATS", "IMAGE_FORMATS", "get_format"]


@dataclass(frozen=True)
class Format:
    name: str
    block: tuple[int, int]
    block_bytes: int
    channels: int
    kind: str
    bits: int
    srgb: bool = False
    feature: str = ""
    storage: bool = False
    renderable: bool = True
    filterable: bool = True
    image: bool = True

    @property
    def compressed(self) -> bool:
        return self.block != (1, 1)

    @property
    def linear_name(self) -> str:
        """The same format without ``-srgb`` (copy-compatible twin)."""
        return self.name.removesuffix("-srgb")

    @property
    def srgb_name(self) -> str | None:
        """The ``-srgb`` twin of this format, if WebGPU has one."""
        twin = self.linear_name + "-srgb"
        return twin if twin in FORMATS else None

    @property
    def bgra(self) -> bool:
        return self.name.startswith("bgra")

    @property
    def packed(self) -> bool:
        """Components packed at bit level into one 32-bit word (rgb10a2*, rg11b10, rgb9e5)."""
        return self.name.startswith(("rgb10a2", "rg11b10", "rgb9e5"))

    @property
    def component_dtype(self) -> str:
        """numpy dtype of one component as stored (for unpacked plain formats)."""
        if self.packed:
            return "<u4"
        size = self.block_bytes // max(self.channels, 1)
        if self.kind == "float":
            return {2: "<f2", 4: "<f4"}[size]
        signed = self.kind in ("sint", "snorm")
        return ("<i" if signed else "<u") + str(size)


def _plain(name: str, channels: int, kind: str, bits: int, **kw: Any) -> Format:
    return Format(name, (1, 1), channels * bits // 8, channels, kind, bits, **kw)


def _bc(name: str, nbytes: int, channels: int, kind: str = "unorm", **kw: Any) -> Format:
    return Format(name, (4, 4), nbytes, channels, kind, 8, feature="texture-compression-bc",
                  renderable=False, image=False, **kw)


def _etc(name: str, nbytes: int, channels: int, kind: str = "unorm", **kw: Any) -> Format:
    return Format(name, (4, 4), nbytes, channels, kind, 8, feature="texture-compression-etc2",
                  renderable=False, image=False, **kw)


_N16 = dict(feature="texture-format16bit-norm", storage=False)
_INT = dict(filterable=False)

_ROWS: list[Format] = [
    # 8-bit
    _plain("r8unorm", 1, "unorm", 8),
    _plain("r8snorm", 1, "snorm", 8, renderable=False, image=False),
    _plain("r8uint", 1, "uint", 8, **_INT),
    _plain("r8sint", 1, "sint", 8, **_INT),
    _plain("rg8unorm", 2, "unorm", 8),
    _plain("rg8snorm", 2, "snorm", 8, renderable=False, image=False),
    _plain("rg8uint", 2, "uint", 8, **_INT),
    _plain("rg8sint", 2, "sint", 8, **_INT),
    _plain("rgba8unorm", 4, "unorm", 8, storage=True),
    _plain("rgba8unorm-srgb", 4, "unorm", 8, srgb=True),
    _plain("rgba8snorm", 4, "snorm", 8, storage=True, renderable=False, image=False),
    _plain("rgba8uint", 4, "uint", 8, storage=True, **_INT),
    _plain("rgba8sint", 4, "sint", 8, storage=True, **_INT),
    _plain("bgra8unorm", 4, "unorm", 8),
    _plain("bgra8unorm-srgb", 4, "unorm", 8, srgb=True),
    # 16-bit
    _plain("r16unorm", 1, "unorm", 16, **_N16),
    _plain("r16snorm", 1, "snorm", 16, renderable=False, image=False, **_N16),
    _plain("r16uint", 1, "uint", 16, **_INT),
    _plain("r16sint", 1, "sint", 16, **_INT),
    _plain("r16float", 1, "float", 16),
    _plain("rg16unorm", 2, "unorm", 16, **_N16),
    _plain("rg16snorm", 2, "snorm", 16, renderable=False, image=False, **_N16),
    _plain("rg16uint", 2, "uint", 16, **_INT),
    _plain("rg16sint", 2, "sint", 16, **_INT),
    _plain("rg16float", 2, "float", 16),
    _plain("rgba16unorm", 4, "unorm", 16, **_N16),
    _plain("rgba16snorm", 4, "snorm", 16, renderable=False, image=False, **_N16),
    _plain("rgba16uint", 4, "uint", 16, storage=True, **_INT),
    _plain("rgba16sint", 4, "sint", 16, storage=True, **_INT),
    _plain("rgba16float", 4, "float", 16, storage=True),
    # 32-bit
    _plain("r32uint", 1, "uint", 32, storage=True, **_INT),
    _plain("r32sint", 1, "sint", 32, storage=True, **_INT),
    _plain("r32float", 1, "float", 32, storage=True, filterable=False),
    _plain("rg32uint", 2, "uint", 32, storage=True, **_INT),
    _plain("rg32sint", 2, "sint", 32, storage=True, **_INT),
    _plain("rg32float", 2, "float", 32, storage=True, filterable=False),
    _plain("rgba32uint", 4, "uint", 32, storage=True, **_INT),
    _plain("rgba32sint", 4, "sint", 32, storage=True, **_INT),
    _plain("rgba32float", 4, "float", 32, storage=True, filterable=False),
    # packed
    Format("rgb10a2unorm", (1, 1), 4, 4, "unorm", 10),
    Format("rgb10a2uint", (1, 1), 4, 4, "uint", 10, filterable=False),
    Format("rg11b10ufloat", (1, 1), 4, 3, "ufloat", 11, renderable=False, image=False),
    Format("rgb9e5ufloat", (1, 1), 4, 3, "ufloat", 9, renderable=False, image=False),
    # depth / stencil: bytes are those of the copyable aspect (0: not copyable)
    Format("stencil8", (1, 1), 1, 0, "stencil", 8, filterable=False, image=False),
    Format("depth16unorm", (1, 1), 2, 0, "depth", 16, filterable=False, image=False),
    Format("depth24plus", (1, 1), 0, 0, "depth", 24, filterable=False, image=False),
    Format("depth24plus-stencil8", (1, 1), 0, 0, "depth", 24, filterable=False, image=False),
    Format("depth32float", (1, 1), 4, 0, "depth", 32, filterable=False, image=False),
    Format("depth32float-stencil8", (1, 1), 4, 0, "depth", 32, feature="depth32float-stencil8",
           filterable=False, image=False),
    # BC
    _bc("bc1-rgba-unorm", 8, 4), _bc("bc1-rgba-unorm-srgb", 8, 4, srgb=True),
    _bc("bc2-rgba-unorm", 16, 4), _bc("bc2-rgba-unorm-srgb", 16, 4, srgb=True),
    _bc("bc3-rgba-unorm", 16, 4), _bc("bc3-rgba-unorm-srgb", 16, 4, srgb=True),
    _bc("bc4-r-unorm", 8, 1), _bc("bc4-r-snorm", 8, 1, "snorm"),
    _bc("bc5-rg-unorm", 16, 2), _bc("bc5-rg-snorm", 16, 2, "snorm"),
    _bc("bc6h-rgb-ufloat", 16, 3, "ufloat"), _bc("bc6h-rgb-float", 16, 3, "float"),
    _bc("bc7-rgba-unorm", 16, 4), _bc("bc7-rgba-unorm-srgb", 16, 4, srgb=True),
    # ETC2 / EAC
    _etc("etc2-rgb8unorm", 8, 3), _etc("etc2-rgb8unorm-srgb", 8, 3, srgb=True),
    _etc("etc2-rgb8a1unorm", 8, 4), _etc("etc2-rgb8a1unorm-srgb", 8, 4, srgb=True),
    _etc("etc2-rgba8unorm", 16, 4), _etc("etc2-rgba8unorm-srgb", 16, 4, srgb=True),
    _etc("eac-r11unorm", 8, 1), _etc("eac-r11snorm", 8, 1, "snorm"),
    _etc("eac-rg11unorm", 16, 2), _etc("eac-rg11snorm", 16, 2, "snorm"),
]

# ASTC: every block size, 16 bytes per block
for _w, _h in [(4, 4), (5, 4), (5, 5), (6, 5), (6, 6), (8, 5), (8, 6), (8, 8), (10, 5), (10, 6),
               (10, 8), (10, 10), (12, 10), (12, 12)]:
    for _s in ("", "-srgb"):
        _ROWS.append(Format(f"astc-{_w}x{_h}-unorm{_s}", (_w, _h), 16, 4, "unorm", 8,
                            srgb=bool(_s), feature="texture-compression-astc",
                            renderable=False, image=False))

FORMATS: dict[str, Format] = {f.name: f for f in _ROWS}

#: Formats ``--format`` accepts: those gputex can fill from a decoded image.
IMAGE_FORMATS: tuple[str, ...] = tuple(f.name for f in _ROWS if f.image)


def get_format(name: str) -> Format:
    """Look a format up by its WebGPU name (``_`` accepted for ``-``).

    Raises
    ------
    FormatError
        If the name is unknown; the message lists the accepted names.
    """
    from .errors import FormatError

    key = name.strip().lower().replace("_", "-")
    try:
        return FORMATS[key]
    except KeyError:
        raise FormatError(
            f"unknown texture format {name!r}; use one of: {', '.join(IMAGE_FORMATS)}"
        ) from None
