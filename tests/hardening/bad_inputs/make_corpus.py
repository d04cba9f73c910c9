"""Generate the bad-input corpus and its expectations (``cases.json``).

    python tests/hardening/bad_inputs/make_corpus.py

Each case: a file under ``files/``, the exact message gputex must print after
``gputex: <path>: ``, and the exit code. The expected messages follow from the documented
rules (the PNG chunk walker, the size and bomb budgets, the decode error table), computed
here from each file's own layout, not from running gputex.
"""

from __future__ import annotations

import io
import json
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # tests/: pngmaker
from pngmaker import chunk, make_png  # noqa: E402

FILES = os.path.join(HERE, "files")
SIG = b"\x89PNG\r\n\x1a\n"
TRUNC = "truncated or corrupt image data"


def chunks(data: bytes) -> list[tuple[int, bytes, int]]:
    """(start, type, length) of every chunk."""
    out, pos = [], 8
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        out.append((pos, ctype, length))
        pos += 12 + length
    return out


def main() -> None:
    os.makedirs(FILES, exist_ok=True)
    for name in os.listdir(FILES):
        os.unlink(os.path.join(FILES, name))
    cases: list[dict] = []

    def add(name: str, data: bytes, message: str, code: int = 1) -> None:
        with open(os.path.join(FILES, name), "wb") as f:
            f.write(data)
        cases.append({"file": name, "message": message, "exit": code})

    rng = np.random.default_rng(42)
    a = rng.integers(0, 256, (20, 30, 3), np.uint8)
    good = make_png(a, 2, 8)
    layout = chunks(good)

    add("empty.png", b"", "empty file")
    add("text.png", b"just some text, not an image\n", "not an image (unknown or unsupported file format)")
    add("bad_signature.png", b"\x88" + good[1:], "not an image (unknown or unsupported file format)")

    # truncations at many lengths: a chunk header cut -> no IEND; a body or CRC cut -> that chunk
    for cut in sorted({8, 9, 15, 16, 20, 24, 33, 34, 40, 41, 60, len(good) // 2, len(good) - 13,
                       len(good) - 12, len(good) - 5, len(good) - 1}):
        start, ctype, length = next((c for c in reversed(layout) if c[0] <= cut), layout[0])
        if cut < start + 8:
            msg = "truncated PNG (no IEND chunk)"
        else:
            msg = f"truncated PNG ({ctype.decode()} chunk cut off)"
        if cut == 8:
            msg = "truncated PNG (no IEND chunk)"
        add(f"truncated_{cut:04d}.png", good[:cut], msg)

    # flipped bytes in the body or CRC of each chunk: the CRC check names the chunk
    for start, ctype, length in layout:
        for offset, what in ((8, "body"), (8 + length, "crc")):
            if what == "body" and length == 0:
                continue
            data = bytearray(good)
            data[start + offset] ^= 0x5A
            add(f"flipped_{ctype.decode()}_{what}.png", bytes(data), f"CRC mismatch in {ctype.decode()} chunk")
    # a flipped chunk type byte that is no letter
    data = bytearray(good)
    idat = next(c for c in layout if c[1] == b"IDAT")[0]
    data[idat + 5] = 0x0A
    add("bad_chunk_type.png", bytes(data),
        f"corrupt PNG (invalid chunk type 0x{bytes(data[idat + 4:idat + 8]).hex()} at byte {idat + 4})")

    # lying headers (with valid CRCs)
    def with_ihdr(w: int, h: int, depth: int = 8, ctype: int = 2, body: bytes | None = None) -> bytes:
        ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))
        rest = good[8 + 25:]
        return SIG + ihdr + rest if body is None else SIG + ihdr + body

    add("zero_width.png", with_ihdr(0, 20), "image has zero width or height (0x20)")
    add("absurd_size.png", with_ihdr(100000, 100000),
        "100000x100000 is 10000000000 pixels, over the limit of 268435456 (raise it with --max-pixels)")
    add("header_bigger_than_data.png", with_ihdr(300, 200), TRUNC)
    raw = b"".join(b"\0" + a[i].tobytes() for i in range(20))
    broken = bytearray(zlib.compress(raw))
    broken[10] ^= 0xFF
    broken[20] ^= 0x55
    add("corrupt_zlib_stream.png", with_ihdr(30, 20, body=chunk(b"IDAT", bytes(broken)) + chunk(b"IEND", b"")),
        TRUNC)

    # decompression bombs
    z = zlib.compressobj(9)
    row = b"\0" + bytes(6000 * 4)
    body = b"".join(z.compress(row) for _ in range(6000)) + z.flush()
    bomb = (SIG + chunk(b"IHDR", struct.pack(">IIBBBBB", 6000, 6000, 8, 6, 0, 0, 0)) + chunk(b"IDAT", body)
            + chunk(b"IEND", b""))
    decoded = 6000 * 6000 * 4
    add("bomb_ratio.png", bomb,
        f"would decode to {decoded} bytes from a {len(bomb)}-byte file ({decoded / len(bomb):.0f}:1, over the "
        "limit of 1000:1 for a likely decompression bomb; raise it with --max-ratio)")
    ztxt = chunk(b"zTXt", b"Comment\0\0" + zlib.compress(bytes(20 << 20), 9))
    add("bomb_text_chunk.png", SIG + good[8:8 + 25] + ztxt + good[8 + 25:],
        "oversized text chunk (over Pillow's MAX_TEXT_CHUNK; a decompression bomb?)")
    add("bomb_pixels.png", with_ihdr(70000, 70000, ctype=0),
        "70000x70000 is 4900000000 pixels, over the limit of 268435456 (raise it with --max-pixels)")

    # other formats, truncated
    for fmt, ext in (("JPEG", "jpg"), ("GIF", "gif"), ("BMP", "bmp"), ("TIFF", "tiff")):
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, fmt)
        d = buf.getvalue()
        add(f"truncated.{ext}", d[: len(d) * 2 // 3], TRUNC)

    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
    print(f"{len(cases)} cases in {FILES}")


if __name__ == "__main__":
    main()
