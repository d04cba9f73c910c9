"""VkFormat: the codes KTX2 names formats by, what each means, and its Khronos DFD.

Pure (no numpy, no GPU). Every format of the KTX2 range is listed by its Vulkan name; an
uncompressed format's layout is read from the name itself, as Vulkan defines it: ``_PACKn``
components are listed from the most significant bit of one n-bit word, the others in byte
order; ``X`` bits are padding. From that layout :func:`expected_samples` builds the samples
of the basic Data Format Descriptor the way Khronos's ``vk2dfd`` does (ascending bit
offsets; E5B9G9R9 as mantissa, exponent per channel), so validation and reading share one
description. Block-compressed formats keep their WebGPU twins (``VK_FORMATS``).

Which VkFormats the KTX 2.0 specification prohibits (section 3.1: SCALED formats and the
multi-planar ones) is :data:`VK_PROHIBITED`; the 4:2:2 and ``X``-padded formats are allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..formats import FORMATS

__all__ = ["VK_FORMATS", "VK_BY_CODE", "VK_ALIASES", "VK_PROHIBITED", "VK_NAMES", "VkLayout", "layout",
           "expected_samples", "vk_name", "is_srgb", "has_srgb_variant", "type_size"]

_SUFFIXES = ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "SRGB")


def _seq(start: int, body: str, suffixes=_SUFFIXES, tail: str = "") -> dict[int, str]:
    return {start + i: f"{body}_{s}{tail}" for i, s in enumerate(suffixes)}


def _names() -> dict[int, str]:
    n: dict[int, str] = {1: "R4G4_UNORM_PACK8", 2: "R4G4B4A4_UNORM_PACK16", 3: "B4G4R4A4_UNORM_PACK16",
                         4: "R5G6B5_UNORM_PACK16", 5: "B5G6R5_UNORM_PACK16", 6: "R5G5B5A1_UNORM_PACK16",
                         7: "B5G5R5A1_UNORM_PACK16", 8: "A1R5G5B5_UNORM_PACK16"}
    for start, body in ((9, "R8"), (16, "R8G8"), (23, "R8G8B8"), (30, "B8G8R8"), (37, "R8G8B8A8"),
                        (44, "B8G8R8A8")):
        n.update(_seq(start, body))
    n.update(_seq(51, "A8B8G8R8", tail="_PACK32"))
    n.update(_seq(58, "A2R10G10B10", _SUFFIXES[:6], "_PACK32"))
    n.update(_seq(64, "A2B10G10R10", _SUFFIXES[:6], "_PACK32"))
    sixteen = ("UNORM", "SNORM", "USCALED", "SSCALED", "UINT", "SINT", "SFLOAT")
    for start, body in ((70, "R16"), (77, "R16G16"), (84, "R16G16B16"), (91, "R16G16B16A16")):
        n.update(_seq(start, body, sixteen))
    for start, body in ((98, "R32"), (101, "R32G32"), (104, "R32G32B32"), (107, "R32G32B32A32"),
                        (110, "R64"), (113, "R64G64"), (116, "R64G64B64"), (119, "R64G64B64A64")):
        n.update(_seq(start, body, ("UINT", "SINT", "SFLOAT")))
    n.update({122: "B10G11R11_UFLOAT_PACK32", 123: "E5B9G9R9_UFLOAT_PACK32", 124: "D16_UNORM",
              125: "X8_D24_UNORM_PACK32", 126: "D32_SFLOAT", 127: "S8_UINT", 128: "D16_UNORM_S8_UINT",
              129: "D24_UNORM_S8_UINT", 130: "D32_SFLOAT_S8_UINT"})
    bc = ["BC1_RGB_UNORM", "BC1_RGB_SRGB", "BC1_RGBA_UNORM", "BC1_RGBA_SRGB", "BC2_UNORM", "BC2_SRGB",
          "BC3_UNORM", "BC3_SRGB", "BC4_UNORM", "BC4_SNORM", "BC5_UNORM", "BC5_SNORM", "BC6H_UFLOAT",
          "BC6H_SFLOAT", "BC7_UNORM", "BC7_SRGB", "ETC2_R8G8B8_UNORM", "ETC2_R8G8B8_SRGB",
          "ETC2_R8G8B8A1_UNORM", "ETC2_R8G8B8A1_SRGB", "ETC2_R8G8B8A8_UNORM", "ETC2_R8G8B8A8_SRGB",
          "EAC_R11_UNORM", "EAC_R11_SNORM", "EAC_R11G11_UNORM", "EAC_R11G11_SNORM"]
    n.update({131 + i: f"{name}_BLOCK" for i, name in enumerate(bc)})
    astc = ["4x4", "5x4", "5x5", "6x5", "6x6", "8x5", "8x6", "8x8", "10x5", "10x6", "10x8", "10x10", "12x10",
            "12x12"]
    for i, size in enumerate(astc):
        n[157 + 2 * i] = f"ASTC_{size}_UNORM_BLOCK"
        n[158 + 2 * i] = f"ASTC_{size}_SRGB_BLOCK"
        n[1000066000 + i] = f"ASTC_{size}_SFLOAT_BLOCK"
    for i, name in enumerate(["PVRTC1_2BPP_UNORM", "PVRTC1_4BPP_UNORM", "PVRTC2_2BPP_UNORM", "PVRTC2_4BPP_UNORM",
                              "PVRTC1_2BPP_SRGB", "PVRTC1_4BPP_SRGB", "PVRTC2_2BPP_SRGB", "PVRTC2_4BPP_SRGB"]):
        n[1000054000 + i] = f"{name}_BLOCK_IMG"
    ycbcr = {0: "G8B8G8R8_422_UNORM", 1: "B8G8R8G8_422_UNORM", 7: "R10X6_UNORM_PACK16",
             8: "R10X6G10X6_UNORM_2PACK16", 9: "R10X6G10X6B10X6A10X6_UNORM_4PACK16",
             10: "G10X6B10X6G10X6R10X6_422_UNORM_4PACK16", 11: "B10X6G10X6R10X6G10X6_422_UNORM_4PACK16",
             17: "R12X4_UNORM_PACK16", 18: "R12X4G12X4_UNORM_2PACK16", 19: "R12X4G12X4B12X4A12X4_UNORM_4PACK16",
             20: "G12X4B12X4G12X4R12X4_422_UNORM_4PACK16", 21: "B12X4G12X4R12X4G12X4_422_UNORM_4PACK16",
             27: "G16B16G16R16_422_UNORM", 28: "B16G16R16G16_422_UNORM"}
    n.update({1000156000 + k: v for k, v in ycbcr.items()})
    for k in (2, 3, 4, 5, 6, 12, 13, 14, 15, 16, 22, 23, 24, 25, 26, 29, 30, 31, 32, 33):
        n[1000156000 + k] = f"MULTIPLANE_{k}"  # multi-planar: prohibited in KTX2
    for k in range(4):
        n[1000330000 + k] = f"MULTIPLANE_444_{k}"
    n.update({1000340000: "A4R4G4B4_UNORM_PACK16", 1000340001: "A4B4G4R4_UNORM_PACK16",
              1000470000: "A1B5G5R5_UNORM_PACK16", 1000470001: "A8_UNORM"})
    return n


#: VkFormat code -> Vulkan name without ``VK_FORMAT_`` (every format a KTX2 file may name).
VK_NAMES: dict[int, str] = _names()

#: VkFormats the KTX2 specification prohibits (SCALED and multi-planar).
VK_PROHIBITED = frozenset(c for c, n in VK_NAMES.items() if "SCALED" in n or n.startswith("MULTIPLANE"))


def vk_name(code: int) -> str:
    return "VK_FORMAT_" + VK_NAMES[code] if code in VK_NAMES else f"VkFormat {code}"


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


# -- layout of uncompressed formats, from the name ------------------------------------------------

CH = {"R": 0, "G": 1, "B": 2, "A": 15, "D": 14, "S": 13}
Q_LINEAR, Q_EXPONENT, Q_SIGNED, Q_FLOAT = 0x10, 0x20, 0x40, 0x80
F32_ONE, F32_MINUS_ONE = 0x3F800000, 0xBF800000


@dataclass(frozen=True)
class VkLayout:
    """An uncompressed VkFormat: ``components`` are (letter, bit offset, bits) in the texel
    block of ``block_bytes``; ``kinds`` the numeric type of each (``UNORM``, ``SFLOAT``...)."""

    code: int
    name: str
    components: tuple[tuple[str, int, int], ...]
    kinds: tuple[str, ...]
    block_bytes: int
    packed: int  # word size in bits for _PACKn, 0 otherwise
    shared_exponent: bool = False
    four22: bool = False


#: depth/stencil formats: (components, kinds, texel block bytes)
_DEPTH = {
    124: ((("D", 0, 16),), ("UNORM",), 2), 125: ((("D", 0, 24),), ("UNORM",), 4),
    126: ((("D", 0, 32),), ("SFLOAT",), 4), 127: ((("S", 0, 8),), ("UINT",), 1),
    128: ((("D", 0, 16), ("S", 16, 8)), ("UNORM", "UINT"), 4),
    129: ((("S", 0, 8), ("D", 8, 24)), ("UINT", "UNORM"), 4),  # Khronos: stencil in the low byte
    130: ((("D", 0, 32), ("S", 32, 8)), ("SFLOAT", "UINT"), 8),
}


def layout(code: int) -> VkLayout | None:
    """The layout of an uncompressed VkFormat; None for block formats, UNDEFINED, unknown codes."""
    name = VK_NAMES.get(code)
    if name is None or name.endswith(("_BLOCK", "_BLOCK_IMG")) or name.startswith("MULTIPLANE"):
        return None
    parts = name.split("_")
    if code in _DEPTH:
        comps_, kinds_, nbytes = _DEPTH[code]
        return VkLayout(code, name, comps_, kinds_, nbytes, 0)
    comps = re.findall(r"([RGBAXDSE])(\d+)", parts[0])
    four22 = "422" in parts
    kinds_named = [p for p in parts[1:] if p in _SUFFIXES + ("SFLOAT", "UFLOAT")]
    pack = next((p for p in parts if "PACK" in p), "")
    word = int(pack.split("PACK")[1]) if pack else 0
    per_word = pack.startswith(("2PACK", "4PACK")) or (pack == "PACK16" and name.startswith(("R10X6", "R12X4")))
    out: list[tuple[str, int, int]] = []
    if word and not per_word:  # listed from the most significant bit of one word
        pos = word
        for letter, bits in comps:
            pos -= int(bits)
            out.append((letter, pos, int(bits)))
        total = word
    elif per_word:  # each component (with its X padding below it) is one 16-bit word
        pos, i = 0, 0
        while i < len(comps):
            letter, bits = comps[i]
            pad = int(comps[i + 1][1]) if i + 1 < len(comps) and comps[i + 1][0] == "X" else 0
            out.append((letter, pos + pad, int(bits)))
            pos += 16
            i += 2 if pad else 1
        total = pos
    else:
        pos = 0
        for letter, bits in comps:
            out.append((letter, pos, int(bits)))
            pos += int(bits)
        total = pos
    real = [c for c in out if c[0] != "X"]
    kinds = tuple(kinds_named * len(real))
    return VkLayout(code, name, tuple(real), kinds, total // 8, 0 if per_word else word,
                    shared_exponent=name.startswith("E5"), four22=four22)


def _range(kind: str, bits: int, sample_bits: int | None = None) -> tuple[int, int, int]:
    """(qualifiers, lower, upper) of one component sample, as Khronos's dfd writes them."""
    if kind in ("UNORM", "SRGB"):
        return 0, 0, (1 << bits) - 1
    if kind == "SNORM":
        top = (1 << (bits - 1)) - 1
        return Q_SIGNED, -top, top
    if kind == "UINT":
        return 0, 0, 1
    if kind == "SINT":
        return Q_SIGNED, -1, 1
    if kind == "SFLOAT":
        return Q_FLOAT | Q_SIGNED, F32_MINUS_ONE, F32_ONE
    if kind == "UFLOAT":
        return Q_FLOAT, 0, F32_ONE
    raise ValueError(kind)


def expected_samples(code: int) -> list[tuple[int, int, int, int, int]] | None:
    """The basic-DFD samples (bit offset, bit length, channel | qualifiers, lower, upper) that
    Khronos writes for an uncompressed VkFormat; None where gputex does not derive them
    (block formats, 4:2:2)."""
    lay = layout(code)
    if lay is None or lay.four22:
        return None
    if lay.shared_exponent:  # E5B9G9R9: R mantissa, R exponent, G mantissa, ... (dfd.c order)
        out = []
        for letter, off, bits in sorted(lay.components[1:], key=lambda c: c[1]):
            out.append((off, bits, CH[letter], 0, 8448))
            out.append((27, 5, CH[letter] | Q_EXPONENT, 15, 31))
        return out
    srgb = "SRGB" in lay.kinds
    out = []
    for (letter, off, bits), kind in sorted(zip(lay.components, lay.kinds), key=lambda ck: ck[0][1]):
        q, lo, hi = _range(kind, bits)
        if srgb and letter == "A":
            q |= Q_LINEAR
        out.append((off, bits, CH[letter] | q, lo & 0xFFFFFFFF, hi & 0xFFFFFFFF))
    return out


def is_srgb(code: int) -> bool:
    return "_SRGB" in VK_NAMES.get(code, "")


def has_srgb_variant(code: int) -> bool:
    """A non-sRGB format of a family that has an ``_SRGB`` member (its DFD must not say sRGB
    transfer), as ``ktx validate`` defines it: every type of the 8-bit R8 ... A8B8G8R8 families
    (SNORM and integer included), and the UNORM block formats with an ``_SRGB`` twin."""
    name = VK_NAMES.get(code, "")
    if "_SRGB" in name or not name:
        return False
    if name.split("_")[0] in ("R8", "R8G8", "R8G8B8", "B8G8R8", "R8G8B8A8", "B8G8R8A8", "A8B8G8R8"):
        return True
    return name.endswith(("_BLOCK", "_BLOCK_IMG")) and "_UNORM" in name and name.replace("_UNORM", "_SRGB") in _BY_NAME


_BY_NAME = {n: c for c, n in VK_NAMES.items()}


def type_size(code: int) -> int | None:
    """The header typeSize a VkFormat needs (1 for block formats, the word size for packed ones,
    the component size otherwise); None for unknown codes."""
    if code not in VK_NAMES:
        return None
    lay = layout(code)
    if lay is None:
        return 1
    if lay.packed:
        return lay.packed // 8
    if lay.name.startswith(("R10X6", "R12X4", "G10X6", "B10X6", "G12X4", "B12X4")):
        return 2
    if code in _DEPTH:
        return {125: 4, 128: 2, 129: 4, 130: 4}.get(code, lay.components[0][2] // 8)
    return lay.components[0][2] // 8 or 1
