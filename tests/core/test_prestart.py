"""The CLI's prestart (gputex.device.prestart): what it changes, and that outputs stay the same."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


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


def test_prestart_is_left_to_the_run_where_the_command_line_is_an_upload_batch(monkeypatch):
    """Not for an ``upload`` command line whose workers' fork server started (``early.started``:
    its device is made once the first decodes are asked for); ``capture`` keeps it;
    ``GPUTEX_PRESTART`` 1 or 0 decides otherwise, and any other value is a usage error."""
    import gputex.cli as cli
    import gputex.early as early
    from gputex.errors import UsageError

    monkeypatch.delenv("GPUTEX_PRESTART", raising=False)
    monkeypatch.setattr(early, "_CONTEXT", None)
    assert cli._prestart("upload") and cli._prestart("capture") and not early.started()
    monkeypatch.setattr(early, "_CONTEXT", object())
    assert not cli._prestart("upload") and cli._prestart("capture") and early.started()
    monkeypatch.setenv("GPUTEX_PRESTART", "1")
    assert cli._prestart("upload")
    monkeypatch.setattr(early, "_CONTEXT", None)
    monkeypatch.setenv("GPUTEX_PRESTART", "0")
    assert not cli._prestart("upload") and not cli._prestart("capture")
    monkeypatch.setenv("GPUTEX_PRESTART", "yes")
    with pytest.raises(UsageError, match="^GPUTEX_PRESTART must be 0 or 1, got 'yes'$"):
        cli._prestart("upload")


def test_a_bad_prestart_flag_is_one_line_and_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "gputex", "upload", str(tmp_path / "none.png")], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, GPUTEX_PRESTART="yes",
                                                        PYTHONPATH=os.pathsep.join(sys.path)))
    assert (p.returncode, p.stdout, p.stderr) == (2, "", "gputex: GPUTEX_PRESTART must be 0 or 1, got 'yes'\n")


@pytest.mark.gpu
def test_in_process_runs_and_converters_leave_no_device_alive(gpu, tmp_path, monkeypatch):
    """Every session made on a thread of its own (device.session_soon: the CLI's upload and capture,
    gputex.Converter) is freed with its device once its run or Converter is done: none stays reachable
    from the module's list of sessions being made, and a closed Converter lets its session go: the next
    collection frees them (sessions and devices are held in reference cycles, so it takes a collection).
    (Before, every one stayed alive for the life of the process, a device each.)"""
    import gc
    import weakref

    import numpy as np
    from PIL import Image
    from typer.testing import CliRunner

    import gputex
    import gputex.device as device
    from gputex.cli import app

    device.settle()  # (no session of an earlier test still on its way: every session made below is ours)
    made: list = []
    real = device.Session.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        made.append(weakref.ref(self.device))

    monkeypatch.setattr(device.Session, "__init__", init)
    earlier = set(device._PENDING)  # (another test's session may still be on its way)
    src = tmp_path / "a.png"
    Image.fromarray(np.arange(8 * 8 * 3, dtype=np.uint8).reshape(8, 8, 3)).save(src)
    for i in range(3):
        r = CliRunner().invoke(app, ["capture", str(src), "-o", str(tmp_path / f"out{i}")])
        assert r.exit_code == 0, r.output
        assert np.array_equal(np.asarray(Image.open(tmp_path / f"out{i}" / "a.png"))[..., :3],
                              np.asarray(Image.open(src)))
    with gputex.Converter() as conv:
        results = list(conv.convert([str(src)], "capture", str(tmp_path / "conv")))
    assert [r.ok for r in results] == [True]
    assert np.array_equal(np.asarray(Image.open(tmp_path / "conv" / "a.png"))[..., :3], np.asarray(Image.open(src)))
    gc.collect()
    assert len(made) == 4
    assert [ref() for ref in made] == [None] * 4
    assert not device._PENDING - earlier
