"""The single-pass integer box chain (``mip_spd.wgsl``): the bytes of the integer chain
(``mips/integer.py``), in one dispatch per six levels instead of one or more per level.

Each workgroup reduces a tile of the source through up to six levels (the first two in
registers, the rest in workgroup memory), so the base is read once and every level written
once; the sums of the pass's last level are kept for the next pass (a 8192^2 chain is three
dispatches). It serves the chains whose every level halves each axis of the one before (or
keeps it at 1): power-of-two sizes and their multiples down to the levels asked for. A texel's
sums are then plain sums over its 2^s base texels, its value sum / 2^s: the same rational
number as the integer chain's weighted sum over the weight total, decided by the same exact
comparisons with the same tables, hence the same bytes. Other sizes (odd footprints) keep the
integer chain.

Measured on the H200 (``benchmarks/mips.py``, GPU time, rgba8unorm-srgb, weighted alpha; the
integer chain in the same run): 4096^2 1.89 ms against 4.76 ms, 8192^2 12.6 ms against 18.9 ms
(commit 4c1d476; first pass 1.49 and 10.8 ms). The float chain takes 0.28 and 0.65 ms, so that
version was still bound by its integer arithmetic, not by memory: the passes over a few
thousand texels took 0.1-0.5 ms, a sign of accumulators in local memory (arrays indexed by loop
variables), which the shader no longer has. At 784e783 / d7e5739 (warm GPU, median):
4096^2 0.637 ms, 8192^2 2.32 ms, first pass 0.335 / 1.269 ms; the speed of light 0.042 / 0.140
ms; the buffer-to-texture copies between passes 0.26 ms of 4096^2's time. Now (1f4fa10, the
same call, ``benchmarks/results/mips-h200-1f4fa10.txt``): 4096^2 0.599 ms, 8192^2 2.17 ms, first
pass 0.295 / 1.120 ms, nearly all of the gain from levels 1-2 getting their codes straight from
the 8-bit first pass's 32-bit lanes (``finalize_narrow``: a shift, or the float screen on a
3-rounding estimate; the exact path only for the screen's rare misses, once per thread after
the summing loops). Levels 3.. of a pass are summed into slots of their own, one level a barrier
on GPUs (``ROUND_A_LEVEL``; two levels a round on CPU adapters, where every barrier and every
masked-off statement costs), then all their (texel, channel) pairs rounded at once. On lavapipe
a 2048^2 chain took 378 ms of CPU, now 239 (``benchmarks/mips_cpu.py``; ``docs/performance.md``).
Alpha's exact ties (a quarter of level 1's texels) are rounded by a shift, not the search.

**The levels stored straight into the texture.** Where the texture was made for it
(:func:`.stored.stored_format` at its creation: 8-bit RGBA, the exact box chain, a GPU adapter; an sRGB
texture is then its linear twin ``rgba8unorm`` with the sRGB view format, ``gputex/texture.py``),
each pass binds one write view a level (``store_level``, ``texture_storage_2d``; within
``max-storage-textures-per-shader-stage``, fewer levels a pass where it is below six) and the
levels are written by ``textureStore``: no output buffer, no copies. The base is then read
through the linear view, its codes without the sRGB re-encode. Everything else takes the
output buffer and ``copy_buffer_to_texture`` (an sRGB format cannot be a storage texture), as
before. Before: on the H200 (warm median, 1f4fa10) 4096^2 0.599 ms of which ~0.26 ms copies; the
copies into an sRGB image are far below memory speed there whatever their source (level 1 of
4096^2: buffer 0.186 ms, a storage twin texture 0.310 ms; branch h16twin stored into a twin and
copied it, 0.783 against 0.620 ms, not kept), while ``textureStore`` of every level runs at 0.053
ms (``benchmarks/store_floor.py``). Stored (ff3cc2c against main c924177, same call,
``benchmarks/results/mips-h200-ff3cc2c.txt``): 4096^2 0.328 against 0.591 ms, 8192^2 1.124 against
2.146 ms; the chain is now its passes (first pass 0.278 / 1.057 ms). With the first pass's
loads four at a time and levels 3.. summed a (texel, channel) a thread (h16pass; ``QUAD``,
``CHANNEL_ROUNDS``, ``ONE_THRESHOLD`` in the shader, on GPUs with ``ROUND_A_LEVEL``), the
integrated tree (59c9903 against c924177, one call, ``benchmarks/results/h200-integ-59c9903.txt``):
4096^2 0.269 against 0.589 ms, 8192^2 0.878 against 2.142 ms, first pass 0.222 / 0.812 ms; issue
16's 0.060 / 0.2 ms are still 4.5x / 4.4x away.

**A first pass of three levels, level 3 from the lanes (helper h16tile).** On GPUs the first pass
makes levels 1-3 and keeps level 3's sums (``SPLIT_FIRST``), the next passes six levels each from
them; level 3's texels are summed by lanes exchanging their integer sums (``SUBGROUPS``: wgpu-native's
``subgroup`` feature, ``subgroupShuffleXor``; each thread's texel from its subgroup and lane, so no
assumption on how invocations are grouped), each of its four lanes rounding one channel; a pass's
level count and tile shape are pipeline constants (``PASS_LEVELS``, ``SG_TILE``), so the three-level
pass keeps no code for the workgroup-memory rounds; a pass from stored sums with 2x2 footprints loads
a child's four sums together (``SUMS_QUAD``). Why: the tile phase alone (levels 3-6 of a 64x64 tile
in workgroup memory, its loads cut out) took 0.108 ms of 4096^2's first pass, as much as the loads
and levels 1-2 (0.109 ms). H200 (branch 7a57f9b against main c646fe6, one call,
``benchmarks/results/mips-h200-7a57f9b.txt``): 4096^2 0.208 against 0.268 ms, 8192^2 0.570 against
0.878 ms (passes 0.131 + 0.038 + 0.026 and 0.474 + 0.056 + 0.027 ms); 5.0x / 4.1x the speed of
light; issue 16's 0.060 / 0.2 ms are still 3.5x / 2.9x away. The same bytes
(hashes of the mip matrix's 8-bit RGBA cases on the H200 equal lavapipe's; the tests force every
GPU form on lavapipe, whose subgroups have 8 lanes). CPU adapters keep main's forms.

**Workgroups of two tiles (helper h16base).** On GPUs that three-level first pass (no workgroup
memory but the tables) runs in workgroups of 512 invocations, two 16x16 tiles each (``GROUP_TILES``),
the tables copied and waited for once for both. H200 (ec5413d against main 56e6b2c, one call,
``benchmarks/results/mips-h200-ec5413d.txt``): 4096^2 0.191 against 0.206 ms, 8192^2 0.511 against
0.569 ms (first pass 0.116 / 0.414 ms); issue 16's 0.060 / 0.2 ms are still 3.2x / 2.6x away. Probes
of that pass (``benchmarks/mip_spd_variants.py``, ``docs/performance.md``): levels 1-2's rounding is a
quarter of it, the sRGB table lookups a tenth; fewer or replicated lookups were not faster.

**Fewer lookups (helper h16lut).** On GPUs an 8-bit sRGB code of the first pass's levels 1-2 (and of
``round_one``) comes from one word a float bucket (``CODE_WORDS``, ``intbox.code_words``: the bucket's
code, the low 16 bits of the one threshold inside it, flags for thresholds just beyond its edges),
read from the tables' storage buffer and compared as integers, not from the bucket's code and three
float thresholds in workgroup memory; the base codes by ``pack4x8unorm`` (``PACK_CODES``); level 3 from
the lanes in 32-bit words (``SG_NARROW``). H200, same call (``benchmarks/results/mip-spd-variants-h200-
h16lut.txt``): first pass at 8192^2 0.344 / 0.365 ms against main's 0.414 / 0.418 (two calls), chain
0.439 / 0.461 against 0.510 / 0.516; 4096^2 first pass 0.104 against 0.118, chain 0.176 against 0.193.
Issue 16's 0.2 / 0.060 ms are still 2.2x / 2.9x away.

**The last pass made by the last workgroup of the pass before it (helper h16last).** With the GPU forms
(``HANDOFF``), where the chain's last pass is small (the level it reads at most 16 texels long: 4096^2's
8x8 -> 1, 8192^2's 16x16 -> 1; not 16384^2's 32x32) and the pass before it reads kept sums, that pass's
workgroups hand their kept sums to the last of them to finish, which makes the last pass's levels
(``mip_spd_tail.wgsl``): one dispatch and one gap less. WGSL has no device-scope acquire/release
(atomics are relaxed, ``storageBarrier`` is workgroup-scoped), so a counter alone would not make the
others' plain stores visible to the last workgroup (SPD's "last workgroup continues"). What WGSL does
guarantee (its memory model is Vulkan's: atomics on storage memory are coherent per location) is used
instead: every word handed over is an atomic word that holds a sentinel before the pass, is written
once (``atomicStore``) by its one producer with a value that cannot be the sentinel (31 bits of a sum a
word), and is read (``atomicLoad``) until it is not the sentinel: that value is the one write, however
the other words' writes become visible. The counter only elects the reader, after every producer has
executed its stores; the reader writes the sentinels and the counter back, so the buffer is ready for
the next chain. The same integers, rounded by the same ``round_one``: the same bytes.

**Passes from sums anchored at their first level (tenth session).** With the GPU forms a pass from kept
sums makes five levels, a thread a texel of its first level from its 2x2 sums and the tile's levels from its
second (``ANCHOR_FIRST``, ``ANCHOR_SUBS``), where that plan needs no more dispatches than passes of six
(:func:`chain_plan`): 4096^2's second pass has 256 workgroups, not 64. H200 (f5e809d against 2fc7941, one call,
``benchmarks/results/mips-h200-s33-final.txt``): 4096^2 0.1397 against 0.1498 ms (passes 0.0970 + 0.0362);
8192^2 keeps its plan (0.419 ms).

**The first pass by an entry point of its own (helper h16entry, eleventh session).** With the GPU forms
the three-level first pass is compiled from ``first_main`` (``FIRST_ENTRY``; ``mip_spd_first.wgsl``, put
into that pipeline's text only): main's path for that pass and nothing else (no passes from sums, no
footprint loops), the same calls, the same bytes; every other pipeline's text is main's as before. Why: on
the H200 the first pass moved by 22% with code it never runs (the tenth session). H200, one call
(``benchmarks/results/mip-spd-variants-h200-s34-call1.txt``): first pass 0.0927-0.0936 against
0.0963-0.0972 ms at 4096^2, 0.3332-0.3334 against 0.3444-0.3445 at 8192^2 (-3%).

The self-check (:func:`self_check`) runs once per session and kind of chain: a 128x32 chain
(seven levels: two passes, tiles cut by the image's edge, levels one texel high, and with the GPU
forms a second pass of 2x2 footprints of kept sums, anchored at its first level: ``ANCHOR_SUBS``) whose bytes must
equal ``intbox.model_chain``'s. An adapter that disagrees gets the integer chain instead, and the
report says so (where only the subgroup form disagrees, the rounds: :func:`subgroup_note`; where the
hand-off's own check disagrees, a 2048x2 chain that crosses it, made before the first chain that
would fold: :func:`handoff_checked`, the last pass a dispatch of its own: :func:`handoff_note`; where
the passes from sums anchored at their second level disagree, checked before the first chain that
takes them where the GPU forms could anchor them at their first: :func:`second_checked`, passes
anchored first: :func:`second_note`). A
texture whose levels are stored is checked through a stored 128x32 chain; where that disagrees and the
buffer's passes, the chain takes the buffer (:func:`.stored.store_note` says so in the report).
"""

from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING

from ..layout import align_up, mip_count
from .integer import int_ok, slots, tables_buffer
from .stored import STORED_FORMATS, check_key, checked, store_failed, stores

if TYPE_CHECKING:
    from ..texture import Texture

__all__ = ["LEVELS_PER_PASS", "spd_plan", "first_pass_levels", "spd_ok", "spd_chain", "self_check", "subgroups_on",
           "subgroup_note", "handoff_on", "handoff_note", "second_checked", "second_note", "pass_shapes",
           "rehearsal_shape", "chain_plan"]

#: Levels one dispatch makes (two in registers, four in a 16x16 tile of workgroup memory).
LEVELS_PER_PASS = 6
#: Accept the float estimate of a code where it is clearly inside the code's interval (False:
#: every code from the exact search; the tests compare both).
SCREEN = True
#: Words of sums a texel keeps per slot (sums stay below 2**96: intbox.MAX_BASE_TEXELS).
_WORDS = 3
#: 8-bit sRGB: copy the code tables into workgroup memory first (a GPU's random lookups in a
#: storage buffer touch many cache lines). None: on every adapter but a CPU one (lavapipe: the
#: same memory either way, and the copy's barrier costs ~2% of a 2048^2 chain); the tests force both.
SMEM_TABLES: bool | None = None
#: With the GPU forms, a pass of one workgroup (a chain's last) copies the tables into workgroup
#: memory too (False: it reads its few codes' thresholds from the buffer, without the copy's barrier
#: on its chain of dependent steps). Measured neutral on the H200 (4096^2's last pass 0.0257 ms
#: without the copy, 0.0249 with it, one run each).
SMEM_TABLES_ALONE = False
#: Levels 3.. of a pass summed one level a barrier (None: on every adapter but a CPU one, where
#: two rounds of two levels each cost less; the same bytes either way, the tests run both).
ROUND_A_LEVEL: bool | None = None
#: The subgroup form of a first pass's level 3 (lanes exchanging their integer sums instead of a
#: round of workgroup memory and a barrier; the same bytes): None: on every adapter but a CPU one
#: whose device has wgpu-native's ``subgroup`` feature, with ``ROUND_A_LEVEL``'s forms; the tests
#: force it on lavapipe. H200, with the three-level first pass: 4096^2 0.234 -> 0.207 ms, 8192^2
#: 0.677 -> 0.570 ms (mip_spd.wgsl's SG_LEVEL4 says what was slower).
SUBGROUPS: bool | None = None
#: Levels of the chain's first pass. None: ``SPLIT_FIRST`` with ``ROUND_A_LEVEL``'s forms (GPUs) where
#: those levels' sums fit in a binding, else as many as the other passes (``first_pass_levels``).
FIRST_PASS_LEVELS: int | None = None
#: The GPU forms' first pass: levels 1-3 (a tile's level-3 texels from its lanes, no workgroup memory
#: rounds), their last level's sums kept; the passes after it make six levels each from them. H200
#: (``benchmarks/results/mips-h200-7a57f9b.txt``, the variants): 4096^2 0.247 -> 0.207 ms, 8192^2
#: 0.797 -> 0.570 ms against a first pass of six levels; two levels (9394853) 0.226 / 0.671, four
#: 0.234 / 0.659 (level 4 from the lanes too 0.229 / 0.649).
SPLIT_FIRST = 3
#: Tiles of 16x16 anchor texels a workgroup of a first pass of three levels made by the subgroup
#: form (``mip_spd.wgsl``'s ``WG_SIZE``): (1, 1) 256 invocations, (2, 1) 512, (2, 2) 1024 (where the
#: device allows them), the tables copied and waited for once for them all. H200, that first pass at
#: 4096^2 / 8192^2 (``benchmarks/results/mip-spd-variants-h200-h16base.txt``): 256 invocations 0.133 /
#: 0.476 ms, 512 0.115 / 0.413, 1024 0.130 / 0.465.
GROUP_TILES: tuple[int, int] = (2, 1)
#: With the GPU forms, 8-bit sRGB codes (levels 1-2 of a first pass, and round_one's) from one word a
#: bucket (``intbox.code_words``, read from the tables' storage buffer) and integer comparisons of the
#: estimate's bits, instead of the bucket's code and three float thresholds from workgroup memory; a
#: first pass then copies only the sRGB table into workgroup memory (None: with the GPU forms). H200,
#: first pass at 8192^2 (``benchmarks/results/mip-spd-variants-h200-h16lut.txt``, call 1): 0.344 ms
#: with it and the two forms below, 0.466 without it; the code words in workgroup memory (7 KB) 0.461.
CODE_WORDS: bool | None = None
#: With the GPU forms, a first pass's base codes from an 8-bit RGBA linear view by ``pack4x8unorm``
#: (``mip_spd.wgsl``'s texel_codes_pack; None: with the GPU forms). H200: 0.362 ms without it (call 1).
PACK_CODES: bool | None = None
#: With the GPU forms and the subgroup form, an 8-bit first pass's level 3 summed across lanes in
#: 32-bit words (``mip_spd.wgsl``'s sg_level3n; None: with them). H200: 0.380 ms without it (call 1).
SG_NARROW: bool | None = None
#: With the GPU forms, the chain's last pass (a small one: one workgroup) made by the last workgroup of
#: the pass before it, in the same dispatch (mip_spd_tail.wgsl: the kept sums handed over through
#: self-validating atomic words and a counter; its comments say why WGSL's memory model guarantees it).
#: None: with the GPU forms, where the self-check of a chain that crosses it passed (:func:`handoff_checked`).
HANDOFF: bool | None = None
#: The hand-off's bound: the long side of the level handed over (so at most 16x16 texels, one an
#: invocation, and 85 texels made from it: mip_spd.wgsl's level slots). A bound on the long side alone,
#: so that a chain and its rehearsal (:func:`rehearsal_shape`: the same long side) fold alike.
TAIL_SIDE = 16
#: With the GPU forms, the passes from stored sums anchored at their first level (``ANCHOR_SUBS`` in
#: mip_spd.wgsl: a thread a first-level texel from its 2x2 sums, the tile's levels from the second
#: on): ``SUMS_LEVELS`` levels a pass at most, up to four times the workgroups of passes anchored at
#: their second level (twice on a strip; 4096^2's second pass: 256 workgroups, not 64, for the H200's 132
#: SMs). Where both
#: plans are possible the chain takes the one of fewer dispatches, this one on a tie (:func:`chain_plan`).
#: H200 (``benchmarks/results/mip-spd-variants-h200-s33-final.txt``, variant ``noaf`` without it): 4096^2
#: 0.1491-0.1501 -> 0.1392 ms (second pass 0.046 -> 0.036); at 8192^2 it would make the last pass from a
#: 32x32 kept level, which the hand-off does not take, so 8192^2 keeps the other plan (its second pass
#: already has 256 workgroups; anchored first it was 5% slower, the last pass a dispatch of its own; a
#: hand-off taking a 32x32 level, halved as it was read, as slow: ``...-s33-call1.txt``). None: with the
#: GPU forms.
ANCHOR_FIRST: bool | None = None
#: Levels of a pass from stored sums anchored at its first level (the anchor and the tile's four).
SUMS_LEVELS = 5
#: What such a pass substitutes into mip_spd.wgsl (its defaults: anchored at the second level; placeholders,
#: so that the other passes' code stays the text it was: on the H200 the first pass is sensitive to code it
#: never runs, mip_spd.wgsl's child_sums says how much).
ANCHOR_SUBS = {"ANCHOR_R": "0u", "ANCHOR_LV": "0u", "ANCHOR_NEXT": "1u", "QUAD_IF": "all(fs == vec2<u32>(2u))",
               "QUAD_SUMS": "child_sums"}
#: With the code words (``CODE_WORDS``), a pass from stored sums copies the tables into workgroup memory
#: too (False: it does not, and its few readers of them read the tables' buffer: round_one's sRGB codes
#: come from the code words there anyway, and only finalize's round_fast, on footprints that are not
#: 2x2 such as a strip's, reads float thresholds; the copy and its barrier were each workgroup's first
#: steps). H200, call 2 of ``benchmarks/results/mip-spd-variants-h200-s33-call2.txt``: copying was
#: 0.3-1.2% slower at 4096^2 and 8192^2, within noise.
SUMS_TABLES = False
#: With the GPU forms, the three-level first pass compiled from an entry point of its own (``first_main``,
#: ``mip_spd_first.wgsl``: only what that pass executes, main's path for it, none of main's other paths;
#: :func:`_first_entry` says where). Why: on the H200 that pass's time moved by 22% with a change to code
#: it never runs (mip_spd.wgsl's child_sums); with its own entry it is 3% faster (H200, eleventh session).
#: None: on where :func:`_first_entry`'s conditions hold (they ask for the GPU forms); False: main
#: (``benchmarks/mip_spd_variants.py``'s ``nofirst``).
FIRST_ENTRY: bool | None = None
#: The pass's substitutions the first entry's text takes (mip_spd_first.wgsl's placeholders).
FIRST_KEYS = ("SG_ARGS", "SG_INDEX", "WG_SIZE", "WG_TX")
#: What the subgroup form substitutes into mip_spd.wgsl (its defaults: no subgroups).
SG_SUBS = {"SG_ARGS": ", @builtin(subgroup_id) sg_id: u32, @builtin(subgroup_invocation_id) sg_lane: u32, "
                      "@builtin(subgroup_size) sg_size: u32",
           "SG_INDEX": "(sg_id * sg_size + sg_lane)", "SG_SIZE": "sg_size", "SG_XOR": "subgroupShuffleXor",
           "SG_ON": "true", "SG_LEVELS": "sg_levels"}


def _size(w: int, h: int, level: int) -> tuple[int, int]:
    return max(1, w >> level), max(1, h >> level)


def spd_plan(width: int, height: int, levels: int, per: int = LEVELS_PER_PASS,
             first: int | None = None, later: int | None = None) -> list[tuple[int, int]] | None:
    """The passes ``(source level, levels made)`` of the chain (at most ``per`` levels a pass, the
    first pass ``first`` and the passes from stored sums ``later`` where given), or None where some
    level does not halve (or keep at 1) an axis of the level before it."""
    for lv in range(1, levels):
        for a, b in zip(_size(width, height, lv - 1), _size(width, height, lv)):
            if a != 2 * b and not a == b == 1:
                return None
    head = min(first or per, per, levels - 1)
    step = min(later or per, per)
    return [(0, head)] * (levels > 1) + [(s, min(step, levels - 1 - s)) for s in range(head, levels - 1, step)]


def subgroups_on(session) -> bool:
    """Whether the chain's GPU forms take level 3 from the lanes (``SUBGROUPS``) on ``session``: the
    device has wgpu-native's ``subgroup`` feature and the form has not failed its self-check there
    (:func:`self_check`)."""
    wanted = SUBGROUPS if SUBGROUPS is not None else session.info.adapter_type != "CPU"
    return bool(wanted) and "subgroup" in session.features and session.cache("mip-spd").peek(_NO_SG) is None


#: The session cache's entry saying the subgroup form failed its self-check (its value: why).
_NO_SG = ("subgroups-failed",)


#: The session cache's entry saying the hand-off failed its self-check (its value: why).
_NO_HANDOFF = ("handoff-failed",)


def handoff_on(session) -> bool:
    """Whether the chain's last pass is folded into the pass before it on ``session`` (``HANDOFF``; the
    GPU forms only), the hand-off not having failed its self-check there."""
    wanted = HANDOFF if HANDOFF is not None else True
    return bool(wanted) and gpu_forms(session) and session.cache("mip-spd").peek(_NO_HANDOFF) is None


def fold(size, plan, views: int | None) -> bool:
    """Whether ``plan``'s last pass is made by the last workgroup of the pass before it (``size(level)``:
    its (width, height); ``views``: the storage textures a shader stage may bind where the levels are
    stored, else None): that pass reads kept sums (not the base) and makes three levels or more, the
    level it keeps is at most ``TAIL_SIDE`` texels long, and both passes' write views fit."""
    if len(plan) < 2:
        return False
    (s0, n0), (s1, n1) = plan[-2], plan[-1]
    return (s0 > 0 and n0 > 2 and max(size(s1)) <= TAIL_SIDE and n1 <= LEVELS_PER_PASS
            and (views is None or views >= 2 * LEVELS_PER_PASS))


def _views(session, stored: bool) -> int | None:
    return session.limits.get("max-storage-textures-per-shader-stage", 4) if stored else None


def gpu_forms(session) -> bool:
    """Whether the chain takes its GPU forms on ``session`` (``ROUND_A_LEVEL``; None: a GPU adapter)."""
    return ROUND_A_LEVEL if ROUND_A_LEVEL is not None else session.info.adapter_type != "CPU"


def anchor_first(session) -> bool:
    """Whether the chain's passes from stored sums may be anchored at their first level on ``session``
    (``ANCHOR_FIRST``; the GPU forms only): :func:`chain_plan` chooses."""
    return gpu_forms(session) and (ANCHOR_FIRST if ANCHOR_FIRST is not None else True)


def chain_plan(session, width: int, height: int, levels: int, stored: bool,
               fits=lambda plan: True) -> tuple[list[tuple[int, int]], bool]:
    """The chain's passes on ``session`` (:func:`spd_plan`; ``stored``: levels written through the
    texture's views; ``fits(plan)``: its sums fit in their bindings, else a first pass as long as the
    others) and whether its passes from stored sums are anchored at their first level (``ANCHOR_FIRST``):
    of the plans with and without that, the one of fewer dispatches (a folded last pass is none:
    :func:`fold`), anchored at the first level on a tie."""

    def size(lv: int) -> tuple[int, int]:
        return _size(width, height, lv)

    per = _per_pass(session) if stored else LEVELS_PER_PASS
    best = None
    if not anchor_first(session) or getattr(_SECOND, "on", False):
        forms: tuple[bool, ...] = (False,)
    else:  # (the second-level form only where it has not failed its check: second_checked)
        forms = (True,) if session.cache("mip-spd").peek(_NO_SECOND) is not None else (True, False)
    for af in forms:
        later = SUMS_LEVELS if af else None
        plan = spd_plan(width, height, levels, per, first_pass_levels(session), later)
        if plan is None or not fits(plan):
            plan = spd_plan(width, height, levels, per, later=later)
        assert plan is not None
        runs = len(plan) - (handoff_on(session) and fold(size, plan, _views(session, stored)))
        if best is None or runs < best[0]:
            best = (runs, plan, af)
    assert best is not None
    return best[1], best[2]


def first_pass_levels(session) -> int | None:
    """Levels of a chain's first pass on ``session`` (``FIRST_PASS_LEVELS``; None: as many as the
    other passes); :func:`spd_chain` takes it where the sums it keeps fit in a binding."""
    if FIRST_PASS_LEVELS is not None:
        return FIRST_PASS_LEVELS
    return SPLIT_FIRST if gpu_forms(session) else None


def _fits(tex: Texture, plan: list[tuple[int, int]]) -> bool:
    """Whether each pass's output layout and kept sums fit in a binding."""
    limit = _limit(tex.session)
    nslots = slots(tex.format.channels)
    return all(_out_bytes(tex, s, n)[-1][0] <= limit
               and tex.size(s + n)[0] * tex.size(s + n)[1] * nslots * _WORDS * 4 <= limit for s, n in plan)


def _per_pass(session) -> int:
    """Levels a storing pass makes: one write view each, within the device's
    ``max-storage-textures-per-shader-stage`` (WebGPU's default 4; ``device.py`` asks for the
    adapter's)."""
    return max(1, min(LEVELS_PER_PASS, session.limits.get("max-storage-textures-per-shader-stage", 4)))


def _first_entry(size, src: int, consts: dict, known: dict, subs: dict) -> bool:
    """Whether the pass making levels ``src + 1 ..`` (``size(level)``: its (width, height)) is made from
    ``first_main`` (``FIRST_ENTRY``): where main would take exactly that entry's path: the first pass
    (the base), 8-bit, the GPU forms with the screen (mip_spd.wgsl's ONE), level 3 from the lanes in
    32-bit words (``subs``: the subgroup form with SG_NARROW), three levels (``known``: PASS_LEVELS) whose
    third halves both axes of the second (SG_TILE), so that levels 1 and 2 halve both axes too (QUAD's
    footprints; checked again here). Elsewhere (and on CPU adapters, whose forms are not the GPU ones)
    main."""
    return bool(FIRST_ENTRY is not False and src == 0 and consts["ROUND_A_LEVEL"] and consts["BITS"] == 8 and consts["SCREEN"]
                and subs.get("SG_LEVEL3N") == "sg_level3n" and subs.get("SG_NARROW") == "true"
                and known.get("PASS_LEVELS") == 3 and known.get("SG_TILE") == 1
                and all(a == 2 * b for lv in (0, 1) for a, b in zip(size(lv), size(lv + 1))))


def _group_tiles(session, src: int, known: dict, sg: bool) -> tuple[int, int]:
    """Tiles a workgroup of this pass takes (``GROUP_TILES``): only a first pass of three levels made
    by the subgroup form (no workgroup memory but the tables), where the device allows the size."""
    tx, ty = GROUP_TILES
    lim = session.limits
    if (tx * ty == 1 or src != 0 or not sg or known.get("PASS_LEVELS") != 3 or known.get("SG_TILE") != 1
            or lim.get("max-compute-invocations-per-workgroup", 256) < 256 * tx * ty
            or lim.get("max-compute-workgroup-size-x", 256) < 256 * tx * ty):
        return 1, 1
    return tx, ty


def _out_bytes(tex: Texture, src: int, n: int) -> list[tuple[int, int]]:
    """(byte offset, row pitch) of each level of a pass in its output buffer, then (the buffer's
    size, 0)."""
    out, off = [], 0
    for lv in range(src + 1, src + n + 1):
        w, h = tex.size(lv)
        pitch = align_up(w * tex.format.block_bytes, 256)
        out.append((off, pitch))
        off += pitch * h
    return out + [(off, 0)]


def _limit(session) -> int:
    return min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 1 << 30)


def spd_ok(tex: Texture, filter: str, normal_map: bool, coverage) -> bool:
    """Whether this chain can make ``tex``'s box mips (the integer chain's cases that tile)."""

    if not int_ok(tex, filter, normal_map, coverage):
        return False
    plan = spd_plan(tex.width, tex.height, tex.levels)
    return plan is not None and _fits(tex, plan)


def _params(tex: Texture, src: int, n: int, layout: list[tuple[int, int]]) -> bytes:
    """Params of mip_spd.wgsl: the source size, then per level its size and log2 texel ratio
    to the source, and its output offset, pitch (words) and log2 of base texels per texel."""
    sw, sh = tex.size(src)
    total = tex.width * tex.height
    lv = b"".join(struct.pack("<4I", *tex.size(src + 1 + i), (sw // tex.size(src + 1 + i)[0]).bit_length() - 1,
                              (sh // tex.size(src + 1 + i)[1]).bit_length() - 1) for i in range(n))
    mt = b"".join(struct.pack("<4I", layout[i][0] // 4, layout[i][1] // 4,
                              (total // (tex.size(src + 1 + i)[0] * tex.size(src + 1 + i)[1])).bit_length() - 1, 0)
                  for i in range(n))
    pad = b"\0" * 16 * (6 - n)
    return struct.pack("<4I", sw, sh, n, slots(tex.format.channels)) + lv + pad + mt + pad


def spd_chain(tex: Texture, alpha: str, layer: int = 0, measure: bool = False):
    """Fill levels 1.. of ``tex`` with the single-pass integer chain. Returns (sources, gpu_ns,
    pass_ns): the source of each level is its pass's source (the base or the stored sums)."""
    from ..kernels import submit_timed, timestamps

    session, device, fmt = tex.session, tex.session.device, tex.format
    stored = stores(tex, alpha)

    def best_plan() -> tuple[list[tuple[int, int]], bool]:  # (again where a form's check has failed since)
        return chain_plan(session, tex.width, tex.height, tex.levels, stored, lambda plan: _fits(tex, plan))

    def folds(plan) -> bool:
        return handoff_on(session) and fold(tex.size, plan, _views(session, stored))

    plan, af = best_plan()
    gpu = session.info.adapter_type != "CPU"
    # (the base is read through a view of the GPU texture's own format: a stored texture's linear one)
    consts = {"CHANNELS": fmt.channels, "BITS": fmt.bits, "SRGB": tex.color_space == "srgb",
              "SRGB_VIEW": tex.texture.format.endswith("-srgb"), "WEIGHTED": alpha == "weighted", "BGRA": fmt.bgra,
              "SCREEN": SCREEN,
              "SMEM_TABLES": fmt.bits == 8 and tex.color_space == "srgb"
              and (SMEM_TABLES if SMEM_TABLES is not None else gpu),
              "ROUND_A_LEVEL": gpu_forms(session)}
    consts["CODE_WORDS"] = bool(consts["ROUND_A_LEVEL"] and fmt.bits == 8 and consts["SRGB"]
                                and (CODE_WORDS if CODE_WORDS is not None else True))
    sg = consts["ROUND_A_LEVEL"] and subgroups_on(session)
    wants = folds(plan)
    folded = wants and handoff_checked(tex, alpha, stored)
    if wants and not folded:  # (its check failed: the plan of fewest dispatches without it)
        plan, af = best_plan()
    if not af and len(plan) > 1 and anchor_first(session) and not second_checked(tex, alpha, stored):
        # (the second-level form failed its check: anchored at the first level, whatever the dispatches)
        plan, af = best_plan()
        folded = folds(plan) and handoff_checked(tex, alpha, stored)
    key = ("spd", layer, stored, sg, folded, af, FIRST_ENTRY, tuple(plan), tuple(sorted(consts.items())))
    kept = tex.extras.get(key) if tex.extras is not None else None
    owned: list = []
    runs = _runs(plan, folded)
    try:
        if kept is None:
            kept = _resources(tex, plan, consts, layer, owned, stored, sg, folded, af)
        query = timestamps(session, len(plan) + 4) if measure else None
        enc = device.create_command_encoder()
        sources = []
        for pi, ((src, n), lay, (pipe, bind, (tx, ty), anchored)) in enumerate(zip(runs, kept[0], kept[1])):
            if fmt.block_bytes < 4 and not stored:
                enc.clear_buffer(kept[2], 0, lay[-1][0])
            gx, gy = _groups(tex, plan[pi], (tx, ty), anchored)
            ts = query.next() if query else None
            cpass = enc.begin_compute_pass(timestamp_writes=ts) if ts else enc.begin_compute_pass()
            cpass.set_pipeline(pipe)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(gx, gy, 1)
            cpass.end()
            for i in range(0 if stored else n):
                w, h = tex.size(src + 1 + i)
                enc.copy_buffer_to_texture(
                    {"buffer": kept[2], "offset": lay[i][0], "bytes_per_row": lay[i][1], "rows_per_image": h},
                    {"texture": tex.texture, "mip_level": src + 1 + i, "origin": (0, 0, layer)}, (w, h, 1))
            sources += [src] * plan[pi][1] + ([plan[-1][0]] * plan[-1][1] if n != plan[pi][1] else [])
        gpu_ns, pass_ns = submit_timed(session, enc, query, f"{tex.source}: mip chain (integer, single pass)")
        if tex.extras is not None and owned:
            # a pooled texture (gputex.texture.reusing): the next input of its size reuses them
            tex.extras[key] = kept
            tex.extras.setdefault("destroy", []).extend(owned)
            owned = []
    finally:
        for b in owned:
            b.destroy()
    return sources, gpu_ns, pass_ns


def _runs(plan: list[tuple[int, int]], folded: bool) -> list[tuple[int, int]]:
    """The dispatches of ``plan`` as (source level, levels written): folded (:func:`fold`), the last
    pass's levels are written by the dispatch before it, after its own (its layout, its copies)."""
    return plan[:-2] + [(plan[-2][0], plan[-2][1] + plan[-1][1])] if folded else plan


def _anchor(step: tuple[int, int], anchored: bool) -> int:
    """The anchor level of pass ``step``: its second level (or its only one); its first where it is
    ``anchored`` there (:func:`_anchored`, ``ANCHOR_SUBS``)."""
    src, n = step
    return src + (1 if anchored else min(2, n))


def _groups(tex: Texture, step: tuple[int, int], tiles: tuple[int, int], anchored: bool) -> tuple[int, int]:
    """Workgroups (x, y) of the dispatch of pass ``step`` (its anchor level in tiles of 16 x 16 texels,
    ``tiles`` of them a workgroup; ``anchored``: at its first level, :func:`_anchored`)."""
    aw, ah = tex.size(_anchor(step, anchored))
    return -(-aw // (16 * tiles[0])), -(-ah // (16 * tiles[1]))


def _tail_params(tex: Texture, step: tuple[int, int], lay: list[tuple[int, int]], groups: int) -> bytes:
    """mip_spd_tail.wgsl's Tail of a folded last pass ``step`` (its levels' output at ``lay``): the kept
    level's size, the levels, the producing dispatch's workgroups; per level its size, log2 of base
    texels per texel, output offset and pitch (words)."""
    src, n = step
    total = tex.width * tex.height
    lv, pitch = b"", b""
    for i in range(n):
        w, h = tex.size(src + 1 + i)
        lv += struct.pack("<4I", w, h, (total // (w * h)).bit_length() - 1, lay[i][0] // 4)
        pitch += struct.pack("<4I", lay[i][1] // 4, 0, 0, 0)
    pad = b"\0" * 16 * (LEVELS_PER_PASS - n)
    return struct.pack("<4I", *tex.size(src), n, groups) + lv + pad + pitch + pad


def _anchored(src: int, n: int, af: bool) -> bool:
    """Whether a pass making levels ``src + 1 .. src + n`` of a chain whose plan asks for it (``af``:
    :func:`chain_plan`) is anchored at its first level (``ANCHOR_SUBS``): a pass from sums whose levels fit."""
    return af and src > 0 and n <= SUMS_LEVELS


def _pass_constants(size, src: int, n: int, af: bool) -> dict:
    """The GPU forms' pipeline constants of a pass making levels ``src + 1 .. src + n`` (``size(level)``:
    its (width, height)): its shape (mip_spd.wgsl's ``PASS_LEVELS``; a first pass's ``SG_TILE``:
    level 3 halves both axes of level 2; passes from sums never take the subgroup form), and no table
    copy for a pass of one workgroup (``af``: the plan's passes from sums are anchored at their first
    level where they fit, :func:`_anchored`)."""
    known = {"PASS_LEVELS": n}
    if src == 0:
        known["SG_TILE"] = int(n > 2 and all(a == 2 * b for a, b in zip(size(src + 2), size(src + 3))))
    aw, ah = size(_anchor((src, n), _anchored(src, n, af)))
    if -(-aw // 16) * -(-ah // 16) == 1 and not SMEM_TABLES_ALONE:
        known["SMEM_TABLES"] = False
    return known


def pass_shapes(session, width: int, height: int) -> list[list[tuple]]:
    """What the pipelines of a full chain over a power-of-two ``width`` x ``height`` image depend on
    besides its format and alpha, pass by pass, on ``session`` (for levels stored or not): the
    source level, the levels made, whether the pass keeps sums, and the GPU forms' constants.
    Two sizes with the same shapes make the same pipelines (the run's rehearsal, ``run.py``)."""
    levels = max(width, height).bit_length()

    def size(lv: int) -> tuple[int, int]:
        return _size(width, height, lv)

    forms = gpu_forms(session)
    shapes = []
    for stored in (False, True):
        plan, af = chain_plan(session, width, height, levels, stored)
        shape = [(src, n, src + n < levels - 1, _anchored(src, n, af),
                  tuple(sorted(_pass_constants(size, src, n, af).items())) if forms else ()) for src, n in plan]
        # (the last pass folded into the one before it: one pipeline less)
        folded = handoff_on(session) and fold(size, plan, _views(session, stored))
        shapes.append(shape[:-1] + [("folded",)] if folded else shape)
    return shapes


def rehearsal_shape(session, width: int, height: int) -> tuple[int, int]:
    """(height, width) of the smallest image whose single-pass chain makes the pipelines of a
    power-of-two ``width`` x ``height`` one on ``session`` (:func:`pass_shapes`): its long side
    kept, the short one the smallest power of two with the same pass shapes (one texel where the
    chain's forms do not depend on it: CPU adapters' forms)."""
    want = pass_shapes(session, width, height)
    long, short = max(width, height), min(width, height)
    s = 1
    while s < short:
        w, h = (long, s) if width >= height else (s, long)
        if pass_shapes(session, w, h) == want:
            break
        s *= 2
    return (s, long) if width >= height else (long, s)


def _resources(tex: Texture, plan, consts: dict, layer: int, owned: list, stored: bool = False, sg: bool = False,
               folded: bool = False, af: bool = False):
    """What a chain over ``tex`` records its passes with: (each pass's output layout, each
    pass's (pipeline, bind group), the output buffer); the buffers it makes go into ``owned``.
    ``stored``: each pass binds its levels' write views (bindings 6-11) and no output buffer.
    ``folded``: the last pass is made by the pass before it (:func:`fold`): no pipeline of its own,
    its levels in that pass's layout after its own, that pass binds the tail's uniform, the hand-off
    buffer and (stored) the tail's write views (bindings 12, 13, 14-19)."""
    import wgpu

    from .. import kernels
    from ..kernels import compute_pipeline
    from .common import integer_entries
    from .common import stand_in as stand_in_view

    session, device, fmt = tex.session, tex.session.device, tex.format
    nslots = slots(fmt.channels)
    entries = integer_entries("sursr")
    subs = {}
    if stored:
        st = {"access": wgpu.StorageTextureAccess.write_only, "format": tex.storage, "view_dimension": "2d"}
        entries += [{"binding": 6 + i, "visibility": wgpu.ShaderStage.COMPUTE, "storage_texture": st}
                    for i in range(LEVELS_PER_PASS)]
        subs = {"LEVEL_OUT": "store_level", "STORE_FORMAT": tex.storage}
    if sg:
        subs.update(SG_SUBS)
    if consts["ROUND_A_LEVEL"]:  # (the GPU forms' code: CPU adapters' compilers never see it)
        subs["QUAD_SUMS"] = "quad_sums"
        if consts["CODE_WORDS"]:
            subs["WORD_CODE"] = "word_code"
        if PACK_CODES if PACK_CODES is not None else True:
            subs["TEXEL_CODES"] = "texel_codes_pack"
        if sg and (SG_NARROW if SG_NARROW is not None else True):
            subs.update({"SG_LEVEL3N": "sg_level3n", "SG_NARROW": "true"})
    tables = tables_buffer(session, fmt.bits, tex.color_space == "srgb", float_thresholds=True)
    layouts = [_out_bytes(tex, s, n) for s, n in _runs(plan, folded)]

    def buffer(size, usage, what):
        b = session.check(f"{tex.source}: {what}", device.create_buffer, size=max(16, size), usage=usage)
        owned.append(b)
        return b

    def whole(b):
        return {"buffer": b, "offset": 0, "size": b.size}

    out = buffer(16 if stored else max(lay[-1][0] for lay in layouts),
                 wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST, "mip output buffer")
    stand_in = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")
    stand_in_w = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")
    # the GPU texture's own format (codes as stored; consts' SRGB_VIEW says whether it decodes sRGB)
    base = tex.texture.create_view(base_mip_level=0, mip_level_count=1, base_array_layer=layer,
                                   array_layer_count=1, dimension="2d")
    sums = None
    passes = []
    for pi, ((src, n), lay) in enumerate(zip(plan, layouts)):
        store = src + n < tex.levels - 1
        hand = folded and pi == len(plan) - 2  # (this pass's last workgroup makes the last pass's levels)
        last = tex.size(src + n)
        new_sums = (buffer(last[0] * last[1] * nslots * _WORDS * 4, wgpu.BufferUsage.STORAGE, "mip level sums")
                    if store and not hand else None)
        known = _pass_constants(tex.size, src, n, af) if consts["ROUND_A_LEVEL"] else {}
        if src > 0 and consts["CODE_WORDS"] and not SUMS_TABLES:
            known["SMEM_TABLES"] = False
        anchored = _anchored(src, n, af)
        tiles = _group_tiles(session, src, known, sg)
        wg_subs = {"WG_SIZE": f"{256 * tiles[0] * tiles[1]}u", "WG_TX": f"{tiles[0]}u"} if tiles != (1, 1) else {}
        if anchored:
            wg_subs.update(ANCHOR_SUBS)
        pass_entries, extra = entries, []
        if hand:
            tail = kernels.load_wgsl("mip_spd_tail.wgsl", TAIL_OUT="tail_store" if stored else "tail_buffer",
                                     TAIL_FORMAT=tex.storage if stored else "rgba8unorm")
            wg_subs.update({"KEEP3": "keep_handoff", "HANDOFF_CALL": "tail_levels(t0);", "HANDOFF_CODE": tail})
            cs = wgpu.ShaderStage.COMPUTE
            pass_entries = entries + [
                {"binding": 12, "visibility": cs, "buffer": {"type": wgpu.BufferBindingType.uniform}},
                {"binding": 13, "visibility": cs, "buffer": {"type": wgpu.BufferBindingType.storage}}]
            if stored:
                pass_entries += [{"binding": 14 + i, "visibility": cs, "storage_texture": st} for i in range(LEVELS_PER_PASS)]
            s1, n1 = plan[-1]
            words = tex.size(s1)[0] * tex.size(s1)[1] * nslots * _WORDS
            handoff = session.check(f"{tex.source}: mip hand-off buffer", device.create_buffer_with_data,
                                    data=struct.pack("<I", 0) + b"\xff" * 4 * words, usage=wgpu.BufferUsage.STORAGE)
            owned.append(handoff)
            gx, gy = _groups(tex, (src, n), tiles, anchored)
            extra = [{"buffer": session.uniform(_tail_params(tex, plan[-1], lay[n:], gx * gy))}, whole(handoff)]
            extra += [tex.storage_view(s1 + 1 + i, layer) if i < n1 else stand_in_view(session, "storage", tex.storage)
                      for i in range(LEVELS_PER_PASS)] if stored else []
        pass_subs, entry = {**subs, **wg_subs}, "main"
        if _first_entry(tex.size, src, consts, known, pass_subs):  # (its text in this pipeline's module only)
            first = kernels.load_wgsl("mip_spd_first.wgsl", **{k: pass_subs[k] for k in FIRST_KEYS if k in pass_subs})
            pass_subs["FIRST_CODE"] = first
            entry = "first_main"
        pipe, bgl = compute_pipeline(session, "mip_spd.wgsl", pass_entries, entry=entry, subs=pass_subs,
                                     constants=dict(consts, FROM_SUMS=src > 0, STORE=store, **known))
        params = session.uniform(_params(tex, src, n, lay))  # released with its bind group
        views = [tex.storage_view(src + 1 + i, layer) if i < n else stand_in_view(session, "storage", tex.storage)
                 for i in range(LEVELS_PER_PASS)] if stored else []
        bind = device.create_bind_group(layout=bgl, entries=[
            {"binding": i, "resource": r} for i, r in enumerate(
                [base, whole(out), {"buffer": params}, whole(sums) if sums else whole(stand_in),
                 whole(new_sums) if new_sums else whole(stand_in_w), whole(tables)] + views)] + [
            {"binding": 12 + i, "resource": r} for i, r in enumerate(extra)])
        passes.append((pipe, bind, tiles, anchored))
        if hand:
            break
        sums = new_sums
    return layouts, passes, out


#: The self-check's image: seven levels in two passes, tiles cut by its edge, 1-texel-high levels;
#: with the GPU forms (a first pass of three) level 3 is 16x4, so the second pass reads its sums
#: by 2x2 footprints twice (``SUMS_QUAD``; 128x16, the check before, never did). Its model is
#: ~30 ms of Python here (128x16: 18, 256x32: 65).
CHECK_SIZE = (128, 32)
#: With the hand-off (:func:`handoff_on`), a chain that crosses it (:func:`handoff_checked`): 2048x2,
#: twelve levels in passes of 3, 6 and 2, the last two made by the last of the second pass's four
#: workgroups from the 4x1 level it kept (the model: as many texels as CHECK_SIZE's); with ANCHOR_FIRST
#: passes of 3, 5 and 3, the last three from an 8x1 level kept by the second pass's 8 workgroups.
HANDOFF_CHECK = (2048, 2)


_CHECKING = threading.local()
#: While set (``on``), chains take the plan whose passes from sums are anchored at their second level
#: (:func:`chain_plan`): :func:`second_checked`'s chain.
_SECOND = threading.local()
#: The session cache's entry saying the passes anchored at their second level failed their check (its
#: value: why), where the GPU forms could anchor them at their first.
_NO_SECOND = ("second-failed",)


def second_checked(tex: Texture, alpha: str, stored: bool) -> bool:
    """Before the first chain of a session and kind whose passes from sums are anchored at their second
    level while the GPU forms may anchor them at their first (:func:`chain_plan`: 8192^2's plan; the
    session's self-check ran the first form, :func:`self_check`), the self-check's chain with that form
    (``CHECK_SIZE``, its second pass anchored at its second level). Where its bytes are not
    ``intbox.model_chain``'s, this and every later chain of the session take the plan anchored first
    (:func:`second_note` says so in the report). Returns whether the second-level form may be used."""
    if getattr(_CHECKING, "on", False) or getattr(_SECOND, "on", False):
        return True
    return _form_checked(tex, alpha, stored, "second", _SECOND, CHECK_SIZE, _NO_SECOND)


def _form_checked(tex: Texture, alpha: str, stored: bool, name: str, flag: threading.local,
                  size: tuple[int, int], failed: tuple) -> bool:
    """Once per session and kind of chain, a form's own check: a ``size`` chain made with ``flag`` set
    (``on``) while it runs, whose bytes must be ``intbox.model_chain``'s; where they are not, the session
    cache's ``failed`` entry holds why. Returns whether they were."""
    from .integer import matches_model

    session, fmt = tex.session, tex.format
    storage = tex.storage if stored else ""

    def run() -> tuple[bool, str]:
        flag.on = True
        try:
            return matches_model(session, fmt, tex.color_space, alpha, spd_chain, size, mip_count(*size),
                                 storage=storage)
        finally:
            flag.on = False

    c = session.cache("mip-spd")
    ok, why = c.get((f"mip-spd-{name}-check", storage) + check_key(fmt, tex.color_space, alpha), run)
    if not ok:
        c.put(failed, why)
    return ok


def _failed_note(session, failed: tuple, what: str, instead: str) -> str:
    """The report's note where the session cache's ``failed`` entry says a form failed its check, else ""."""
    why = session.cache("mip-spd").peek(failed)
    if why is None:
        return ""
    return f"{session.name}: the single-pass mip chain's {what} self-check ({why}); {instead}"


def second_note(session) -> str:
    """``MipReport.note`` where the passes anchored at their second level failed their check on this
    session (:func:`second_checked`), else ""."""
    return _failed_note(session, _NO_SECOND, "passes anchored at their second level failed their",
                        "passes anchored at their first level were used")


def handoff_checked(tex: Texture, alpha: str, stored: bool) -> bool:
    """Before the first chain of a session and kind that would fold (:func:`fold`), a chain that crosses
    the hand-off (``HANDOFF_CHECK``; its own hand-off trusted while it runs): where its bytes are not
    ``intbox.model_chain``'s, this and every later chain of the session keep the last pass a dispatch
    of its own (:func:`handoff_note` says so in the report). Returns whether the hand-off may be used.
    (Here, not in :func:`self_check`: only chains of eleven levels or more pay for it.)"""
    if getattr(_CHECKING, "on", False):
        return True
    _form_checked(tex, alpha, stored, "handoff", _CHECKING, HANDOFF_CHECK, _NO_HANDOFF)
    return handoff_on(tex.session)


def handoff_note(session) -> str:
    """``MipReport.note`` where the hand-off failed its self-check on this session, else ""."""
    return _failed_note(session, _NO_HANDOFF, "hand-off to its last workgroup failed its",
                        "its last pass was a dispatch of its own")


def self_check(session, fmt, color_space: str, alpha: str, storage: str = "") -> tuple[bool, str]:
    """Once per session and kind of chain: this chain's bytes for a 128x32 image must be those of
    ``intbox.model_chain`` (its second pass anchored at its first level where the GPU forms may do
    that; the other form is checked before the first chain that takes it, :func:`second_checked`).
    Returns (passed, what differed). ``storage``: the texture's levels
    are stored through it; the stored chain is checked first, and where it disagrees the
    buffer's (the chain then takes the buffer: :func:`.stored.store_note`). Where the chain would take
    level 3 from the lanes (:func:`subgroups_on`), that form is checked first, on its own: an
    adapter whose subgroups disagree (lanes that are not what the form assumes) keeps the
    single-pass chain with the rounds in workgroup memory (:func:`subgroup_note` says so). Where
    the form disagrees only when it stores the levels (its buffer's bytes are right), the
    storing failed, not the lanes: the chain keeps the form and takes the buffer."""
    from .integer import matches_model

    def run(st: str) -> tuple[bool, str]:
        return matches_model(session, fmt, color_space, alpha, spd_chain, CHECK_SIZE, mip_count(*CHECK_SIZE),
                             storage=st)

    if gpu_forms(session) and subgroups_on(session):
        c = session.cache("mip-spd")
        ok, why = c.get(("mip-spd-sg-check", storage) + check_key(fmt, color_space, alpha), lambda: run(storage))
        if ok:
            return True, ""
        if storage and fmt.name in STORED_FORMATS and c.get(
                ("mip-spd-sg-check", "") + check_key(fmt, color_space, alpha), lambda: run(""))[0]:
            store_failed(session, fmt, color_space, alpha, "mip-spd", why)  # the storing, not the lanes
            return True, ""
        c.put(_NO_SG, why)  # every later chain of the session: the rounds
    return checked(session, fmt, color_space, alpha, storage, "mip-spd", run)


def subgroup_note(session) -> str:
    """``MipReport.note`` where the subgroup form failed its self-check on this session, else ""."""
    return _failed_note(session, _NO_SG, "subgroup form failed its", "its rounds in workgroup memory were used")
