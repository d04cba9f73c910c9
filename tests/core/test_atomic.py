"""write_atomic: whole or nothing, on the O_TMPFILE path and on the named-temporary fallback."""

from __future__ import annotations

import os

import pytest

from gputex.atomic import TMP_PREFIX, write_atomic
from gputex.errors import OutputError

from factory import recorded_fsyncs

MODES = ["otmpfile", "portable"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    if request.param == "portable":
        monkeypatch.setenv("GPUTEX_PORTABLE", "otmpfile")
    else:
        monkeypatch.delenv("GPUTEX_PORTABLE", raising=False)
    return request.param


def _left(folder) -> list[str]:
    return sorted(os.listdir(folder))


@pytest.mark.parametrize("kind", ["bytes", "list", "callable", "memoryview"])
def test_data_forms_write_their_bytes(tmp_path, mode, kind):
    parts = [b"abc", bytes(range(256)) * 3, b"", b"z"]
    data = {"bytes": b"".join(parts), "list": parts, "callable": lambda: iter(parts),
            "memoryview": memoryview(b"".join(parts))}[kind]
    path = tmp_path / "out.bin"
    write_atomic(str(path), data)
    assert path.read_bytes() == b"".join(parts)
    assert _left(tmp_path) == ["out.bin"]


def test_replaces_an_existing_file(tmp_path, mode):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old contents, longer than the new")
    write_atomic(str(path), b"new")
    assert path.read_bytes() == b"new"
    assert _left(tmp_path) == ["out.bin"]


def test_follows_the_umask(tmp_path, mode):
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "out.bin"), b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "out.bin").stat().st_mode & 0o777 == 0o640


def test_an_encoder_error_leaves_nothing(tmp_path, mode):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")

    def parts():
        yield b"first part"
        raise ValueError("encoder failed")

    with pytest.raises(ValueError, match="encoder failed"):
        write_atomic(str(path), parts)
    assert path.read_bytes() == b"old"  # the old file stays whole
    assert _left(tmp_path) == ["out.bin"]  # and no temporary is left


def test_an_os_error_while_encoding_is_one_output_error(tmp_path, mode):
    path = tmp_path / "out.bin"

    def parts():
        yield b"x"
        raise OSError(5, "Input/output error")

    with pytest.raises(OutputError) as e:
        write_atomic(str(path), parts)
    assert str(e.value) == f"{path}: write failed (Input/output error)"
    assert _left(tmp_path) == []


def test_a_missing_folder_is_named(tmp_path, mode):
    path = tmp_path / "nope" / "out.bin"
    with pytest.raises(OutputError) as e:
        write_atomic(str(path), b"x")
    assert str(e.value) == f"{path}: output folder {tmp_path / 'nope'} does not exist"


def test_a_folder_as_target_leaves_nothing(tmp_path, mode):
    (tmp_path / "out.bin").mkdir()
    with pytest.raises(OutputError) as e:
        write_atomic(str(tmp_path / "out.bin"), b"x")
    assert str(e.value) == f"{tmp_path / 'out.bin'}: is a folder; cannot write the output there"
    assert not any(n.startswith(TMP_PREFIX) for n in _left(tmp_path))


def test_a_full_disk_is_one_output_error_naming_the_file(tmp_path, mode, monkeypatch):
    import errno

    def full(fd, data, *offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    monkeypatch.setattr(os, "pwrite", full)
    path = tmp_path / "out.bin"
    with pytest.raises(OutputError) as e:
        write_atomic(str(path), [b"abc", b"def"])
    assert str(e.value) == f"{path}: write failed (No space left on device)"
    assert _left(tmp_path) == []

def test_no_fsync_by_default(tmp_path, mode, monkeypatch):
    from gputex.atomic import fsync_enabled

    monkeypatch.delenv("GPUTEX_FSYNC", raising=False)
    calls = recorded_fsyncs(monkeypatch)
    write_atomic(str(tmp_path / "out.bin"), b"abc")
    assert (tmp_path / "out.bin").read_bytes() == b"abc"
    assert calls == [] and not fsync_enabled()


def test_set_fsync_flushes_the_file_then_its_folder(tmp_path, mode, monkeypatch):
    from gputex.atomic import fsync_enabled, set_fsync

    monkeypatch.delenv("GPUTEX_FSYNC", raising=False)
    calls = recorded_fsyncs(monkeypatch)
    set_fsync(True)
    try:
        assert os.environ["GPUTEX_FSYNC"] == "1" and fsync_enabled()  # worker processes inherit it
        write_atomic(str(tmp_path / "out.bin"), b"abc")
    finally:
        set_fsync(False)
    assert "GPUTEX_FSYNC" not in os.environ and not fsync_enabled()
    assert calls == ["file", "folder"]
    assert (tmp_path / "out.bin").read_bytes() == b"abc"
    assert _left(tmp_path) == ["out.bin"]


def test_fsync_env_zero_is_off(monkeypatch):
    from gputex.atomic import fsync_enabled

    monkeypatch.setenv("GPUTEX_FSYNC", "0")
    assert not fsync_enabled()
    monkeypatch.setenv("GPUTEX_FSYNC", "1")
    assert fsync_enabled()
