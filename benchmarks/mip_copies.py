"""Where a mip chain's copies into an sRGB texture spend their GPU time (issue 16).

    python benchmarks/mip_copies.py [--sizes 4096 8192] [--repeat 9]

WebGPU cannot bind an sRGB format as a storage texture, so a compute chain's levels reach an
``rgba8unorm-srgb`` texture by a copy: ``copy_buffer_to_texture`` from its output buffer (256-byte
row pitch) or ``copy_texture_to_texture`` from a storage twin (``rgba8unorm``). Each case below is
timed on its own (between two empty timed passes, queued behind ``REWARM_MS`` of speed-of-light
dispatches so that the clocks are up; the median of ``--repeat``), with level 1 alone (most of
the bytes) and all levels 1.. (one copy each), against the same bytes copied buffer to buffer,
a non-sRGB destination, and a destination without ``RENDER_ATTACHMENT``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from mips import SpeedOfLight, parse_size  # noqa: E402

import gputex  # noqa: E402


def main() -> None:
    import wgpu

    from gputex.kernels import timestamps
    from gputex.layout import align_up

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["4096", "8192"])
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}")
    U = wgpu.TextureUsage
    for text in args.sizes:
        w, h = parse_size(text)
        a = np.random.default_rng(1).integers(0, 256, (h, w, 4), np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, precision="fast")
        sol = SpeedOfLight(gpu, tex)
        sol.warm()
        n = tex.levels
        sizes = [tex.size(lv) for lv in range(1, n)]
        pitches = [align_up(x * 4, 256) for x, _ in sizes]
        offs = np.cumsum([0] + [p * y for p, (_, y) in zip(pitches, sizes)]).tolist()

        def texture(fmt, usage, levels=n, base=(w, h)):
            return gpu.device.create_texture(size=(*base, 1), format=fmt, mip_level_count=levels, usage=usage)

        buf = gpu.device.create_buffer(size=offs[-1], usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
        buf2 = gpu.device.create_buffer(size=offs[-1], usage=wgpu.BufferUsage.COPY_DST)
        twin = texture("rgba8unorm", U.STORAGE_BINDING | U.COPY_SRC, n - 1, sizes[0])
        print(f"gputex's texture usage: {int(tex.texture.usage)} (RENDER_ATTACHMENT {int(U.RENDER_ATTACHMENT)})")
        dst = {"srgb (gputex's)": tex.texture,
               "srgb no RA": texture("rgba8unorm-srgb", U.TEXTURE_BINDING | U.COPY_SRC | U.COPY_DST),
               "rgba8unorm": texture("rgba8unorm", U.TEXTURE_BINDING | U.COPY_SRC | U.COPY_DST)}

        def copies(enc, kind, target, lvs):
            for j in lvs:
                x, y = sizes[j]
                d = {"texture": target, "mip_level": j + 1}
                if kind == "buffer":
                    enc.copy_buffer_to_texture({"buffer": buf, "offset": offs[j], "bytes_per_row": pitches[j],
                                                "rows_per_image": y}, d, (x, y, 1))
                elif kind == "twin":
                    enc.copy_texture_to_texture({"texture": twin, "mip_level": j}, d, (x, y, 1))
                else:
                    enc.copy_buffer_to_buffer(buf, offs[j], buf2, offs[j], offs[j + 1] - offs[j])

        def timed(kind, target, lvs):
            runs = []
            for _ in range(args.repeat + 1):
                sol.rewarm()
                q = timestamps(gpu, 2)
                enc = gpu.device.create_command_encoder()
                enc.begin_compute_pass(timestamp_writes=q.next()).end()
                copies(enc, kind, target, lvs)
                enc.begin_compute_pass(timestamp_writes=q.next()).end()
                q.resolve(enc)
                gpu.device.queue.submit([enc.finish()])
                total, each = q.read()
                runs.append(total - sum(each))
            runs = sorted(runs[1:])
            return runs[len(runs) // 2] / 1e6

        print(f"\n{w}x{h}: level 1 {offs[1] / 1e6:.1f} MB, levels 1.. {offs[-1] / 1e6:.1f} MB (pitched)")
        one, every = [0], list(range(n - 1))
        for name, lvs in (("level 1", one), ("all levels", every)):
            print(f"  {name}: buffer to buffer {timed('b2b', None, lvs):.4f} ms")
            for dname, target in dst.items():
                print(f"  {name}: buffer -> {dname} {timed('buffer', target, lvs):.4f} ms, "
                      f"twin -> {dname} {timed('twin', target, lvs):.4f} ms", flush=True)
        sol.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
