"""Start-up cost: ``import gputex``, ``Session()`` and the first pipelines, cold and warm.

    python benchmarks/startup.py [--repeat 3] [--json OUT.json]

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--parts", action="store_true", help="also time Session()'s parts")
    args = ap.parse_args()
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
