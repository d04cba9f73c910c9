"""``upload -o`` and ``capture`` batches: the read-back (and the texture-file write) of each input happen on the
pool's threads (``upload_stage.upload_encode_stage``, ``gpu_batch.Readback``) while the
in-order thread goes on. The files must be what the texture holds: level 0 the pixels sent,
the smaller levels the correctly rounded box chain, and byte for byte the files of the
synchronous path (read back and written on the in-order thread)."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from gputex.mips.intbox import EPSILON_LSB
from gputex.pipeline import Options
from gputex.run import Stages, run, stages
from gputex.texfile import read_texture_file
from gputex.upload_stage import upload_gpu_stage

from factory import write
from reference import filter_levels


@pytest.fixture(autouse=True)
def _device_at_the_start(monkeypatch):
    """These tests are about the GPU step's deferred read-backs and writes: the run's device made at
    the start (``GPUTEX_SPLIT_DEVICE=start``), not the inline host split that makes these
    workerless 8-bit batches' files with no device by default (``tests/batch/test_host_split.py``)."""
    monkeypatch.setenv("GPUTEX_SPLIT_DEVICE", "start")

SIZES = [(64, 64), (37, 53), (128, 96), (1, 1)]


def assert_correctly_rounded(got: np.ndarray, ref: np.ndarray, top: int, what: str) -> None:
    """``got`` is round-to-nearest of ``ref * top``, either neighbour within EPSILON_LSB of a tie
    (as tests/mips/test_mips_int.py holds the integer chain)."""
    x = np.clip(ref, 0, 1) * top
    tie = np.abs(x - np.floor(x) - 0.5) <= EPSILON_LSB + 1e-9
    g = got.astype(np.float64)
    assert g.shape == x.shape, f"{what}: shape {g.shape} vs {x.shape}"
    bad = (g != np.floor(x + 0.5)) & ~(tie & (np.abs(g - x) <= 0.5 + EPSILON_LSB + 1e-9))
    assert not bad.any(), f"{what}: {int(bad.sum())} texels not correctly rounded"


def _inputs(rng, folder) -> list[tuple[str, np.ndarray]]:
    out = []
    for i, (w, h) in enumerate(SIZES):
        a = rng.integers(0, 256, (h, w, 4), np.uint8)
        a[..., 3] = 255  # opaque: the weighted box is the plain box
        out.append((write(os.path.join(folder, f"in{i}.png"), a), a))
    return out


def _run(paths, out, container, deferred: bool) -> list:
    from gputex.batch import expand_inputs
    from gputex.outputs import texture_names

    opts = Options(mips=True, format="rgba8unorm", out=str(out), container=container)
    items = expand_inputs(paths)
    names, _ = texture_names(opts.out, paths)
    steps = stages("upload", opts, names)
    if not deferred:  # the synchronous stage: read back and written on the in-order thread
        steps = Stages(steps.decode, lambda session: upload_gpu_stage(session, opts, names))
    results: list = []
    run(items, steps, on_result=lambda r, s: results.append(r), jobs=2, workers=0)
    return results


def _digest(folder) -> dict:
    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(folder))}


@pytest.mark.parametrize("container", ["ktx2", "dds"])
def test_deferred_files_hold_the_texture(rng, gpu, tmp_path, container):
    made = _inputs(rng, tmp_path / "in")
    paths = [p for p, _ in made]
    results = _run(paths, tmp_path / "deferred", container, deferred=True)
    assert [r.ok for r in results] == [True] * len(made), [r.error for r in results]
    assert [r.source for r in results] == paths  # input order
    for r, (_, a) in zip(results, made):
        assert r.outputs and r.outputs[0].endswith("." + container)
        assert {"upload", "capture", "encode"} <= set(r.timings)
        tf = read_texture_file(r.outputs[0])
        h, w = a.shape[:2]
        assert (tf.width, tf.height, len(tf.levels)) == (w, h, max(w, h).bit_length())
        assert bytes(tf.levels[0]) == a.tobytes()  # level 0: exactly the pixels sent
        ref = filter_levels(a / 255, 4, srgb=True)  # a PNG without colour chunks is sRGB
        for lv, want in enumerate(ref, start=1):
            lw, lh = max(1, w >> lv), max(1, h >> lv)
            got = np.frombuffer(bytes(tf.levels[lv]), np.uint8).reshape(lh, lw, 4)
            assert_correctly_rounded(got, want, 255, f"{r.source} level {lv}")
    sync = _run(paths, tmp_path / "sync", container, deferred=False)
    assert all(r.ok for r in sync)
    assert _digest(tmp_path / "deferred") == _digest(tmp_path / "sync")


def _sized_inputs(rng, folder, sizes) -> list:
    """(path, pixels) of one random RGBA8 PNG per (width, height), named in0.png, in1.png, ..."""
    made = []
    for i, (w, h) in enumerate(sizes):
        a = rng.integers(0, 256, (h, w, 4), np.uint8)
        made.append((write(os.path.join(folder, f"in{i}.png"), a), a))
    return made


def _pool_takes(monkeypatch) -> list:
    """Each take from the texture pool recorded as ((width, height), whether a texture came back)."""
    import gputex.texture as texture

    takes: list = []
    real = texture._Pool.take

    def take(pool, key):
        kept = real(pool, key)
        takes.append((key[1:3], kept is not None))
        return kept

    monkeypatch.setattr(texture._Pool, "take", take)
    return takes


def test_reused_textures_hold_each_input(rng, gpu, tmp_path, monkeypatch):
    """The deferred path reuses one texture (and its single-pass chain's buffers and bind
    groups) for inputs of the same size (``texture.reusing``): sizes interleaved, alpha varying
    (the weighted chain), and every file is still its own input's, byte for byte the synchronous
    path's (which reuses nothing), level 0 the pixels sent, level 1 correctly rounded."""
    sizes = [(64, 64), (37, 53), (64, 64), (64, 64), (37, 53), (32, 16), (64, 64), (16, 32), (32, 16)]
    made = _sized_inputs(rng, tmp_path / "in", sizes)
    paths = [p for p, _ in made]
    made_textures = _pool_takes(monkeypatch)
    results = _run(paths, tmp_path / "deferred", "ktx2", deferred=True)
    assert [r.ok for r in results] == [True] * len(made), [r.error for r in results]
    reused = [size for size, hit in made_textures if hit]
    # the rehearsal's and self-checks' textures are made, never recycled; after its first input
    # each size's texture comes back: 64x64 three more times, 37x53 and 32x16 once more
    assert sorted(reused) == sorted([(64, 64)] * 3 + [(37, 53), (32, 16)])
    for r, (_, a) in zip(results, made):
        tf = read_texture_file(r.outputs[0])
        h, w = a.shape[:2]
        assert bytes(tf.levels[0]) == a.tobytes()
        want = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted", levels=2)[0]
        got = np.frombuffer(bytes(tf.levels[1]), np.uint8).reshape(max(1, h // 2), max(1, w // 2), 4)
        assert_correctly_rounded(got, want, 255, f"{r.source} level 1")
    sync = _run(paths, tmp_path / "sync", "ktx2", deferred=False)
    assert all(r.ok for r in sync)
    assert _digest(tmp_path / "deferred") == _digest(tmp_path / "sync")


def test_deferred_batch_goes_on_past_a_bad_file(rng, gpu, tmp_path):
    made = _inputs(rng, tmp_path / "in")
    bad = tmp_path / "in" / "bad.png"
    bad.write_bytes(open(made[0][0], "rb").read()[:60])  # signature and IHDR, no image data
    paths = [made[0][0], str(bad), made[1][0]]
    results = _run(paths, tmp_path / "out", "ktx2", deferred=True)
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].error.startswith(f"{bad}: ")
    assert sorted(os.listdir(tmp_path / "out")) == ["in0.ktx2", "in1.ktx2"]


def _capture(paths, out, workers: int) -> list:
    from gputex.batch import expand_inputs
    from gputex.outputs import OutputNames, prepare_folder

    opts = Options(mips=True, level="all")
    prepare_folder(str(out))
    steps = stages("capture", opts, OutputNames(str(out), paths))
    results: list = []
    run(expand_inputs(paths), steps, on_result=lambda r, s: results.append(r), jobs=2, workers=workers)
    return results


def test_capture_levels_read_back_in_the_pool(rng, gpu, tmp_path):
    """With worker processes, ``capture --mips --level all`` submits the level copies and
    leaves the read-back to the encode: the PNGs are those of the in-thread path, level 0 the
    pixels sent."""
    import gputex

    made = _inputs(rng, tmp_path / "in")
    paths = [p for p, _ in made]
    deferred = _capture(paths, tmp_path / "deferred", workers=2)
    assert all(r.ok for r in deferred), [r.error for r in deferred]
    for r, (_, a) in zip(deferred, made):
        assert len(r.outputs) == max(a.shape[:2]).bit_length()
        assert np.array_equal(gputex.decode(r.outputs[0]).pixels, a)
    inline = _capture(paths, tmp_path / "inline", workers=0)
    assert all(r.ok for r in inline)
    assert _digest(tmp_path / "deferred") == _digest(tmp_path / "inline")


def test_write_texture_in_an_encode_worker(rng, tmp_path):
    """``workers.write_texture`` in an encode worker process writes the bytes the writer writes
    here, and a writer error comes back as the same one-line error."""
    from gputex.errors import FormatError
    from gputex.formats import get_format
    from gputex.texfile import TextureFile, write_texture_file
    from gputex.workers import codec_workers, write_texture

    a = rng.integers(0, 256, (5, 7, 4), np.uint8)
    tf = TextureFile(format=get_format("rgba8unorm"), width=7, height=5, levels=[a.tobytes()],
                     color_space="linear", source="made")
    write_texture_file(tf, str(tmp_path / "here.ktx2"))
    with codec_workers(1):
        assert write_texture(tf, str(tmp_path / "there.ktx2")) >= 0
        with pytest.raises(FormatError) as here:
            write_texture_file(tf, str(tmp_path / "x.png"))
        with pytest.raises(FormatError) as there:
            write_texture(tf, str(tmp_path / "x.png"))
    assert (tmp_path / "there.ktx2").read_bytes() == (tmp_path / "here.ktx2").read_bytes()
    assert str(there.value) == str(here.value)
    assert not (tmp_path / "x.png").exists()


def test_capture_readback_given_back_when_a_name_fails(rng, gpu, tmp_path, monkeypatch):
    """``capture --mips -o one.png`` (worker processes, levels read back in the pool): the
    second level's name is refused after the copies were submitted; the input fails with that
    one-line error and its read-back buffer goes back to the ring unread (none left mapped)."""
    from gputex import gpu_batch
    from gputex.batch import expand_inputs
    from gputex.outputs import SingleOutput

    started: list = []
    real = gpu_batch.start_level_readback

    def spy(*a, **kw):
        rb = real(*a, **kw)
        started.append(rb)
        return rb

    monkeypatch.setattr(gpu_batch, "start_level_readback", spy)
    paths = [p for p, _ in _inputs(rng, tmp_path / "in")[:2]]  # two: worker processes run
    out = str(tmp_path / "one.png")
    steps = stages("capture", Options(mips=True, level="all"), SingleOutput(out, paths))
    results: list = []
    run(expand_inputs(paths), steps, on_result=lambda r, s: results.append(r), jobs=2, workers=2)
    assert [r.ok for r in results] == [False, False]
    for r in results:
        assert r.error.startswith(f"{out}: this capture has more than one output"), r.error
    assert len(started) == 2 and None not in started  # the deferred read-backs were started
    assert all(rb._buf is None for rb in started)  # cancelled: the buffer is back in the ring
    assert not os.path.exists(out)


def test_device_lost_in_a_deferred_readback_fails_that_input_only(rng, gpu, tmp_path, monkeypatch):
    """A device lost while the pool finishes an input's read-back (after its GPU step, so it
    cannot be retried there): that input fails with one line saying so and writes nothing; the
    next input (in a step, hence a read-back map, of its own: ``GPU_GROUP`` 1) is written."""
    from gputex import batch, gpu_batch

    real, started = gpu_batch._Shared.request, []

    class Lost:
        def sync_wait(self):
            raise RuntimeError("Device lost (made by the test)")

    def request(self):
        real(self)
        if not started:
            self.promise = Lost()  # the map of the first input's read-back fails as a lost device
        started.append(self.members)

    monkeypatch.setattr(batch, "GPU_GROUP", 1)
    monkeypatch.setattr(gpu_batch._Shared, "request", request)
    made = _inputs(rng, tmp_path / "in")[:2]
    results = _run([p for p, _ in made], tmp_path / "out", "ktx2", deferred=True)
    assert started == [1, 1]  # both read back in the pool, one map each
    assert [r.ok for r in results] == [False, True], [r.error for r in results]
    assert results[0].error == (f"{made[0][0]}: map readback buffer: GPU device lost (Device lost (made by "
                                "the test)); not retried (read back after its GPU step), nothing written")
    assert sorted(os.listdir(tmp_path / "out")) == ["in1.ktx2"]


def test_capture_reuses_textures_and_each_input_gets_its_own_levels(rng, gpu, tmp_path, monkeypatch):
    """``capture --mips --level all`` reuses a texture for the next input of its size too
    (deferred read-backs with worker processes, in-thread without): every level PNG is its own
    input's (level 0 the pixels sent, the rest correctly rounded), and the files are those of a
    run whose pool keeps nothing."""
    import gputex
    import gputex.texture as texture

    made = _sized_inputs(rng, tmp_path / "in", [(32, 32), (21, 13), (32, 32), (21, 13), (32, 32)])
    paths = [p for p, _ in made]
    takes = _pool_takes(monkeypatch)
    for workers in (2, 0):
        takes.clear()
        results = _capture(paths, tmp_path / f"reused{workers}", workers=workers)
        assert all(r.ok for r in results), [r.error for r in results]
        assert sum(hit for _, hit in takes) == 3  # the third to fifth inputs get the first two's textures back
        for r, (_, a) in zip(results, made):
            h, w = a.shape[:2]
            assert np.array_equal(gputex.decode(r.outputs[0]).pixels, a)
            ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted")
            for lv, want in enumerate(ref, start=1):
                assert_correctly_rounded(gputex.decode(r.outputs[lv]).pixels, want, 255, f"{r.source} level {lv}")
    monkeypatch.setattr(texture, "POOL_MAX_BYTES", 0)  # nothing kept: a texture per input
    takes.clear()
    fresh = _capture(paths, tmp_path / "fresh", workers=2)
    assert all(r.ok for r in fresh) and not any(hit for _, hit in takes)
    assert _digest(tmp_path / "reused2") == _digest(tmp_path / "fresh") == _digest(tmp_path / "reused0")


def test_texture_pool_bounds(gpu, monkeypatch):
    """A recycled texture is kept only within ``POOL_MAX_BYTES`` (none above a quarter of it,
    the oldest keys dropped for a new one), only for its own device, and never one made outside
    ``reusing``; :func:`drop_pool` (a run given a session, at its end) empties it."""
    import gputex.texture as texture
    from gputex.formats import get_format
    from gputex.texture import create_texture, drop_pool, reusing

    session = gpu
    drop_pool(session)
    fmt = get_format("rgba8unorm")
    # 32x32 RGBA8 with n levels: 4096 + 1024 + 256 + 64 + 16 + 4 bytes for all 6
    size = {n: sum((32 >> lv) ** 2 * 4 for lv in range(n)) for n in range(1, 7)}
    monkeypatch.setattr(texture, "POOL_MAX_BYTES", 4 * size[6] - 4)  # a quarter: just below a 6-level one
    with reusing(session):
        t = create_texture(session, fmt, 32, 32, levels=6)
    t.recycle()
    assert session.cache("texture-pool").peek("pool").free == {}
    monkeypatch.setattr(texture, "POOL_MAX_BYTES", 4 * size[6])  # 6, 5, 4 and 3 levels fit; then 2 does not
    with reusing(session):
        made = {n: create_texture(session, fmt, 32, 32, levels=n) for n in (6, 5, 4, 3, 2)}
    for n in (6, 5, 4, 3, 2):
        made[n].recycle()
    pool = session.cache("texture-pool").peek("pool")
    assert sum(size[n] for n in (6, 5, 4, 3, 2)) > 4 * size[6] >= sum(size[n] for n in (5, 4, 3, 2))
    assert list(pool.free) == [made[n].pool_key for n in (5, 4, 3, 2)]  # the oldest, 6 levels, dropped
    with reusing(session):
        again = create_texture(session, fmt, 32, 32, levels=5)
        fresh = create_texture(session, fmt, 32, 32, levels=6)
    assert again.texture is made[5].texture and fresh.texture is not made[6].texture
    again.extras["device"] = object()  # as after a device loss: not this pool's device
    again.recycle()
    assert made[5].pool_key not in pool.free
    outside = create_texture(session, fmt, 32, 32, levels=5)  # not inside reusing
    assert outside.pool_key is None
    outside.recycle()
    assert made[5].pool_key not in pool.free
    fresh.recycle()
    drop_pool(session)
    assert pool.free == {}


def test_a_failed_input_leaves_its_name_to_the_next(rng, gpu, tmp_path, monkeypatch):
    """The synchronous path opens the texture file before the upload (level 0 from the host):
    an input whose upload then fails leaves no file and no reserved name, so the next input of
    the same stem is written as ``x.ktx2``, not ``x-2.ktx2``."""
    import gputex.pipeline as pipeline

    a = rng.integers(0, 256, (24, 40, 4), np.uint8)
    first, second = write(str(tmp_path / "a" / "x.png"), a), write(str(tmp_path / "b" / "x.png"), a[::-1])
    real = pipeline.upload_image

    def upload_image(session, image, *args, **kw):
        if image.source == first:
            raise RuntimeError("the upload failed (injected by the test)")
        return real(session, image, *args, **kw)

    monkeypatch.setattr(pipeline, "upload_image", upload_image)
    results = _run([first, second], tmp_path / "out", "ktx2", deferred=False)
    assert [r.ok for r in results] == [False, True], [r.error for r in results]
    assert os.listdir(tmp_path / "out") == ["x.ktx2"]
    assert bytes(read_texture_file(str(tmp_path / "out" / "x.ktx2")).levels[0]) == a[::-1].tobytes()


def test_readback_ring_sizes_and_replaces_without_destroy(gpu, monkeypatch):
    """The deferred read-backs' ring (``gpu_batch._Ring``): a new buffer is at least as big as the
    biggest so far; with the ring full, a too-small free buffer is replaced by dropping it, never
    with ``destroy`` on the taking thread; at most ``DEFER_BUFFERS`` exist."""
    from gputex import gpu_batch

    monkeypatch.setattr(gpu_batch, "DEFER_BUFFERS", 2)
    ring = gpu_batch._Ring(gpu)
    destroyed: list = []
    create = gpu.device.create_buffer

    def tracked(**kw):
        buf = create(**kw)
        monkeypatch.setattr(buf, "destroy", lambda: destroyed.append(buf))
        return buf

    monkeypatch.setattr(gpu.device, "create_buffer", tracked)
    small = ring.take(3 << 20)
    big = ring.take(5 << 20)
    assert (small.size, big.size, ring.count) == (3 << 20, 5 << 20, 2)
    ring.give(small)
    ring.give(big)
    assert ring.take(2 << 20) is small  # a free one that fits
    assert ring.take(5 << 20) is big
    ring.give(small)
    again = ring.take(5 << 20)  # only the 3 MiB one free and the ring full: it is replaced
    assert again is not small and again.size == 5 << 20 and ring.count == 2
    assert ring.free == [] and not destroyed
    fresh = gpu_batch._Ring(gpu)
    fresh.take(5 << 20)
    assert fresh.take(1 << 20).size == 5 << 20  # new ones at least the biggest so far
