"""Why the exact chain's first pass runs at 2-3x the speed of light (issue 16, helper h16why).

    python3 benchmarks/first_pass_probe.py [--sizes 4096 8192] [--repeat 9] [--kernels ...] [--probes ...]

No profiler reaches the H200 through Vulkan here, so the first pass is located with
**micro-kernels**: ``mip_sol.wgsl`` (the speed of light: read level 0 once, write every level
once) walked toward the single-pass chain's first pass (``mip_spd.wgsl``, three levels, the
subgroup form, workgroups of two tiles) one property at a time, each step a kernel of its own
(``LADDER``, cumulative) and a few properties added to one step alone (``SINGLE``); then the real
first pass itself with parts cut out by text edits (``PROBES``, as ``mip_spd_variants.py`` does;
wrong bytes except ``base``). Every figure is the warm median GPU time of one dispatch (timestamp
queries, each run queued behind the speed-of-light kernel's re-warm, as ``benchmarks/mips.py``
measures) and its ratio to the speed-of-light kernel measured in the same run. The micro-kernels'
bytes mean nothing (a level's texel is the XOR or a few bits of the sums): only their loads,
stores, arithmetic and shape are the pass's.

What each micro-kernel property is (``Knobs``):

- ``store``: ``buf`` (mip_sol's: levels 1.. into buffers, 8-byte stores of level 1) or ``tex``
  (levels 1-3 by ``textureStore`` into the texture's storage views, as the stored chain does);
- ``map``: ``rows`` (a workgroup of 256 in one dimension, thread t owns the 4x4 base block (t % 16,
  t / 16) of its 16x16 tile), ``rows2d`` (the same in a 16x16 workgroup: mip_sol's) or ``morton``
  (the pass's: thread t of a 16x16 tile owns anchor texel morton(t));
- ``wg``: invocations a workgroup (512: two tiles, the pass's ``GROUP_TILES``);
- ``order``: ``all`` (the 16 loads first, then the stores) or ``child`` (a level-1 texel's four
  loads, its store, then the next: the pass's ``quad_by_child``);
- ``decode``: ``pack`` (pack4x8unorm of the loaded floats, mip_sol's) or ``codes`` (the pass's
  ``texel_codes``: floor(clamp(v) * 255 + 0.5) a channel);
- ``sums``: ``xor`` (a texel is the XOR of its children) or ``narrow`` (the pass's 32-bit lanes: the
  linear values' 16-bit halves, premultiplied and plain, and alpha: 13 live words a texel);
- ``lut``: the sRGB code -> linear table read from workgroup memory (copied first, one barrier),
  three lookups a base texel (else the code shifted);
- ``final``: ``shift`` (a level's codes: the sums shifted) or ``float`` (the pass's float estimate,
  sum / 2^s in f32, and its code by a table lookup in workgroup memory: ``bucket_code``'s cost);
- ``sg``: level 3 from the lanes (``subgroupShuffleXor`` of the sums, as the pass's subgroup form;
  needs ``morton``), its first lane storing the texel and (``keep``) the level-3 sums, 12 words;
- ``smem``: words of workgroup memory declared and touched besides the tables (occupancy);
- ``regs``: extra u32 kept live through the footprint (register pressure).

Two of the single-property kernels measure something else than their names: ``regs`` keeps its
words in an array indexed by a loop variable, and ``order`` ``all`` with ``narrow`` sums keeps the 16
loaded texels in one (``tex+narrow``, ``tex+narrow+lut``, ``keep-all``): such arrays live in local
memory on the H200 (4.5-8x the speed of light), as the real pass's ``all16`` probe shows too.

What it showed on the H200 (``benchmarks/results/first-pass-probe-h200-2b484b9.txt`` and
``...-1578869.txt``; docs/performance.md, helper h16why): with the pass's own shape (Morton order,
512 invocations, a child's four loads then its store, ``textureStore``) the loads and stores alone run
at 1.07x the speed of light at 8192^2; the pass's arithmetic added step by step takes it to 1.83x
(sRGB table lookups and the float codes' lookups the largest steps), the real pass is 2.95x. So the
first pass is bound by its instructions and workgroup-memory lookups, not by its memory traffic; and
declaring 7 KB more workgroup memory (even where no invocation touches it) made the pass 20-25% slower.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from dataclasses import dataclass, replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import mips as bench  # noqa: E402
import numpy as np  # noqa: E402

import gputex  # noqa: E402
import gputex.kernels as kernels  # noqa: E402
import gputex.mips.spd as spd  # noqa: E402


@dataclass(frozen=True)
class Knobs:
    store: str = "buf"
    map: str = "rows"
    wg: int = 256
    order: str = "all"
    decode: str = "pack"
    sums: str = "xor"
    lut: bool = False
    final: str = "shift"
    sg: bool = False
    keep: bool = False
    smem: int = 0
    regs: int = 0


#: The ladder from the speed-of-light kernel's shape to the pass's, one property a step (cumulative).
SOL = Knobs()
LADDER: list[tuple[str, Knobs]] = []
_k = SOL
for _name, _change in [("sol-shape", {}), ("tex-stores", {"store": "tex"}), ("morton", {"map": "morton"}),
                       ("wg512", {"wg": 512}), ("by-child", {"order": "child"}), ("codes", {"decode": "codes"}),
                       ("narrow", {"sums": "narrow"}), ("lut", {"lut": True}), ("float", {"final": "float"}),
                       ("sg", {"sg": True}), ("keep", {"keep": True})]:
    _k = replace(_k, **_change)  # type: ignore[arg-type]
    LADDER.append((_name, _k))
#: Single properties added to one step of the ladder: (name, the step, the change)
SINGLE: list[tuple[str, str, dict]] = [
    ("tex-rows2d", "tex-stores", {"map": "rows2d"}),
    ("tex+smem16k", "tex-stores", {"smem": 4096}),
    ("tex+smem32k", "tex-stores", {"smem": 8192}),
    ("tex+regs48", "tex-stores", {"regs": 48}),
    ("tex+codes", "tex-stores", {"decode": "codes"}),
    ("tex+narrow", "tex-stores", {"decode": "codes", "sums": "narrow"}),
    ("tex+narrow+lut", "tex-stores", {"decode": "codes", "sums": "narrow", "lut": True}),
    ("keep-wg256", "keep", {"wg": 256}),
    ("keep-all", "keep", {"order": "all"}),
    ("keep-pack", "keep", {"decode": "pack"}),
    ("keep-nolut", "keep", {"lut": False}),
    ("keep-shift", "keep", {"final": "shift"}),
]

HEAD = """
@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@group(0) @binding(2) var<uniform> prm: vec4<u32>;  // base size, levels made
@group(0) @binding(3) var<storage, read_write> dst1: array<vec2<u32>>;
@group(0) @binding(4) var l1: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(5) var l2: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(6) var l3: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(7) var<storage, read> tables: array<u32>;
@group(0) @binding(8) var<storage, read_write> sums: array<u32>;

var<workgroup> ltab: array<u32, 256>;
var<workgroup> btab: array<u32, 512>;
var<workgroup> pad: array<u32, PADN>;

struct N { h: vec4<u32>, l: vec4<u32>, sh: vec4<u32>, sl: vec4<u32>, a: u32 }

fn morton(t: u32) -> vec2<u32> {
    return vec2<u32>((t & 1u) | ((t >> 1u) & 2u) | ((t >> 2u) & 4u) | ((t >> 3u) & 8u),
                     ((t >> 1u) & 1u) | ((t >> 2u) & 2u) | ((t >> 3u) & 4u) | ((t >> 4u) & 8u));
}

fn codes(t: vec4<f32>) -> vec4<u32> {
    if (DECODE_CODES) {
        return vec4<u32>(floor(clamp(t, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0 + vec4<f32>(0.5)));
    }
    let w = pack4x8unorm(t);
    return vec4<u32>(w & 255u, (w >> 8u) & 255u, (w >> 16u) & 255u, w >> 24u);
}

fn word(t: vec4<f32>) -> u32 {
    if (DECODE_CODES) {
        let c = codes(t);
        return c.x | (c.y << 8u) | (c.z << 16u) | (c.w << 24u);
    }
    return pack4x8unorm(t);
}

fn add_codes(n: N, c: vec4<u32>) -> N {
    var l = c << vec4<u32>(23u);
    if (LUT) {
        l = vec4<u32>(ltab[c.x & 255u], ltab[c.y & 255u], ltab[c.z & 255u], 0u);
    }
    let lh = l >> vec4<u32>(16u);
    let ll = l & vec4<u32>(0xffffu);
    return N(n.h + lh * c.w, n.l + ll * c.w, n.sh + lh, n.sl + ll, n.a + c.w);
}

fn nsum(a: N, b: N) -> N {
    return N(a.h + b.h, a.l + b.l, a.sh + b.sh, a.sl + b.sl, a.a + b.a);
}

fn bucket(z: f32) -> u32 {
    let b = u32(clamp(i32(bitcast<u32>(z) >> 16u) - 18432, 0, 511));
    let k = btab[b] & 255u;
    return k + select(0u, 1u, z >= bitcast<f32>(btab[(k + 1u) & 511u]));
}

// A texel's codes from its sums over 2^s base texels
fn ncodes(n: N, s: u32) -> vec4<f32> {
    let half = 1u << (s - 1u);
    var col = (n.sl.xyz + vec3<u32>(half)) >> vec3<u32>(s);
    if (FINAL_FLOAT) {
        let cov = n.a != 0u;
        let h = select(n.sh.xyz, n.h.xyz, cov);
        let l = select(n.sl.xyz, n.l.xyz, cov);
        let xv = (vec3<f32>(h) * 65536.0 + vec3<f32>(l)) / f32(select(1u << s, n.a, cov));
        col = vec3<u32>(bucket(xv.x), bucket(xv.y), bucket(xv.z));
    } else {
        col ^= (n.h.xyz ^ n.l.xyz ^ n.sh.xyz) & vec3<u32>(255u);
    }
    return vec4<f32>(vec4<u32>(col, (n.a + half) >> s) & vec4<u32>(255u)) / 255.0;
}

fn put(l: u32, p: vec2<u32>, v: u32) {
    let s = max(vec2<u32>(1u), prm.xy >> vec2<u32>(l));
    if (all(p < s)) {
        let off = select(0u, (prm.x >> 2u) * (prm.y >> 2u), l == 3u);
        dst[off + p.y * s.x + p.x] = v;
    }
}

fn st(l: u32, p: vec2<u32>, v: vec4<f32>) {
    switch l {
        case 1u: { textureStore(l1, p, v); }
        case 2u: { textureStore(l2, p, v); }
        default: { textureStore(l3, p, v); }
    }
}

@compute @workgroup_size(WGSIZE)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) ti: u32 SG_ARGS) {
    let tv = select(ti, SG_INDEX, SG);
    let t = tv & 255u;
    let tile = vec2<u32>(wg.x * (WG / 256u) + (tv >> 8u), wg.y);
    var lid = vec2<u32>(t & 15u, t >> 4u);
    if (MORTON) {
        lid = morton(t);
    }
    if (LUT || FINAL_FLOAT) {
        if (ti < 256u) {
            ltab[ti] = tables[2u * ti];
            btab[ti] = tables[1536u + ti];
            btab[ti + 256u] = tables[1536u + 256u + (ti & 127u)];
        }
        workgroupBarrier();
    }
    if (PADN > 1u) {
        for (var k = ti; k < PADN; k += WG) {
            pad[k] = k ^ wg.x;
        }
        workgroupBarrier();
    }
    let b = tile * 16u + lid;  // the 4x4 base block (4 b.x, 4 b.y): level-2 texel b
    let o = b * 4u;
    var live = all(o < prm.xy);
    var extra = array<u32, REGS>();
    for (var k = 0u; k < REGS; k++) {
        extra[k] = textureLoad(src, vec2<i32>(o + vec2<u32>(k & 3u, 0u)), 0).x > 0.5;
    }
    var v2 = 0u;
    var n2 = N(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), 0u);
    if (live) {
        var w: array<u32, 4>;
        if (!BY_CHILD && !NARROW) {
            // mip_sol's: the 16 loads, then the stores
            let q = o;
            for (var k = 0u; k < 4u; k++) {
                let c = q + 2u * vec2<u32>(k & 1u, k >> 1u);
                w[k] = word(textureLoad(src, vec2<i32>(c), 0)) ^ word(textureLoad(src, vec2<i32>(c + vec2<u32>(1u, 0u)), 0))
                    ^ word(textureLoad(src, vec2<i32>(c + vec2<u32>(0u, 1u)), 0)) ^ word(textureLoad(src, vec2<i32>(c + vec2<u32>(1u)), 0));
            }
            STORE_L1_ALL
            v2 = w[0] ^ w[1] ^ w[2] ^ w[3];
        } else {
            var tt: array<vec4<f32>, 16>;
            if (!BY_CHILD) {  // (narrow sums, order all: the 16 loads first)
                for (var k = 0u; k < 16u; k++) {
                    tt[k] = textureLoad(src, vec2<i32>(o + vec2<u32>(k & 3u, k >> 2u)), 0);
                }
            }
            for (var k = 0u; k < 4u; k++) {
                let c = o + 2u * vec2<u32>(k & 1u, k >> 1u);
                var t0: vec4<f32>;
                var t1: vec4<f32>;
                var t2: vec4<f32>;
                var t3: vec4<f32>;
                if (BY_CHILD) {
                    t0 = textureLoad(src, vec2<i32>(c), 0);
                    t1 = textureLoad(src, vec2<i32>(c + vec2<u32>(1u, 0u)), 0);
                    t2 = textureLoad(src, vec2<i32>(c + vec2<u32>(0u, 1u)), 0);
                    t3 = textureLoad(src, vec2<i32>(c + vec2<u32>(1u)), 0);
                } else {
                    let j = 8u * (k >> 1u) + 2u * (k & 1u);
                    t0 = tt[j];
                    t1 = tt[j + 1u];
                    t2 = tt[j + 4u];
                    t3 = tt[j + 5u];
                }
                let c1 = c / 2u;
                if (NARROW) {
                    let zero = N(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), 0u);
                    let ch = add_codes(add_codes(add_codes(add_codes(zero, codes(t0)), codes(t1)), codes(t2)), codes(t3));
                    n2 = nsum(n2, ch);
                    STORE_L1_N
                } else {
                    let x = word(t0) ^ word(t1) ^ word(t2) ^ word(t3);
                    v2 ^= x;
                    STORE_L1_X
                }
            }
        }
        for (var k = 0u; k < REGS; k++) {
            v2 ^= extra[k];
            n2.a += extra[k];
        }
        if (NARROW) {
            STORE_L2_N
        } else {
            STORE_L2_X
        }
    }
    LEVEL3
}
"""

STORES = {
    "buf": {"STORE_L1_ALL": """let s1 = max(vec2<u32>(1u), prm.xy >> vec2<u32>(1u));
            let pitch = (s1.x + 1u) / 2u;
            dst1[2u * b.y * pitch + b.x] = vec2<u32>(w[0], w[1]);
            dst1[(2u * b.y + 1u) * pitch + b.x] = vec2<u32>(w[2], w[3]);""",
            "STORE_L1_X": "dst1[c1.y * ((prm.x >> 2u) + 1u) + c1.x].x = x;",
            "STORE_L1_N": "dst1[c1.y * ((prm.x >> 2u) + 1u) + c1.x].x = pack4x8unorm(ncodes(ch, 2u));",
            "STORE_L2_X": "put(2u, b, v2);",
            "STORE_L2_N": "put(2u, b, pack4x8unorm(ncodes(n2, 4u)));"},
    "tex": {"STORE_L1_ALL": """for (var k = 0u; k < 4u; k++) {
                textureStore(l1, 2u * b + vec2<u32>(k & 1u, k >> 1u), unpack4x8unorm(w[k]));
            }""",
            "STORE_L1_X": "textureStore(l1, c1, unpack4x8unorm(x));",
            "STORE_L1_N": "textureStore(l1, c1, ncodes(ch, 2u));",
            "STORE_L2_X": "textureStore(l2, b, unpack4x8unorm(v2));",
            "STORE_L2_N": "textureStore(l2, b, ncodes(n2, 4u));"},
}

# Level 3: without the lanes (mip_sol's): the thread whose block is the texel's first writes its own
# level-2 value; with them: the sums (or XOR) of lanes t ^ 1, t ^ 2, t ^ 3 (morton: the texel's 2x2).
LEVEL3_PLAIN = """if (live && all((b & vec2<u32>(1u)) == vec2<u32>(0u))) {
        STORE3
    }"""
LEVEL3_SG = """var m = vec4<u32>(n2.h.x ^ v2, n2.h.y, n2.l.x, n2.l.y);
    var m2 = vec4<u32>(n2.h.z, n2.l.z, n2.sh.x ^ n2.sh.y, n2.a);
    m += subgroupShuffleXor(m, 1u);
    m2 += subgroupShuffleXor(m2, 1u);
    m += subgroupShuffleXor(m, 2u);
    m2 += subgroupShuffleXor(m2, 2u);
    let c = (t & 3u);
    var code = (m[c] >> 6u) & 255u;
    code |= subgroupShuffleXor(code, 1u) << 8u;
    code |= subgroupShuffleXor(code, 2u) << 16u;
    if (live && c == 0u) {
        let p = b >> vec2<u32>(1u);
        STORE3SG
        KEEP
    }"""
STORE3 = {"buf": "put(3u, b >> vec2<u32>(1u), v2 ^ n2.a ^ n2.h.x);",
          "tex": "textureStore(l3, b >> vec2<u32>(1u), unpack4x8unorm(v2 ^ n2.a ^ n2.h.x));"}
STORE3SG = {"buf": "put(3u, p, code);", "tex": "textureStore(l3, p, unpack4x8unorm(code));"}
KEEP = """let j = (p.y * (prm.x >> 3u) + p.x) * 12u;
        sums[j] = m.x; sums[j + 1u] = m.y; sums[j + 2u] = 0u; sums[j + 3u] = m.z; sums[j + 4u] = m.w;
        sums[j + 5u] = 0u; sums[j + 6u] = m2.x; sums[j + 7u] = m2.y; sums[j + 8u] = 0u; sums[j + 9u] = m2.z;
        sums[j + 10u] = m2.w; sums[j + 11u] = 0u;"""


def kernel_source(k: Knobs) -> str:
    """The micro-kernel's WGSL for ``k``."""
    code = HEAD
    for name, text in STORES[k.store].items():
        code = code.replace(name, text)
    level3 = LEVEL3_SG if k.sg else LEVEL3_PLAIN
    level3 = (level3.replace("STORE3SG", STORE3SG[k.store]).replace("STORE3", STORE3[k.store])
              .replace("KEEP", KEEP if k.keep else ""))
    code = code.replace("LEVEL3", level3)
    if k.regs == 0:  # (an array of 0 is not WGSL)
        code = code.replace("var extra = array<u32, REGS>();", "").replace(
            "extra[k] = textureLoad(src, vec2<i32>(o + vec2<u32>(k & 3u, 0u)), 0).x > 0.5;", "")
        code = code.replace("v2 ^= extra[k];\n            n2.a += extra[k];", "")
    else:
        code = code.replace("textureLoad(src, vec2<i32>(o + vec2<u32>(k & 3u, 0u)), 0).x > 0.5;",
                            "select(k, k * 7u, textureLoad(src, vec2<i32>(o + vec2<u32>(k & 3u, k >> 2u)), 0).x > 0.5);")
    subs = {"PADN": str(max(1, k.smem)) + "u", "WG": f"{k.wg}u",
            "WGSIZE": "16, 16" if k.map == "rows2d" else f"{k.wg}", "REGS": str(max(1, k.regs)) + "u",
            "DECODE_CODES": "true" if k.decode == "codes" else "false", "LUT": "true" if k.lut else "false",
            "FINAL_FLOAT": "true" if k.final == "float" else "false", "MORTON": "true" if k.map == "morton" else "false",
            "BY_CHILD": "true" if k.order == "child" else "false", "NARROW": "true" if k.sums == "narrow" else "false",
            "SG": "true" if k.sg else "false"}
    if k.sg:
        subs["SG_ARGS"] = (", @builtin(subgroup_id) sg_id: u32, @builtin(subgroup_invocation_id) sg_lane: u32, "
                           "@builtin(subgroup_size) sg_size: u32")
        subs["SG_INDEX"] = "(sg_id * sg_size + sg_lane)"
    else:
        subs["SG_ARGS"] = ""
        subs["SG_INDEX"] = "ti"
    import re

    for name, value in subs.items():
        code = re.sub(rf"\b{name}\b", value, code)
    return code


class Micro:
    """One micro-kernel over ``tex`` (a texture made for stored levels), dispatched as the pass is."""

    def __init__(self, gpu, tex, k: Knobs, sol: bench.SpeedOfLight):
        import wgpu

        from gputex.mips.integer import tables_buffer

        self.gpu, self.k = gpu, k
        d = gpu.device
        s = wgpu.ShaderStage.COMPUTE
        st = {"type": wgpu.BufferBindingType.storage}
        ro = {"type": wgpu.BufferBindingType.read_only_storage}
        stt = {"access": wgpu.StorageTextureAccess.write_only, "format": "rgba8unorm", "view_dimension": "2d"}
        entries = [{"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                              "view_dimension": "2d", "multisampled": False}},
                   {"binding": 1, "visibility": s, "buffer": st},
                   {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}},
                   {"binding": 3, "visibility": s, "buffer": st}]
        entries += [{"binding": 4 + i, "visibility": s, "storage_texture": stt} for i in range(3)]
        entries += [{"binding": 7, "visibility": s, "buffer": ro}, {"binding": 8, "visibility": s, "buffer": st}]
        bgl = d.create_bind_group_layout(entries=entries)
        module = d.create_shader_module(code=kernel_source(k))
        self.pipe = d.create_compute_pipeline(layout=d.create_pipeline_layout(bind_group_layouts=[bgl]),
                                              compute={"module": module, "entry_point": "main"})
        w, h = tex.width, tex.height
        self.bufs = [d.create_buffer(size=4 * (w // 4) * (h // 4) * 2, usage=wgpu.BufferUsage.STORAGE),
                     d.create_buffer(size=8 * (h // 2) * (w // 4 + 1), usage=wgpu.BufferUsage.STORAGE),
                     d.create_buffer(size=48 * (w // 8) * (h // 8), usage=wgpu.BufferUsage.STORAGE)]
        prm = gpu.uniform(struct.pack("<4I", w, h, 3, 0))
        base = tex.texture.create_view(base_mip_level=0, mip_level_count=1, dimension="2d")

        def whole(b):
            return {"buffer": b, "offset": 0, "size": b.size}

        tables = tables_buffer(gpu, 8, True, float_thresholds=True)
        res = [base, whole(self.bufs[0]), {"buffer": prm}, whole(self.bufs[1])]
        res += [tex.storage_view(lv) for lv in (1, 2, 3)] + [whole(tables), whole(self.bufs[2])]
        self.bind = d.create_bind_group(layout=bgl, entries=[{"binding": i, "resource": r} for i, r in enumerate(res)])
        self.groups = (-(-w // (64 * k.wg // 256)), -(-h // 64), 1)
        self.sol = sol

    def submit(self, count: int) -> list[int]:
        q = kernels.timestamps(self.gpu, count)
        enc = self.gpu.device.create_command_encoder()
        for _ in range(count):
            cpass = enc.begin_compute_pass(timestamp_writes=q.next()) if q else enc.begin_compute_pass()
            cpass.set_pipeline(self.pipe)
            cpass.set_bind_group(0, self.bind)
            cpass.dispatch_workgroups(*self.groups)
            cpass.end()
        if q is None:  # (no timestamps: lavapipe, --check)
            self.gpu.device.queue.submit([enc.finish()])
            self.gpu.wait()
            return []
        q.resolve(enc)
        self.gpu.device.queue.submit([enc.finish()])
        return q.read()[1]

    def measure(self, repeat: int) -> float:
        """Warm median ns of one dispatch."""
        self.submit(2)
        med = []
        for _ in range(repeat):
            self.sol.rewarm()
            each = self.submit(bench.BATCH)
            med.append(sorted(each)[len(each) // 2])
        return sorted(med)[len(med) // 2]

    def destroy(self) -> None:
        for b in self.bufs:
            b.destroy()


# The real first pass with parts cut out (text edits of mip_spd.wgsl; wrong bytes except ``base``).
_cuts = __import__("mip_spd_variants").CUTS
PROBES: dict[str, list[tuple[str, str]]] = {
    "base": [],
    "loadsonly": _cuts["loadsonly"],
    "noq": _cuts["noq"],
    "nolin": _cuts["nolin"],
    # byte-keeping: quad_by_child's 16 loads all issued before the first child's arithmetic and store
    "all16": [("""    var an = zero_narrow();
    for (var k = 0u; k < 4u; k++) {
        let c = 2u * p + vec2<u32>(k & 1u, k >> 1u);
        let b = vec2<i32>(2u * c);
        let t0 = textureLoad(src, b, 0);
        let t1 = textureLoad(src, b + vec2<i32>(1, 0), 0);
        let t2 = textureLoad(src, b + vec2<i32>(0, 1), 0);
        let t3 = textureLoad(src, b + vec2<i32>(1, 1), 0);""", """    var an = zero_narrow();
    var tt: array<vec4<f32>, 16>;
    for (var k = 0u; k < 16u; k++) {
        tt[k] = textureLoad(src, vec2<i32>(4u * p + vec2<u32>(k & 3u, k >> 2u)), 0);
    }
    for (var k = 0u; k < 4u; k++) {
        let c = 2u * p + vec2<u32>(k & 1u, k >> 1u);
        let j = 8u * (k >> 1u) + 2u * (k & 1u);
        let t0 = tt[j];
        let t1 = tt[j + 1u];
        let t2 = tt[j + 4u];
        let t3 = tt[j + 5u];""")],
    # levels 1-2 not stored (their codes still made: a store that never happens)
    "nostore12": [("        write_texel(i, x, y, codes);\n    }\n    return sure || ONE;",
                   "        if (all(codes == vec4<u32>(1u, 2u, 3u, 4u))) {\n            write_texel(i, x, y, codes);\n"
                   "        }\n    }\n    return sure || ONE;")],
    # byte-keeping: the base's codes by pack4x8unorm (floor(0.5 + 255 clamp(v)), WGSL's definition: the same
    # formula as texel_codes') instead of floor, clamp and a conversion a channel
    "pack": [("""fn texel_codes(t: vec4<f32>) -> vec4<u32> {
    var v = t;""", """fn texel_codes(t: vec4<f32>) -> vec4<u32> {
    if (!SRGB_VIEW && CHANNELS == 4u && BITS == 8u) {
        let w = pack4x8unorm(t);
        return vec4<u32>(w & 255u, (w >> 8u) & 255u, (w >> 16u) & 255u, w >> 24u);
    }
    var v = t;""")],
    # level 3 from the lanes cut (the anchor sums still made)
    "nolevel3": [("    if (n <= 2u) {\n        return;\n    }", "    if (n <= 64u) {\n        if (acc.a.x == 0xffffffffu) {\n"
                  "            store_sums(0u, collapse(acc));\n        }\n        return;\n    }")],
}


def level_hash(tex) -> str:
    """SHA-256 of levels 1.. of ``tex`` as captured."""
    import hashlib

    digest = hashlib.sha256()
    for lv in range(1, tex.levels):
        digest.update(gputex.capture_bytes(tex, lv).tobytes())
    return digest.hexdigest()


PROBES["pack+all16"] = PROBES["pack"] + PROBES["all16"]
#: Probes that also set flags of gputex.mips.spd (name -> {flag: value}). At 1578869 the byte-keeping
#: probes ``nonarrow``, ``nopack``, ``norcp``, ``nofast``, ``kept3`` and ``old`` took h16why's forms
#: back one at a time (docs/performance.md, helper h16why); those forms were not kept, nor their probes.
PROBE_FLAGS: dict[str, dict[str, object]] = {}


class _Flags:
    """spd's flags set for one probe, restored after."""

    def __init__(self, name: str):
        self.flags = PROBE_FLAGS.get(name, {})

    def __enter__(self):
        self.saved = {k: getattr(spd, k) for k in self.flags}
        for k, v in self.flags.items():
            setattr(spd, k, v)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            setattr(spd, k, v)


#: Probes whose edits apply to one pass's pipeline only: (name, text that marks it). ``slimtile``
#: (byte-keeping where the chain's GPU forms take the subgroup form, spd.GROUP_TILES (2, 1)): the
#: three-level first pass (the one made in workgroups of 512) without the 16 KB ``tile`` and the 1 KB
#: ``ctile`` it never reads: do declared, unused workgroup arrays cost it what FAST_CODES' 7 KB did
#: at 1578869 (docs/performance.md, helper h16why)? Not run on the H200 yet.
PASS_ONLY = {"slimtile": "@compute @workgroup_size(512u)"}
PROBES["slimtile"] = [("var<workgroup> tile: array<u32, 4092>;", "var<workgroup> tile: array<u32, 1>;"),
                      ("var<workgroup> ctile: array<atomic<u32>, 256>;", "var<workgroup> ctile: array<atomic<u32>, 1>;"),
                      ("    atomicStore(&ctile[t0], 0u);\n", "")]


def probe_source(name: str, code: str) -> str:
    if name in PASS_ONLY and PASS_ONLY[name] not in code:
        return code
    for old, new in PROBES[name]:
        assert old in code, old
        code = code.replace(old, new)
    return code


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", type=int, default=[4096, 8192])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--kernels", nargs="*", default=None, help="micro-kernels to run (default: all)")
    ap.add_argument("--probes", nargs="*", default=None, help="probes of the real pass (default: all)")
    ap.add_argument("--check", action="store_true", help="compile and run each micro-kernel once, no timing")
    ap.add_argument("--gpu-forms", action="store_true", help="the chain's GPU forms on any adapter (lavapipe: --check)")
    args = ap.parse_args()
    if args.gpu_forms:
        spd.ROUND_A_LEVEL = spd.SUBGROUPS = spd.SMEM_TABLES = True
    gpu = gputex.Session()
    if not args.check and not gpu.has_feature("timestamp-query"):
        sys.exit("no timestamp queries on this adapter: nothing to measure (--check compiles the kernels)")
    print(f"adapter: {gpu.name}; commit {bench.commit()}; subgroups: {gpu.has_feature('subgroup')}")
    ladder = dict(LADDER)
    todo = [(n, k) for n, k in LADDER] + [(n, replace(ladder[s], **c)) for n, s, c in SINGLE]
    if args.kernels is not None:
        todo = [(n, k) for n, k in todo if n in args.kernels]
    probes = list(PROBES) if args.probes is None else args.probes
    load = kernels.load_wgsl
    for n in args.sizes:
        a = np.random.default_rng(1).integers(0, 256, (n, n, 4), np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, store_levels=True)
        light = bench.SpeedOfLight(gpu, tex)
        if args.check:
            for name, k in todo:
                if k.sg and not gpu.has_feature("subgroup"):
                    continue
                m = Micro(gpu, tex, k, light)
                m.submit(1)
                m.destroy()
                print(f"  micro {name:>16}: ran", flush=True)
            first_hash = None
            for name in probes:
                kernels.load_wgsl = (lambda nm, _p=name, **s: probe_source(_p, load(nm, **s)) if nm == "mip_spd.wgsl"
                                     else load(nm, **s))
                gpu.cache(kernels.PIPELINES).items.clear()
                with _Flags(name):
                    gputex.generate_mips(tex, precision="exact")
                kernels.load_wgsl = load
                h = level_hash(tex)
                first_hash = first_hash or h
                print(f"  pass  {name:>16}: ran" + ("; same bytes" if h == first_hash else "; other bytes"), flush=True)
            continue
        sol = bench.speed_of_light(gpu, light, args.repeat)
        assert sol is not None
        ref = sol["median"]
        print(f"\n{n}x{n}: speed of light (mip_sol.wgsl) {ref / 1e6:.4f} ms", flush=True)
        first_hash = None
        for name, k in todo:
            if k.sg and not gpu.has_feature("subgroup"):
                continue
            try:
                m = Micro(gpu, tex, k, light)
                t = m.measure(args.repeat)
                m.destroy()
            except Exception as e:  # (one kernel's failure does not end the run)
                print(f"  micro {name:>16}: failed: {str(e).splitlines()[:3]}", flush=True)
                continue
            print(f"  micro {name:>16}: {t / 1e6:.4f} ms  {t / ref:.2f}x SOL   {k}", flush=True)
        for name in probes:
            kernels.load_wgsl = (lambda nm, _p=name, **s: probe_source(_p, load(nm, **s)) if nm == "mip_spd.wgsl"
                                 else load(nm, **s))
            gpu.cache(kernels.PIPELINES).items.clear()
            check = spd.self_check
            if name != "base":
                spd.self_check = lambda *a, **kw: (True, "")
            try:
                with _Flags(name):
                    _, g, rep = bench.time_chain(gpu, tex, "exact", args.repeat, light)
                h = level_hash(tex)
            except Exception as e:  # (one probe's failure does not end the run)
                print(f"  pass  {name:>16}: failed: {str(e).splitlines()[:3]}", flush=True)
                continue
            finally:
                spd.self_check = check
                kernels.load_wgsl = load
            first_hash = first_hash or h
            same = "; same bytes" if h == first_hash else "; other bytes"
            if g is not None and rep.pass_ns:
                first = rep.pass_ns[0]
                print(f"  pass  {name:>16}: first pass {first / 1e6:.4f} ms  {first / ref:.2f}x SOL   "
                      f"(chain {g['median'] / 1e6:.4f} ms; passes "
                      + " ".join(f"{t / 1e6:.4f}" for t in rep.pass_ns) + f"){same}", flush=True)
        gpu.cache(kernels.PIPELINES).items.clear()
        light.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
