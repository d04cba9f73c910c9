"""The ``gputex`` command's entry point: the console script and ``python -m gputex``.

Kept apart from :mod:`gputex.cli` so that its work starts before the CLI's modules (typer,
click, rich: 0.08-0.1 s on the H200 host) import: the one large input of an
``upload``/``capture`` command line is read and decoded from here on a thread of its own
(:func:`gputex.inputs.read_ahead`), then :func:`gputex.cli.console` runs the command. A
command line that looks like a batch starts its codec workers' fork server first
(:func:`gputex.early.start`: the workers fork from it, warm, when the batch begins).
"""

import os
import sys


def console() -> None:
    """``gputex``: read the command line's one large input ahead, then run the command."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before the decode thread imports numpy (see cli.console)
    from .early import start

    start(sys.argv[1:])  # before any thread starts and any module a worker needs is imported here
    from .decode import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RATIO
    from .inputs import read_ahead

    read_ahead(sys.argv[1:], max_pixels=DEFAULT_MAX_PIXELS, max_ratio=DEFAULT_MAX_RATIO)
    from .cli import console as run

    run()
