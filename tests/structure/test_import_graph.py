"""The shape of the package: no import cycles, no reach into another module's private names.

Both tests compare what the source holds today with an explicit list. They fail on a new cycle
or a new private reach, and also when a listed one has gone, so the lists shrink as issue 12's
restructure lands (it asks for none): delete the lines the failure names.
"""

from __future__ import annotations

from structure.imports import cycle_edges, foreign_private_attributes, graph, imports, private_uses

# Every import edge that lies on a cycle (edges inside a strongly connected component of the
# import graph; module-level and function-level imports, not `if TYPE_CHECKING:`), at main
# f212c5a: one component of 23 modules (the package's __init__ among them, reached from
# cli/keys/ktx2 importing `__version__`; upload -> mips -> capture -> upload; texfile <->
# ktx2/ktx1/dds) and cli <-> cli_scale. A new cycle needs a new edge, and that edge is on the
# cycle, so any new cycle shows up here.
KNOWN_CYCLES = {
    "batch -> workers", "bcenc -> capture", "bcenc -> mips", "bcenc -> unblock", "bcenc -> upload",
    "caps -> workers", "capture -> parallel", "capture -> texfile", "cli -> cli_scale",
    "cli_scale -> cli", "converter -> batch", "converter -> caps", "converter -> encode",
    "converter -> keys", "converter -> pipeline", "converter -> settings", "converter -> workers",
    "dds -> texfile", "decode -> hdr", "decode -> texfile", "encode -> caps", "encode -> hdr",
    "encode -> parallel", "gputex -> bcenc", "gputex -> capture", "gputex -> converter",
    "gputex -> decode", "gputex -> encode", "gputex -> mips", "gputex -> texfile",
    "gputex -> transform", "gputex -> upload", "hdr -> decode", "keys -> gputex",
    "keys -> settings", "ktx1 -> texfile", "ktx2 -> decode", "ktx2 -> gputex", "ktx2 -> texfile",
    "mips -> capture", "mips -> mips_int", "mips -> upload", "mips_int -> capture",
    "mips_int -> decode", "mips_int -> mips", "mips_int -> upload", "parallel -> caps",
    "pipeline -> batch", "pipeline -> bcenc", "pipeline -> capture", "pipeline -> decode",
    "pipeline -> encode", "pipeline -> mips", "pipeline -> texfile", "pipeline -> transform",
    "pipeline -> unblock", "pipeline -> upload", "pipeline -> workers", "settings -> bcenc",
    "settings -> pipeline", "settings -> transform", "texfile -> dds", "texfile -> encode",
    "texfile -> ktx1", "texfile -> ktx2", "transform -> batch", "transform -> decode",
    "transform -> mips", "transform -> upload", "unblock -> mips", "unblock -> upload",
    "upload -> mips", "upload -> parallel", "upload -> texfile", "workers -> decode",
    "workers -> encode",
}

# "user: module._name": today's reaches into another gputex module's private names.
KNOWN_PRIVATE_IMPORTS = {
    "bcenc: mips._timestamps", "cli_scale: cli._err", "keys: device._info",
    "mips_int: mips._pipeline", "mips_int: mips._timestamps", "pipeline: decode._check_ratio",
    "transform: mips._PACK_FMT", "transform: mips._entries", "transform: mips._pack_kind",
    "transform: mips._pipeline", "transform: mips._plain_entries", "transform: mips._reused",
    "transform: mips._stand_in", "unblock: mips._pipeline",
}

# "user: object._name" on an object another module owns (the session's private cache; wgpu
# and cffi internals gputex relies on knowingly).
KNOWN_PRIVATE_ATTRIBUTES = {
    "capture: session._cache", "device: ffi._get_cached_btype", "device: ffi._lock",
    "device: ffi._parsed_types", "device: ffi._parser", "device: ffi._typeof",
    "mips: session._cache", "upload: buf._experimental_get_mapped_range", "upload: session._cache",
    "workers: broken._max_workers", "workers: os._exit",
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
