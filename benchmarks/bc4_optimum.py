"""How good can any BC4 encoder be on the benchmark photos? An exhaustive check, independent of
gputex's search.

    python benchmarks/bc4_optimum.py                 # 300 random blocks per photo
    python benchmarks/bc4_optimum.py --blocks 1000 --photos grass gravel

Method: the red channel of each of ``benchmarks/bc.py``'s photographs (grey ones as RGB).
From each photo BLOCKS 4x4 blocks are drawn at random (fixed seed, without replacement). For
every drawn block all 65536 endpoint byte pairs (e0, e1) are tried, each with every texel taking
its nearest of the pair's 8 palette entries (exhaustive: no search, nothing skipped), under two
decoders:

* ``spec``: the specification's float palette (e0 > e1: ((8 - k) e0 + (k - 1) e1) / 7;
  otherwise ((6 - k) e0 + (k - 1) e1) / 5 and the extremes 0 and 255), what hardware decodes
  and what ``bc.py`` prints as "spec float decode";
* ``t2d``: texture2ddecoder's palette, read off texture2ddecoder itself by decoding one block
  per pair with indices 0..7 (it rounds the interpolated values to whole codes), what ``bc.py``'s
  PSNR column uses.

The smallest summed squared error over the pairs is the block's optimum. gputex's ``normal`` and
``best`` blocks (encoded on this machine's adapter from the whole photo) are decoded the same two
ways and compared on the same drawn blocks: they can never beat the optimum (checked), and the
gap between them gives the photo's optimum PSNR as gputex's whole-photo PSNR plus
10 log10(gputex's MSE / the optimum's MSE) on the drawn blocks (a ratio estimate, steadier than
the drawn blocks' own PSNR). The last line is the mean over the photos, as ``bc.py``'s "photos"
rows average them.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def palettes():
    """(spec, t2d): float64 arrays (65536, 8), row e0 * 256 + e1, column the 3-bit index."""
    import numpy as np
    import texture2ddecoder as t2d

    e0, e1 = np.divmod(np.arange(65536), 256)
    e0, e1 = e0[:, None].astype(np.float64), e1[:, None].astype(np.float64)
    k = np.arange(8, dtype=np.float64)[None, :]
    eight = ((8 - k) * e0 + (k - 1) * e1) / 7
    six = ((6 - k) * e0 + (k - 1) * e1) / 5
    six[:, 6], six[:, 7] = 0.0, 255.0
    spec = np.where(e0 > e1, eight, six)
    spec[:, 0], spec[:, 1] = e0[:, 0], e1[:, 0]
    # texture2ddecoder: one 4x4 block per pair, texel i (i < 8) holding index i
    bits = sum(i << (3 * i) for i in range(8))
    blocks = np.zeros((65536, 8), np.uint8)
    blocks[:, 0], blocks[:, 1] = e0[:, 0], e1[:, 0]
    for b in range(6):
        blocks[:, 2 + b] = (bits >> (8 * b)) & 0xff
    w = 4 * 256
    dec = np.frombuffer(t2d.decode_bc4(blocks.tobytes(), w, 4 * 256), np.uint8).reshape(4 * 256, w, 4)
    dec = dec[:, :, 2].reshape(256, 4, 256, 4).transpose(0, 2, 1, 3).reshape(65536, 16)  # R (BGRA order)
    return spec, dec[:, :8].astype(np.float64)


def optimum(v, pal) -> float:
    """The smallest summed squared error of block values ``v`` (16,) over every row of ``pal``."""
    import numpy as np

    d = (v[None, :, None].astype(np.float32) - pal[:, None, :].astype(np.float32)) ** 2
    return float(d.min(axis=2).sum(axis=1, dtype=np.float64).min())


def decode_pal(blocks: bytes, pal):
    """BC4 blocks decoded with palette table ``pal``: (n_blocks, 16) float64, texel order row-major."""
    import numpy as np

    b = np.frombuffer(bytes(blocks), np.uint8).reshape(-1, 8).astype(np.int64)
    bits = sum(b[:, 2 + i] << (8 * i) for i in range(6))
    idx = np.stack([(bits >> (3 * t)) & 7 for t in range(16)], 1)
    return pal[(b[:, 0] * 256 + b[:, 1])[:, None], idx]


def main() -> None:
    import numpy as np
    from bc import PHOTOS, gpu_encode, photos

    import gputex

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--photos", nargs="+", default=PHOTOS)
    ap.add_argument("--blocks", type=int, default=300, help="blocks drawn per photo")
    ap.add_argument("--seed", type=int, default=18)
    args = ap.parse_args()
    spec, t2dp = palettes()
    session = gputex.Session()
    print(f"adapter: {session.name}; {args.blocks} random blocks per photo, all 65536 pairs each")
    rng = np.random.default_rng(args.seed)
    head = f"{'photo':11s} {'decoder':7s} {'optimum (drawn)':>15s} {'normal':>7s} {'best':>7s} | " \
           f"{'whole photo: normal':>19s} {'best':>7s} {'optimum est.':>12s}"
    print(head)
    print("-" * len(head))
    means: dict = {}
    for name, img in photos(args.photos).items():
        h, w = img.shape[:2]
        r = img[:, :, 0].astype(np.float64)
        blocks_v = r.reshape(h // 4, 4, w // 4, 4).transpose(0, 2, 1, 3).reshape(-1, 16)
        pick = rng.choice(len(blocks_v), size=min(args.blocks, len(blocks_v)), replace=False)
        enc = {q: gpu_encode(session, img, "bc4-r-unorm", q, 1)[2] for q in ("normal", "best")}
        for dname, pal in (("spec", spec), ("t2d", t2dp)):
            opt = np.array([optimum(blocks_v[i], pal) for i in pick])
            whole, drawn = {}, {}
            for q, data in enc.items():
                dec = decode_pal(data, pal)
                err = ((dec - blocks_v) ** 2).sum(axis=1)
                # nothing beats the optimum (float32 sums: 1e-5 relative)
                assert np.all(err[pick] >= opt * (1 - 1e-5) - 1e-3), (name, dname, q, (opt - err[pick]).max())
                whole[q] = 10 * np.log10(255.0 ** 2 / (err.sum() / r.size))
                drawn[q] = err[pick].sum()
            opt_drawn = 10 * np.log10(255.0 ** 2 / (opt.sum() / (16 * len(pick))))
            est = whole["best"] + 10 * np.log10(drawn["best"] / opt.sum()) if opt.sum() > 0 else float("inf")
            dn = {q: 10 * np.log10(255.0 ** 2 / (drawn[q] / (16 * len(pick)))) for q in enc}
            print(f"{name:11s} {dname:7s} {opt_drawn:15.2f} {dn['normal']:7.2f} {dn['best']:7.2f} | "
                  f"{whole['normal']:19.2f} {whole['best']:7.2f} {est:12.2f}", flush=True)
            for key, val in (("normal", whole["normal"]), ("best", whole["best"]), ("est", est)):
                means.setdefault((dname, key), []).append(val)
    for dname in ("spec", "t2d"):
        print(f"{'mean':11s} {dname:7s} {'':15s} {'':7s} {'':7s} | {np.mean(means[dname, 'normal']):19.2f} "
              f"{np.mean(means[dname, 'best']):7.2f} {np.mean(means[dname, 'est']):12.2f}")


if __name__ == "__main__":
    main()
