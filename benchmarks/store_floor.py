"""What issue 16's absolute mip targets need: the levels written by a compute shader's stores
into the texture, against copied into it.

``benchmarks/mips.py`` reports two floors for a chain: the **speed of light** (``mip_sol.wgsl``:
level 0 read once, every level written once, into buffers) and the **texture floor** (that,
then every level moved into the ``rgba8unorm-srgb`` texture by ``copy_buffer_to_texture`` or
from a storage twin). WebGPU gives sRGB formats no ``STORAGE_BINDING``, so an sRGB chain's
levels can reach its texture only by a copy or a render pass. This script measures, in one run
and on the same device, the third way that a storage-capable texture allows: the speed-of-light
kernel, then every level written by ``textureStore`` (one dispatch a level) into an
``rgba8unorm`` texture of the same size and levels (the same bytes an sRGB texture would hold:
only the format's tag differs). That is the floor a chain would have if it could store into its
texture, as nvpro_pyramid and FidelityFX SPD do (their sRGB textures have a unorm storage view,
which needs ``view_formats``: wgpu-py 0.32 rejects them).

    python3 benchmarks/store_floor.py [--sizes 4096 8192] [--repeat 15]

Prints, per size, GPU time (timestamp queries, warm medians): the speed of light, the texture
floor by copies (buffer, twin), and the floor by stores, and the issue's targets beside them.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from mips import SpeedOfLight, TextureFloor, parse_size, speed_of_light  # noqa: E402

import gputex  # noqa: E402

#: Issue 16's GPU-time targets for the whole rgba8unorm-srgb chain.
TARGETS_MS = {(4096, 4096): 0.060, (8192, 8192): 0.2}

FILL = """
@group(0) @binding(0) var dst: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(1) var<uniform> size: vec4<u32>;

// One texel a thread; every texel of the level written once (a value no compiler can fold).
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (any(g.xy >= size.xy)) {
        return;
    }
    textureStore(dst, vec2<i32>(g.xy), unpack4x8unorm((g.x * 2654435761u) ^ (g.y * 40503u)));
}
"""


class StoreFloor:
    """The speed-of-light kernel, then every level 1.. of an ``rgba8unorm`` texture of the
    chain's size written by ``textureStore`` (a dispatch a level)."""

    def __init__(self, gpu, tex, sol: SpeedOfLight):
        import wgpu

        self.gpu, self.tex, self.sol = gpu, tex, sol
        dev = gpu.device
        self.target = dev.create_texture(size=(tex.width, tex.height, 1), format="rgba8unorm",
                                         mip_level_count=tex.levels,
                                         usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.COPY_SRC)
        s = wgpu.ShaderStage.COMPUTE
        bgl = dev.create_bind_group_layout(entries=[
            {"binding": 0, "visibility": s, "storage_texture": {"access": wgpu.StorageTextureAccess.write_only,
                                                                "format": "rgba8unorm", "view_dimension": "2d"}},
            {"binding": 1, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}}])
        self.pipe = dev.create_compute_pipeline(
            layout=dev.create_pipeline_layout(bind_group_layouts=[bgl]),
            compute={"module": dev.create_shader_module(code=FILL), "entry_point": "main"})
        self.binds = []
        for lv in range(1, tex.levels):
            w, h = tex.size(lv)
            view = self.target.create_view(base_mip_level=lv, mip_level_count=1)
            self.binds.append((dev.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": view},
                {"binding": 1, "resource": {"buffer": gpu.uniform(struct.pack("<4I", w, h, 0, 0))}}]),
                (-(-w // 16), -(-h // 16), 1)))

    def submit(self, with_sol: bool = True) -> int:
        """ns from the kernel's start (or the first store's) to the last store's end."""
        from gputex.kernels import timestamps as _timestamps

        q = _timestamps(self.gpu, 2)
        enc = self.gpu.device.create_command_encoder()
        enc.begin_compute_pass(timestamp_writes=q.next()).end()
        if with_sol:
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(self.sol.pipe)
            cpass.set_bind_group(0, self.sol.bind)
            cpass.dispatch_workgroups(*self.sol.groups)
            cpass.end()
        for bind, groups in self.binds:
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(self.pipe)
            cpass.set_bind_group(0, bind)
            cpass.dispatch_workgroups(*groups)
            cpass.end()
        enc.begin_compute_pass(timestamp_writes=q.next()).end()
        q.resolve(enc)
        self.gpu.device.queue.submit([enc.finish()])
        total, each = q.read()
        return total - each[0] - each[1]

    def measure(self, repeat: int) -> dict:
        out = {}
        for key, with_sol in (("stores", False), ("floor", True)):
            self.submit(with_sol)
            runs = []
            for _ in range(max(1, repeat)):
                self.sol.rewarm()
                runs.append(self.submit(with_sol))
            out[key] = sorted(runs)[len(runs) // 2]
        return out

    def destroy(self) -> None:
        self.target.destroy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["4096", "8192"])
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    gpu = gputex.Session()
    if not gpu.has_feature("timestamp-query"):
        sys.exit("store_floor: this adapter has no timestamp queries")
    print(f"adapter: {gpu.name}")
    for text in args.sizes:
        w, h = parse_size(text)
        a = np.random.default_rng(1).integers(0, 256, (h, w, 4), np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True, precision="fast")
        light = SpeedOfLight(gpu, tex)
        sol = speed_of_light(gpu, light, args.repeat)
        assert sol is not None
        copies = TextureFloor(gpu, tex, light)
        stores = StoreFloor(gpu, tex, light)
        try:
            c = copies.measure(args.repeat)
            s = stores.measure(args.repeat)
        finally:
            copies.destroy()
        target = TARGETS_MS.get((w, h))
        ms = lambda ns: ns / 1e6  # noqa: E731
        print(f"\n{w}x{h}, {tex.levels} levels (GPU time, warm median of {args.repeat})")
        print(f"  speed of light (read level 0, write every level into buffers): {ms(sol['median']):.4f} ms")
        print(f"  texture floor by copies into the rgba8unorm-srgb texture:      {ms(c['floor']):.4f} ms "
              f"(from a buffer {ms(c['buffer']):.4f}" + (f", from a storage twin {ms(c['twin']):.4f}" if "twin" in c else "")
              + ")")
        print(f"  floor by stores into an rgba8unorm texture:                    {ms(s['floor']):.4f} ms "
              f"(the stores alone {ms(s['stores']):.4f})")
        print(f"  copies / stores: {c['floor'] / s['floor']:.2f}x" +
              (f";  issue 16's target {target:.3f} ms: copies floor {ms(c['floor']) / target:.1f}x it, "
               f"stores floor {ms(s['floor']) / target:.2f}x it" if target else ""), flush=True)
        stores.destroy()
        light.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
