"""The CLI's own conversion of plain option values (gputex.cli_coerce) against typer's.

For every parameter of every command: each value the lean path answers gives exactly what
typer's (pydantic) conversion gives, the values it leaves to typer give typer's result or error,
and a plain command line never imports pydantic."""

from __future__ import annotations

import subprocess
import sys
from enum import Enum

import pytest
import typer.main

from gputex.cli import app
from gputex.cli_coerce import TYPER, LeanCoercion, install, lean


def _typer_converts_with_pydantic() -> bool:
    from importlib.metadata import requires

    return any(r.split(";")[0].strip().lower().startswith("pydantic") for r in requires("typer") or [])


# typer before its pydantic conversion layer (0.27 on the H200 machine) converts with click's
# types: install() leaves it alone and there is nothing to compare. A typer that does depend on
# pydantic must have the layer cli_coerce hooks into: renamed, this import fails loudly.
if not _typer_converts_with_pydantic():
    pytest.skip("this typer converts options without pydantic adapters", allow_module_level=True)
from typer._coercion import build_runtime_param  # noqa: E402

GROUP = typer.main.get_command(app)


def _params():
    ctx = GROUP.make_context("gputex", ["layout"], resilient_parsing=True)
    out = [("gputex", p, ctx) for p in GROUP.get_params(ctx)]
    for name, cmd in GROUP.commands.items():
        sub = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
        out += [(name, p, sub) for p in cmd.get_params(sub) if hasattr(p, "type_descriptor")]
    return out


def _values(annotation):
    """Values a command line or a default gives a parameter of this annotation."""
    common = [None, "", "x", "0", "1", "7", "22", "23", "64", "-1", "+5", "1_0", " 7", "٣", "0.5", 3, 0, 23, True,
              False, ("a.png", "b.png"), ["a"], (), ("a", 1)]
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return common + list(annotation) + [m.value for m in annotation] + [m.value.upper() for m in annotation]
    return common


def _typer(param, ctx, value):
    try:
        return "ok", build_runtime_param(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    except Exception as e:  # noqa: BLE001 - compared below
        return "error", f"{type(e).__name__}: {e}"


def _lean(param, ctx, value):
    try:
        return "ok", LeanCoercion(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    except Exception as e:  # noqa: BLE001
        return "error", f"{type(e).__name__}: {e}"


def test_every_parameter_converts_as_typer_does():
    answered = 0
    for command, param, ctx in _params():
        desc = param.type_descriptor
        for value in _values(desc.annotation) + [param.default]:
            want = _typer(param, ctx, value)
            got = _lean(param, ctx, value)
            assert got == want and type(got[1]) is type(want[1]), (command, param.name, value, got, want)
            info = desc.parameter_info
            if lean(desc.annotation, info.min, info.max, value) is not TYPER:
                answered += 1
    assert answered > 300  # the lean path does answer the plain values (not everything left to typer)


@pytest.mark.parametrize("annotation, lo, hi, value, want", [
    (int, 1, None, "64", 64), (int, 1, 22, "22", 22), (int, 1, 22, "23", TYPER), (int, 1, None, "0", TYPER),
    (int, None, None, "+5", TYPER), (int, None, None, "1_0", TYPER), (int, None, None, "٣", TYPER),
    (str, None, None, "rgba8unorm-srgb", "rgba8unorm-srgb"), (str, None, None, 5, TYPER),
    (float, 0.0, 1.0, "0.5", TYPER), (bool, None, None, True, True),
])
def test_lean_values(annotation, lo, hi, value, want):
    assert lean(annotation, lo, hi, value) == want if want is not TYPER else lean(annotation, lo, hi, value) is TYPER


def test_install_fills_only_empty_slots():
    ctx = GROUP.make_context("gputex", ["layout"], resilient_parsing=True)
    cmd = GROUP.commands["upload"]
    params = [p for p in cmd.get_params(ctx) if hasattr(p, "type_descriptor")]
    done = params[0].get_runtime_param()  # typer's own, already built
    for p in params[1:]:
        p._runtime_param = None
    install(params)
    assert params[0]._runtime_param is done
    assert all(isinstance(p._runtime_param, LeanCoercion) for p in params[1:])


def test_a_plain_command_line_does_not_import_pydantic(tmp_path):
    code = ("import sys\nfrom gputex.cli import main\nsys.argv = ['gputex', 'layout', '61', '37', '--format', "
            "'rgba8unorm-srgb', '--layers', '2']\ntry:\n    main()\nexcept SystemExit as e:\n"
            "    print('exit', e.code, 'pydantic' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip().splitlines()[-1] == "exit 0 False", out.stdout + out.stderr
    # a value the lean path leaves to typer still gets typer's conversion and message
    bad = subprocess.run([sys.executable, "-m", "gputex", "layout", "61", "37", "--layers", "0"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert "Invalid value for '--layers': Input should be greater than or equal to 1" in bad.stderr
