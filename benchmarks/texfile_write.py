"""A texture's mip chain -> KTX2 / DDS file: captured whole then written, against streamed.

    python benchmarks/texfile_write.py [--size 8192] [--repeat 3] [--dir DIR] [--zstd LEVEL]

Uploads a ``--size``² RGBA8 sRGB noise image, makes its box mips, waits for the GPU, then times
(best of ``--repeat``, same run, alternating, fresh file names in ``--dir``, default the temp
folder):

* ``whole``: ``write_texture_file(capture_texture_file(tex), path)`` (every level read back into
  memory, then written);
* ``streamed``: ``capture_to_file(tex, path)`` (each read-back group's rows copied straight into
  the mapped file);
* with ``--zstd``: the Zstandard KTX2 of the captured chain, levels compressed on one thread
  (``write_ktx2`` + ``write_atomic``) against threads (``write_texture_file``).

Every pair of files must be byte-identical (checked). Times include the fsync.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--zstd", type=int, default=None)
    args = ap.parse_args()

    import numpy as np
    import wgpu

    import gputex
    from gputex.atomic import write_atomic
    from gputex.containers.ktx2 import write_ktx2
    from gputex.mips import generate_mips
    from gputex.texfile import write_texture_file
    from gputex.upload import upload

    cap = importlib.import_module("gputex.capture")
    session = gputex.Session()
    n = args.size
    pixels = np.random.default_rng(0).integers(0, 256, (n, n, 4), dtype=np.uint8)
    tex = upload(session, gputex.from_array(pixels), "rgba8unorm-srgb", levels=n.bit_length(),
                 usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_SRC)
    generate_mips(tex)
    session.wait()
    del pixels
    folder = tempfile.mkdtemp(prefix="gputex-texwrite-", dir=args.dir)
    ways = {
        "whole": lambda p: write_texture_file(cap.capture_texture_file(tex), p),
        "streamed": lambda p: cap.capture_to_file(tex, p),
    }
    chain = None
    if args.zstd is not None:
        chain = cap.capture_texture_file(tex)
        ways = {
            "zstd one thread": lambda p: write_atomic(p, write_ktx2(chain, zstd=args.zstd)),
            "zstd threads": lambda p: write_texture_file(chain, p, zstd=args.zstd),
        }
    print(f"{session.name}; {n}² RGBA8 sRGB, {tex.levels} levels; files in {folder}")
    try:
        for suffix in ((".ktx2",) if args.zstd is not None else (".ktx2", ".dds")):
            best: dict[str, float] = {}
            paths: dict[str, str] = {}
            for r in range(args.repeat):
                for name, way in ways.items():
                    path = os.path.join(folder, f"{name.replace(' ', '_')}{r}{suffix}")
                    t0 = time.perf_counter()
                    way(path)
                    best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
                    paths[name] = path
            data = [open(p, "rb").read() for p in paths.values()]
            same = all(d == data[0] for d in data)
            mb = len(data[0]) / 2**20
            a, b = list(best)
            print(f"{suffix:6} {mb:7.1f} MiB  " + "  ".join(f"{k} {v:.3f} s" for k, v in best.items())
                  + f"  {a}/{b} {best[a] / best[b]:.2f}x  identical: {same}")
            for f in os.listdir(folder):
                os.unlink(os.path.join(folder, f))
    finally:
        for f in os.listdir(folder):
            os.unlink(os.path.join(folder, f))
        os.rmdir(folder)
        tex.destroy()


if __name__ == "__main__":
    main()
