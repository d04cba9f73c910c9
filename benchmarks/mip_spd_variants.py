"""Where the single-pass exact chain's GPU time goes (a profiling aid, not a speed target).

    python benchmarks/mip_spd_variants.py [--sizes 4096 8192] [--repeat 15]

Times ``mip_spd.wgsl`` (rgba8unorm-srgb, weighted alpha) as it is and with parts of it cut out
by text edits of the shader (the bytes of the cut variants are wrong; the self-check is skipped
for them): ``noround`` (a code is a few bits of its sums: no float estimate, no sRGB encode, no
exact comparisons), ``noencode`` (the base's sRGB codes are not re-encoded from the texture's
linear floats), ``both``; next to the float chain and the speed of light, measured as
``benchmarks/mips.py`` does (warm GPU, median of ``--repeat``).
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
CUTS["both"] = CUTS["noround"] + CUTS["noencode"]

_load = kernels.load_wgsl
VARIANT = {"name": "base"}


def load_wgsl(name: str, **subs):
    code = _load(name, **subs)
    if name == "mip_spd.wgsl":
        for old, new in CUTS.get(VARIANT["name"], []):
            assert old in code, old
            code = code.replace(old, new)
    return code


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", type=int, default=[4096, 8192])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--variants", nargs="+", default=["base", "noround", "noencode", "both"])
    args = ap.parse_args()
    kernels.load_wgsl = load_wgsl
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; commit {bench.commit()}")
    for n in args.sizes:
        a = np.random.default_rng(1).integers(0, 256, (n, n, 4), np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, precision="fast")
        light = bench.SpeedOfLight(gpu, tex)
        sol = bench.speed_of_light(gpu, light, args.repeat)
        print(f"\n{n}x{n}: speed of light {sol['median'] / 1e6:.4f} ms warm median "
              f"({light.bytes / sol['median']:.0f} GB/s), {sol['batch'] / 1e6:.4f} back to back, "
              f"{sol['cold'] / 1e6:.4f} cold", flush=True)
        for variant in ["fast"] + args.variants:
            VARIANT["name"] = variant
            gpu.cache(kernels.PIPELINES).items.clear()
            if variant != "base":
                spd.self_check = lambda *a, **k: (True, "")
            wall, g, rep = bench.time_chain(gpu, tex, "fast" if variant == "fast" else "exact", args.repeat, light)
            print(f"  {variant:>9}: GPU {g['median'] / 1e6:.4f} ms warm median ({g['median'] / sol['median']:.2f}x SOL), "
                  f"{g['batch'] / 1e6:.4f} back to back, {g['cold'] / 1e6:.4f} cold; passes "
                  + " ".join(f"{t / 1e6:.4f}" for t in rep.pass_ns), flush=True)
        light.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
