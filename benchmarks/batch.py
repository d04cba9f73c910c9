"""Batch throughput: gputex against the codecs alone and a plain sequential script, same run.

    python benchmarks/batch.py [--count 48] [--size 2048] [--jobs N] [--levels fast 1 6]
                               [--variants "" GPUTEX_WORKERS=8 ...] [--trace [--save DIR]]
                               [--big | --only-big]

Builds its own corpus (photo-like PNGs of SIZE^2 plus odd sizes), then measures:

1. gputex ``capture --mips --level all`` (a fresh process per setting, as a user runs it);
2. the codecs alone: the same decodes of the same inputs and the same encodes of the same
   output levels, no GPU, same settings, in the same pool (``--jobs`` threads, and the same
   worker processes gputex starts), also in a fresh process. Both are timed from process
   start to exit (the loading of (1)'s outputs, which (2) re-encodes, is not counted);
3. a plain sequential script a user would write: Pillow decode, numpy mips with the same
   filter (box, linear light, alpha-weighted; exact area weights), Pillow PNG save at its
   default level.

``--variants`` runs (1) and (2) once per environment (``NAME=VALUE,NAME=VALUE``; "" is the
default), e.g. ``GPUTEX_WORKERS=8``. ``--trace`` records (1) with
``GPUTEX_TRACE`` and prints where its time went (``benchmarks/timeline.py``); ``--save DIR``
keeps each traced run's file there.
``--big`` also captures one 16384^2 RGBA8 image and reports peak RSS against its decoded size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import gputex  # noqa: E402


def photo(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.sin(x / (60 + seed % 50)) * 60 + np.cos(y / (40 + seed % 30)) * 50 + 128
    chans = [base + rng.normal(0, 6, base.shape), base * 0.8 + 30 + rng.normal(0, 6, base.shape),
             255 - base + rng.normal(0, 6, base.shape), np.full(base.shape, 255.0)]
    return np.stack(chans, -1).clip(0, 255).astype(np.uint8)


def _write_one(job: tuple[str, int, int, int]) -> str:
    import fpng

    path, h, w, seed = job
    with open(path, "wb") as f:
        f.write(fpng.from_ndarray(photo(h, w, seed)))
    return path


def make_corpus(folder: str, count: int, size: int, jobs: int = 1) -> list[str]:
    """``count`` photo-like PNGs (every sixth odd-sized), written by ``jobs`` processes (the
    same files as one process writes)."""
    from concurrent.futures import ProcessPoolExecutor

    todo = [(os.path.join(folder, f"img{i:03d}.png"), *((size, size) if i % 6 else (size - 49, size - 511)), i)
            for i in range(count)]
    if jobs <= 1:
        return [_write_one(job) for job in todo]
    with ProcessPoolExecutor(jobs) as ex:
        return list(ex.map(_write_one, todo))


# The child runs the ``gputex`` command as the console script does (gputex.start.console: the
# early fork server of a batch's workers, the adapter listed while the CLI imports, the lean
# exit; until 2026-12-01 it called gputex.cli.main, which has none of them) and reports its own
# VmHWM at exit (a forked child's ru_maxrss includes the parent's peak), from its own process
# only (the fork server and the workers forked from it inherit the handler).
_CHILD = ("import atexit, os, sys\n_pid = os.getpid()\n\n"
          "def _hwm():\n    if os.getpid() == _pid:\n"
          "        hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
          "        print('VMHWM', hwm, file=sys.stderr, flush=True)\n\n"
          "atexit.register(_hwm)\nfrom gputex.start import console\nconsole()\n")


def run_gputex(paths: list[str], out: str, jobs: int, level: str, env: dict | None = None) -> tuple[float, float]:
    """Seconds and peak RSS (MB, the process's own VmHWM) of one ``gputex capture`` process."""
    argv = ["gputex", "capture", *paths, "-o", out, "--mips", "--level", "all", "--jobs", str(jobs),
            "--png-compression", level]
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", f"import sys; sys.argv = {argv!r}\n" + _CHILD],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"gputex failed: {p.stderr}")
    hwm = [ln for ln in p.stderr.splitlines() if ln.startswith("VMHWM")][-1].split()[1]
    return secs, int(hwm) / 1024


def load_outputs(out: str) -> dict[str, list[np.ndarray]]:
    import imagecodecs

    levels: dict[str, list] = {}
    for name in sorted(os.listdir(out)):
        stem = name.rsplit("_level", 1)[0]
        levels.setdefault(stem, []).append(imagecodecs.png_decode(open(os.path.join(out, name), "rb").read()))
    return levels


def run_codecs(paths, levels, jobs: int, level: str, folder: str) -> float:
    """The same decodes and encodes, no GPU, in a pool of ``jobs`` threads."""
    png_level = None if level == "fast" else int(level)

    from gputex.workers import codec_workers, decode_image, encode_images, worker_count

    def one(i_path):
        i, path = i_path
        decode_image(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        encode_images([(os.path.join(folder, f"{stem}_level{lv}.png"), a) for lv, a in enumerate(levels[stem])],
                      png_level=png_level)

    t0 = time.perf_counter()
    # the same pool as gputex: jobs threads, and the codecs in worker processes where gputex has them
    with codec_workers(worker_count(jobs, len(paths))), ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, enumerate(paths)))
    return time.perf_counter() - t0


def run_codecs_process(paths, out: str, jobs: int, level: str, folder: str, env: dict | None = None) -> float:
    """(2) in a fresh process: seconds from its start to its end, less the loading of ``out``."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--codecs-child", json.dumps(
        {"paths": paths, "out": out, "jobs": jobs, "level": level, "folder": folder})],
        capture_output=True, text=True, env={**os.environ, **(env or {})})
    if p.returncode != 0:
        raise SystemExit(f"codecs-alone run failed: {p.stderr}")
    return float(p.stdout.split()[-1])


def codecs_child(spec: str) -> None:
    from gputex.trace import process_start

    t_start = process_start()
    from gputex import workers  # noqa: F401  (what a codec script imports: numpy, the pool)

    t_ready = time.time()
    a = json.loads(spec)
    levels = load_outputs(a["out"])
    secs = run_codecs(a["paths"], levels, a["jobs"], a["level"], a["folder"])
    print(f"{t_ready - t_start + secs:.6f}")


def box_matrix(n: int, m: int) -> np.ndarray:
    M = np.zeros((m, n), np.float32)
    for j in range(m):
        lo, hi = j * n / m, (j + 1) * n / m
        for t in range(math.floor(lo), math.ceil(hi)):
            M[j, t] = min(t + 1, hi) - max(t, lo)
    return M / M.sum(1, keepdims=True)


def numpy_mips(a: np.ndarray) -> list[np.ndarray]:
    """Box over the base footprint, linear light, weighted alpha (what gputex computes)."""
    lut = np.where(np.arange(256) / 255 <= 0.04045, np.arange(256) / 255 / 12.92,
                   ((np.arange(256) / 255 + 0.055) / 1.055) ** 2.4).astype(np.float32)
    alpha = a[..., 3:].astype(np.float32) / 255
    lin = np.concatenate([lut[a[..., :3]] * alpha, alpha], -1)
    h, w = a.shape[:2]
    out = []
    for lv in range(1, max(h, w).bit_length()):
        dh, dw = max(1, h >> lv), max(1, w >> lv)
        t = np.tensordot(box_matrix(h, dh), lin, axes=(1, 0))
        m = np.einsum("yxc,Xx->yXc", t, box_matrix(w, dw), optimize=True)
        al = m[..., 3:]
        rgb = np.divide(m[..., :3], al, out=np.zeros_like(m[..., :3]), where=al > 0)
        srgb = np.where(rgb <= 0.0031308, rgb * 12.92, 1.055 * np.power(rgb, 1 / 2.4) - 0.055)
        out.append(np.floor(np.concatenate([srgb, al], -1) * 255 + 0.5).astype(np.uint8))
    return out


def run_sequential(paths: list[str], folder: str) -> float:
    from PIL import Image

    t0 = time.perf_counter()
    for path in paths:
        a = np.asarray(Image.open(path).convert("RGBA"))
        stem = os.path.splitext(os.path.basename(path))[0]
        Image.fromarray(a).save(os.path.join(folder, f"{stem}_level0.png"))
        for lv, m in enumerate(numpy_mips(a), start=1):
            Image.fromarray(m).save(os.path.join(folder, f"{stem}_level{lv}.png"))
    return time.perf_counter() - t0


def big(tmp: str) -> None:
    import fpng

    n = 16384
    a = np.concatenate([photo(1024, n, 1)] * (n // 1024))  # photo() at full size needs ~30 GB of temporaries
    src = os.path.join(tmp, "big.png")
    with open(src, "wb") as f:
        f.write(fpng.from_ndarray(a))
    del a
    secs, rss = run_gputex([src], os.path.join(tmp, "bigout"), 1, "fast")
    decoded = n * n * 4 / 2**20
    print(f"\n16384x16384 RGBA8 capture: {secs:.1f} s, peak RSS {rss:.0f} MB = {rss / decoded:.2f}x "
          f"the decoded image ({decoded:.0f} MB)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=48)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--levels", nargs="+", default=["fast", "1", "6"])
    ap.add_argument("--variants", nargs="+", default=[""])
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--save", help="with --trace: keep each traced run's file there (trace-LEVEL-N.jsonl)")
    ap.add_argument("--skip-sequential", action="store_true")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--only-big", action="store_true", help="only the 16384^2 peak-RSS measurement")
    ap.add_argument("--codecs-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.codecs_child:
        codecs_child(args.codecs_child)
        return
    if args.only_big:
        with tempfile.TemporaryDirectory() as tmp:
            big(tmp)
        return
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus")
        os.makedirs(corpus)
        paths = make_corpus(corpus, args.count, args.size, args.jobs)
        mb = sum(gputex.decode(p).pixels.nbytes for p in paths[:6]) / 6 * len(paths) / 1e6
        print(f"corpus: {len(paths)} PNGs ({args.size}^2, every sixth {args.size - 511}x{args.size - 49}), "
              f"{mb:.0f} MB decoded; {os.cpu_count()} cores, --jobs {args.jobs}; "
              f"adapter {gputex.Session().name}")
        for variant in args.variants:
            env = dict(kv.split("=", 1) for kv in variant.split(",") if kv)
            for level in args.levels:
                out = os.path.join(tmp, f"out-{level}")
                shutil.rmtree(out, ignore_errors=True)
                trace = os.path.join(tmp, "trace.jsonl")
                if args.trace:
                    env["GPUTEX_TRACE"] = trace
                    if os.path.exists(trace):
                        os.unlink(trace)
                t1, rss = run_gputex(paths, out, args.jobs, level, env)
                env.pop("GPUTEX_TRACE", None)
                codecs = os.path.join(tmp, f"codecs-{level}")
                shutil.rmtree(codecs, ignore_errors=True)
                os.makedirs(codecs)
                t2 = run_codecs_process(paths, out, args.jobs, level, codecs, env)
                print(f"[{variant or 'default'}] --png-compression {level}: (1) gputex {len(paths) / t1:6.2f} images/s "
                      f"{mb / t1:7.1f} MB/s (peak RSS {rss:.0f} MB); (2) codecs alone {len(paths) / t2:6.2f} images/s; "
                      f"(1)/(2) = {t2 / t1:.2f}", flush=True)
                if args.trace:
                    from timeline import summary

                    print(summary(trace), flush=True)
                    if args.save:
                        os.makedirs(args.save, exist_ok=True)
                        shutil.copy(trace, os.path.join(args.save, f"trace-{level}-{len(os.listdir(args.save))}.jsonl"))
        if not args.skip_sequential:
            seq = os.path.join(tmp, "seq")
            os.makedirs(seq)
            t3 = run_sequential(paths, seq)
            t1, _ = run_gputex(paths, os.path.join(tmp, "out-again"), args.jobs, "fast")
            print(f"(3) sequential Pillow + numpy + Pillow save: {len(paths) / t3:6.2f} images/s "
                  f"-> gputex (fast) is {t3 / t1:.1f}x faster")
        if args.big:
            big(tmp)
    print(f"benchmark process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
