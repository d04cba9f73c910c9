"""The CLI's report commands: ``compare`` and ``stats`` (GPU reductions; only summaries are read back)."""

from __future__ import annotations

import json
import os
from typing import List, Optional

import typer

from .cli_options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    AdapterOpt,
    Alpha,
    AlphaOpt,
    BackendOpt,
    ColorSpace,
    Command,
    Commands,
    DebugOpt,
    Filter,
    FilterOpt,
    FormatOpt,
    JsonOpt,
    MipsOpt,
    QuietOpt,
    SpaceOpt,
    VerboseOpt,
    Wrap,
    check_level,
    cli_state,
    print_error,
)
from .cli_render import render_compare, render_stats
from .cli_run import build_options, cli_inputs, mip_kwargs, open_session, run_batch, validate_format
from .errors import GputexError

_commands = Commands()
#: Adds ``compare`` and ``stats`` to the app.
register = _commands.register


@_commands.command(cls=Command, epilog="""\b
Examples:
  gputex compare a.png b.png
  gputex compare a.png b.png --max-diff 1 --diff-image diff/ab.png""")
def compare(
    a: str = typer.Argument(..., metavar="A", help="First image or texture file."),
    b: str = typer.Argument(..., metavar="B", help="Second image or texture file."),
    level: str = typer.Option("0", "--level", metavar="N|all", help="Level to compare, or all (with --mips).",
                              callback=check_level),
    format: Optional[str] = FormatOpt,
    color_space: Optional[ColorSpace] = SpaceOpt,
    mips: bool = MipsOpt, filter: Filter = FilterOpt, alpha: Alpha = AlphaOpt,
    max_diff: Optional[float] = typer.Option(None, "--max-diff", min=0, metavar="N",
                                             help="Pass when no channel differs by more than N (codes; LSB for "
                                                  "unorm)."),
    min_psnr: Optional[float] = typer.Option(None, "--min-psnr", metavar="DB",
                                             help="Pass when PSNR over all channels is at least DB."),
    diff_image: Optional[str] = typer.Option(None, "--diff-image", metavar="FILE",
                                             help="Write |A - B| amplified to full range as PNG (its folder is "
                                                  "created)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as one JSON object."),
    adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    debug: bool = DebugOpt,
    quiet: bool = QuietOpt, verbose: bool = VerboseOpt,
) -> None:
    """Compare two images on the GPU; only the summary is read back.

    Exit 0 when within the thresholds (default: identical), 1 when not, 2 on usage errors
    or inputs that cannot be compared (unreadable, different sizes or formats), 3 no GPU.
    """
    cli_state.update(debug=debug, quiet=quiet, verbose=verbose)
    validate_format(format)
    if diff_image is not None and os.path.dirname(diff_image):
        try:
            os.makedirs(os.path.dirname(diff_image), exist_ok=True)
        except OSError as e:
            print_error(f"{os.path.dirname(diff_image)}: cannot create output folder ({e.strerror or e})")
            raise typer.Exit(EXIT_FAILED)
    session = open_session(adapter, backend)
    from .report import Thresholds, compare_files

    opts = build_options(format=format, color_space=color_space.value if color_space else None, mips=mips,
                    level=level, mip_options=mip_kwargs(filter, alpha, None, False, Wrap.clamp))
    try:
        report = compare_files(session, a, b, opts, Thresholds(max_diff, min_psnr), diff_image)
    except GputexError as e:
        if debug:
            raise
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
    report["adapter"] = session.name
    if as_json:
        typer.echo(json.dumps(report))
    elif not quiet:
        if verbose:
            typer.echo(f"adapter: {session.name}")
        render_compare(report)
        if verbose:
            typer.echo(f"compared in {report['compare_seconds'] * 1000:.1f} ms")
    raise typer.Exit(EXIT_OK if report["within"] else EXIT_FAILED)


@_commands.command(cls=Command, epilog="""\b
Examples:
  gputex stats photo.png
  gputex stats height16.png --histogram 64 --json""")
def stats(
    images: List[str] = typer.Argument(..., metavar="IMAGE", help="Image or texture files."),
    histogram: int = typer.Option(0, "--histogram", min=0, max=4096, metavar="BINS",
                                  help="Histogram bins per channel (0: none)."),
    level: str = typer.Option("0", "--level", metavar="N|all", help="Level, or all (with --mips).", callback=check_level),
    format: Optional[str] = FormatOpt,
    color_space: Optional[ColorSpace] = SpaceOpt,
    mips: bool = MipsOpt,
    as_json: bool = JsonOpt, adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    debug: bool = DebugOpt,
    quiet: bool = QuietOpt, verbose: bool = VerboseOpt,
) -> None:
    """Per-channel min, max, mean, std and histogram, on the GPU."""
    cli_state.update(debug=debug, quiet=quiet, verbose=verbose)
    validate_format(format)
    session = open_session(adapter, backend)
    from .report import stats_file

    opts = build_options(format=format, color_space=color_space.value if color_space else None, mips=mips, level=level)
    code = run_batch(cli_inputs(images, False), as_json, session, render_stats,
                      one=lambda p: stats_file(session, p, opts, histogram))
    raise typer.Exit(code)
