"""The CLI around a run: the device for the one-by-one commands, option checks that end in exit
2, the inputs, and :func:`run_batch`, which hands the batch to :func:`gputex.run.run`, prints
each result as it comes (progress bar on a terminal), stops cleanly on Ctrl-C/SIGTERM and
returns the exit code."""

from __future__ import annotations

import json
import os
import sys
from typing import List, Optional

import typer

from .cli_options import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NO_GPU,
    EXIT_OK,
    EXIT_USAGE,
    Alpha,
    Filter,
    Wrap,
    cli_state,
    print_error,
)
from .errors import GputexError, NoAdapterError

__all__ = ["open_session", "validate_format", "validate_encoding", "_progress", "cli_inputs", "run_batch", "build_options",
           "mip_kwargs", "build_transform", "usage_checked"]


def open_session(adapter: Optional[str], backend: Optional[str], soon=None):
    """The Session (``soon``: a Future of one, from :func:`gputex.device.session_soon`);
    adapter and usage errors end the command with their exit codes."""
    from .device import Session, resume_gc

    try:
        return soon.result() if soon is not None else Session(adapter=adapter, backend=backend)
    except NoAdapterError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_NO_GPU)
    except ValueError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
    finally:
        resume_gc()  # the CLI's start-up pause ends with its session, however it was made


def validate_format(name: Optional[str], encode: bool = False) -> None:
    """Exit 2 unless ``name`` is a format gputex fills from images (``encode``: or BC-encodes)."""
    if name is None:
        return
    from .formats import get_format

    try:
        fmt = get_format(name)
    except GputexError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
    from .bcenc import ENCODERS

    if not fmt.image and encode and fmt.name not in ENCODERS and fmt.name.startswith("bc"):
        print_error(f"format {fmt.name} is not encoded by gputex yet; it encodes {', '.join(ENCODERS)}")
        raise typer.Exit(EXIT_USAGE)
    if not fmt.image and not (encode and fmt.name in ENCODERS):
        from .formats import IMAGE_FORMATS

        also = f" (block-compressed: {', '.join(ENCODERS)})" if encode else ""
        print_error(f"format {fmt.name} cannot be filled from an image; use one of: {', '.join(IMAGE_FORMATS)}{also}")
        raise typer.Exit(EXIT_USAGE)


def validate_encoding(format: Optional[str], quality: str, report: bool, *, volume: bool, **options) -> None:
    """Exit 2 for --quality/--report without a BC format gputex encodes, or options that do not fit it."""
    from .bcenc import check_options, encodable, parse_quality

    try:
        parse_quality(quality)
    except GputexError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
    if not (format and encodable(format)):
        if report or quality.strip().lower() != "normal":
            print_error(f"{'--report' if report else '--quality'} applies to block compression; add --format "
                 "bc1-rgba-unorm (or bc3/bc4/bc5)")
            raise typer.Exit(EXIT_USAGE)
        return
    problem = check_options(format, **options)
    if problem is None and volume:
        problem = f"--volume with {format}: WebGPU has no 3D BC textures (texture-compression-bc-sliced-3d)"
    if problem:
        print_error(problem)
        raise typer.Exit(EXIT_USAGE)


def _progress(total: int, enabled: bool):
    """A rich progress bar (files, MB/s, ETA) on a terminal; nothing in pipes or with --json."""
    if not enabled or not sys.stderr.isatty() or total < 1:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                 TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True,
                 console=_stderr_console())
    p.start()
    p.add_task("gputex", total=total, rate="")
    return p


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def cli_inputs(args: Optional[List[str]], recursive: bool, packs: Optional[List[str]] = None):
    from .batch import expand_inputs

    items = expand_inputs(args or [], recursive)
    if packs:
        from .transform import pack_item

        try:
            items += [pack_item(spec) for spec in packs]
        except GputexError as e:
            print_error(str(e))
            raise typer.Exit(EXIT_USAGE)
    if not items:
        print_error("no inputs")
        raise typer.Exit(EXIT_USAGE)
    return items


def run_batch(items, as_json: bool, session, render, *, jobs: int = 1, steps=None, one=None,
               adapter_line: bool = False, manifest=None, memory=None, adapter: Optional[str] = None,
               backend: Optional[str] = None, workers: Optional[int] = None, sweep=()) -> int:
    """Run the inputs (``steps`` through :func:`gputex.run.run`, or ``one(path)`` per input on
    ``session``); print; return the exit code.

    With ``steps`` and no ``session`` the run makes the device (``adapter``, ``backend``) on its
    own thread while the first inputs decode. Each input's result line (or JSON line) is printed as soon as it is done, in input order;
    each failure is one line on stderr. On a terminal a progress bar runs and a summary line
    ends the run. Ctrl-C stops feeding new inputs; those already on the GPU are finished and
    printed, then a summary and exit 130.
    """
    import signal
    import time

    state = {"failed": 0, "bytes": 0, "t0": time.perf_counter(), "stop": False, "header": False}
    quiet, verbose = cli_state.get("quiet", False), cli_state.get("verbose", False)
    bar = _progress(len(items), not as_json and not quiet)
    results: list = []

    def on_sigint(signum, frame) -> None:
        # Only a flag: a KeyboardInterrupt raised at an arbitrary point can land in a
        # __del__, where Python swallows it. A second Ctrl-C (or SIGTERM) interrupts at once.
        if state["stop"]:
            raise KeyboardInterrupt
        state["stop"] = signum

    def emit(result, used=None) -> None:
        nonlocal session
        if used is not None:
            session = used
        if state["stop"] and not result.ok:
            raise KeyboardInterrupt  # failed while stopping (its worker got the signal too): not reported
        if as_json:
            d = result.as_dict()
            d["adapter"] = session.name if session is not None else None  # (None: no device made yet)
            typer.echo(json.dumps(d))
        elif not quiet:
            if (adapter_line or verbose) and not state["header"] and session is not None:
                # (a split batch makes its device on demand: the line comes before the first
                # result that used it; inputs made on the host before it need none)
                state["header"] = True
                typer.echo(f"adapter: {session.name}")
            render([result], session)
        if not result.ok:
            state["failed"] += 1
            if cli_state["debug"] and result.exception is not None:
                import traceback

                traceback.print_exception(result.exception, file=sys.stderr)
            print_error(result.error or f"{result.source}: failed")
        if not quiet:
            for w in result.warnings:
                print_error(f"warning: {w}")
        state["bytes"] += result.bytes or 0
        results.append(result)
        if bar:
            rate = state["bytes"] / max(time.perf_counter() - state["t0"], 1e-9) / 1e6
            bar.update(0, advance=1, description=os.path.basename(result.source), rate=f"{rate:.0f} MB/s")

    from .signals import STOP_SIGNALS, exit_code

    previous = {sig: signal.signal(sig, on_sigint) for sig in STOP_SIGNALS} if _main_thread() else {}
    try:
        if one is not None:
            for item in items:
                if state["stop"]:
                    break
                emit(one(item.path))
        else:
            from .caps import MemoryGate
            from .run import run

            try:
                run(items, steps, on_result=emit, jobs=jobs, session=session, adapter=adapter, backend=backend,
                    workers=workers, stop=lambda: state["stop"], gate=MemoryGate(memory) if memory else None,
                    sweep=sweep)
            except (NoAdapterError, ValueError) as e:
                if session is not None:  # not the device's: an input's error escaping is a bug
                    raise
                print_error(str(e))
                raise typer.Exit(EXIT_NO_GPU if isinstance(e, NoAdapterError) else EXIT_USAGE)
        if state["stop"] and len(results) < len(items):
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        if bar:
            bar.stop()
            bar = None
        ok = sum(1 for r in results if r.ok)
        how = "terminated" if state["stop"] == getattr(signal, "SIGTERM", None) else "interrupted"
        cli_state["announced"] = True
        print_error(f"{how} after {len(results)} of {len(items)} inputs ({ok} ok, {state['failed']} failed); "
             "every output written is complete")
        raise typer.Exit(exit_code(state["stop"]) if state["stop"] else EXIT_INTERRUPTED)
    finally:
        if bar:
            bar.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if manifest is not None and not manifest(results, session):  # --manifest (cli_scale.Manifest)
        state["failed"] += 1
    if not as_json and not quiet and (verbose or (sys.stderr.isatty() and len(items) > 1)):
        secs = time.perf_counter() - state["t0"]
        skipped = sum(1 for r in results if r.skipped)
        print_error(f"{len(results) - state['failed'] - skipped} ok, {state['failed']} failed"
             + (f", {skipped} up to date" if skipped else "")
             + f", {secs:.2f} s, {state['bytes'] / max(secs, 1e-9) / 1e6:.0f} MB/s")
    from .errors import UsageError

    if any(isinstance(r.exception, UsageError) for r in results):
        return EXIT_USAGE
    return EXIT_FAILED if state["failed"] else EXIT_OK


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def build_options(**kw):
    from .pipeline import Options

    return Options(**kw)


def mip_kwargs(filter: Filter, alpha: Alpha, alpha_coverage, normal_map: bool, wrap: Wrap):
    from .pipeline import MipOptions

    return MipOptions(filter=filter.value, alpha=alpha.value, alpha_coverage=alpha_coverage, normal_map=normal_map,
                      wrap=wrap.value)


def build_transform(resize: Optional[str], max_size: Optional[int], pot: bool, swizzle: Optional[str]):
    """The --resize/--max-size/--pot/--swizzle flags as a :class:`gputex.transform.Transform`
    (None when none is given); a malformed value is a usage error."""
    if resize is None and max_size is None and not pot and swizzle is None:
        return None
    from .transform import Transform, check_swizzle, parse_size

    try:
        return Transform(resize=parse_size(resize) if resize is not None else None, max_size=max_size, pot=pot,
                         swizzle=check_swizzle(swizzle) if swizzle is not None else None)
    except GputexError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)


def usage_checked(check) -> None:
    """Run ``check()``; its :class:`~gputex.errors.UsageError` is one line and exit 2."""
    from .errors import UsageError

    try:
        check()
    except UsageError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
