"""Test-only builders of decompression bombs, written from the format documents (ICO
directory, PNG, TIFF 6.0 IFDs, KTX 2.0 with a hand-made Zstandard frame of RLE blocks, RFC
1950 zlib). Each is small on disk and huge once decoded; also the seeds of the fuzzers."""

from __future__ import annotations

import struct
import zlib


def _chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body))


def png_zeros(width: int, height: int, bit_depth: int = 8, color_type: int = 0) -> bytes:
    """A PNG of all-zero pixels, streamed through zlib (never the whole image in memory)."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    row = b"\0" * (1 + -(-width * channels * bit_depth // 8))
    z = zlib.compressobj(9)
    parts = []
    block = row * 64
    for y in range(0, height, 64):
        parts.append(z.compress(block if y + 64 <= height else row * (height - y)))
    parts.append(z.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")


def ico_with(embedded: bytes, dir_size: int = 16) -> bytes:
    """An ICO whose one directory entry says dir_size^2 but holds ``embedded`` (PNG or DIB)."""
    head = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", dir_size % 256, dir_size % 256, 0, 0, 1, 32, len(embedded), 6 + 16)
    return head + entry + embedded


def ico_png_bomb() -> bytes:
    """16x16 in the directory, a 50000^2 1-bit PNG inside (~300 KB; 2.5 GB decoded)."""
    return ico_with(png_zeros(50000, 50000, bit_depth=1))


def ico_rgba_bomb() -> bytes:
    """16x16 in the directory, a 12000^2 RGBA PNG inside (0.58 GB decoded; ~1030:1)."""
    return ico_with(png_zeros(12000, 12000, color_type=6))


def ico_bmp_bomb() -> bytes:
    """16x16 in the directory, a DIB header claiming 40000^2 at 32 bits inside."""
    dib = struct.pack("<IiiHHIIiiII", 40, 40000, 80000, 1, 32, 0, 0, 0, 0, 0, 0)
    return ico_with(dib + b"\0" * 64)


def tiff_tile_bomb(side: int = 46336) -> bytes:
    """A 16x16 8-bit grey TIFF whose one deflate tile is declared side x side (~1 KB)."""
    tile = zlib.compress(b"\0" * 4096, 9)
    entries = [(256, 3, 1, 16), (257, 3, 1, 16), (258, 3, 1, 8), (259, 3, 1, 8), (262, 3, 1, 1),
               (277, 3, 1, 1), (322, 4, 1, side), (323, 4, 1, side), (324, 4, 1, 0), (325, 4, 1, len(tile))]
    ifd_off = 8
    data_off = ifd_off + 2 + 12 * len(entries) + 4
    out = bytearray(b"II*\0" + struct.pack("<I", ifd_off) + struct.pack("<H", len(entries)))
    for tag, typ, count, value in entries:
        if tag == 324:
            value = data_off
        if typ == 3:
            out += struct.pack("<HHIHH", tag, typ, count, value, 0)
        else:
            out += struct.pack("<HHII", tag, typ, count, value)
    out += struct.pack("<I", 0)
    return bytes(out + tile)


def zstd_rle(nbytes: int) -> bytes:
    """A Zstandard frame (RFC 8878) of RLE blocks of zeros inflating to ``nbytes``: 4 bytes per
    128 KiB, so 1 GiB costs 32 KB."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out += bytes([0x00, 0x38])  # no content size, no checksum; window 2^17
    block = 128 << 10
    left = nbytes
    while left:
        n = min(block, left)
        left -= n
        out += (int(left == 0) | (1 << 1) | (n << 3)).to_bytes(3, "little") + b"\0"
    return bytes(out)


def zlib_zeros(nbytes: int) -> bytes:
    z = zlib.compressobj(9)
    chunk = b"\0" * (1 << 20)
    parts = [z.compress(chunk[: min(len(chunk), nbytes - i)]) for i in range(0, nbytes, len(chunk))]
    return b"".join(parts) + z.flush()


def ktx2_supercompressed(width: int, height: int, payload: bytes, scheme: int, vk: int = 37,
                         format_name: str = "rgba8unorm", bytes_per_texel: int = 4) -> bytes:
    """A one-level 2D KTX2 whose level is ``payload`` (scheme 2 Zstandard, 3 ZLIB)."""
    from gputex.formats import get_format
    from gputex.ktx2 import dfd_for

    dfd = dfd_for(get_format(format_name), False)
    dfd_off = 80 + 24
    level_off = dfd_off + len(dfd)
    ulen = width * height * bytes_per_texel
    header = struct.pack("<12s9I4I2Q", b"\xabKTX 20\xbb\r\n\x1a\n", vk, 1, width, height, 0, 0, 1, 1, scheme,
                         dfd_off, len(dfd), 0, 0, 0, 0)
    return header + struct.pack("<3Q", level_off, len(payload), ulen) + dfd + payload


def ktx2_zstd_bomb(side: int = 16384) -> bytes:
    """rgba8unorm side^2 in a Zstd level of RLE blocks: 16384 -> 1 GiB from ~33 KB,
    32768 -> 4 GiB from ~131 KB."""
    return ktx2_supercompressed(side, side, zstd_rle(side * side * 4), 2)


def ktx2_zlib_bomb() -> bytes:
    """r8unorm 16384^2 (256 MiB) in one ZLIB level, ~1030:1."""
    return ktx2_supercompressed(16384, 16384, zlib_zeros(16384 * 16384), 3, vk=9, format_name="r8unorm",
                                bytes_per_texel=1)


def tiff_tile_behind_a_broken_tag() -> bytes:
    """Found by the atheris run: a Photometric tag with a count past the end stops Pillow's
    parser before TileWidth/TileLength, which libtiff still reads (a 46336^2 tile, 2.1 GB)."""
    import base64

    return base64.b64decode(
        "SUkqAAgAAAAKAAABAwABAAAAEAAAAAEBAwABAAAAEAAAAAIBAwABAAAACAAAAAMBAwABAAAACAAAAAYBAwARAAAAAQABFQAAAwAB"
        "AAAAAQAAAEIBBAABAAAAALUAAEMBBAABAAAAALUAAEQBBAABAAAAhgAAAEUBBAABAAAAGgAAAAAAAAB42u3BAQ0AAADCoPdPbQ8H"
        "FAAAAPBuEAAAAQ==")


ALL = {"ico_png_bomb.ico": ico_png_bomb, "ico_rgba_bomb.ico": ico_rgba_bomb, "ico_bmp_bomb.ico": ico_bmp_bomb,
       "tiff_tile_bomb.tiff": tiff_tile_bomb, "tiff_tile_behind_a_broken_tag.tiff": tiff_tile_behind_a_broken_tag,
       "ktx2_zstd_1g.ktx2": ktx2_zstd_bomb,
       "ktx2_zstd_4g.ktx2": lambda: ktx2_zstd_bomb(32768), "ktx2_zlib_256m.ktx2": ktx2_zlib_bomb}


def small_texture_files() -> list[bytes]:
    """Small valid KTX2 (plain, Zstandard, ZLIB) and DDS files: fuzz seeds for the containers."""
    import numpy as np

    from gputex.dds import write_dds
    from gputex.formats import get_format
    from gputex.ktx2 import write_ktx2
    from gputex.texfile import TextureFile

    from texmaker import ktx2_zlib

    rng = np.random.default_rng(15)
    levels = [rng.integers(0, 256, (max(1, 5 >> i) * max(1, 3 >> i) * 4,), np.uint8).tobytes() for i in range(3)]
    tf = TextureFile(get_format("rgba8unorm"), 5, 3, levels=levels, color_space="linear")
    plain = b"".join(bytes(p) for p in write_ktx2(tf))
    return [plain, b"".join(bytes(p) for p in write_ktx2(tf, zstd=3)), ktx2_zlib(plain),
            b"".join(bytes(p) for p in write_dds(tf))]


def fuzz_seeds() -> list[bytes]:
    """The bomb shapes (ICO with embedded PNG/BMP, TIFF tile, KTX2 Zstd/ZLIB) and small texture files."""
    return [ico_png_bomb(), ico_rgba_bomb(), ico_bmp_bomb(), tiff_tile_bomb(), tiff_tile_behind_a_broken_tag(),
            ktx2_zstd_bomb(),
            ktx2_zstd_bomb(32768), ktx2_zlib_bomb(), *small_texture_files()]


def read_any(path: str, max_pixels: int):
    """What a batch does with one input: texture files by their magic, images through decode."""
    import gputex
    from gputex.texfile import is_texture_file, read_texture_file

    if is_texture_file(path):
        return read_texture_file(path, max_pixels=max_pixels)
    return gputex.decode(path, max_pixels=max_pixels)
