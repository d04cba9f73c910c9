"""Start-up: where Mesa's on-disk shader cache goes (device.shader_cache_dir)."""

from __future__ import annotations

import pytest


def _run_on_gpu(code: str):
    """``code`` run by a fresh interpreter (skipped without wgpu or an adapter); it must exit 0."""
    import subprocess
    import sys

    pytest.importorskip("wgpu")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if "no GPU adapter" in done.stderr:
        pytest.skip("no GPU adapter")
    assert done.returncode == 0, done.stderr[-2000:]
    return done


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
    assert done.stdout.split() == ["58"]


def test_one_small_parse_per_process():
    """cffi parses the C types wgpu-py and gputex use in one pycparser run, while wgpu-py's module
    is imported (each further type was one more parse of the whole typedef list, 12 ms here):
    none is left for a session's upload, mips, capture and texture-file write, nor for a texture
    with view formats (gputex.wgpu_compat)."""

    code = (
        "import cffi.cparser\n"
        "small, real = [], cffi.cparser.Parser._parse\n"
        "def counted(self, csource):\n"
        "    small.extend([csource] if len(csource) < 4096 else [])\n"
        "    return real(self, csource)\n"
        "cffi.cparser.Parser._parse = counted\n"
        "from gputex.device import import_wgpu_ffi\n"
        "import_wgpu_ffi()\n"
        "print('import', len(small))\n"
        "import os, tempfile, numpy as np, gputex\n"
        "s = gputex.Session()\n"
        "a = np.arange(64 * 64 * 4, dtype=np.uint32).astype(np.uint8).reshape(64, 64, 4)\n"
        "t = gputex.upload(s, gputex.from_array(a), 'rgba8unorm-srgb', mips=True)\n"
        "gputex.write_texture_file(t, os.path.join(tempfile.mkdtemp(), 'x.ktx2'))\n"
        "from gputex.upload import upload\n"  # a texture made for stored levels (view formats)
        "upload(s, gputex.from_array(a), 'rgba8unorm-srgb', levels=7, store_levels='rgba8unorm').destroy()\n"
        "print('later', len(small) - 1)\n"
    )
    done = _run_on_gpu(code)
    assert done.stdout.split() == ["import", "1", "later", "0"]


# Counts cffi's parses of a whole header (what the cache saves) while import_wgpu_ffi runs and
# prints "parsed N".
_COUNT_PARSES = (
    "import cffi.cparser\n"
    "from gputex.device import import_wgpu_ffi\n"
    "parses, real_parse = [], cffi.cparser.Parser.parse\n"
    "def counted(self, csource, *a, **k):\n"
    "    parses.extend([1] if len(csource) >= 4096 else [])\n"
    "    return real_parse(self, csource, *a, **k)\n"
    "cffi.cparser.Parser.parse = counted\n"
    "ffi = import_wgpu_ffi()\n"
    "cffi.cparser.Parser.parse = real_parse\n"
    "print('parsed', len(parses))\n"
)

_CDEF_CHILD = _COUNT_PARSES + (
    "import os, sys\n"
    "from gputex.device import warm_types\n"
    "from cffi import FFI\n"
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


def _parses(out: str) -> int:
    (n,) = [int(line.split()[1]) for line in out.splitlines() if line.startswith("parsed ")]
    return n


def test_wgpu_header_parse_is_cached_privately(tmp_path):
    """The parse of wgpu's C header is pickled in the user's cache folder by the first process
    and loaded by the next (which parses nothing and leaves the file as it is): the
    declarations equal a fresh parse's and a round trip through the GPU works. A cache file
    others may write, or one of another key, is not loaded (and is replaced by a good one)."""
    import os
    import pickle
    import subprocess
    import sys

    pytest.importorskip("wgpu")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))

    def child() -> int:
        done = subprocess.run([sys.executable, "-c", _CDEF_CHILD], env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.split()[-1:] == ["ok"], done.stderr[-2000:]
        return _parses(done.stdout)

    assert child() == 1  # parses and writes the cache
    folder = tmp_path / "gputex"
    (path,) = folder.glob("wgpu-cdef-*.pickle")
    assert (os.stat(folder).st_mode & 0o777, os.stat(path).st_mode & 0o777) == (0o700, 0o600)
    good, before = path.read_bytes(), os.stat(path)
    assert child() == 0  # loads it: no parse, the file untouched
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns) and path.read_bytes() == good
    saved = pickle.loads(good)
    bad = pickle.dumps({"key": saved["key"], "parser": {"_declarations": {}}})
    for mode, key in ((0o666, saved["key"]), (0o600, "another key")):
        path.write_bytes(pickle.dumps({"key": key, "parser": {"_declarations": {}}}) if key != saved["key"] else bad)
        path.chmod(mode)
        assert child() == 1  # not loaded: parsed as before, and the cache written again
        assert path.read_bytes() == good and os.stat(path).st_mode & 0o777 == 0o600


@pytest.fixture(scope="module")
def good_cdef_cache(tmp_path_factory):
    """A cache folder holding a good cached parse (written by one process, loaded by the next),
    and a function running a process with a given cache home that returns how often it parsed."""
    import os
    import subprocess
    import sys

    pytest.importorskip("wgpu")

    def child(home) -> int:
        env = dict(os.environ, XDG_CACHE_HOME=str(home))
        done = subprocess.run([sys.executable, "-c", _COUNT_PARSES], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return _parses(done.stdout)

    home = tmp_path_factory.mktemp("real")
    assert child(home) == 1 and child(home) == 0  # written, then loaded: a cache that works
    (path,) = (home / "gputex").glob("wgpu-cdef-*.pickle")
    return path, child


def _unchanged(path, before) -> bool:
    import os

    st = os.stat(path, follow_symlinks=False)
    return (st.st_ino, st.st_mtime_ns, st.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)


def test_cdef_cache_in_a_symlinked_folder_is_not_used(good_cdef_cache, tmp_path):
    """A cache folder that is a symlink (to a folder with a good cache) is neither loaded from
    nor written to."""
    import os

    good, child = good_cdef_cache
    before, names = os.stat(good), sorted(os.listdir(good.parent))
    (tmp_path / "gputex").symlink_to(good.parent, target_is_directory=True)
    assert child(tmp_path) == 1
    assert _unchanged(good, before) and sorted(os.listdir(good.parent)) == names


def test_cdef_cache_file_that_is_a_symlink_or_fifo_is_not_loaded(good_cdef_cache, tmp_path):
    """A cache file that is a symlink (to a good cache) is not followed: parsed, and the link
    replaced by a file of this process's own; a FIFO in its place is not read (nor waited on)."""
    import os

    good, child = good_cdef_cache
    before = os.stat(good)
    folder = tmp_path / "link" / "gputex"
    folder.mkdir(parents=True, mode=0o700)
    (folder / good.name).symlink_to(good)
    assert child(tmp_path / "link") == 1
    assert not (folder / good.name).is_symlink() and (folder / good.name).read_bytes() == good.read_bytes()
    assert _unchanged(good, before)
    folder = tmp_path / "fifo" / "gputex"
    folder.mkdir(parents=True, mode=0o700)
    os.mkfifo(folder / good.name, 0o600)
    assert child(tmp_path / "fifo") == 1


def test_cdef_cache_in_a_group_writable_folder_is_not_used(good_cdef_cache, tmp_path):
    """A good cache file in a folder others may write is neither loaded nor rewritten."""
    import os
    import shutil

    good, child = good_cdef_cache
    folder = tmp_path / "gputex"
    folder.mkdir(mode=0o700)
    copy = folder / good.name
    shutil.copyfile(good, copy)
    copy.chmod(0o600)
    assert child(tmp_path) == 0  # the copy itself is a good cache
    folder.chmod(0o770)
    before = os.stat(copy)
    assert child(tmp_path) == 1
    assert _unchanged(copy, before)


def test_cdef_cache_owned_by_another_user_is_not_used(good_cdef_cache, tmp_path):
    """A good cache file, or its folder, owned by another user is not loaded."""
    import os
    import shutil

    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    good, child = good_cdef_cache
    folder = tmp_path / "gputex"
    folder.mkdir(mode=0o700)
    copy = folder / good.name
    shutil.copyfile(good, copy)
    copy.chmod(0o600)
    assert child(tmp_path) == 0  # the copy itself is a good cache
    os.chown(copy, 54321, 54321)
    assert child(tmp_path) == 1  # not loaded; replaced by a file of this user's
    assert os.stat(copy).st_uid == os.getuid() and child(tmp_path) == 0
    before = os.stat(copy)
    os.chown(folder, 54321, 54321)
    assert child(tmp_path) == 1 and _unchanged(copy, before)

_PATCH_CHILD = (
    "import importlib.abc, importlib.util, sys, threading, time\n"
    "import cffi\n"
    "from gputex.device import import_wgpu_ffi\n"
    "original = cffi.FFI.__dict__['cdef']\n"
    "entered, go, seen, hooks = threading.Event(), threading.Event(), [], []\n"
    "class Fake(importlib.abc.MetaPathFinder, importlib.abc.Loader):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'wgpu' or name.startswith('wgpu.'):\n"
    "            return importlib.util.spec_from_loader(name, self, is_package=not name.endswith('_ffi'))\n"
    "    def create_module(self, spec):\n"
    "        return None\n"
    "    def exec_module(self, module):\n"
    "        if module.__name__ == 'wgpu':\n"
    "            hooks[-1]()\n"
    "        module.ffi = 'fake ffi'\n"
    "sys.meta_path.insert(0, Fake())\n"
    "def hold():\n"
    "    seen.append(cffi.FFI.__dict__['cdef']); entered.set(); go.wait(10)\n"
    "hooks.append(hold)\n"
    "a = threading.Thread(target=import_wgpu_ffi); a.start(); entered.wait(10)\n"
    "b = threading.Thread(target=import_wgpu_ffi); b.start(); time.sleep(0.3)\n"
    "waited = cffi.FFI.__dict__['cdef'] is seen[0] is not original\n"
    "go.set(); a.join(); b.join()\n"
    "print('second caller waits', waited)\n"
    "print('restored', cffi.FFI.__dict__['cdef'] is original)\n"
    "for n in [m for m in sys.modules if m == 'wgpu' or m.startswith('wgpu.')]:\n"
    "    del sys.modules[n]\n"
    "def other(self, *a, **k):\n"
    "    pass\n"
    "def repatch():\n"
    "    cffi.FFI.cdef = other\n"
    "hooks.append(repatch)\n"
    "print('ffi', import_wgpu_ffi())\n"
    "print('later patch kept', cffi.FFI.__dict__['cdef'] is other)\n"
)


def test_cdef_patch_is_one_thread_at_a_time_and_restored():
    """import_wgpu_ffi patches cffi.FFI.cdef for the whole process while wgpu-py's module imports
    (here a stand-in that blocks until told): a second thread calling it meanwhile waits instead
    of patching over the first thread's patch (which it would then "restore" for good), the
    original is back once both are done, and a patch someone else makes during the import is
    left in place."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PATCH_CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["second caller waits True", "restored True", "ffi fake ffi",
                                        "later patch kept True"], done.stdout + done.stderr[-2000:]


def test_import_gputex_loads_the_rest_on_first_use():
    """``import gputex`` imports the verbs named like their modules (small) and nothing else:
    the device, mips, containers, BC encoder and converter load when first used, and are then
    the same objects as their modules'; ``gputex.decode`` etc. stay the functions."""
    import subprocess
    import sys

    code = (
        "import sys, gputex\n"
        "heavy = ['gputex.device', 'gputex.mips', 'gputex.bcenc', 'gputex.converter', 'gputex.texfile', "
        "'gputex.pipeline', 'numpy', 'wgpu', 'PIL']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "from gputex import Session, Converter\n"
        "import gputex.device, gputex.converter, gputex.mips, gputex.bcenc, gputex.texfile\n"
        "assert Session is gputex.device.Session and Converter is gputex.converter.Converter\n"
        "assert gputex.generate_mips is gputex.mips.generate_mips and gputex.encode_blocks is gputex.bcenc.encode_blocks\n"
        "assert gputex.read_texture_file is gputex.texfile.read_texture_file\n"
        "import gputex.decode, gputex.capture, gputex.compare, gputex.encode, gputex.upload\n"
        "assert all(callable(getattr(gputex, n)) for n in ('decode', 'capture', 'compare', 'encode', 'upload'))\n"
        "assert all(hasattr(gputex, n) for n in gputex.__all__) and set(gputex.__all__) <= set(dir(gputex))\n"
        "try:\n    gputex.nothing_of_that_name\nexcept AttributeError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[]", "module 'gputex' has no attribute 'nothing_of_that_name'"]


def test_gc_paused_for_start_up_and_back_once_the_session_is_ready():
    """:func:`pause_gc` turns the cyclic collector off; the session of :func:`session_soon`
    (made, rehearsal run) turns it back on with start-up's objects frozen; a session that
    cannot be made does too. Without a pause nothing is frozen. (Counted from the interpreter's
    own freeze count at start: the H200 machine's Python starts with objects frozen.)"""

    code = (
        "import gc, sys\n"
        "f0 = gc.get_freeze_count()\n"
        "from gputex.device import pause_gc, session_soon\n"
        "session_soon(adapter='no adapter has this name').exception()\n"
        "print(gc.isenabled(), gc.get_freeze_count() == f0)\n"
        "pause_gc()\n"
        "print(gc.isenabled())\n"
        "seen = []\n"
        "s = session_soon(warm=lambda s: seen.append(gc.isenabled())).result()\n"
        "print(seen, gc.isenabled(), gc.get_freeze_count() > f0 + 1000)\n"
        "pause_gc()\n"
        "session_soon(adapter='no adapter has this name').exception()\n"
        "print(gc.isenabled())\n"
    )
    done = _run_on_gpu(code)
    assert done.stdout.splitlines() == ["True True", "False", "[False] True True", "True"]


def test_gc_back_on_when_the_cli_makes_its_session_directly(tmp_path):
    """``upload --array`` (and --cube, --volume, --pack) makes its session with
    ``cli_run.open_session``, not ``session_soon``: the start-up pause ends there too."""

    import numpy as np
    from PIL import Image

    for i in range(2):
        Image.fromarray(np.full((4, 4, 4), 60 * i, np.uint8)).save(tmp_path / f"f{i}.png")
    code = (
        "import gc, sys\n"
        "import gputex.cli_run as r\n"
        "real = r.open_session\n"
        "def spy(*a, **k):\n"
        "    s = real(*a, **k)\n"
        "    print('gc', gc.isenabled())\n"
        "    return s\n"
        "r.open_session = spy\n"
        "import gputex.cli as cli\n"
        "cli.open_session = spy if hasattr(cli, 'open_session') else None\n"
        f"sys.argv = ['gputex', 'upload', {str(tmp_path / 'f0.png')!r}, {str(tmp_path / 'f1.png')!r}, '--array',"
        f" '-o', {str(tmp_path / 'a.ktx2')!r}]\n"
        "cli.console()\n"
    )
    done = _run_on_gpu(code)
    assert "gc True" in done.stdout.splitlines(), done.stdout

