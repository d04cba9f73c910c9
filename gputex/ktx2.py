"""KTX 2.0: write, read, validate.

The rules are those of the KTX File Format Specification 2.0 (Khronos, document revision 4):
header and texture type table, level index (smallest level stored first, ``lcm(texel block
size, 4)`` alignment without supercompression, zero ``mipPadding``), the Data Format
Descriptor (one Khronos basic block whose block dimensions, plane bytes and samples match the
``vkFormat``; sRGB transfer for ``_SRGB`` formats; unspecified primaries and transfer for
integer formats), sorted unique key/value pairs, and supercompression (Zstandard and ZLIB
read, Zstandard written; BasisLZ and UASTC are refused with a message).

:func:`validate` names the rule each problem breaks; :func:`read_ktx2` refuses any file that
breaks a rule (except the spec's "should"s, which are warnings).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from .errors import DecodeError, FormatError
from .formats import Format
from .layout import align_up, mip_count
from .texfile import (KTX2_MAGIC, VK_BY_CODE, VK_PROHIBITED, TextureFile, check_shape,
                      format_from_vk, level_bytes, vk_format_for)

__all__ = ["write_ktx2", "read_ktx2", "validate", "Problem", "dfd_for", "WRITER", "default_swizzle"]

WRITER = "gputex"
HEADER = struct.Struct("<12s9I4I2Q")  # identifier, 9 header words, dfd/kvd offsets+lengths, sgd
LEVEL = struct.Struct("<3Q")
SCHEMES = {0: "none", 1: "basislz", 2: "zstd", 3: "zlib"}

# DFD constants (Khronos Data Format Specification 1.4)
MODEL_RGBSDA = 1
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
    if name == "rgb9e5ufloat":
        out = [Sample(9 * i, 9, ch, 0, 0, 8448) for i, ch in enumerate((CH_R, CH_G, CH_B))]
        out += [Sample(27, 5, ch, Q_EXPONENT, 15, 31) for ch in (CH_R, CH_G, CH_B)]
        return out
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


def _parse_dfd(data: bytes) -> dict:
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
        bo, bl, ct, _p0, _p1, _p2, _p3, lo, hi = struct.unpack_from("<HBB4BII", data, off)
        samples.append(Sample(bo, bl + 1, ct & 0x0F, ct & 0xF0, lo, hi))
    return {"total": total, "vendor": vendor, "type": dtype, "version": version, "block_size": size,
            "model": model, "primaries": primaries, "transfer": transfer, "flags": flags,
            "block_dims": dims, "bytes_planes": planes, "samples": samples}


# -- writing -----------------------------------------------------------------------------------

def _kvd(entries: dict[str, bytes]) -> bytes:
    out = b""
    for key in sorted(entries):
        kv = key.encode() + b"\0" + entries[key]
        out += struct.pack("<I", len(kv)) + kv + b"\0" * (-len(kv) % 4)
    return out


def write_ktx2(tf: TextureFile, *, zstd: int | None = None) -> list[bytes]:
    """Serialize ``tf`` as KTX2; returns the file as a list of parts (header first).

    ``zstd``: a Zstandard level (1-22) to supercompress each level with, or None.
    """
    fmt = tf.format
    vk = vk_format_for(fmt, tf.color_space)
    vfmt, _ = format_from_vk(vk, tf.source)
    # sRGB transfer: the _SRGB VkFormats, and sRGB data in formats that have no _SRGB variant
    srgb_tf = vfmt.srgb or vk in (15, 22) or (tf.color_space == "srgb" and not vfmt.srgb_name)
    scheme = 2 if zstd is not None else 0
    n = len(tf.levels)
    type_size = 1 if fmt.compressed else (4 if fmt.packed else max(1, fmt.block_bytes // max(fmt.channels, 1)))
    dfd = dfd_for(vfmt, bool(srgb_tf), tf.premultiplied)
    orientation = b"rdi\0" if tf.volume else b"rd\0"
    kv = {"KTXorientation": orientation, "KTXwriter": f"{WRITER} {_version()}".encode() + b"\0"}
    swizzle = default_swizzle(fmt)
    if swizzle:
        kv["KTXswizzle"] = swizzle.encode() + b"\0"
    if zstd is not None:
        kv["KTXwriterScParams"] = f"--zstd {zstd}".encode() + b"\0"
    kvd = _kvd(kv)
    payloads = []
    for i, data in enumerate(tf.levels):
        raw = bytes(data) if not isinstance(data, bytes) else data
        if len(raw) != level_bytes(tf, i):
            raise FormatError(f"{tf.source}: level {i} holds {len(raw)} bytes, {level_bytes(tf, i)} expected")
        if zstd is not None:
            import imagecodecs

            payloads.append((imagecodecs.zstd_encode(raw, level=zstd), len(raw)))
        else:
            payloads.append((raw, len(raw)))
    index_at = HEADER.size
    dfd_at = index_at + LEVEL.size * n
    kvd_at = dfd_at + len(dfd)
    data_at = kvd_at + len(kvd)
    align = 1 if scheme else math.lcm(fmt.block_bytes, 4)
    # levels are stored smallest first
    offsets: dict[int, int] = {}
    pos = data_at
    parts_data: list[bytes] = []
    for i in reversed(range(n)):
        pad = align_up(pos, align) - pos
        if pad:
            parts_data.append(b"\0" * pad)
            pos += pad
        offsets[i] = pos
        parts_data.append(payloads[i][0])
        pos += len(payloads[i][0])
    layer_count = tf.layers if tf.array else 0
    header = HEADER.pack(KTX2_MAGIC, vk, type_size, tf.width, tf.height, tf.depth if tf.volume else 0,
                         layer_count, tf.faces, n, scheme,
                         dfd_at, len(dfd), kvd_at, len(kvd), 0, 0)
    index = b"".join(LEVEL.pack(offsets[i], len(payloads[i][0]), payloads[i][1]) for i in range(n))
    return [header, index, dfd, kvd, *parts_data]


def default_swizzle(fmt: Format) -> str | None:
    """The ``KTXswizzle`` gputex writes: ``rrr1`` for one-channel data and ``rrrg`` for two
    (gputex stores grey as r and grey+alpha as rg, so viewers show grey, not red); None for
    others, and for two-channel block formats (BC5 / EAC RG11 hold normal maps' x and y, not
    grey+alpha)."""
    if fmt.compressed:
        return "rrr1" if fmt.name.startswith(("bc4", "eac-r11")) else None
    return {1: "rrr1", 2: "rrrg"}.get(fmt.channels)


def _version() -> str:
    """gputex's version as ``gputex.__version__`` says (installed or not: outputs depend on the
    code's version only, never on how it was installed)."""
    from . import __version__

    return __version__


# -- reading and validating --------------------------------------------------------------------

@dataclass
class Problem:
    rule: str
    message: str
    fatal: bool = True  # False: a "should" of the spec

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


class _Stop(Exception):
    pass


def _check(data: bytes, source: str, problems: list[Problem], decode: bool,
           limits: tuple[int, float] | None = None) -> TextureFile | None:
    """Walk the file, appending every rule broken to ``problems``; return the texture if whole.
    ``limits``: (max_pixels, max_ratio) of :mod:`gputex.budget`, checked before inflating
    (a LimitError); None: levels are not inflated beyond those limits either, but reported."""

    def bad(rule: str, message: str, fatal: bool = True, stop: bool = False) -> None:
        problems.append(Problem(rule, message, fatal))
        if stop:
            raise _Stop

    size = len(data)
    try:
        if size < HEADER.size or not data.startswith(KTX2_MAGIC):
            if not data.startswith(KTX2_MAGIC):
                bad("identifier", "the file does not start with the KTX 2.0 identifier", stop=True)
            bad("file-size", f"the file is {size} bytes, shorter than the 80-byte header", stop=True)
        (_, vk, type_size, width, height, depth, layer_count, face_count, level_count, scheme,
         dfd_off, dfd_len, kvd_off, kvd_len, sgd_off, sgd_len) = HEADER.unpack_from(data, 0)

        # vkFormat and typeSize
        if vk in VK_PROHIBITED:
            bad("vkformat", f"vkFormat {vk} is prohibited in KTX2 (SCALED or multi-planar)", stop=True)
        fmt = None
        forced_space = ""
        if vk == 0:
            if scheme == 1:
                bad("supercompression", "BasisLZ/ETC1S textures need transcoding, which gputex does not do",
                    stop=True)
            bad("vkformat", "vkFormat is VK_FORMAT_UNDEFINED (UASTC or a custom format); gputex does not "
                "transcode these", stop=True)
        try:
            fmt, forced_space = format_from_vk(vk, source)
        except DecodeError:
            bad("vkformat", f"VkFormat {vk} is not supported by gputex", stop=True)
        want_type = 1 if fmt.compressed else (4 if fmt.packed else max(1, fmt.block_bytes // max(fmt.channels, 1)))
        if type_size != want_type:
            bad("typesize", f"typeSize is {type_size}; {fmt.name} needs {want_type}")

        # texture type
        if width == 0:
            bad("dimensions", "pixelWidth is 0", stop=True)
        if height == 0:
            bad("dimensions", "pixelHeight is 0: 1D textures are not supported by gputex"
                if not fmt.compressed else "pixelHeight must not be 0 for block-compressed formats", stop=True)
        if face_count not in (1, 6):
            bad("texture-type", f"faceCount is {face_count}; it must be 1 or 6", stop=True)
        if face_count == 6 and (width != height or depth != 0):
            bad("texture-type", f"a cube map must have square faces and pixelDepth 0 "
                f"(got {width}x{height}, depth {depth})", stop=True)
        if depth and layer_count:
            bad("texture-type", "3D array textures are not supported by gputex", stop=True)
        if scheme not in SCHEMES:
            bad("supercompression", f"supercompressionScheme {scheme} is not defined", stop=True)
        if scheme == 1:
            bad("supercompression", "BasisLZ supercompression needs transcoding, which gputex does not do",
                stop=True)
        most = mip_count(width, height, depth)
        if level_count > most:
            bad("level-count", f"levelCount {level_count} is more than the {most} a "
                f"{width}x{height}{'x%d' % depth if depth else ''} texture has", stop=True)
        if level_count == 0 and fmt.compressed:
            bad("level-count", "levelCount 0 is not allowed for block-compressed formats")
        nlevels = max(1, level_count)

        tf = TextureFile(fmt, width, height, max(1, depth), max(1, layer_count), face_count,
                         container="ktx2", source=source, array=layer_count > 0,
                         supercompression=SCHEMES[scheme])
        try:
            check_shape(tf, nlevels, "KTX2")
        except DecodeError as e:
            bad("dimensions", str(e).split(": ", 1)[1], stop=True)

        # index
        index_end = HEADER.size + LEVEL.size * nlevels
        if index_end > size:
            bad("file-size", f"the level index ends at byte {index_end}, past the end of the "
                f"{size}-byte file", stop=True)
        if dfd_off != index_end:
            bad("dfd-offset", f"dfdByteOffset is {dfd_off}; the DFD must follow the level index at {index_end}")
        if dfd_len < 4 + 24 or dfd_off + dfd_len > size:
            bad("dfd-offset", f"the DFD ({dfd_len} bytes at {dfd_off}) does not fit in the file", stop=True)
        if kvd_len == 0 and kvd_off != 0:
            bad("kvd-offset", "kvdByteOffset must be 0 when kvdByteLength is 0")
        if kvd_len and kvd_off + kvd_len > size:
            bad("kvd-offset", f"the key/value data ({kvd_len} bytes at {kvd_off}) does not fit in the file",
                stop=True)
        if sgd_len == 0 and sgd_off != 0:
            bad("sgd", "sgdByteOffset must be 0 when sgdByteLength is 0")
        if sgd_len and scheme != 1:
            bad("sgd", f"sgdByteLength is {sgd_len} but {SCHEMES[scheme]} has no global data")

        # DFD
        dfd = _parse_dfd(data[dfd_off: dfd_off + dfd_len])
        _check_dfd(dfd, dfd_len, kvd_off, kvd_len, dfd_off, fmt, vk, scheme, bad)
        space = forced_space or ("srgb" if dfd["transfer"] == 2 else "linear")
        tf.color_space = space
        tf.premultiplied = bool(dfd["flags"] & 1)
        tf.metadata["dfd"] = {"color_model": dfd["model"], "color_primaries": dfd["primaries"],
                              "transfer_function": dfd["transfer"], "flags": dfd["flags"],
                              "texel_block": [d + 1 for d in dfd["block_dims"][:2]],
                              "bytes_plane0": dfd["bytes_planes"][0],
                              "samples": [{"bit_offset": s.offset, "bit_length": s.length, "channel": s.channel,
                                           "qualifiers": s.qualifiers} for s in dfd["samples"]]}

        # key/value data
        tf.metadata["kvd"] = _check_kvd(data, kvd_off, kvd_len, depth, bad)

        # levels
        align = 1 if scheme else math.lcm(fmt.block_bytes, 4)
        entries = [LEVEL.unpack_from(data, HEADER.size + LEVEL.size * i) for i in range(nlevels)]
        data_start = max(dfd_off + dfd_len, kvd_off + kvd_len, sgd_off + sgd_len)
        for i, (off, length, ulen) in enumerate(entries):
            want = level_bytes(tf, i)
            if off + length > size:
                bad("file-size", f"level {i} ({length} bytes at {off}) runs past the end of the "
                    f"{size}-byte file", stop=True)
            if off < data_start:
                bad("level-offset", f"level {i} at byte {off} overlaps the header data (which ends at "
                    f"{data_start})", stop=True)
            if scheme == 0 and length != ulen:
                bad("level-length", f"level {i}: byteLength {length} differs from uncompressedByteLength {ulen}")
            if ulen != want:
                bad("level-length", f"level {i} holds {ulen} bytes; a {'x'.join(map(str, tf.level_size(i)))} "
                    f"level of {fmt.name} with {tf.images} image(s) needs {want}", stop=True)
            if ulen % tf.images:
                bad("level-length", f"level {i}: uncompressedByteLength is not a multiple of faces x layers")
            if off % align:
                bad("level-alignment", f"level {i} starts at byte {off}, not a multiple of {align} "
                    f"(lcm of the texel block size {fmt.block_bytes} and 4)")
            if i > 0 and off >= entries[i - 1][0]:
                bad("level-order", f"level {i} is stored at byte {off}, after level {i - 1} at "
                    f"{entries[i - 1][0]}: levels must be stored smallest first")
        # contiguity, padding and the end of the file
        order = sorted(range(nlevels), key=lambda i: entries[i][0])
        for a, b in zip(order, order[1:]):
            end_a = entries[a][0] + entries[a][1]
            if end_a > entries[b][0]:
                bad("level-offset", f"levels {a} and {b} overlap")
            elif entries[b][0] - end_a >= max(align, 1):
                bad("level-offset", f"{entries[b][0] - end_a} bytes between levels {a} and {b}; "
                    f"only mipPadding (< {align}) is allowed")
            elif any(data[end_a: entries[b][0]]):
                bad("level-padding", f"mipPadding before level {b} is not zero")
        last = entries[order[-1]]
        if last[0] + last[1] != size:
            bad("file-size", f"{size - last[0] - last[1]} bytes follow the last level")
        tf.level_file_bytes = [e[1] for e in entries]
        if any(p.fatal for p in problems) or not decode:
            return tf
        if scheme:  # before anything is inflated: the budget (gputex.budget) of every level
            _check_budget(tf, entries, limits, bad)
            if any(p.fatal for p in problems):
                return tf
        tf.levels = [_inflate(data, off, length, ulen, scheme, source, i) for i, (off, length, ulen)
                     in enumerate(entries)]
        return tf
    except _Stop:
        return None


def _check_dfd(dfd, dfd_len, kvd_off, kvd_len, dfd_off, fmt: Format, vk: int, scheme: int, bad) -> None:
    if dfd["total"] != dfd_len:
        bad("dfd-size", f"dfdTotalSize {dfd['total']} differs from dfdByteLength {dfd_len}")
    if kvd_len and dfd["total"] != kvd_off - dfd_off:
        bad("dfd-size", f"dfdTotalSize {dfd['total']} is not kvdByteOffset - dfdByteOffset "
            f"({kvd_off - dfd_off})")
    if dfd["vendor"] != 0 or dfd["type"] != 0 or dfd["version"] != 2:
        bad("dfd-header", f"the first DFD block is not a Khronos basic descriptor version 2 (vendor "
            f"{dfd['vendor']}, type {dfd['type']}, version {dfd['version']})", stop=True)
    if dfd["block_size"] != 24 + 16 * len(dfd["samples"]) or dfd["block_size"] + 4 > dfd_len:
        bad("dfd-size", f"descriptorBlockSize {dfd['block_size']} does not match its samples", stop=True)
    expected = _parse_dfd(dfd_for(fmt, fmt.srgb))
    if dfd["model"] != expected["model"]:
        bad("dfd-format", f"colorModel {dfd['model']} does not match {fmt.name} (expected {expected['model']})")
    if dfd["block_dims"] != expected["block_dims"]:
        bad("dfd-format", f"texelBlockDimension {[d + 1 for d in dfd['block_dims']]} does not match {fmt.name}")
    planes_ok = dfd["bytes_planes"] == expected["bytes_planes"] or (scheme and not any(dfd["bytes_planes"]))
    if not planes_ok:
        bad("dfd-format", f"bytesPlane0 {dfd['bytes_planes'][0]} does not match {fmt.name} "
            f"({expected['bytes_planes'][0]} bytes per block)")
    got = [(s.offset, s.length, s.channel, s.qualifiers & (Q_FLOAT | Q_SIGNED | Q_EXPONENT))
           for s in dfd["samples"]]
    want = [(s.offset, s.length, s.channel, s.qualifiers & (Q_FLOAT | Q_SIGNED | Q_EXPONENT))
            for s in expected["samples"]]
    if got != want:
        bad("dfd-format", f"the DFD samples do not describe {fmt.name} "
            f"(got {len(got)} samples {got}, expected {want})")
    name = VK_BY_CODE.get(vk, "")
    is_srgb_vk = name.endswith("-srgb") or vk in (15, 22, 57, 132)
    if is_srgb_vk and dfd["transfer"] != 2:
        bad("dfd-transfer", f"vkFormat {vk} is an _SRGB format but the DFD transferFunction is "
            f"{dfd['transfer']}, not SRGB (2)")
    if not is_srgb_vk and dfd["transfer"] == 2 and (fmt.srgb_name or vk in (9, 16)):
        bad("dfd-transfer", f"vkFormat {vk} has an _SRGB variant; its transferFunction should not be SRGB",
            fatal=False)
    if fmt.kind in ("uint", "sint") and (dfd["primaries"] != 0 or dfd["transfer"] != 0):
        bad("dfd-transfer", "integer formats must have colorPrimaries and transferFunction UNSPECIFIED (0)")
    if dfd["flags"] & ~1:
        bad("dfd-header", f"DFD flags {dfd['flags']:#x} has bits other than ALPHA_PREMULTIPLIED")


def _check_kvd(data: bytes, off: int, length: int, depth: int, bad) -> dict:
    out: dict = {}
    pos, end, keys = off, off + length, []
    while pos < end:
        if pos + 4 > end:
            bad("kvd-size", "key/value data ends inside a length field", stop=True)
        (n,) = struct.unpack_from("<I", data, pos)
        if n < 2 or pos + 4 + n > end:
            bad("kvd-size", f"a key/value pair at byte {pos} claims {n} bytes, which does not fit", stop=True)
        kv = data[pos + 4: pos + 4 + n]
        nul = kv.find(b"\0")
        if nul <= 0:
            bad("kvd-key", f"the key at byte {pos + 4} is not NUL-terminated or is empty", stop=True)
        try:
            key = kv[:nul].decode("utf-8")
        except UnicodeDecodeError:
            bad("kvd-key", f"the key at byte {pos + 4} is not UTF-8", stop=True)
        value = bytes(kv[nul + 1:])
        keys.append(key)
        pad_end = pos + 4 + align_up(n, 4)
        if pad_end > end:
            bad("kvd-size", "the last key/value pair is not padded to 4 bytes")
        elif any(data[pos + 4 + n: pad_end]):
            bad("kvd-padding", f"valuePadding after key {key!r} is not zero")
        pos = pad_end
        if key == "KTXswizzle":
            import re

            text = value.rstrip(b"\0").decode("latin-1")
            if not value.endswith(b"\0") or not re.match(r"^[rgba01]{4}$", text):
                bad("kvd-swizzle", f"KTXswizzle {text!r} is not four of r, g, b, a, 0, 1 with a NUL")
        if key == "KTXorientation":
            text = value.rstrip(b"\0").decode("latin-1")
            import re

            pattern = r"^[rl][du][oi]$" if depth else r"^[rl][du]$"
            if not re.match(pattern, text):
                bad("kvd-orientation", f"KTXorientation {text!r} is not valid for this texture type")
        out[key] = value.rstrip(b"\0").decode("utf-8", "replace") if key.startswith("KTX") else value.hex()
    if keys != sorted(keys, key=lambda k: [ord(c) for c in k]):
        bad("kvd-order", f"keys are not sorted by code point: {keys}")
    if len(set(keys)) != len(keys):
        bad("kvd-order", "a key appears more than once")
    if "KTXwriterScParams" in keys and "KTXwriter" not in keys:
        bad("kvd-writer", "KTXwriterScParams is present without KTXwriter")
    for k in keys:
        if k.lower().startswith("ktx") and k not in ("KTXorientation", "KTXwriter", "KTXwriterScParams",
                                                     "KTXswizzle", "KTXcubemapIncomplete", "KTXanimData",
                                                     "KTXglFormat", "KTXdxgiFormat__", "KTXmetalPixelFormat",
                                                     "KTXastcDecodeMode"):
            bad("kvd-key", f"key {k!r} uses the reserved KTX prefix", fatal=False)
    return out


def _check_budget(tf: TextureFile, entries, limits: tuple[int, float] | None, bad) -> None:
    """Supercompressed levels: pixels and inflation ratio, before inflating. With ``limits``
    a refusal is a LimitError naming the file (reading); without, a problem (validating: the
    level is not inflated, so it cannot be said to be valid)."""
    from .budget import check_ratio, check_size
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
    from .errors import LimitError

    max_pixels, max_ratio = limits if limits is not None else (DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO)
    for i, (_, length, ulen) in enumerate(entries):
        w, h, d = tf.level_size(i)
        try:
            check_size(tf.source, w, h * d, max_pixels, f"level {i}:")
            check_ratio(tf.source, ulen, length, max_ratio, f"{tf.supercompression} level {i} would inflate",
                        "stored level")
        except LimitError as e:
            if limits is not None:
                raise
            bad("supercompression", str(e).split(": ", 1)[1] + "; not inflated", stop=True)


def _inflate(data: bytes, off: int, length: int, ulen: int, scheme: int, source: str, level: int):
    view = memoryview(data)[off: off + length]
    if scheme == 0:
        return view
    import imagecodecs

    try:
        if scheme == 2:
            out = imagecodecs.zstd_decode(bytes(view), out=ulen)
        else:
            out = imagecodecs.zlib_decode(bytes(view), out=ulen)
    except Exception as e:
        raise DecodeError(f"{source}: level {level}: corrupt {SCHEMES[scheme]} data ({e})") from None
    out = bytes(out)
    if len(out) != ulen:
        raise DecodeError(f"{source}: level {level} inflates to {len(out)} bytes, {ulen} expected")
    return out


def read_ktx2(data: bytes, source: str, *, inflate: bool = True, max_pixels: int | None = None,
              max_ratio: float | None = None) -> TextureFile:
    """Parse a KTX2 file (Zstandard / ZLIB levels inflated); any broken rule is a DecodeError.
    Supercompressed levels over ``max_pixels`` / ``max_ratio`` (:mod:`gputex.budget`, defaults
    as for images) are a LimitError before anything is inflated. ``inflate=False``: only the
    header and index are read (``levels`` then hold the stored bytes; ``gputex info``)."""
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO

    limits = (max_pixels or DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO if max_ratio is None else max_ratio)
    problems: list[Problem] = []
    tf = _check(data, source, problems, decode=inflate, limits=limits)
    fatal = [p for p in problems if p.fatal]
    if fatal or tf is None:
        raise DecodeError(f"{source}: invalid KTX2 file: {fatal[0] if fatal else 'unreadable'}")
    if not inflate:
        tf.levels = [memoryview(data)[off: off + length] for off, length, _ in _entries(data, len(tf.level_file_bytes))]
    return tf


def _entries(data: bytes, n: int) -> list[tuple[int, int, int]]:
    return [LEVEL.unpack_from(data, HEADER.size + LEVEL.size * i) for i in range(n)]


def validate(data: bytes, source: str) -> list[Problem]:
    """Every rule of the KTX 2.0 specification the file breaks (warnings have ``fatal=False``)."""
    problems: list[Problem] = []
    tf = _check(data, source, problems, decode=False)
    if tf is not None and not any(p.fatal for p in problems) and tf.supercompression != "none":
        # supercompressed levels must inflate to their uncompressedByteLength: one level at a time
        # (each freed before the next), none beyond the budget (reported, not inflated)
        def bad(rule: str, message: str, fatal: bool = True, stop: bool = False) -> None:
            problems.append(Problem(rule, message, fatal))

        entries = _entries(data, len(tf.level_file_bytes))
        _check_budget(tf, entries, None, bad)
        if not any(p.fatal for p in problems):
            for i, (off, length, ulen) in enumerate(entries):
                try:
                    _inflate(data, off, length, ulen, 2 if tf.supercompression == "zstd" else 3, source, i)
                except DecodeError as e:
                    problems.append(Problem("supercompression", str(e).split(": ", 1)[1]))
                    break
    return problems
