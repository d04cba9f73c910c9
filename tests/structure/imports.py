"""The import graph of the ``gputex`` package, read from its source (no module is imported).

Used by ``test_import_graph.py``. Every ``import``/``from ... import`` counts, at module level
and inside functions, except those under ``if TYPE_CHECKING:`` (they never run).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

PACKAGE = "gputex"
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           PACKAGE)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, e.g. "gputex.upload"
    target: str  # the imported gputex module, e.g. "gputex.mips"
    name: str | None  # the attribute taken from it (``from target import name``), else None
    line: int


def modules(root: str = PACKAGE_DIR) -> dict[str, str]:
    """{dotted module name: file path} for every .py file of the package (subpackages too)."""
    found = {}
    base = os.path.dirname(root)
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__pycache__")))
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), base)[:-3].replace(os.sep, ".")
                found[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(d, f)
    return found


def extensions(root: str = PACKAGE_DIR) -> set[str]:
    """Dotted names of the C extensions, from their sources (``_pngfilter.c``): built or not."""
    base = os.path.dirname(root)
    return {os.path.relpath(os.path.join(d, f), base)[:-2].replace(os.sep, ".")
            for d, _, files in os.walk(root) for f in files if f.endswith(".c")}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _walk(node: ast.AST):
    """Every node under ``node`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for n in child.orelse:
                yield n
                yield from _walk(n)
            continue
        yield child
        yield from _walk(child)


def imports(mods: dict[str, str] | None = None) -> list[Import]:
    """Every import of one gputex module by another."""
    mods = modules() if mods is None else mods
    exts = extensions()
    out = []
    for mod, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in _walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                        out.append(Import(mod, _longest_module(alias.name, mods), None, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = mod.split(".")
                    keep = len(parts) - node.level + (1 if is_pkg else 0)
                    base = ".".join(parts[:keep] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in exts:  # a C extension: no imports of its own
                        continue
                    if sub in mods:  # ``from . import mips``: the submodule itself
                        out.append(Import(mod, sub, None, node.lineno))
                    else:
                        out.append(Import(mod, _longest_module(base, mods), alias.name, node.lineno))
    return out


def _longest_module(name: str, mods: dict[str, str]) -> str:
    while name not in mods and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def graph(found: list[Import]) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for i in found:
        if i.source != i.target:
            g.setdefault(i.source, set()).add(i.target)
    return g


def cycles(g: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Every elementary cycle, each as a tuple of module names (without the package prefix)
    rotated to start at its smallest name."""
    found = set()
    nodes = sorted(set(g) | {t for ts in g.values() for t in ts})
    index = {n: i for i, n in enumerate(nodes)}

    def dfs(start, node, path, on_path):
        for nxt in sorted(g.get(node, ())):
            if index[nxt] < index[start]:
                continue  # each cycle is found from its smallest node only
            if nxt == start:
                found.add(tuple(p.removeprefix(PACKAGE + ".") for p in path))
            elif nxt not in on_path:
                on_path.add(nxt)
                path.append(nxt)
                dfs(start, nxt, path, on_path)
                path.pop()
                on_path.discard(nxt)

    for s in nodes:
        dfs(s, s, [s], {s})
    return found


def components(g: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan), each a set of
    names without the package prefix."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append({c.removeprefix(PACKAGE + ".") for c in comp})

    for v in sorted(set(g) | {t for ts in g.values() for t in ts}):
        if v not in index:
            visit(v)
    return out


def cycle_edges(g: dict[str, set[str]]) -> set[str]:
    """Every import edge that lies on a cycle ("upload -> mips"): the edges inside a strongly
    connected component. A new cycle needs a new edge, and that edge is on it, so this set
    changes whenever a cycle appears or disappears."""
    comps = components(g)
    short = {k.removeprefix(PACKAGE + "."): {t.removeprefix(PACKAGE + ".") for t in v} for k, v in g.items()}
    return {f"{a} -> {b}" for c in comps for a in sorted(c) for b in sorted(short.get(a, ())) if b in c}


def private_uses(mods: dict[str, str] | None = None) -> set[str]:
    """Every use of another gputex module's private name (``_x``, not dunders), as
    "user: module._x": ``from .mips import _pipeline`` and ``mips._pipeline`` after
    ``from . import mips`` (or ``import gputex.mips as m``)."""
    mods = modules() if mods is None else mods
    found = imports(mods)
    out = set()

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    short = lambda m: m.removeprefix(PACKAGE + ".")  # noqa: E731
    for i in found:
        if i.name and private(i.name) and i.source != i.target:
            out.add(f"{short(i.source)}: {short(i.target)}.{i.name}")
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        bound = {}  # local name -> gputex module
        for i in found:
            if i.source == mod and i.name is None:
                bound[i.target.rsplit(".", 1)[-1]] = i.target
        for node in _walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.asname:
                        if isinstance(node, ast.Import) and alias.name in mods:
                            bound[alias.asname] = alias.name
                        elif isinstance(node, ast.ImportFrom):
                            for i in found:
                                if i.source == mod and i.line == node.lineno and i.name is None \
                                        and i.target.endswith("." + alias.name):
                                    bound[alias.asname] = i.target
        for node in _walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and private(node.attr) and bound[node.value.id] != mod):
                out.add(f"{short(mod)}: {short(bound[node.value.id])}.{node.attr}")
    return out


def foreign_private_attributes(mods: dict[str, str] | None = None) -> set[str]:
    """``obj._x`` where ``obj`` is not ``self``/``cls`` and the module itself defines no ``_x``
    (no ``def _x``, ``class _x``, ``_x = ...`` or ``self._x = ...``): a reach into an object
    another module owns (``session._cache``), as "user: obj._x"."""
    mods = modules() if mods is None else mods
    out = set()
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        own = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
        for node in _walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id not in ("self", "cls") and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.attr not in own):
                out.add(f"{mod.removeprefix(PACKAGE + '.')}: {node.value.id}.{node.attr}")
    return out
