"""What the run's rehearsal (:func:`gputex.run.rehearsal`) needs to know before the pixels
arrive: an input PNG's shape, channels, depth and colour space from its header alone
(:func:`png_shape`). (The smallest image that meets the same single-pass chain as a power-of-two
input: :func:`gputex.mips.spd.rehearsal_shape`.)

The first mip chain of a process pays for its pipelines (naga's translation, the driver's
compile or cache look-up) and the integer chains' self-checks: ~0.2 s on lavapipe with Mesa's
shader cache warm (``benchmarks/startup.py``, "first mips+capture"). For a large image the
decode outlasts the device's creation, so that time can be spent on the device thread, on a
zero image of the same kind, before the pixels arrive.
"""

from __future__ import annotations

import struct

__all__ = ["png_shape"]

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def _head(path: str, n: int) -> bytes | None:
    """The first ``n`` bytes of ``path`` where it is a regular file, else None."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return f.read(n)
    except (OSError, TypeError, ValueError):
        return None


def png_ihdr(path: str) -> tuple[int, int, int] | None:
    """(width, height, bit depth) of the PNG ``path`` from its IHDR alone (any colour type and
    chunks), or None where it is not a PNG (or not a regular file): enough to tell whether an
    input wants a device (:func:`gputex.run._demand`, :func:`gputex.early.host_likely`), where
    :func:`png_shape` gives up on tagged PNGs (review)."""
    head = _head(path, 33)
    if head is None or len(head) < 33 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    w, h, depth = struct.unpack(">IIB", head[16:25])
    return w, h, depth


#: :data:`gputex.mips.cpu.MAX_TEXELS` (not imported here: the command line's start stays light):
#: 2^28 texels, 16384^2.
HOST_MAX_TEXELS = 1 << 28
#: :data:`gputex.mips.cpu.SUMS64_TEXELS`: bases the engine's 64-bit sums serve, any size.
HOST_SUMS64_TEXELS = 1 << 24


def host_size(width: int, height: int) -> bool:
    """Whether the host C engine takes a base of this size: any size up to
    :data:`HOST_SUMS64_TEXELS` texels; above, up to :data:`HOST_MAX_TEXELS` (its 128-bit build),
    only where every level from 2 on is tiled by an earlier level from 1 on (the sizes of that
    level multiples of its own on both axes: powers of two, 12288 x 8192, ...). Such a chain keeps
    a band's rings of sums (~2 MB at 8192^2); another size needs grids of cell sums, 16-byte slots
    over the base: 1.6 GB at 8191 x 8193 (``benchmarks/host_chain_memory.py``), against the
    GPU's few hundred MB, so those go to the GPU (h13big, review)."""
    texels = width * height
    if texels <= HOST_SUMS64_TEXELS:
        return True
    if texels > HOST_MAX_TEXELS:
        return False
    sizes = []
    lv = 0
    while True:  # the whole chain's sizes (a shorter chain is a prefix of it)
        sizes.append((max(1, width >> lv), max(1, height >> lv)))
        if sizes[-1] == (1, 1):
            break
        lv += 1
    return all(any(sizes[k][0] % w == 0 and sizes[k][1] % h == 0 for k in range(1, lv))
               for lv, (w, h) in enumerate(sizes) if lv >= 2)


def png_wants_device(path: str) -> bool | None:
    """Whether the PNG ``path`` is one the host engine does not take before a device is there
    (16-bit data, a size :func:`host_size` refuses), from its IHDR; None where it is not a PNG
    (:func:`png_ihdr`)."""
    ihdr = png_ihdr(path)
    if ihdr is None:
        return None
    if ihdr[0] * ihdr[1] > HOST_SUMS64_TEXELS and not _built("gputex._mipcpu128"):
        return True  # (the 128-bit build is optional: without it the GPU takes these)
    return ihdr[2] == 16 or not host_size(ihdr[0], ihdr[1])


def _built(module: str) -> bool:
    """Whether an optional extension module of gputex was built (found, not imported)."""
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def png_shape(path: str) -> tuple[int, int, int, int, str] | None:
    """(width, height, channels, bit depth, colour space) of what :func:`gputex.decode` makes of
    the PNG ``path``, read from its chunks before the first IDAT (within its first 64 KiB), or
    None where that needs more than the IHDR: palette and low-bit PNGs, a ``tRNS`` (an alpha
    channel added), colour chunks (``sRGB``, ``gAMA``, ``iCCP``, ``cHRM``: another colour
    space), or anything not a plain PNG. The colour space is the decoder's default then:
    sRGB for 8-bit data, linear for 16-bit (``gputex.decode``'s table). Only a regular file is
    opened (a FIFO named ``*.png`` would block the caller: review)."""
    head = _head(path, 64 << 10)
    if head is None:
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
