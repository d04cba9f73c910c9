"""Per-image cost of the in-order GPU thread's step (gputex.capture_stage.capture_gpu_stage), alone (no codecs).

    python benchmarks/gpu_stage.py [--size 2048] [--count 20] [--group 8] [--budget-mib 256]

Upload (convert + transfer), mips (record + submit), capture of every level (wait + copy
out), for one RGBA8 sRGB image repeated; milliseconds per image, best and median.

Then, in the same run, the texture-file path (what ``upload -o X.ktx2`` does on the in-order
thread) for ``--group`` images: one by one (upload -> generate_mips -> capture_texture_file)
against ``gpu_batch.process_group`` (one staging map, one copy submission and one read-back
map per group); milliseconds per image, best of ``--repeat``, the ratio, and a check that
both give the same bytes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.batch import Item  # noqa: E402
from gputex.capture_stage import capture_gpu_stage  # noqa: E402
from gputex.outputs import OutputNames  # noqa: E402
from gputex.pipeline import Decoded, Options, Result  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--budget-mib", type=int, default=256)
    args = ap.parse_args()
    import tempfile

    gpu = gputex.Session()
    a = np.random.default_rng(0).integers(0, 256, (args.size, args.size, 4), np.uint8)
    image = gputex.from_array(a)
    opts = Options(mips=True, level="all")
    times: dict[str, list] = {"upload": [], "mips": [], "capture": [], "total": []}
    levels = 0
    with tempfile.TemporaryDirectory() as out:
        for i in range(args.count + 2):
            # the batch's own in-order step (gputex.pipeline): upload, mips, capture of every level,
            # output names reserved; nothing is encoded
            stage = capture_gpu_stage(gpu, OutputNames(out, []), opts)
            result = Result(source="bench.png")
            t0 = time.perf_counter()
            captured = stage(Item("bench.png"), Decoded(image), result)
            total = time.perf_counter() - t0
            assert captured is not None, result.error
            levels = len(captured.outputs)
            if captured.block is not None:
                captured.block.close()
            if i >= 2:
                for k in ("upload", "mips", "capture"):
                    times[k].append(result.timings.get(k, 0.0) * 1e3)
                times["total"].append(total * 1e3)
    print(f"{gpu.name}: {args.size}^2 RGBA8, {levels} levels, ms per image (best / median of {args.count}): "
          + ", ".join(f"{k} {min(v):.2f} / {statistics.median(v):.2f}" for k, v in times.items()))
    grouped(gpu, args)


def grouped(gpu, args) -> None:
    import wgpu

    from gputex.capture import capture_texture_file
    from gputex.gpu_batch import GpuSteps, process_group
    from gputex.mips import generate_mips
    from gputex.upload import upload

    rng = np.random.default_rng(1)
    images = [gputex.from_array(rng.integers(0, 256, (args.size, args.size, 4), np.uint8))
              for _ in range(args.group)]
    steps = GpuSteps(format="rgba8unorm-srgb")

    def one_by_one():
        out = []
        for image in images:
            tex = upload(gpu, image, steps.format, levels=steps.levels(image),
                         usage=wgpu.TextureUsage.TEXTURE_BINDING)
            generate_mips(tex)
            out.append(capture_texture_file(tex))
            tex.destroy()
        return out

    def together():
        return process_group(gpu, images, steps, budget=args.budget_mib << 20)

    a, b = one_by_one(), together()  # warm: pipelines, buffers
    same = all([bytes(x) for x in p.levels] == [bytes(x) for x in q.levels] for p, q in zip(a, b))
    del a, b
    best = {}
    for name, fn in (("per-image", one_by_one), ("grouped", together)):
        runs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        best[name] = min(runs) * 1e3 / args.group
    print(f"{gpu.name}: texture-file path, {args.group} x {args.size}^2 RGBA8 sRGB with mips, budget "
          f"{args.budget_mib} MiB, ms per image (best of {args.repeat}): per-image {best['per-image']:.2f}, "
          f"grouped {best['grouped']:.2f}; grouped is {best['per-image'] / best['grouped']:.2f}x "
          f"the per-image speed; same bytes: {same}")


if __name__ == "__main__":
    main()
