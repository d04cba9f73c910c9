"""The integer box chain on the host, for CPU adapters (``gputex/_mipcpu.c``): the same bytes as
``mip_int.wgsl`` / ``mip_spd.wgsl`` / ``mip_odd.wgsl`` (the contract is :mod:`.intbox`).

On a CPU adapter (lavapipe/llvmpipe, SwiftShader) the "GPU" is this CPU: the shader's 32-bit
integer code emulating wide arithmetic costs ~255 ms of CPU for a 2048^2 RGBA8 sRGB chain on
the 2-core lavapipe machine, where native 64/128-bit integers do the same arithmetic several
times faster (``benchmarks/mips_cpu.py --engines``: 49 against 255 ms at 2048^2, 107 against 313
at 2047^2). So there the levels are
computed here from level 0's bytes (the image's rows where the upload stored them as they are,
``generate_mips(base=...)``; else read back from the texture: a copy, no arithmetic) and written
into the texture's levels: the texture holds exactly what the shader would have written.

The engine (:func:`engine`): ``GPUTEX_MIPS_ENGINE`` = ``auto`` (default: ``cpu`` on a CPU
adapter where :func:`cpu_ok`, else ``shader``), ``shader`` or ``cpu`` (the host engine wherever it
serves the chain, on any adapter: for tests and benchmarks). The C extension is optional: where
it did not build, the shader runs.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING, Any

from ..devflags import flag
from ..errors import FormatError
from .intbox import lin_table, threshold_table

if TYPE_CHECKING:
    import numpy as np

    from ..texture import Texture

__all__ = ["ENGINES", "MAX_TEXELS", "SUMS64_TEXELS", "warm", "engine", "engine_flag", "available", "serves", "cpu_ok",
           "threads", "host_chain", "sources", "cpu_chain", "arena_bytes", "release_arena", "simd", "KERNELS"]

try:
    from .. import _mipcpu
except ImportError:  # not built (no C compiler at install): the shader makes every chain
    _mipcpu = None
try:
    from .. import _mipcpu128
except ImportError:  # (as _mipcpu: then the engine takes at most SUMS64_TEXELS)
    _mipcpu128 = None

ENGINES = ("auto", "shader", "cpu")
#: Base texels the engine's 64-bit sums serve (``_mipcpu``: every sum then fits 64 bits): 4096^2.
SUMS64_TEXELS = 1 << 24
#: Base texels the C engine takes: up to :data:`SUMS64_TEXELS` with 64-bit sums, above that (to
#: 2^28: 16384^2) the same source built with 128-bit sums (``_mipcpu128``: the RGBA8 kernels in
#: their portable form, no AVX-512), where it was built.
MAX_TEXELS = 1 << 28


def available() -> bool:
    """Whether the C extension ``gputex._mipcpu`` was built."""
    return _mipcpu is not None


def engine_flag() -> str:
    """``GPUTEX_MIPS_ENGINE`` (default ``auto``), checked."""
    value = (flag("GPUTEX_MIPS_ENGINE") or "auto").lower()
    if value not in ENGINES:
        raise FormatError(f"GPUTEX_MIPS_ENGINE must be auto, shader or cpu, got {value!r}")
    return value


def serves(channels: int, bits: int, srgb: bool, width: int, height: int) -> bool:
    """Whether the C engine serves a chain of this kind: 8-bit sRGB or linear, 16-bit linear,
    1, 2 or 4 channels, a base :func:`gputex.warmup.host_size` takes (any size up to
    :data:`SUMS64_TEXELS` texels; above, to :data:`MAX_TEXELS`, sizes whose levels tile, and
    only where ``_mipcpu128`` was built)."""
    from ..warmup import host_size

    if width * height > SUMS64_TEXELS and _mipcpu128 is None:
        return False
    return channels in (1, 2, 4) and bits in (8, 16) and not (srgb and bits != 8) and host_size(width, height)


def cpu_ok(tex: Texture, layer: int = 0) -> bool:
    """Whether the C engine can make ``tex``'s integer chain (the caller has checked ``int_ok``)."""
    return (tex.depth == 1 and not tex.format.compressed and available()
            and serves(tex.format.channels, tex.format.bits, tex.color_space == "srgb", tex.width, tex.height))


def engine(tex: Texture, layer: int = 0) -> str:
    """``cpu`` or ``shader``: which engine makes ``tex``'s integer chain (see the module docstring)."""
    choice = engine_flag()
    if choice == "shader" or not cpu_ok(tex, layer):
        return "shader"
    if choice == "cpu":
        return "cpu"
    return "cpu" if getattr(tex.session.info, "adapter_type", "") == "CPU" else "shader"


def warm() -> None:
    """Build what a process's first 8-bit sRGB chain would: the code tables (``intbox``'s integer
    roots in Python, 5-10 ms a process), once, in the batch's worker fork server
    (:mod:`gputex.worker_warm`), so every worker it forks has them for its first chain."""
    if _mipcpu is not None:
        _tables(8, True)


@cache
def _tables(bits: int, srgb: bool) -> tuple[bytes, bytes]:
    import numpy as np

    if not srgb:
        return b"", b""
    return (np.array(lin_table(bits, True), np.uint64).tobytes(),
            np.array(threshold_table(bits, True), np.uint64).tobytes())


#: ``host_chain(kernels=)``: the engine's loops for every kind (``generic``); also the RGBA8 sRGB
#: kernels of 2x2 footprints in portable C (``portable``); also their AVX-512 forms where the CPU
#: has AVX-512 F/DQ/BW/VL (``simd``, the default; elsewhere the portable ones), the odd sizes' L
#: looked up by byte permutes where it also has VBMI; ``avx512``: ``simd`` without VBMI (gathers:
#: what a CPU without it runs). The same bytes.
KERNELS = {"generic": 0, "portable": 1, "simd": 2, "avx512": 3}


def simd() -> bool:
    """Whether the C engine's AVX-512 kernels run on this CPU (checked at run time)."""
    return _mipcpu is not None and hasattr(_mipcpu, "simd") and _mipcpu.simd() >= 2


def threads() -> int:
    """Threads the C engine splits a level's rows over: the cores this process may use, at most 16,
    held to ``--threads`` (:func:`gputex.caps.capped`) as every other pool is."""
    from ..caps import capped

    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    return max(1, capped(min(16, n)))


def host_chain(base: np.ndarray, channels: int, bits: int, srgb: bool, weighted: bool, levels: int,
               nthreads: int | None = None, arena: bool = True, kernels: str = "simd") -> list[np.ndarray]:
    """Levels 1..``levels - 1`` of the integer chain of ``base`` (``(height, width, channels)``
    uint8 or uint16 codes, or the texture's tight rows ``(height, width * bytes per texel)``
    uint8), each ``(h, w, channels)`` in ``base``'s dtype (``uint16`` for 16 bits). ``arena``:
    the engine's sums in the process's arena, kept for the next chain (:func:`arena_bytes`;
    False: mapped for this chain alone, as before the arena; the same bytes). ``kernels``: which
    of the engine's loops may run (:data:`KERNELS`; the same bytes). Bases of more than
    :data:`SUMS64_TEXELS` texels go to ``_mipcpu128`` (128-bit sums; no AVX-512 kernels there)."""
    import numpy as np

    assert _mipcpu is not None, "gputex._mipcpu was not built"
    dtype = np.uint8 if bits == 8 else np.dtype("<u2")
    h = base.shape[0]
    raw = np.ascontiguousarray(base)
    w = raw.size * raw.itemsize // (h * channels * bits // 8)
    module = _mipcpu
    if w * h > SUMS64_TEXELS:
        assert _mipcpu128 is not None, "gputex._mipcpu128 was not built"
        module = _mipcpu128
    sizes = [(max(1, w >> lv), max(1, h >> lv)) for lv in range(1, levels)]
    out = np.empty(sum(a * b for a, b in sizes) * channels, dtype)
    lin, q = _tables(bits, srgb)
    # (``arena`` and ``kernels`` passed only when not the default: builds from before them, which
    # benchmarks load with --module, take the rest)
    extra: dict[str, int] = {} if arena else {"arena": False}
    if kernels != "simd":
        extra["fast"] = KERNELS[kernels]
    module.chain(raw.view(np.uint8).reshape(-1), out.view(np.uint8), w, h, levels, channels, bits, srgb,
                 weighted, lin, q, nthreads or threads(), **extra)
    res, off = [], 0
    for a, b in sizes:
        res.append(out[off:off + a * b * channels].reshape(b, a, channels))
        off += a * b * channels
    return res


def arena_bytes() -> int:
    """The bytes the C engine's arenas keep mapped in this process between chains (0: none).
    Each chain's sums (stored levels, cell grids) are taken from it, and it grows to what the
    largest chain asked for, at most 64 MiB (RGBA: 2048^2 2 MiB, 1999x1537 12 MiB of cell grids):
    a decode worker's chains then find their pages mapped, not zeroed by the kernel again
    (``_mipcpu.c``). ``_mipcpu128`` (bases over 2^24 texels) keeps an arena of its own: counted."""
    total = 0
    for m in _modules():
        total += int(m.arena_bytes())
    return total


def release_arena() -> int:
    """Unmap the C engine's arenas (where no chain is using them); returns the bytes given back."""
    total = 0
    for m in _modules():
        total += int(m.release())
    return total


def _modules() -> list[Any]:
    """The engine's built modules: ``_mipcpu`` and ``_mipcpu128``."""
    return [m for m in (_mipcpu, _mipcpu128) if m is not None]


def sources(width: int, height: int, levels: int) -> list[int]:
    """Where the C engine takes each level 1.. from (as ``_mipcpu.c``'s plan): the deepest earlier
    level from 1 on whose sizes are multiples of its own (its texels tile the footprints),
    else 0 (levels 1-2: the base; later ones: a grid of cell sums). The bytes do not depend on it."""
    sizes = [(max(1, width >> lv), max(1, height >> lv)) for lv in range(levels)]
    out = []
    for lv in range(1, levels):
        w, h = sizes[lv]
        out.append(next((k for k in range(lv - 1, 0, -1) if sizes[k][0] % w == 0 and sizes[k][1] % h == 0), 0))
    return out


def cpu_chain(tex: Texture, alpha: str, layer: int = 0, base: np.ndarray | None = None) -> list[int]:
    """Fill levels 1.. of ``tex`` (one layer) with the C engine: level 0 from ``base`` (its
    bytes as the texture holds them, where the caller has them) or read back, the levels
    computed here and written. Returns each level's source (:func:`sources`)."""
    from ..capture import capture_bytes
    from ..trace import span

    fmt = tex.format
    raw = base
    if raw is None or raw.dtype.kind != "u" or raw.itemsize != 1 or raw.shape != (tex.height, tex.width * fmt.block_bytes):
        with span("mips:read-base"):
            raw = capture_bytes(tex, 0, layer)
    with span("mips:host-chain"):
        levels = host_chain(raw, fmt.channels, fmt.bits, tex.color_space == "srgb",
                            alpha == "weighted", tex.levels)
    queue = tex.session.device.queue
    with span("mips:write-levels"):
        for lv, data in enumerate(levels, 1):
            h, w = data.shape[:2]
            tex.session.check(f"{tex.source}: write_texture level {lv}", queue.write_texture,
                              {"texture": tex.texture, "mip_level": lv, "origin": (0, 0, layer)}, data,
                              {"offset": 0, "bytes_per_row": w * fmt.block_bytes, "rows_per_image": h}, (w, h, 1))
    return sources(tex.width, tex.height, tex.levels)
