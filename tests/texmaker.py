"""Test-only writers of texture files, written from the format documents and independent of
gputex's own writers: DDS with a DX10 header (Microsoft's DDS_HEADER / DDS_HEADER_DXT10
layout) and KTX 1.1 (rows padded to 4 bytes), a KTX2 re-packer that supercompresses
the levels of an existing KTX2 file with ZLIB (scheme 3), and a KTX2 writer from the KTX 2.0
specification taking any VkFormat, DFD and key/value data (``ktx2``: valid and broken files
for the validation and expansion tests)."""

from __future__ import annotations

import struct
import zlib


def dds_dx10(width, height, dxgi, images_levels, *, cube=False, array_size=1, block_bytes=16,
             compressed=True, mips=None):
    """``images_levels[image][level]`` = bytes of that surface (DDS order: image, then level)."""
    nlev = mips if mips is not None else len(images_levels[0])
    flags = 0x1 | 0x2 | 0x4 | 0x1000 | 0x20000
    pitch = ((width + 3) // 4) * ((height + 3) // 4) * block_bytes if compressed else width * block_bytes
    caps2 = 0xFE00 if cube else 0
    header = struct.pack("<4s7I44s8I5I", b"DDS ", 124, flags, height, width, pitch, 0, nlev, b"\0" * 44,
                         32, 0x4, struct.unpack("<I", b"DX10")[0], 0, 0, 0, 0, 0,
                         0x1000 | 0x8 | 0x400000, caps2, 0, 0, 0)
    dx10 = struct.pack("<5I", dxgi, 3, 0x4 if cube else 0, array_size, 1)
    body = b"".join(b"".join(levels) for levels in images_levels)
    return header + dx10 + body


GL = {"r8unorm": (0x8229, 0x1903, 0x1401, 1), "rgba8unorm": (0x8058, 0x1908, 0x1401, 1),
      "rg16unorm": (0x822C, 0x8227, 0x1403, 2), "rgba32float": (0x8814, 0x1908, 0x1406, 4),
      "rgb565": (0x8D62, 0x1907, 0x8363, 2), "rgb8": (0x8051, 0x1907, 0x1401, 1)}  # GL_RGB, UNSIGNED_SHORT_5_6_5


def ktx1(fmt, width, height, levels_rows, *, bytes_per_texel):
    """KTX 1.1 of one 2D texture; ``levels_rows[level]`` is a list of tight rows (bytes)."""
    internal, gl_format, gl_type, type_size = GL[fmt]
    kv = b"KTXorientation\0S=r,T=d\0"
    kv = struct.pack("<I", len(kv)) + kv + b"\0" * (-len(kv) % 4)
    out = struct.pack("<12s13I", b"\xabKTX 11\xbb\r\n\x1a\n", 0x04030201, gl_type, type_size, gl_format, internal,
                      gl_format, width, height, 0, 0, 1, len(levels_rows), len(kv)) + kv
    for rows in levels_rows:
        padded = b"".join(r + b"\0" * (-len(r) % 4) for r in rows)
        out += struct.pack("<I", len(padded)) + padded + b"\0" * (-len(padded) % 4)
    return out


def ktx2_zlib(data: bytes) -> bytes:
    """The same KTX2 file with every level ZLIB-compressed (supercompressionScheme 3)."""
    head = bytearray(data[:80])
    n = max(1, struct.unpack_from("<I", data, 12 + 7 * 4)[0])
    struct.pack_into("<I", head, 12 + 8 * 4, 3)
    entries = [struct.unpack_from("<3Q", data, 80 + 24 * i) for i in range(n)]
    dfd_off, dfd_len, kvd_off, kvd_len = struct.unpack_from("<4I", data, 48)
    meta_end = max(dfd_off + dfd_len, kvd_off + kvd_len)
    meta = data[80 + 24 * n: meta_end]
    packed = [zlib.compress(data[o: o + length], 9) for o, length, _ in entries]
    pos = meta_end
    offsets = {}
    for i in reversed(range(n)):
        offsets[i] = pos
        pos += len(packed[i])
    index = b"".join(struct.pack("<3Q", offsets[i], len(packed[i]), entries[i][2]) for i in range(n))
    return bytes(head) + index + meta + b"".join(packed[i] for i in reversed(range(n)))


KTX2_ID = b"\xabKTX 20\xbb\r\n\x1a\n"


def _lcm4(n: int) -> int:
    import math

    return math.lcm(n, 4)


def ktx2(vk, width, height, levels, *, samples, block_bytes, depth=0, layers=0, faces=1, type_size=1, model=1,
         primaries=1, transfer=1, flags=0, block=(1, 1, 1, 1), kv=None, entries=None, version=2, bytes_planes=None):
    """A KTX2 file written from the KTX 2.0 specification (section 3), independent of gputex's
    writer. ``levels[i]``: the bytes of level i (every layer, face and slice); ``samples``:
    the basic DFD's samples as (bitOffset, bitLength in bits, channelType | qualifiers, lower,
    upper), written as the Khronos Data Format Specification lays them out. ``kv``: key ->
    value bytes (sorted here, as the spec requires); ``entries``: raw (key bytes, value bytes)
    pairs written in the order given (for breaking the key/value rules); default: KTXwriter."""
    dfd_block = struct.pack("<II", 0, (24 + 16 * len(samples)) << 16 | version)
    dfd_block += bytes([model, primaries, transfer, flags]) + bytes(d - 1 for d in block)
    dfd_block += bytes(bytes_planes or [block_bytes, 0, 0, 0, 0, 0, 0, 0])
    for off, bits, ct, lo, hi in samples:
        dfd_block += struct.pack("<HBB4BII", off, bits - 1, ct, 0, 0, 0, 0, lo & 0xFFFFFFFF, hi & 0xFFFFFFFF)
    dfd = struct.pack("<I", 4 + len(dfd_block)) + dfd_block
    if entries is None:
        items = sorted((kv if kv is not None else {"KTXwriter": b"texmaker\0"}).items(), key=lambda kv_: kv_[0].encode())
        entries = [(k.encode(), v) for k, v in items]
    kvd = b""
    for key, value in entries:
        pair = key + b"\0" + value
        kvd += struct.pack("<I", len(pair)) + pair + b"\0" * (-len(pair) % 4)
    n = len(levels)
    dfd_at = 80 + 24 * n
    kvd_at = dfd_at + len(dfd)
    pos = kvd_at + len(kvd)
    align = _lcm4(block_bytes)
    body, offsets = b"", {}
    for i in reversed(range(n)):  # smallest level first, each aligned, zero mipPadding
        pad = -pos % align
        body += b"\0" * pad
        pos += pad
        offsets[i] = pos
        body += levels[i]
        pos += len(levels[i])
    header = KTX2_ID + struct.pack("<9I", vk, type_size, width, height, depth, layers, faces, n, 0)
    header += struct.pack("<4I2Q", dfd_at, len(dfd), kvd_at if kvd else 0, len(kvd), 0, 0)
    index = b"".join(struct.pack("<3Q", offsets[i], len(levels[i]), len(levels[i])) for i in range(n))
    return header + index + dfd + kvd + body
