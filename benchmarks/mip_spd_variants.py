"""Where the single-pass exact chain's GPU time goes (a profiling aid, not a speed target).

    python benchmarks/mip_spd_variants.py [--sizes 4096 8192] [--repeat 15]

Times ``mip_spd.wgsl`` (rgba8unorm-srgb, weighted alpha) as it is and with parts of it cut out
by text edits of the shader (the bytes of the cut variants are wrong; the self-check is skipped
for them): ``noround`` (finalize's codes, now only the screen's rare misses at levels 1-2 and the
16-bit / stored-sums passes, are a few bits of the sums), ``nofinal`` (levels 1-2 of an 8-bit first
pass get no codes), ``noencode`` (the base's sRGB codes are not re-encoded from the texture's
linear floats), ``both``, ``notile`` (levels 3.. of a pass, the ones made in workgroup memory, are
not made), ``notileround`` (... made but not rounded), ``nobarrier`` (their barriers cut),
``empty`` (the shader returns at once: dispatch overhead), ``nocopy`` (the levels are not copied
from the output buffer into the texture); next to the float chain and the speed of light,
measured as ``benchmarks/mips.py`` does (warm GPU, median of ``--repeat``). ``benchmarks/mips_cpu.py``
runs the same cuts on lavapipe (CPU time).

Variants that keep the bytes (the shader's overrides set by text edits of their defaults; each
one's levels hashed and compared with the first such variant's, "same bytes" or "DIFFER"):
``main`` (ONE_THRESHOLD off: main's first pass), ``one`` (exact_one, the base texels loaded in
the footprint loops: QUAD off), ``texel`` (levels 3.. summed a texel a thread, not a channel:
CHANNEL_ROUNDS off; it no longer keeps the bytes with the GPU forms, "DIFFER" at 68fabc7 already: a
combination production never makes, CHANNEL_ROUNDS being ROUND_A_LEVEL; not investigated), ``base``
(the defaults), ``nosmem`` (the tables read from the storage buffer), ``nosg``
(no subgroup form: levels 3.. through workgroup memory, h16pass's form),
``sg4`` (the subgroup form for levels 3 and 4), ``sgall`` (... in every pass), ``nosq`` (a pass
from stored sums through the footprint loops and finalize, not SUMS_QUAD), ``split2``, ``split3``,
``split4`` (a first pass of 2, 3 or 4 levels keeping their sums for the next: spd.FIRST_PASS_LEVELS;
3 is the default), ``split4sg`` (split4 with level 4 by the subgroup form too), ``nosplit`` (a
first pass of six levels, as the others), ``smemall`` (the tables copied into workgroup memory in
a pass of one workgroup too: spd.SMEM_TABLES_ALONE), ``nohand`` (the chain's last pass a dispatch of its
own, not made by the last workgroup of the pass before it: spd.HANDOFF off), ``noaf`` (the passes from sums
anchored at their second level, six levels a pass: spd.ANCHOR_FIRST off), ``sumstab`` (the passes from sums
copy the tables into workgroup memory: spd.SUMS_TABLES), ``nofirst`` (the three-level first pass
from main, not from its own entry point ``first_main`` in mip_spd_first.wgsl: spd.FIRST_ENTRY False).
Probes: ``noreach`` (word_code's exact comparison cut), ``handonly`` (the
hand-off's count and election, no tail levels),
``tileonly`` (a first pass's tile phase alone: the anchor sums made up, no loads), ``sqnoround`` (a
SUMS_QUAD pass's levels 1-2 not rounded), ``nokeep`` (the subgroup form's level 3 keeps no sums for
the next pass), ``sgnoround`` (... its codes not rounded). Cuts that only locate time
(wrong bytes): ``nosearch`` (the exact search cut out of round_fast), ``noexact`` (... and the
screen's fallback finalize), ``rawload`` (the base's codes are the view's floats times 255),
``sumonly`` (rawload + nofinal + notile: loads and sums alone); ``nofinal``, ``noexact``,
``rawload`` and ``sumonly`` cut the footprint loops' path, which the GPU form takes only
where QUAD does not apply (run them with ``main`` or ``one``).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mips as bench  # noqa: E402
import numpy as np  # noqa: E402

import gputex  # noqa: E402
import gputex.kernels as kernels  # noqa: E402
import gputex.mips.spd as spd  # noqa: E402

CUTS = {
    "noround": [("code = round_pow2(num, s);", "code = (num.x ^ num.y) & 255u;"),
                ("code = round_fast(num, select(w, a, covered && !alpha), srgb);",
                 "code = (num.x ^ num.y ^ a.x) & 255u;")],
    "noencode": [("v = vec4<f32>(srgb_encode3(clamp(v.rgb, vec3<f32>(0.0), vec3<f32>(1.0))), v.a);", "")],
}
CUTS["notileround"] = [("let code = round_one(lsums_get(slot), c, prm.mt[i].s);",
                         "let code = tile[3072u + slot] & 255u;")]
CUTS["nobarrier"] = [("        workgroupBarrier();\n        let i0", "        let i0"),
                      ("    workgroupBarrier();\n    // every", "    // every"),
                      ("    workgroupBarrier();\n    for (var i = 2u", "    for (var i = 2u")]
CUTS["nofinal"] = [("if (r == 1u && !finalize_narrow(0u, c.x, c.y, child)) {", "if (r == 1u && child.a == 12345u) {"),
                   ("if (!finalize_narrow(r, p.x, p.y, an)) {", "if (an.a == 12345u) {")]
CUTS["empty"] = [("    let n = prm.levels;\n", "    let n = prm.levels;\n    if (n < 64u) {\n        return;\n    }\n")]
CUTS["notile"] = [("    if (n <= 2u) {\n        return;\n    }", "    if (n <= 64u) {\n        return;\n    }")]
CUTS["both"] = CUTS["noround"] + CUTS["noencode"]
CUTS["nosearch"] = [("    return search_code(num, den, srgb, lo, hi, probe);\n}", "    return k;\n}")]
CUTS["noexact"] = CUTS["nosearch"] + [("            finalize(lv, q.x, q.y, wide(nn));\n", "")]
CUTS["rawload"] = [("    let c = load_codes(vec2<i32>(p));\n    var l = c;",
                    "    let c = vec4<u32>(textureLoad(src, vec2<i32>(p), 0) * 255.0);\n    var l = c;")]
CUTS["sumonly"] = CUTS["rawload"] + CUTS["nofinal"] + CUTS["notile"]


#: Variants that keep the bytes: their edits (the first one is what the others' bytes are checked against)
EXACT = {"main": [("override ONE_THRESHOLD: bool = ROUND_A_LEVEL;", "override ONE_THRESHOLD: bool = false;")],
         "one": [("override QUAD: bool = true;", "override QUAD: bool = false;")],
         "texel": [("override CHANNEL_ROUNDS: bool = ROUND_A_LEVEL;", "override CHANNEL_ROUNDS: bool = false;")],
         "base": [], "nosmem": [], "nosg": [],
         "nosq": [("override SUMS_QUAD: bool = ROUND_A_LEVEL;", "override SUMS_QUAD: bool = false;")],
         "sg4": [("override SG_LEVEL4: bool = false;", "override SG_LEVEL4: bool = true;")],
         "sgall": [("override SG_LEVEL4: bool = false;", "override SG_LEVEL4: bool = true;"),
                   ("CHANNEL_ROUNDS && !FROM_SUMS;", "CHANNEL_ROUNDS;")],
         "split2": [], "split3": [], "split4": [], "nosplit": [], "smemall": [],
         "split4sg": [("override SG_LEVEL4: bool = false;", "override SG_LEVEL4: bool = true;")]}
CUTS["tileonly"] = [("""        let an = quad_by_child(p);
        nar = an;
        acc = wide(an);
        finalize_narrow(1u, p.x, p.y, an);""", """        var an = zero_narrow();
        an.a = (p.x * 7u + p.y) & 4095u;
        an.sl = vec4<u32>((p.x * 13u) ^ p.y) & vec4<u32>(0xfffu);
        an.nl = an.sl * an.a;
        nar = an;
        acc = wide(an);""")]
CUTS["nokeep"] = [("            if (STORE && i + 1u == prm.levels) {\n"
                   "                store_sums((q.y * prm.lv[i].size.x + q.x) * SLOTS * 3u, sm);\n            }\n        }\n"
                   "        if (!SG_LEVEL4", "        }\n        if (!SG_LEVEL4")]
CUTS["sgnoround"] = [("            let code = round_one(sm, c, prm.mt[i].s) << (16u * (c & 1u));",
                      "            let code = ((sm.c0.x ^ sm.a.y) & 255u) << (16u * (c & 1u));")]
CUTS["sqnoround"] = [("    var codes = vec4<u32>(round_one(sm, 0u, s), 0u, 0u, 0u);\n    if (NC == 3u) {\n"
                      "        codes.y = round_one(sm, 1u, s);\n        codes.z = round_one(sm, 2u, s);\n    }\n"
                      "    if (HAS_ALPHA) {\n        codes.w = round_one(sm, NC, s);\n    }",
                      "    let codes = vec4<u32>(sm.c0.x, sm.c1.x, sm.c2.x, sm.a.x) & vec4<u32>(255u);")]
# h16base: the first pass's loads and levels 1-2. Byte-keeping: ``wg256``, ``wg1024`` (a first pass
# of three levels in workgroups of 1 or 4 tiles, not spd.GROUP_TILES's default 2), ``rep8`` (the sRGB
# table in workgroup memory eight times, a lane reading its own copy: fewer bank conflicts). Probes
# (wrong bytes): ``nolin`` (no sRGB table lookups: the codes shifted), ``noq`` (levels 1-2's codes a
# few bits of the float estimate: no bucket, threshold or exact comparison), ``cvt`` (QUAD's codes the
# loaded floats times 255, no floor/clamp), ``loadsonly`` (nolin + noq). Measured at 9b7998e and
# removed (slower or neutral; docs/performance.md, helper h16base): ``fused``, ``fastb``, ``pre``.
EXACT.update({"wg256": [], "wg1024": [],
              "rep8": [("var<workgroup> ltab: array<u32, 256>;", "var<workgroup> ltab: array<u32, 2048>;\nvar<private> lrep: u32;"),
                       ("        ltab[t] = tables[2u * t];",
                        "        for (var j = 0u; j < 8u; j++) {\n            ltab[8u * t + j] = tables[2u * t];\n        }\n"
                        "        lrep = t0 & 7u;"),
                       ("l = vec4<u32>(ltab[c.x & 255u], ltab[c.y & 255u], ltab[c.z & 255u], 0u);",
                        "l = vec4<u32>(ltab[8u * (c.x & 255u) + lrep], ltab[8u * (c.y & 255u) + lrep], "
                        "ltab[8u * (c.z & 255u) + lrep], 0u);")]})
CUTS["nolin"] = [("l = vec4<u32>(ltab[c.x & 255u], ltab[c.y & 255u], ltab[c.z & 255u], 0u);", "l = c << vec4<u32>(23u);")]
CUTS["noq"] = [("            col = vec3<u32>(bucket_code(xv.x), bucket_code(xv.y), bucket_code(xv.z));",
                "            col = vec3<u32>(xv) & vec3<u32>(255u);"),
               ("        col.x = exact_one(Big(wl[0].x, wl[1].x, 0u, 0u), d, xv.x, col.x, SRGB);\n        if (NC == 3u) {\n"
                "            col.y = exact_one(Big(wl[0].y, wl[1].y, 0u, 0u), d, xv.y, col.y, SRGB);\n"
                "            col.z = exact_one(Big(wl[0].z, wl[1].z, 0u, 0u), d, xv.z, col.z, SRGB);\n        }\n", "")]
CUTS["cvt"] = [(f"texel_codes_pack(t{i}))", f"vec4<u32>(t{i} * 255.0))") for i in range(4)]  # (PACK_CODES' name)
CUTS["loadsonly"] = CUTS["nolin"] + CUTS["noq"]
# h16lut: the first pass's lookups. Byte-keeping: ``old`` (main's forms before h16lut: spd.CODE_WORDS,
# PACK_CODES and SG_NARROW off), ``nowords`` (the bucket's code and the float thresholds from workgroup
# memory, exact_one: CODE_WORDS off), ``nopack`` (base codes by floor/clamp: PACK_CODES off), ``nosgn``
# (level 3 from the lanes in 96-bit sums: SG_NARROW off), ``wordsmem`` (the code words copied into
# workgroup memory, 7 KB, instead of read from the storage buffer); ``nosmem`` (no workgroup memory:
# the sRGB table from the storage buffer too) and ``wg1024`` exist above. Probes (wrong bytes):
# ``noword`` (levels 1-2's sRGB codes a few bits of the estimate: no word_code), ``nolin`` above. (``noq``
# and ``loadsonly`` cut the bucket/exact_one branch, which the GPU forms now take only with ``nowords``.)
# Measured and removed (docs/performance.md, helper h16lut): a form that finished the texels in doubt
# after the texels' path (DEFER_DOUBT; its variant ``nodefer`` was the kept form).
FLAGS: dict[str, dict[str, object]] = {"old": {"CODE_WORDS": False, "PACK_CODES": False, "SG_NARROW": False},
                                       "nowords": {"CODE_WORDS": False}, "nopack": {"PACK_CODES": False},
                                       "nosgn": {"SG_NARROW": False}}
EXACT.update({"old": [], "nowords": [], "nopack": [], "nosgn": [],
              "wordsmem": [("var<workgroup> btab: array<u32, 449>;",
                            "var<workgroup> btab: array<u32, 449>;\nvar<workgroup> cwtab: array<u32, 1793>;"),
                           ("    let w = tables[CODE_AT + u32(clamp(i32(xb >> 16u) - BUCKET_LOW, 0, BUCKETS - 1))];",
                            "    let cb = u32(clamp(i32(xb >> 16u) - BUCKET_LOW, 0, BUCKETS - 1));\n    var w = 0u;\n"
                            "    if (SMEM_TABLES) {\n        w = cwtab[cb];\n    } else {\n        w = tables[CODE_AT + cb];\n    }"),
                           ("        ltab[t] = tables[2u * t];\n",
                            "        ltab[t] = tables[2u * t];\n        if (CODE_WORDS) {\n"
                            "            for (var k = t; k < 1793u; k += 256u) {\n                cwtab[k] = tables[CODE_AT + k];\n"
                            "            }\n        }\n")]})
CUTS["noword"] = [("            col.x = word_code(Big(wl[0].x, wl[1].x, 0u, 0u), d, xv.x);\n            if (NC == 3u) {\n"
                   "                col.y = word_code(Big(wl[0].y, wl[1].y, 0u, 0u), d, xv.y);\n"
                   "                col.z = word_code(Big(wl[0].z, wl[1].z, 0u, 0u), d, xv.z);\n            }\n",
                   "            col = vec3<u32>(xv) & vec3<u32>(255u);\n")]
# h16last: ``nohand`` (the chain's last pass a dispatch of its own, not made by the last workgroup of
# the pass before it: spd.HANDOFF off; byte-keeping). Probe (wrong bytes): ``handonly`` (the hand-off's
# count and election, then no tail: what the folded pass costs without the last levels; not measured).
EXACT.update({"nohand": []})
# The tenth session: ``noaf`` (the passes from sums anchored at their second level, six levels a pass:
# spd.ANCHOR_FIRST off; byte-keeping), ``sumstab`` (the passes from sums copy the tables into workgroup
# memory, which they do not read with the code words: spd.SUMS_TABLES; byte-keeping). Measured and taken out:
# ``oldquad`` (quad_sums with child_sums' body written in instead of calling it: now the code's form; see
# mip_spd.wgsl's child_sums). Measured and removed:
# the hand-off from a 32x32 kept level, halved as it was read (docs/performance.md).
EXACT.update({"noaf": [], "sumstab": []})
# h16entry (eleventh session): ``nofirst`` (the three-level first pass from main, not from its own entry
# point first_main: spd.FIRST_ENTRY False; byte-keeping). Measured and taken out: ``firstentry`` with
# sg_level3n's hand-over to the rounds made known dead in the entry's text (its first pass 0.5-1.4% slower
# than the kept form's, which was ``firstprm``). Probe (wrong bytes where a texel is in doubt): ``noreach`` (word_code's exact
# comparison cut: a code in doubt is taken as its estimate's).
EXACT.update({"nofirst": []})
CUTS["noreach"] = [("    return select(j - 1u, j, reaches(num, den, j, true));", "    return j;")]
# Eleventh session: the first pass's loads. Byte-keeping (rgba8 with a linear view, as ``--stored`` makes it):
# ``pairs`` (quad_by_child two children at a time: eight loads, then both finalized), ``prefetch`` (the next
# child's four texels loaded, as packed words, before this child is finalized). H200, eleventh session: both
# slower (first pass +26% / +3%; docs/performance.md). Their text names PACK_CODES'
# texel_codes_pack, which the GPU forms substitute.
QUAD_LOOP = """    for (var k = 0u; k < 4u; k++) {
        let c = 2u * p + vec2<u32>(k & 1u, k >> 1u);
        let b = vec2<i32>(2u * c);
        let t0 = textureLoad(src, b, 0);
        let t1 = textureLoad(src, b + vec2<i32>(1, 0), 0);
        let t2 = textureLoad(src, b + vec2<i32>(0, 1), 0);
        let t3 = textureLoad(src, b + vec2<i32>(1, 1), 0);
        var child = add_codes(zero_narrow(), texel_codes_pack(t0));
        child = add_codes(child, texel_codes_pack(t1));
        child = add_codes(child, texel_codes_pack(t2));
        child = add_codes(child, texel_codes_pack(t3));
        finalize_narrow(0u, c.x, c.y, child);
        an = sum_narrow(an, child);
    }
"""
EXACT["pairs"] = [(QUAD_LOOP, """    for (var k = 0u; k < 4u; k += 2u) {
        let c = 2u * p + vec2<u32>(0u, k >> 1u);
        let d = c + vec2<u32>(1u, 0u);
        let b = vec2<i32>(2u * c);
        let t0 = textureLoad(src, b, 0);
        let t1 = textureLoad(src, b + vec2<i32>(1, 0), 0);
        let t2 = textureLoad(src, b + vec2<i32>(0, 1), 0);
        let t3 = textureLoad(src, b + vec2<i32>(1, 1), 0);
        let t4 = textureLoad(src, b + vec2<i32>(2, 0), 0);
        let t5 = textureLoad(src, b + vec2<i32>(3, 0), 0);
        let t6 = textureLoad(src, b + vec2<i32>(2, 1), 0);
        let t7 = textureLoad(src, b + vec2<i32>(3, 1), 0);
        var child = add_codes(zero_narrow(), texel_codes_pack(t0));
        child = add_codes(child, texel_codes_pack(t1));
        child = add_codes(child, texel_codes_pack(t2));
        child = add_codes(child, texel_codes_pack(t3));
        var other = add_codes(zero_narrow(), texel_codes_pack(t4));
        other = add_codes(other, texel_codes_pack(t5));
        other = add_codes(other, texel_codes_pack(t6));
        other = add_codes(other, texel_codes_pack(t7));
        finalize_narrow(0u, c.x, c.y, child);
        finalize_narrow(0u, d.x, d.y, other);
        an = sum_narrow(an, sum_narrow(child, other));
    }
""")]
EXACT["prefetch"] = [(QUAD_LOOP, """    var w = quad_words(vec2<i32>(4u * p));
    for (var k = 0u; k < 4u; k++) {
        let c = 2u * p + vec2<u32>(k & 1u, k >> 1u);
        var nw = w;
        if (k < 3u) {
            nw = quad_words(vec2<i32>(2u * (2u * p + vec2<u32>((k + 1u) & 1u, (k + 1u) >> 1u))));
        }
        var child = add_codes(zero_narrow(), word_codes(w.x));
        child = add_codes(child, word_codes(w.y));
        child = add_codes(child, word_codes(w.z));
        child = add_codes(child, word_codes(w.w));
        finalize_narrow(0u, c.x, c.y, child);
        an = sum_narrow(an, child);
        w = nw;
    }
"""), ("fn quad_by_child(p: vec2<u32>) -> Narrow {", """fn texel_word(t: vec4<f32>) -> u32 {  // (texel_codes_pack's codes in one word)
    if (!SRGB_VIEW && CHANNELS == 4u && BITS == 8u) {
        return pack4x8unorm(t);
    }
    let c = texel_codes(t);
    return c.x | (c.y << 8u) | (c.z << 16u) | (c.w << 24u);
}

fn quad_words(b: vec2<i32>) -> vec4<u32> {
    return vec4<u32>(texel_word(textureLoad(src, b, 0)), texel_word(textureLoad(src, b + vec2<i32>(1, 0), 0)),
                     texel_word(textureLoad(src, b + vec2<i32>(0, 1), 0)),
                     texel_word(textureLoad(src, b + vec2<i32>(1, 1), 0)));
}

fn word_codes(w: u32) -> vec4<u32> {
    return vec4<u32>(w & 255u, (w >> 8u) & 255u, (w >> 16u) & 255u, w >> 24u);
}

fn quad_by_child(p: vec2<u32>) -> Narrow {""")]
CUTS["handonly"] = [("    if (workgroupUniformLoad(&tail_last) == 0u) {", "    if (workgroupUniformLoad(&tail_last) < 2u) {")]
CUTS.update(EXACT)

_load = kernels.load_wgsl
GROUP_TILES = spd.GROUP_TILES
VARIANT = {"name": "base"}


def load_wgsl(name: str, **subs):
    code = _load(name, **subs)
    if name == "mip_spd.wgsl":
        for old, new in CUTS.get(VARIANT["name"], []):
            assert old in code, old
            code = code.replace(old, new)
    return code


def copies(gpu, tex, count: int) -> tuple[float, float]:
    """GPU ns of one copy of level 1's bytes: buffer to texture, buffer to buffer (``count``
    back to back between two timestamps, behind a warm-up)."""
    import wgpu

    w, h = tex.size(1)
    pitch = -(-w * 4 // 256) * 256
    src = gpu.device.create_buffer(size=pitch * h, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    dst = gpu.device.create_buffer(size=pitch * h, usage=wgpu.BufferUsage.COPY_DST)
    out = []
    for to_texture in (True, False):
        q = kernels.timestamps(gpu, 2)
        bench.marker(gpu, q)
        enc = gpu.device.create_command_encoder()
        for _ in range(count):
            if to_texture:
                enc.copy_buffer_to_texture({"buffer": src, "offset": 0, "bytes_per_row": pitch, "rows_per_image": h},
                                           {"texture": tex.texture, "mip_level": 1, "origin": (0, 0, 0)}, (w, h, 1))
            else:
                enc.copy_buffer_to_buffer(src, 0, dst, 0, pitch * h)
        gpu.device.queue.submit([enc.finish()])
        bench.marker(gpu, q)
        enc = gpu.device.create_command_encoder()
        q.resolve(enc)
        gpu.device.queue.submit([enc.finish()])
        total, each = q.read()
        out.append((total - sum(each)) / count)
    src.destroy()
    dst.destroy()
    return out[0], out[1]


def level_hash(tex) -> str:
    """SHA-256 of levels 1.. of ``tex`` as captured."""
    import hashlib

    digest = hashlib.sha256()
    for lv in range(1, tex.levels):
        digest.update(gputex.capture_bytes(tex, lv).tobytes())
    return digest.hexdigest()


def _same(tex, variant: str, first: str | None) -> str:
    if variant not in EXACT or first is None:
        return ""
    return "; same bytes" if level_hash(tex) == first else "; DIFFER"


#: Variants whose edits change what main's first pass does (its overrides, or code in main's body): first_main,
#: which holds main's default path for that pass, would not follow them, so they run with spd.FIRST_ENTRY off.
#: (Edits of the functions both call, e.g. ``noword``, ``nolin``, ``noreach``, reach first_main too.)
MAIN_FIRST = ("nofirst", "main", "one", "texel", "nofinal", "noexact", "rawload", "sumonly", "tileonly", "empty",
              "notile", "nobarrier")
SELF_CHECK = spd.self_check


def set_variant(gpu, variant: str, auto) -> None:
    """The spd module's flags, the shader edits (``VARIANT``) and the self-check for ``variant``; the
    session's pipelines dropped."""
    VARIANT["name"] = variant
    gpu.cache(kernels.PIPELINES).items.clear()
    spd.SMEM_TABLES = False if variant == "nosmem" else auto
    spd.SUBGROUPS = False if variant == "nosg" else auto
    spd.SMEM_TABLES_ALONE = variant == "smemall"
    spd.HANDOFF = False if variant == "nohand" else None
    spd.ANCHOR_FIRST = False if variant == "noaf" else None
    spd.SUMS_TABLES = variant == "sumstab"
    spd.FIRST_ENTRY = False if variant in MAIN_FIRST else None
    spd.GROUP_TILES = {"wg256": (1, 1), "wg1024": (2, 2)}.get(variant, GROUP_TILES)
    spd.FIRST_PASS_LEVELS = (int(variant[5:6]) if variant.startswith("split")
                             else spd.LEVELS_PER_PASS if variant == "nosplit" else None)
    for flag in ("CODE_WORDS", "PACK_CODES", "SG_NARROW"):
        setattr(spd, flag, FLAGS.get(variant, {}).get(flag))
    # (a variant that changes the bytes on purpose would fail the session's self-check: not run for it)
    spd.self_check = SELF_CHECK if variant in ("base", "main", "old") else (lambda *a, **k: (True, ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", type=int, default=[4096, 8192])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--variants", nargs="+", default=["main", "base", "nosg", "sg4", "split2", "split3",
                                                       "tileonly", "sqnoround", "notile"])
    ap.add_argument("--no-fast", action="store_true", help="skip the float chain's figure")
    ap.add_argument("--stored", action="store_true",
                    help="a texture made for stored levels (as the CLI makes it): no copies; with --no-fast")
    ap.add_argument("--gpu-forms", action="store_true",
                    help="the chain's GPU forms on any adapter (lavapipe: check the variants' bytes)")
    args = ap.parse_args()
    auto = True if args.gpu_forms else None
    spd.ROUND_A_LEVEL = auto
    kernels.load_wgsl = load_wgsl
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; commit {bench.commit()}; subgroup feature: {gpu.has_feature('subgroup')}; "
          f"invocations a workgroup: {gpu.limits.get('max-compute-invocations-per-workgroup')}")
    for n in args.sizes:
        # (the upload makes a chain: with no variant's cut or flags, whose failed self-checks would stick to
        # the session)
        set_variant(gpu, "base", auto)
        a = np.random.default_rng(1).integers(0, 256, (n, n, 4), np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True,
                            **({"store_levels": True} if args.stored else {"precision": "fast"}))
        light = bench.SpeedOfLight(gpu, tex)
        sol = bench.speed_of_light(gpu, light, args.repeat)
        print(f"\n{n}x{n}: speed of light {sol['median'] / 1e6:.4f} ms warm median "
              f"({light.bytes / sol['median']:.0f} GB/s), {sol['batch'] / 1e6:.4f} back to back, "
              f"{sol['cold'] / 1e6:.4f} cold", flush=True)
        light.rewarm(50)
        tt, tb = copies(gpu, tex, 20)
        print(f"  a copy of level 1 ({tex.size(1)[0]}^2, {tex.size(1)[0] ** 2 * 4 / 1e6:.1f} MB): buffer to texture "
              f"{tt / 1e6:.4f} ms, buffer to buffer {tb / 1e6:.4f} ms", flush=True)
        encoder = type(gpu.device.create_command_encoder())
        to_texture, tex_to_tex = encoder.copy_buffer_to_texture, encoder.copy_texture_to_texture
        first_hash = None
        for variant in ([] if args.no_fast else ["fast"]) + args.variants:
            set_variant(gpu, variant, auto)
            encoder.copy_buffer_to_texture = (lambda *a, **k: None) if variant == "nocopy" else to_texture
            encoder.copy_texture_to_texture = (lambda *a, **k: None) if variant == "nocopy" else tex_to_tex
            wall, g, rep = bench.time_chain(gpu, tex, "fast" if variant == "fast" else "exact", args.repeat, light)
            if g is None:  # no timestamps (lavapipe): the wall time only
                print(f"  {variant:>9}: wall {wall * 1e3:.2f} ms" + _same(tex, variant, first_hash), flush=True)
            else:
                print(f"  {variant:>9}: GPU {g['median'] / 1e6:.4f} ms warm median ({g['median'] / sol['median']:.2f}x "
                      f"SOL), {g['batch'] / 1e6:.4f} back to back, {g['cold'] / 1e6:.4f} cold; passes "
                      + " ".join(f"{t / 1e6:.4f}" for t in rep.pass_ns) + _same(tex, variant, first_hash), flush=True)
                if rep.note:
                    print(f"  {variant:>9}: note: {rep.note}", flush=True)
            if variant in EXACT and first_hash is None:
                first_hash = level_hash(tex)
        light.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
