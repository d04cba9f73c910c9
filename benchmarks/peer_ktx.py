"""Images -> mipped KTX2: gputex against Khronos ``ktx create`` and the codecs alone, same run.

    python benchmarks/peer_ktx.py [--sizes 2048 4096 8192] [--count 48] [--batch-size 2048]
                                  [--jobs N] [--ktx PATH] [--skip-single] [--skip-batch]
                                  [--before CHECKOUT] [--skip-dds] [--trace DIR]

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

``--before CHECKOUT`` adds a column for the single images: the same ``gputex upload -o X.ktx2``
run from another checkout (e.g. the main branch), in the same run, and its ratio to this one's.
``--trace DIR`` writes a ``GPUTEX_TRACE`` of each single-image KTX2 run there (read them with
``benchmarks/timeline.py``).

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

from batch import make_corpus, photo  # noqa: E402


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
    return timed([sys.executable, "-c", code])


def codecs_alone(paths: list[str], out: str, jobs: int) -> float:
    """Decode each input and write its (precomputed) mip chain as KTX2, ``jobs`` processes, no GPU."""
    import json

    spec = json.dumps({"paths": paths, "out": out})
    code = ("import json, os, sys\nfrom concurrent.futures import ProcessPoolExecutor\n"  # noqa: UP031 (%r)
            "sys.path.insert(0, %r)\nfrom peer_ktx import _codec_one\n"
            "s = json.loads(sys.argv[1])\n"
            "with ProcessPoolExecutor(%d) as ex:\n"
            "    list(ex.map(_codec_one, s['paths'], [s['out']] * len(s['paths'])))\n"
            % (HERE, jobs))
    return timed([sys.executable, "-c", code, spec])


def _write_photo(path: str, size: int) -> None:
    import fpng

    with open(path, "wb") as f:
        f.write(fpng.from_ndarray(photo(size, size, size)))


def _codec_one(path: str, out: str) -> None:
    import numpy as np

    import gputex
    from gputex.formats import get_format
    from gputex.texfile import TextureFile, write_texture_file

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
    write_texture_file(tf, os.path.join(out, os.path.basename(path) + ".ktx2"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[2048, 4096, 8192])
    ap.add_argument("--count", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ktx")
    ap.add_argument("--skip-single", action="store_true")
    ap.add_argument("--skip-batch", action="store_true")
    ap.add_argument("--skip-dds", action="store_true")
    ap.add_argument("--before", help="another checkout whose `gputex upload -o X.ktx2` is timed too")
    ap.add_argument("--trace", help="folder for a GPUTEX_TRACE of each single-image KTX2 run")
    args = ap.parse_args()
    ktx = find_ktx(args.ktx)
    print(f"ktx: {ktx or 'not found: peer columns skipped'}; jobs {args.jobs}")
    tmp = tempfile.mkdtemp(prefix="gputex-peer-")
    try:
        if not args.skip_single:
            print(f"\n{'image':>10} {'decode':>8} {'gputex ktx2':>12} {'gputex dds':>11} {'ktx':>8} "
                  f"{'ktx/gputex':>10} {'gputex/decode':>13}" + (f" {'before ktx2':>12} {'before/now':>10}"
                                                                  if args.before else ""))
            if args.trace:
                os.makedirs(args.trace, exist_ok=True)
            from concurrent.futures import ProcessPoolExecutor

            srcs = [os.path.join(tmp, f"one{size}.png") for size in args.sizes]
            with ProcessPoolExecutor(max(1, min(len(srcs), os.cpu_count() or 1))) as pool:  # the images, at once
                list(pool.map(_write_photo, srcs, args.sizes))
            for size, src in zip(args.sizes, srcs):
                dec = decode_alone(src)
                ktx2 = ["upload", src, "--format", "rgba8unorm-srgb", "--mips", "--filter", "box", "-o"]
                trace = os.path.join(args.trace, f"gputex-{size}.jsonl") if args.trace else None
                g = timed(GPUTEX + ktx2 + [os.path.join(tmp, f"g{size}.ktx2")], env=with_tree(None, trace))
                gd = float("nan") if args.skip_dds else timed(GPUTEX + ktx2 + [os.path.join(tmp, f"g{size}.dds")])
                k = timed([ktx, *KTX_ARGS, src, os.path.join(tmp, f"k{size}.ktx2")]) if ktx else float("nan")
                row = f"{size:>9}² {dec:>8.2f} {g:>12.2f} {gd:>11.2f} {k:>8.2f} {k / g:>10.2f} {g / dec:>13.2f}"
                if args.before:
                    b = timed(GPUTEX + ktx2 + [os.path.join(tmp, f"b{size}.ktx2")], env=with_tree(args.before))
                    with open(os.path.join(tmp, f"b{size}.ktx2"), "rb") as f1, \
                            open(os.path.join(tmp, f"g{size}.ktx2"), "rb") as f2:
                        same = f1.read() == f2.read()
                    row += f" {b:>12.2f} {b / g:>10.2f}" + ("" if same else "  OUTPUTS DIFFER")
                print(row, flush=True)
        if not args.skip_batch:
            corpus = os.path.join(tmp, "batch")
            os.makedirs(corpus)
            paths = make_corpus(corpus, args.count, args.batch_size)
            rows = []
            for container in ("ktx2", "dds"):
                out = os.path.join(tmp, "g_" + container)
                os.makedirs(out)
                rows.append((f"gputex upload -> {container}",
                             timed(GPUTEX + ["upload", *paths, "--format", "rgba8unorm-srgb", "--mips", "--filter",
                                             "box", "-o", out, "--container", container, "--jobs", str(args.jobs)])))
            out = os.path.join(tmp, "g_png")
            os.makedirs(out)
            rows.append(("gputex capture -> png levels",
                         timed(GPUTEX + ["capture", *paths, "--mips", "--level", "all", "-o", out,
                                         "--jobs", str(args.jobs)])))
            out = os.path.join(tmp, "codecs")
            os.makedirs(out)
            codecs = codecs_alone(paths, out, args.jobs)
            rows.append(("codecs alone (ktx2 path)", codecs))
            k = float("nan")
            if ktx:
                out = os.path.join(tmp, "k")
                os.makedirs(out)
                script = f'"{ktx}" {" ".join(KTX_ARGS)} "$0" "{out}/$(basename "$0").ktx2"'
                k = timed(["bash", "-c", f'printf "%s\\0" "$@" | xargs -0 -P {args.jobs} -n 1 bash -c \'{script}\'',
                           "_", *paths])
                rows.append((f"ktx create, {args.jobs} at a time", k))
            g = rows[0][1]
            print(f"\nbatch of {args.count} ({args.batch_size}², every sixth odd-sized)")
            for name, secs in rows:
                print(f"{name:>32} {secs:>8.2f} s  {args.count / secs:>7.2f} images/s")
            print(f"ratio ktx / gputex (ktx2): {k / g:.2f}   gputex / codecs alone: {codecs / g:.2f} "
                  f"(>= 0.9 wanted)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
