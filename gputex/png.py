"""PNG container helpers shared by decode and encode: chunk walking with CRC checks,
colour chunks, and inserting chunks into an encoded stream. Pure Python, no GPU."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

SIGNATURE = b"\x89PNG\r\n\x1a\n"

__all__ = ["SIGNATURE", "PngHeader", "read_header", "insert_chunks", "chunk"]


@dataclass
class PngHeader:
    width: int
    height: int
    bit_depth: int
    color_type: int  # 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA
    chunks: dict[bytes, bytes] = field(default_factory=dict)  # first of each ancillary chunk before IDAT

    @property
    def channels(self) -> int:
        return {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(self.color_type, 0)

    @property
    def color_space(self) -> str | None:
        """"srgb" or "linear" from sRGB / gAMA chunks, or None when the file says nothing."""
        if b"sRGB" in self.chunks or b"iCCP" in self.chunks:
            return "srgb"
        gama = self.chunks.get(b"gAMA")
        if gama is not None and len(gama) == 4:
            value = struct.unpack(">I", gama)[0]
            if abs(value - 100000) <= 1000:  # gamma 1.0: linear data
                return "linear"
            return "srgb"
        return None

    def orientation(self) -> int:
        """EXIF orientation (1-8) from an eXIf chunk; 1 when there is none."""
        exif = self.chunks.get(b"eXIf")
        if not exif:
            return 1
        try:
            from PIL import Image

            e = Image.Exif()
            e.load(exif)
            value = int(e.get(0x0112, 1))
        except Exception:
            return 1
        return value if 1 <= value <= 8 else 1

    def transparent_key(self) -> tuple[int, ...] | None:
        """tRNS colour key of a grey or RGB image (values at the file's bit depth)."""
        trns = self.chunks.get(b"tRNS")
        if trns is None or self.color_type not in (0, 2):
            return None
        n = 1 if self.color_type == 0 else 3
        if len(trns) < 2 * n:
            return None
        return struct.unpack(f">{n}H", trns[: 2 * n])


def read_header(data: bytes, *, verify_crc: bool = True) -> PngHeader:
    """Walk every chunk of a PNG to IEND, checking CRCs; collect IHDR and the chunks before IDAT.

    Raises ValueError with a short reason on a bad signature, a truncated file or a
    CRC mismatch in any chunk (Pillow checks none of them, so corrupt data would
    otherwise load silently).
    """
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG signature")
    pos = len(SIGNATURE)
    header: PngHeader | None = None
    seen_idat = False
    while True:
        if pos + 8 > len(data):
            raise ValueError("truncated PNG (no IEND chunk)")
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        if not ctype.isalpha():  # chunk types are four ASCII letters
            raise ValueError(f"corrupt PNG (invalid chunk type 0x{ctype.hex()} at byte {pos + 4})")
        end = pos + 12 + length
        if end > len(data):
            raise ValueError(f"truncated PNG ({ctype.decode('latin-1')} chunk cut off)")
        body = data[pos + 8 : pos + 8 + length]
        if verify_crc:
            (crc,) = struct.unpack(">I", data[end - 4 : end])
            if zlib.crc32(ctype + body) != crc:
                raise ValueError(f"CRC mismatch in {ctype.decode('latin-1')} chunk")
        if header is None:
            if ctype != b"IHDR" or length != 13:
                raise ValueError("first chunk is not IHDR")
            w, h, depth, ctype_, *_ = struct.unpack(">IIBBBBB", body)
            header = PngHeader(w, h, depth, ctype_)
        elif ctype == b"IEND":
            return header
        elif ctype == b"IDAT":
            seen_idat = True
        elif not seen_idat or ctype == b"eXIf":  # eXIf may also follow the image data
            header.chunks.setdefault(ctype, bytes(body))
        pos = end


def chunk(ctype: bytes, body: bytes) -> bytes:
    """One encoded PNG chunk."""
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body))


def insert_chunks(png: bytes, chunks: list[bytes]) -> list:
    """Encoded chunks right after IHDR (where colour chunks must stand), as parts to write in
    turn: the encoded image is not copied."""
    ihdr_end = len(SIGNATURE) + 8 + 13 + 4
    return [png[:ihdr_end], *chunks, memoryview(png)[ihdr_end:]]
