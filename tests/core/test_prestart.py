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


def test_prestart_is_left_to_the_run_where_the_command_line_is_a_batch(monkeypatch):
    """Not for a command line whose workers' fork server started (``early.started``: its device
    is made once the first decodes are asked for); ``GPUTEX_PRESTART`` 1 or 0 decides otherwise."""
    import gputex.cli as cli
    import gputex.early as early

    monkeypatch.delenv("GPUTEX_PRESTART", raising=False)
    monkeypatch.setattr(early, "_CONTEXT", None)
    assert cli._prestart() and not early.started()
    monkeypatch.setattr(early, "_CONTEXT", object())
    assert not cli._prestart() and early.started()
    monkeypatch.setenv("GPUTEX_PRESTART", "1")
    assert cli._prestart()
    monkeypatch.setattr(early, "_CONTEXT", None)
    monkeypatch.setenv("GPUTEX_PRESTART", "0")
    assert not cli._prestart()
