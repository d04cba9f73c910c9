"""Option values the CLI converts itself, so a command line of plain values never loads pydantic.

typer (0.29 here) converts every parameter's value with a pydantic ``TypeAdapter``, built on
first use: the first command line of a process imports pydantic and pydantic-core and builds an
adapter per parameter, 0.11 s of pure Python on the 2-core lavapipe machine before
``gputex upload`` starts any work (one 2048² image -> KTX2 takes ~1 s there). Most values need no
such machinery: a ``str`` option given a string, an ``int`` given decimal digits within its
bounds, a choice given one of its values exactly, the defaults, an unset option. :func:`lean`
converts those to exactly what typer's adapter returns (``tests/cli/test_cli_coerce.py``
compares both for every parameter of every command); anything else (a bound crossed, ``+5``,
``1_0``, a float, a wrong choice) goes to typer's own conversion, so its results and its error
messages are typer's. :func:`install` puts :class:`LeanCoercion` in each parameter's lazy
conversion slot (typer's ``_runtime_param``, filled on first use); on a typer without that slot
it does nothing and typer converts everything, as before.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, get_args, get_origin

__all__ = ["lean", "install", "LeanCoercion"]

#: :func:`lean`'s answer where typer's own conversion must decide.
TYPER = object()


def lean(annotation: Any, lo: Any, hi: Any, value: Any) -> Any:
    """``value`` converted as typer converts it for a parameter annotated ``annotation`` with
    bounds ``lo``/``hi`` (None: none), or :data:`TYPER` where that takes typer's adapter."""
    kind = type(value)
    if annotation is str:
        return value if kind is str else TYPER
    if annotation is bool:
        return value if kind is bool else TYPER
    if annotation is int:
        if kind is str and value.isascii() and value.isdigit():
            value = int(value)
        elif kind is not int:
            return TYPER
        return TYPER if (lo is not None and value < lo) or (hi is not None and value > hi) else value
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        if kind is annotation:
            return value
        if kind is not str:
            return TYPER
        try:
            return annotation(value)
        except ValueError:
            return TYPER
    if get_origin(annotation) is list and get_args(annotation) == (str,) and kind in (tuple, list):
        return list(value) if all(type(v) is str for v in value) else TYPER
    return TYPER


class LeanCoercion:
    """A parameter's conversion: :func:`lean` first, typer's own (built on first need) else."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        info = descriptor.parameter_info
        self.bounds = (info.min, info.max)
        self.plain = getattr(info, "case_sensitive", True)  # a case-insensitive choice: typer's
        self.typer: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        many = param.multiple or param.nargs == -1
        if value is None:  # typer's RuntimeParam.coerce: no value
            return () if many else None
        if not (many and isinstance(value, str)) and self.plain:
            out = lean(self.descriptor.annotation, *self.bounds, value)
            if out is not TYPER:
                return out
        if self.typer is None:
            from typer._coercion import build_runtime_param

            self.typer = build_runtime_param(self.descriptor)
        return self.typer.coerce(value, param=param, ctx=ctx)


def install(params: Any) -> None:
    """Give each of ``params`` (a command's typer parameters) a :class:`LeanCoercion`, where
    typer left its conversion slot empty."""
    for param in params:
        if getattr(param, "_runtime_param", TYPER) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = LeanCoercion(param.type_descriptor)
