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

FUSED = """
@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var d0: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(2) var d1: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(3) var d2: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(4) var d3: texture_storage_2d<rgba8unorm, write>;
@group(0) @binding(5) var<uniform> prm: vec4<u32>;  // size of the group's first level, its levels

fn put(k: u32, p: vec2<u32>, v: u32) {
    let s = max(vec2<u32>(1u), prm.xy >> vec2<u32>(k));
    if (k >= prm.z || any(p >= s)) {
        return;
    }
    let c = unpack4x8unorm(v);
    switch k {
        case 0u: { textureStore(d0, vec2<i32>(p), c); }
        case 1u: { textureStore(d1, vec2<i32>(p), c); }
        case 2u: { textureStore(d2, vec2<i32>(p), c); }
        default: { textureStore(d3, vec2<i32>(p), c); }
    }
}

fn at(p: vec2<u32>) -> u32 {
    let q = min(p, textureDimensions(src) - vec2<u32>(1u));
    return pack4x8unorm(textureLoad(src, vec2<i32>(q), 0));
}

// Levels 1-4 in one dispatch, as mip_sol.wgsl: a thread owns a 4x4 block of the base (every
// base texel read once), writes its 2x2 texels of level 1 and its texel of level 2; levels 3
// and 4 by the thread whose block is their texel's first.
@compute @workgroup_size(16, 16)
fn first(@builtin(global_invocation_id) gid: vec3<u32>) {
    let b = gid.xy;
    let o = b * 4u;
    if (any(o >= textureDimensions(src))) {
        return;
    }
    let t0 = at(o) ^ at(o + vec2<u32>(1u, 0u)) ^ at(o + vec2<u32>(0u, 1u)) ^ at(o + vec2<u32>(1u, 1u));
    let t1 = at(o + vec2<u32>(2u, 0u)) ^ at(o + vec2<u32>(3u, 0u)) ^ at(o + vec2<u32>(2u, 1u)) ^ at(o + vec2<u32>(3u, 1u));
    let t2 = at(o + vec2<u32>(0u, 2u)) ^ at(o + vec2<u32>(1u, 2u)) ^ at(o + vec2<u32>(0u, 3u)) ^ at(o + vec2<u32>(1u, 3u));
    let t3 = at(o + vec2<u32>(2u, 2u)) ^ at(o + vec2<u32>(3u, 2u)) ^ at(o + vec2<u32>(2u, 3u)) ^ at(o + vec2<u32>(3u, 3u));
    put(0u, 2u * b, t0);
    put(0u, 2u * b + vec2<u32>(1u, 0u), t1);
    put(0u, 2u * b + vec2<u32>(0u, 1u), t2);
    put(0u, 2u * b + vec2<u32>(1u, 1u), t3);
    let t = t0 ^ t1 ^ t2 ^ t3;
    put(1u, b, t);
    if (all((b & vec2<u32>(1u)) == vec2<u32>(0u))) {
        put(2u, b / 2u, t);
    }
    if (all((b & vec2<u32>(3u)) == vec2<u32>(0u))) {
        put(3u, b / 4u, t);
    }
}

// Four more levels in one dispatch (1/256 of the bytes and less): a thread a texel of the
// group's first level; the deeper levels by the thread at their texel's corner.
@compute @workgroup_size(16, 16)
fn rest(@builtin(global_invocation_id) gid: vec3<u32>) {
    let p = gid.xy;
    if (any(p >= prm.xy)) {
        return;
    }
    let v = (p.x * 2654435761u) ^ (p.y * 40503u);
    put(0u, p, v);
    if (all((p & vec2<u32>(1u)) == vec2<u32>(0u))) {
        put(1u, p / 2u, v);
    }
    if (all((p & vec2<u32>(3u)) == vec2<u32>(0u))) {
        put(2u, p / 4u, v);
    }
    if (all((p & vec2<u32>(7u)) == vec2<u32>(0u))) {
        put(3u, p / 8u, v);
    }
}
"""


def between_markers(gpu, record) -> int:
    """GPU ns of what ``record(encoder)`` encodes, between two empty timed compute passes."""
    from gputex.kernels import timestamps as _timestamps

    q = _timestamps(gpu, 2)
    enc = gpu.device.create_command_encoder()
    enc.begin_compute_pass(timestamp_writes=q.next()).end()
    record(enc)
    enc.begin_compute_pass(timestamp_writes=q.next()).end()
    q.resolve(enc)
    gpu.device.queue.submit([enc.finish()])
    total, each = q.read()
    return total - each[0] - each[1]


def warm_median(submit, sol: SpeedOfLight, repeat: int) -> int:
    """The median of ``repeat`` runs of ``submit()`` (after one untimed), each queued behind the
    speed-of-light kernel's re-warm (the GPU never idles before it)."""
    submit()
    runs = []
    for _ in range(max(1, repeat)):
        sol.rewarm()
        runs.append(submit())
    return sorted(runs)[len(runs) // 2]


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

        def record(enc) -> None:
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

        return between_markers(self.gpu, record)

    def measure(self, repeat: int) -> dict:
        return {key: warm_median(lambda: self.submit(with_sol), self.sol, repeat)
                for key, with_sol in (("stores", False), ("floor", True))}

    def destroy(self) -> None:
        self.target.destroy()


class FusedStoreFloor:
    """Level 0 read once and every level 1.. of an ``rgba8unorm`` texture written once by
    ``textureStore``, in ``ceil((levels - 1) / 4)`` dispatches of one compute pass (levels 1-4
    from the base, as ``mip_sol.wgsl``; then four levels a dispatch): the memory floor of a
    chain that stores into its texture."""

    def __init__(self, gpu, tex, target):
        import wgpu

        self.gpu = gpu
        dev = gpu.device
        s = wgpu.ShaderStage.COMPUTE
        entries = [{"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                              "view_dimension": "2d", "multisampled": False}}]
        entries += [{"binding": i, "visibility": s,
                     "storage_texture": {"access": wgpu.StorageTextureAccess.write_only, "format": "rgba8unorm",
                                         "view_dimension": "2d"}} for i in range(1, 5)]
        entries.append({"binding": 5, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}})
        bgl = dev.create_bind_group_layout(entries=entries)
        layout = dev.create_pipeline_layout(bind_group_layouts=[bgl])
        module = dev.create_shader_module(code=FUSED)
        self.pipes = {name: dev.create_compute_pipeline(layout=layout, compute={"module": module, "entry_point": name})
                      for name in ("first", "rest")}
        self.dummy = dev.create_texture(size=(1, 1, 1), format="rgba8unorm", usage=wgpu.TextureUsage.STORAGE_BINDING)
        base = tex.texture.create_view(base_mip_level=0, mip_level_count=1)
        self.steps = []
        for first in range(1, tex.levels, 4):
            count = min(4, tex.levels - first)
            views = [target.create_view(base_mip_level=first + k, mip_level_count=1) if k < count
                     else self.dummy.create_view() for k in range(4)]
            w, h = tex.size(first)
            bind = dev.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": base}, *({"binding": 1 + k, "resource": v} for k, v in enumerate(views)),
                {"binding": 5, "resource": {"buffer": gpu.uniform(struct.pack("<4I", w, h, count, 0))}}])
            if first == 1:
                groups = (-(-tex.width // 64), -(-tex.height // 64), 1)
            else:
                groups = (-(-w // 16), -(-h // 16), 1)
            self.steps.append(("first" if first == 1 else "rest", bind, groups))

    def submit(self) -> int:
        def record(enc) -> None:
            cpass = enc.begin_compute_pass()
            for name, bind, groups in self.steps:
                cpass.set_pipeline(self.pipes[name])
                cpass.set_bind_group(0, bind)
                cpass.dispatch_workgroups(*groups)
            cpass.end()

        return between_markers(self.gpu, record)

    def measure(self, repeat: int, sol: SpeedOfLight) -> int:
        return warm_median(self.submit, sol, repeat)

    def destroy(self) -> None:
        self.dummy.destroy()


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
            fused = FusedStoreFloor(gpu, tex, stores.target)
            f = fused.measure(args.repeat, light)
            fused.destroy()
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
        print(f"  floor by stores, level 0 read once, {len(fused.steps)} dispatches in one pass:        {ms(f):.4f} ms")
        print(f"  copies / fused stores: {c['floor'] / f:.2f}x" +
              (f";  issue 16's target {target:.3f} ms: copies floor {ms(c['floor']) / target:.1f}x it, "
               f"fused stores floor {ms(f) / target:.2f}x it" if target else ""), flush=True)
        stores.destroy()
        light.destroy()
        tex.destroy()


if __name__ == "__main__":
    main()
