"""gputex.distributed on a local Dask cluster of 2 workers: the local run's bytes, and a killed
worker's files retried elsewhere."""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time

import imagecodecs
import numpy as np
import pytest

pytest.importorskip("distributed", reason="gputex[dask] not installed")


def _tree(folder) -> dict[str, str]:
    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(folder))}


def _corpus(folder, n: int) -> list[str]:
    rng = np.random.default_rng(1700)
    os.makedirs(folder)
    paths = []
    for i in range(n):
        a = rng.integers(0, 256, (40 + i, 56 - i, 4), np.uint8)
        # two inputs share the stem "same": their outputs get -2 suffixes as in a local run
        sub = os.path.join(folder, f"d{i}") if i in (3, 7) else folder
        os.makedirs(sub, exist_ok=True)
        p = os.path.join(sub, "same.png" if i in (3, 7) else f"img{i:02d}.png")
        with open(p, "wb") as f:
            f.write(imagecodecs.png_encode(a))
        paths.append(p)
    return paths


def test_distributed_equals_local_and_retries_a_killed_worker(gpu, tmp_path):
    from distributed import Client, LocalCluster

    import gputex
    import gputex.distributed as gd

    paths = _corpus(str(tmp_path / "src"), 16) + [str(tmp_path / "missing.png")]
    with gputex.Converter(threads=2) as conv:
        local = list(conv.convert(paths, "capture", out=str(tmp_path / "local"), mips=True, level="all"))
    assert [r.ok for r in local] == [True] * 16 + [False]

    t0 = time.monotonic()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        pids = client.run(os.getpid)  # address -> pid
        client.run(_warm_converter)  # both workers make their device first, as in a long run
        client.run(_fail_first_convert)  # and each one's first task raises: Dask retries it
        submitted: dict = {}  # task key -> its files
        submit = client.submit

        def recording_submit(fn, chunk, *a, **k):
            fut = submit(fn, chunk, *a, **k)
            submitted[fut.key] = list(chunk)
            return fut

        client.submit = recording_submit
        killed: dict = {}

        def kill_one_busy_worker() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                busy = {a: keys for a, keys in client.processing().items() if keys and a in pids}
                if busy:
                    addr, keys = next(iter(busy.items()))
                    os.kill(pids[addr], signal.SIGKILL)
                    killed.update(pid=pids[addr], keys=set(keys))
                    return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_one_busy_worker, daemon=True)
        killer.start()
        results = gd.convert(paths, "capture", out=str(tmp_path / "dist"), client=client, chunk=1, threads=1,
                             mips=True, level="all")
        killer.join()
        injected = client.run(_injected)  # the workers alive now: the survivor failed once
    elapsed = time.monotonic() - t0

    assert killed, "no worker was busy to kill"
    assert [r.source for r in results] == paths
    assert [r.ok for r in results] == [True] * 16 + [False]
    assert results[-1].error == f"{tmp_path / 'missing.png'}: no such file"
    assert _tree(tmp_path / "dist") == _tree(tmp_path / "local")
    assert [r.outputs for r in results[:16]] == [
        [o.replace(str(tmp_path / "local"), str(tmp_path / "dist")) for o in r.outputs] for r in local[:16]]
    # the files the killed worker held when it died were made again, by another process
    held = {p for k in killed["keys"] for p in submitted.get(k, [])}
    assert held
    assert all(not r.worker.endswith(f":{killed['pid']}") for r in results if r.source in held)
    assert elapsed < 120
    assert 1 in injected.values(), injected


RUN = {"adapter": None, "backend": None, "threads": 1, "memory": None}


def _fail_first_convert() -> None:
    import gputex.distributed as gd
    from gputex.errors import GPUError

    conv = gd._worker_converter(RUN)
    real = conv.convert
    gd._injected = {"n": 0}

    def flaky(*a, **k):
        if gd._injected["n"] == 0:
            gd._injected["n"] = 1
            raise GPUError("injected failure")
        return real(*a, **k)

    conv.convert = flaky


def _injected():
    import gputex.distributed as gd

    return getattr(gd, "_injected", {"n": None})["n"]


def _warm_converter() -> int:
    import gputex.distributed as gd

    _ = gd._worker_converter(RUN).session  # makes the worker's device
    return os.getpid()


@pytest.mark.parametrize("kw, message", [
    ({"command": "capture", "out": "-"}, "out: a distributed run needs an output folder the workers share"),
    ({"command": "upload", "out": "x.ktx2"}, "out: x.ktx2 is one file; a distributed run writes one per input"),
    ({"command": "upload", "out": "o", "cube": True}, "cube: makes one texture of every input"),
    ({"command": "capture", "out": "o", "recursive": True}, "recursive: folders are not walked"),
    ({"command": "capture", "out": "o", "levle": 1}, "levle: unknown option for capture"),
])
def test_distributed_refuses_before_starting_a_cluster(kw, message):
    import gputex.distributed as gd
    from gputex.settings import SettingsError

    with pytest.raises(SettingsError) as e:
        gd.convert(["a.png"], **kw)
    assert str(e.value).startswith(message)
