"""Per-image cost of the in-order GPU thread's step (gputex.capture_stage.capture_gpu_stage), alone (no codecs).

    python benchmarks/gpu_stage.py [--size 2048] [--count 20] [--group 8] [--budget-mib 256]
                                   [--upload-o N [--many K]] [--profile K]

Upload (convert + transfer), mips (record + submit), capture of every level (wait + copy
out), for one RGBA8 sRGB image repeated; milliseconds per image, best and median.

Then, in the same run, the texture-file path (what ``upload -o X.ktx2`` does on the in-order
thread) for ``--group`` images: one by one (upload -> generate_mips -> capture_texture_file)
against ``gpu_batch.process_group`` (one staging map, one copy submission and one read-back
map per group); milliseconds per image, best of ``--repeat``, the ratio, and a check that
both give the same bytes.

``--upload-o N``: instead, the in-order step of ``upload IMG --mips -o DIR`` (KTX2, deferred
read-back: :func:`gputex.upload_stage.upload_gpu_stage`) for ``N`` images of ``--size``², every
sixth odd-sized as in ``benchmarks/peer_ktx.py``, alone on a fresh session: the first odd and
the first power-of-two image (pipelines and self-checks), then ms per image of each stage
(the read-back finished and the file written after the timed step, on the same thread); with
``--profile K`` the K costliest functions of the timed steps (cProfile, tottime); with
``--many K`` K inputs a step through the stage's ``many`` (their read-backs in one map, as the
batch runs them), the step's time divided among them.
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
    ap.add_argument("--upload-o", type=int, default=0, metavar="N")
    ap.add_argument("--profile", type=int, default=0, metavar="K")
    ap.add_argument("--many", type=int, default=1, metavar="K",
                    help="with --upload-o: K inputs a step through the stage's `many` (one read-back map)")
    args = ap.parse_args()
    if args.upload_o:
        upload_o(args)
        return
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


def upload_o(args) -> None:
    """``--upload-o``: the in-order step of ``upload -o DIR`` per image, alone."""
    import cProfile
    import pstats
    import tempfile

    from gputex.outputs import OutputNames
    from gputex.upload_stage import upload_encode_stage, upload_gpu_stage

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from batch import photo

    n, size = args.upload_o, args.size
    shapes = [(size, size) if i % 6 else (size - 49, size - 511) for i in range(n)]
    pixels = {s: photo(*s, 7) for s in set(shapes)}
    t0 = time.perf_counter()
    gpu = gputex.Session()
    made = time.perf_counter() - t0
    opts = Options(mips=True, format="rgba8unorm-srgb")
    prof = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory() as out:
        opts.out = out
        names = OutputNames(out, [])
        stage, write = upload_gpu_stage(gpu, opts, names, defer=True), upload_encode_stage(opts)
        rows, firsts = [], []
        many = getattr(stage, "many", None) if args.many > 1 else None
        i = 0
        while i < len(shapes):
            first = i < 2
            k = 1 if first or many is None else min(args.many, len(shapes) - i)
            entries = []
            for j in range(i, i + k):
                item = Item(f"img{j:03d}.png")
                entries.append((item, Decoded(gputex.from_array(pixels[shapes[j]])), Result(source=item.path)))
            if prof and not first:
                prof.enable()
            t1 = time.perf_counter()
            if k > 1:
                got = many(entries)
            else:
                got = [stage(*entries[0])]
            took = (time.perf_counter() - t1) / k
            if prof and not first:
                prof.disable()
            for (item, _, result), pending in zip(entries, got):
                assert pending is not None, result.error
                write(item, pending, result)
                assert result.ok, result.error
                if first:
                    shape = shapes[i]
                    firsts.append(f"{shape[1]}x{shape[0]} {took * 1e3:.1f} ms (mips {result.timings['mips'] * 1e3:.1f})")
                else:
                    rows.append((took * 1e3, *(result.timings.get(key, 0.0) * 1e3 for key in ("upload", "mips"))))
            i += k
    print(f"{gpu.name}: Session() {made * 1e3:.0f} ms; first images (fresh session): {'; '.join(firsts)}")
    med = [statistics.median(r[k] for r in rows) for k in range(3)]
    print(f"upload -o step, {len(rows)} images after those, {args.many} a step, ms per image (median): total {med[0]:.2f}, "
          f"upload {med[1]:.2f}, mips {med[2]:.2f}, the rest (read-back copies submitted, names) "
          f"{med[0] - med[1] - med[2]:.2f}")
    if prof:
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile)
        pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
