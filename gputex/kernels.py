"""Shaders and compute pipelines: one loader, named caches, one dispatch helper.

Every module that runs a GPU pass (``mips``, ``transform``, ``unblock``, ``compare``,
``bcenc``) gets its WGSL and its pipelines here, so a shader is specialised one way and a
pipeline is cached one way.

**One substitution scheme** (:func:`load_wgsl`). A shader file may start with directives
in comments:

* ``//! include other.wgsl``: that file's text is put in front (shared encoding code);
* ``//! default NAME value``: ``NAME`` stands for ``value`` unless the caller gives another.

``load_wgsl(name, NAME=value, ...)`` then replaces every whole word ``NAME`` (upper-case
placeholders by convention) with ``value``, outside the directive lines (a value may span lines);
a name the shader does not contain is an error. Numbers and switches that only change a pipeline, not
the shader's types, stay WGSL ``override`` constants passed to :func:`compute_pipeline`
(no recompiling of the module).

**Named caches** (:class:`gputex.caches.Cache`, ``session.cache(name)``): pipelines and reusable GPU
resources live in caches with a name and hit/miss counts (``cache_stats(session)``), never
under private tuple keys in the session. A device loss (``Session.recreate``) drops them.
"""

from __future__ import annotations

import re
import struct
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .caches import Cache

if TYPE_CHECKING:
    from .device import Session

__all__ = ["load_wgsl", "Cache", "cache_stats", "compute_pipeline", "render_pipeline", "dispatch",
           "Timestamps", "timestamps", "submit_timed", "PIPELINES"]

#: The cache every compiled pipeline (and shader module) lives in.
PIPELINES = "pipelines"
#: One bind group layout entry (wgpu's dict form).
Entry = dict[str, Any]

_DIRECTIVE = re.compile(r"^//! (include|default) (\S+)(?: (.*))?$")


@cache
def _read(name: str) -> tuple[str, dict[str, str]]:
    """(text with includes resolved, defaults) of one shader file."""
    text = resources.files("gputex").joinpath("shaders", name).read_text()
    front, defaults = [], {}
    for line in text.splitlines():
        m = _DIRECTIVE.match(line)
        if not m:
            if line.startswith("//!"):
                raise ValueError(f"{name}: unknown shader directive {line!r}")
            continue
        if m.group(1) == "include":
            code, more = _read(m.group(2))
            front.append(code)
            defaults.update(more)
        else:
            defaults[m.group(2)] = m.group(3) or ""
    return "".join(c + "\n" for c in front) + text, defaults


def load_wgsl(name: str, **substitutions: Any) -> str:
    """The WGSL of ``shaders/name``: included files in front, every placeholder word replaced by
    its value from ``substitutions`` or the file's ``//! default`` (see the module docstring)."""
    code, defaults = _read(name)
    values = {**defaults, **{k: str(v) for k, v in substitutions.items()}}
    unknown = [k for k in substitutions if k not in defaults and not re.search(rf"\b{re.escape(k)}\b", code)]
    if unknown:
        raise ValueError(f"{name}: no placeholder {', '.join(sorted(unknown))} in the shader")
    if not values:
        return code
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(values, key=len, reverse=True)) + r")\b")
    # (the directive lines as they are: a value may span lines, e.g. code put in at a placeholder)
    return "\n".join(line if line.startswith("//! ") else pattern.sub(lambda m: values[m.group(1)], line)
                     for line in code.split("\n"))


def cache_stats(session: Session) -> dict[str, dict[str, int]]:
    """Entries, hits and misses of each of the session's named caches."""
    return {name: c.stats() for name, c in session.caches().items()}


def _module(session: Session, shader: str, subs: dict[str, Any], label: str = "") -> Any:
    key = ("module", shader, tuple(sorted(subs.items())))
    return session.cache(PIPELINES).get(key, lambda: session.check(
        f"compile {label or shader}", session.device.create_shader_module,
        code=load_wgsl(shader, **subs), label=label or shader))


def compute_pipeline(session: Session, shader: str, entries: list[Entry], *, entry: str = "main",
                     constants: dict[str, Any] | None = None, subs: dict[str, Any] | None = None,
                     cache: str = PIPELINES, key: Any = None, label: str = "") -> tuple[Any, Any]:
    """(pipeline, bind group layout) of ``shader``'s ``entry`` with ``constants`` (WGSL
    ``override``s) and placeholder ``subs``, cached in the named ``cache``.

    ``entries`` is the bind group layout. It is not part of the cache key: the layout must
    follow from the shader, entry point, substitutions and constants (or from ``key``, where the
    caller gives its own)."""
    constants = constants or {}
    subs = subs or {}
    if key is None:
        key = (shader, entry, tuple(sorted(subs.items())), tuple(sorted(constants.items())))

    def make() -> tuple[Any, Any]:
        from .trace import span

        with span("pipeline", shader=shader):  # (GPUTEX_TRACE: what a run's first chains pay)
            module = _module(session, shader, subs, label)
            bgl = session.device.create_bind_group_layout(entries=entries)
            layout = session.device.create_pipeline_layout(bind_group_layouts=[bgl])
            pipe = session.check(f"compile {label or shader}", session.device.create_compute_pipeline,
                                 layout=layout, compute={"module": module, "entry_point": entry,
                                                         "constants": constants})
        return pipe, bgl

    made: tuple[Any, Any] = session.cache(cache).get(("compute",) + (key if isinstance(key, tuple) else (key,)), make)
    return made


def render_pipeline(session: Session, shader: str, entries: list[Entry], target: str, *, vertex: str,
                    fragment: str, constants: dict[str, Any] | None = None,
                    subs: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """(pipeline, bind group layout) drawing a triangle list into a ``target``-format attachment."""
    constants = constants or {}
    subs = subs or {}
    key = ("render", shader, vertex, fragment, target, tuple(sorted(subs.items())), tuple(sorted(constants.items())))

    def make() -> tuple[Any, Any]:
        module = _module(session, shader, subs)
        bgl = session.device.create_bind_group_layout(entries=entries)
        layout = session.device.create_pipeline_layout(bind_group_layouts=[bgl])
        pipe = session.device.create_render_pipeline(
            layout=layout, vertex={"module": module, "entry_point": vertex, "constants": constants},
            primitive={"topology": "triangle-list"},
            fragment={"module": module, "entry_point": fragment, "constants": constants,
                      "targets": [{"format": target}]})
        return pipe, bgl

    made: tuple[Any, Any] = session.cache(PIPELINES).get(key, make)
    return made


def dispatch(enc: Any, pipe: Any, bind: Any, groups: tuple[int, int, int],
             timestamp_writes: dict[str, Any] | None = None) -> None:
    """One compute pass of ``pipe`` with bind group 0 over ``groups`` workgroups (timed where
    ``timestamp_writes`` is given: :meth:`Timestamps.next`)."""
    cpass = enc.begin_compute_pass(timestamp_writes=timestamp_writes) if timestamp_writes else enc.begin_compute_pass()
    cpass.set_pipeline(pipe)
    cpass.set_bind_group(0, bind)
    cpass.dispatch_workgroups(*groups)
    cpass.end()


class Timestamps:
    """Begin/end timestamps of every compute pass (the gaps between passes are copies and barriers)."""

    def __init__(self, session: Session, passes: int):
        import wgpu

        self.count = 2 * passes
        self.used = 0
        self.resolved = 0
        self.qs = session.device.create_query_set(type=wgpu.QueryType.timestamp, count=self.count)
        self.resolve_buf = session.device.create_buffer(
            size=8 * self.count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        self.read_buf = session.device.create_buffer(
            size=8 * self.count, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def next(self) -> dict[str, Any] | None:
        """The ``timestamp_writes`` of the next pass, or None when all slots are used."""
        if self.used + 2 > self.count:
            return None
        i = self.used
        self.used += 2
        return {"query_set": self.qs, "beginning_of_pass_write_index": i, "end_of_pass_write_index": i + 1}

    def resolve(self, enc: Any) -> None:
        if self.used > self.resolved:
            a, n = self.resolved, self.used - self.resolved
            enc.resolve_query_set(self.qs, a, n, self.resolve_buf, 8 * a)
            enc.copy_buffer_to_buffer(self.resolve_buf, 8 * a, self.read_buf, 8 * a, 8 * n)
            self.resolved = self.used

    def read(self) -> tuple[int, list[int]]:
        """(last end - first begin, [duration of each pass]) in nanoseconds."""
        import wgpu

        self.read_buf.map_sync(wgpu.MapMode.READ)
        t = struct.unpack(f"<{self.used}Q", bytes(self.read_buf.read_mapped(0, 8 * self.used)))
        self.read_buf.unmap()
        return int(t[-1] - t[0]), [int(t[i + 1] - t[i]) for i in range(0, self.used, 2)]


def timestamps(session: Session, passes: int) -> Timestamps | None:
    """A :class:`Timestamps` for ``passes`` passes where the device has timestamp queries, else None."""
    return Timestamps(session, passes) if session.has_feature("timestamp-query") else None


def submit_timed(session: Session, enc: Any, query: Timestamps | None, what: str) -> tuple[int | None, list[int]]:
    """Resolve ``query`` (if any) into ``enc``, submit it (errors named ``what``), and return
    :meth:`Timestamps.read`'s (GPU ns, ns of each pass), or (None, []) without a query."""
    if query:
        query.resolve(enc)
    session.check(what, session.device.queue.submit, [enc.finish()])
    return query.read() if query else (None, [])
