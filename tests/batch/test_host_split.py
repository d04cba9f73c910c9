"""``upload --mips -o DIR`` batches with decode workers split the chains between the GPU and the
host's C engine (``upload_stage.HostSplit``, ``host_texture``): a worker that decoded an image
whose chain the engine serves writes the texture file itself when the GPU has no free slot.
The files must be byte for byte those of the GPU path (``GPUTEX_MIPS_ENGINE=shader``), whichever
way each input went; ``--json`` says which engine made each chain; a bad input in such a batch
gets its one-line error and the others are written."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import numpy as np
import pytest

from gputex.host_texture import HostPlan, plan_texture
from gputex.image import Image
from gputex.mips import cpu
from gputex.pipeline import MipOptions, Options
from gputex.run import upload_files
from gputex.texfile import read_texture_file

from factory import write

KTX = os.environ.get("GPUTEX_PEER_KTX") or next(
    (p for p in (os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "peers", "ktx"),
                 shutil.which("ktx") or "") if p and os.path.isfile(p)), None)

pytestmark = pytest.mark.skipif(not cpu.available(), reason="the C mip engine (gputex._mipcpu) is not built")


def _batch(rng, folder) -> list[str]:
    """Mixed sizes (odd ones too), sRGB RGBA with transparent texels, RGB, grey, grey + alpha, and
    one 16-bit linear image (a 16-bit PNG without colour chunks decodes as linear)."""
    paths = []

    def rgba(h, w):
        a = rng.integers(0, 256, (h, w, 4), np.uint8)
        a[..., 3] = rng.choice([0, 17, 128, 255], (h, w))  # weighted alpha: colour by coverage
        return a

    paths.append(write(os.path.join(folder, "a_rgba.png"), rgba(64, 64)))
    paths.append(write(os.path.join(folder, "b_odd.png"), rgba(53, 37)))
    paths.append(write(os.path.join(folder, "c_rgb.png"), rng.integers(0, 256, (31, 48, 3), np.uint8)))
    paths.append(write(os.path.join(folder, "d_grey.png"), rng.integers(0, 256, (45, 29, 1), np.uint8)))
    paths.append(write(os.path.join(folder, "e_grey_alpha.png"), rng.integers(0, 256, (20, 33, 2), np.uint8)))
    paths.append(write(os.path.join(folder, "f_deep.png"), rng.integers(0, 65536, (27, 40, 4), np.uint16)))
    paths.append(write(os.path.join(folder, "g_wide.png"), rgba(7, 130)))
    return paths


def _hashes(folder) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in sorted(os.listdir(folder))}


def _upload(gpu, monkeypatch, paths, out, container, engine, **opts):
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", engine)
    return upload_files(paths, Options(mips=True, container=container, **opts), out=str(out), session=gpu,
                        jobs=3, workers=2)


@pytest.mark.parametrize("container", ["ktx2", "dds"])
def test_split_writes_the_gpu_paths_bytes(gpu, rng, tmp_path, monkeypatch, container):
    paths = _batch(rng, tmp_path / "in")
    runs = {}
    for engine in ("shader", "cpu", "auto"):
        out = tmp_path / f"out-{engine}"
        results = _upload(gpu, monkeypatch, paths, out, container, engine)
        assert [r.error for r in results] == [None] * len(paths)
        assert [r.source for r in results] == paths  # reported in input order
        assert [r.outputs for r in results] == [[str(out / (os.path.basename(p)[:-4] + "." + container))]
                                                for p in paths]
        runs[engine] = (results, _hashes(out))
    assert len(runs["shader"][1]) == len(paths)
    assert runs["cpu"][1] == runs["shader"][1]
    assert runs["auto"][1] == runs["shader"][1]
    # one GPU slot: while the GPU step holds it, the other worker writes its own input (which
    # inputs go which way depends on timing; the bytes may not)
    monkeypatch.setenv("GPUTEX_GPU_SLOTS", "1")
    one = _upload(gpu, monkeypatch, paths, tmp_path / "out-one-slot", container, "auto")
    assert [r.error for r in one] == [None] * len(paths)
    assert _hashes(tmp_path / "out-one-slot") == runs["shader"][1]
    # which engine made each chain: none on the host with shader; every one the C engine serves with cpu
    assert {r.mips_engine for r in runs["shader"][0]} == {"gpu"}
    assert [r.mips_engine for r in runs["cpu"][0]] == ["host"] * len(paths)
    assert [r.upload_path for r in runs["cpu"][0]] == [None] * len(paths)  # nothing uploaded: a worker wrote it
    assert None not in {r.upload_path for r in runs["shader"][0]}
    assert {r.mips_engine for r in runs["auto"][0]} <= {"gpu", "host"}


@pytest.mark.parametrize("opts", [
    {"premultiply": True}, {"flip_y": True}, {"mip_levels": 3}, {"zstd": 3}, {"color_space": "linear"},
    {"mip_options": MipOptions(alpha="straight")}, {"format": "rgba8unorm"}, {"format": "bgra8unorm-srgb"},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_options_give_the_gpu_paths_bytes(gpu, rng, tmp_path, monkeypatch, opts):
    """Every option the worker applies itself (conversion, levels, alpha mode, Zstandard) writes
    what the GPU path writes (every kind of input of ``_batch``: RGBA, odd sizes, RGB, grey,
    grey + alpha, 16-bit)."""
    paths = _batch(rng, tmp_path / "in")
    runs = {}
    for engine in ("shader", "cpu"):
        out = tmp_path / f"out-{engine}"
        results = _upload(gpu, monkeypatch, paths, out, "ktx2", engine, **opts)
        assert [r.error for r in results] == [None] * len(paths)
        runs[engine] = (results, _hashes(out))
    assert [r.upload_path for r in runs["cpu"][0]] == [None] * len(paths)
    assert runs["cpu"][1] == runs["shader"][1] and len(runs["cpu"][1]) == len(paths)


def test_host_written_levels_are_the_float64_box(gpu, rng, tmp_path, monkeypatch):
    """A file the worker wrote, read back: level 0 the pixels sent, level 1 of an even-sized
    linear image the plain mean of each 2x2 block, correctly rounded (opaque: weighted = plain)."""
    a = rng.integers(0, 256, (16, 24, 4), np.uint8)
    a[..., 3] = 255
    paths = [write(tmp_path / "in" / "x.png", a), write(tmp_path / "in" / "y.png", a[::-1].copy())]
    results = _upload(gpu, monkeypatch, paths, tmp_path / "out", "ktx2", "cpu", format="rgba8unorm",
                      color_space="linear")
    assert [r.mips_engine for r in results] == ["host", "host"]
    tf = read_texture_file(results[0].outputs[0])
    assert bytes(tf.levels[0]) == a.tobytes()
    want = np.floor(a.astype(np.float64).reshape(8, 2, 12, 2, 4).mean(axis=(1, 3)) + 0.5).astype(np.uint8)
    assert bytes(tf.levels[1]) == want.tobytes()


def test_json_reports_the_engine(rng, tmp_path):
    """The CLI's ``--json`` line of each input names the engine that made its chain."""
    import json
    import sys

    a = rng.integers(0, 256, (32, 32, 4), np.uint8)
    paths = [write(tmp_path / "in" / f"{n}.png", a) for n in ("p", "q", "r")]
    env = dict(os.environ, GPUTEX_MIPS_ENGINE="cpu", PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "gputex", "upload", *paths, "--mips", "-o", str(tmp_path / "out"),
                        "--jobs", "3", "--workers", "2", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert [(d["source"], d["mips_engine"]) for d in lines] == [(p, "host") for p in paths]
    # written by the decode workers, not by a GPU step that made its chain with the C engine:
    # nothing was uploaded (no upload path, no upload or capture timings)
    assert [("upload_path" in d, "upload" in d["timings"], "capture" in d["timings"]) for d in lines] == [
        (False, False, False)] * len(paths)
    assert all(d["outputs"] == [str(tmp_path / "out" / (os.path.basename(p)[:-4] + ".ktx2"))] for d, p in
               zip(lines, paths))


def test_a_corrupt_png_in_a_host_batch(gpu, rng, tmp_path, monkeypatch):
    """The bad file gets its one-line error, the others are written, no temporary file is left."""
    a = rng.integers(0, 256, (20, 20, 4), np.uint8)
    good = [write(tmp_path / "in" / f"{n}.png", a) for n in ("a", "c")]
    data = open(good[0], "rb").read()
    bad = tmp_path / "in" / "b.png"
    bad.write_bytes(data[: len(data) // 2])  # cut in the middle of its IDAT
    paths = [good[0], str(bad), good[1]]
    out = tmp_path / "out"
    results = _upload(gpu, monkeypatch, paths, out, "ktx2", "cpu")
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].error.startswith(str(bad) + ": ") and "\n" not in results[1].error
    assert sorted(os.listdir(out)) == ["a.ktx2", "c.ktx2"]
    assert bytes(read_texture_file(str(out / "c.ktx2")).levels[0]) == a.tobytes()


def test_repeated_stems_keep_the_gpu_path(gpu, rng, tmp_path, monkeypatch):
    """Inputs whose output names collide get them in input order: no split (a worker would have to
    name its file before the earlier inputs are done)."""
    a = rng.integers(0, 256, (8, 8, 4), np.uint8)
    paths = [write(tmp_path / "x" / "t.png", a), write(tmp_path / "y" / "t.png", a[::-1].copy())]
    results = _upload(gpu, monkeypatch, paths, tmp_path / "out", "ktx2", "cpu")
    assert [r.outputs for r in results] == [[str(tmp_path / "out" / "t.ktx2")], [str(tmp_path / "out" / "t-2.ktx2")]]
    assert bytes(read_texture_file(results[1].outputs[0]).levels[0]) == a[::-1].tobytes()


def test_what_the_engine_serves():
    """16-bit sRGB, more than 2^28 texels, one level, float data, unknown 16-bit storage: the GPU."""
    plan = HostPlan("x.ktx2", None, None, False, False, None, True, None, False, True)

    def image(shape, dtype, space="srgb"):
        return Image(np.zeros(shape, dtype), space)

    fmt, space, levels = plan_texture(image((4, 4, 4), np.uint8), plan)
    assert (fmt.name, space, levels) == ("rgba8unorm-srgb", "srgb", 3)
    assert plan_texture(image((4, 4, 4), np.uint16, "linear"), plan)[0].name == "rgba16unorm"
    assert plan_texture(image((4, 4, 4), np.uint16, "srgb"), plan) is None  # 16-bit sRGB: sums past 64 bits
    assert plan_texture(image((1, 1, 4), np.uint8), plan) is None  # one level: no chain
    assert plan_texture(image((4, 4, 4), np.float32, "linear"), plan) is None
    from dataclasses import replace

    assert plan_texture(image((4, 4, 4), np.uint16, "linear"), replace(plan, norm16=False)) is None
    # an 8-bit image asked for as 16-bit unorm on a device not known to store it: the GPU step decides
    assert plan_texture(image((4, 4, 4), np.uint8, "linear"), replace(plan, format="rgba16unorm", norm16=False)) is None
    assert plan_texture(image((4, 4, 4), np.uint8, "linear"), replace(plan, format="rgba16unorm"))[0].name == "rgba16unorm"
    big = Image(np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (16385, 16384, 4), (0, 0, 0)), "srgb")
    assert plan_texture(big, plan) is None  # more than 2^28 texels
    large = Image(np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (4097, 4096, 4), (0, 0, 0)), "srgb")
    assert plan_texture(large, plan)[0].name == "rgba8unorm-srgb"  # over 2^24: the 128-bit engine's


@pytest.mark.skipif(KTX is None, reason="Khronos's ktx tool (../shared/peers/ktx) is not present")
def test_host_written_ktx2_passes_ktx_validate(gpu, rng, tmp_path, monkeypatch):
    paths = _batch(rng, tmp_path / "in")[:3]
    results = _upload(gpu, monkeypatch, paths, tmp_path / "out", "ktx2", "cpu")
    assert [r.mips_engine for r in results] == ["host"] * 3
    for r in results:
        check = subprocess.run([KTX, "validate", r.outputs[0]], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


def test_options_the_split_leaves_to_the_gpu(gpu, rng, tmp_path, monkeypatch):
    """--verify (it checks the GPU's round trip) and other filters keep every chain on the GPU step."""
    a = rng.integers(0, 256, (16, 16, 4), np.uint8)
    paths = [write(tmp_path / "in" / f"{n}.png", a) for n in ("a", "b")]
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "cpu")
    verified = upload_files(paths, Options(mips=True, verify=True), out=str(tmp_path / "v"), session=gpu, jobs=3,
                            workers=2)
    assert [r.verified for r in verified] == [True, True]  # (a worker's file is never verified: None)
    kaiser = upload_files(paths, Options(mips=True, mip_options=MipOptions(filter="kaiser")), out=str(tmp_path / "k"),
                          session=gpu, jobs=3, workers=2)
    assert [(r.ok, r.mips_engine) for r in kaiser] == [(True, "gpu")] * 2


def test_ctrl_c_in_a_host_split_batch(tmp_path):
    """Ctrl-C to the process group while the workers write files: exit 130 with the summary line,
    every file written whole and reported, no temporary file, no worker left."""
    import re
    import signal
    import sys
    import time

    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (384, 384, 4), np.uint8)
    files = [write(tmp_path / "src" / f"img{i:03d}.png", np.roll(a, i, axis=1)) for i in range(40)]
    out = tmp_path / "out"
    env = dict(os.environ, GPUTEX_MIPS_ENGINE="cpu", PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.Popen([sys.executable, "-m", "gputex", "upload", *files, "--mips", "-o", str(out), "--jobs", "3"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (out.exists() and [n for n in os.listdir(out) if n.endswith(".ktx2")]):
        time.sleep(0.01)
    os.killpg(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, stderr
    assert len(stderr.splitlines()) == 1, stderr
    m = re.fullmatch(r"gputex: interrupted after (\d+) of 40 inputs \((\d+) ok, 0 failed\); every output written "
                     r"is complete", stderr.strip())
    assert m and m.group(1) == m.group(2), stderr
    names = sorted(os.listdir(out))
    assert not [n for n in names if n.startswith(".")], names
    lines = [line for line in stdout.splitlines() if not line.startswith("adapter: ")]
    reported = sorted(os.path.basename(line.split(" -> ")[1]) for line in lines)
    assert reported == names and 0 < len(names) == int(m.group(1)) < 40
    for name in names:
        i = int(name[3:6])
        assert bytes(read_texture_file(str(out / name)).levels[0]) == np.roll(a, i, axis=1).tobytes(), name


def test_no_split_without_the_engine_or_with_a_bad_flag(rng, tmp_path, monkeypatch):
    """A build without the C extension, or a GPUTEX_MIPS_ENGINE that is not a choice: no split
    (the GPU step reports the bad value per input, as without workers)."""
    from gputex.batch import Item
    from gputex.upload_stage import HostSplit

    items = [Item(str(tmp_path / "a.png")), Item(str(tmp_path / "b.png"))]
    opts = Options(mips=True, out=str(tmp_path / "out"))
    from gputex.outputs import texture_names

    names, _ = texture_names(opts.out, [i.path for i in items])
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "cpu")
    assert HostSplit(opts, names).prepare(items) is True
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "gpu")
    assert HostSplit(opts, names).prepare(items) is False
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    monkeypatch.setattr(cpu, "_mipcpu", None)
    assert HostSplit(opts, names).prepare(items) is False


def test_no_device_leaves_no_file(rng, tmp_path):
    """The device cannot be made (no such adapter): the run fails with the no-GPU exit code and
    none of the files the decode workers wrote while it was being made is left behind."""
    import sys

    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (64, 64, 4), np.uint8)) for n in "abcdef"]
    env = dict(os.environ, GPUTEX_MIPS_ENGINE="cpu", PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "gputex", "upload", *paths, "--mips", "-o", str(out), "--jobs", "3",
                        "--workers", "2", "--adapter", "no such adapter"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 3, r.stderr
    assert r.stderr.startswith("gputex: no GPU adapter matching 'no such adapter'")
    assert not out.exists() or os.listdir(out) == []


@pytest.mark.parametrize("slot", [False, True])
def test_decoded_images_waiting_for_the_gpu_are_bounded(slot):
    """Taken in completion order (the split), decoded images that wait for a slow GPU step stay
    within the window of ``jobs + 1`` decodes in flight when they hold no GPU slot (images the C
    engine does not serve); those holding a slot are bounded by the slots (here: a semaphore of 2,
    taken in the decode and given back after the GPU step, as the workers and the GPU step do)."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from gputex import batch

    slots = threading.Semaphore(2)
    lock = threading.Lock()
    seen = {"decoded": 0, "stepped": 0, "most": 0}

    def decode(item):
        time.sleep(0.002)
        held = slot and slots.acquire(blocking=False)
        if slot and not held:  # no slot: its worker would write the file itself
            return SimpleNamespace(outputs=[], path=item.path), None
        with lock:
            seen["decoded"] += 1
            seen["most"] = max(seen["most"], seen["decoded"] - seen["stepped"])
        return SimpleNamespace(outputs=[], path=item.path), SimpleNamespace(slot=held)

    def gpu(item, data, result):
        time.sleep(0.02)
        with lock:
            seen["stepped"] += 1
        if data.slot:
            slots.release()

    emitted = []
    items = [batch.Item(f"{i}.png") for i in range(30)]
    with ThreadPoolExecutor(6) as pool:
        batch._any_order(items, 3, pool, decode, gpu, None, lambda r: emitted.append(r.path), None)
    assert emitted == [i.path for i in items]  # every input, in input order
    assert seen["most"] <= (2 if slot else 3 + 1 + 1)  # the window, and the one in its GPU step


@pytest.mark.parametrize("when", ["demand", "start"])
def test_the_result_line_of_a_host_written_input(rng, tmp_path, when):
    """The text line of an input whose chain and file a decode worker made names no copies that
    never happened (no write_texture/capture row pitches, no staging). With the device made on
    demand (the default) no input needed it, so none was made and no adapter line comes; made at
    the start (``GPUTEX_SPLIT_DEVICE=start``) the adapter line comes first."""
    import sys

    a = rng.integers(0, 256, (32, 32, 4), np.uint8)
    paths = [write(tmp_path / "in" / f"{n}.png", a) for n in ("p", "q", "r")]
    env = dict(os.environ, GPUTEX_MIPS_ENGINE="cpu", GPUTEX_SPLIT_DEVICE=when, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), os.environ.get("PYTHONPATH", "")]))
    env.pop("GPUTEX_ADAPTER", None)
    env.pop("GPUTEX_BACKEND", None)
    r = subprocess.run([sys.executable, "-m", "gputex", "upload", *paths, "--mips", "-o", str(tmp_path / "out"),
                        "--jobs", "3", "--workers", "2"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    if when == "start":
        assert lines.pop(0).startswith("adapter: ")
    assert lines == [
        f"{p}: rgba8unorm-srgb 32x32 (srgb), 4096 bytes; chain and file made on the host (the C engine: no upload, "
        f"no capture); not verified; 6 levels -> {tmp_path / 'out' / (n + '.ktx2')}"
        for p, n in zip(paths, ("p", "q", "r"))]


def _record_offers(monkeypatch, future=None):
    """``device.session_soon`` (the run's own device) and ``workers.free_gpu_slots`` recorded: each
    offer as (slots, whether the device's Future was done, the semaphore named). ``future``: what
    ``session_soon`` returns instead of making a device."""
    from gputex import device, workers

    made: list = []
    offers: list = []
    real_soon, real_free = device.session_soon, workers.free_gpu_slots

    def soon(*args, **kwargs):
        made.append(future if future is not None else real_soon(*args, **kwargs))
        return made[-1]

    def free(n=1, slots=None):
        offers.append((n, bool(made) and made[0].done(), slots))
        real_free(n, slots)

    monkeypatch.setattr(device, "session_soon", soon)
    monkeypatch.setattr(workers, "free_gpu_slots", free)
    return made, offers


@pytest.mark.parametrize("at", ["ready", "start"])
def test_slots_wait_for_the_runs_own_device(gpu, rng, tmp_path, monkeypatch, at):
    """A split batch that makes its own device offers the GPU's slots once that device is made and
    rehearsed (``GPUTEX_GPU_SLOTS_AT=ready``, the default): decoded images do not wait for a GPU
    that is not there; ``start`` offers them as the decode workers start, before the device is
    asked for. The files are the GPU path's either way."""
    import time

    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (64, 64, 4), np.uint8)) for n in "abcd"]
    shader = _upload(gpu, monkeypatch, paths, tmp_path / "shader", "ktx2", "shader")
    assert [r.error for r in shader] == [None] * 4
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    made, offers = _record_offers(monkeypatch)
    monkeypatch.setenv("GPUTEX_GPU_SLOTS_AT", at)
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")  # (on demand: below)
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=2)
    assert [r.error for r in results] == [None] * 4
    assert _hashes(tmp_path / "out") == _hashes(tmp_path / "shader")
    assert len(made) == 1
    made[0].result(timeout=60)
    deadline = time.monotonic() + 10
    while not offers and time.monotonic() < deadline:  # the Future's callbacks run after its waiters wake
        time.sleep(0.01)
    assert offers[0][:2] == (8, at == "ready")
    assert [o[0] for o in offers].count(8) == 1  # offered once
    assert offers[0][2] is not None  # into the batch's own semaphore


def test_slots_offered_to_the_running_batch_once_its_device_is_ready(gpu, rng, tmp_path, monkeypatch):
    """The device ready at once (a done Future): the offer reaches the running batch's workers (its
    semaphore, while the pool runs) and the GPU may take images; the bytes are the GPU path's."""
    from concurrent.futures import Future

    from gputex import workers

    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (48, 40, 4), np.uint8)) for n in "abcdef"]
    shader = _upload(gpu, monkeypatch, paths, tmp_path / "shader", "ktx2", "shader")
    assert [r.error for r in shader] == [None] * 6
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    ready: Future = Future()
    ready.set_result(gpu)
    seen: list = []
    real_gpu_slots = workers.gpu_slots
    monkeypatch.setattr(workers, "gpu_slots", lambda: seen.append(real_gpu_slots()) or seen[-1])
    made, offers = _record_offers(monkeypatch, ready)
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=2)
    assert [r.error for r in results] == [None] * 6
    assert _hashes(tmp_path / "out") == _hashes(tmp_path / "shader")
    assert made == [ready] and offers[0][:2] == (8, True)
    assert seen and seen[0] is not None and offers[0][2] is seen[0]  # the pool's semaphore, while it ran


def test_no_slots_where_the_runs_device_fails(rng, tmp_path, monkeypatch):
    """The run's own device cannot be made: no slot is ever offered, nothing hangs, and the run
    fails with the device's error (``NoAdapterError``) leaving no file behind."""
    from concurrent.futures import Future

    from gputex.errors import NoAdapterError

    failed: Future = Future()
    failed.set_exception(NoAdapterError("no GPU adapter matching 'nothing'"))
    made, offers = _record_offers(monkeypatch, failed)
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")
    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (32, 32, 4), np.uint8)) for n in "abcd"]
    out = tmp_path / "out"
    with pytest.raises(NoAdapterError, match="no GPU adapter matching 'nothing'"):
        upload_files(paths, Options(mips=True), out=str(out), jobs=3, workers=2)
    assert made == [failed] and offers == []
    assert not out.exists() or os.listdir(out) == []


@pytest.mark.parametrize("name,value,message", [
    ("GPUTEX_GPU_SLOTS_AT", "soon", "GPUTEX_GPU_SLOTS_AT must be ready or start, got 'soon'"),
    ("GPUTEX_SPLIT_DEVICE", "later", "GPUTEX_SPLIT_DEVICE must be demand or start, got 'later'"),
])
def test_a_bad_split_flag_is_a_usage_error(tmp_path, name, value, message):
    import sys

    env = dict(os.environ, **{name: value})
    r = subprocess.run([sys.executable, "-m", "gputex", "upload", str(tmp_path / "x.png"), "--mips", "-o",
                        str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=120)
    assert (r.returncode, r.stderr) == (2, f"gputex: {message}\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value,wait", [(None, True), ("0", False)])
def test_a_split_batch_asks_for_its_workers_before_its_device(rng, tmp_path, monkeypatch, value, wait):
    """``GPUTEX_SPAWN_FIRST`` (default 1): a split batch making its own device asks for all its
    worker processes on the main thread before the device thread starts; ``0``: on the starter
    thread beside it, as before. The files are written either way."""
    from gputex import device, workers

    order: list = []
    real_start, real_soon = workers.start_processes, device.session_soon

    def start(wait=False):
        real_start(wait=wait)
        order.append(("workers", wait))

    def soon(*args, **kwargs):
        order.append(("device", None))
        return real_soon(*args, **kwargs)

    monkeypatch.setattr(workers, "start_processes", start)
    monkeypatch.setattr(device, "session_soon", soon)
    if value is not None:
        monkeypatch.setenv("GPUTEX_SPAWN_FIRST", value)
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")
    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (32, 48, 4), np.uint8)) for n in "abcd"]
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=2)
    assert [r.error for r in results] == [None] * 4
    assert order == [("workers", wait), ("device", None)]
    assert sorted(os.listdir(tmp_path / "out")) == [f"{n}.ktx2" for n in "abcd"]


def _no_chosen_adapter(monkeypatch):
    monkeypatch.delenv("GPUTEX_ADAPTER", raising=False)
    monkeypatch.delenv("GPUTEX_BACKEND", raising=False)
    monkeypatch.delenv("GPUTEX_SPLIT_DEVICE", raising=False)


def test_on_demand_no_device_where_no_input_needs_it(gpu, rng, tmp_path, monkeypatch):
    """``GPUTEX_SPLIT_DEVICE=demand`` (the default), no adapter chosen: a split batch whose every
    input the C engine serves (8-bit) makes no device at all; the run returns no session, every
    result is the host's, and the files are the GPU path's byte for byte."""
    a = [rng.integers(0, 256, (40, 56, 4), np.uint8) for _ in range(4)]
    a[1][..., 3] = rng.choice([0, 9, 255], (40, 56))
    paths = [write(tmp_path / "in" / f"{n}.png", x) for n, x in zip("abcd", a)]
    shader = _upload(gpu, monkeypatch, paths, tmp_path / "shader", "ktx2", "shader")
    assert [r.error for r in shader] == [None] * 4
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    _no_chosen_adapter(monkeypatch)
    # (the work-left trigger off: on a loaded machine the workers' timings made it ask: CI flake)
    monkeypatch.setattr("gputex.run.DEVICE_AFTER", float("inf"))
    made, offers = _record_offers(monkeypatch)
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=2)
    assert [r.error for r in results] == [None] * 4
    assert [r.mips_engine for r in results] == ["host"] * 4
    assert made == [] and offers == []
    assert _hashes(tmp_path / "out") == _hashes(tmp_path / "shader")


def test_on_demand_the_device_comes_for_an_input_that_needs_it(gpu, rng, tmp_path, monkeypatch):
    """An input the host engine does not serve before a device is there (16-bit: its format
    depends on the device's 16-bit norm formats), after the first inputs whose headers the run
    reads, makes the batch ask for its device then, once; that input's GPU step runs on it and
    every file is the GPU path's. Among the first inputs, it has the device made at the start."""
    from gputex.run import REHEARSE_INPUTS, _demand

    paths = [write(tmp_path / "in" / f"{n:02}.png", rng.integers(0, 256, (12, 20, 4), np.uint8))
             for n in range(REHEARSE_INPUTS)]
    paths.append(write(tmp_path / "in" / "zz.png", rng.integers(0, 65536, (20, 30, 4), np.uint16)))
    shader = _upload(gpu, monkeypatch, paths, tmp_path / "shader", "ktx2", "shader")
    assert [r.error for r in shader] == [None] * len(paths)
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    _no_chosen_adapter(monkeypatch)
    assert _demand(True, None, None, None, paths) is True
    assert _demand(True, None, None, None, paths[-1:] + paths[:-1]) is False
    made, offers = _record_offers(monkeypatch)
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=2)
    assert [r.error for r in results] == [None] * len(paths)
    assert len(made) == 1
    assert results[-1].upload_path is not None  # uploaded: the GPU step took it
    assert _hashes(tmp_path / "out") == _hashes(tmp_path / "shader")


def test_on_demand_the_device_comes_for_a_long_batch(gpu, rng, tmp_path, monkeypatch):
    """The work left outlasting :data:`gputex.run.DEVICE_AFTER` (here 0 s: any) makes the batch ask
    for its device while its workers go on; the GPU's slots are offered once it is ready, and
    the files are the GPU path's whichever way each input went."""
    from gputex import run as run_mod

    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (32, 40, 4), np.uint8)) for n in "abcdefgh"]
    shader = _upload(gpu, monkeypatch, paths, tmp_path / "shader", "ktx2", "shader")
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    _no_chosen_adapter(monkeypatch)
    monkeypatch.setattr(run_mod, "DEVICE_AFTER", 0.0)
    made, offers = _record_offers(monkeypatch)
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=2)
    assert [r.error for r in results] == [None] * 8 and [r.error for r in shader] == [None] * 8
    assert len(made) == 1
    made[0].result(timeout=60)
    assert _hashes(tmp_path / "out") == _hashes(tmp_path / "shader")


def test_on_demand_a_device_that_fails_leaves_only_reported_files(rng, tmp_path, monkeypatch):
    """The device asked for on demand cannot be made: the run fails with its error; the files of
    inputs already reported stay (each was whole when reported), no other file is left."""
    import threading
    import time
    from concurrent.futures import Future

    from gputex.errors import NoAdapterError

    reported: list = []
    stalled: list = []
    failed: Future = Future()

    def fail_once_one_is_reported():  # (a done Future would fail the run before any result: review)
        # (a generous wait: the workers run niced, gputex.workers.WORKER_NICE, and a CI run once
        # had none of them report within 60 s)
        deadline = time.monotonic() + 300
        while not reported and time.monotonic() < deadline:
            time.sleep(0.005)
        if not reported:  # what this process's threads were doing, for the failure's message
            import faulthandler
            import tempfile

            with tempfile.TemporaryFile("w+") as f:
                faulthandler.dump_traceback(f, all_threads=True)
                f.seek(0)
                stalled.append(f.read())
        failed.set_exception(NoAdapterError("no GPU adapter found"))

    threading.Thread(target=fail_once_one_is_reported, daemon=True).start()
    _no_chosen_adapter(monkeypatch)
    made, offers = _record_offers(monkeypatch, failed)
    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (24, 24, 4), np.uint8)) for n in "abc"]
    paths.append(write(tmp_path / "in" / "d.png", rng.integers(0, 65536, (20, 20, 4), np.uint16)))
    paths.append(write(tmp_path / "in" / "e.png", rng.integers(0, 256, (24, 24, 4), np.uint8)))
    monkeypatch.setattr("gputex.run.REHEARSE_INPUTS", 0)  # (no header read: the 16-bit input wants it on demand)
    monkeypatch.setattr("gputex.run.DEVICE_AFTER", float("inf"))  # (asked for by the 16-bit input, not the work left)
    out = tmp_path / "out"
    from gputex.batch import expand_inputs
    from gputex.outputs import texture_names
    from gputex.run import run, stages

    opts = Options(mips=True, out=str(out))
    names, _ = texture_names(opts.out, paths)
    with pytest.raises(NoAdapterError, match="no GPU adapter found"):
        run(expand_inputs(paths), stages("upload", opts, names), on_result=lambda r, s: reported.append(r),
            jobs=3, workers=2)
    assert made == [failed] and offers == []
    assert reported and all(r.ok for r in reported), stalled
    assert "d.png" not in {os.path.basename(r.source) for r in reported}
    left = sorted(os.listdir(out)) if out.exists() else []
    assert left == sorted(os.path.basename(p) for r in reported for p in r.outputs)


@pytest.mark.parametrize("adapter,env", [("llvmpipe", {}), (None, {"GPUTEX_ADAPTER": "x"}),
                                         (None, {"GPUTEX_BACKEND": "vulkan"}), (None, {"GPUTEX_SPLIT_DEVICE": "start"})])
def test_a_chosen_adapter_is_made_at_the_start(monkeypatch, adapter, env):
    """An adapter or backend chosen (the option or its variable), or ``GPUTEX_SPLIT_DEVICE=start``:
    the device is made as the batch starts (a bad choice fails the run at once), not on demand."""
    from gputex.run import _demand

    _no_chosen_adapter(monkeypatch)
    assert _demand(True, None, None, None) is True
    assert _demand(False, None, None, None) is False  # no split
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _demand(True, None, adapter, None) is False


def test_the_work_left_against_device_after():
    """``DeviceOnDemand.due``: inputs left x the mean worker seconds of those finished / processes,
    against :data:`gputex.run.DEVICE_AFTER` (strictly more); nothing finished: not due."""
    from types import SimpleNamespace

    from gputex.run import DEVICE_AFTER, DeviceOnDemand

    later = DeviceOnDemand(lambda: None, processes=4)
    assert later.due([], 1000) is False
    r = SimpleNamespace(timings={"decode": 0.06, "mips": 0.03, "encode": 0.01, "gpu": 5.0})  # 0.1 s of the worker
    assert later.due([r, r], left=round(DEVICE_AFTER * 4 / 0.1)) is False  # exactly DEVICE_AFTER left
    assert later.due([], left=round(DEVICE_AFTER * 4 / 0.1) + 1) is True
    assert DeviceOnDemand(lambda: None, processes=0).processes == 1


@pytest.mark.parametrize("when,jobs,processes", [("demand", 4, 4), ("start", 4, 3), ("demand", 2, 2), ("start", 2, 0)])
def test_processes_of_a_split_batch(rng, tmp_path, monkeypatch, when, jobs, processes):
    """``--jobs 4``, four inputs: a split batch making its device on demand decodes in 4 processes
    (a core each: no device thread beside them unless wanted); with the device made at the start,
    in 3 (``--jobs`` less one, at least 3: one core for the device and the GPU step). ``--jobs 2``:
    two processes on demand; threads (no process) with the device at the start, as any 2-job batch."""
    from gputex import workers

    seen: list = []
    real = workers.codec_workers

    def record(n, *args, **kwargs):
        seen.append(n)
        return real(n, *args, **kwargs)

    monkeypatch.setattr(workers, "codec_workers", record)
    _no_chosen_adapter(monkeypatch)
    monkeypatch.delenv("GPUTEX_WORKERS", raising=False)
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", when)
    paths = [write(tmp_path / "in" / f"{n}.png", rng.integers(0, 256, (16, 24, 4), np.uint8)) for n in "abcd"]
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=jobs)
    assert [r.error for r in results] == [None] * 4
    assert seen[0] == processes


@pytest.mark.parametrize("container", ["ktx2", "dds"])
def test_one_input_inline_makes_no_device(gpu, rng, tmp_path, monkeypatch, container):
    """One 8-bit input to a single texture file (no decode workers): the inline split decodes,
    makes the chain with the C engine over the cores and writes the file in this process, with
    no device; the bytes are the GPU path's. ``GPUTEX_SPLIT_DEVICE=start``: the GPU path, as
    before (uploaded)."""
    a = rng.integers(0, 256, (45, 70, 4), np.uint8)
    a[..., 3] = rng.choice([0, 40, 255], (45, 70))
    src = write(tmp_path / "in" / "x.png", a)
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "shader")
    ref = upload_files([src], Options(mips=True), out=str(tmp_path / f"gpu.{container}"), session=gpu)
    assert ref[0].error is None and ref[0].upload_path is not None
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    _no_chosen_adapter(monkeypatch)
    made, offers = _record_offers(monkeypatch)
    got = upload_files([src], Options(mips=True), out=str(tmp_path / f"host.{container}"))
    assert got[0].error is None and (got[0].mips_engine, got[0].upload_path) == ("host", None)
    assert made == [] and offers == []
    assert (tmp_path / f"host.{container}").read_bytes() == (tmp_path / f"gpu.{container}").read_bytes()
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")
    old = upload_files([src], Options(mips=True), out=str(tmp_path / f"start.{container}"))
    assert old[0].error is None and old[0].upload_path is not None and len(made) == 1
    assert (tmp_path / f"start.{container}").read_bytes() == (tmp_path / f"gpu.{container}").read_bytes()


def test_workers_off_inline_batch(gpu, rng, tmp_path, monkeypatch):
    """``--workers 0`` (codecs in threads): the inline split writes each 8-bit input's file in
    the thread that decoded it, the 16-bit one goes to the GPU step (the device made for it, and
    at the start: it is among the first inputs); every file is the GPU path's."""
    paths = _batch(rng, tmp_path / "in")  # includes a 16-bit input
    shader = _upload(gpu, monkeypatch, paths, tmp_path / "shader", "ktx2", "shader")
    assert [r.error for r in shader] == [None] * len(paths)
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "auto")
    _no_chosen_adapter(monkeypatch)
    monkeypatch.setattr("gputex.run.REHEARSE_INPUTS", 0)  # (no header read: the device comes on demand)
    made, offers = _record_offers(monkeypatch)
    results = upload_files(paths, Options(mips=True), out=str(tmp_path / "out"), jobs=3, workers=0)
    assert [r.error for r in results] == [None] * len(paths)
    assert len(made) == 1 and offers == []  # (no decode workers: no slots to offer)
    deep = [os.path.basename(r.source) for r in results if r.upload_path is not None]
    assert deep == ["f_deep.png"]
    assert _hashes(tmp_path / "out") == _hashes(tmp_path / "shader")


def test_one_input_cli_line_and_json(rng, tmp_path):
    """The CLI on one 8-bit input: the host's line and no adapter line; ``--json``: adapter null,
    ``mips_engine`` host; the KTX2 passes gputex's own validation."""
    import json
    import sys

    src = write(tmp_path / "x.png", rng.integers(0, 256, (20, 30, 4), np.uint8))
    env = {k: v for k, v in os.environ.items() if k not in ("GPUTEX_ADAPTER", "GPUTEX_BACKEND", "GPUTEX_SPLIT_DEVICE",
                                                           "GPUTEX_MIPS_ENGINE")}
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                         os.environ.get("PYTHONPATH", "")])
    out = tmp_path / "x.ktx2"
    r = subprocess.run([sys.executable, "-m", "gputex", "upload", src, "--mips", "-o", str(out)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"{src}: rgba8unorm-srgb 30x20 (srgb), 2400 bytes; chain and file made on the host (the C "
                        f"engine: no upload, no capture); not verified; 5 levels -> {out}\n")
    r = subprocess.run([sys.executable, "-m", "gputex", "upload", src, "--mips", "-o", str(out), "--json"],
                       capture_output=True, text=True, env=env, timeout=300)
    d = json.loads(r.stdout)
    assert (d["adapter"], d["mips_engine"], "upload_path" in d, d["levels"]) == (None, "host", False, 5)
    v = subprocess.run([sys.executable, "-m", "gputex", "validate", str(out)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert v.returncode == 0, v.stdout + v.stderr


def test_a_tagged_16_bit_png_wants_the_device_at_once(rng, tmp_path, monkeypatch):
    """The check for inputs that want a device reads the IHDR alone: a 16-bit PNG with colour
    chunks (gAMA) has the device made at the start; a FIFO named ``*.png`` is not opened (it
    would block); a plain 8-bit PNG leaves it on demand."""
    import struct
    import zlib

    from gputex.run import _demand
    from gputex.warmup import png_ihdr

    plain = write(tmp_path / "deep.png", rng.integers(0, 65536, (6, 9, 4), np.uint16))
    data = open(plain, "rb").read()
    gama = struct.pack(">I", 4) + b"gAMA" + struct.pack(">I", 45455)
    gama += struct.pack(">I", zlib.crc32(b"gAMA" + struct.pack(">I", 45455)))
    tagged = tmp_path / "tagged.png"
    tagged.write_bytes(data[:33] + gama + data[33:])
    assert png_ihdr(str(tagged)) == (9, 6, 16)
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    assert png_ihdr(str(fifo)) is None
    eight = write(tmp_path / "eight.png", rng.integers(0, 256, (6, 9, 4), np.uint8))
    _no_chosen_adapter(monkeypatch)
    assert _demand(True, None, None, None, [eight, str(fifo)]) is True
    assert _demand(True, None, None, None, [eight, str(tagged)]) is False


@pytest.mark.parametrize("suffix", ["ktx2", "dds"])
def test_inline_file_streamed_while_the_chain_is_made_has_the_same_bytes(rng, tmp_path, monkeypatch, suffix):
    """A file made inline over several threads (``host_texture._open_streamed``: level 0 copied
    into the mapped file while the C engine makes the chain, the levels after it; 8192² and up)
    has the bytes of the file written after the chain (a batch worker's way), for RGBA8 sRGB with
    alpha, an odd size, grey, and a flipped, premultiplied one; a chain that fails leaves no file."""
    import gputex.host_texture as ht
    from gputex.host_texture import write_host_texture

    monkeypatch.setattr(ht, "STREAM_MIN_BYTES", 0)
    opened, real = [], ht._open_streamed
    monkeypatch.setattr(ht, "_open_streamed", lambda *args: opened.append(real(*args)) or opened[-1])
    cases = [(rng.integers(0, 256, (64, 48, 4), np.uint8), {}), (rng.integers(0, 256, (53, 37, 4), np.uint8), {}),
             (rng.integers(0, 256, (300, 257, 1), np.uint8), {}),
             (rng.integers(0, 256, (40, 24, 4), np.uint8), {"flip_y": True, "premultiply": True})]
    for i, (a, opts) in enumerate(cases):
        image = Image(a, "srgb")
        files = {}
        for way in ("after", "streamed"):
            plan = HostPlan(str(tmp_path / f"{i}-{way}.{suffix}"), None, None, opts.get("premultiply", False),
                            opts.get("flip_y", False), None, True, None, False, True,
                            inline=way == "streamed", threads=2 if way == "streamed" else 1)
            texture = plan_texture(image, plan)
            assert texture is not None
            if way == "streamed":
                assert real(image, plan, texture, np.zeros((a.shape[0], 1), np.uint8)) is None  # (not level 0's size)
            written = write_host_texture(image, plan, texture)
            files[way] = open(written.path, "rb").read()
        assert files["after"] == files["streamed"], i
        assert opened[-2] is None and opened[-1] is not None  # (the first way wrote after the chain)

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cpu, "host_chain", no_memory)
    image = Image(cases[0][0], "srgb")
    plan = HostPlan(str(tmp_path / f"failed.{suffix}"), None, None, False, False, None, True, None, False, True,
                    inline=True, threads=2)
    with pytest.raises(MemoryError):
        write_host_texture(image, plan, plan_texture(image, plan))
    assert sorted(os.listdir(tmp_path)) == sorted(f"{i}-{way}.{suffix}" for i in range(4) for way in ("after", "streamed"))


@pytest.mark.parametrize("suffix", ["ktx2", "dds"])
def test_inline_streamed_file_whose_levels_fail_to_fit_is_not_left(rng, tmp_path, monkeypatch, suffix):
    """A streamed file whose copy of levels 1.. fails (``StreamedFile.fill_host``: a level of
    the wrong length, after level 0's copy into the map was started) raises and leaves nothing:
    no file at the name, no temporary beside it; the next file to the same name is whole."""
    import gputex.host_texture as ht
    from gputex.host_texture import write_host_texture

    monkeypatch.setattr(ht, "STREAM_MIN_BYTES", 0)
    real = cpu.host_chain

    def short_last(*args, **kwargs):
        levels = real(*args, **kwargs)
        return levels[:-1] + [levels[-1][:, :0]]

    a = rng.integers(0, 256, (64, 48, 4), np.uint8)
    image = Image(a, "srgb")
    plan = HostPlan(str(tmp_path / f"x.{suffix}"), None, None, False, False, None, True, None, False, True,
                    inline=True, threads=2)
    monkeypatch.setattr(cpu, "host_chain", short_last)
    with pytest.raises(ValueError, match=r"level 6: 0 bytes for a place of 4"):
        write_host_texture(image, plan, plan_texture(image, plan))
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(cpu, "host_chain", real)
    written = write_host_texture(image, plan, plan_texture(image, plan))
    assert os.listdir(tmp_path) == [f"x.{suffix}"]
    back = read_texture_file(written.path)
    assert np.array_equal(np.asarray(back.levels[0]).reshape(a.shape), a)
