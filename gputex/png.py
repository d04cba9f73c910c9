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
    texts: list[tuple[bytes, bytes]] = field(default_factory=list)  # every tEXt / zTXt / iTXt (type, body)

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
        """EXIF orientation (1-8), where Pillow's ``ImageOps.exif_transpose`` finds it: an eXIf
        chunk, else ImageMagick's ``Raw profile type exif`` text chunk, else an XMP packet's
        ``tiff:Orientation``; 1 when there is none (or it is not a number from 1 to 8)."""
        from .orient import orientation_from_exif, orientation_from_xmp, raw_profile_exif

        texts = dict(self.text_chunks(("Raw profile type exif", "XML:com.adobe.xmp")))
        exif = self.chunks.get(b"eXIf")
        if not exif and "Raw profile type exif" in texts:
            exif = raw_profile_exif(texts["Raw profile type exif"])
        value = orientation_from_exif(exif) if exif else None
        if value is None and "XML:com.adobe.xmp" in texts:
            value = orientation_from_xmp(texts["XML:com.adobe.xmp"])
        return value or 1

    def text_chunks(self, keywords: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
        """(keyword, text) of every tEXt, zTXt and iTXt chunk (undecodable ones skipped), or of
        those with one of ``keywords`` (the others are not inflated)."""
        out = []
        wanted = None if keywords is None else {k.encode("latin-1") for k in keywords}
        for ctype, body in self.texts:
            if wanted is not None and body.partition(b"\0")[0] not in wanted:
                continue
            try:
                out.append(_text(ctype, body))
            except (ValueError, zlib.error):
                continue
        return out

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
    view = memoryview(data)  # chunk bodies are looked at in place, not copied
    crc32 = _crc32()
    while True:
        if pos + 8 > len(data):
            raise ValueError("truncated PNG (no IEND chunk)")
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        if not ctype.isalpha():  # chunk types are four ASCII letters
            raise ValueError(f"corrupt PNG (invalid chunk type 0x{ctype.hex()} at byte {pos + 4})")
        end = pos + 12 + length
        if end > len(data):
            raise ValueError(f"truncated PNG ({ctype.decode('latin-1')} chunk cut off)")
        body = view[pos + 8 : pos + 8 + length]
        if verify_crc:
            (crc,) = struct.unpack(">I", data[end - 4 : end])
            if crc32(view[pos + 4 : pos + 8 + length]) != crc:
                raise ValueError(f"CRC mismatch in {ctype.decode('latin-1')} chunk")
        if header is None:
            if ctype != b"IHDR" or length != 13:
                raise ValueError("first chunk is not IHDR")
            w, h, depth, ctype_, *_ = struct.unpack(">IIBBBBB", body)
            header = PngHeader(w, h, depth, ctype_)
        elif ctype == b"IEND":
            return header
        elif ctype == b"IDAT":
            if not seen_idat and header.color_type == 3 and b"PLTE" not in header.chunks:
                raise ValueError("palette image (colour type 3) without a PLTE chunk")  # as libpng
            seen_idat = True
        elif ctype in (b"tEXt", b"zTXt", b"iTXt"):  # anywhere: Pillow reads those after IDAT too
            header.texts.append((ctype, bytes(body)))
        elif not seen_idat or ctype == b"eXIf":  # eXIf may also follow the image data
            header.chunks.setdefault(ctype, bytes(body))
        pos = end


#: Inflated text chunks larger than this are ignored (Pillow's MAX_TEXT_CHUNK is 1 MiB too).
MAX_TEXT_BYTES = 1 << 20


def _text(ctype: bytes, body: bytes) -> tuple[str, str]:
    """(keyword, text) of one tEXt / zTXt / iTXt body; ValueError when malformed."""
    keyword, sep, rest = body.partition(b"\0")
    if not sep or not keyword:
        raise ValueError("no keyword")
    if ctype == b"tEXt":
        return keyword.decode("latin-1"), rest.decode("latin-1")
    if ctype == b"zTXt":
        if not rest or rest[0] != 0:
            raise ValueError("unknown compression")
        return keyword.decode("latin-1"), _inflate(rest[1:]).decode("latin-1")
    if len(rest) < 2:
        raise ValueError("short iTXt")
    compressed, method, rest = rest[0], rest[1], rest[2:]
    _lang, _, rest = rest.partition(b"\0")
    _translated, _, text = rest.partition(b"\0")
    if compressed:
        if method != 0:
            raise ValueError("unknown compression")
        text = _inflate(text)
    return keyword.decode("latin-1"), text.decode("utf-8", "replace")


def _inflate(data: bytes) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(data, MAX_TEXT_BYTES + 1)
    if len(out) > MAX_TEXT_BYTES:
        raise ValueError("text chunk too large")
    return out


def _crc32():
    """libdeflate's CRC-32 (5x zlib's here: 4 against 20 ms for a 42 MB PNG), else zlib's."""
    try:
        from imagecodecs import deflate_crc32

        return deflate_crc32
    except ImportError:
        return zlib.crc32


def chunk(ctype: bytes, body: bytes) -> bytes:
    """One encoded PNG chunk."""
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body))


def insert_chunks(png: bytes, chunks: list[bytes]) -> list:
    """Encoded chunks right after IHDR (where colour chunks must stand), as parts to write in
    turn: the encoded image is not copied."""
    ihdr_end = len(SIGNATURE) + 8 + 13 + 4
    return [png[:ihdr_end], *chunks, memoryview(png)[ihdr_end:]]


# -- streaming writer for very large images --------------------------------------------------

_ADLER_BASE = 65521


def adler32_combine(adler1: int, adler2: int, len2: int) -> int:
    """Adler-32 of A + B from adler32(A), adler32(B) and len(B) (zlib's adler32_combine)."""
    rem = len2 % _ADLER_BASE
    sum1 = adler1 & 0xFFFF
    sum2 = (rem * sum1) % _ADLER_BASE
    sum1 += (adler2 & 0xFFFF) + _ADLER_BASE - 1
    sum2 += ((adler1 >> 16) & 0xFFFF) + ((adler2 >> 16) & 0xFFFF) + _ADLER_BASE - rem
    sum1 %= _ADLER_BASE
    sum2 %= _ADLER_BASE
    return sum1 | (sum2 << 16)


def stream_png(a, extra_chunks: list[bytes], level: int, threads: int, band_bytes: int = 8 << 20):
    """A function returning an iterator over the parts of a PNG of ``a`` (H, W, C), uint8/uint16.

    Memory stays at a few bands whatever the image size: rows are "up"-filtered band by
    band and deflated in parallel (like pigz: each band a run of raw deflate blocks ending
    on a sync flush, the last one final; one zlib header, the Adler-32 combined), and each
    band's output is written as an IDAT chunk as soon as it is its turn. Calling the
    function again replays the encoding (for a writer that must start over).
    """
    import numpy as np

    h, w, c = a.shape
    depth = a.dtype.itemsize * 8
    row = w * c * a.dtype.itemsize
    per = max(1, band_bytes // max(row, 1))
    starts = list(range(0, h, per))
    ctype = {1: 0, 2: 4, 3: 2, 4: 6}[c]

    def band(i: int):
        y0 = starts[i]
        y1 = min(h, y0 + per)
        rows = a[max(0, y0 - 1): y1]
        if depth == 16:
            rows = rows.astype(">u2")
        raw = np.ascontiguousarray(rows).view(np.uint8).reshape(len(rows), row)
        out = np.empty((y1 - y0, row + 1), np.uint8)
        out[:, 0] = 2  # "up"
        if y0 == 0:
            out[0, 1:] = raw[0]
            np.subtract(raw[1:], raw[:-1], out=out[1:, 1:])
        else:
            np.subtract(raw[1:], raw[:-1], out=out[:, 1:])
        data = out.reshape(-1)
        comp = zlib.compressobj(level, zlib.DEFLATED, -15, 9)
        body = comp.compress(data) + comp.flush(zlib.Z_FINISH if i == len(starts) - 1 else zlib.Z_SYNC_FLUSH)
        return body, zlib.adler32(data), data.nbytes

    def parts():
        from concurrent.futures import ThreadPoolExecutor

        yield SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))
        yield from extra_chunks
        adler = 1
        first = True
        with ThreadPoolExecutor(max(1, threads), thread_name_prefix="gputex-deflate") as pool:
            window = 2 * max(1, threads)
            pending = [pool.submit(band, i) for i in range(min(window, len(starts)))]
            nxt = len(pending)
            while pending:
                body, ad, n = pending.pop(0).result()
                if nxt < len(starts):
                    pending.append(pool.submit(band, nxt))
                    nxt += 1
                adler = adler32_combine(adler, ad, n)
                if first:
                    body = b"\x78\x01" + body  # zlib header: deflate, 32K window, no dictionary
                    first = False
                if not pending:
                    body = body + struct.pack(">I", adler)
                yield chunk(b"IDAT", body)
        yield chunk(b"IEND", b"")

    return parts
