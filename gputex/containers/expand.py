"""Formats WebGPU has no texture format for, expanded on reading to one it has, exactly.

A reader calls :func:`plan` with a VkFormat (KTX2), an OpenGL or DXGI format mapped to one:
it returns the WebGPU format the texture is uploaded as, and a function turning the stored
bytes of one level into that format's bytes. Done on the CPU with numpy when the file is read
(one pass over each level, before upload): the model, upload, mips and capture stay as they
are for every container, and these formats are rare enough that a GPU kernel per layout would
cost more code than it saves time.

The conversions are those Khronos's ``ktx extract`` gives (checked against it in
``tests/containers/test_expand.py``):

- 3-component formats get a fourth, opaque component (1.0, the largest unorm/snorm value,
  or integer 1).
- Packed 4/5/6-bit unorm components widen to 8 bits by bit replication
  (``(x << 3) | (x >> 2)`` for 5 bits), which ``ktx extract`` uses (it differs from
  ``round(x * 255 / 31)`` at x = 3, 7, 24, 28).
- B10G11R11_UFLOAT widens to half floats (same exponent bias, mantissa padded with zeros) and
  E5B9G9R9_UFLOAT to 32-bit floats (``mantissa * 2**(exponent - 24)``): both exact.
- A2R10G10B10 swaps R and B into rgb10a2; D16 is r16unorm's bits, D32 r32float's, S8 r8uint's;
  A8 is rg8unorm holding (0, alpha): gputex's grey+alpha, the grey-alpha PNG ``ktx extract`` writes.
"""

from __future__ import annotations

from collections.abc import Callable

from ..formats import FORMATS, Format
from .vkformat import VK_ALIASES, VK_BY_CODE, VK_NAMES, layout

__all__ = ["plan", "Expansion"]

Expansion = Callable[[bytes, int], bytes]  # (level bytes, texel count) -> expanded bytes


def _np():
    import numpy as np

    return np


def _add_alpha(dtype: str, one: int | float) -> Expansion:
    def run(raw: bytes, n: int) -> bytes:
        np = _np()
        src = np.frombuffer(raw, dtype).reshape(n, 3)
        out = np.empty((n, 4), dtype)
        out[:, :3] = src
        out[:, 3] = one
        return out.tobytes()
    return run


def _swap_bgr(inner: Expansion | None, dtype: str, width: int) -> Expansion:
    def run(raw: bytes, n: int) -> bytes:
        np = _np()
        src = np.frombuffer(raw, dtype).reshape(n, width)[:, [2, 1, 0] + list(range(3, width))]
        data = np.ascontiguousarray(src).tobytes()
        return inner(data, n) if inner else data
    return run


def _widen(bits: int):
    """A component of ``bits`` bits as 8, by bit replication (what ``ktx extract`` writes)."""
    def run(x):
        np = _np()
        x = x.astype(np.uint16)
        out = x << (8 - bits)
        shift = bits
        while shift < 8:
            out |= (x << (8 - bits)) >> shift
            shift += bits
        return out.astype(np.uint8)
    return run


def _packed_unorm(code: int, channels: int) -> Expansion:
    lay = layout(code)
    assert lay is not None
    comps = {letter: (off, bits) for letter, off, bits in lay.components}
    word = "<u2" if lay.block_bytes == 2 else "u1"
    order = "RGBA"[:channels]

    def run(raw: bytes, n: int) -> bytes:
        np = _np()
        v = np.frombuffer(raw, word)[:n].astype(np.uint32)
        out = np.empty((n, channels), np.uint8)
        for i, letter in enumerate(order):
            if letter in comps:
                off, bits = comps[letter]
                out[:, i] = _widen(bits)((v >> off) & ((1 << bits) - 1))
            else:
                out[:, i] = 255
        return out.tobytes()
    return run


def _b10g11r11(raw: bytes, n: int) -> bytes:
    np = _np()
    v = np.frombuffer(raw, "<u4")[:n]
    out = np.empty((n, 4), np.uint16)
    for i, (off, mbits) in enumerate(((0, 6), (11, 6), (22, 5))):
        e = (v >> (off + mbits)) & 31
        m = (v >> off) & ((1 << mbits) - 1)
        out[:, i] = (e << 10) | (m << (10 - mbits))  # same bias (15): exact, inf/NaN kept
    out[:, 3] = 0x3C00
    return out.tobytes()


def _e5b9g9r9(raw: bytes, n: int) -> bytes:
    np = _np()
    v = np.frombuffer(raw, "<u4")[:n]
    scale = np.ldexp(np.float64(1), ((v >> 27) & 31).astype(np.int32) - 24)
    out = np.empty((n, 4), np.float32)
    for i in range(3):
        out[:, i] = (((v >> (9 * i)) & 511) * scale).astype(np.float32)  # exact in float32
    out[:, 3] = 1.0
    return out.tobytes()


def _same(raw: bytes, n: int) -> bytes:
    return bytes(raw)


_SUFFIX = {"UNORM": "unorm", "SNORM": "snorm", "UINT": "uint", "SINT": "sint", "SFLOAT": "float",
           "SRGB": "unorm-srgb"}
_ONE = {"unorm": (1 << 8) - 1, "snorm": 127, "uint": 1, "sint": 1}


def plan(code: int) -> tuple[Format, str, Expansion | None]:
    """(WebGPU format, colour space the code forces or "", expansion or None) for a VkFormat.
    Raises ``LookupError`` with the reason when gputex cannot read it."""
    if code in VK_BY_CODE and code not in (122, 123):
        return FORMATS[VK_BY_CODE[code]], "", None
    if code in VK_ALIASES:
        name, space = VK_ALIASES[code]
        return FORMATS[name], space, None
    vk = VK_NAMES.get(code)
    if vk is None:
        raise LookupError(f"VkFormat {code} is not a format gputex knows")
    if code == 122:
        return FORMATS["rgba16float"], "", _b10g11r11
    if code == 123:
        return FORMATS["rgba32float"], "", _e5b9g9r9
    lay = layout(code)
    if lay is not None and not lay.packed and len(lay.components) == 3 and lay.kinds[0] in _SUFFIX \
            and [c[0] for c in lay.components] in (["R", "G", "B"], ["B", "G", "R"]):
        bits = lay.components[0][2]
        kind = _SUFFIX[lay.kinds[0]]
        if bits in (8, 16, 32) and not (bits == 8 and kind == "float") and not (bits == 32 and kind in
                                                                                 ("unorm", "snorm")):
            name = f"rgba{bits}{kind}"
            dtype = {"uint": "<u", "unorm": "<u", "unorm-srgb": "<u", "sint": "<i", "snorm": "<i",
                     "float": "<f"}[kind] + str(bits // 8)
            if kind == "float":
                one: int | float = 1.0
            elif kind in ("unorm", "unorm-srgb"):
                one = (1 << bits) - 1
            elif kind == "snorm":
                one = (1 << (bits - 1)) - 1
            else:
                one = 1
            if bits == 16 and kind == "float":
                dtype, one = "<u2", 0x3C00
            run = _add_alpha(dtype, one)
            if lay.components[0][0] == "B":
                run = _swap_bgr(run, dtype, 3)
            space = "srgb" if kind == "unorm-srgb" else ""
            if name in FORMATS:
                return FORMATS[name], space, run
    if lay is not None and not lay.packed and [c[0] for c in lay.components] == ["B", "G", "R", "A"] \
            and lay.components[0][2] == 8 and f"rgba8{_SUFFIX.get(lay.kinds[0], '?')}" in FORMATS:
        return FORMATS[f"rgba8{_SUFFIX[lay.kinds[0]]}"], "", _swap_bgr(None, "u1", 4)  # B8G8R8A8_SNORM/INT
    if lay is not None and lay.packed in (8, 16) and set(lay.kinds) == {"UNORM"}:
        channels = 2 if code == 1 else 4
        return FORMATS["rg8unorm" if channels == 2 else "rgba8unorm"], "", _packed_unorm(code, channels)
    if code in (58, 62):  # A2R10G10B10 UNORM / UINT: rgb10a2 with R and B swapped
        def swap(raw: bytes, n: int) -> bytes:
            np = _np()
            v = np.frombuffer(raw, "<u4")[:n]
            r, b = (v >> 20) & 1023, v & 1023
            return ((v & 0xC00FFC00) | (b << 20) | r).astype("<u4").tobytes()
        return FORMATS["rgb10a2unorm" if code == 58 else "rgb10a2uint"], "", swap
    if code == 124:
        return FORMATS["r16unorm"], "linear", _same
    if code == 126:
        return FORMATS["r32float"], "linear", _same
    if code == 127:
        return FORMATS["r8uint"], "", _same
    if code == 1000470001:  # A8: alpha only; as grey 0 + alpha (``ktx extract`` writes that PNG)
        def alpha(raw: bytes, n: int) -> bytes:
            np = _np()
            out = np.zeros((n, 2), np.uint8)
            out[:, 1] = np.frombuffer(raw, np.uint8)[:n]
            return out.tobytes()
        return FORMATS["rg8unorm"], "linear", alpha
    raise LookupError(f"gputex cannot upload VK_FORMAT_{vk}: WebGPU has no such texture format and gputex "
                      "does not expand it")


def stored_format(code: int) -> Format:
    """A stand-in :class:`Format` for the bytes of an uncompressed VkFormat as a file stores
    them (its texel size), for readers that size and cut levels before :func:`expand_levels`."""
    lay = layout(code)
    if lay is None:
        raise LookupError(f"VkFormat {code} is not an uncompressed format")
    return Format(f"vk-{lay.name.lower()}", (1, 1), lay.block_bytes, len(lay.components), "unorm", 8)


def expand_levels(tf, code: int) -> None:
    """Turn ``tf`` (levels cut with :func:`stored_format`) into its WebGPU format, in place."""
    fmt, space, expansion = plan(code)
    levels = []
    for i, raw in enumerate(tf.levels):
        w, h, d = tf.level_size(i)
        levels.append(expansion(bytes(raw), w * h * d * tf.images) if expansion else raw)
    tf.format, tf.levels = fmt, levels
    if space:
        tf.color_space = space
    elif fmt.srgb:
        tf.color_space = "srgb"
