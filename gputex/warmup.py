"""A rehearsal of the first input's GPU steps on a tiny image, on the device thread, while the
real image still decodes.

The first mip chain of a process pays for its pipelines (naga's translation, the driver's
compile or cache look-up) and the integer chains' self-checks: ~0.2 s on lavapipe with Mesa's
shader cache warm (``benchmarks/startup.py``, "first mips+capture"). For a large image the
decode outlasts the device's creation, so that time can be spent before the pixels arrive:
:func:`rehearsal` uploads a one-pixel-high image as wide as the input's long side (channels,
depth and colour space as the decoder will give them: :func:`png_shape`; the same levels and
passes: :func:`shape_for`) through the same :func:`gputex.pipeline.upload_image`
(format, levels, mips as the options say) and drops it; the real chain then finds its
pipelines in the session's caches.

Only where the rehearsal takes the path the real image will: a PNG whose width and height are
powers of two (the thin image is then too, so it meets the same chain), no resize. Anything
else, and any error, and the rehearsal does nothing: it never fails a run.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .device import Session
    from .pipeline import Options

__all__ = ["rehearsal", "png_shape", "shape_for"]

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def png_shape(path: str) -> tuple[int, int, int, int, str] | None:
    """(width, height, channels, bit depth, colour space) of what :func:`gputex.decode` makes of
    the PNG ``path``, read from its chunks before the first IDAT (within its first 64 KiB), or
    None where that needs more than the IHDR: palette and low-bit PNGs, a ``tRNS`` (an alpha
    channel added), colour chunks (``sRGB``, ``gAMA``, ``iCCP``, ``cHRM``: another colour
    space), or anything not a plain PNG. The colour space is the decoder's default then:
    sRGB for 8-bit data, linear for 16-bit (``gputex.decode``'s table)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64 << 10)
    except (OSError, TypeError, ValueError):
        return None
    if len(head) < 33 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    w, h, depth, color = struct.unpack(">IIBB", head[16:26])
    if color not in _CHANNELS or depth not in (8, 16) or not w or not h:
        return None
    pos = 33
    while pos + 8 <= len(head):
        length, kind = struct.unpack_from(">I4s", head, pos)
        if kind == b"IDAT":
            return w, h, _CHANNELS[color], depth, "linear" if depth == 16 else "srgb"
        if kind in (b"tRNS", b"sRGB", b"gAMA", b"iCCP", b"cHRM", b"IEND"):
            return None
        pos += 12 + length
    return None


def shape_for(w: int, h: int) -> tuple[int, int]:
    """(height, width) of the rehearsal image for a ``w`` x ``h`` power-of-two input: its long
    side kept, the other one pixel, so the chain has the same levels and the same passes (the
    single-pass chain's pipelines differ by pass: whether it reads the sums of one before and
    stores sums for one after; a 64x64 image's one pass made none of an 8192² image's three)."""
    return (1, w) if w >= h else (h, 1)


def rehearsal(opts: Options, path: Any) -> Callable[[Session], None] | None:
    """What to run on the device thread right after the session is made, for a run whose first
    input is ``path``; None where a rehearsal would not meet the real image's pipelines."""
    if not opts.mips or opts.transform is not None and (opts.transform.resize or opts.transform.max_size
                                                       or opts.transform.pot):
        return None
    shape = png_shape(path) if isinstance(path, str) else None
    if shape is None:
        return None
    w, h, channels, depth, space = shape
    if w & (w - 1) or h & (h - 1):
        return None

    def run(session: Session) -> None:
        import numpy as np

        from .image import from_array
        from .pipeline import Result, upload_image

        try:
            pixels = np.zeros(shape_for(w, h) + (channels,), np.uint8 if depth == 8 else np.uint16)
            tex = upload_image(session, from_array(pixels, space, source="<rehearsal>"), opts, Result("<rehearsal>"))
            tex.destroy()
        except Exception:  # noqa: BLE001 - the real image meets any problem itself
            pass

    return run
