"""Arithmetic rates of the adapter through WebGPU: float64 and float32 fused multiply-adds, float64
divisions, and float64 / float32 loads from workgroup memory, each a dispatch of ``--groups``
workgroups of 256 invocations timed by timestamps (median of ``--repeat``, after a warm-up).

    python benchmarks/f64_rate.py [--groups 4224] [--iters 4096] [--repeat 7]

Printed per kernel: GPU ms and operations a second (the figure the float64 kernel chains'
arithmetic is measured against: ``mips_kernels.py``, ``mip_kernel_variants.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import gputex  # noqa: E402

FMA = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> prm: vec4<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var a = vec4<T>(T(gid.x) * 1e-9, T(1.0), T(2.0), T(3.0));
    var b = vec4<T>(T(0.5), T(0.25), T(0.125), T(0.0625));
    let m = T(0.999999);
    for (var i = 0u; i < prm.x; i++) {
        a = a * m + b;
        b = b * m + a;
    }
    if (a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w == T(-1.0)) {
        out[gid.x] = 1u;
    }
}
"""
DIV = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> prm: vec4<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var a = vec4<T>(T(gid.x) + 1.5, T(1.25), T(2.5), T(3.75));
    let d = vec4<T>(T(1.0000001), T(1.0000002), T(1.0000003), T(1.0000004));
    for (var i = 0u; i < prm.x; i++) {
        a = a / d + T(1.0);
    }
    if (a.x + a.y + a.z + a.w == T(-1.0)) {
        out[gid.x] = 1u;
    }
}
"""
SMEM = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> prm: vec4<u32>;
var<workgroup> tab: array<T, 2048>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    for (var k = li; k < 2048u; k += 256u) {
        tab[k] = T(k);
    }
    workgroupBarrier();
    var s = vec4<T>(T(0.0), T(0.0), T(0.0), T(0.0));
    var j = li;
    for (var i = 0u; i < prm.x; i++) {
        s += vec4<T>(tab[j & 2047u], tab[(j + 256u) & 2047u], tab[(j + 512u) & 2047u], tab[(j + 768u) & 2047u]);
        j += 1u;
    }
    if (s.x + s.y + s.z + s.w == T(-1.0)) {
        out[gid.x] = 1u;
    }
}
"""
KERNELS = {"fma f64": (FMA, "f64", 8), "fma f32": (FMA, "f32", 8), "div f64": (DIV, "f64", 4),
           "div f32": (DIV, "f32", 4), "smem f64": (SMEM, "f64", 4), "smem f32": (SMEM, "f32", 4)}


def main() -> None:
    import wgpu

    from gputex.kernels import timestamps

    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=4224)
    ap.add_argument("--iters", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; shader-f64: {gpu.has_feature('shader-f64')}", flush=True)
    out = gpu.device.create_buffer(size=args.groups * 256 * 4, usage=wgpu.BufferUsage.STORAGE)
    prm = gpu.uniform(struct.pack("<4I", args.iters, 0, 0, 0))
    for name, (text, t, ops) in KERNELS.items():
        if t == "f64" and not gpu.has_feature("shader-f64"):
            continue
        module = gpu.device.create_shader_module(code=text.replace("T", t))
        pipe = gpu.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        bind = gpu.device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": out, "offset": 0, "size": out.size}},
            {"binding": 1, "resource": {"buffer": prm}}])
        times = []
        for _ in range(args.repeat + 2):
            q = timestamps(gpu, 1)
            enc = gpu.device.create_command_encoder()
            cp = enc.begin_compute_pass(timestamp_writes=q.next())
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, bind)
            cp.dispatch_workgroups(args.groups, 1, 1)
            cp.end()
            q.resolve(enc)
            gpu.device.queue.submit([enc.finish()])
            times.append(q.read()[0])
        ns = statistics.median(times[2:])
        count = args.groups * 256 * args.iters * ops
        print(f"  {name:>9}: {ns / 1e6:8.3f} ms  {count / ns:9.1f} G operations/s "
              f"({'FMA: one multiply-add an operation' if 'fma' in name else 'a division / a loaded value an operation'})",
              flush=True)


if __name__ == "__main__":
    main()
