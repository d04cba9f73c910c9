"""Upload and capture throughput against baselines measured in the same run.

    python benchmarks/transfer.py [--sizes 4096 8192] [--repeat 5] [--threads 4 8] [--json OUT.json]

Baselines: a one-thread numpy copy of the same bytes (memcpy), and wgpu-py's
``queue.read_texture`` for capture. Each figure is the best of ``--repeat`` runs,
timed from the call to the GPU work being done (a buffer map waits for it).
Capture runs once per ``--threads`` value (copy-out threads; default: gputex's own choice).
``chain_*`` rows read a full mip chain back as a texture file (``capture_texture_file``, what
``upload -o X.ktx2`` writes), against a one-thread memcpy of the chain's bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex import parallel  # noqa: E402
from gputex.capture import capture_bytes  # noqa: E402

default_threads = None


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def chain_rows(gpu, a, w, n, args) -> dict:
    """Read a full mip chain (level 0 = ``a``, the rest made by the GPU) back as a texture file."""
    from gputex.capture import capture_texture_file
    from gputex.layout import mip_count
    from gputex.mips import generate_mips
    from gputex.upload import upload

    levels = mip_count(w, n)
    import wgpu

    tex = upload(gpu, gputex.from_array(a, "linear"), "rgba8unorm", levels=levels,
                 usage=wgpu.TextureUsage.TEXTURE_BINDING)
    generate_mips(tex)
    gpu.wait()
    tf = capture_texture_file(tex)
    whole = np.concatenate([np.frombuffer(lv, np.uint8) for lv in tf.levels])
    copy = np.empty_like(whole)
    res = {"levels": levels, "bytes": whole.nbytes, "memcpy_s": best(lambda: np.copyto(copy, whole), args.repeat)}
    assert bytes(tf.levels[0]) == a.tobytes(), "chain level 0 mismatch"
    for threads in args.threads or [parallel.read_threads()]:
        parallel.set_read_threads(threads)
        for budget in (64 << 20, 256 << 20, 2 * whole.nbytes + (8 << 20)):
            res[f"chain_{budget >> 20}MiB_{threads}thr_s"] = best(
                lambda: capture_texture_file(tex, budget=budget), args.repeat)
            again = capture_texture_file(tex, budget=budget)
            assert [bytes(x) for x in again.levels] == [bytes(x) for x in tf.levels], "chain capture differs"
    parallel.set_read_threads(default_threads)
    tex.destroy()
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--odd", action="store_true", help="also (n-1) x n: rows that need 256-byte padding")
    ap.add_argument("--threads", type=int, nargs="+", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    gpu = gputex.Session()
    print(f"adapter: {gpu.name}")
    rows = []
    shapes = [(n, n) for n in args.sizes] + ([(n - 1, n) for n in args.sizes] if args.odd else [])
    for w, n in shapes:
        a = np.random.default_rng(0).integers(0, 256, (n, w, 4), np.uint8)
        nbytes = a.nbytes
        image = gputex.from_array(a, "linear")
        dst = np.empty_like(a)
        t_memcpy = best(lambda: np.copyto(dst, a), args.repeat)

        from gputex.texture import create_texture
        from gputex.upload import write_image

        tex = create_texture(gpu, gputex.get_format("rgba8unorm"), w, n)
        res = {"width": w, "height": n, "bytes": nbytes, "memcpy_s": t_memcpy}
        for path, budget in (("write_texture", nbytes), ("write_texture", 64 << 20),
                             ("staging", 64 << 20), ("staging", 2 * nbytes)):
            def up():
                write_image(tex, image, path=path, budget=budget)
                gpu.wait()
            up()  # warm: staging ring, allocations
            res[f"upload_{path}_{budget >> 20}MiB_s"] = best(up, args.repeat)
        out = np.empty((n, w * 4), np.uint8)

        def cap(budget, buffers):
            capture_bytes(tex, budget=budget, out=out, buffers=buffers)

        for threads in args.threads or [parallel.read_threads()]:
            parallel.set_read_threads(threads)
            for budget, buffers in ((64 << 20, 2), (64 << 20, 1), (128 << 20, 2), (256 << 20, 2),
                                    (2 * nbytes + (8 << 20), 2)):
                cap(budget, buffers)
                name = f"capture_{budget >> 20}MiB_{buffers}buf_{threads}thr_s"
                res[name] = best(lambda: cap(budget, buffers), args.repeat)
                clock = {}
                capture_bytes(tex, budget=budget, out=out, buffers=buffers, timings=clock)
                print(f"  capture {budget >> 20} MiB x{buffers}, {threads} threads: {clock['bands']} bands; "
                      f"waiting for maps {clock['wait'] * 1e3:.1f} ms, copying out {clock['copy'] * 1e3:.1f} ms, "
                      f"unmapping {clock['unmap'] * 1e3:.1f} ms")
            assert np.array_equal(out.reshape(n, w, 4), a), "capture mismatch"
        parallel.set_read_threads(default_threads)

        def read_texture():
            gpu.device.queue.read_texture({"texture": tex.texture}, {"bytes_per_row": w * 4}, (w, n, 1))

        read_texture()
        res["read_texture_s"] = best(read_texture, max(2, args.repeat // 2))
        tex.destroy()
        chain = chain_rows(gpu, a, w, n, args)
        rows.append(res)

        gb = nbytes / 1e9
        print(f"\n{w}x{n} RGBA8 ({nbytes / 2**20:.0f} MiB); memcpy (one numpy copy) {gb / t_memcpy:.2f} GB/s")
        for k, v in res.items():
            if k.endswith("_s") and k != "memcpy_s":
                print(f"  {k[:-2]:34} {gb / v:7.2f} GB/s   {t_memcpy / v:5.2f}x memcpy")
        best_cap = min(v for k, v in res.items() if k.startswith("capture_"))
        print(f"  capture vs queue.read_texture: {res['read_texture_s'] / best_cap:.2f}x")
        cb = chain["bytes"]
        print(f"  full chain, {chain['levels']} levels ({cb / 2**20:.0f} MiB); memcpy {cb / 1e9 / chain['memcpy_s']:.2f} GB/s")
        for k, v in chain.items():
            if k.startswith("chain_"):
                print(f"  {k[:-2]:34} {cb / 1e9 / v:7.2f} GB/s   {chain['memcpy_s'] / v:5.2f}x memcpy")
        res.update(chain)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": gpu.name, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
