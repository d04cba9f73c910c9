"""Where one large image's ``upload IMG --mips -o X.ktx2`` spends its time beyond the decode.

    python benchmarks/single_parts.py [--size 8192] [--repeat 3] [--out DIR] [--before CHECKOUT]
                                      [--tree LABEL=CHECKOUT ...] [--skip-parts] [--compile]
                                      [--importtime]

Builds one photo-like ``--size``² RGBA PNG (fpng, as ``benchmarks/peer_ktx.py`` does), then:

1. fresh processes, alternating, ``--repeat`` times each, timed from start to exit by this
   process: ``python -c pass``, ``python -c "import gputex"``, the decode alone (``import gputex;
   gputex.decode(IMG)``, what ``peer_ktx.py``'s ``decode`` column runs), and ``gputex upload IMG
   --format rgba8unorm-srgb --mips --filter box -o X.ktx2`` under ``GPUTEX_TRACE`` (also from
   ``--before``'s checkout, its KTX2 compared with this one's); each trace is printed as spans
   from process start (``--out`` keeps the files);
2. the parts in this process (``--skip-parts``: not): the file read, the inflate and the
   unfilter; ``Session()``, upload + mips; the capture straight into the mapped file with and
   without its fsync, the fsync alone; level 0's read-back alone and levels 1.. alone; 256 MiB of
   host pixels copied into a fresh mapped file on 1 and on several threads.
"""

from __future__ import annotations

import argparse
import json
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


def _run(cmd: list[str], env: dict, cwd: str) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd[:6])}\n{p.stderr[-2000:]}")
    return secs


def _env(tree: str, trace: str | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(tree) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("GPUTEX_TRACE", None)
    if trace:
        env["GPUTEX_TRACE"] = trace
    return env


def show_trace(path: str, wall: float) -> str:
    ev = [json.loads(ln) for ln in open(path)]
    start = next((e["t0"] for e in ev if e["what"] == "startup"), min(e["t0"] for e in ev))
    lines = []
    for e in sorted(ev, key=lambda e: e["t0"]):
        extra = " ".join(f"{k}={v}" for k, v in e.items() if k not in ("what", "pid", "t0", "t1", "cpu", "path"))
        lines.append(f"    {e['what']:>16} {e['t0'] - start:7.3f} -> {e['t1'] - start:7.3f}  "
                     f"({e['t1'] - e['t0']:6.3f} s, cpu {e.get('cpu', 0):6.3f}) {extra}")
    ex = [e for e in ev if e["what"] == "exit"]
    if ex:
        lines.append(f"    process gone at {wall:.3f} s (parent's clock): {wall - (ex[0]['t1'] - start):.3f} s "
                     "after the exit mark")
    return "\n".join(lines)


def processes(img: str, tmp: str, repeat: int, out: str | None, before: str | None,
              others: list[str] = ()) -> None:
    py = sys.executable
    runs = {
        "python -c pass": lambda r: _run([py, "-c", "pass"], _env(ROOT), tmp),
        "import gputex": lambda r: _run([py, "-c", "import gputex"], _env(ROOT), tmp),
        "decode alone": lambda r: _run([py, "-c", f"import gputex; gputex.decode({img!r})"], _env(ROOT), tmp),
    }
    trees = {"gputex": ROOT, **({"before": before} if before else {}),
             **dict(o.split("=", 1) for o in others)}
    traces: dict[str, list[tuple[str, float]]] = {}
    for label, tree in trees.items():
        def one(r: int, label=label, tree=tree) -> float:
            trace = os.path.join(out or tmp, f"trace-{label}-{r}.jsonl")
            if os.path.exists(trace):
                os.unlink(trace)
            secs = _run([py, "-m", "gputex", "upload", img, "--format", "rgba8unorm-srgb", "--mips", "--filter",
                         "box", "-o", os.path.join(tmp, f"{label}.ktx2")], _env(tree, trace), tmp)
            traces.setdefault(label, []).append((trace, secs))
            return secs
        runs[f"upload -o ktx2 ({label})"] = one
    times: dict[str, list[float]] = {k: [] for k in runs}
    for r in range(repeat):
        for name, fn in runs.items():
            times[name].append(fn(r))
    for name, ts in times.items():
        print(f"{name:>28}: " + " ".join(f"{t:.3f}" for t in ts) + f"   best {min(ts):.3f} s", flush=True)
    mine = open(os.path.join(tmp, "gputex.ktx2"), "rb").read()
    for label in list(trees)[1:]:
        same = open(os.path.join(tmp, f"{label}.ktx2"), "rb").read() == mine
        print(f"KTX2 of this checkout and {label}: " + ("byte-identical" if same else "DIFFERENT"))
    dec = min(times["decode alone"])
    for label in trees:
        best = min(times[f"upload -o ktx2 ({label})"])
        print(f"{label}: best {best:.3f} s = {best / dec:.2f}x the decode alone ({dec:.3f} s)")
    for runs_ in traces.values():
        for trace, secs in runs_:
            print(f"\n  trace {os.path.basename(trace)} (wall {secs:.3f} s):\n" + show_trace(trace, secs), flush=True)


def parts(img: str, tmp: str) -> None:
    import numpy as np
    import wgpu

    import gputex
    from gputex import pngdec
    from gputex.atomic import AtomicFile
    from gputex.capture import capture_bytes, capture_texture_file, capture_to_file
    from gputex.parallel import read_threads
    from gputex.png import read_header

    def clock(label: str, fn, n: int = 1):
        best, out = float("inf"), None
        for _ in range(n):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        print(f"{label:>44}: {best * 1e3:8.1f} ms", flush=True)
        return out

    data = clock("read the PNG file", lambda: open(img, "rb").read())
    header = read_header(data)
    clock("pngdec.decode (inflate + unfilter)", lambda: pngdec.decode(data, header, threads=1), 2)
    import imagecodecs

    h, w = header.height, header.width
    buf = np.empty(h * (w * 4 + 1), np.uint8)
    clock("  inflate alone (libdeflate)", lambda: imagecodecs.deflate_decode(pngdec.idat_stream(data), out=buf), 2)
    decoded = clock("gputex.decode (whole)", lambda: gputex.decode(img), 2)
    session = clock("Session()", gputex.Session)
    print(f"    {session.name}; read threads {read_threads()}")

    def up():
        tex = gputex.upload(session, decoded, format="rgba8unorm-srgb", mips=True, store_levels=True)
        session.wait()
        return tex
    tex = clock("upload + mips (first: pipelines made)", up)
    tex.destroy()
    tex = clock("upload + mips (again)", up)
    paths = iter(range(1000))

    def to_file():
        capture_to_file(tex, os.path.join(tmp, f"cap{next(paths)}.ktx2"))
    clock("capture_to_file, fsync included", to_file, 3)
    real = os.fsync
    os.fsync = lambda fd: None  # type: ignore[assignment]
    try:
        clock("capture_to_file, no fsync", to_file, 3)
    finally:
        os.fsync = real
    size = os.path.getsize(os.path.join(tmp, "cap0.ktx2"))

    def fsync_alone():
        with open(os.path.join(tmp, "cap0.ktx2"), "rb") as f:
            src = f.read()
        fd = os.open(os.path.join(tmp, f"fs{next(paths)}.bin"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, src)
        t0 = time.perf_counter()
        os.fsync(fd)
        secs = time.perf_counter() - t0
        os.close(fd)
        print(f"{'fsync of a fresh ' + str(size >> 20) + ' MiB file':>44}: {secs * 1e3:8.1f} ms", flush=True)
    fsync_alone()
    fsync_alone()
    timings: dict = {}
    clock("level 0 read back alone (capture_bytes)", lambda: capture_bytes(tex, 0, timings=timings), 2)
    print(f"    its wait / copy: {timings.get('wait', 0) * 1e3:.1f} / {timings.get('copy', 0) * 1e3:.1f} ms, "
          f"{timings.get('bands')} groups")
    clock("levels 1.. read back alone (to bytes)", lambda: capture_texture_file(tex, levels=list(range(1, tex.levels))), 2)
    pixels = np.ascontiguousarray(decoded.pixels)

    def host_copy(threads: int):
        f = AtomicFile(os.path.join(tmp, f"hc{next(paths)}.bin"))
        m = f.map(pixels.nbytes)
        dst = np.frombuffer(m, np.uint8).reshape(h, -1)
        src = pixels.reshape(h, -1)
        t0 = time.perf_counter()
        if threads == 1:
            dst[...] = src
        else:
            from concurrent.futures import ThreadPoolExecutor

            step = -(-h // threads)

            def band(a: int, dst=dst) -> None:
                dst[a: a + step] = src[a: a + step]
            with ThreadPoolExecutor(threads) as ex:
                list(ex.map(band, range(0, h, step)))
        secs = time.perf_counter() - t0
        dst = None
        t1 = time.perf_counter()
        f.discard()
        print(f"{'host pixels -> fresh mapped file, ' + str(threads) + ' threads':>44}: {secs * 1e3:8.1f} ms "
              f"(unmap+close {(time.perf_counter() - t1) * 1e3:.1f} ms)", flush=True)
    for t in (1, 4, 8, 16):
        host_copy(t)
    tex.destroy()
    del wgpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="folder to keep the traces in")
    ap.add_argument("--before", help="another checkout whose upload -o is run and traced too")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=CHECKOUT",
                    help="more checkouts to run and trace like --before")
    ap.add_argument("--skip-parts", action="store_true")
    ap.add_argument("--compile", action="store_true", help="byte-compile first (peer_ktx.compile_all)")
    ap.add_argument("--importtime", action="store_true", help="one more upload run under -X importtime (into --out)")
    args = ap.parse_args()
    from peer_ktx import _write_photo, compile_all

    if args.compile:
        compile_all([ROOT, *([args.before] if args.before else []), *(t.split("=", 1)[1] for t in args.tree)])

    tmp = tempfile.mkdtemp(prefix="gputex-parts-")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    try:
        img = os.path.join(tmp, f"one{args.size}.png")
        _write_photo(img, args.size)
        print(f"{img}: {os.path.getsize(img) >> 20} MiB; tmp on: "
              + subprocess.run(["df", "-T", tmp], capture_output=True, text=True).stdout.splitlines()[-1], flush=True)
        processes(img, tmp, args.repeat, args.out, args.before, args.tree)
        if args.importtime and args.out:
            with open(os.path.join(args.out, "importtime.txt"), "w") as f:
                subprocess.run([sys.executable, "-X", "importtime", "-m", "gputex", "upload", img, "--format",
                                "rgba8unorm-srgb", "--mips", "--filter", "box", "-o", os.path.join(tmp, "it.ktx2")],
                               env=_env(ROOT), cwd=tmp, stdout=subprocess.DEVNULL, stderr=f)
        if not args.skip_parts:
            print("\nparts, in this process:", flush=True)
            parts(img, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
