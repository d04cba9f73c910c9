"""Images -> mipped KTX2: gputex against Khronos ``ktx create`` and the codecs alone, same run.

    python benchmarks/peer_ktx.py [--sizes 2048 4096 8192] [--count 48] [--batch-size 2048]
                                  [--jobs N] [--ktx PATH] [--skip-single] [--skip-batch]
                                  [--trace] [--profile N] [--repeat N] [--variants ENV=V ...]
                                  [--compare-with CHECKOUT ...] [--before CHECKOUT] [--skip-dds]
                                  [--ktx2-only] [--compile]
                                  [--trace-single DIR] [--save DIR] [--warm-up]

Builds its own corpus (photo-like RGBA PNGs, written by fpng as ``benchmarks/batch.py`` does),
then measures, each as a fresh process timed from start to exit:

1. single images (one per ``--sizes``): ``gputex upload IMG --format rgba8unorm-srgb --mips
   --filter box -o X.ktx2`` (also ``-o X.dds``), and ``ktx create --format R8G8B8A8_SRGB
   --assign-tf srgb --generate-mipmap --mipmap-filter box --mipmap-wrap clamp``; plus the PNG
   decode alone (``decode`` column: the floor of the job);
2. a batch of ``--count`` images (``--batch-size``², every sixth odd-sized): one ``gputex upload
   ... -o DIR --container ktx2|dds --jobs N`` process and ``gputex capture --mips --level all``
   (PNG levels), against ``ktx create`` run one process per core (``xargs -P N``, what a user
   would do);
3. the codecs alone for the KTX2 path: the same decodes and the same file writes (the mip
   chain's bytes, computed once beforehand, written as KTX2 by gputex's writer), same pool
   size, no GPU.

``--trace`` records the KTX2 batch run (``GPUTEX_TRACE``) and prints where its wall time went
(``benchmarks/timeline.py``), and the first run of the codecs alone (its start-up and decodes;
that run's parent imports gputex before its pool starts); ``--profile N`` adds one more KTX2 batch run under
``GPUTEX_PROFILE`` (its time not counted) and prints the in-order thread's N costliest
functions. ``--repeat N`` runs the KTX2 batch and the codecs alone N times each, alternating,
and prints every time (the ratio uses the best of each). The corpus is written by ``--jobs``
processes (same files as one process would write). ``--variants`` runs the KTX2 batch again
under each environment setting (``GPUTEX_WORKERS=8``; several joined by ``,``).
``--compare-with CHECKOUT ...`` runs the KTX2 batch (``--repeat`` times, alternating with this
checkout's runs), the DDS and the PNG-level batches once more with each other checkout of gputex
(e.g. the commit before a change: the "before" column of the same run), and says whether its
KTX2 files are byte-identical to this checkout's. ``--ktx2-only`` leaves the DDS and PNG-level
runs out; ``--compile`` byte-compiles the checkouts and the packages gputex imports first (see
:func:`compile_all`).
``--before CHECKOUT`` adds a column for the single images: the same ``gputex upload -o X.ktx2``
run from another checkout (e.g. the main branch), in the same run, and its ratio to this one's.
``--save DIR`` keeps the batch's trace and profile files there (``trace.jsonl``,
``profile.out``), and a trace of every other KTX2 batch run (``run-N-LABEL.jsonl``), for a
closer look (``pstats``, ``benchmarks/timeline.py``). ``--warm-up`` runs the KTX2 batch once,
untimed, before anything else: the first gputex process on a fresh machine pays the driver's
shader compiles and fills gputex's cache of wgpu's parsed header (``~/.cache/gputex``), which
no later run (and no user's second run) pays.
``--trace-single DIR`` writes a ``GPUTEX_TRACE`` of each single-image KTX2 run there (read them
with ``benchmarks/timeline.py``).

It prints seconds and ratios (>1: gputex faster). ``ktx`` is looked up at ``--ktx``, then
``../shared/peers/ktx`` beside the checkout, then PATH; without it the peer columns are
skipped, saying so.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from batch import photo  # noqa: E402


def _write_one(job: tuple[str, int, int, int]) -> str:
    import fpng

    path, h, w, seed = job
    with open(path, "wb") as f:
        f.write(fpng.from_ndarray(photo(h, w, seed)))
    return path


def make_corpus(folder: str, count: int, size: int, jobs: int) -> list[str]:
    """``benchmarks/batch.py``'s corpus (the same files), written by ``jobs`` processes."""
    from concurrent.futures import ProcessPoolExecutor

    todo = [(os.path.join(folder, f"img{i:03d}.png"), *((size, size) if i % 6 else (size - 49, size - 511)), i)
            for i in range(count)]
    with ProcessPoolExecutor(max(1, jobs)) as ex:
        return list(ex.map(_write_one, todo))


def find_ktx(explicit: str | None) -> str | None:
    for cand in (explicit, os.path.join(ROOT, "..", "shared", "peers", "ktx"), shutil.which("ktx")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    return None


def timed(cmd: list[str], **kw) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    secs = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd[:6])}...\n{p.stderr[-2000:]}")
    return secs


GPUTEX = [sys.executable, "-m", "gputex"]
KTX_ARGS = ["create", "--format", "R8G8B8A8_SRGB", "--assign-tf", "srgb", "--generate-mipmap",
            "--mipmap-filter", "box", "--mipmap-wrap", "clamp"]


def batch_command(paths: list[str], out: str, container: str, jobs: int) -> list[str]:
    """The timed gputex batch: ``paths`` -> mipped ``container`` files in ``out``, ``jobs`` at a time."""
    return GPUTEX + ["upload", *paths, "--format", "rgba8unorm-srgb", "--mips", "--filter", "box", "-o", out,
                     "--container", container, "--jobs", str(jobs)]


def ktx_batch(ktx: str, paths: list[str], out: str, jobs: int) -> float:
    """Seconds for ``ktx create`` over ``paths`` into ``out``, one process per input, ``jobs`` at a
    time (``xargs -P``, as a user scripts it)."""
    script = f'"{ktx}" {" ".join(KTX_ARGS)} "$0" "{out}/$(basename "$0").ktx2"'
    return timed(["bash", "-c", f'printf "%s\\0" "$@" | xargs -0 -P {jobs} -n 1 bash -c \'{script}\'', "_", *paths])


def with_tree(tree: str | None, trace: str | None = None) -> dict:
    """The environment of a gputex run from checkout ``tree`` (None: this one), tracing to ``trace``."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.path.abspath(tree) + os.pathsep + env.get("PYTHONPATH", "")
    if trace:
        env["GPUTEX_TRACE"] = trace
    return env


def decode_alone(path: str) -> float:
    code = f"import gputex; gputex.decode({path!r})"
    return timed([sys.executable, "-c", code], env=with_tree(ROOT), cwd=os.path.dirname(path))


def codecs_alone(paths: list[str], out: str, jobs: int, trace: str | None = None) -> float:
    """Decode each input and write its (precomputed) mip chain as KTX2, ``jobs`` processes, no GPU.
    ``trace``: a ``GPUTEX_TRACE`` file for the run (its start-up marked as gputex marks its own)."""
    import json

    spec = json.dumps({"paths": paths, "out": out})
    code = ("import json, os, sys\nfrom concurrent.futures import ProcessPoolExecutor\n"  # noqa: UP031 (%r)
            "if os.environ.get('GPUTEX_TRACE'):  # (traced runs only: gputex imported here first)\n"
            "    from gputex.trace import mark, process_start\n    mark('startup', process_start())\n"
            "sys.path.insert(0, %r)\nfrom peer_ktx import _codec_one\n"
            "s = json.loads(sys.argv[1])\n"
            "with ProcessPoolExecutor(%d) as ex:\n"
            "    list(ex.map(_codec_one, s['paths'], [s['out']] * len(s['paths'])))\n"
            % (HERE, jobs))
    return timed([sys.executable, "-c", code, spec], env=with_tree(ROOT, trace))


def _write_photo(path: str, size: int) -> None:
    import fpng

    with open(path, "wb") as f:
        f.write(fpng.from_ndarray(photo(size, size, size)))


def _codec_one(path: str, out: str) -> None:
    import numpy as np

    import gputex
    from gputex.formats import get_format
    from gputex.texfile import TextureFile, write_texture_file
    from gputex.trace import span

    with span("decode", path=path):
        img = gputex.decode(path)
    # The mip chain's bytes are the GPU's part and not computed here: level 0 is the decoded
    # RGBA pixels, the smaller levels zeros of the right sizes; the file write is real.
    h, w = img.pixels.shape[:2]
    levels = [np.ascontiguousarray(img.pixels).data]
    lh, lw = h, w
    while max(lh, lw) > 1:
        lh, lw = max(1, lh // 2), max(1, lw // 2)
        levels.append(bytes(lh * lw * 4))
    tf = TextureFile(format=get_format("rgba8unorm-srgb"), width=w, height=h, levels=levels,
                     color_space="srgb", container="ktx2", source=path)
    with span("encode", path=path):
        write_texture_file(tf, os.path.join(out, os.path.basename(path) + ".ktx2"))


def compile_all(trees: list[str]) -> None:
    """Byte-compile gputex in each checkout and the pure-Python packages it imports (``--compile``).
    ``pip install`` writes these ``.pyc`` files; a checkout run with ``PYTHONDONTWRITEBYTECODE``
    set (the H200 machine sets it, and its wheels are installed with ``--no-compile``) compiles
    every module from source in every process, the GPU process and each worker alike."""
    import compileall
    import importlib.util

    dirs = [os.path.join(os.path.abspath(t), "gputex") for t in trees]
    for name in ("wgpu", "cffi", "pycparser", "imagecodecs", "fpng", "PIL", "numpy", "typer", "click", "rich"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs += list(spec.submodule_search_locations)
    t0 = time.perf_counter()
    for d in dirs:
        if os.access(d, os.W_OK):
            compileall.compile_dir(d, quiet=1, workers=0)
    print(f"byte-compiled {len(dirs)} folders in {time.perf_counter() - t0:.1f} s", flush=True)


def _digests(folder: str) -> dict[str, str]:
    import hashlib

    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(folder))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[2048, 4096, 8192])
    ap.add_argument("--count", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ktx")
    ap.add_argument("--skip-single", action="store_true")
    ap.add_argument("--skip-batch", action="store_true")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--repeat", type=int, default=1, metavar="N")
    ap.add_argument("--variants", nargs="*", default=[], metavar="ENV=V")
    ap.add_argument("--compare-with", metavar="CHECKOUT", nargs="*", default=[])
    ap.add_argument("--ktx2-only", action="store_true", help="no DDS and PNG-level batch runs")
    ap.add_argument("--compile", action="store_true",
                    help="byte-compile the checkouts and the packages gputex imports first (as pip install does)")
    ap.add_argument("--skip-dds", action="store_true")
    ap.add_argument("--before", help="another checkout whose `gputex upload -o X.ktx2` is timed too")
    ap.add_argument("--trace-single", metavar="DIR", help="folder for a GPUTEX_TRACE of each single-image KTX2 run")
    ap.add_argument("--save", metavar="DIR", help="folder to keep the batch's trace.jsonl and profile.out in")
    ap.add_argument("--warm-up", action="store_true", help="one untimed KTX2 batch run first")
    args = ap.parse_args()
    ktx = find_ktx(args.ktx)
    print(f"ktx: {ktx or 'not found: peer columns skipped'}; jobs {args.jobs}")
    if args.compile:
        compile_all([ROOT, *args.compare_with, *([args.before] if args.before else [])])
    tmp = tempfile.mkdtemp(prefix="gputex-peer-")
    try:
        if not args.skip_single:
            print(f"\n{'image':>10} {'decode':>8} {'gputex ktx2':>12} {'gputex dds':>11} {'ktx':>8} "
                  f"{'ktx/gputex':>10} {'gputex/decode':>13}" + (f" {'before ktx2':>12} {'before/now':>10}"
                                                                  if args.before else ""))
            if args.trace_single:
                os.makedirs(args.trace_single, exist_ok=True)
            from concurrent.futures import ProcessPoolExecutor

            srcs = [os.path.join(tmp, f"one{size}.png") for size in args.sizes]
            with ProcessPoolExecutor(max(1, min(len(srcs), os.cpu_count() or 1))) as pool:  # the images, at once
                list(pool.map(_write_photo, srcs, args.sizes))
            for size, src in zip(args.sizes, srcs):
                dec = decode_alone(src)
                ktx2 = ["upload", src, "--format", "rgba8unorm-srgb", "--mips", "--filter", "box", "-o"]
                trace = os.path.join(args.trace_single, f"gputex-{size}.jsonl") if args.trace_single else None
                # cwd: the temp folder (``-m gputex`` puts cwd first on sys.path: run from a checkout's
                # root, every run, --before's too, would import that checkout's gputex)
                g = timed(GPUTEX + ktx2 + [os.path.join(tmp, f"g{size}.ktx2")], env=with_tree(ROOT, trace), cwd=tmp)
                gd = float("nan") if args.skip_dds else timed(GPUTEX + ktx2 + [os.path.join(tmp, f"g{size}.dds")],
                                                              env=with_tree(ROOT), cwd=tmp)
                k = timed([ktx, *KTX_ARGS, src, os.path.join(tmp, f"k{size}.ktx2")]) if ktx else float("nan")
                row = f"{size:>9}² {dec:>8.2f} {g:>12.2f} {gd:>11.2f} {k:>8.2f} {k / g:>10.2f} {g / dec:>13.2f}"
                if args.before:
                    b = timed(GPUTEX + ktx2 + [os.path.join(tmp, f"b{size}.ktx2")], env=with_tree(args.before), cwd=tmp)
                    with open(os.path.join(tmp, f"b{size}.ktx2"), "rb") as f1, \
                            open(os.path.join(tmp, f"g{size}.ktx2"), "rb") as f2:
                        same = f1.read() == f2.read()
                    row += f" {b:>12.2f} {b / g:>10.2f}" + ("" if same else "  OUTPUTS DIFFER")
                print(row, flush=True)
        if not args.skip_batch:
            corpus = os.path.join(tmp, "batch")
            os.makedirs(corpus)
            paths = make_corpus(corpus, args.count, args.batch_size, args.jobs)
            rows = []

            def upload(container: str, env=None, folder: str | None = None, root: str = ROOT) -> float:
                out = os.path.join(tmp, folder or "g_" + container)
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                # the checkout ``root`` first on PYTHONPATH, and the temp folder as cwd (``-m gputex``
                # puts cwd first): the run imports that checkout's gputex
                env = dict(env or os.environ)
                rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                        if p and os.path.abspath(p) not in (ROOT, root)]
                env["PYTHONPATH"] = os.pathsep.join([root, *rest])
                if args.save and "GPUTEX_TRACE" not in env and "GPUTEX_PROFILE" not in env:
                    os.makedirs(args.save, exist_ok=True)
                    saved[0] += 1
                    env["GPUTEX_TRACE"] = os.path.join(args.save, f"run-{saved[0]}-{folder or container}.jsonl")
                return timed(batch_command(paths, out, container, args.jobs), env=env, cwd=tmp)

            saved = [0]
            if args.warm_up:
                upload("ktx2", folder="warm-up")
            trace = os.path.join(tmp, "trace.jsonl")
            ktx2 = upload("ktx2", dict(os.environ, GPUTEX_TRACE=trace) if args.trace else None)
            rows.append(("gputex upload -> ktx2", ktx2))
            if args.trace:
                from timeline import summary

                print("\ntrace of the KTX2 batch:\n" + summary(trace, args.jobs), flush=True)
            if args.profile:
                import pstats

                prof = os.path.join(tmp, "profile.out")
                upload("ktx2", dict(os.environ, GPUTEX_PROFILE=prof))
                print("\nin-order thread of the KTX2 batch (cProfile, cumulative):", flush=True)
                pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
                pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile)
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                for name in ("trace.jsonl", "profile.out"):
                    if os.path.exists(os.path.join(tmp, name)):
                        shutil.copy(os.path.join(tmp, name), os.path.join(args.save, name))
            for variant in args.variants:
                env = dict(os.environ, **dict(kv.split("=", 1) for kv in variant.split(",")))
                rows.append((f"  ktx2 with {variant}", upload("ktx2", env, folder="variant")))
            others = [os.path.abspath(o) for o in args.compare_with]
            before: dict[str, list[float]] = {}
            for i, other in enumerate(others):
                before[other] = [upload("ktx2", folder=f"other{i}", root=other)]
                mine, theirs = _digests(os.path.join(tmp, "g_ktx2")), _digests(os.path.join(tmp, f"other{i}"))
                print(f"KTX2 files of {other}: {'byte-identical' if mine == theirs else 'DIFFERENT'} "
                      f"({len(mine)} and {len(theirs)} files)", flush=True)

            def capture(root: str = ROOT) -> float:
                out = os.path.join(tmp, "g_png")
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                return timed(GPUTEX + ["capture", *paths, "--mips", "--level", "all", "-o", out,
                                       "--jobs", str(args.jobs)], env=with_tree(root), cwd=tmp)

            if not args.ktx2_only:
                rows.append(("gputex upload -> dds", upload("dds")))
                rows.append(("gputex capture -> png levels", capture()))
                for i, other in enumerate(others):
                    rows.append((f"  dds with checkout {i + 1}", upload("dds", folder=f"other{i}", root=other)))
                    rows.append((f"  png levels with checkout {i + 1}", capture(other)))
            out = os.path.join(tmp, "codecs")
            os.makedirs(out)
            codecs_trace = os.path.join(tmp, "codecs-trace.jsonl") if args.trace else None
            codecs = codecs_alone(paths, out, args.jobs, codecs_trace)
            if codecs_trace:
                from timeline import summary

                print("\ntrace of the codecs alone (same start-up mark; decode and encode in its pool):\n"
                      + "\n".join(summary(codecs_trace, args.jobs).splitlines()[:5]), flush=True)
                if args.save:
                    shutil.copy(codecs_trace, os.path.join(args.save, "codecs-trace.jsonl"))
            times = {"ktx2": [ktx2], "codecs": [codecs]}
            for _ in range(args.repeat - 1):  # alternating, so drifts of the machine hit every column alike
                times["ktx2"].append(upload("ktx2"))
                for i, other in enumerate(others):
                    before[other].append(upload("ktx2", folder=f"other{i}", root=other))
                times["codecs"].append(codecs_alone(paths, out, args.jobs))
            best = " (best)" if args.repeat > 1 else ""
            for i, other in enumerate(others):
                times[f"checkout {i + 1}"] = before[other]
                rows.append((f"  ktx2 with checkout {i + 1}{best}", min(before[other])))
                print(f"checkout {i + 1}: {other}")
            if args.repeat > 1:
                print("\nrepeats: " + "; ".join(f"{k} " + " ".join(f"{t:.2f}" for t in v) for k, v in times.items()))
                ktx2, codecs = min(times["ktx2"]), min(times["codecs"])
                rows[0] = ("gputex upload -> ktx2 (best)", ktx2)
            rows.append(("codecs alone (ktx2 path)" + best, codecs))
            k = float("nan")
            if ktx:
                out = os.path.join(tmp, "k")
                os.makedirs(out)
                k = ktx_batch(ktx, paths, out, args.jobs)
                rows.append((f"ktx create, {args.jobs} at a time", k))
            g = rows[0][1]
            print(f"\nbatch of {args.count} ({args.batch_size}², every sixth odd-sized)")
            for name, secs in rows:
                print(f"{name:>32} {secs:>8.2f} s  {args.count / secs:>7.2f} images/s")
            print(f"ratio ktx / gputex (ktx2): {k / g:.2f}   gputex / codecs alone: {codecs / g:.2f} "
                  f"(>= 0.9 wanted)")
            for i, other in enumerate(others):
                print(f"checkout {i + 1} / this one (ktx2{best}): {min(before[other]) / g:.2f}   checkout {i + 1} / "
                      f"codecs alone: {codecs / min(before[other]):.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
