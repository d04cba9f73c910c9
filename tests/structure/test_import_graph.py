"""The shape of the package: no import cycles, no reach into another module's private names.

Both tests compare what the source holds today with an explicit list. They fail on a new cycle
or a new private reach, and also when a listed one has gone, so the lists shrink as issue 12's
restructure lands (it asks for none): delete the lines the failure names.
"""

from __future__ import annotations

from structure.imports import cycle_edges, foreign_private_attributes, graph, imports, private_uses

# Every import edge that lies on a cycle (edges inside a strongly connected component of the
# import graph; module-level and function-level imports, not `if TYPE_CHECKING:`). At main
# f212c5a there were 76 (one component of 23 modules, and cli <-> cli_scale); issue 12's
# restructure removed them all. A new cycle needs a new edge, and that edge is on the cycle.
KNOWN_CYCLES: set[str] = set()

# "user: module._name": reaches into another gputex module's private names (none).
KNOWN_PRIVATE_IMPORTS: set[str] = set()

# "user: object._name" on an object another library owns, used knowingly: cffi's parsed
# declarations and parser (device.warm_types builds wgpu's C types from them, checked against a
# real parse, and parses the rest in one run; device.import_wgpu_ffi loads a cached parse of
# wgpu's header as FFI._cdef would store it),
# wgpu-py's writable mapped view (the only one it offers, see the README), the process pool's
# size and os._exit in worker processes and at the end of a CLI run (atexit handlers run first),
# multiprocessing's fork server (its pid: the early server is ended and reaped at exit; os._exit
# ends the server forked from gputex, which must run none of gputex's exit handlers),
# wgpu-py's device handle for a texture with view formats (wgpu_compat: a shim version-gated on
# wgpu-py 0.32.0, which raises for them; its docstring says when it can go).
KNOWN_PRIVATE_ATTRIBUTES = {
    "cli: atexit._run_exitfuncs", "cli: os._exit", "early: forkserver._forkserver", "early: os._exit",
    "device: ffi._get_cached_btype", "device: ffi._lock", "device: ffi._parsed_types", "device: ffi._parser",
    "device: ffi._cdefsources", "device: parser._get_type_and_quals", "device: parser._parse", "gpu_batch: buf._experimental_get_mapped_range",
    "upload: buf._experimental_get_mapped_range", "workers: broken._max_workers", "workers: os._exit",
    "wgpu_compat: device._internal",
    # workers._prespawn: CPython's ProcessPoolExecutor has no public way to start its processes
    # before a task (checked for by _can_prespawn; GPUTEX_PRESPAWN=0 goes the public way)
    "workers: pool._executor_manager_thread_wakeup", "workers: pool._max_workers", "workers: pool._processes",
    "workers: pool._shutdown_lock", "workers: pool._spawn_process", "workers: pool._start_executor_manager_thread",
}


def _diff(found: set[str], known: set[str], what: str) -> str:
    new, gone = sorted(found - known), sorted(known - found)
    return (f"new {what} (remove them): {new}; " if new else "") + (
        f"listed {what} that are gone (delete them from the list): {gone}" if gone else "")


def test_no_new_import_cycles():
    found = cycle_edges(graph(imports()))
    assert found == KNOWN_CYCLES, _diff(found, KNOWN_CYCLES, "import edges on a cycle")


def test_no_new_imports_of_private_names():
    found = private_uses()
    assert found == KNOWN_PRIVATE_IMPORTS, _diff(found, KNOWN_PRIVATE_IMPORTS, "private imports")


def test_no_new_private_attribute_reaches():
    found = foreign_private_attributes()
    assert found == KNOWN_PRIVATE_ATTRIBUTES, _diff(found, KNOWN_PRIVATE_ATTRIBUTES,
                                                    "private attribute reaches")


def test_the_checker_sees_function_level_cycles_and_skips_type_checking(tmp_path):
    pkg = tmp_path / "gputex"
    pkg.mkdir()
    files = {
        "__init__.py": "from .a import run\n",
        "a.py": "from . import b\n\ndef run():\n    return b._helper()\n",
        "b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
                 "def _helper():\n    from .a import run  # function level: still a cycle\n    return run\n"),
        "c.py": "from .b import _helper\nimport gputex.a as alias\nx = alias._private\ny = session._cache\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    from structure.imports import modules

    mods = modules(str(pkg))
    assert sorted(mods) == ["gputex", "gputex.a", "gputex.b", "gputex.c"]
    # b -> c is under TYPE_CHECKING: without it c -> b -> c would be a cycle too
    assert cycle_edges(graph(imports(mods))) == {"a -> b", "b -> a"}
    assert private_uses(mods) == {"a: b._helper", "c: b._helper", "c: a._private"}
    assert foreign_private_attributes(mods) == {"a: b._helper", "c: alias._private", "c: session._cache"}
