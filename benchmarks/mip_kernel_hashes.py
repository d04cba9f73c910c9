"""Hashes of the float64 kernel chains' levels over a matrix of inputs, to compare adapters and commits.

    python benchmarks/mip_kernel_hashes.py [--json OUT.json] [--against benchmarks/results/mip-kernel-hashes-lavapipe.json]

The matrix (543 chains): sizes 61x37, 257x131, 256x256, 300x200, 1x9, 13x7 (and 1000x999 for
rgba8unorm-srgb, clamp, weighted alpha only); formats rgba8unorm-srgb, rgba8unorm, rgba16unorm,
rg32float, bgra8unorm-srgb; filters kaiser, lanczos, triangle; wraps clamp, mirror, repeat; alpha
weighted and straight. Each input is noise of its own seed (30% transparent texels in the integer
formats), uploaded with ``precision="exact"`` (the float64 chain where the adapter has
``shader-f64``); the hash covers every level from 1 on as captured. ``--against`` prints the keys whose
hashes differ from a file written by ``--json`` (on another adapter or commit) and exits 1 if any do.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import gputex  # noqa: E402

SIZES = [(61, 37), (257, 131), (256, 256), (300, 200), (1000, 999), (1, 9), (13, 7)]
FORMATS = ["rgba8unorm-srgb", "rgba8unorm", "rgba16unorm", "rg32float", "bgra8unorm-srgb"]


def hashes(gpu) -> dict[str, str]:
    out = {}
    for (w, h) in SIZES:
        rng = np.random.default_rng(w * 7 + h)
        for fmt in FORMATS:
            if fmt.startswith("rg32"):
                a = rng.random((h, w, 2), np.float32)
            elif "16" in fmt:
                a = rng.integers(0, 65536, (h, w, 4), np.uint16)
                a[..., 3] = np.where(rng.random((h, w)) < 0.3, 0, a[..., 3])
            else:
                a = rng.integers(0, 256, (h, w, 4), np.uint8)
                a[..., 3] = np.where(rng.random((h, w)) < 0.3, 0, a[..., 3])
            for filt in ["kaiser", "lanczos", "triangle"]:
                for wrap in ["clamp", "mirror", "repeat"]:
                    for alpha in ["weighted", "straight"]:
                        if (w, h) == (1000, 999) and (wrap != "clamp" or alpha != "weighted"
                                                      or fmt != "rgba8unorm-srgb"):
                            continue
                        tex = gputex.upload(gpu, gputex.from_array(a, "srgb" if "srgb" in fmt else "linear"), fmt,
                                            mips=True, filter=filt, wrap=wrap, alpha=alpha, precision="exact")
                        d = hashlib.sha256()
                        for lv in range(1, tex.levels):
                            d.update(gputex.capture(tex, lv).tobytes())
                        out[f"{w}x{h} {fmt} {filt} {wrap} {alpha}"] = d.hexdigest()[:16]
                        tex.destroy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the hashes here")
    ap.add_argument("--against", help="a file written by --json: print the chains that differ")
    args = ap.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; shader-f64: {gpu.has_feature('shader-f64')}", flush=True)
    got = hashes(gpu)
    print(f"{len(got)} chains", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(got, f, indent=0)
    if args.against:
        with open(args.against) as f:
            want = json.load(f)
        differ = sorted(k for k in got if want.get(k) != got[k])
        print(f"{len(differ)} of {len(got)} differ from {args.against}" + "".join(f"\n  {k}" for k in differ))
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
