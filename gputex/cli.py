"""gputex command line: a thin Typer layer over the library.

Each command parses its flags, calls the library, and renders the result. Exit codes
are decided here and nowhere else. Nothing heavy (wgpu, numpy, rich) is imported at
module level, so ``gputex --help`` answers fast.
"""

from __future__ import annotations

import json
import os
import sys
from typing import List, Optional

import typer

from .cli_options import *  # noqa: F401,F403  (exit codes, choices, option groups, print_error, cli_state)
from .cli_options import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    AdapterOpt,
    Alpha,
    AlphaOpt,
    BackendOpt,
    BCDecode,
    BudgetOpt,
    ColorSpace,
    Command,
    Container,
    CoverageOpt,
    DebugOpt,
    Filter,
    FilterOpt,
    FloatAs,
    FormatOpt,
    FsyncOpt,
    Group,
    JobsOpt,
    JsonOpt,
    LevelsAliasOpt,
    LevelsOpt,
    ManifestOpt,
    MaxPixelsOpt,
    MaxRatioOpt,
    MaxSizeOpt,
    MemoryOpt,
    MipsOpt,
    NormalOpt,
    PackOpt,
    PathOpt,
    PotOpt,
    QuietOpt,
    RecursiveOpt,
    ResizeOpt,
    SpaceOpt,
    SwizzleOpt,
    ThreadsOpt,
    UploadJobsOpt,
    UploadPath,
    VerboseOpt,
    WorkersOpt,
    Wrap,
    WrapOpt,
    check_level,
    choices_metavar,
    cli_state,
    print_error,
    version_line,
)
from .cli_render import (  # noqa: F401
    fmt_db,
    render_bc_report,
    render_capture,
    render_compare,
    render_stats,
    render_upload,
    timings_line,
)
from .cli_run import (  # noqa: F401
    build_options,
    build_transform,
    cli_inputs,
    mip_kwargs,
    open_session,
    run_batch,
    usage_checked,
    validate_encoding,
    validate_format,
)
from .errors import GputexError, UsageError
from .settings import default

app = typer.Typer(
    cls=Group,
    help="Move images into GPU textures and back, exactly. " + EXIT_CODES,
    no_args_is_help=True,
    epilog="\b\nExamples:\n  gputex capture photo.png -o out/ --mips --level all\n"
           "  gputex upload photo.png --mips -o photo.ktx2\n  gputex <command> --help",
    pretty_exceptions_enable=False,
    # click's plain help: words wrap whole at any width, no "<bool>" after flags, no boxes,
    # and no rich import for --help
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def durable(fsync: bool) -> None:
    """``--fsync``: every output of this process and its worker processes is flushed to the
    disk before it gets its name (:func:`gputex.atomic.set_fsync`)."""
    if fsync:
        from .atomic import set_fsync

        set_fsync(True)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", "-V", callback=_show_version, is_eager=True,
                                            help="Print the version and exit.")) -> None:
    """Move images into GPU textures and back, exactly."""


@app.command(cls=Command, epilog="""\b
Examples:
  gputex upload photo.png
  gputex upload photo.png --mips -o photo.ktx2 --zstd 10
  gputex upload px.png nx.png py.png ny.png pz.png nz.png --cube -o sky.ktx2""")
def upload(
    images: Optional[List[str]] = typer.Argument(None, metavar="IMAGE",
                                                 help="Image or texture files (globs, @list, - for stdin)."),
    format: Optional[str] = FormatOpt,
    color_space: Optional[ColorSpace] = SpaceOpt,
    flip_y: bool = typer.Option(False, "--flip-y", help="Upload rows bottom to top."),
    premultiply: bool = typer.Option(False, "--premultiply",
                                     help="Multiply colour by alpha before upload (in linear light for sRGB content)."),
    no_exif_rotate: bool = typer.Option(False, "--no-exif-rotate", help="Keep the stored orientation."),
    mips: bool = MipsOpt, levels: Optional[int] = LevelsOpt, filter: Filter = FilterOpt,
    alpha: Alpha = AlphaOpt, alpha_coverage: Optional[float] = CoverageOpt,
    normal_map: bool = NormalOpt, wrap: Wrap = WrapOpt,
    budget: int = BudgetOpt, upload_path: UploadPath = PathOpt, max_pixels: Optional[int] = MaxPixelsOpt,
    max_ratio: Optional[float] = MaxRatioOpt, recursive: bool = RecursiveOpt, jobs: int = UploadJobsOpt,
    out: Optional[str] = typer.Option(None, "--out", "-o", metavar="PATH",
                                      help="Write the texture (mips included): X.ktx2 / X.dds, or a folder."),
    container: Container = typer.Option(Container(default("upload", "container")), "--container", metavar=choices_metavar(Container),
                                        help="The file type with -o FOLDER."),
    zstd: Optional[int] = typer.Option(None, "--zstd", min=1, max=22, metavar="LEVEL",
                                       help="KTX2: Zstandard-supercompress each level (1-22)."),
    skip_existing: bool = typer.Option(False, "--skip-existing",
                                       help="With -o: skip inputs whose texture file exists and is newer."),
    array: bool = typer.Option(False, "--array", help="All inputs become the layers of one 2D array texture."),
    cube: bool = typer.Option(False, "--cube", help="Inputs are cube faces +x -x +y -y +z -z (6 per cube)."),
    volume: bool = typer.Option(False, "--volume", help="Inputs are the depth slices of one 3D texture."),
    manifest: Optional[str] = ManifestOpt, threads: Optional[int] = ThreadsOpt, memory: Optional[int] = MemoryOpt,
    fsync: bool = FsyncOpt,
    verify: Optional[bool] = typer.Option(None, "--verify/--no-verify", show_default="on, off with -o",
                                          help="Read the texture back and compare it with what was sent; "
                                               "off by default when -o writes a file (the check costs a "
                                               "read-back of level 0)."),
    workers: Optional[int] = WorkersOpt,
    quality: str = typer.Option(default("upload", "quality"), "--quality", metavar="fast|normal|best",
                                help="BC encoding effort (--format bc*; or 0, 1, 2)."),
    report: bool = typer.Option(False, "--report", help="BC encoding: print the PSNR of every level against "
                                "its source."),
    as_json: bool = JsonOpt, adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    debug: bool = DebugOpt,
    quiet: bool = QuietOpt, verbose: bool = VerboseOpt, levels_alias: Optional[int] = LevelsAliasOpt,
    resize: Optional[str] = ResizeOpt, max_size: Optional[int] = MaxSizeOpt, pot: bool = PotOpt,
    swizzle: Optional[str] = SwizzleOpt, pack: Optional[List[str]] = PackOpt,
) -> None:
    """Upload images (-o: write KTX2/DDS; else verify the copy).

    Without -o, reads the texture back and compares it with what was sent, and shows the
    copy layout (row pitch, padding, staging). Texture files (KTX2, KTX, DDS) are uploaded
    as stored. With -o the texture, mips included, is written as KTX2 or DDS (add --verify
    to check the round trip too); --format bc1/bc3/bc4/bc5/bc6h/bc7-* encodes its blocks
    on the GPU. Batches with --mips -o DIR: a decode worker makes the box chain itself
    (the host's exact engine, same bytes) while the GPU is busy (--json: mips_engine).
    """
    cli_state.update(debug=debug, quiet=quiet, verbose=verbose)
    durable(fsync)
    levels = levels or levels_alias
    transform = build_transform(resize, max_size, pot, swizzle)
    validate_format(format, encode=True)
    validate_encoding(format, quality, report, normal_map=normal_map, alpha=alpha.value,
                       alpha_coverage=alpha_coverage, premultiply=premultiply,
                       color_space=color_space.value if color_space else None, volume=volume)
    from .caps import cap_jobs

    jobs = cap_jobs(jobs, threads)
    budget = min(budget, max(1, memory // 4)) if memory else budget
    kinds = [k for k, on in (("array", array), ("cube", cube), ("volume", volume)) if on]
    if len(kinds) > 1:
        print_error("choose one of --array, --cube, --volume")
        raise typer.Exit(EXIT_USAGE)
    from .outputs import check_texture_out, newer_than_all, texture_names

    rules = dict(container=container.value, zstd=zstd, skip_existing=skip_existing)
    usage_checked(lambda: check_texture_out(out, **rules))  # before the inputs are read
    items = cli_inputs(images, recursive, pack)
    usage_checked(lambda: check_texture_out(out, **rules, kind=kinds[0] if kinds else None, inputs=len(items)))
    try:
        names, _ = texture_names(out, [i.path for i in items])  # created, stale temporaries swept
    except GputexError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_FAILED)
    opts = build_options(format=format, color_space=color_space.value if color_space else None,
                    flip_y=flip_y, premultiply=premultiply, exif_rotate=not no_exif_rotate,
                    budget=budget << 20, upload_path=upload_path.value, max_pixels=max_pixels,
                    max_ratio=max_ratio, mips=mips or levels is not None, mip_levels=levels,
                    mip_options=mip_kwargs(filter, alpha, alpha_coverage, normal_map, wrap),
                    out=out, container=container.value, zstd=zstd, skip_existing=skip_existing,
                    transform=transform, quality=quality.strip().lower(), report=report, verify=verify)
    from .cli_scale import manifest_for

    mf = manifest_for("upload", manifest, out)  # before any work: an option it cannot key is exit 2
    if kinds:
        bad = [i for i in items if i.error]
        if bad:
            print_error(bad[0].error)
            raise typer.Exit(EXIT_FAILED)
        if any(getattr(i, "sources", None) for i in items):
            print_error(f"--{kinds[0]} assembles image files; --pack makes one texture of its own")
            raise typer.Exit(EXIT_USAGE)
        if skip_existing and newer_than_all(out, [i.path for i in items]):
            if not quiet:
                typer.echo(f"{out}: up to date")
            raise typer.Exit(EXIT_OK)
        from .assembly import assemble_file

        session = open_session(adapter, backend)
        result = assemble_file(session, [i.path for i in items], kinds[0], opts)
        written = mf is None or mf([result], session, inputs=[i.path for i in items])
        if as_json:
            d = result.as_dict()
            d["adapter"] = session.name
            typer.echo(json.dumps(d))
        elif not quiet:
            render_upload([result], session)
        if not result.ok:
            print_error(result.error or "failed")
        from .errors import UsageError

        raise typer.Exit(EXIT_OK if result.ok and written else EXIT_USAGE if isinstance(result.exception, UsageError)
                         else EXIT_FAILED)
    from .run import stages

    code = run_batch(items, as_json, None, render_upload, jobs=jobs, adapter_line=True,
                      steps=stages("upload", opts, names), adapter=adapter, backend=backend, workers=workers,
                      manifest=mf, memory=memory)
    raise typer.Exit(code)


@app.command(cls=Command, epilog="""\b
Examples:
  gputex capture photo.png -o out/
  gputex capture 'assets/**/*.png' -o out/ --mips --level all --sheet
  gputex capture photo.png --resize 512x0 --mips --level 1 -o small.png""")
def capture(
    sources: Optional[List[str]] = typer.Argument(None, metavar="IMAGE",
                                                  help="Image or texture files (globs, @list, - for stdin)."),
    out: str = typer.Option(..., "--out", "-o", metavar="PATH",
                            help="Output folder (created if missing), or FILE.png/.tiff/.npy for a "
                                 "capture with exactly one output."),
    format: Optional[str] = FormatOpt,
    color_space: Optional[ColorSpace] = SpaceOpt,
    level: str = typer.Option(default("capture", "level"), "--level", metavar="N|all", help="Mip level to write, or all of them.",
                              callback=check_level),
    mips: bool = MipsOpt, levels: Optional[int] = LevelsOpt, filter: Filter = FilterOpt,
    alpha: Alpha = AlphaOpt, alpha_coverage: Optional[float] = CoverageOpt,
    normal_map: bool = NormalOpt, wrap: Wrap = WrapOpt,
    sheet: bool = typer.Option(False, "--sheet",
                               help="Also write <stem>_sheet.png: every level side by side, whatever --level "
                                    "writes."),
    flip_y: bool = typer.Option(False, "--flip-y", help="Upload rows bottom to top."),
    premultiply: bool = typer.Option(False, "--premultiply",
                                     help="Multiply colour by alpha before upload (in linear light for sRGB content)."),
    no_exif_rotate: bool = typer.Option(False, "--no-exif-rotate", help="Keep the stored orientation."),
    float_as: FloatAs = typer.Option(FloatAs(default("capture", "float_as")), "--float-as", metavar=choices_metavar(FloatAs),
                                     help="Float textures as tiff (exact), npy (exact), exr (exact), "
                                          "hdr (RGBE) or png (16-bit, clamped)."),
    png_compression: str = typer.Option(default("capture", "png_compression"), "--png-compression", metavar="fast|0-9",
                                        help="fast (fpng for 8-bit RGB/RGBA, else zlib 1) or a zlib level."),
    bc_decode: BCDecode = typer.Option(BCDecode(default("capture", "bc_decode")), "--bc-decode", metavar=choices_metavar(BCDecode),
                                       help="BC1-BC5 files: spec (the specification's arithmetic, the same on "
                                            "every GPU) or sampler (this GPU's texture units)."),
    budget: int = BudgetOpt, upload_path: UploadPath = PathOpt, max_pixels: Optional[int] = MaxPixelsOpt,
    max_ratio: Optional[float] = MaxRatioOpt, recursive: bool = RecursiveOpt, jobs: int = JobsOpt,
    skip_existing: bool = typer.Option(False, "--skip-existing",
                                       help="Skip inputs whose output exists and is newer (incremental builds)."),
    workers: Optional[int] = WorkersOpt,
    manifest: Optional[str] = ManifestOpt, threads: Optional[int] = ThreadsOpt, memory: Optional[int] = MemoryOpt,
    fsync: bool = FsyncOpt,
    as_json: bool = JsonOpt, adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    debug: bool = DebugOpt,
    quiet: bool = QuietOpt, verbose: bool = VerboseOpt, levels_alias: Optional[int] = LevelsAliasOpt,
    resize: Optional[str] = ResizeOpt, max_size: Optional[int] = MaxSizeOpt, pot: bool = PotOpt,
    swizzle: Optional[str] = SwizzleOpt, pack: Optional[List[str]] = PackOpt,
) -> None:
    """Put images on the GPU and write back exactly what it holds.

    Inputs: files, quoted globs, folders with -r (their tree is kept under -o),
    @listfile, and - (paths on stdin). Names in the -o folder: <stem>.png for
    level 0 of a one-level texture, otherwise <stem>_level<L>.png; with --sheet
    also <stem>_sheet.png. A stem already used in this run gets -2, -3, ... Float
    data is written as .tiff (or .npy), integer data PNG cannot hold as .npy.
    -o FILE.png (or .tiff, .npy) takes a capture of exactly one output.
    """
    cli_state.update(debug=debug, quiet=quiet, verbose=verbose)
    durable(fsync)
    levels = levels or levels_alias
    transform = build_transform(resize, max_size, pot, swizzle)
    validate_format(format)
    if png_compression != "fast" and not (png_compression.isdigit() and int(png_compression) <= 9):
        print_error(f"--png-compression must be 'fast' or 0-9, got {png_compression!r}")
        raise typer.Exit(EXIT_USAGE)
    from .caps import cap_jobs

    jobs = cap_jobs(jobs, threads)
    budget = min(budget, max(1, memory // 4)) if memory else budget
    items = cli_inputs(sources, recursive, pack)
    from .outputs import SingleOutput

    single = os.path.splitext(out)[1].lower() in SingleOutput.SUFFIXES and not os.path.isdir(out)
    if single:
        why = ("it takes one input" if len(items) > 1 else
               "--sheet adds a second output" if sheet else
               "--level all with a mip chain writes several" if level == "all" and (mips or levels) else "")
        if why:
            print_error(f"{out}: one output file, but {why}; give -o a folder")
            raise typer.Exit(EXIT_USAGE)
        float_as = FloatAs({".png": "png", ".npy": "npy", ".exr": "exr", ".hdr": "hdr"}.get(
            os.path.splitext(out)[1].lower(), "tiff"))
    folder = (os.path.dirname(out) or ".") if single else out
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        print_error(f"{folder}: cannot create output folder ({e.strerror or e})")
        raise typer.Exit(EXIT_FAILED)
    if not os.access(folder, os.W_OK):
        print_error(f"{folder}: output folder is not writable")
        raise typer.Exit(EXIT_FAILED)
    from .cli_scale import manifest_for
    from .outputs import OutputNames
    from .run import stages

    opts = build_options(format=format, color_space=color_space.value if color_space else None,
                    flip_y=flip_y, premultiply=premultiply, exif_rotate=not no_exif_rotate,
                    budget=budget << 20, upload_path=upload_path.value, max_pixels=max_pixels,
                    max_ratio=max_ratio, mips=mips or levels is not None, mip_levels=levels, level=level,
                    float_as=float_as.value, png_level=None if png_compression == "fast" else int(png_compression),
                    sheet=sheet, skip_existing=skip_existing, bc_decode=bc_decode.value, transform=transform,
                    mip_options=mip_kwargs(filter, alpha, alpha_coverage, normal_map, wrap))
    inputs = [p for i in items for p in (getattr(i, "sources", None) or [i.path])]
    names = SingleOutput(out, inputs) if single else OutputNames(out, inputs)
    # the run sweeps the folder, starts the codec workers, then makes the device on its own thread
    code = run_batch(items, as_json, None, render_capture, jobs=jobs, steps=stages("capture", opts, names),
                      adapter=adapter, backend=backend, workers=workers, sweep=[folder],
                      manifest=manifest_for("capture", manifest, None), memory=memory)
    raise typer.Exit(code)


from .cli_files import info, layout, validate  # noqa: E402,F401  (gputex.cli.<command>)
from .cli_files import register as _register_files  # noqa: E402
from .cli_report import compare, stats  # noqa: E402,F401  (gputex.cli.<command>)
from .cli_report import register as _register_report  # noqa: E402
from .cli_scale import register as _register_scale  # noqa: E402  (serve, key)

_register_report(app)
_register_files(app)

_register_scale(app)


def _quiet_libraries(debug: bool) -> None:
    """Pillow logs and warns about corrupt files on stderr; gputex reports one line itself."""
    if debug:
        return
    import logging
    import warnings

    pil = logging.getLogger("PIL")
    pil.addHandler(logging.NullHandler())
    pil.propagate = False
    warnings.filterwarnings("ignore", module=r"PIL\..*")


def _stdout_gone() -> bool:
    """True when stdout is a pipe whose reader has gone (``| head``)."""
    try:
        import select

        poll = select.poll()
        poll.register(sys.__stdout__.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poll.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _quiet_stdout() -> None:
    """stdout's reader is gone: point it at /dev/null so the exit flush raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


class _Done(SystemExit):
    """:func:`main`'s normal end (every output written): :func:`console` ends the process leanly
    on it; a program that calls ``main()`` itself gets an ordinary SystemExit."""


def console() -> None:
    """The ``gputex`` command (the console script and ``python -m gputex``, through
    :func:`gputex.start.console`, which reads a large single input ahead first): :func:`main`, then,
    where the run ended normally, the lean exit (:func:`_lean_exit`).

    OpenBLAS (numpy's) is held to one thread unless ``OPENBLAS_NUM_THREADS`` says otherwise:
    its pool starts with numpy and spins waiting for work the command never gives it (one
    luma matrix-vector product is gputex's only BLAS call), taking ~40 ms of CPU from the
    decode and lavapipe in a 2048² ``upload -o`` on two cores; the codec worker processes
    inherit the setting. ``upload`` and ``capture`` start with the cyclic garbage collector
    paused until their session is ready (:func:`gputex.device.pause_gc`)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before anything imports numpy
    if sys.argv[1:2] in (["upload"], ["capture"]):
        from .device import pause_gc, prestart

        pause_gc()  # until the run's session is ready
        try:
            early = _prestart(sys.argv[1])
            if sys.argv[1] == "upload":  # read by the batch's split, once its decode workers run
                from .devflags import SLOTS_AT, SPLIT_DEVICE, choice_flag

                choice_flag("GPUTEX_GPU_SLOTS_AT", SLOTS_AT)
                choice_flag("GPUTEX_SPLIT_DEVICE", SPLIT_DEVICE)
        except UsageError as e:
            print(f"gputex: {e}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        if early and not {"--help", "-h"} & set(sys.argv[2:]):  # wgpu imported, adapters listed meanwhile
            prestart(enumerate_adapters=not os.environ.get("GPUTEX_BACKEND") and not any(
                a == "--backend" or a.startswith("--backend=") for a in sys.argv[2:]))
    try:
        main()
    except _Done as e:
        _lean_exit(e.code if isinstance(e.code, int) else EXIT_OK)


def _prestart(command: str) -> bool:
    """Whether ``command`` begins wgpu's import and the adapter list on a thread at once
    (``GPUTEX_PRESTART`` 1 or 0, else :class:`UsageError`; default: yes, but not for an
    ``upload`` command line taken for a batch, whose workers' fork server started: there that
    thread's Python (wgpu's import and C types, 0.24 s of CPU on the H200 host) held the GIL
    while the main thread was on its way to the workers' first decodes; the batch's device is
    made once they are asked for, ``run.run``'s ``begin``. ``capture`` batches keep it: not
    measured for them), nor for an ``upload`` whose files the host engine likely makes with no
    device (:func:`gputex.early.host_likely`)."""
    from .devflags import flag
    from .early import started

    value = flag("GPUTEX_PRESTART")
    if value is not None and value not in ("0", "1"):
        raise UsageError(f"GPUTEX_PRESTART must be 0 or 1, got {value!r}")
    if value is not None:
        return value == "1"
    from .early import host_likely

    return not (command == "upload" and (started() or host_likely(sys.argv[1:])))


def main() -> None:
    """The ``gputex`` command's work; ends with SystemExit (the exit code) and never ends the
    process itself, so a program or test may call it and go on."""
    debug = "--debug" in sys.argv
    _quiet_libraries(debug)
    for stream in (sys.stdout, sys.stderr):  # names that are not UTF-8 print as their own bytes
        try:
            stream.reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError):
            pass
    try:
        code = _app_for(sys.argv[1:])(standalone_mode=False)
    except typer.Exit as e:
        if e.exit_code in (EXIT_INTERRUPTED, 143):
            _settle()
            sys.exit(e.exit_code)
        raise _Done(e.exit_code) from None
    except BrokenPipeError:  # `gputex info | head -2`: the reader has all it wanted
        _quiet_stdout()
        sys.exit(EXIT_OK)
    except SystemExit as e:
        if e.code == EXIT_FAILED and _stdout_gone():  # typer's own handling of the same (exit 1)
            _quiet_stdout()
            sys.exit(EXIT_OK)
        raise
    except KeyboardInterrupt:
        print_error("interrupted")
        _settle()
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit:  # noqa: B025 - an exit raised by the handlers above passes through
        raise
    except Exception as e:  # click usage errors (typer may vendor click) and anything unexpected
        if type(e).__name__ == "Abort":  # click's wrapper around KeyboardInterrupt
            print_error("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        if hasattr(e, "show") and hasattr(e, "exit_code"):
            e.show()
            sys.exit(EXIT_USAGE)
        if debug:
            raise
        print_error(f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)")
        sys.exit(EXIT_FAILED)
    if code == EXIT_INTERRUPTED and not cli_state.get("announced"):  # typer turned a Ctrl-C into 130
        print_error("interrupted")
    if code in (EXIT_INTERRUPTED, 143):
        _settle()
        sys.exit(code)
    raise _Done(code if isinstance(code, int) else EXIT_OK)


def _app_for(args: list[str]) -> typer.Typer:
    """The app to run for the command line ``args``: where it names one of the commands, an app of
    that command alone, else the whole app (the group's help, a misspelt command, shell completion).
    Typer builds a click command from every registered command's signature each time the app runs
    (``typer.main.get_group``: 9 commands, their 130-odd options' types and defaults), and the one
    being run is all a command line needs: the batch's workers are asked for that much sooner
    (issue 13; the same parsing, help and errors for the command)."""
    if not args or args[0].startswith("-") or any(k.endswith("_COMPLETE") for k in os.environ):
        return app
    from copy import copy

    from typer.main import get_command_name

    picked = [c for c in app.registered_commands
              if (c.name or get_command_name(getattr(c.callback, "__name__", ""))) == args[0]]
    if len(picked) != 1:
        return app
    one = copy(app)
    one.registered_commands = picked
    return one


def _lean_exit(code: int) -> None:
    """Exit with ``code`` once the run is over, skipping the interpreter's teardown.

    Every output is written and linked by now, so what a normal exit still does is free memory
    and drop wgpu objects one by one (the device, the adapter, cached pipelines and buffers):
    0.15 s of a 2048² ``upload -o`` on lavapipe, for nothing the user sees. So the streams are
    flushed, the idle copy pool stopped (:func:`gputex.parallel.shutdown`), the ``atexit``
    handlers run (weakref finalizers: shared-memory files unlinked), and the process ends with
    ``os._exit``. Where a non-daemon thread is still alive (work this
    does not know about) or a flush fails (a closed pipe), the normal exit runs instead.
    """
    import threading

    parallel = sys.modules.get("gputex.parallel")
    if parallel is not None:  # the copy pool's idle threads are not daemons: stop them first
        parallel.shutdown()
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others or "gputex.device" not in sys.modules:  # no device made: the normal exit is quick
        _settle()  # (a device prestarted: its thread may be inside wgpu-native)
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - the normal exit reports or quiets it as before
        sys.exit(code)
    import atexit
    import time

    t0 = time.time()
    atexit._run_exitfuncs()
    trace = sys.modules.get("gputex.trace")
    if trace is not None:  # GPUTEX_TRACE: the process ends here (what is left is the kernel's teardown)
        trace.mark("exit", t0)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _settle() -> None:
    """A stopped run waits for a device still being made (gputex.device.settle) before exiting."""
    device = sys.modules.get("gputex.device")
    if device is not None:
        try:
            device.settle()
        except BaseException:  # a second Ctrl-C while waiting: exit all the same
            pass
