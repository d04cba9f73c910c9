"""BC6H's fourteen modes as data: endpoint precisions and the header bit layouts.

Pure (no numpy, no wgpu): :func:`wgsl_tables` turns the tables into the ``const``/``var``
lines that ``bcenc.shader_source`` puts in front of ``bc6h_encode.wgsl``, whose one packing
loop then writes any mode's header from them (one copy of the code in the compiled shader:
fourteen straight-line packers cost lavapipe seconds of LLVM time each).

A mode's header is written below as runs of endpoint bits in the order they are stored (bit 0
of the block first), after the mode bits: ``rw0-9`` is bits 0..9 of endpoint w's red, ``rw15-10``
bits 15 down to 10. Endpoints (D3D's names): w, x of region 0, y, z of region 1; in the
transformed modes x, y, z are stored as deltas from w. ``d0-4`` is the partition number.
Source: the BC6H format description of the Khronos Data Format specification (section
"BC6H") and Direct3D's "BC6H format" page; the tests check every mode against
texture2ddecoder, an independent decoder, and lavapipe's texture unit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mode", "MODES", "layout_bits", "layout_words", "mode_words", "wgsl_tables"]


@dataclass(frozen=True)
class Mode:
    """One BC6H mode (numbered 1-14 as in D3D's documentation)."""

    number: int
    code: int            # the mode bits' value (2 bits for modes 1 and 2, else 5)
    code_bits: int
    base: int            # bits of endpoint w (every endpoint when not transformed)
    delta: tuple[int, int, int]  # bits of the other endpoints (R, G, B): deltas when transformed
    transformed: bool
    regions: int
    header: str          # the endpoint bits after the mode bits, in order


_TWO = "d0-4"
MODES = (
    Mode(1, 0x00, 2, 10, (5, 5, 5), True, 2,
         "gy4 by4 bz4 rw0-9 gw0-9 bw0-9 rx0-4 gz4 gy0-3 gx0-4 bz0 gz0-3 bx0-4 bz1 by0-3 ry0-4 bz2 rz0-4 bz3 " + _TWO),
    Mode(2, 0x01, 2, 7, (6, 6, 6), True, 2,
         "gy5 gz4 gz5 rw0-6 bz0 bz1 by4 gw0-6 by5 bz2 gy4 bw0-6 bz3 bz5 bz4 rx0-5 gy0-3 gx0-5 gz0-3 bx0-5 by0-3 "
         "ry0-5 rz0-5 " + _TWO),
    Mode(3, 0x02, 5, 11, (5, 4, 4), True, 2,
         "rw0-9 gw0-9 bw0-9 rx0-4 rw10 gy0-3 gx0-3 gw10 bz0 gz0-3 bx0-3 bw10 bz1 by0-3 ry0-4 bz2 rz0-4 bz3 " + _TWO),
    Mode(4, 0x06, 5, 11, (4, 5, 4), True, 2,
         "rw0-9 gw0-9 bw0-9 rx0-3 rw10 gz4 gy0-3 gx0-4 gw10 gz0-3 bx0-3 bw10 bz1 by0-3 ry0-3 bz0 bz2 rz0-3 gy4 bz3 "
         + _TWO),
    Mode(5, 0x0A, 5, 11, (4, 4, 5), True, 2,
         "rw0-9 gw0-9 bw0-9 rx0-3 rw10 by4 gy0-3 gx0-3 gw10 bz0 gz0-3 bx0-4 bw10 by0-3 ry0-3 bz1 bz2 rz0-3 bz4 bz3 "
         + _TWO),
    Mode(6, 0x0E, 5, 9, (5, 5, 5), True, 2,
         "rw0-8 by4 gw0-8 gy4 bw0-8 bz4 rx0-4 gz4 gy0-3 gx0-4 bz0 gz0-3 bx0-4 bz1 by0-3 ry0-4 bz2 rz0-4 bz3 " + _TWO),
    Mode(7, 0x12, 5, 8, (6, 5, 5), True, 2,
         "rw0-7 gz4 by4 gw0-7 bz2 gy4 bw0-7 bz3 bz4 rx0-5 gy0-3 gx0-4 bz0 gz0-3 bx0-4 bz1 by0-3 ry0-5 rz0-5 " + _TWO),
    Mode(8, 0x16, 5, 8, (5, 6, 5), True, 2,
         "rw0-7 bz0 by4 gw0-7 gy5 gy4 bw0-7 gz5 bz4 rx0-4 gz4 gy0-3 gx0-5 gz0-3 bx0-4 bz1 by0-3 ry0-4 bz2 rz0-4 bz3 "
         + _TWO),
    Mode(9, 0x1A, 5, 8, (5, 5, 6), True, 2,
         "rw0-7 bz1 by4 gw0-7 by5 gy4 bw0-7 bz5 bz4 rx0-4 gz4 gy0-3 gx0-4 bz0 gz0-3 bx0-5 by0-3 ry0-4 bz2 rz0-4 bz3 "
         + _TWO),
    Mode(10, 0x1E, 5, 6, (6, 6, 6), False, 2,
         "rw0-5 gz4 bz0 bz1 by4 gw0-5 gy5 by5 bz2 gy4 bw0-5 gz5 bz3 bz5 bz4 rx0-5 gy0-3 gx0-5 gz0-3 bx0-5 by0-3 "
         "ry0-5 rz0-5 " + _TWO),
    Mode(11, 0x03, 5, 10, (10, 10, 10), False, 1, "rw0-9 gw0-9 bw0-9 rx0-9 gx0-9 bx0-9"),
    Mode(12, 0x07, 5, 11, (9, 9, 9), True, 1, "rw0-9 gw0-9 bw0-9 rx0-8 rw10 gx0-8 gw10 bx0-8 bw10"),
    Mode(13, 0x0B, 5, 12, (8, 8, 8), True, 1, "rw0-9 gw0-9 bw0-9 rx0-7 rw11 rw10 gx0-7 gw11 gw10 bx0-7 bw11 bw10"),
    Mode(14, 0x0F, 5, 16, (4, 4, 4), True, 1, "rw0-9 gw0-9 bw0-9 rx0-3 rw15-10 gx0-3 gw15-10 bx0-3 bw15-10"),
)

#: field numbers of the packing loop: endpoint * 3 + channel (w, x, y, z; r, g, b), then the
#: mode bits, the partition number, and 14 for header bits a mode leaves unused
_FIELDS = {f"{c}{e}": 3 * i + j for i, e in enumerate("wxyz") for j, c in enumerate("rgb")}
_MODE, _PART, _NONE = 12, 13, 14


def layout_bits(mode: Mode) -> list[tuple[int, int]]:
    """(field, bit) of each of the mode's 82 header bits (65 used by one-region modes)."""
    out = [(_MODE, i) for i in range(mode.code_bits)]
    for run in mode.header.split():
        name, bits = (_PART, run[1:]) if run[0] == "d" else (_FIELDS[run[:2]], run[2:])
        lo, _, hi = bits.partition("-")
        a, b = int(lo), int(hi or lo)
        out += [(name, k) for k in (range(a, b + 1) if b >= a else range(a, b - 1, -1))]
    if len(out) != (82 if mode.regions == 2 else 65):
        raise ValueError(f"BC6H mode {mode.number}: {len(out)} header bits")
    return out + [(_NONE, 0)] * (84 - len(out))


def mode_words() -> list[int]:
    """Per mode: base bits | delta bits R, G, B << 5, 10, 15 | code << 20 | transformed << 25 |
    two regions << 26 (``bc6_mode_desc`` of ``bc6h_encode.wgsl``)."""
    return [m.base | m.delta[0] << 5 | m.delta[1] << 10 | m.delta[2] << 15 | m.code << 20
            | int(m.transformed) << 25 | int(m.regions == 2) << 26 for m in MODES]


def layout_words(modes: int = 0) -> list[int]:
    """The read-only storage buffer ``bc6_layout`` of ``bc6h_encode.wgsl``: the mask of modes
    tried (0: the quality's), then every mode's header layout, 84 bytes a mode (field << 4 |
    bit, four to a u32). A buffer, not a WGSL array: the mask changes no pipeline, and the
    table is read where it is needed."""
    words = [modes]
    for m in MODES:
        bits = layout_bits(m)
        words += [sum((f << 4 | b) << (8 * k) for k, (f, b) in enumerate(bits[i:i + 4])) for i in range(0, 84, 4)]
    return words


def wgsl_tables() -> str:
    """WGSL: ``bc6_mode_desc(m)`` (:func:`mode_words` as one expression: no array) and the
    binding of the layout buffer (:func:`layout_words`)."""
    sel = "0u"
    for i, d in enumerate(mode_words()):
        sel = f"select({sel}, {d}u, m == {i}u)"
    return (f"fn bc6_mode_desc(m: u32) -> u32 {{\n    return {sel};\n}}\n"
            "@group(0) @binding(3) var<storage, read> bc6_layout: array<u32>;\n")
