"""KTX2 validation, rule by rule, as Khronos's ``ktx validate`` checks the KTX 2.0 specification.

Each problem carries the id Khronos gives the rule (``tools/ktx/validation_messages.h`` of
KTX-Software: 1xxx input, 2xxx identifier, 30xx header and index, 40xx level index, 60xx-62xx
Data Format Descriptor, 70xx-71xx key/value data) and Khronos's class: an *error* makes the
file invalid, a *warning* does not (a custom key, a missing ``KTXwriter``, a 3D array texture,
a vendor supercompression scheme). What gputex itself cannot do with a valid file (upload a
format WebGPU lacks, transcode BasisLZ/UASTC, sizes beyond its limits) is a third class,
*limit* (rule ``gputex``): reported apart, never as a spec error.

The walk follows Khronos's order (header, indices, DFD, level index, key/value data,
paddings) and goes on after an error wherever the file can still be read, so one run lists
every rule broken. It reads nothing past the end of the file and allocates nothing sized by
the header. Checks of Khronos's list not made here: KHR_texture_basisu (31xx/63xx/72xx, only
with ``ktx validate --gltf-basisu``), the BasisLZ global data (81xx) and UASTC HDR (82xx,
files gputex cannot transcode anyway), and libktx's own load (5xxx).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from .dfd import MODEL_YUVSDA, Sample, expected_dfd, parse_dfd
from .ktx2_kvd import check_kvd
from .vkformat import VK_NAMES, VK_PROHIBITED, has_srgb_variant, is_srgb, layout, type_size, vk_name

__all__ = ["Problem", "Walk", "walk", "KTX2_MAGIC", "HEADER", "LEVEL", "SCHEMES", "report"]

KTX2_MAGIC = b"\xabKTX 20\xbb\r\n\x1a\n"
HEADER = struct.Struct("<12s9I4I2Q")  # identifier, 9 header words, dfd/kvd offsets+lengths, sgd
LEVEL = struct.Struct("<3Q")
SCHEMES = {0: "none", 1: "basislz", 2: "zstd", 3: "zlib"}
MODEL_ETC1S, MODEL_UASTC = 163, 166
#: channel ids each colour model defines (Khronos Data Format Specification, section 5.6)
MODEL_CHANNELS = {1: {0, 1, 2, 13, 14, 15}, 2: {0, 1, 2, 13, 14, 15}, 128: {0, 1}, 129: {0, 15}, 130: {0, 15},
                  131: {0}, 132: {0, 1}, 133: {0}, 134: {0}, 160: {0}, 161: {0, 1, 2, 15}, 162: {0},
                  163: {0, 3, 4, 15}, 164: {0}, 165: {0}, 166: {0, 3, 4, 5, 6}}


@dataclass
class Problem:
    """One broken rule: ``rule`` is Khronos's issue id (``"3012"``) or ``"gputex"`` for a limit."""

    rule: str
    message: str
    severity: str = "error"  # "error", "warning" (the file stays valid) or "limit" (gputex's own)

    @property
    def fatal(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


@dataclass
class Walk:
    """What the walk learned of a file (only meaningful where no error was found)."""

    vk: int = 0
    type_size: int = 0
    width: int = 0
    height: int = 0
    depth: int = 0
    layers: int = 0
    faces: int = 0
    levels: int = 0
    scheme: int = 0
    entries: list = field(default_factory=list)  # (byteOffset, byteLength, uncompressedByteLength)
    dfd: dict = field(default_factory=dict)
    kvd: dict = field(default_factory=dict)
    block: tuple[int, int, int, int] = (1, 1, 1, 1)  # block width, height, depth, bytes

    def level_bytes(self, i: int) -> int:
        bw, bh, bd, nbytes = self.block
        w, h, d = (max(1, v >> i) for v in (self.width, self.height, self.depth))
        blocks = -(-w // bw) * -(-h // bh) * -(-d // bd)
        return blocks * nbytes * max(1, self.faces) * max(1, self.layers)


class _Fatal(Exception):
    pass


def walk(data: bytes) -> tuple[list[Problem], Walk]:
    """Every rule ``data`` breaks (in Khronos's order) and what was read of it."""
    problems: list[Problem] = []
    w = Walk()

    def error(rule: int, message: str) -> None:
        problems.append(Problem(str(rule), message))

    def warning(rule: int, message: str) -> None:
        problems.append(Problem(str(rule), message, "warning"))

    def fatal(rule: int, message: str) -> None:
        problems.append(Problem(str(rule), message))
        raise _Fatal

    size = len(data)
    try:
        if size < HEADER.size:
            if not data.startswith(KTX2_MAGIC[:size]) or size < 12:
                if not data[:12] == KTX2_MAGIC:
                    fatal(2001, "the file does not start with the KTX 2.0 identifier")
            fatal(1003, f"unexpected end of file: the header needs 80 bytes, the file has {size}")
        (ident, vk, tsize, width, height, depth, layers, faces, nlevels, scheme,
         dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len) = HEADER.unpack_from(data, 0)
        if ident != KTX2_MAGIC:
            fatal(2001, "the file does not start with the KTX 2.0 identifier")
        w.vk, w.type_size, w.width, w.height, w.depth = vk, tsize, width, height, depth
        w.layers, w.faces, w.levels, w.scheme = layers, faces, nlevels, scheme
        _header(w, error, warning)
        numlevels = max(1, nlevels)
        _indices(w, dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len, numlevels, error)
        index_end = HEADER.size + LEVEL.size * numlevels
        if index_end > size:
            fatal(1003, f"unexpected end of file: the level index ends at byte {index_end}, the file has {size}")
        w.entries = [LEVEL.unpack_from(data, HEADER.size + LEVEL.size * i) for i in range(numlevels)]
        expected = expected_dfd(vk) if vk in VK_NAMES and vk not in VK_PROHIBITED else None
        if dfd_off and dfd_len:
            if dfd_off + dfd_len > size:
                fatal(1003, f"unexpected end of file: the DFD ({dfd_len} bytes at {dfd_off}) runs past the "
                      f"end of the {size}-byte file")
            _dfd(w, data[dfd_off: dfd_off + dfd_len], expected, error, warning)
        if expected is not None:
            dims, nbytes = expected.block_dims, expected.bytes_planes[0]
        elif w.dfd:
            dims, nbytes = w.dfd["block_dims"], w.dfd["bytes_planes"][0] or 1
        else:
            dims, nbytes = (0, 0, 0, 0), 1
        w.block = (dims[0] + 1, dims[1] + 1, dims[2] + 1, nbytes)
        _level_index(w, dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len, error)
        if kvd_off and kvd_len:
            if kvd_off + kvd_len > size:
                fatal(1003, f"unexpected end of file: the key/value data ({kvd_len} bytes at {kvd_off}) runs "
                      f"past the end of the {size}-byte file")
            w.kvd = check_kvd(w, data, kvd_off, kvd_len, error, warning)
        if sgd_off and sgd_len and sgd_off + sgd_len > size:
            fatal(1003, f"unexpected end of file: the supercompression global data ({sgd_len} bytes at "
                  f"{sgd_off}) runs past the end of the {size}-byte file")
        if sgd_off and sgd_len and scheme == 1:
            _basislz_sgd(w, data[sgd_off: sgd_off + sgd_len], error)
        for i, (off, length, _) in enumerate(w.entries):
            if off + length > size:
                fatal(1003, f"unexpected end of file: level {i} ({length} bytes at {off}) runs past the end "
                      f"of the {size}-byte file")
        _paddings(w, data, dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len, index_end, error)
    except _Fatal:
        pass
    return problems, w


def _header(w: Walk, error, warning) -> None:
    vk = w.vk
    known = vk in VK_NAMES
    block = known and layout(vk) is None  # block-compressed
    if vk in VK_PROHIBITED:
        error(3001, f"{vk_name(vk)} is prohibited in KTX2 (SCALED and multi-planar formats are)")
    elif vk and not known:
        if vk < 1000001000:
            error(3002, f"VkFormat {vk} is not a valid VkFormat")
        else:
            warning(3003, f"VkFormat {vk} is unknown, possibly an extension format")
    if w.scheme == 1 and vk != 0:
        error(3004, f"vkFormat is {vk_name(vk)} but BasisLZ supercompression needs VK_FORMAT_UNDEFINED")
    if (vk == 0 or block) and w.type_size != 1:
        error(3005, f"typeSize is {w.type_size}; block-compressed and supercompressed formats need 1")
    if w.width == 0:
        error(3006, "pixelWidth is 0")
    if (block or w.scheme == 1) and w.height == 0:
        error(3007, "pixelHeight is 0, which block-compressed formats do not allow")
    if w.faces == 6 and w.width != w.height:
        error(3008, f"a cube map's faces must be square, got {w.width}x{w.height}")
    if w.depth and not w.height:
        error(3009, f"pixelHeight is 0 but pixelDepth is {w.depth}")
    if vk in (124, 125, 126, 127, 128, 129, 130) and w.depth:
        error(3011, f"pixelDepth is {w.depth}; depth/stencil formats must have pixelDepth 0")
    if w.faces == 6 and w.depth:
        error(3013, f"pixelDepth is {w.depth}; cube map faces must be 2D (pixelDepth 0)")
    if w.depth and w.layers:
        warning(3014, "the file holds a 3D array texture, which no API supports")
    if w.faces not in (1, 6):
        error(3015, f"faceCount is {w.faces}; it must be 6 for cube maps, 1 otherwise")
    if block and w.levels == 0:
        error(3017, "levelCount is 0, which block-compressed formats do not allow")
    numlevels = max(1, w.levels)
    biggest = max(w.width, w.height, w.depth)
    if numlevels > 32 or biggest < (1 << (numlevels - 1)):
        error(3016, f"levelCount {w.levels} is too many levels for the largest dimension {biggest}")
    if 0x10000 <= w.scheme <= 0x1FFFF:
        warning(3018, f"supercompressionScheme {w.scheme:#x} is a vendor scheme; it cannot be validated")
    elif w.scheme > 3:
        error(3019, f"supercompressionScheme {w.scheme} is not defined")


def _indices(w: Walk, dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len, numlevels, error) -> None:
    if dfd_off == 0 or dfd_len == 0:
        error(3020, f"the Data Format Descriptor is missing (dfdByteOffset {dfd_off}, dfdByteLength {dfd_len})")
    expected = _align(HEADER.size + LEVEL.size * numlevels, 4)
    if dfd_off != expected:
        error(3021, f"dfdByteOffset is {dfd_off}; the DFD must follow the level index at {expected}")
    expected += dfd_len
    if dfd_off and dfd_len and kvd_off and dfd_len != kvd_off - dfd_off:
        error(3028, f"dfdByteLength is {dfd_len}; with key/value data it must be kvdByteOffset - "
              f"dfdByteOffset ({kvd_off - dfd_off})")
    if kvd_len:
        expected = _align(expected, 4)
        if kvd_off != expected:
            error(3022, f"kvdByteOffset is {kvd_off}; the key/value data must follow the DFD at {expected}")
        expected += kvd_len
    elif kvd_off:
        error(3023, f"kvdByteOffset is {kvd_off} but kvdByteLength is 0; it must be 0 too")
    if sgd_len:
        expected = _align(expected, 8)
        if sgd_off != expected:
            error(3024, f"sgdByteOffset is {sgd_off}; the supercompression global data must follow at {expected}")
    elif sgd_off:
        error(3025, f"sgdByteOffset is {sgd_off} but sgdByteLength is 0; it must be 0 too")
    if w.scheme == 1 and not sgd_len:
        error(3026, "sgdByteLength is 0 but BasisLZ needs supercompression global data")
    elif w.scheme in (0, 2, 3) and sgd_len:
        error(3027, f"sgdByteLength is {sgd_len} but {SCHEMES[w.scheme]} has no global data")


def _dfd(w: Walk, dfd: bytes, expected, error, warning) -> None:
    total = struct.unpack_from("<I", dfd, 0)[0] if len(dfd) >= 4 else 0
    if total != len(dfd):
        error(6001, f"dfdTotalSize {total} differs from dfdByteLength {len(dfd)}")
    pos, n, found = 4, 0, False
    while pos < len(dfd):
        n += 1
        left = len(dfd) - pos
        if left < 8:
            error(6004, f"{left} byte(s) of DFD remain, too few for a descriptor block header")
            break
        w0, w1 = struct.unpack_from("<II", dfd, pos)
        vendor, dtype, version, bsize = w0 & 0x1FFFF, w0 >> 17, w1 & 0xFFFF, w1 >> 16
        if bsize < 8:
            error(6006, f"DFD block {n}: descriptorBlockSize is {bsize}, less than 8")
        elif bsize > left:
            error(6007, f"DFD block {n}: descriptorBlockSize is {bsize} but only {left} byte(s) remain")
        elif vendor == 0 and dtype == 0:
            if found:
                warning(6005, f"DFD block {n} is a second basic descriptor block; it is ignored")
            elif bsize < 24:
                found = True
                error(6010, f"DFD block {n}: descriptorBlockSize {bsize} is less than a basic block's 24 bytes")
            elif n == 1:
                found = True
                if (bsize - 24) % 16:
                    error(6009, f"DFD block {n}: descriptorBlockSize {bsize} is not 24 + 16 x samples")
                w.dfd = parse_dfd(struct.pack("<I", bsize + 4) + dfd[pos: pos + bsize])
                _basic(w, version, expected, error)
        elif not (vendor == 0 and dtype in (0x6001, 0x6002)):
            warning(6003, f"DFD block {n} (vendorId {vendor}, descriptorType {dtype}) is not recognized")
        pos += max(bsize, 8)
    if not found:
        error(6008, "no basic descriptor block is found first in the DFD")


def _basic(w: Walk, version: int, expected, error) -> None:
    d, vk = w.dfd, w.vk
    if version != 2:
        error(6011, f"the basic DFD block's versionNumber is {version}; it must be 2 (KHR_DF_VERSIONNUMBER_1_3)")
    if d["transfer"] > 18:
        error(6012, f"transferFunction is {d['transfer']}, not a value the specification defines (0 to 18)")
    if is_srgb(vk) and d["transfer"] != 2:
        error(6013, f"transferFunction is {d['transfer']} but {vk_name(vk)} needs SRGB (2)")
    if has_srgb_variant(vk) and d["transfer"] == 2:
        error(6014, f"transferFunction is SRGB but {vk_name(vk)} has an _SRGB variant, so it must not be")
    lay = layout(vk) if vk else None
    if lay is not None and lay.four22:
        if d["model"] != MODEL_YUVSDA:
            error(6017, f"colorModel is {d['model']} but {vk_name(vk)} needs YUVSDA ({MODEL_YUVSDA})")
    elif vk in VK_NAMES and lay is None:  # block-compressed
        want = expected.model if expected is not None else _block_model(VK_NAMES[vk])
        if d["model"] != want:
            error(6016, f"colorModel is {d['model']} but {vk_name(vk)} needs {want}")
    elif vk and vk in VK_NAMES and d["model"] != 1:
        error(6015, f"colorModel is {d['model']} but {vk_name(vk)} needs RGBSDA (1)")
    if w.scheme == 1 and d["model"] != MODEL_ETC1S:
        error(6018, f"colorModel is {d['model']} but BasisLZ needs ETC1S ({MODEL_ETC1S})")
    if d["primaries"] > 11:
        error(6019, f"colorPrimaries {d['primaries']} is not a defined value")
    samples: list[Sample] = d["samples"]
    if d["model"] in MODEL_CHANNELS:
        for i, s in enumerate(samples):
            if s.channel not in MODEL_CHANNELS[d["model"]]:
                error(6101, f"sample {i + 1}: channelType {s.channel} is not a channel of colorModel {d['model']}")
    if w.scheme not in (0, 2, 3) or vk == 0 or expected is None:
        _undefined(w, error)
        return
    if list(d["block_dims"]) != list(expected.block_dims):
        error(6020, f"texelBlockDimensions {[x + 1 for x in d['block_dims']]} differ from "
              f"{[x + 1 for x in expected.block_dims]} for {vk_name(vk)}")
    if expected.samples is not None:
        if len(samples) != len(expected.samples):
            error(6025, f"the basic DFD block has {len(samples)} sample(s) but {vk_name(vk)} needs "
                  f"{len(expected.samples)}")
        names = ("bitOffset", "bitLength", "channelType", "sampleLower", "sampleUpper")
        for i, (s, want) in enumerate(zip(samples, expected.samples)):
            got = (s.offset, s.length, s.channel | s.qualifiers, s.lower & 0xFFFFFFFF, s.upper & 0xFFFFFFFF)
            for k, name in enumerate(names):
                if k == 2:
                    for qname, bit in (("channelType", 0x0F), ("qualifierLinear", 0x10),
                                       ("qualifierExponent", 0x20), ("qualifierSigned", 0x40),
                                       ("qualifierFloat", 0x80)):
                        if got[2] & bit != want[2] & bit:
                            error(6028, f"sample {i + 1}: {qname} is {(got[2] & bit) // (bit & -bit)}, "
                                  f"{vk_name(vk)} needs {(want[2] & bit) // (bit & -bit)}")
                elif got[k] != want[k]:
                    error(6028, f"sample {i + 1}: {name} is {got[k]}, {vk_name(vk)} needs {want[k]}")
            if s.positions != (0, 0, 0, 0) and not (lay is not None and lay.four22):
                error(6028, f"sample {i + 1}: samplePosition is {list(s.positions)}, {vk_name(vk)} needs 0")
    if w.scheme == 0 and tuple(d["bytes_planes"]) != tuple(expected.bytes_planes):
        error(6021, f"bytesPlanes {list(d['bytes_planes'])} differ from {list(expected.bytes_planes)} for "
              f"{vk_name(vk)}")
    want_ts = type_size(vk)
    if lay is not None and want_ts is not None and w.type_size != want_ts:
        error(3012, f"typeSize is {w.type_size}; {vk_name(vk)} needs {want_ts}")
    if lay is not None and not lay.four22 and samples and vk not in range(124, 131):  # depth+stencil may mix
        kinds = {(s.qualifiers & 0x40, s.qualifiers & 0x80) for s in samples if not s.qualifiers & 0x20}
        if len(kinds) > 1 and not lay.shared_exponent:
            error(6203, "the samples mix signed/unsigned or float/integer")


def _block_model(name: str) -> int:
    """The colour model of a block-compressed VkFormat gputex has no WebGPU twin for."""
    for prefix, model in (("PVRTC1", 164), ("PVRTC2", 165), ("ASTC", 162), ("ETC2", 161), ("EAC", 161)):
        if name.startswith(prefix):
            return model
    return 0


def _undefined(w: Walk, error) -> None:
    """VK_FORMAT_UNDEFINED: UASTC and BasisLZ/ETC1S descriptors have fixed samples; others
    (without supercompression) must describe the data themselves."""
    d = w.dfd
    samples: list[Sample] = d["samples"]
    if w.scheme == 1 or (w.vk == 0 and w.scheme in (0, 2, 3) and d["model"] == MODEL_UASTC):
        what, count = ("BasisLZ/ETC1S", (1, 2)) if w.scheme == 1 else ("UASTC", (1,))
        if len(samples) not in count:
            error(6026, f"the basic DFD block has {len(samples)} sample(s); {what} needs "
                  + " or ".join(map(str, count)))
        if tuple(d["block_dims"]) != (3, 3, 0, 0):
            error(6020, f"texelBlockDimensions {[x + 1 for x in d['block_dims']]} differ from {what}'s 4x4x1x1")
        if what == "UASTC" and w.scheme == 0 and tuple(d["bytes_planes"]) != (16, 0, 0, 0, 0, 0, 0, 0):
            error(6021, f"bytesPlanes {list(d['bytes_planes'])} differ from UASTC's 16 0 0 0 0 0 0 0")
        for i, smp in enumerate(samples[:len(count)]):
            offset, bits = ((0, 128) if what == "UASTC" else (64 * i, 64))
            if smp.offset != offset:
                error(6102 if what == "UASTC" else 6103, f"sample {i + 1}: bitOffset is {smp.offset}; {what} "
                      f"needs {offset}")
            if smp.length != bits:
                error(6104 if what == "UASTC" else 6105, f"sample {i + 1}: bitLength is {smp.length - 1}; {what} "
                      f"needs {bits - 1}")
            if smp.lower:
                error(6106, f"sample {i + 1}: sampleLower is {smp.lower}; {what} needs 0")
            if smp.upper & 0xFFFFFFFF != 0xFFFFFFFF:
                error(6107, f"sample {i + 1}: sampleUpper is {smp.upper}; {what} needs 0xFFFFFFFF")
        return
    if w.vk == 0 and w.scheme == 0:
        if not samples:
            error(6027, "the basic DFD block has no samples; a VK_FORMAT_UNDEFINED file must describe its data")
        if d["bytes_planes"][0] == 0:
            error(6023, "bytesPlane0 is 0; a VK_FORMAT_UNDEFINED file must size its texel blocks")
        if any(d["bytes_planes"][1:]):
            error(6024, f"bytesPlanes {list(d['bytes_planes'])}: planes 1-7 must be 0 (multi-plane formats are "
                  "not supported)")


def _level_index(w: Walk, dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len, error) -> None:
    entries = w.entries
    align = 1 if w.scheme else math.lcm(w.block[3], 4)
    if sgd_len:
        first = sgd_off + sgd_len
    elif kvd_len:
        first = kvd_off + kvd_len
    elif dfd_len:
        first = dfd_off + dfd_len
    else:
        first = HEADER.size + LEVEL.size * len(entries)
    first = _align(first, align)
    for i in range(1, len(entries)):
        if entries[i][1] > entries[i - 1][1]:
            error(4001, f"level index entries {i - 1} and {i} are out of order (byteLength {entries[i - 1][1]} "
                  f"before {entries[i][1]}): the index lists the largest level first")
        if entries[i][0] > entries[i - 1][0]:
            error(4002, f"level {i} is stored at byte {entries[i][0]}, after level {i - 1} at {entries[i - 1][0]}: "
                  "levels are stored smallest first")
    known = w.vk != 0 and w.scheme == 0
    last_off, last_len = first, 0
    for i in reversed(range(len(entries))):
        off, length, ulen = entries[i]
        if known:
            want_off = first
            for j in range(len(entries) - 1, i, -1):
                want_off = _align(want_off + w.level_bytes(j), align)
        else:
            want_off = _align(last_off + last_len, align)
        if off % align:
            error(4003, f"level {i} starts at byte {off}, not a multiple of {align} (expected {want_off})")
        elif off != want_off:
            error(4004, f"level {i} starts at byte {off}; it must start at {want_off}")
        want = w.level_bytes(i)
        if known and length != want:
            error(4005, f"level {i}: byteLength is {length}; a level of this format and size is {want} bytes")
        if w.scheme == 1:
            if ulen:
                error(4007, f"level {i}: uncompressedByteLength is {ulen}; BasisLZ needs 0")
        elif w.vk:
            if w.scheme == 0 and ulen != want:
                error(4006, f"level {i}: uncompressedByteLength is {ulen}; a level of this format and size is "
                      f"{want} bytes")
        elif ulen == 0:
            error(4009, f"level {i}: uncompressedByteLength is 0")
        elif ulen % (max(1, w.faces) * max(1, w.layers)):
            error(4010, f"level {i}: uncompressedByteLength {ulen} is not a multiple of faces x layers")
        last_off, last_len = off, length


def _basislz_sgd(w: Walk, sgd: bytes, error) -> None:
    """The BasisLZ global data (81xx): its header, then one image descriptor per level, layer,
    face and slice, each slice inside its level."""
    if len(sgd) < 20:
        error(8101, f"sgdByteLength is {len(sgd)}; BasisLZ needs at least its 20-byte global header")
        return
    _, _, endpoints, selectors, tables, extended = struct.unpack_from("<2H4I", sgd, 0)
    layers, levels = max(1, w.layers), len(w.entries)
    images = sum(layers * max(1, w.faces) * max(1, w.depth >> i) for i in range(levels))
    want = 20 + 20 * images + endpoints + selectors + tables + extended
    if len(sgd) != want:
        error(8102, f"sgdByteLength is {len(sgd)}; {images} image(s) and the global header need {want}")
    if w.dfd.get("model") == MODEL_ETC1S and extended:
        error(8103, f"extendedByteLength is {extended}; BasisLZ/ETC1S needs 0")
    if len(sgd) < 20 + 20 * images:
        return
    nsamples, at, p_frame = len(w.dfd.get("samples", [])), 20, False
    for level in range(levels):
        level_len = w.entries[level][1]
        for n in range(layers * max(1, w.faces) * max(1, w.depth >> level)):
            flags, rgb_off, rgb_len, a_off, a_len = struct.unpack_from("<5I", sgd, at)
            at += 20
            where = f"level {level} image {n}"
            p_frame |= bool(flags & 2)
            if flags & ~2:
                error(8104, f"{where}: imageFlags {flags:#x} has bits other than the P-frame bit")
            if rgb_len == 0:
                error(8106, f"{where}: rgbSliceByteLength is 0")
            if rgb_off + rgb_len > level_len:
                error(8107, f"{where}: the RGB slice ({rgb_len} bytes at {rgb_off}) runs past the level's "
                      f"{level_len} bytes")
            if a_off + a_len > level_len:
                error(8108, f"{where}: the alpha slice ({a_len} bytes at {a_off}) runs past the level's "
                      f"{level_len} bytes")
            if a_len == 0 and nsamples == 2:
                error(8109, f"{where}: alphaSliceByteLength is 0 but the DFD has an alpha sample")
            if a_len and nsamples == 1:
                error(8110, f"{where}: alphaSliceByteLength is {a_len} but the DFD has no alpha sample")
    if p_frame and "KTXanimData" not in w.kvd:
        error(8105, "an image is a P-frame but KTXanimData is missing: only animations have P-frames")


def _paddings(w: Walk, data, dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len, index_end, error) -> None:
    position = index_end
    blocks = [(dfd_off, dfd_len, "the DFD"), (kvd_off, kvd_len, "the key/value data"),
              (sgd_off, sgd_len, "the supercompression global data")]
    blocks += [(off, length, f"level {i}") for i, (off, length, _) in reversed(list(enumerate(w.entries)))]
    for off, length, name in blocks:
        if not off or not length:
            continue
        if off < position:
            position = max(position, off + length)
            continue
        pad = data[position: off]
        if any(pad):
            at = position + next(i for i, b in enumerate(pad) if b)
            error(7011, f"padding byte {at} before {name} is not zero")
        position = off + length


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def report(path: str, problems: list[Problem], *, strict: bool = False) -> tuple[dict, list[tuple[str, str]], bool]:
    """What ``gputex validate`` shows for one file: the ``--json`` object, the text lines as
    (stream, line) with stream ``"out"`` or ``"err"``, and whether the file fails. Errors fail;
    warnings fail with ``strict`` (as ``ktx validate --warnings-as-errors``); gputex's limits
    never do: the file is valid KTX2 that gputex cannot read."""
    errors = [p for p in problems if p.severity == "error" or (strict and p.severity == "warning")]
    spec = [p for p in problems if p.severity != "limit"]
    limits = [p for p in problems if p.severity == "limit"]
    obj = {"file": path, "valid": not errors,
           "problems": [{"rule": p.rule, "severity": p.severity, "message": p.message,
                         "error": p in errors} for p in spec],
           "gputex_limits": [p.message for p in limits]}
    lines: list[tuple[str, str]] = []
    if not errors:
        lines.append(("out", f"{path}: valid KTX2" + (" (with warnings)" if spec else "")
                      + (f"; gputex cannot read it: {limits[0].message}" if limits else "")))
    for p in spec:
        kind = "error" if p in errors else "warning"
        lines.append(("err" if kind == "error" else "out", f"{path}: {kind} [{p.rule}] {p.message}"))
    return obj, lines, bool(errors)
