"""How a device's waits are polled (gputex.device.lean_polling) and the CLI's prestart
(gputex.device.prestart): what each changes, and that outputs stay the same."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from gputex.device import lean_polling


def _device():
    calls: list = []
    poller = SimpleNamespace(_poll_func=lambda block: calls.append(block))
    return SimpleNamespace(_poller=poller), calls


@pytest.mark.parametrize("flag, lean", [(None, False), ("wait", False), ("lean", True), ("LEAN", True)])
def test_which_devices_poll_without_blocking(monkeypatch, flag, lean):
    if flag is None:
        monkeypatch.delenv("GPUTEX_POLL", raising=False)
    else:
        monkeypatch.setenv("GPUTEX_POLL", flag)
    device, calls = _device()
    original = device._poller._poll_func
    assert lean_polling(device) is lean
    assert (device._poller._poll_func is not original) is lean
    device._poller._poll_func(True)  # what the poll thread calls while a promise is pending
    device._poller._poll_func(False)
    assert calls == ([False, False] if lean else [True, False])  # never a blocking poll once lean


def test_a_device_without_wgpu_pys_poll_thread_is_left_alone(monkeypatch):
    monkeypatch.setenv("GPUTEX_POLL", "lean")
    assert lean_polling(SimpleNamespace()) is False
    assert lean_polling(SimpleNamespace(_poller=SimpleNamespace())) is False


def _ktx2_digests(folder) -> dict:
    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(folder))}


@pytest.mark.gpu
def test_lean_polling_gives_the_same_files(gpu, monkeypatch, tmp_png, rng, tmp_path):
    """``upload -o`` (deferred read-backs, maps waited for by the pool's threads) on a device
    polled without blocking writes the same KTX2 bytes as one whose poll thread blocks, and
    level 0 holds the image's pixels."""
    from gputex.containers import read_texture_file
    from gputex.device import Session
    from gputex.pipeline import MipOptions, Options
    from gputex.run import upload_files

    images = [rng.integers(0, 256, shape, np.uint8) for shape in ((64, 64, 4), (37, 45, 4), (32, 128, 4))]
    paths = [tmp_png(a, f"i{k}.png") for k, a in enumerate(images)]
    opts = Options(mips=True, format="rgba8unorm-srgb", container="ktx2", mip_options=MipOptions(filter="box"))
    digests = {}
    for mode in ("wait", "lean"):
        monkeypatch.setenv("GPUTEX_POLL", mode)
        session = Session()
        assert lean_polling(session.device) is (mode == "lean")
        out = tmp_path / mode
        out.mkdir()
        results = upload_files(paths, opts, session=session, out=str(out), jobs=3)
        assert all(r.ok for r in results), [r.error for r in results]
        digests[mode] = _ktx2_digests(out)
        for k, a in enumerate(images):
            tf = read_texture_file(str(out / f"i{k}.ktx2"))
            level0 = np.frombuffer(bytes(tf.levels[0]), np.uint8).reshape(a.shape)
            np.testing.assert_array_equal(level0, a)
    assert len(digests["lean"]) == 3 and digests["lean"] == digests["wait"]


@pytest.mark.gpu
def test_the_first_session_takes_the_prestarted_adapter_list(gpu, monkeypatch):
    import gputex.device as device

    monkeypatch.setattr(device, "_EARLY", None)
    device.prestart()
    early = device._EARLY
    assert early is not None
    device.prestart()  # once
    assert device._EARLY is early
    listed = early.result(timeout=60)
    assert listed, "prestart listed no adapter"
    calls: list = []
    real = device.list_adapters
    monkeypatch.setattr(device, "list_adapters", lambda backend=None: calls.append(backend) or real(backend))
    session = device.Session()
    assert calls == [] and device._EARLY is None  # taken, not listed again
    assert session.adapter in listed
    device.Session()
    assert calls == [None]  # the next one lists them itself


def test_upload_help_imports_no_wgpu():
    """``gputex upload --help`` starts no prestart (no wgpu import for a help text)."""
    code = ("import atexit, sys\n"
            "sys.argv = ['gputex', 'upload', '--help']\n"
            "atexit.register(lambda: print('WGPU', 'wgpu' in sys.modules))\n"
            "from gputex.cli import console\n"
            "console()\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert p.returncode == 0, p.stderr
    assert "WGPU False" in p.stdout
