"""Start-up: where Mesa's on-disk shader cache goes (device.shader_cache_dir)."""

from __future__ import annotations

import pytest


def test_shader_cache_dir_follows_mesa_rules(tmp_path):
    from gputex.device import shader_cache_dir

    home = tmp_path / "home"
    home.mkdir()
    assert shader_cache_dir({"HOME": str(home)}) == str(home / ".cache" / "mesa_shader_cache")
    assert shader_cache_dir({"HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "x")}) == \
        str(tmp_path / "x" / "mesa_shader_cache")
    assert shader_cache_dir({"HOME": str(home), "MESA_SHADER_CACHE_DIR": "/some/where"}) == "/some/where"
    assert shader_cache_dir({"HOME": str(home), "MESA_SHADER_CACHE_DISABLE": "true"}) is None


def test_shader_cache_dir_moves_to_temp_when_home_is_read_only(tmp_path):
    import os

    from gputex.device import shader_cache_dir

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories; the rule is checked with a home that is a file below")
    home = tmp_path / "ro"
    home.mkdir()
    home.chmod(0o500)
    try:
        env = {"HOME": str(home)}
        got = shader_cache_dir(env)
        assert env["MESA_SHADER_CACHE_DIR"] == got and "gputex-mesa-shader-cache-" in got
    finally:
        home.chmod(0o700)


def test_shader_cache_dir_moves_to_temp_when_home_is_a_file(tmp_path):
    from gputex.device import shader_cache_dir

    home = tmp_path / "file"
    home.write_bytes(b"")  # ~/.cache cannot be made under a file: Mesa would cache nothing
    env = {"HOME": str(home)}
    got = shader_cache_dir(env)
    assert env["MESA_SHADER_CACHE_DIR"] == got and "gputex-mesa-shader-cache-" in got


def test_warm_types_gives_what_cffi_parses():
    """Every type :func:`warm_types` puts in wgpu's cffi cache (built from parsed declarations, or
    parsed all in one run) is the type cffi gives for that string in a fresh FFI of the same
    header, function-type flag included; in a fresh process, so nothing was parsed before."""
    import subprocess
    import sys

    code = (
        "from cffi import FFI\n"
        "from wgpu.backends.wgpu_native._ffi import ffi, get_wgpu_header\n"
        "from gputex.device import WGPU_CTYPES, warm_types\n"
        "warm_types()\n"
        "fresh = FFI(); fresh.cdef(get_wgpu_header())\n"
        "for n in WGPU_CTYPES:\n"
        "    btype, is_function = ffi._parsed_types[n]\n"
        "    want = fresh._typeof(n, consider_function_as_funcptr=True)\n"
        "    assert (fresh.getctype(want), is_function) == (ffi.getctype(btype), n.startswith('void(')), n\n"
        "print(len(WGPU_CTYPES))\n"
    )
    pytest.importorskip("wgpu")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["52"]


_CDEF_CHILD = (
    "import os, sys\n"
    "from gputex.device import import_wgpu_ffi, warm_types\n"
    "from cffi import FFI\n"
    "ffi = import_wgpu_ffi()\n"
    "from wgpu.backends.wgpu_native._ffi import get_wgpu_header\n"
    "fresh = FFI(); fresh.cdef(get_wgpu_header())\n"
    "mine, want = ffi._parser._declarations, fresh._parser._declarations\n"
    "assert sorted(mine) == sorted(want)\n"
    "assert all(str(mine[k][0]) == str(want[k][0]) and mine[k][1] == want[k][1] for k in want)\n"
    "warm_types()\n"
    "import numpy as np, gputex\n"
    "s = gputex.Session()\n"
    "a = np.arange(32 * 16 * 4, dtype=np.uint32).astype(np.uint8).reshape(16, 32, 4)\n"
    "assert (gputex.capture(gputex.upload(s, gputex.from_array(a), 'rgba8unorm')) == a).all()\n"
    "print('ok')\n"
)


def test_wgpu_header_parse_is_cached_privately(tmp_path):
    """The parse of wgpu's C header is pickled in the user's cache folder by the first process
    and loaded by the next: the declarations equal a fresh parse's and a round trip through the
    GPU works. A cache file others may write, or one of another key, is not loaded (and is
    replaced by a good one)."""
    import os
    import pickle
    import subprocess
    import sys

    pytest.importorskip("wgpu")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))

    def child() -> None:
        done = subprocess.run([sys.executable, "-c", _CDEF_CHILD], env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.split()[-1:] == ["ok"], done.stderr[-2000:]

    child()  # parses and writes the cache
    folder = tmp_path / "gputex"
    (path,) = folder.glob("wgpu-cdef-*.pickle")
    assert (os.stat(folder).st_mode & 0o777, os.stat(path).st_mode & 0o777) == (0o700, 0o600)
    good = path.read_bytes()
    child()  # loads it
    assert path.read_bytes() == good
    saved = pickle.loads(good)
    bad = pickle.dumps({"key": saved["key"], "parser": {"_declarations": {}}})
    for mode, key in ((0o666, saved["key"]), (0o600, "another key")):
        path.write_bytes(pickle.dumps({"key": key, "parser": {"_declarations": {}}}) if key != saved["key"] else bad)
        path.chmod(mode)
        child()  # not loaded: parsed as before, and the cache written again
        assert path.read_bytes() == good and os.stat(path).st_mode & 0o777 == 0o600
