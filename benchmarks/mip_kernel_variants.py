"""The float64 Kaiser / Lanczos chain (``mip_exact_sep.wgsl``): each pass's GPU time with parts of
its work cut out (probes: wrong bytes), and layouts that keep the bytes, in one run.

    python benchmarks/mip_kernel_variants.py [--sizes 4096 8192] [--repeat 9] [--variants base aos ...]

For each size, an ``rgba8unorm-srgb`` noise image with transparent texels (weighted alpha: seven
float64 values a texel) makes a Kaiser chain per variant, ``--repeat`` times with timestamps around
each pass (``generate_mips(measure=True)``); printed: the median of each pass (level 1, 2, ...; the
first pass at level 1 makes the code tables) and of their sum, and for the variants that keep the
bytes, whether every level equals ``base``'s. Variants:

- ``base``: the chain as it is; ``aos``: each level's values a texel's 8 words side by side
  (``exact.SOA`` off, as before the planes); ``2d``: the 2D-footprint shader; ``global``: the
  separable shader's form for devices with 32 KB of workgroup memory (each tap read from the storage
  buffers: ``exact.SEP_GLOBAL_TAPS``), whatever this device's limit; ``kfix``: every
  texel's taps padded to KMAX with zero weights, the tap loops of that constant length;
  ``stagefix``: level 1's staging loop of constant length; ``fix``: both (these three force the
  shader's form with the taps in workgroup memory, which kfix edits: lavapipe's limit takes the other).
- probes (wrong bytes): ``nofinish`` (no output but one word: no division, encode, stores),
  ``noencode`` (no sRGB encode), ``nonext`` (one float64 stored for the next level, not seven),
  ``nox`` / ``noy`` (one tap on that axis), ``nopow`` (level 1's codes from its floats without the
  sRGB re-encode), ``notab`` (level 1's codes as values, no table lookups), ``nodiv`` (weighted
  alpha not divided out), ``f32all`` (every float64 of the shader float32: the buffers read as
  float32 words); ``f32fix``: ``f32all`` with ``fix``; ``nopl``: no plain colour kept in the x
  sums (weighted alpha).

Each chain is queued behind ``benchmarks/mips.py``'s speed-of-light dispatches (the GPU busy, its
clocks up), as ``mips_kernels.py`` times them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


import gputex  # noqa: E402
from gputex import kernels  # noqa: E402
from gputex.mips import exact, generate_mips  # noqa: E402

SEP = "mip_exact_sep.wgsl"
OUT = "mip_kernel_out.wgsl"
NEXT_STORES = ("".join(f"    next[value_at(k, {c}u, plane)] = pm[{c}];\n" for c in range(4))
               + "    if (WEIGHTED) {  // (else the plain colour is never read: its sums are dead code)\n"
               + "".join(f"        next[value_at(k, {c}u, plane)] = pl[{c - 4}];\n" for c in range(4, 7)) + "    }\n")
CUTS: dict[str, list[tuple[str, str]]] = {
    "nofinish": [("    finish_texel(gx, gy, d.x, pm, pl);",
                  "    packed[gy * prm.words_per_row + gx] = u32(pm[0] + pm[1] + pm[2] + pm[3] + pl[0] + pl[1] + pl[2]);")],
    "noencode": [("    if (ENCODE_SRGB) {", "    if (false) {")],
    "nonext": [(NEXT_STORES, "    next[value_at(k, 0u, plane)] = pm[0] + pm[1] + pm[2] + pm[3] + pl[0] + pl[1] + pl[2];\n")],
    "nox": [("        for (var k = 0u; k < xn; k++) {", "        for (var k = 0u; k < min(xn, 1u); k++) {")],
    "noy": [("    for (var k = 0u; k < yn; k++) {", "    for (var k = 0u; k < min(yn, 1u); k++) {")],
    "nopow": [("        return u32(round(srgb_encode32(c) * 255.0));", "        return u32(c * 255.0);")],
    "nodiv": [("            out = array<f64, 4>(pm[0] / pm[3], pm[1] / pm[3], pm[2] / pm[3], pm[3]);", "            out = pm;")],
    "nopl": [("        if (WEIGHTED) {\n            hsum[4u", "        if (false) {\n            hsum[4u")],
    "notab": [("        let c = vec3<f64>(colour[k & 255u], colour[(k >> 8u) & 255u], colour[(k >> 16u) & 255u]);\n"
               "        let a = level[k >> 24u];",
               "        let c = vec3<f64>(f64(k & 255u), f64((k >> 8u) & 255u), f64((k >> 16u) & 255u));\n"
               "        let a = f64(k >> 24u);")],
}
# every texel's taps padded with zero weights to KMAX, the tap loops of constant length (unrollable)
KFIX = [("""        if (k < n) {
            tslot[t * KSTRIDE + k] = taps[start + k];
            tw[t * KSTRIDE + k] = weights[start + k - prm.widx];
        }""", """        let live = k < n;
        let at_k = min(start + k, start + n - 1u);
        tslot[t * KSTRIDE + k] = select(0u, taps[at_k], live);
        tw[t * KSTRIDE + k] = select(f64(0.0), weights[at_k - prm.widx], live);"""),
        ("        for (var k = 0u; k < xn; k++) {", "        for (var k = 0u; k < KMAX; k++) {"),
        ("    for (var k = 0u; k < yn; k++) {", "    for (var k = 0u; k < KMAX; k++) {")]
# level 1's staging loop of constant length (its loads issued together)
STAGEFIX = [("""        for (var i = li; i < nx * ny; i += THREADS) {
            let v = textureLoad(src, vec2<i32>(i32(cols[i % nx]), i32(rows[i / nx])), 0);
            codes[i] = code_of(v.r) | (code_of(v.g) << 8u) | (code_of(v.b) << 16u) | (u32(round(v.a * 255.0)) << 24u);
        }""", """        for (var j = 0u; j < 12u; j++) {
            let i = li + j * THREADS;
            if (i < nx * ny) {
                let v = textureLoad(src, vec2<i32>(i32(cols[i % nx]), i32(rows[i / nx])), 0);
                codes[i] = code_of(v.r) | (code_of(v.g) << 8u) | (code_of(v.b) << 16u) | (u32(round(v.a * 255.0)) << 24u);
            }
        }""")]
CUTS["kfix"] = KFIX
CUTS["stagefix"] = STAGEFIX
CUTS["fix"] = KFIX + STAGEFIX
CUTS["f32fix"] = KFIX + STAGEFIX
KEEP = ("base", "aos", "2d", "global", "kfix", "stagefix", "fix")
VARIANT = {"name": "base"}
_load = kernels.load_wgsl


def load_wgsl(name: str, **subs):
    code = _load(name, **subs)
    if name == SEP:
        for old, new in CUTS.get(VARIANT["name"], []):
            assert old in code, (VARIANT["name"], old)
            code = code.replace(old, new)
        if VARIANT["name"].startswith("f32"):
            code = code.replace("f64", "f32")
    return code


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["4096", "8192"])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--filter", default="kaiser")
    ap.add_argument("--alpha", default="weighted")
    ap.add_argument("--variants", nargs="+", default=["base", "aos", "nofinish", "noencode", "nonext", "nox", "noy",
                                                       "nopow", "notab", "base"])
    args = ap.parse_args()
    kernels.load_wgsl = load_wgsl
    import mips_kernels as mk  # (benchmarks/: its image, level hash, and mips.py's machinery as bm)

    bm = mk.bm
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; shader-f64: {gpu.has_feature('shader-f64')}; filter {args.filter}, {args.alpha} alpha",
          flush=True)
    limit = getattr(exact, "workgroup_limit", None)
    soa = getattr(exact, "SOA", None)  # (None: a tree from before the planes, whose base this runs too)
    for text in args.sizes:
        w, h = (int(v) for v in (text.split("x") if "x" in text else (text, text)))
        tex = gputex.upload(gpu, gputex.from_array(mk.image(w, h), "srgb"), "rgba8unorm-srgb", mips=True)
        print(f"\n{w}x{h}, {tex.levels} levels", flush=True)
        sol = bm.SpeedOfLight(gpu, tex) if gpu.has_feature("timestamp-query") else None
        if sol:
            sol.warm()
        first = None
        for variant in args.variants:
            VARIANT["name"] = variant
            if soa is not None:
                exact.SOA = soa if variant != "aos" else False
            if hasattr(exact, "workgroup_limit"):  # kfix's edits are of the form with the taps in workgroup memory
                exact.workgroup_limit = ((lambda session: 1 << 20) if variant.endswith("fix")
                                         else (lambda session: 32768) if variant == "global" else limit)
            gpu.cache(kernels.PIPELINES).items.clear()
            if variant == "2d":
                os.environ["GPUTEX_MIPS_KERNEL"] = "2d"
            runs = []
            for _ in range(args.repeat + 1):
                if sol:
                    sol.rewarm(max(bm.REWARM_MS, 40))
                rep = generate_mips(tex, filter=args.filter, alpha=args.alpha, measure=True)
                gpu.wait()
                runs.append(rep.pass_ns)
            os.environ.pop("GPUTEX_MIPS_KERNEL", None)
            runs = runs[1:]
            same = ""
            if variant in KEEP:
                digest = mk.level_hash(tex)
                if first is None:
                    first = digest
                same = "; same bytes" if digest == first else "; DIFFER"
            if not runs[0]:  # (lavapipe: no timestamps; the edits and the bytes checked)
                print(f"  {variant:>9}: no timestamps{same}", flush=True)
                continue
            med = [statistics.median(r[i] for r in runs) for i in range(len(runs[0]))]
            tot = statistics.median(sum(r) for r in runs)
            print(f"  {variant:>9}: passes {tot / 1e6:8.4f} ms: " + " ".join(f"{t / 1e6:.4f}" for t in med[:8]) + same,
                  flush=True)
        if sol:
            sol.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
