"""The KTX2 Data Format Descriptor: the one gputex writes for a format, the one Khronos's
tools expect for a VkFormat, and a parser of the basic descriptor block.

Khronos Data Format Specification 1.3 (the basic block, ``versionNumber`` 2). Uncompressed
VkFormats take their samples from :mod:`.vkformat` (derived from the Vulkan name);
block-compressed ones from their WebGPU twin. Pure, no numpy.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import FormatError
from ..formats import FORMATS, Format
from .vkformat import VK_ALIASES, VK_BY_CODE, expected_samples, layout

__all__ = ["Sample", "dfd_for", "parse_dfd", "Expected", "expected_dfd", "MODEL_RGBSDA", "MODEL_YUVSDA",
           "BLOCK_MODELS"]

# DFD constants (Khronos Data Format Specification 1.4)
MODEL_RGBSDA, MODEL_YUVSDA = 1, 2
MODEL_BC = {"bc1": 128, "bc2": 129, "bc3": 130, "bc4": 131, "bc5": 132, "bc6h": 133, "bc7": 134}
MODEL_ETC2, MODEL_ASTC = 161, 162
CH_R, CH_G, CH_B, CH_A = 0, 1, 2, 15
Q_LINEAR, Q_EXPONENT, Q_SIGNED, Q_FLOAT = 0x10, 0x20, 0x40, 0x80
F32_ONE, F32_MINUS_ONE = 0x3F800000, 0xBF800000


@dataclass(frozen=True)
class Sample:
    offset: int
    length: int  # bits (stored as length - 1)
    channel: int
    qualifiers: int = 0
    lower: int = 0
    upper: int = 0
    positions: tuple = (0, 0, 0, 0)  # samplePosition0-3 (read; gputex writes 0)

    def pack(self) -> bytes:
        return struct.pack("<HBB4BII", self.offset, self.length - 1, self.channel | self.qualifiers,
                           0, 0, 0, 0, self.lower & 0xFFFFFFFF, self.upper & 0xFFFFFFFF)


def _int_range(kind: str, bits: int) -> tuple[int, int, int]:
    """(qualifiers, lower, upper) for one component."""
    if kind == "unorm":
        return 0, 0, (1 << bits) - 1
    if kind == "snorm":
        top = (1 << (bits - 1)) - 1
        return Q_SIGNED, -top, top
    if kind == "uint":
        return 0, 0, 1
    if kind == "sint":
        return Q_SIGNED, -1, 1
    if kind == "float":
        return Q_FLOAT | Q_SIGNED, F32_MINUS_ONE, F32_ONE
    if kind == "ufloat":
        return Q_FLOAT, 0, F32_ONE
    raise FormatError(f"no KTX2 data format descriptor for {kind} data")


def _samples(fmt: Format) -> list[Sample]:
    name = fmt.name
    if name.startswith("bc") or name.startswith(("etc2", "eac", "astc")):
        return _block_samples(fmt)
    if name.startswith("rgb10a2"):
        q, lo, hi = _int_range(fmt.kind, 10)
        qa, loa, hia = _int_range(fmt.kind, 2)
        return [Sample(0, 10, CH_R, q, lo, hi), Sample(10, 10, CH_G, q, lo, hi),
                Sample(20, 10, CH_B, q, lo, hi), Sample(30, 2, CH_A, qa, loa, hia)]
    if name == "rg11b10ufloat":
        return [Sample(0, 11, CH_R, Q_FLOAT, 0, F32_ONE), Sample(11, 11, CH_G, Q_FLOAT, 0, F32_ONE),
                Sample(22, 10, CH_B, Q_FLOAT, 0, F32_ONE)]
    if name == "rgb9e5ufloat":  # Khronos's order: R mantissa, R exponent, G mantissa, ...
        return [Sample(off, bits, ct & 0x0F, ct & 0xF0, lo, hi) for off, bits, ct, lo, hi in expected_samples(123) or []]
    if fmt.channels == 0:
        raise FormatError(f"{name}: depth/stencil formats are not written to KTX2 by gputex")
    size = fmt.block_bytes // fmt.channels * 8
    order = [CH_B, CH_G, CH_R, CH_A] if fmt.bgra else [CH_R, CH_G, CH_B, CH_A][: fmt.channels]
    q, lo, hi = _int_range(fmt.kind, size)
    out = []
    for i, ch in enumerate(order):
        extra = Q_LINEAR if (fmt.srgb and ch == CH_A) else 0
        out.append(Sample(i * size, size, ch, q | extra, lo, hi))
    return out


def _block_samples(fmt: Format) -> list[Sample]:
    name, full = fmt.name, 0xFFFFFFFF
    signed = fmt.kind == "snorm"
    q, lo, hi = (Q_SIGNED, 0x80000000, 0x7FFFFFFF) if signed else (0, 0, full)
    if name.startswith("bc1"):
        return [Sample(0, 64, 1, 0, 0, full)]  # BC1A: colour + punch-through alpha
    if name.startswith(("bc2", "bc3")):
        return [Sample(0, 64, CH_A, Q_LINEAR if fmt.srgb else 0, 0, full), Sample(64, 64, 0, 0, 0, full)]
    if name.startswith("bc4") or name.startswith("eac-r11"):
        return [Sample(0, 64, 0, q, lo, hi)]
    if name.startswith("bc5") or name.startswith("eac-rg11"):
        return [Sample(0, 64, 0, q, lo, hi), Sample(64, 64, 1, q, lo, hi)]
    if name.startswith("bc6h"):
        if fmt.kind == "float":
            return [Sample(0, 128, 0, Q_FLOAT | Q_SIGNED, F32_MINUS_ONE, F32_ONE)]
        return [Sample(0, 128, 0, Q_FLOAT, 0, F32_ONE)]
    if name.startswith("bc7") or name.startswith("astc"):
        return [Sample(0, 128, 0, 0, 0, full)]
    if name.startswith("etc2-rgba8"):
        return [Sample(0, 64, CH_A, Q_LINEAR if fmt.srgb else 0, 0, full), Sample(64, 64, 2, 0, 0, full)]
    if name.startswith("etc2-rgb8a1"):  # colour + punch-through alpha, both over the whole block
        return [Sample(0, 64, 2, 0, 0, full), Sample(0, 64, CH_A, Q_LINEAR if fmt.srgb else 0, 0, full)]
    if name.startswith("etc2"):
        return [Sample(0, 64, 2, 0, 0, full)]
    raise FormatError(f"no KTX2 data format descriptor for {name}")


def _model(fmt: Format) -> int:
    if fmt.name.startswith("bc"):
        return MODEL_BC[fmt.name.split("-")[0]]
    if fmt.name.startswith(("etc2", "eac")):
        return MODEL_ETC2
    if fmt.name.startswith("astc"):
        return MODEL_ASTC
    return MODEL_RGBSDA


def dfd_for(fmt: Format, transfer_srgb: bool, premultiplied: bool = False,
            supercompressed: bool = False) -> bytes:
    """The Data Format Descriptor (with its ``dfdTotalSize`` word) for ``fmt``."""
    samples = _samples(fmt)
    integer = fmt.kind in ("uint", "sint")
    primaries, transfer = (0, 0) if integer else (1, 2 if transfer_srgb else 1)
    block_size = 24 + 16 * len(samples)
    bw, bh = fmt.block
    body = struct.pack("<IHH4B4B8B", 0, 2, block_size, _model(fmt), primaries, transfer,
                       1 if premultiplied else 0, bw - 1, bh - 1, 0, 0,
                       fmt.block_bytes, 0, 0, 0, 0, 0, 0, 0)
    body += b"".join(s.pack() for s in samples)
    return struct.pack("<I", 4 + len(body)) + body


def parse_dfd(data: bytes) -> dict:
    """The first (basic) descriptor block, decoded."""
    if len(data) < 4 + 24:
        raise ValueError("shorter than one descriptor block")
    (total,) = struct.unpack_from("<I", data, 0)
    w0, w1 = struct.unpack_from("<II", data, 4)
    vendor, dtype = w0 & 0x1FFFF, w0 >> 17
    version, size = w1 & 0xFFFF, w1 >> 16
    model, primaries, transfer, flags = data[12:16]
    dims = tuple(data[16:20])
    planes = tuple(data[20:28])
    samples = []
    nsamples = (size - 24) // 16 if size >= 24 else 0
    for i in range(nsamples):
        off = 4 + 24 + 16 * i
        if off + 16 > len(data):
            break
        bo, bl, ct, p0, p1, p2, p3, lo, hi = struct.unpack_from("<HBB4BII", data, off)
        samples.append(Sample(bo, bl + 1, ct & 0x0F, ct & 0xF0, lo, hi, (p0, p1, p2, p3)))
    return {"total": total, "vendor": vendor, "type": dtype, "version": version, "block_size": size,
            "model": model, "primaries": primaries, "transfer": transfer, "flags": flags,
            "block_dims": dims, "bytes_planes": planes, "samples": samples}


#: colour models of block-compressed data (BC1-7, ETC2/EAC, ASTC, PVRTC 1 and 2)
BLOCK_MODELS = frozenset(range(128, 135)) | {160, 161, 162, 164, 165, 166}


@dataclass(frozen=True)
class Expected:
    """The basic DFD Khronos's ``vk2dfd`` writes for a VkFormat (what ``ktx validate`` compares).
    ``samples``: (bit offset, bit length, channel | qualifiers, lower, upper), or None where
    gputex does not derive them (the file's samples are then not compared)."""

    model: int
    block_dims: tuple[int, int, int, int]  # each minus one, as stored
    bytes_planes: tuple[int, ...]
    samples: list[tuple[int, int, int, int, int]] | None


def expected_dfd(code: int) -> Expected | None:
    """What the DFD of a file with ``vkFormat`` ``code`` must say; None for UNDEFINED, unknown
    and prohibited codes and the block formats gputex has no twin for (PVRTC, ASTC HDR/3D)."""
    lay = layout(code)
    if lay is not None:
        model = MODEL_YUVSDA if lay.four22 else MODEL_RGBSDA
        dims = (1, 0, 0, 0) if lay.four22 else (0, 0, 0, 0)
        return Expected(model, dims, (lay.block_bytes, 0, 0, 0, 0, 0, 0, 0), expected_samples(code))
    name = VK_BY_CODE.get(code) or (VK_ALIASES.get(code, ("", ""))[0])
    if not name:
        return None
    fmt = FORMATS[name]
    samples = [(s.offset, s.length, s.channel | s.qualifiers, s.lower & 0xFFFFFFFF, s.upper & 0xFFFFFFFF)
               for s in _block_samples(fmt)]
    if code in (131, 132):  # BC1_RGB: one sample, channel 0 (colour only)
        samples = [(0, 64, 0, 0, 0xFFFFFFFF)]
    bw, bh = fmt.block
    return Expected(_model(fmt), (bw - 1, bh - 1, 0, 0), (fmt.block_bytes, 0, 0, 0, 0, 0, 0, 0), samples)
