"""Block compression on the GPU: BC1, BC3, BC4, BC5, BC7 and BC6H encoded by WGSL compute shaders.

:func:`encode_blocks` takes an uncompressed texture (any unorm or float format, every level
and layer it has) and returns a new block-compressed texture of the same logical size and
level count. Per level one dispatch runs one invocation per 4x4 block: the texels are read
straight from the source level with ``textureLoad`` (past the logical edge the last row and
column repeat: edge replication), the block's words go into one storage buffer laid out as
``copy_buffer_to_texture`` wants it, and one command encoder copies every level into the BC
texture, so ``capture`` (which decodes it), ``compare`` and the texture-file writers take it
as they take any texture.

Encoders (``bc_color.wgsl``, ``bc_ramp.wgsl``, ``bc7_mode6.wgsl``, ``bc7_mode1.wgsl``,
``bc6h_encode.wgsl`` with the mode tables of :mod:`gputex.bc6h`):

* colour (BC1, BC3's colour half): endpoints from the principal axis of the block's colours
  (power iteration on the covariance), least-squares refits of the endpoints against the
  chosen indices, a cluster fit, then a local search moving one 5:6:5 channel of one endpoint
  by one step while that lowers the error; BC1 blocks with texels of alpha < 128 use the
  three-colour + transparent mode (those texels get index 3). The palette is held in four
  registers, not a per-thread array: on the H200 that array (indexed in the texel loop, so
  kept in local memory) made every colour quality about 6x slower. The cluster fit works
  from prefix sums of the ordered texels with one reciprocal per split.
* ramp (BC4, BC5, BC3's alpha): every texel takes the nearest of the 8 palette entries (the
  specification's float palette: hardware decodes BC4/BC5 at more than 8 bits, so rounded
  codes are the wrong target; texture2ddecoder truncates them, which costs about 0.25 dB in
  its PSNR) for every endpoint pair tried: the block's range inset by a few codes, least-squares
  refits, then a pattern search (3x3 neighbours STRIDE codes apart, the stride halved when
  none is better) in the 8-value mode and, for blocks reaching 0 or 255 (``best``: all), the
  6-value mode. The block's 16 values sit in four vec4 registers (a per-thread array of them
  made BC4 ``normal`` about 5x slower on the H200) and a pair's palette is walked as
  lo + j (hi - lo) / n with one division per pair (within a few ULP of the specification's
  quotient). BC5 encodes its two halves in two invocations, each workgroup one half. On a
  64x256 astronaut crop ``best`` is within 0.002 dB of the per-block optimum (every pair
  within 8 codes of the range ends, both modes), ``normal`` within 0.2.
* BC7: two of its eight modes, the lower error wins. Mode 6 (one subset, RGBA, 4-bit
  indices): principal axis in RGBA, every p-bit pair, least-squares refits. Mode 1 (two
  subsets, RGB, 3-bit indices): the 64 partitions ranked by how far their subsets' texels lie
  from each subset's principal line, the best-ranked fitted in full the same way. The other
  modes (0, 2, 3, 4, 5, 7: three subsets, separate alpha, 2-bit indices) are not tried.
* BC6H: all fourteen modes from one shader: the one-region modes 11 (10-bit endpoints) and
  12, 13, 14 (11, 12, 16 bits, the second endpoint a 9, 8, 4-bit signed delta), the
  two-region modes 10 (6-bit endpoints) and 1-9 (7 to 11 bits, three deltas of 4 to 6 bits
  per channel), signed and unsigned. The error is measured on the half-float bit patterns
  read as sign and magnitude (relative, as HDR wants); endpoints are fitted where the decoder
  interpolates (those integers x 64/31, signed 32/31). Per region layout (the whole block;
  the partitions ranked by how far their regions' texels lie from each region's principal
  line) one line fit per region, endpoints held inside the region's per-channel range (in
  ``bc6h-rgb-float`` blocks whose values cross zero the bit patterns form two clusters far
  apart, and a line through them extrapolated: a texel of 1.32 decoded as 7460), oriented so
  each anchor texel is nearer its region's first endpoint (its index's top bit is implicit).
  Then per mode: quantise, clamp each delta from w into its field (a valid block that fits
  less well rather than none), nearest palette entries, least-squares refits while the error
  falls; the lowest error wins. The header bit layouts are a table (``bc6h.layout_words``, a
  storage buffer) read by one packing loop; every mode is checked bit-exact against
  lavapipe's decoder and texture2ddecoder (``tests/encode/test_bc6h.py``). Every loop in
  ``bc6h_encode.wgsl`` has a constant trip count (a run-time bound is a guard inside): with
  bounds computed at run time lavapipe (LLVM 15) ran the packing loops once in some lanes,
  which wrote garbage blocks.

Quality levels (``quality=``; the CLI's ``--quality``; also 0, 1, 2):

========  ===============================================================================
fast      colour: integer axis (see Determinism), 1 integer least-squares refit (16- and
          float sources: 4 power iterations, 1 refit); ramp: the block's range, then 2 steps
          of the 3x3 search
normal    colour: 8 iterations, 2 refits, cluster fit (all 969 splits of the texels ordered
          along the axis into the four indices) for blocks the refits leave above 48
          (summed squared error), 1 local-search pass; ramp: insets 0..1 on each side,
          2 refits, pattern search from stride 4 (up to 12 steps)
best      colour: as normal, cluster fit repeated along the found endpoints' axis (up to
          4 times), up to 8 search passes, the three-colour mode tried for opaque BC1
          blocks too; ramp: insets 0..3, 4 refits, pattern search from stride 8 (up to 24
          steps), the 6-value mode for every block
========  ===============================================================================

BC6H (``_BC6H``): ``fast`` tries all 14 modes, the two-region ones on the best-ranked
partition, 1 refit (the one-region modes alone: 0.029 s instead of 0.083 on lavapipe at 256^2,
RMS 0.111 instead of 0.094 on the astronaut x 16 below); ``normal`` the two-region ones on the
2 best-ranked partitions, 2 refits, then one pass of endpoint
search on the winner (each channel of each endpoint one quantisation step either way, kept
while the error falls, the block stays storable and the endpoint within a step of its region's
range: moved outside, it lowered the half-float bit error of signed blocks crossing zero while
bright texels decoded several times too bright, RMS 0.22 -> 0.26 on the astronaut x 8 - 2);
``best`` all 14 on the best 8, 4 refits, 2 search passes. RMS error of lavapipe's decode
(128^2 crops, ``test_bc6h.py``) against the same search restricted to mode 11 (``fast``,
``normal``) and modes 10/11 (``best``), as the encoder this replaced did, without the endpoint
search: HDR sky gradient 0.0102 / 0.0098 / 0.0097 against 0.0166 / 0.0140 / 0.0137; astronaut linearised x 16:
0.094 / 0.091 / 0.089 against 0.114 / 0.114 / 0.106; signed (x 8 - 2, crossing zero): 0.113 /
0.112 / 0.108 against 0.137 / 0.139 / 0.111. With noise on the gradient, ISPC's BC6H
(ispc-texcomp ``veryslow``) 0.01465 and 0.0919 on the astronaut, gputex ``best`` 0.01463 and
0.0886; ``benchmarks/bc.py`` (astronaut, coffee, chelsea, rocket x 16, lavapipe): RMS 0.158 /
0.153 / 0.151 against ISPC's veryfast / basic / veryslow 0.201 / 0.159 / 0.156 (log2 RMS 0.135
/ 0.131 / 0.130 against 0.197 / 0.133 / 0.132). Ranking the 32 partitions (33 line fits) is most of ``fast``'s cost (lavapipe, 256^2:
fast 0.08 s, normal 0.4 s, best 0.6-1.2 s under load).

BC7: ``fast`` fits mode 1 on the best-ranked partition with 1 refit, ``normal`` on the best
4 with 2 refits, ``best`` on all 64 with 4 refits (mode 6 with the same refits). Fitting all 64
rather than the best-ranked 16 is what put ``best`` past bc7enc-py's uber level 4 on the H200
(photos 45.68 against 45.47 dB, 4096^2 composite 44.29 against 43.97, at 79 MP/s; with 16:
45.29 against 45.47): the ranking misjudges textured blocks (grass +0.26 dB, gravel +0.30).

What decided it (``benchmarks/bc.py`` on 2-core lavapipe, RGB PSNR by texture2ddecoder):
cluster fit is what lifts BC1/BC3 ``normal`` above bc7enc-py's default (level 10) on the
scikit-image photos (35.68 against 35.64 dB; 35.47 without it); BC4 on the eight photos' red
channel (spec float decode / texture2ddecoder): fast 43.44 / 43.17, normal 44.02 / 43.77, best
44.10 / 43.86 dB, where the previous rounded-palette search with refits got 43.46 by
texture2ddecoder at normal. The per-block optimum, exhaustive over all 65536 endpoint pairs on
200 random blocks per photo (``benchmarks/bc4_optimum.py``,
``benchmarks/results/bc4-optimum-lavapipe-450d687.txt``), is 44.19 dB by the spec decode and
44.26 by texture2ddecoder's (mean of the photos; grass 38.6, gravel 40.5 pull it down), so
issue 18's 45 dB cannot be met on these photos by any BC4 encoder; quicktex's BC4 gets 42.39,
etcpak's 39.71. On the H200 (``benchmarks/results/bc-h200-4bc6b6b.txt``, ``bc.py --warmup 0.5``,
4096^2 composite, GPU MP/s): ``normal`` BC1 2450, BC3 2580, BC4 7300, BC5 5060; ``fast`` BC1
10400, BC4 15700; ``best`` BC1 880, BC3 1150, BC4 4830, BC5 5700. Without the warm-up the same
pipelines timed up to 5x slower (``bc-h200-450d687.txt``; consistent with the GPU's clocks
dropping while the CPU encoders run: it idled at 345 of 1980 MHz). At 9a9ca24 (``bc.py``)
``normal`` was 279 / 332 / 824 / 418. Mode 1 lifts BC7 from 42.4 dB (mode 6 alone, astronaut
crop) to 44.6 at ``normal``, past bc7enc-py's 44.35 (plain weights, uber 0).

Errors are plain RGB(A) squared differences (weights 1, 1, 1) against the palette the
specification decodes (as ``bc_decode.wgsl``), in the stored code units: sRGB formats are
fitted on their sRGB codes (the perceptual space they are stored in). snorm formats take the
source's [0, 1] as [-1, 1] (``2 x - 1``: how normal maps are stored in unorm images).

Compile cost (lavapipe compiles WGSL with LLVM): each pipeline is specialised by substituting
``const`` values (format kind, source conversion, quality) into the WGSL text and holds only
the functions its format needs, and a function called for several cases (BC1's four- and
three-colour fits, BC7 mode 1's and BC6H's two regions and fourteen modes, BC5's two halves) is called
from one loop so that one copy of it is inlined: cold compile + first run on 256^2 with
``MESA_SHADER_CACHE_DISABLE=true`` on the 2-core machine (load 6-13 from other jobs) went from
16 to 4.8 s (BC1 best), 13.5 to 8.6 s (BC7 best), 20.6 to 10.8 s (BC6H signed best); every
pipeline is now under 11 s there (``benchmarks/bc.py`` prints them).

Determinism: the same input, format and quality give the same bytes on every run on one
adapter (no atomics, no races: each invocation owns its block and every loop has a fixed
order; ties keep the earlier candidate). Across adapters: ``fast`` BC1 and BC3's colour of
8-bit sources are integer-exact (the colour axis is the bounding box's diagonal
signed by exact integer covariances, the least-squares refits solve in integers, every palette
value and error is an integer below 2^24 held exactly in f32, and no f32 result lands on a
rounding tie), so those bytes match on every conformant adapter; this cost 0.04 dB against the
float principal axis (34.90 against 34.94 dB on the photos). The ramp encoder (BC4, BC5,
BC3's alpha) fits the float palette (lo + j (hi - lo) / n), ``normal``/``best``, snorm, BC7
and BC6H use floating point (power iteration, cluster fit, refits, pow), which WGSL lets
adapters round differently (division to 2.5 ULP, fused multiply-add), so their bytes can
differ between adapters (not measured: only lavapipe was available here). The ramp's bytes
(BC4, BC5, BC3's alpha; ``fast`` too) changed once, when the palette walk replaced the
division per texel (ties between equally near entries resolve differently); BC1/BC3 ``fast``
colour bytes did not.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import FormatError, LimitError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .texture import Texture

__all__ = ["EncodeUsageError", "encode_blocks", "encode_levels", "psnr_report", "kind_of", "EncodeReport", "ENCODERS", "QUALITIES", "parse_quality",
           "source_format", "check_options", "encodable"]

class EncodeUsageError(FormatError, UsageError):
    """A texture or adapter that cannot be encoded into the format asked for (an sRGB texture
    into BC6H, an adapter without ``texture-compression-bc``): a :class:`FormatError` for the
    library, a :class:`UsageError` for the CLI (exit 2, nothing written)."""


#: Formats gputex encodes -> (KIND of bc_encode.wgsl, u32 words per block)
ENCODERS = {
    "bc1-rgba-unorm": (1, 2), "bc1-rgba-unorm-srgb": (1, 2),
    "bc3-rgba-unorm": (3, 4), "bc3-rgba-unorm-srgb": (3, 4),
    "bc4-r-unorm": (4, 2), "bc4-r-snorm": (4, 2),
    "bc5-rg-unorm": (5, 4), "bc5-rg-snorm": (5, 4),
    "bc7-rgba-unorm": (7, 4), "bc7-rgba-unorm-srgb": (7, 4),
    "bc6h-rgb-ufloat": (6, 4), "bc6h-rgb-float": (6, 4),
}

QUALITIES = ("fast", "normal", "best")

#: WGSL constants of each quality (see the module docstring's table)
_SETTINGS = {
    "fast": {"POWER_ITERS": "4u", "REFINE": "1u", "CLUSTER_ITERS": "0u", "CLUSTER_SKIP": "0.0", "PERTURB": "0u", "TRY_THREE": "false",
             "RAMP_IN": "0", "RAMP_LS": "0u", "RAMP_DESC": "2u", "RAMP_STRIDE": "1", "RAMP_SIX_ALWAYS": "false",
             "CLUSTER_WIN": "16", "BC5_LANES": "2u", "BC3_LANES": "1u",
             "BC7_REFINE": "1u", "BC7_P1_TOP": "1u"},
    "normal": {"POWER_ITERS": "8u", "REFINE": "2u", "CLUSTER_ITERS": "1u", "CLUSTER_SKIP": "48.0", "PERTURB": "1u", "TRY_THREE": "false",
               "RAMP_IN": "1", "RAMP_LS": "2u", "RAMP_DESC": "12u", "RAMP_STRIDE": "4", "RAMP_SIX_ALWAYS": "false",
               "CLUSTER_WIN": "16", "BC5_LANES": "2u", "BC3_LANES": "1u",
               "BC7_REFINE": "2u", "BC7_P1_TOP": "4u"},
    "best": {"POWER_ITERS": "8u", "REFINE": "4u", "CLUSTER_ITERS": "4u", "CLUSTER_SKIP": "0.0", "PERTURB": "8u", "TRY_THREE": "true",
             "RAMP_IN": "3", "RAMP_LS": "4u", "RAMP_DESC": "24u", "RAMP_STRIDE": "8", "RAMP_SIX_ALWAYS": "true",
             "CLUSTER_WIN": "16", "BC5_LANES": "2u", "BC3_LANES": "1u",
             "BC7_REFINE": "4u", "BC7_P1_TOP": "64u"},
}

#: BC6H's WGSL constants per quality: the modes tried (bit m - 1: mode m), how many of the 32
#: two-region partitions (best-ranked) the two-region modes are tried on, least-squares refits,
#: endpoint-search passes on the winner (see the module docstring).
_BC6H = {
    "fast": {"BC6_MODES": "0x3fffu", "BC6_PARTS": "1u", "BC6_REFINE": "1u", "BC6_PERTURB": "0u"},
    "normal": {"BC6_MODES": "0x3fffu", "BC6_PARTS": "2u", "BC6_REFINE": "2u", "BC6_PERTURB": "1u"},
    "best": {"BC6_MODES": "0x3fffu", "BC6_PARTS": "8u", "BC6_REFINE": "4u", "BC6_PERTURB": "2u"},
}

_BODY = {
    1: "let c = encode_color(alpha_mask());\n    out[w] = c.x;\n    out[w + 1u] = c.y;",
    # BC3: alpha then colour, or (BC3_LANES 2) each in its own invocation
    3: ("if (LANES == 1u || lane == 1u) {\n        let a = encode_ramp(3u);\n        out[w] = a.x;\n"
        "        out[w + 1u] = a.y;\n    }\n    if (LANES == 1u || lane == 0u) {\n"
        "        let c = encode_color(0xffffu);\n        out[w + 2u] = c.x;\n        out[w + 3u] = c.y;\n    }"),
    4: "let r = encode_ramp(0u);\n    out[w] = r.x;\n    out[w + 1u] = r.y;",
    # BC5: one loop over the two halves (one copy of the ramp code: on the H200 two inlined
    # calls ran at 420 MP/s against BC4's 2580)
    5: ("for (var c = lane; c < 2u; c += LANES) {\n        let r = encode_ramp(c);\n        out[w + 2u * c] = r.x;\n"
        "        out[w + 2u * c + 1u] = r.y;\n    }"),
    6: ("let b = encode_bc6h();\n    out[w] = b.x;\n    out[w + 1u] = b.y;\n    out[w + 2u] = b.z;\n"
        "    out[w + 3u] = b.w;"),
    7: ("var b = encode_bc7_mode6();\n    let b1 = encode_bc7_mode1();\n    if (m1_err < m6_err) {\n"
        "        b = b1;\n    }\n    out[w] = b.x;\n    out[w + 1u] = b.y;\n    out[w + 2u] = b.z;\n"
        "    out[w + 3u] = b.w;"),
}


@dataclass
class EncodeReport:
    """What one :func:`encode_levels` call did."""

    format: str
    quality: str
    compile_seconds: float = 0.0  # pipeline creation in this call (0 when it was cached)
    gpu_ns: int | None = None  # first pass begin to last pass end (timestamp queries)
    pass_ns: list[int] = field(default_factory=list)  # each level's encode pass


def kind_of(fmt) -> int:
    """KIND of ``bc_encode.wgsl`` for an encodable format."""
    return ENCODERS[fmt.name][0]


def encodable(name: str) -> bool:
    """Whether gputex encodes the format ``name`` (``_`` accepted for ``-``)."""
    return name.strip().lower().replace("_", "-") in ENCODERS


def parse_quality(quality) -> str:
    """``fast``/``normal``/``best`` (or 0/1/2) -> the quality's name."""
    q = str(quality).strip().lower()
    if q in ("0", "1", "2"):
        return QUALITIES[int(q)]
    if q not in QUALITIES:
        raise FormatError(f"unknown quality {quality!r}; use fast, normal, best (or 0, 1, 2)")
    return q


def source_format(fmt) -> str:
    """The uncompressed format an image is uploaded to (and its mips made in) before encoding
    into ``fmt``: ``rgba16float`` for BC6H, else ``rgba8unorm`` (sRGB formats too: the codes are
    what is fitted; the texture's colour space says how the mips treat them)."""
    return "rgba16float" if fmt.name.startswith("bc6h") else "rgba8unorm"


def check_options(fmt_name: str, *, normal_map: bool = False, alpha: str = "weighted",
                  alpha_coverage: float | None = None, premultiply: bool = False,
                  color_space: str | None = None) -> str | None:
    """Why these options do not fit encoding into ``fmt_name`` (one line), or None."""
    name = fmt_name.strip().lower().replace("_", "-")
    family = name.split("-")[0]
    if normal_map and family in ("bc1", "bc4"):
        return (f"--normal-map with {name}: {family.upper()} cannot hold a normal's x and y apart; "
                "use --format bc5-rg-unorm (or bc5-rg-snorm, or bc3-rgba-unorm)")
    if family in ("bc4", "bc5"):
        if alpha != "weighted" or alpha_coverage is not None or premultiply:
            what = "--alpha" if alpha != "weighted" else ("--alpha-coverage" if alpha_coverage is not None
                                                          else "--premultiply")
            return f"{what} with {name}: {family.upper()} stores no alpha"
    if name.endswith("-srgb") and normal_map:
        return f"--normal-map with {name}: a normal map must not be stored as sRGB; use {name[:-5]}"
    if name.endswith("-srgb") and color_space == "linear":
        return (f"--color-space linear with {name}: sRGB formats hold sRGB data; use {name[:-5]} for "
                "linear data")
    return None


def _lanes(kind: int, quality: str) -> int:
    """Invocations per block: BC5 (BC5_LANES 2) encodes its two halves in two invocations, BC3
    (BC3_LANES 2) its alpha and colour; each workgroup holds one lane (no divergence)."""
    key = {5: "BC5_LANES", 3: "BC3_LANES"}.get(kind)
    return int(_SETTINGS[quality][key].rstrip("u")) if key else 1


def shader_source(kind: int, signed: bool, quality: str, src_srgb: bool, src_round: bool) -> str:
    """The specialised WGSL of one encoder pipeline."""
    from .kernels import load_wgsl

    consts = dict(_SETTINGS[quality], KIND=f"{kind}u", LANES=f"{_lanes(kind, quality)}u", SIGNED=str(signed).lower(),
                  SRC_SRGB=str(src_srgb).lower(), SRC_ROUND=str(src_round).lower(),
                  FOUR_ALWAYS=str(kind == 3).lower(), BLOCK_WORDS="2u" if kind in (1, 4) else "4u",
                  RAW_FLOAT=str(kind == 6).lower(), INT_FAST=str(quality == "fast" and src_round).lower())
    types = {"true": "bool", "false": "bool"}
    head = "".join(f"const {k}: {types.get(v, 'u32' if v.endswith('u') else 'f32' if '.' in v else 'i32')} = {v};\n"
                   for k, v in sorted(consts.items()))
    if kind == 6:
        from .bc6h import wgsl_tables

        head += "".join(f"const {k}: u32 = {v};\n" for k, v in sorted(_BC6H[quality].items())) + wgsl_tables()
    code = head + load_wgsl("bc_encode.wgsl", ENCODE_BLOCK=_BODY[kind])
    if kind in (1, 3):
        code += load_wgsl("bc_color.wgsl")
    if kind in (3, 4, 5):
        code += load_wgsl("bc_ramp.wgsl")
    if kind == 7:
        code += load_wgsl("bc7_mode6.wgsl") + load_wgsl("bc7_mode1.wgsl")
    if kind == 6:
        code += load_wgsl("bc6h_encode.wgsl")
    return code


def _pipeline(session, kind: int, signed: bool, quality: str, src_srgb: bool, src_round: bool):
    """(pipeline, bind group layout, seconds spent creating it: 0 when cached)."""
    import time

    import wgpu

    from .kernels import PIPELINES

    key = ("bc-encode", kind, signed, quality, src_srgb, src_round)
    spent = 0.0

    def make():
        nonlocal spent
        t0 = time.perf_counter()
        s = wgpu.ShaderStage.COMPUTE
        entries = [
            {"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                        "view_dimension": "2d-array"}},
            {"binding": 1, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.storage}},
            {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}},
        ]
        if kind == 6:  # BC6H's header layouts (bc6h.layout_words)
            entries.append({"binding": 3, "visibility": s,
                            "buffer": {"type": wgpu.BufferBindingType.read_only_storage}})
        device = session.device
        code = shader_source(kind, signed, quality, src_srgb, src_round)
        module = session.check(f"compile the BC{kind} encoder", device.create_shader_module, code=code,
                               label=f"bc{kind}_encode_{quality}")
        bgl = device.create_bind_group_layout(entries=entries)
        layout = device.create_pipeline_layout(bind_group_layouts=[bgl])
        pipe = session.check(f"compile the BC{kind} encoder", device.create_compute_pipeline, layout=layout,
                             compute={"module": module, "entry_point": "main"})
        spent = time.perf_counter() - t0
        return pipe, bgl

    pipe, bgl = session.cache(PIPELINES).get(key, make)
    return pipe, bgl, spent


def _bc6h_layout(session, modes: int):
    """The read-only storage buffer of BC6H's modes tried and header layouts (one per session
    and ``modes``: :func:`gputex.bc6h.layout_words`)."""
    import wgpu

    from .bc6h import layout_words
    from .kernels import PIPELINES

    words = layout_words(modes)
    data = struct.pack(f"<{len(words)}I", *words)
    return session.cache(PIPELINES).get(("bc6h-layout", modes), lambda: session.device.create_buffer_with_data(
        data=data, usage=wgpu.BufferUsage.STORAGE))


def _check_source(tex: Texture, fmt) -> None:
    if tex.format.compressed or tex.format.kind not in ("unorm", "float") or tex.format.packed \
            and tex.format.kind != "unorm":
        raise FormatError(f"{tex.source}: cannot encode {fmt.name} from {tex.format.name}; the source must be "
                          "an uncompressed unorm or float texture")
    import wgpu

    if not tex.texture.usage & wgpu.TextureUsage.TEXTURE_BINDING:
        raise FormatError(f"{tex.source}: encoding reads the texture in a shader; create it with "
                          "TEXTURE_BINDING usage (gputex.upload(..., usage=wgpu.TextureUsage.TEXTURE_BINDING))")
    if tex.depth > 1:
        raise FormatError(f"{tex.source}: {fmt.name} 3D textures are not encoded (WebGPU has no 3D BC "
                          "textures without texture-compression-bc-sliced-3d)")


def encode_levels(tex: Texture, format: str, quality: str = "normal", *, measure: bool = False,
                  bc6h_modes: Iterable[int] | None = None) -> tuple[Texture, EncodeReport]:
    """:func:`encode_blocks`, also returning an :class:`EncodeReport` (with ``measure``: GPU
    time from timestamp queries where the device has them; the call waits for the GPU).
    ``bc6h_modes`` (BC6H only; tests and tuning): the modes tried (1-14) instead of the
    quality's (its partition count and refits stay)."""
    import wgpu

    from .formats import get_format
    from .kernels import timestamps as _timestamps
    from .layout import copy_layout
    from .texture import create_texture

    fmt = get_format(format)
    if fmt.name not in ENCODERS:
        raise FormatError(f"{tex.source}: gputex does not encode {fmt.name}; it encodes "
                          f"{', '.join(ENCODERS)}")
    quality = parse_quality(quality)
    if not tex.session.has_feature(fmt.feature):
        raise EncodeUsageError(f"{tex.source}: {fmt.name} needs the device feature {fmt.feature!r}, which "
                               f"{tex.session.info.name} does not have; use an uncompressed --format")
    _check_source(tex, fmt)
    if kind_of(fmt) == 6 and tex.color_space == "srgb":
        raise EncodeUsageError(f"{tex.source}: {fmt.name} holds linear HDR values but this texture is sRGB; "
                               "give linear data (float images are; --color-space linear for others)")
    session, device = tex.session, tex.session.device
    kind, words = ENCODERS[fmt.name]
    mask = 0
    if bc6h_modes is not None:
        modes = sorted(set(bc6h_modes))
        if kind != 6 or not modes or not set(modes) <= set(range(1, 15)):
            raise FormatError(f"{tex.source}: bc6h_modes={modes} with {fmt.name}: BC6H modes are 1-14, "
                              "for bc6h-rgb-ufloat/float only")
        mask = sum(1 << (m - 1) for m in modes)
    src_round = tex.format.kind == "unorm" and tex.format.bits == 8
    signed = fmt.kind in ("snorm", "float")  # bc4/bc5 snorm, bc6h-rgb-float
    pipe, bgl, compile_s = _pipeline(session, kind, signed, quality, tex.format.srgb, src_round)
    report = EncodeReport(fmt.name, quality, compile_s)
    out = create_texture(session, fmt, tex.width, tex.height, layers=tex.layers, levels=tex.levels,
                         usage=wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC
                         | wgpu.TextureUsage.TEXTURE_BINDING,
                         color_space="srgb" if fmt.srgb else ("linear" if fmt.kind in ("snorm", "float", "ufloat") else tex.color_space),
                         source=tex.source)
    out.faces, out.array = tex.faces, tex.array
    lays = [copy_layout(fmt, *tex.size(lv), tex.layers) for lv in range(tex.levels)]
    sizes = [lay.padded_bytes_per_row * lay.blocks_down * tex.layers for lay in lays]
    biggest = session.limits.get("max-storage-buffer-binding-size", 128 << 20)
    if max(sizes) > biggest:
        out.destroy()
        raise LimitError(f"{tex.source}: level 0 of {fmt.name} needs a {max(sizes)}-byte storage buffer; the "
                         f"device's max-storage-buffer-binding-size is {biggest}")
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    lanes = _lanes(kind, quality)
    extra = [{"binding": 3, "resource": {"buffer": _bc6h_layout(session, mask)}}] if kind == 6 else []
    buf = None
    query = _timestamps(session, tex.levels) if measure else None
    try:
        buf = session.check(f"{tex.source}: block buffer", device.create_buffer, size=sum(sizes),
                            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
        enc = device.create_command_encoder()
        for level, lay in enumerate(lays):
            w, h = tex.size(level)
            pitch = lay.padded_bytes_per_row
            prm = struct.pack("<6I", w, h, lay.blocks_across, lay.blocks_down, pitch // 4,
                              pitch * lay.blocks_down // 4)
            bind = device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": tex.view(dimension="2d-array", base_mip_level=level, mip_level_count=1)},
                {"binding": 1, "resource": {"buffer": buf, "offset": offsets[level], "size": sizes[level]}},
                {"binding": 2, "resource": {"buffer": session.uniform(prm)}}] + extra)
            ts = query.next() if query else None
            cpass = enc.begin_compute_pass(timestamp_writes=ts) if ts else enc.begin_compute_pass()
            cpass.set_pipeline(pipe)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(-(-lay.blocks_across // 8) * lanes, -(-lay.blocks_down // 8), tex.layers)
            cpass.end()
        for level, lay in enumerate(lays):
            enc.copy_buffer_to_texture(
                {"buffer": buf, "offset": offsets[level], "bytes_per_row": lay.padded_bytes_per_row,
                 "rows_per_image": lay.blocks_down},
                {"texture": out.texture, "mip_level": level, "origin": (0, 0, 0)},
                (lay.blocks_across * 4, lay.blocks_down * 4, tex.layers))
        if query:
            query.resolve(enc)
        session.check(f"{tex.source}: encode {fmt.name} on the GPU", device.queue.submit, [enc.finish()])
        if query:
            report.gpu_ns, report.pass_ns = query.read()
        elif measure:
            session.wait()
    except BaseException:
        out.destroy()
        raise
    finally:
        if buf is not None:
            buf.destroy()
    return out, report


def encode_blocks(tex: Texture, format: str, quality: str = "normal") -> Texture:
    """A new block-compressed texture holding ``tex`` (every level and layer) encoded as ``format``.

    Parameters
    ----------
    tex
        An uncompressed unorm or float texture (2D, array or cube), e.g. from
        :func:`gputex.upload` with ``mips=True``.
    format
        ``bc1-rgba-unorm[-srgb]``, ``bc3-rgba-unorm[-srgb]``, ``bc4-r-unorm|snorm``,
        ``bc5-rg-unorm|snorm``, ``bc7-rgba-unorm[-srgb]`` or ``bc6h-rgb-ufloat|float``.
    quality
        ``fast``, ``normal`` (default) or ``best`` (or 0, 1, 2); see the module docstring.

    Returns
    -------
    Texture
        Same logical size, levels and layers; sizes that are not whole blocks are padded by
        repeating the last row and column.
    """
    return encode_levels(tex, format, quality)[0]


def _stored(fmt) -> tuple[int, bool]:
    """(colour channels compared, whether alpha is reported apart) of an encoded format."""
    family = fmt.name.split("-")[0]
    return {"bc1": (3, False), "bc3": (3, True), "bc4": (1, False), "bc5": (2, False), "bc7": (3, True),
            "bc6h": (3, False)}[family]


def psnr_report(source: Texture, encoded: Texture) -> list[dict]:
    """PSNR (dB, ``None`` where identical) of every level and layer of ``encoded`` against
    ``source``, after decoding the blocks with the specification's arithmetic
    (:func:`gputex.unblock.decode_blocks`): ``psnr`` over the colour channels the format
    stores (BC1/BC3: RGB, BC4: R, BC5: RG), ``psnr_alpha`` for BC3, ``ssim`` (luma, from
    :func:`gputex.compare`) where the source is ``rgba8unorm``. snorm formats are compared as
    values in [-1, 1] (the source's ``2 x - 1``) with peak-to-peak 2."""
    import math

    import numpy as np

    from .capture import capture
    from .compare import compare
    from .unblock import decode_blocks

    k, alpha = _stored(encoded.format)
    decoded = decode_blocks(encoded)
    rows = []
    try:
        same = decoded.format.name == source.format.name and encoded.format.kind != "snorm"
        for level in range(encoded.levels):
            for layer in range(encoded.layers):
                row: dict = {"level": level}
                if encoded.layers > 1:
                    row["layer"] = layer
                if same:
                    r = compare(source, decoded, level, layer)
                    mse = r.mse
                    peak = 1.0 if source.format.kind == "float" else 255.0
                    if k == 3 and encoded.format.kind != "float" and encoded.format.kind != "ufloat":  # luma SSIM needs the three colour channels
                        row["ssim"] = r.ssim
                else:
                    a = capture(source, level, layer).astype(np.float64)
                    b = capture(decoded, level, layer).astype(np.float64)
                    if source.format.kind != "float":
                        a /= (1 << source.format.bits) - 1
                    if encoded.format.kind == "snorm":
                        a, peak = a * 2.0 - 1.0, 2.0
                    else:
                        b, peak = b / 255.0, 1.0
                    mse = [float(np.mean((a[:, :, c] - b[:, :, c]) ** 2)) for c in range(4)]

                def db(m: float, p: float = peak) -> float | None:
                    return round(10 * math.log10(p * p / m), 4) if m > 0 else None

                row["psnr"] = db(sum(mse[:k]) / k)
                if alpha:
                    row["psnr_alpha"] = db(mse[3])
                rows.append(row)
    finally:
        decoded.destroy()
    return rows
