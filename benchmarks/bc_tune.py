"""Settings sweep for gputex.bcenc (tuning aid): each variant is a quality's WGSL constants with
some overridden, run as its own pipeline on the same images; prints GPU MP/s (timestamps) and
PSNR (texture2ddecoder; BC4/BC5 also the spec float decode) per variant.

    python benchmarks/bc_tune.py --composite 4096 --variants "bc1 normal" "bc1 normal CLUSTER_QUANT=false"
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    import numpy as np
    from bc import FORMATS, PHOTOS, composite, gpu_encode, photos, psnr, psnr_exact

    import gputex
    from gputex import bcenc

    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", nargs="+", required=True, help='"FMT QUALITY [KEY=VALUE ...]"')
    ap.add_argument("--photos", nargs="+", default=PHOTOS)
    ap.add_argument("--composite", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--crop", type=int, default=0, help="top-left CROP x CROP of each photo (0: whole)")
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds of untimed encodes first (bc.py --warmup)")
    args = ap.parse_args()
    images = photos(args.photos)
    if args.crop:
        images = {k: np.ascontiguousarray(v[:args.crop, :args.crop]) for k, v in images.items()}
    if args.composite:
        images = {"composite": composite(images, args.composite)}
    session = gputex.Session()
    print(f"adapter: {session.name}")
    for i, spec in enumerate(args.variants):
        f, q, *over = spec.split()
        name = f"tune{i}"
        bcenc._SETTINGS[name] = dict(bcenc._SETTINGS[q], **dict(kv.split("=", 1) for kv in over))
        bcenc.QUALITIES = bcenc.QUALITIES + (name,)
        gsecs, wsecs, ps, pe, mp = 0.0, 0.0, [], [], 0.0
        for a in images.values():
            g, w, blocks = gpu_encode(session, a, FORMATS[f], name, args.repeat, args.warmup)
            gsecs += g if g is not None else w
            wsecs += w
            ps.append(psnr(f, blocks, a))
            if f in ("bc4", "bc5"):
                pe.append(psnr_exact(f, blocks, a))
            mp += a.shape[0] * a.shape[1] / 1e6
        extra = f" spec {np.mean(pe):.3f}" if pe else ""
        print(f"{spec:44s} {mp / gsecs:9.1f} MP/s (wall {mp / wsecs:7.1f})  PSNR {np.mean(ps):.3f}{extra}  [{' '.join(f'{p:.2f}' for p in ps)}]",
              flush=True)


if __name__ == "__main__":
    main()
