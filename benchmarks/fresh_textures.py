"""What a texture made for one chain costs the GPU: a fresh texture against one kept from before.

    python benchmarks/fresh_textures.py [--sizes 1024 2048 4096] [--repeat 7]

For each size, an ``rgba32float`` texture of that size with a full mip chain (what the float32
chain's work textures are at level 1: ``mips/chain.py``) is written by one dispatch
(``textureStore`` of every texel of level 0), timed as ``benchmarks/mips_kernels.py`` times a chain:
queued behind speed-of-light work, between two timestamp passes on the queue, so that whatever
the submission holds besides the dispatch (wgpu's clears of a new texture's memory) and whatever
the device does for a new allocation is inside the figure. Three forms, median of ``--repeat``:

- ``kept``: one texture, made once, written by every run;
- ``fresh``: a texture made before each run and destroyed after it (what the float32 chain does
  with work textures over ``REUSE_MAX_BYTES``);
- ``fresh x2``: two such textures, each written (the chain with weighted alpha: work and plain).

Printed: GPU ms of each and the fresh forms' excess over ``kept`` in ms and in GB/s of texture
made. GPU timings mean something only on a real GPU (the H200).
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from mips_kernels import bm

import gputex
from gputex.kernels import dispatch, timestamps
from gputex.layout import mip_count

SHADER = """
@group(0) @binding(0) var dst: texture_storage_2d<rgba32float, write>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let size = textureDimensions(dst);
    if (gid.x < size.x && gid.y < size.y) {
        textureStore(dst, vec2<i32>(gid.xy), vec4<f32>(f32(gid.x), f32(gid.y), 0.0, 1.0));
    }
}
"""


def main() -> None:
    import wgpu

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", type=int, default=[1024, 2048, 4096])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    gpu = gputex.Session()
    dev = gpu.device
    print(f"adapter: {gpu.name}")
    module = dev.create_shader_module(code=SHADER)
    pipe = dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    usage = wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
    base = np.zeros((256, 256, 4), np.uint8)
    tex = gputex.upload(gpu, gputex.from_array(base, "srgb"), "rgba8unorm-srgb", mips=True)
    sol = bm.SpeedOfLight(gpu, tex)
    sol.warm()
    for n in args.sizes:
        levels = mip_count(n, n)
        mb = n * n * 16 * 4 / 3 / 1e6

        def make():
            return dev.create_texture(size=(n, n, 1), format="rgba32float", mip_level_count=levels, usage=usage)

        def write(t):
            enc = dev.create_command_encoder()
            bind = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": t.create_view(base_mip_level=0, mip_level_count=1)}])
            dispatch(enc, pipe, bind, (-(-n // 8), -(-n // 8), 1))
            dev.queue.submit([enc.finish()])

        kept = make()

        def run(form: str) -> float:
            out = []
            for _ in range(args.repeat):
                sol.rewarm(40)
                q = timestamps(gpu, 2)
                bm.marker(gpu, q)
                if form == "kept":
                    write(kept)
                    made = []
                else:
                    made = [make() for _ in range(2 if form == "fresh x2" else 1)]
                    for t in made:
                        write(t)
                bm.marker(gpu, q)
                enc = dev.create_command_encoder()
                q.resolve(enc)
                dev.queue.submit([enc.finish()])
                total, each = q.read()
                out.append((total - sum(each)) / 1e6)
                for t in made:
                    t.destroy()
            return statistics.median(out)

        write(kept)
        gpu.wait()
        times = {form: run(form) for form in ("kept", "fresh", "fresh x2", "kept")}
        k = times["kept"]
        print(f"{n}x{n} rgba32float, {levels} levels, {mb:.0f} MB: kept {k:.4f} ms", end="")
        for form, count in (("fresh", 1), ("fresh x2", 2)):
            extra = times[form] - (k if count == 1 else 2 * k)
            rate = f"{count * mb / extra:.0f} GB/s made" if extra > 0 else "no excess"
            print(f"; {form} {times[form]:.4f} ms ({extra:+.4f}, {rate})", end="")
        print(flush=True)
        kept.destroy()
    sol.destroy()
    tex.destroy()


if __name__ == "__main__":
    main()
