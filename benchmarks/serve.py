"""A long-lived worker against one CLI process per file.

Builds ``--small`` 512^2 and ``--large`` 2048^2 photo-like PNGs (default 200 and 20), then
converts them three ways, in one run, each from process start to the last output:

(a) one ``gputex`` CLI process per file, ``--parallel`` of them at a time (default: the cores,
    as a build system would run them);
(b) one ``gputex serve --stdio`` process, one request per file, all sent at once;
(c) the library: one ``gputex.Converter``, one ``convert`` call over every file.

Prints the times, files/s, and (b)/(a), (c)/(a) speed-ups; checks the three wrote the same bytes.

    python3 benchmarks/serve.py                       # 200 small + 20 large
    python3 benchmarks/serve.py --small 20 --large 2  # quicker
    python3 benchmarks/serve.py --command capture --args "--mips --level all"
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def photo_like(rng, size: int) -> np.ndarray:
    """Smooth colour fields plus fine noise: decodes and compresses like a photo, not like noise."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    img = np.empty((size, size, 4), np.float32)
    for c in range(3):
        fx, fy, ph = rng.uniform(1, 6, 3)
        img[:, :, c] = 0.5 + 0.35 * np.sin(2 * np.pi * (fx * x + fy * y) + ph) * np.cos(2 * np.pi * fy * x)
    img[:, :, 3] = 1.0
    img[:, :, :3] += rng.normal(0, 0.02, (size, size, 3)).astype(np.float32)
    return (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)


def build(folder: str, small: int, large: int) -> list[str]:
    import imagecodecs

    rng = np.random.default_rng(2017)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for i in range(small + large):
        size = 512 if i < small else 2048
        p = os.path.join(folder, f"{'s' if size == 512 else 'L'}{i:04d}.png")
        with open(p, "wb") as f:
            f.write(imagecodecs.png_encode(photo_like(rng, size), level=1))
        paths.append(p)
    return paths


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def run_cli(paths, out, command, extra, parallel) -> float:
    t0 = time.perf_counter()

    def one(p: str) -> None:
        r = subprocess.run([sys.executable, "-m", "gputex", command, p, "-o", out, *extra],
                           capture_output=True, env=env())
        if r.returncode:
            raise SystemExit(f"(a) failed on {p}: {r.stderr.decode()}")

    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - t0


def settings_of(extra: list[str]) -> dict:
    """``--mips --level all`` -> {"mips": True, "level": "all"} (long options only)."""
    out: dict = {}
    i = 0
    while i < len(extra):
        name = extra[i][2:].replace("-", "_")
        if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            v = extra[i + 1]
            out[name] = int(v) if v.isdigit() and name != "level" else v
            i += 2
        else:
            out[name] = True
            i += 1
    return out


def run_serve(paths, out, command, settings, threads) -> float:
    t0 = time.perf_counter()
    args = [sys.executable, "-m", "gputex", "serve", "--stdio"] + (["--threads", str(threads)] if threads else [])
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env())
    reqs = "".join(json.dumps({"id": i, "command": command, "inputs": [f], "out": out, **settings}) + "\n"
                   for i, f in enumerate(paths))
    stdout, _ = p.communicate(reqs.encode())
    elapsed = time.perf_counter() - t0
    replies = [json.loads(ln) for ln in stdout.decode().splitlines()]
    bad = [r for r in replies if not r["ok"]]
    if len(replies) != len(paths) or bad:
        raise SystemExit(f"(b) failed: {len(replies)} replies, first bad: {bad[:1]}")
    return elapsed


def run_library(paths, out, command, settings, threads) -> float:
    code = ("import sys, json, gputex\n"
            "paths, out, command, settings, threads = json.loads(sys.argv[1])\n"
            "with gputex.Converter(threads=threads) as c:\n"
            "    bad = [r.error for r in c.convert(paths, command, out, **settings) if not r.ok]\n"
            "sys.exit(str(bad[:1]) if bad else 0)\n")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, json.dumps([paths, out, command, settings, threads])],
                       env=env())
    if r.returncode:
        raise SystemExit("(c) failed")
    return time.perf_counter() - t0


def hashes(folder: str) -> dict:
    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(folder))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=200, help="512^2 images (default 200)")
    ap.add_argument("--large", type=int, default=20, help="2048^2 images (default 20)")
    ap.add_argument("--command", choices=["upload", "capture"], default="upload")
    ap.add_argument("--args", default="--mips", help="options of the command (default: --mips)")
    ap.add_argument("--parallel", type=int, default=os.cpu_count() or 1, help="(a): CLI processes at once")
    ap.add_argument("--threads", type=int, default=None, help="(b), (c): --threads (default: the cores)")
    ap.add_argument("--keep", help="build the corpus and outputs in this folder and keep them")
    a = ap.parse_args()
    extra = shlex.split(a.args)
    settings = settings_of(extra)
    work = a.keep or tempfile.mkdtemp(prefix="gputex-serve-bench-")
    try:
        t = time.perf_counter()
        paths = build(os.path.join(work, "src"), a.small, a.large)
        n = len(paths)
        mb = sum(os.path.getsize(p) for p in paths) / 1e6
        print(f"{os.cpu_count()} cores; {a.small} x 512^2 + {a.large} x 2048^2 PNGs ({mb:.0f} MB) built in "
              f"{time.perf_counter() - t:.1f} s; gputex {a.command} {a.args}")
        times = {}
        for label, fn in (("(a) CLI per file", lambda o: run_cli(paths, o, a.command, extra, a.parallel)),
                          ("(b) serve --stdio", lambda o: run_serve(paths, o, a.command, settings, a.threads)),
                          ("(c) Converter", lambda o: run_library(paths, o, a.command, settings, a.threads))):
            out = os.path.join(work, label[1])
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            times[label] = fn(out)
            print(f"{label:20} {times[label]:8.2f} s  {n / times[label]:7.2f} files/s"
                  + (f"  ({a.parallel} at a time)" if label.startswith("(a)") else ""), flush=True)
        base = times["(a) CLI per file"]
        print(f"speed-up over (a): (b) {base / times['(b) serve --stdio']:.2f}x, "
              f"(c) {base / times['(c) Converter']:.2f}x")
        same = hashes(os.path.join(work, "a")) == hashes(os.path.join(work, "b")) == hashes(os.path.join(work, "c"))
        print("outputs identical across (a), (b), (c):", "yes" if same else "NO")
        if not same:
            sys.exit(1)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
