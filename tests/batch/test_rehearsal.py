"""A run's start-up (gputex.run): the device thread's rehearsal of every kind of chain among the
first inputs, the step modules imported while the device is made, and worker processes that
end without the interpreter's teardown."""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest

from gputex.pipeline import MipOptions, Options, Result, upload_image
from gputex.run import REHEARSE_INPUTS, preload, rehearsal


def _shapes(monkeypatch, opts, paths, adapter_type="DiscreteGPU", full_size=None, caches=None, first_ready=None,
            waiting=None):
    """The (height, width, channels, dtype, colour space) of each image the rehearsal uploads;
    ``caches``: {name: pipelines each upload makes, in turn} (default: one each)."""
    import gputex.pipeline
    from gputex.caches import Cache

    seen: list = []
    made: dict = {}
    caches = caches or {}

    class Tex:
        def destroy(self):
            pass

    def fake_upload(session, image, o, result):
        for name, counts in caches.items():
            made.setdefault(name, Cache(name)).misses += counts[len(seen)]
        seen.append((*image.pixels.shape[:2], image.pixels.shape[2] if image.pixels.ndim == 3 else 1,
                     image.pixels.dtype.name, image.color_space))
        return Tex()

    monkeypatch.setattr(gputex.pipeline, "upload_image", fake_upload)
    run = rehearsal(opts, paths, full_size=full_size, first_ready=first_ready, waiting=waiting)
    if run is None:
        return None
    def cache(name):
        return made.setdefault(name, Cache(name))

    run(SimpleNamespace(info=SimpleNamespace(adapter_type=adapter_type), cache=cache, limits={}))
    return seen


def test_each_kind_of_chain_once(monkeypatch, tmp_png, rng):
    odd = tmp_png(rng.integers(0, 256, (37, 45, 4), np.uint8), "a_odd.png")
    pot = tmp_png(rng.integers(0, 256, (32, 64, 4), np.uint8), "b_pot.png")
    pot2 = tmp_png(rng.integers(0, 256, (32, 64, 4), np.uint8), "c_pot.png")
    tall = tmp_png(rng.integers(0, 65536, (128, 16), np.uint16), "d_tall.png")
    odd2 = tmp_png(rng.integers(0, 256, (37, 45, 4), np.uint8), "e_odd.png")
    paths = [odd, pot, pot2, tall, odd2]
    opts = Options(mips=True)
    # power-of-two sizes thin (the long side kept; on a GPU 8 texels, its forms' first pass:
    # spd.rehearsal_shape), other sizes whole, each kind once
    assert _shapes(monkeypatch, opts, paths) == [(37, 45, 4, "uint8", "srgb"), (8, 64, 4, "uint8", "srgb"),
                                                 (128, 8, 1, "uint16", "linear")]
    # a CPU adapter (lavapipe): only the thin ones, one texel (a whole-size chain would take the
    # decodes' cores)
    assert _shapes(monkeypatch, opts, paths, adapter_type="CPU") == [(1, 64, 4, "uint8", "srgb"),
                                                                     (128, 1, 1, "uint16", "linear")]
    assert _shapes(monkeypatch, opts, paths, adapter_type="CPU", full_size=True)[0] == (37, 45, 4, "uint8", "srgb")
    # whole-size ones stop at the first that made no pipeline
    odd3 = tmp_png(rng.integers(0, 256, (39, 45, 4), np.uint8), "f_odd.png")
    odd4 = tmp_png(rng.integers(0, 256, (41, 45, 4), np.uint8), "g_odd.png")
    import gputex.kernels

    monkeypatch.setattr(gputex.kernels, "PIPELINES", "test-pipelines")
    for made, done in (([1, 1, 1], 3), ([1, 0, 1], 2), ([0, 1, 1], 1)):
        assert len(_shapes(monkeypatch, opts, [odd, odd3, odd4], caches={"test-pipelines": made})) == done
    # only the first REHEARSE_INPUTS inputs are looked at
    assert _shapes(monkeypatch, opts, [pot] * REHEARSE_INPUTS + [tall]) == [(8, 64, 4, "uint8", "srgb")]


def test_the_first_inputs_kind_is_left_to_it_once_decoded(monkeypatch, tmp_png, rng):
    """Where the first input is decoded by the time its kind's turn comes, that kind is not
    rehearsed (its real step follows at once); the other kinds are, and an undecoded first
    input's kind is too."""
    odd = tmp_png(rng.integers(0, 256, (37, 45, 4), np.uint8), "a_odd.png")
    pot = tmp_png(rng.integers(0, 256, (32, 64, 4), np.uint8), "b_pot.png")
    odd2 = tmp_png(rng.integers(0, 256, (37, 45, 4), np.uint8), "c_odd.png")
    opts = Options(mips=True)
    every = [(37, 45, 4, "uint8", "srgb"), (8, 64, 4, "uint8", "srgb")]
    assert _shapes(monkeypatch, opts, [odd, pot, odd2], first_ready=lambda: False) == every
    assert _shapes(monkeypatch, opts, [odd, pot, odd2], first_ready=lambda: True) == every[1:]
    assert _shapes(monkeypatch, opts, [pot, odd, odd2], first_ready=lambda: True) == every[:1]
    # asked when the kind's turn comes, not once up front
    answers = iter([False])
    assert _shapes(monkeypatch, opts, [pot, odd], first_ready=lambda: next(answers, True)) == every[::-1]


def test_nothing_more_once_decoded_images_wait(monkeypatch, tmp_png, rng):
    """A split run's GPU takes decoded images in any order: once one waits (``waiting()``), no
    further kind is rehearsed, whatever the first input's state; asked before each kind."""
    odd = tmp_png(rng.integers(0, 256, (37, 45, 4), np.uint8), "a_odd.png")
    pot = tmp_png(rng.integers(0, 256, (32, 64, 4), np.uint8), "b_pot.png")
    opts = Options(mips=True)
    every = [(37, 45, 4, "uint8", "srgb"), (8, 64, 4, "uint8", "srgb")]
    assert _shapes(monkeypatch, opts, [odd, pot], waiting=lambda: False) == every
    assert _shapes(monkeypatch, opts, [odd, pot], waiting=lambda: True, first_ready=lambda: False) == []
    answers = iter([False])
    assert _shapes(monkeypatch, opts, [odd, pot], waiting=lambda: next(answers, True)) == every[:1]


def test_the_split_says_when_an_image_waits_for_the_gpu():
    """:class:`~gputex.upload_stage.HostSplit` sets ``waiting`` for a decoded image handed to the
    GPU step, not for a file a worker wrote; ``stages`` hands the rehearsal that flag only while
    the split is on."""
    from gputex.host_texture import HostWritten
    from gputex.run import stages

    steps = stages("upload", Options(mips=True, out="out"), None)
    split = steps.split
    written = HostWritten("out/a.ktx2", "rgba8unorm-srgb", 4, 4, 3, "srgb", {}, 64, [], 0.0, 0.0)
    assert split.written(written, Result("a.png")) and not split.waiting.is_set()
    assert not split.written(SimpleNamespace(pixels=np.zeros((4, 4, 4), np.uint8)), Result("b.png"))
    assert split.waiting.is_set()


def test_stages_hand_the_rehearsal_the_splits_flag(monkeypatch):
    import gputex.run

    got: dict = {}
    monkeypatch.setattr(gputex.run, "rehearsal", lambda opts, paths, **kw: got.update(kw))
    steps = gputex.run.stages("upload", Options(mips=True, out="out"), None)
    steps.warm(["a.png"], None)
    steps.split.waiting.set()
    steps.split.on = False  # (prepare decides; off: images wait in input order)
    assert got["waiting"]() is False
    steps.split.on = True
    assert got["waiting"]() is True
    gputex.run.stages("capture", Options(mips=True), None).warm(["a.png"], None)
    assert got["waiting"] is None


@pytest.mark.gpu
def test_run_tells_the_rehearsal_when_the_first_input_is_decoded(gpu):
    """:func:`gputex.run.run` hands the rehearsal a ``first_ready`` that turns true once the
    first input's decode has returned (and not before it started)."""
    import threading

    from gputex.batch import Item
    from gputex.run import Stages, run

    release = threading.Event()
    seen: list = []

    def decode(item):
        if item.path == "first":
            release.wait(10)
        return Result(item.path), None  # nothing to upload: the GPU step is skipped

    def warm(paths, ready):
        def rehearse(session):
            seen.append(ready())  # the first decode is held back: not ready yet
            release.set()
            for _ in range(1000):
                if ready():
                    break
                threading.Event().wait(0.01)
            seen.append(ready())
        return rehearse

    steps = Stages(decode, lambda session: (lambda item, data, result: None), warm=warm, pools=())
    results: list = []
    run([Item("first"), Item("second")], steps, on_result=lambda r, s: results.append(r.source), jobs=2)
    assert seen == [False, True]
    assert results == ["first", "second"]


def test_nothing_to_rehearse(monkeypatch, tmp_png, rng):
    from gputex.transform import Transform

    pot = tmp_png(rng.integers(0, 256, (32, 64, 4), np.uint8), "pot.png")
    assert _shapes(monkeypatch, Options(mips=False), [pot]) is None  # no chain
    assert _shapes(monkeypatch, Options(mips=True, transform=Transform(resize=(16, 16))), [pot]) is None
    assert _shapes(monkeypatch, Options(mips=True), ["-", "missing.png"]) is None  # nothing read


def test_preload_imports_and_ignores_what_fails():
    import sys

    preload(["gputex.containers", "gputex.no_such_module"])
    assert "gputex.containers.ktx2" in sys.modules  # the registry loaded its containers


@pytest.mark.gpu
@pytest.mark.usefixtures("mip_shader")  # the shaders' pipelines, also on a CPU adapter
@pytest.mark.parametrize("gpu_forms", [None, True])  # (True: the single-pass chain's GPU forms, forced)
def test_after_the_rehearsal_no_chain_makes_a_pipeline(gpu, tmp_png, rng, monkeypatch, gpu_forms):
    """Every image of the batch (an odd size, two power-of-two kinds) finds its pipelines and
    self-checks made: no cache of a fresh session misses after the rehearsal."""
    import gputex.mips.spd as spd
    from gputex.decode import decode
    from gputex.device import Session

    if gpu_forms:
        monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
        monkeypatch.setattr(spd, "SUBGROUPS", True)

    paths = [tmp_png(rng.integers(0, 256, (37, 45, 4), np.uint8), "a.png"),
             tmp_png(rng.integers(0, 256, (64, 128, 4), np.uint8), "b.png"),
             tmp_png(rng.integers(0, 65536, (32, 16), np.uint16), "c.png")]
    opts = Options(mips=True, mip_options=MipOptions(filter="box"))
    session = Session()  # fresh caches
    run = rehearsal(opts, paths, full_size=True)
    assert run is not None
    run(session)
    before = {name: c.stats()["misses"] for name, c in session.caches().items()}
    assert before, "the rehearsal made nothing"
    for path in paths:
        tex = upload_image(session, decode(path), opts, Result(path))
        tex.destroy()
    after = {name: c.stats()["misses"] for name, c in session.caches().items()}
    grown = {n: (before.get(n, 0), m) for n, m in after.items() if m != before.get(n, 0)}
    assert not grown, f"caches that missed after the rehearsal: {grown}"


def _leave_traces(folder: str) -> int:
    """In a worker: a finalizer (run at exit, as the shared-memory files' are) and an object
    only the interpreter's teardown would drop."""
    import weakref

    teardown = os.path.join(folder, "teardown")

    class Marker:
        def __del__(self, mark=os.open, path=teardown, flags=os.O_CREAT | os.O_WRONLY):
            mark(path, flags)  # (what it needs held by the method: module globals are gone by then)

    global _KEPT
    _KEPT = Marker()
    weakref.finalize(_KEPT, open(os.path.join(folder, "finalizer"), "w").close)
    return os.getpid()


_KEPT = None


def test_workers_end_without_the_interpreters_teardown(tmp_path):
    """A worker process's exit skips the teardown the pool's shutdown waits for, but still runs
    the finalizers registered while it worked, and ends with status 0."""
    from gputex import workers

    with workers.codec_workers(1, ("decode",)):
        pool = workers._POOLS["decode"]
        pid = pool.submit(_leave_traces, str(tmp_path)).result()
        procs = list(pool._processes.values())
    assert pid in [p.pid for p in procs]
    assert [p.exitcode for p in procs] == [0]
    assert (tmp_path / "finalizer").exists()
    assert not (tmp_path / "teardown").exists()


_SCRIPT = """
import os, sys
if __name__ == "__mp_main__":  # what multiprocessing's spawn runs in a child for a script
    open(os.path.join({folder!r}, "rerun-" + str(os.getpid())), "w").close()
if __name__ == "__main__":
    from gputex import workers
    with workers.codec_workers(2, ("decode",)):
        print(sorted(set(workers._POOLS["decode"].submit(os.getpid).result() for _ in range(4))))
"""


def test_workers_do_not_rerun_the_main_script(tmp_path):
    """The ``gputex`` console script (a script, not ``-m``) is not re-run in each worker."""
    import subprocess
    import sys

    script = tmp_path / "prog.py"
    script.write_text(_SCRIPT.format(folder=str(tmp_path)))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("[")
    assert not list(tmp_path.glob("rerun-*"))
