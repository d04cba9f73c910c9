"""``upload -o``'s in-order step over several inputs at once (``upload_gpu_stage(...).many``,
``gpu_batch.ReadbackGroup``): their read-backs share ring buffers, one map each, and each input's
texture file must hold exactly what the one-input step gives it (itself held to the float64 box
and the sent pixels by ``test_upload_deferred.py``); a failing input fails alone; the buffers go
back to the ring; and the schedule (``batch.run_overlapped`` with a ``many`` step) keeps its
order and its stop."""

from __future__ import annotations

import hashlib
import os
import threading

import numpy as np
import pytest

import gputex
from gputex import gpu_batch
from gputex.batch import Item
from gputex.errors import GputexError
from gputex.outputs import OutputNames
from gputex.pipeline import Decoded, Options, Result
from gputex.upload_stage import upload_gpu_stage

from factory import write


def _images(rng) -> list[np.ndarray]:
    """Different sizes and formats: RGBA8 (sRGB, alpha holes: the weighted box), RGBA16, RG8,
    RGB8 (expanded), one texel."""
    a = rng.integers(0, 256, (64, 64, 4), np.uint8)
    a[rng.random((64, 64)) < 0.2, 3] = 0
    return [a, rng.integers(0, 65536, (21, 34, 4), np.uint16), rng.integers(0, 256, (37, 53, 2), np.uint8),
            rng.integers(0, 256, (5, 3, 3), np.uint8), rng.integers(0, 256, (1, 1, 4), np.uint8),
            rng.integers(0, 256, (48, 96, 4), np.uint8)]


def _entries(arrays, tag: str = "") -> list:
    return [(Item(f"in{tag}{i}.png"), Decoded(gputex.from_array(a)), Result(source=f"in{tag}{i}.png"))
            for i, a in enumerate(arrays)]


def _levels(pending) -> list[bytes]:
    pending.readback.finish()
    return [bytes(lv) for lv in pending.stored.levels]


def _one_by_one(gpu, arrays, out) -> list[list[bytes]]:
    """The one-input step (a read-back buffer and a map each), read back at once."""
    opts = Options(mips=True, out=str(out), container="ktx2")
    stage = upload_gpu_stage(gpu, opts, OutputNames(str(out), []), defer=True)
    got = []
    for entry in _entries(arrays, "single"):
        pending = stage(*entry)
        assert pending is not None, entry[2].error
        assert isinstance(pending.readback, gpu_batch.Readback)
        got.append(_levels(pending))
    return got


@pytest.fixture
def requests(monkeypatch) -> list[int]:
    """The members of each shared buffer whose map was asked for, in order."""
    real, seen = gpu_batch._Shared.request, []

    def request(self):
        seen.append(self.members)
        real(self)

    monkeypatch.setattr(gpu_batch._Shared, "request", request)
    return seen


def _ring(gpu):
    return gpu.cache("gpu-batch").get("readback-ring", lambda: gpu_batch._Ring(gpu))


def test_a_group_gives_each_input_the_one_input_steps_bytes(gpu, rng, tmp_path, requests):
    arrays = _images(rng)
    want = _one_by_one(gpu, arrays, tmp_path / "one")
    opts = Options(mips=True, out=str(tmp_path / "group"), container="ktx2")
    stage = upload_gpu_stage(gpu, opts, OutputNames(opts.out, []), defer=True)
    entries = _entries(arrays)
    pendings = stage.many(entries)
    assert requests == [len(arrays)]  # one map for the whole group
    # finished out of order, on other threads, as the pool's writers do
    got: dict = {}
    threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, _levels(pendings[k])))
               for k in reversed(range(len(arrays)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, (a, (_, _, result)) in enumerate(zip(arrays, entries)):
        assert result.ok, result.error
        assert got[k] == want[k], f"input {k} ({a.shape}, {result.format}): levels differ from the one-input step"
        assert len(got[k]) == int(np.log2(max(a.shape[:2]))) + 1
    # level 0 is the sent texels themselves (8-bit RGBA and RG: stored as they are)
    assert got[0][0] == arrays[0].tobytes() and got[2][0] == arrays[2].tobytes()
    assert got[1][0] == arrays[1].astype("<u2").tobytes()
    ring = _ring(gpu)
    assert ring.count == len(ring.free)  # every buffer back, none lost
    assert all(b.map_state == "unmapped" for b in ring.free)


def test_a_failing_input_fails_alone(gpu, rng, tmp_path, requests, monkeypatch):
    """One input's upload fails (made by the test) and another's output name cannot be given
    after its copies were recorded: both fail with their own one-line errors and nothing
    pending; the others get their one-input bytes, and the shared buffer goes back mapped by
    nobody."""
    from gputex import pipeline, upload_stage

    arrays = _images(rng)[:5]
    want = _one_by_one(gpu, arrays, tmp_path / "one")
    real_upload, real_name = pipeline.upload_image, upload_stage.OutputName.__call__

    def upload_image(session, image, opts, result, *a, **kw):
        if result.source == "in1.png":
            raise GputexError("in1.png: upload failed (made by the test)")
        return real_upload(session, image, opts, result, *a, **kw)

    def name(self):
        if self.item.path == "in3.png":
            raise GputexError("in3.png: no name (made by the test)")
        return real_name(self)

    monkeypatch.setattr(pipeline, "upload_image", upload_image)
    monkeypatch.setattr(upload_stage.OutputName, "__call__", name)
    opts = Options(mips=True, out=str(tmp_path / "group"), container="ktx2")
    stage = upload_gpu_stage(gpu, opts, OutputNames(opts.out, []), defer=True)
    entries = _entries(arrays)
    pendings = stage.many(entries)
    results = [r for _, _, r in entries]
    assert [r.ok for r in results] == [True, False, True, False, True]
    assert results[1].error == "in1.png: upload failed (made by the test)"
    assert results[3].error == "in3.png: no name (made by the test)"
    assert pendings[1] is None and pendings[3] is None
    assert requests == [4]  # in3's copies were recorded too, then cancelled
    for k in (0, 2, 4):
        assert _levels(pendings[k]) == want[k]
    ring = _ring(gpu)
    assert ring.count == len(ring.free) and all(b.map_state == "unmapped" for b in ring.free)


def test_group_boundaries(gpu, rng, tmp_path, requests, monkeypatch):
    """A buffer holds what fits (``GROUP_MAX_BYTES`` made small here: two 64x64 chains), then
    the next one opens; every input still gets its own bytes, and the ring holds no more than
    its bound."""
    arrays = [rng.integers(0, 256, (64, 64, 4), np.uint8) for _ in range(5)]
    want = _one_by_one(gpu, arrays, tmp_path / "one")
    chain = sum(max(256, (64 >> lv) * 4) * max(1, 64 >> lv) for lv in range(7))  # padded rows
    monkeypatch.setattr(gpu_batch, "GROUP_MAX_BYTES", 2 * chain + 2 * 256)
    opts = Options(mips=True, out=str(tmp_path / "group"), container="ktx2")
    stage = upload_gpu_stage(gpu, opts, OutputNames(opts.out, []), defer=True)
    pendings = stage.many(_entries(arrays))
    assert requests == [2, 2, 1]
    assert [_levels(p) for p in pendings] == want
    ring = _ring(gpu)
    assert ring.count <= gpu_batch.DEFER_BUFFERS and ring.held <= gpu_batch.RING_BYTES
    assert ring.count == len(ring.free)


def test_a_step_needing_more_buffers_than_the_ring_holds_reads_the_rest_back_alone(gpu, rng, tmp_path, monkeypatch):
    """Each texture a buffer of its own (``GROUP_MAX_BYTES`` one 64x64 chain) and more inputs in
    one step than the ring's :data:`~gputex.gpu_batch.DEFER_BUFFERS`: the step's members give
    their buffers back only after it, so it must not wait for one (it did, forever: 3000² PNGs,
    ``--jobs 8``). Once the ring has none free the input is read back alone (its file written in
    the step), and every input still gets the one-input step's bytes."""
    from gputex.containers import read_texture_file

    n = gpu_batch.DEFER_BUFFERS + 3
    arrays = [rng.integers(0, 256, (64, 64, 4), np.uint8) for _ in range(n)]
    want = _one_by_one(gpu, arrays, tmp_path / "one")
    chain = sum(max(256, (64 >> lv) * 4) * max(1, 64 >> lv) for lv in range(7))  # padded rows
    monkeypatch.setattr(gpu_batch, "GROUP_MAX_BYTES", chain + 256)
    (tmp_path / "group").mkdir()  # (where the inputs read back alone write their files)
    opts = Options(mips=True, out=str(tmp_path / "group"), container="ktx2")
    stage = upload_gpu_stage(gpu, opts, OutputNames(opts.out, []), defer=True)
    entries = _entries(arrays)
    done: dict = {}
    t = threading.Thread(target=lambda: done.setdefault("pendings", stage.many(entries)), daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the step waited for read-back buffers only its own members give back"
    pendings = done["pendings"]
    alone = [k for k, p in enumerate(pendings) if p is None]
    assert alone and len(alone) < n  # some grouped, the rest read back in the step
    for k, (p, (_, _, result)) in enumerate(zip(pendings, entries)):
        assert result.ok, result.error
        got = _levels(p) if p is not None else [bytes(lv) for lv in read_texture_file(result.outputs[0]).levels]
        assert got == want[k], f"input {k}"
    ring = _ring(gpu)
    assert ring.count == len(ring.free) and ring.count <= gpu_batch.DEFER_BUFFERS


def test_a_lost_map_fails_every_member_of_its_buffer_with_one_line(gpu, rng, tmp_path, monkeypatch):
    """The shared buffer's map fails as a lost device: each of its members (finished on threads
    of their own, as the pool's writers do) raises the one-line error naming its own input, the
    buffer is dropped, not given back for reuse, and the next step's group reads back again."""
    from gputex.errors import DeviceLostError

    class Lost:
        def sync_wait(self):
            raise RuntimeError("Device lost (made by the test)")

    real, lost = gpu_batch._Shared.request, []

    def request(self):
        real(self)
        if not lost:
            self.promise = Lost()
        lost.append(self.members)

    monkeypatch.setattr(gpu_batch._Shared, "request", request)
    arrays = [rng.integers(0, 256, (32, 32, 4), np.uint8) for _ in range(3)]
    ring = _ring(gpu)
    opts = Options(mips=True, out=str(tmp_path / "group"), container="ktx2")
    stage = upload_gpu_stage(gpu, opts, OutputNames(opts.out, []), defer=True)
    entries = [(Item(f"ina{k}.png"), Decoded(gputex.from_array(a, source=f"ina{k}.png")), Result(source=f"ina{k}.png"))
               for k, a in enumerate(arrays)]
    pendings = stage.many(entries)
    assert lost == [3]
    errors: dict = {}

    def finish(k):
        try:
            _levels(pendings[k])
        except DeviceLostError as e:
            errors[k] = str(e)

    threads = [threading.Thread(target=finish, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == {k: (f"ina{k}.png: map readback buffer: GPU device lost (Device lost (made by the test)); "
                          "not retried (read back after its GPU step), nothing written") for k in range(3)}
    assert ring.count == len(ring.free) and all(b.map_state == "unmapped" for b in ring.free)
    again = stage.many(_entries(arrays, "b"))  # a map of its own, which works
    assert lost == [3, 3]
    assert [_levels(p)[0] for p in again] == [a.tobytes() for a in arrays]


def test_members_cancelled_before_and_after_the_map(gpu, rng):
    """Every member cancelled, some before the map is asked for: the buffer is unmapped and
    back in the ring; a member finished after another was cancelled still gets its rows."""
    group = gpu_batch.ReadbackGroup(gpu, expect=3)
    texs, members = [], []
    for k in range(3):
        a = np.full((8, 8, 4), 40 * k + 1, np.uint8)
        tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm")
        texs.append((tex, a))
        members.append(group.add(tex))
    members[0].cancel()
    group.close()
    members[1].cancel()
    assert members[2].finish().levels[0] == texs[2][1].tobytes()
    ring = _ring(gpu)
    assert ring.count == len(ring.free) and all(b.map_state == "unmapped" for b in ring.free)
    group = gpu_batch.ReadbackGroup(gpu)
    member = group.add(texs[0][0])
    member.cancel()
    group.close()  # nobody left: the map is waited for and the buffer given back here
    assert ring.count == len(ring.free) and all(b.map_state == "unmapped" for b in ring.free)
    with pytest.raises(RuntimeError, match="already finished"):
        members[2].finish()
    for tex, _ in texs:
        tex.destroy()


@pytest.mark.parametrize("any_order", [False, True])
def test_schedule_takes_the_decoded_inputs_together(any_order):
    """``run_overlapped`` with a ``many`` step: every input with data goes through exactly one
    call, at most ``GPU_GROUP`` a call, each call in input order; results come back in input
    order; an input with no data skips the step; once ``stop()`` is true no call starts."""
    import time

    from gputex.batch import GPU_GROUP, run_overlapped

    calls: list = []
    gate = threading.Event()

    def decode(item):
        if item.path != "0":
            gate.wait(5)  # the first step finds the others decoded
        return Result(source=item.path), (None if item.path == "3" else item.path)

    def gpu(item, data, result):
        raise AssertionError("the many step is used")

    def many(entries, between):
        calls.append([item.path for item, _, _ in entries])
        gate.set()
        out = []
        for _, data, _ in entries:
            time.sleep(0.01)
            out.append(data + "!")
            between()  # the schedule feeds its decodes between the inputs of one step
        return out

    gpu.many = many  # type: ignore[attr-defined]
    emitted: list = []
    written: dict = {}
    items = [Item(str(i)) for i in range(20)]
    run_overlapped(items, 12, decode, gpu, lambda item, payload, result: written.__setitem__(item.path, payload),
                   lambda r: emitted.append(r.source), any_order=any_order, workers=0)
    assert emitted == [str(i) for i in range(20)]
    flat = [p for call in calls for p in call]
    assert sorted(flat, key=int) == [str(i) for i in range(20) if i != 3]
    assert len(flat) == len(set(flat)) and all(len(c) <= GPU_GROUP for c in calls)
    assert all(c == sorted(c, key=int) for c in calls)
    assert max(len(c) for c in calls) > 1
    assert written == {p: p + "!" for p in flat}

    stopped: list = []

    def counted(entries, between):
        stopped.append(len(entries))
        return [None] * len(entries)

    gpu.many = counted  # type: ignore[attr-defined]
    run_overlapped(items, 4, lambda item: (Result(source=item.path), item.path), gpu, None,
                   lambda r: None, stop=lambda: bool(stopped), any_order=any_order, workers=0)
    assert len(stopped) == 1


def test_group_batch_files_match_one_by_one(gpu, rng, tmp_path, monkeypatch):
    """The whole ``upload -o DIR`` batch (mixed sizes, weighted alpha): the texture files of the
    grouped steps are byte for byte those of one input a step (``GPU_GROUP`` 1)."""
    from gputex import batch
    from gputex.batch import expand_inputs
    from gputex.outputs import texture_names
    from gputex.run import run, stages

    paths = []
    for i, (w, h) in enumerate([(64, 64), (37, 53), (64, 64), (128, 96), (1, 1), (64, 64), (37, 53)]):
        a = rng.integers(0, 256, (h, w, 4), np.uint8)
        a[rng.random((h, w)) < 0.3, 3] = 0
        paths.append(write(os.path.join(tmp_path, f"in{i}.png"), a))

    def files(out, group: int) -> dict:
        monkeypatch.setattr(batch, "GPU_GROUP", group)
        opts = Options(mips=True, out=str(out), container="ktx2")
        names, _ = texture_names(opts.out, paths)
        results: list = []
        run(expand_inputs(paths), stages("upload", opts, names), on_result=lambda r, s: results.append(r),
            jobs=3, workers=0, session=gpu)
        assert all(r.ok for r in results), [r.error for r in results]
        return {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in sorted(os.listdir(out))}

    one = files(tmp_path / "one", 1)
    assert len(one) == len(paths)
    assert files(tmp_path / "grouped", 8) == one


def test_decodes_are_fed_between_the_inputs_of_one_step():
    """A split batch's decoded inputs holding GPU slots leave the window of decodes in flight:
    while one ``many`` step runs over several inputs, the decodes after them start (the H200
    host's first step of 8, which fed none, left the decode workers idle for 0.4 s)."""
    import time

    from gputex.batch import run_overlapped

    started: list = []

    class Slotted:
        slot = True

        def __init__(self, path):
            self.path = path

    def decode(item):
        started.append(item.path)
        return Result(source=item.path), Slotted(item.path)

    seen_during: list = []

    def gpu(item, data, result):
        raise AssertionError("the many step is used")

    def many(entries, between):
        for _ in entries:
            time.sleep(0.1)  # the decodes fed before the step finish meanwhile
            between()
            time.sleep(0.1)
        seen_during.append(list(started))
        return [None] * len(entries)

    gpu.many = many  # type: ignore[attr-defined]
    items = [Item(str(i)) for i in range(12)]
    run_overlapped(items, 1, decode, gpu, None, lambda r: None, any_order=True, workers=0)
    first = seen_during[0]
    # the window is jobs + 1 = 2: before the first step 0..3 at most were asked for
    assert len(first) > 4, first
    assert sorted(started, key=int) == [str(i) for i in range(12)]
