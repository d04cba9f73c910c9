"""GPU mip chain against CPU implementations, measured in the same run.

    python benchmarks/mips.py [--sizes 4096 8192 8191 4095x4097] [--repeat 15] [--json OUT.json] [--record]
    python benchmarks/mips.py --paths [--formats r8unorm rg8unorm rgb10a2unorm r16float rg16float]
    python benchmarks/mips.py --quality [--ktx PATH]
    python benchmarks/mips.py --hashes OUT.json [--against benchmarks/results/mip-hashes-lavapipe.json]

Every size prints, for each ``--precisions`` (``exact``: the integer chain, correctly rounded,
the default, in its single-pass form where the sizes halve (``gputex/mips/spd.py``); ``int``: the
multi-pass integer chain, the same bytes; ``fast``: the float32 chain), the chain's GPU time
(timestamp queries) and its ratio to the **speed of light**: ``mip_sol.wgsl`` reads every base
texel once and writes every texel of every level once, nothing else (the memory floor of any
chain; 4x4 texels a thread, coalesced 8-byte stores), and to the **texture floor**
(:class:`TextureFloor`): that kernel, then every level moved into the (sRGB, not storage-capable)
texture by the faster of ``copy_texture_to_texture`` from a storage twin and
``copy_buffer_to_texture``: the floor of any chain that must end in the texture. (A chain's
median runs to its last pass's end, without the copies after it; the floor includes all copies.)

How it measures (a sub-millisecond dispatch on a GPU that idled reads several times slow: its
clocks are down; on the H200 a cold 4096^2 speed-of-light dispatch took ~5x its warm time):
``WARM_MS`` (200 ms) of speed-of-light dispatches first, then every measured run is queued behind
``REWARM_MS`` of them, so the GPU is busy when it starts. The figure kept (``gpu_ms``, the ratio)
is the **median** of ``--repeat`` runs (first pass begin to last pass end). Also printed: the
same work ``BATCH`` times back to back (for the chain, ``BATCH`` chains queued behind a warm-up
while the CPU encodes them, between two timestamps: including the copies after its last pass),
over ``BATCH``; and one run after 1 s idle (``cold``), which is what the old best-of-3 saw.
``--json`` writes those figures; ``--record`` appends one line per size and precision to
``benchmarks/results/mips.jsonl`` (format: ``benchmarks/results/README.md``).

``--quality`` builds noise images (opaque, sRGB) and reports, per level, how far gputex (both
precisions) and ``ktx create --mipmap-filter box`` (KTX-Software, ``../shared/peers/ktx`` or on
PATH) are from the float64 reference (``tests/reference.py``): max and mean |code - exact| in
LSB, and the texels that are not the exact value rounded to nearest.

``--hashes`` writes the SHA-256 of every level of the mip test matrix (sizes of
``tests/mips/test_mips_int.py``, 8- and 16-bit formats, colour spaces, alpha modes, the default
precision) to a JSON file; ``--against`` compares them with another adapter's file (lavapipe's is
``benchmarks/results/mip-hashes-lavapipe.json``).

gputex: box filter, sRGB data filtered in linear light, weighted alpha (the defaults),
GPU time from timestamp queries where the adapter has them, and wall time to the
chain being done. Baselines:

* numpy, the same filter (exact for power-of-two sizes: 2x2 means in linear light,
  alpha-weighted colour, rounded to nearest) - equivalent;
* Pillow ``reduce(2)`` chain and OpenCV ``INTER_AREA`` chain (if installed) -
  NOT equivalent: gamma space, no alpha weighting, no odd-size weights.

``--paths`` times, for formats that are renderable but not storage-capable, the compute path
(reduce pass + pack into a buffer + ``copy_buffer_to_texture``) against the render path
(fragment shader drawing each level into the texture), same chain, same run
(``generate_mips(path=...)``; the default is set from these numbers).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import gputex  # noqa: E402
from gputex.mips import generate_mips  # noqa: E402


def numpy_chain(a: np.ndarray) -> list[np.ndarray]:
    """Box mips, linear light, weighted alpha, in numpy (power-of-two sizes)."""
    lut = np.where(np.arange(256) / 255 <= 0.04045, np.arange(256) / 255 / 12.92,
                   ((np.arange(256) / 255 + 0.055) / 1.055) ** 2.4).astype(np.float32)
    alpha = a[..., 3:].astype(np.float32) / 255
    lin = np.concatenate([lut[a[..., :3]] * alpha, alpha], -1)
    out = []
    while lin.shape[0] > 1 or lin.shape[1] > 1:
        h, w = lin.shape[:2]
        lin = lin.reshape(max(1, h // 2), min(2, h), max(1, w // 2), min(2, w), 4).mean(axis=(1, 3))
        al = lin[..., 3:]
        rgb = np.divide(lin[..., :3], al, out=np.zeros_like(lin[..., :3]), where=al > 0)
        srgb = np.where(rgb <= 0.0031308, rgb * 12.92, 1.055 * np.power(rgb, 1 / 2.4) - 0.055)
        out.append(np.floor(np.concatenate([srgb, al], -1) * 255 + 0.5).astype(np.uint8))
    return out


def pillow_chain(a: np.ndarray) -> None:
    from PIL import Image

    im = Image.fromarray(a)
    while im.width > 1 or im.height > 1:
        im = im.reduce(2)


def opencv_chain(a: np.ndarray):
    import cv2

    img = a
    while img.shape[0] > 1 or img.shape[1] > 1:
        img = cv2.resize(img, (max(1, img.shape[1] // 2), max(1, img.shape[0] // 2)), interpolation=cv2.INTER_AREA)


def best(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        t.append(time.perf_counter() - t0)
    return min(t), r


def sample(fmt, n: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    channels = 4 if fmt.packed else fmt.channels
    if fmt.kind == "float":
        return rng.random((n, n, channels), np.float32)
    return rng.integers(0, 256, (n, n, channels), np.uint8)


def compare_paths(gpu, formats: list[str], sizes: list[int], repeat: int) -> None:
    from gputex.formats import get_format

    for name in formats:
        fmt = get_format(name)
        for n in sizes:
            a = sample(fmt, n)
            line = f"{name:>14} {n}x{n}:"
            first = None
            for path in ("compute", "render"):
                tex = gputex.upload(gpu, gputex.from_array(a), name, mips=True, mip_path=path)  # warms pipelines

                def chain():
                    r = generate_mips(tex, measure=True, path=path)
                    gpu.wait()
                    return r

                wall, report = best(chain, repeat)
                reports = [chain() for _ in range(repeat)] if report.gpu_ns is not None else []
                got = [gputex.capture(tex, lv).tobytes() for lv in range(1, tex.levels)]
                first = first or got
                line += (f"  {path} wall {wall * 1e3:7.2f} ms" +
                         (f" GPU {min(r.gpu_ns for r in reports) / 1e6:.3f} ms" if reports else "") +
                         ("" if got == first else " (LEVELS DIFFER)"))
                tex.destroy()
            print(line, flush=True)


def parse_size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h or w)


def commit() -> str:
    """The tree's commit; ``GPUTEX_COMMIT`` where it has no git (a copy sent to the GPU machine)."""
    import subprocess

    if os.environ.get("GPUTEX_COMMIT"):
        return os.environ["GPUTEX_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=ROOT, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: GPU time of sustained dispatches before the first measurement of a size (the clocks of a
#: GPU that idled come up over ~100 ms; a cold sub-millisecond dispatch reads several times slow).
WARM_MS = 200
#: ... queued in front of every measured run, so that the GPU never idles before it.
REWARM_MS = 20
#: Chains (or speed-of-light dispatches) queued back to back in the batched measurement.
BATCH = 20


class SpeedOfLight:
    """``mip_sol.wgsl`` over one texture: read level 0 once, write every level once."""

    def __init__(self, gpu, tex):
        import struct

        import wgpu

        from gputex.mips.common import pipeline as _pipeline

        s = wgpu.ShaderStage.COMPUTE
        st = {"type": wgpu.BufferBindingType.storage}
        entries = [{"binding": 0, "visibility": s, "texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                                              "view_dimension": "2d", "multisampled": False}},
                   {"binding": 1, "visibility": s, "buffer": st},
                   {"binding": 2, "visibility": s, "buffer": {"type": wgpu.BufferBindingType.uniform}},
                   {"binding": 3, "visibility": s, "buffer": st}]
        self.gpu, self.tex = gpu, tex
        self.pipe, bgl = _pipeline(gpu, "mip_sol.wgsl", {}, entries)
        offsets, total = [0] * 16, 0
        for lv in range(2, tex.levels):
            offsets[lv] = total
            total += max(1, tex.width >> lv) * max(1, tex.height >> lv)
        w1, h1 = max(1, tex.width >> 1), max(1, tex.height >> 1)
        self.bytes = tex.width * tex.height * 4 + 4 * (total + w1 * h1)
        self.dst = gpu.device.create_buffer(size=max(16, 4 * total), usage=wgpu.BufferUsage.STORAGE)
        self.dst1 = gpu.device.create_buffer(size=max(16, 8 * h1 * -(-w1 // 2)), usage=wgpu.BufferUsage.STORAGE)
        prm = gpu.uniform(struct.pack("<4I16I", tex.width, tex.height, tex.levels, 0, *offsets))
        view = tex.view(base_mip_level=0, mip_level_count=1)
        self.bind = gpu.device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": view},
            {"binding": 1, "resource": {"buffer": self.dst, "offset": 0, "size": self.dst.size}},
            {"binding": 2, "resource": {"buffer": prm}},
            {"binding": 3, "resource": {"buffer": self.dst1, "offset": 0, "size": self.dst1.size}}])
        self.groups = (-(-tex.width // 64), -(-tex.height // 64), 1)
        self.per_ns = 1e6  # one dispatch's GPU time, refined by warm()

    def submit(self, count: int, timed: bool = True):
        """``count`` dispatches in one submission; with ``timed``: (last end - first begin, [each])."""
        from gputex.kernels import timestamps as _timestamps

        q = _timestamps(self.gpu, count) if timed else None
        enc = self.gpu.device.create_command_encoder()
        for _ in range(count):
            ts = q.next() if q else None
            cpass = enc.begin_compute_pass(timestamp_writes=ts) if ts else enc.begin_compute_pass()
            cpass.set_pipeline(self.pipe)
            cpass.set_bind_group(0, self.bind)
            cpass.dispatch_workgroups(*self.groups)
            cpass.end()
        if q:
            q.resolve(enc)
        self.gpu.device.queue.submit([enc.finish()])
        return q.read() if q else None

    def warm(self, ms: float = WARM_MS) -> None:
        """Sustained dispatches for ``ms`` of GPU time (measured), clocks up."""
        spent = 0
        while spent < ms * 1e6:
            total, each = self.submit(max(8, min(2000, int(50e6 / self.per_ns))))
            spent += total
            self.per_ns = sorted(each)[len(each) // 2]

    def rewarm(self, ms: float = REWARM_MS) -> None:
        """Queue ``ms`` of dispatches without waiting: the next submission finds the GPU busy."""
        self.submit(max(1, min(5000, int(ms * 1e6 / self.per_ns))), timed=False)

    def destroy(self) -> None:
        self.dst.destroy()
        self.dst1.destroy()


class TextureFloor:
    """The floor of any chain that must end in the texture (issue 16): the speed-of-light
    kernel's bytes, then every level moved into the texture by the fastest path WebGPU allows a
    format that cannot be a storage texture (sRGB): from a storage twin texture by
    ``copy_texture_to_texture``, or from a buffer (256-byte row pitch) by
    ``copy_buffer_to_texture``. Both are timed (the kernel's pass and the copies between two
    empty timed passes: everything from the kernel's start to the last copy's end); the floor is
    the faster. The twin's and the buffer's contents do not matter (copies move bytes)."""

    def __init__(self, gpu, tex, sol: SpeedOfLight):
        import wgpu

        from gputex.layout import align_up
        from gputex.mips.common import storage_twin

        self.gpu, self.tex, self.sol = gpu, tex, sol
        twin = storage_twin(gpu, tex.format)
        self.twin = gpu.device.create_texture(
            size=(*tex.size(1), 1), format=twin, mip_level_count=tex.levels - 1,
            usage=wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.COPY_SRC) if twin and tex.levels > 1 else None
        self.layout, off = [], 0
        for lv in range(1, tex.levels):
            w, h = tex.size(lv)
            pitch = align_up(w * tex.format.block_bytes, 256)
            self.layout.append((off, pitch, w, h))
            off += pitch * h
        self.buf = gpu.device.create_buffer(size=max(16, off), usage=wgpu.BufferUsage.COPY_SRC)

    def submit(self, kind: str) -> tuple[int, int]:
        """(kernel + copies, kernel alone) in ns, the copies from the ``twin`` or the ``buffer``."""
        from gputex.kernels import timestamps as _timestamps

        q = _timestamps(self.gpu, 3)
        enc = self.gpu.device.create_command_encoder()
        enc.begin_compute_pass(timestamp_writes=q.next()).end()
        cpass = enc.begin_compute_pass(timestamp_writes=q.next())
        cpass.set_pipeline(self.sol.pipe)
        cpass.set_bind_group(0, self.sol.bind)
        cpass.dispatch_workgroups(*self.sol.groups)
        cpass.end()
        for j, (off, pitch, w, h) in enumerate(self.layout):
            dst = {"texture": self.tex.texture, "mip_level": j + 1}
            if kind == "twin":
                enc.copy_texture_to_texture({"texture": self.twin, "mip_level": j}, dst, (w, h, 1))
            else:
                enc.copy_buffer_to_texture({"buffer": self.buf, "offset": off, "bytes_per_row": pitch,
                                            "rows_per_image": h}, dst, (w, h, 1))
        enc.begin_compute_pass(timestamp_writes=q.next()).end()
        q.resolve(enc)
        self.gpu.device.queue.submit([enc.finish()])
        total, each = q.read()
        return total - each[0] - each[2], each[1]

    def measure(self, repeat: int) -> dict:
        """Warm medians (ns) of each path (``twin``, ``buffer``) and ``floor``, the faster."""
        out = {}
        for kind in ("twin", "buffer") if self.twin else ("buffer",):
            self.submit(kind)
            runs = []
            for _ in range(max(1, repeat)):
                self.sol.rewarm()
                runs.append(self.submit(kind)[0])
            out[kind] = sorted(runs)[len(runs) // 2]
        out["floor"] = min(out.values())
        return out

    def destroy(self) -> None:
        self.buf.destroy()
        if self.twin:
            self.twin.destroy()


def marker(gpu, q) -> None:
    """An empty timed compute pass: a timestamp on the queue between two submissions."""
    enc = gpu.device.create_command_encoder()
    enc.begin_compute_pass(timestamp_writes=q.next()).end()
    gpu.device.queue.submit([enc.finish()])


def speed_of_light(gpu, sol: SpeedOfLight, repeat: int) -> dict | None:
    """GPU ns of one speed-of-light dispatch: cold (after 1 s idle), and warm: the median of
    ``BATCH`` timed dispatches in one submission and their (last end - first begin) / BATCH."""
    if not gpu.has_feature("timestamp-query"):
        return None
    sol.submit(1)  # compiled, bound
    time.sleep(1.0)
    cold = sol.submit(1)[0]
    sol.warm()
    med, batch = [], []
    for _ in range(max(1, repeat)):
        sol.rewarm()
        total, each = sol.submit(BATCH)
        med.append(sorted(each)[len(each) // 2])
        batch.append(total / BATCH)
    return {"cold": cold, "median": sorted(med)[len(med) // 2], "batch": min(batch)}


def time_chain(gpu, tex, precision: str, repeat: int, sol: SpeedOfLight | None):
    """(best wall seconds, GPU figures or None, report) of the chain.

    GPU figures (ns): ``cold``, one chain after 1 s idle; ``median``, the median over ``repeat``
    chains each queued behind ``REWARM_MS`` of dispatches (first pass begin to last pass end:
    the chain's copies after its last pass are not in it); ``batch``, ``BATCH`` chains queued
    back to back behind a warm-up (the CPU encodes them while the GPU is busy), from a timestamp
    before the first to one after the last, over ``BATCH``: everything the chain costs the GPU."""
    from gputex.kernels import timestamps as _timestamps

    def chain(measure=True):
        r = generate_mips(tex, measure=measure, precision=precision)
        gpu.wait()
        return r

    chain()  # pipelines, tables, self-check
    wall, report = best(chain, 3)
    if report.gpu_ns is None or sol is None:
        return wall, None, report
    time.sleep(1.0)
    cold = chain().gpu_ns
    sol.warm()
    runs = []
    for _ in range(repeat):
        sol.rewarm()
        runs.append(generate_mips(tex, measure=True, precision=precision))
    runs.sort(key=lambda r: r.gpu_ns)
    report = runs[len(runs) // 2]
    sol.rewarm(max(REWARM_MS, 1.5e3 * BATCH * wall))  # longer than the CPU takes to encode the batch
    q = _timestamps(gpu, 2)
    marker(gpu, q)
    for _ in range(BATCH):
        generate_mips(tex, precision=precision)
    marker(gpu, q)
    enc = gpu.device.create_command_encoder()
    q.resolve(enc)
    gpu.device.queue.submit([enc.finish()])
    total, each = q.read()  # (B end - A begin, [A, B]): the chains lie between A's end and B's begin
    batch = (total - sum(each)) / BATCH
    return wall, {"cold": cold, "median": report.gpu_ns, "min": runs[0].gpu_ns, "batch": batch}, report


def timings(gpu, args) -> list[dict]:
    rows = []
    eight = args.format.startswith(("rgba8", "bgra8"))
    for text in args.sizes:
        w, h = parse_size(text)
        rng = np.random.default_rng(1)
        a = rng.integers(0, 256 if eight else 65536, (h, w, 4), np.uint8 if eight else np.uint16)
        # made as the CLI's upload makes it (for the exact chain: a texture whose levels it stores,
        # mips.stored_format; gputex.upload asks for that with store_levels=True)
        tex = gputex.upload(gpu, gputex.from_array(a), args.format, mips=True, store_levels=True,
                            precision="exact" if "exact" in args.precisions else "fast")
        light = SpeedOfLight(gpu, tex) if gpu.has_feature("timestamp-query") else None
        sol = speed_of_light(gpu, light, args.repeat) if light else None
        print(f"\n{w}x{h} {args.format}, {tex.levels} levels; speed of light (read level 0, write every level, "
              f"{light.bytes / 1e6 if light else 0:.0f} MB): " +
              (f"GPU {sol['median'] / 1e6:.4f} ms warm median ({light.bytes / sol['median']:.0f} GB/s), "
               f"{sol['batch'] / 1e6:.4f} ms back to back, {sol['cold'] / 1e6:.4f} ms cold" if sol
               else "no timestamp queries"))
        floor = texture_floor(gpu, tex, light, args.repeat) if light else None
        for precision in args.precisions:
            wall, g, report = time_chain(gpu, tex, precision, args.repeat, light)
            ratio = g["median"] / sol["median"] if g and sol else None
            print(f"  {precision:>5} ({report.precision}) wall {wall * 1e3:8.2f} ms" +
                  (f"   GPU {g['median'] / 1e6:.4f} ms warm median, {g['batch'] / 1e6:.4f} back to back, "
                   f"{g['cold'] / 1e6:.4f} cold" if g else "") +
                  (f"   {ratio:.2f}x speed of light" if ratio else "") +
                  (f"   passes {' '.join(f'{t / 1e6:.4f}' for t in report.pass_ns)}" if report.pass_ns else "") +
                  (f"   [{report.note}]" if report.note else ""), flush=True)
            rows.append({"size": [w, h], "format": args.format, "levels": tex.levels, "precision": precision,
                         "path": report.precision, "wall_ms": wall * 1e3,
                         "gpu_ms": g["median"] / 1e6 if g else None, "gpu_min_ms": g["min"] / 1e6 if g else None,
                         "gpu_batch_ms": g["batch"] / 1e6 if g else None, "gpu_cold_ms": g["cold"] / 1e6 if g else None,
                         "sol_ms": sol["median"] / 1e6 if sol else None,
                         "sol_batch_ms": sol["batch"] / 1e6 if sol else None,
                         "sol_cold_ms": sol["cold"] / 1e6 if sol else None, "ratio_to_sol": ratio,
                         "passes": len(report.pass_ns), "pass_ms": [round(t / 1e6, 4) for t in report.pass_ns],
                         "timing": "warm median"})
        add_floor(rows, floor)
        if light:
            light.destroy()
        if eight and not args.skip_cpu and w == h and w & (w - 1) == 0:
            cpu_baselines(gpu, tex, a)
        tex.destroy()
    by = {(tuple(r["size"]), r["precision"]): r["gpu_ms"] for r in rows}
    for r in rows:  # the exact chain against the multi-pass integer chain (the same bytes)
        old = by.get((tuple(r["size"]), "int"))
        if r["precision"] == "exact" and old and r["gpu_ms"]:
            r["ratio_to_int"] = r["gpu_ms"] / old
            print(f"  {r['size'][0]}x{r['size'][1]} exact: {old / r['gpu_ms']:.1f}x faster than the int chain")
    for r in rows:  # odd sizes against the power-of-two size of about the same area
        w, h = r["size"]
        n = 1 << round(np.log2(np.sqrt(w * h)))
        pot = by.get(((n, n), r["precision"]))
        if (w, h) != (n, n) and pot and r["gpu_ms"]:
            r["ratio_to_pot"] = r["gpu_ms"] / pot
            print(f"  {w}x{h} {r['precision']}: {r['ratio_to_pot']:.2f}x the GPU time of {n}x{n}")
    return rows


def texture_floor(gpu, tex, light: SpeedOfLight, repeat: int) -> dict | None:
    """:class:`TextureFloor`'s figures (ms), printed."""
    if tex.levels < 2:
        return None
    tf = TextureFloor(gpu, tex, light)
    try:
        f = {k: v / 1e6 for k, v in tf.measure(repeat).items()}
    finally:
        tf.destroy()
    twin = f"copies from a twin texture {f['twin']:.4f} ms, " if "twin" in f else ""
    print(f"  texture floor (speed of light, then every level into the texture): {f['floor']:.4f} ms "
          f"({twin}from a buffer {f['buffer']:.4f} ms)", flush=True)
    return f


def add_floor(rows: list[dict], floor: dict | None) -> None:
    """The texture floor's figures and each chain's ratio to it, on the rows of one size."""
    if not floor:
        return
    size = rows[-1]["size"] if rows else None
    for r in rows:
        if r["size"] != size or "floor_ms" in r:
            continue
        r.update(floor_ms=floor["floor"], floor_twin_ms=floor.get("twin"), floor_buffer_ms=floor["buffer"])
        if r["gpu_ms"]:
            r["ratio_to_floor"] = r["gpu_ms"] / floor["floor"]
            print(f"  {r['precision']:>5}: {r['ratio_to_floor']:.2f}x the texture floor")


def cpu_baselines(gpu, tex, a) -> None:
    wall, _ = best(lambda: (generate_mips(tex), gpu.wait()), 1)
    t_np, levels = best(lambda: numpy_chain(a), 1)
    got = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    worst = max(int(np.abs(g.astype(int) - r.astype(int)).max()) for g, r in zip(got, levels))
    print(f"  numpy, same filter     wall {t_np * 1e3:9.2f} ms   -> gputex is {t_np / wall:7.1f}x faster "
          f"(max difference {worst} LSB; numpy's float32 chain is not correctly rounded)")
    t_pil, _ = best(lambda: pillow_chain(a), 1)
    print(f"  Pillow reduce(2) chain wall {t_pil * 1e3:9.2f} ms   (NOT equivalent: gamma space, no alpha weighting)")
    try:
        t_cv, _ = best(lambda: opencv_chain(a), 1)
        print(f"  OpenCV INTER_AREA      wall {t_cv * 1e3:9.2f} ms   (NOT equivalent: gamma space, no alpha weighting)")
    except ImportError:
        print("  OpenCV: not installed")


def find_ktx(path: str | None) -> str | None:
    import shutil

    for cand in (path, os.path.join(ROOT, "..", "shared", "peers", "ktx"), shutil.which("ktx")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def ktx_levels(ktx: str, a: np.ndarray, tmp: str) -> list[np.ndarray]:
    import subprocess

    from gputex.encode import encode
    from gputex.texfile import read_texture_file

    png, out = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.ktx2")
    encode(a, png, color_space="srgb")
    subprocess.run([ktx, "create", "--format", "R8G8B8A8_SRGB", "--assign-tf", "srgb", "--generate-mipmap",
                    "--mipmap-filter", "box", "--mipmap-wrap", "clamp", png, out], check=True, capture_output=True)
    tf = read_texture_file(out)
    return [np.frombuffer(bytes(tf.levels[lv]), np.uint8).reshape(*tf.level_size(lv)[1::-1], 4)
            for lv in range(1, len(tf.levels))]


def quality(gpu, args) -> dict:
    """Per image and level: max / mean |code - exact| (LSB) and texels not correctly rounded."""
    import tempfile

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference import filter_levels

    ktx = find_ktx(args.ktx)
    print(f"ktx: {ktx or 'not found (its column is left out)'}")
    print("per level: max / mean |code - exact float64 area average| in LSB, and texels that are not the "
          "exact value rounded to nearest (opaque noise, sRGB, box)")
    out = {}
    for w, h in [(16, 16), (7, 13), (61, 37), (257, 131), (256, 256), (1000, 999)]:
        a = np.random.default_rng(w * 1000 + h).integers(0, 256, (h, w, 4), np.uint8)
        a[..., 3] = 255
        ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="straight")
        tools = {}
        for precision in ("exact", "fast"):
            tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, precision=precision)
            tools[f"gputex {precision}"] = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
            tex.destroy()
        if ktx:
            with tempfile.TemporaryDirectory() as tmp:
                tools["ktx box"] = ktx_levels(ktx, a, tmp)
        print(f"\n{w}x{h}: level " + "".join(f"{name:>26}" for name in tools))
        rows = []
        for lv, r in enumerate(ref, start=1):
            x = r * 255
            cells, row = [], {"level": lv}
            for name, levels in tools.items():
                d = np.abs(levels[lv - 1].astype(np.float64) - x)
                wrong = int((levels[lv - 1] != np.floor(x + 0.5)).sum())
                row[name] = {"max_lsb": float(d.max()), "mean_lsb": float(d.mean()), "not_rounded": wrong}
                cells.append(f"{d.max():7.3f} {d.mean():6.3f} {wrong:7d}")
            rows.append(row)
            print(f"{'':>{len(f'{w}x{h}: ')}}{lv:5d} " + "".join(f"{c:>26}" for c in cells))
        out[f"{w}x{h}"] = rows
    return out


HASH_SIZES = [(1, 1), (1, 9), (9, 1), (2, 3), (5, 5), (7, 13), (255, 2), (257, 131), (1000, 999), (64, 64),
              (256, 128)]
HASH_FORMATS = [("rgba8unorm", 4, 8), ("rgba8unorm-srgb", 4, 8), ("bgra8unorm-srgb", 4, 8), ("r8unorm", 1, 8),
                ("rg8unorm", 2, 8), ("rgba16unorm", 4, 16), ("rg16unorm", 2, 16), ("r16unorm", 1, 16)]


def hashes(gpu, path: str, against: str | None = None, formats: list[str] | None = None) -> None:
    """SHA-256 of every level of the mip test matrix (default precision), written to ``path``
    (``formats``: only those of the matrix, e.g. one process each; the files merge as dicts)."""
    import hashlib
    import json

    from gputex.mips import cpu, integer

    out = {"adapter": gpu.name, "commit": commit(), "cases": {}}
    engines = {"cpu": 0, "shader": 0}  # who made each case's chain (GPUTEX_MIPS_ENGINE, gputex.mips.cpu)
    for fmt, channels, bits in HASH_FORMATS:
        if not gpu.has_feature(gputex.get_format(fmt).feature) or (formats and fmt not in formats):
            continue
        for w, h in HASH_SIZES:
            for space in ("srgb",) if fmt.endswith("-srgb") else ("srgb", "linear"):
                for alpha in ("weighted", "straight"):
                    seed = int(hashlib.sha256(f"{fmt} {w}x{h} {space} {alpha}".encode()).hexdigest()[:8], 16)
                    rng = np.random.default_rng(seed)
                    a = rng.integers(0, 1 << bits, (h, w, channels), np.uint8 if bits == 8 else np.uint16)
                    if channels > 1:
                        a[..., -1] = np.where(rng.random((h, w)) < 0.4, 0, a[..., -1])
                    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, alpha=alpha,
                                        store_levels=True)  # (as the CLI makes it)
                    host = integer.int_ok(tex, "box", False, None) and cpu.engine(tex) == "cpu"
                    engines["cpu" if host else "shader"] += 1
                    digest = hashlib.sha256()
                    for lv in range(1, tex.levels):
                        digest.update(gputex.capture_bytes(tex, lv).tobytes())
                    tex.destroy()
                    out["cases"][f"{fmt} {w}x{h} {space} {alpha}"] = digest.hexdigest()
        print(f"{fmt}: done", flush=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"{len(out['cases'])} cases -> {path}; chains made by the host's C engine: {engines['cpu']}, "
          f"by shaders: {engines['shader']}")
    if against:
        with open(against) as f:
            other = json.load(f)
        theirs = other["cases"]
        same = [k for k in out["cases"] if theirs.get(k) == out["cases"][k]]
        differ = [k for k in out["cases"] if k in theirs and theirs[k] != out["cases"][k]]
        print(f"against {against} ({other.get('adapter')}, commit {other.get('commit')}): {len(same)} identical, "
              f"{len(differ)} differ, {len(set(out['cases']) ^ set(theirs))} in one file only")
        for k in differ:
            print(f"  differs: {k}")


def record(gpu, rows: list[dict]) -> None:
    """Append one line per size and precision to benchmarks/results/mips.jsonl."""
    import datetime
    import json

    path = os.path.join(ROOT, "benchmarks", "results", "mips.jsonl")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(path, "a") as f:
        for r in rows:
            f.write(json.dumps({"date": stamp, "commit": commit(), "adapter": gpu.name, **r}) + "\n")
    print(f"{len(rows)} lines appended to {path}")


def main() -> None:
    import json

    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["4096", "8192", "8191", "4095x4097"], help="N or WxH")
    ap.add_argument("--repeat", type=int, default=15, help="measured runs per figure (the median is kept)")
    ap.add_argument("--precisions", nargs="+", default=["exact", "int", "fast"], choices=["exact", "int", "fast"],
                    help="int: the multi-pass integer chain (the reference the single-pass exact chain equals)")
    ap.add_argument("--skip-cpu", "--skip-numpy", action="store_true", help="no numpy/Pillow/OpenCV baselines")
    ap.add_argument("--format", default="rgba8unorm-srgb",
                    help="rgba16unorm times the 16-bit chains (no CPU baselines then)")
    ap.add_argument("--json", metavar="OUT.json", help="write the figures to this file")
    ap.add_argument("--record", action="store_true", help="append them to benchmarks/results/mips.jsonl")
    ap.add_argument("--quality", action="store_true", help="gputex and ktx against the float64 reference")
    ap.add_argument("--ktx", help="the ktx tool (default: ../shared/peers/ktx, then PATH)")
    ap.add_argument("--hashes", metavar="OUT.json", help="hash every level of the mip test matrix")
    ap.add_argument("--against", metavar="HASHES.json", help="with --hashes: compare with another adapter's file")
    ap.add_argument("--hash-formats", nargs="+", metavar="FORMAT", help="with --hashes: only these formats")
    ap.add_argument("--paths", action="store_true", help="compute against render path (see above)")
    ap.add_argument("--formats", nargs="+",
                    default=["r8unorm", "rg8unorm", "rgb10a2unorm", "r16float", "rg16float"])
    args = ap.parse_args()
    gpu = gputex.Session()
    print(f"adapter: {gpu.name}; timestamp queries: {gpu.has_feature('timestamp-query')}; commit {commit()}")
    if args.paths:
        compare_paths(gpu, args.formats, [parse_size(s)[0] for s in args.sizes], args.repeat)
        return
    if args.hashes:
        hashes(gpu, args.hashes, args.against, args.hash_formats)
        return
    result = {"adapter": gpu.name, "commit": commit()}
    if args.quality:
        result["quality"] = quality(gpu, args)
    else:
        result["timings"] = timings(gpu, args)
        if args.record:
            record(gpu, result["timings"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"figures -> {args.json}")


if __name__ == "__main__":
    main()
