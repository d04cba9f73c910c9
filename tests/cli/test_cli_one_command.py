"""The app a command line runs (:func:`gputex.cli._app_for`): the named command alone, so typer
builds one command's parameters, not all nine; and for that command the same help, parsing and
usage errors as the whole app's."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gputex.cli import _app_for, app

runner = CliRunner()
COMMANDS = ["upload", "capture", "compare", "stats", "layout", "info", "validate", "serve", "key"]


def _names(a) -> list[str]:
    from typer.main import get_command_name

    return [c.name or get_command_name(c.callback.__name__) for c in a.registered_commands]


def test_every_command_alone():
    assert sorted(_names(app)) == sorted(COMMANDS)
    for name in COMMANDS:
        one = _app_for([name, "x.png"])
        assert one is not app and _names(one) == [name]
    assert _names(app) and len(app.registered_commands) == len(COMMANDS)  # the app itself untouched


@pytest.mark.parametrize("args", [[], ["--help"], ["-V"], ["uplod", "a.png"], ["--version", "upload"]])
def test_the_whole_app_where_no_command_is_named(args):
    assert _app_for(args) is app


def test_the_whole_app_for_shell_completion(monkeypatch):
    monkeypatch.setenv("_GPUTEX_COMPLETE", "complete_bash")
    assert _app_for(["upload"]) is app


@pytest.mark.parametrize("args", [
    ["upload", "--help"], ["capture", "-h"], ["info", "--help"], ["key", "--help"],
    ["upload", "--no-such-option"], ["capture", "a.png", "--level", "x"], ["compare"],
    ["stats", "--bogus"], ["layout", "--help"],
])
def test_same_help_and_usage_errors_as_the_whole_app(args):
    whole = runner.invoke(app, args)
    alone = runner.invoke(_app_for(args), args)
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert whole.exit_code in (0, 2)


def test_a_misspelt_command_is_still_told_apart():
    r = runner.invoke(_app_for(["uplod"]), ["uplod"])
    assert r.exit_code == 2 and "No such command 'uplod'" in r.output
