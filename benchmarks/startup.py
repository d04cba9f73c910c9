"""Start-up cost: ``import gputex``, ``Session()`` and the first pipelines, cold and warm.

    python benchmarks/startup.py [--repeat 3] [--json OUT.json] [--parts]
    python benchmarks/startup.py --upload 2048 [--before CHECKOUT] [--bytecode] [--repeat 5]

Each figure comes from a fresh Python process (best of ``--repeat``), in one run:

* ``import``: ``python -c "import gputex"`` wall time, and the import alone inside the process;
* ``session``: ``gputex.Session()`` (instance, adapter, device, wgpu type warm-up);
* ``first``: the first mip chain of a 64x64 image (every pipeline it needs compiled: the
  integer chain and its self-check) plus the capture of its levels;
* ``second``: the same again in the same process (pipelines cached by the session);
* ``Session()`` in parts (``--parts``, a process of its own each): ``import wgpu`` and its cffi
  header parse (``import_ffi``; from the user's cache after the first process:
  :func:`gputex.device.import_wgpu_ffi`), :func:`gputex.device.warm_types`, adapter
  enumeration, device.

``--upload SIZE`` times the CLI's single-image path instead: ``gputex upload IMG --format
rgba8unorm-srgb --mips --filter box -o X.ktx2`` on a photo-like SIZE² PNG (``benchmarks/batch.py``'s
images), each run a fresh process under ``GPUTEX_TRACE``, and prints where it stood when: the
interpreter, imports and option parsing done (``run``: :func:`gputex.run.run` entered), the
device made, the decode done, the rehearsal done (the first chain's pipelines), the GPU step's
start and end, the file written, the process gone. ``--before CHECKOUT`` runs another checkout
the same way, alternating with this one (same machine state for both), and says whether their
files are identical. ``--bytecode`` adds a run of each with Python's bytecode cached (a temporary
``PYTHONPYCACHEPREFIX``, filled by a first run not counted): where ``PYTHONDONTWRITEBYTECODE`` is
set, as on the 2-core machine, a checkout run from source compiles every module it imports in
every process, which an installed package (bytecode compiled by pip) does not.

Shader-cache modes for Mesa drivers (lavapipe): ``cold`` (an empty
``MESA_SHADER_CACHE_DIR``), ``warm`` (the same directory again: what every run after the first
sees; Mesa writes cache entries on a background queue that a process exit cuts short, so
the first warm run may still add a few), ``off`` (``MESA_SHADER_CACHE_DISABLE=true``). The number of cache files written by the
warm runs says whether the SPIR-V wgpu/naga produce is stable across processes (0 new files:
every compile was a hit). On other drivers the modes measure only the driver's own caching.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, time
t0 = time.perf_counter()
import gputex
t1 = time.perf_counter()
import numpy as np
import wgpu
from gputex.capture import capture_texture_file
from gputex.mips import generate_mips
from gputex.upload import upload
s = gputex.Session()
t2 = time.perf_counter()
out = {"import": t1 - t0, "session": t2 - t1, "adapter": s.name}
a = np.arange(64 * 64 * 4, dtype=np.uint32).astype(np.uint8).reshape(64, 64, 4)
for key in ("first", "second"):
    t = time.perf_counter()
    tex = upload(s, gputex.from_array(a), "rgba8unorm-srgb", levels=7, usage=wgpu.TextureUsage.TEXTURE_BINDING)
    generate_mips(tex)
    capture_texture_file(tex)
    tex.destroy()
    out[key] = time.perf_counter() - t
print(json.dumps(out))
"""


PARTS = r"""
import json, time
t = [time.perf_counter()]
try:
    from gputex.device import import_wgpu_ffi  # the header's parse from the user's cache
    import_wgpu_ffi()
except ImportError:  # an older checkout
    from wgpu.backends.wgpu_native import _ffi  # noqa: F401  (wgpu's header, parsed by cffi)
t.append(time.perf_counter())
from gputex.device import list_adapters, warm_types
warm_types()
t.append(time.perf_counter())
a = list_adapters(None)[0]
t.append(time.perf_counter())
a.request_device_sync(label="x")
t.append(time.perf_counter())
print(json.dumps(dict(zip(("import_ffi", "warm_types", "enumerate", "device"), (b - a for a, b in zip(t, t[1:]))))))
"""


def _files(path: str) -> int:
    return sum(len(f) for _, _, f in os.walk(path))


def _run(code: str, env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"child failed: {done.stderr.strip().splitlines()[-1:]}")
    return wall, done.stdout


#: (label, trace span, which end) of the milestones of one ``upload -o`` run, in run order
MILESTONES = (("run", "startup", "t1"), ("device", "device", "t1"), ("decoded", "decode", "t1"),
              ("rehearsed", "warm", "t1"), ("gpu from", "gpu", "t0"), ("gpu to", "gpu", "t1"),
              ("written", "encode", "t1"))


def _milestones(trace: str) -> dict[str, float]:
    """Seconds from process start to each of :data:`MILESTONES` found in the trace file."""
    spans = [json.loads(line) for line in open(trace)]
    start = min(e["t0"] for e in spans)
    out = {}
    for label, what, end in MILESTONES:
        hits = [e[end] for e in spans if e["what"] == what]
        if hits:
            out[label] = (max(hits) if end == "t1" else min(hits)) - start
    return out


def upload_runs(args) -> dict:
    """``--upload SIZE``: the single-image CLI run's milestones, this checkout (and ``--before``)."""
    import hashlib

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import fpng
    from batch import photo

    tmp = tempfile.mkdtemp(prefix="gputex-startup-")
    src = os.path.join(tmp, f"one{args.upload}.png")
    with open(src, "wb") as f:
        f.write(fpng.from_ndarray(photo(args.upload, args.upload, args.upload)))
    trees = [("this", ROOT)] + ([("before", os.path.abspath(args.before))] if args.before else [])
    variants = [(name, tree, None) for name, tree in trees]
    if args.bytecode:
        variants += [(name + "+pyc", tree, os.path.join(tmp, "pyc-" + name)) for name, tree in trees]
    runs: dict = {v[0]: [] for v in variants}
    digests = {}
    for i in range(args.repeat + 1):  # the first round fills the bytecode caches, not counted
        for name, tree, pyc in variants:
            if i == 0 and pyc is None:
                continue
            env = dict(os.environ, PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
            env.pop("GPUTEX_PROFILE", None)
            if pyc:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPYCACHEPREFIX"] = pyc
            trace = os.path.join(tmp, f"trace-{name}-{i}.jsonl")
            out = os.path.join(tmp, f"{name}.ktx2")
            env["GPUTEX_TRACE"] = trace
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "gputex", "upload", src, "--format", "rgba8unorm-srgb",
                                   "--mips", "--filter", "box", "-o", out], env=env, cwd=tmp,
                                  capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if done.returncode:
                raise SystemExit(f"{name} failed: {done.stderr.strip().splitlines()[-1:]}")
            if i == 0:
                continue
            row = _milestones(trace)
            row["gone"] = wall
            runs[name].append(row)
            digests[name] = hashlib.sha256(open(out, "rb").read()).hexdigest()
    labels = [m[0] for m in MILESTONES] + ["gone"]
    print(f"\none {args.upload}² PNG -> KTX2 (upload --mips --filter box -o), seconds from process start; "
          f"best and median of {args.repeat}, alternating:")
    print(f"{'':>14} " + " ".join(f"{label:>10}" for label in labels))
    summary = {}
    for name, rows in runs.items():
        best = {k: min(r[k] for r in rows if k in r) for k in labels if any(k in r for r in rows)}
        med = {k: sorted(r[k] for r in rows if k in r)[len(rows) // 2] for k in best}
        summary[name] = {"best": best, "median": med, "runs": rows}
        for kind, vals in (("best", best), ("median", med)):
            print(f"{name + ' ' + kind:>14} " + " ".join(f"{vals[k]:>10.3f}" if k in vals else f"{'-':>10}"
                                                           for k in labels))
    same = len(set(digests.values())) == 1
    print(f"outputs identical: {same}" + ("" if same else f" {digests}"))
    if args.before:
        for suffix in ("", "+pyc") if args.bytecode else ("",):
            a, b = summary["this" + suffix]["best"]["gone"], summary["before" + suffix]["best"]["gone"]
            print(f"before/this{suffix}: {b / a:.2f} (best process times {b:.3f} / {a:.3f} s)")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return summary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--parts", action="store_true", help="also time Session()'s parts")
    ap.add_argument("--upload", type=int, metavar="SIZE", help="time `gputex upload IMG -o X.ktx2` of a SIZE² PNG")
    ap.add_argument("--before", metavar="CHECKOUT", help="with --upload: also this checkout, alternating")
    ap.add_argument("--bytecode", action="store_true", help="with --upload: also with bytecode cached")
    args = ap.parse_args()
    if args.upload:
        summary = upload_runs(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1)
        return
    base = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base.pop("MESA_SHADER_CACHE_DISABLE", None)

    bare = min(_run("import gputex", base)[0] for _ in range(args.repeat))
    print(f'python -c "import gputex": {bare * 1e3:.0f} ms (process wall, best of {args.repeat})')

    results: dict = {"import_process_s": bare, "modes": {}}
    if args.parts:
        rows = [json.loads(_run(PARTS, base)[1]) for _ in range(args.repeat)]
        parts = {k: min(r[k] for r in rows) for k in rows[0]}
        results["session_parts"] = parts
        print(f"Session() in parts (best of {args.repeat}): " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in parts.items()))
    with tempfile.TemporaryDirectory(prefix="gputex-mesa-cache-") as cache:
        modes = []
        env_cache = dict(base, MESA_SHADER_CACHE_DIR=cache)
        modes.append(("cold", env_cache, True))
        modes.append(("warm", env_cache, False))
        modes.append(("off", dict(base, MESA_SHADER_CACHE_DISABLE="true"), False))
        for name, env, clear in modes:
            rows, new_files = [], []
            for _ in range(args.repeat):
                if clear:  # every cold run starts from an empty cache
                    for root, dirs, files in os.walk(cache, topdown=False):
                        for f in files:
                            os.remove(os.path.join(root, f))
                        for d in dirs:
                            os.rmdir(os.path.join(root, d))
                before = _files(cache)
                wall, out = _run(CHILD, env)
                row = json.loads(out)
                row["wall"] = wall
                rows.append(row)
                new_files.append(_files(cache) - before)
            best = {k: min(r[k] for r in rows) for k in ("import", "session", "first", "second", "wall")}
            best["cache_files_written"] = new_files
            results["adapter"] = rows[0]["adapter"]
            results["modes"][name] = best
            print(f"{name:5} import {best['import'] * 1e3:6.0f} ms, Session() {best['session'] * 1e3:6.0f} ms, "
                  f"first mips+capture {best['first'] * 1e3:6.0f} ms, again {best['second'] * 1e3:5.0f} ms, "
                  f"process {best['wall'] * 1e3:6.0f} ms; shader-cache files written per run: {new_files}")
        results["cache_bytes"] = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(cache) for f in fs)
    m = results["modes"]
    print(f"adapter: {results['adapter']}; first pipelines warm vs cold: "
          f"{m['cold']['first'] / m['warm']['first']:.2f}x faster; warm vs off: "
          f"{m['off']['first'] / m['warm']['first']:.2f}x; cache {results['cache_bytes'] / 2**20:.1f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
