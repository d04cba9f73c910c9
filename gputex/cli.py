"""gputex command line: a thin Typer layer over the library.

Each command parses its flags, calls the library, and renders the result. Exit codes
are decided here and nowhere else. Nothing heavy (wgpu, numpy, rich) is imported at
module level, so ``gputex --help`` answers fast.
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from typing import List, Optional

import typer

from .errors import GputexError, NoAdapterError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_CODES = (
    "Exit codes: 0 every input ok; 1 one or more inputs failed (the others are still "
    "processed); 2 usage error; 3 no usable GPU adapter or device; 130 interrupted (Ctrl-C); "
    "143 terminated (SIGTERM)."
)

app = typer.Typer(
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


class _Command(typer.core.TyperCommand):
    """Arguments as git and ruff show them: ``IMAGE...`` in the usage line and the list,
    ``[FILE]...`` when optional, no type labels."""

    @staticmethod
    def _arg(param, usage: bool) -> str:
        name = param.metavar or param.name.upper()
        many = param.nargs != 1
        if usage and not param.required:
            return f"[{name}]" + ("..." if many else "")
        return name + ("..." if many else "")

    def collect_usage_pieces(self, ctx):
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(self._arg(param, usage=True))
        return pieces

    def format_options(self, ctx, formatter) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((self._arg(param, usage=False), param.help or ""))
            else:
                opts.append(record)
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


def version_line() -> str:
    """``gputex X.Y.Z``."""
    from . import __version__

    return f"gputex {__version__}"


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", "-V", callback=_show_version, is_eager=True,
                                            help="Print the version and exit.")) -> None:
    """Move images into GPU textures and back, exactly."""


class ColorSpace(str, Enum):
    srgb = "srgb"
    linear = "linear"


class UploadPath(str, Enum):
    auto = "auto"
    write_texture = "write_texture"
    staging = "staging"


class FloatAs(str, Enum):
    tiff = "tiff"
    npy = "npy"
    png = "png"
    exr = "exr"
    hdr = "hdr"


class Filter(str, Enum):
    box = "box"
    kaiser = "kaiser"
    lanczos = "lanczos"


class Alpha(str, Enum):
    weighted = "weighted"
    straight = "straight"
    premultiplied = "premultiplied"


class BCDecode(str, Enum):
    spec = "spec"
    sampler = "sampler"


class Container(str, Enum):
    ktx2 = "ktx2"
    dds = "dds"


class Wrap(str, Enum):
    clamp = "clamp"
    repeat = "repeat"
    mirror = "mirror"


_state = {"debug": False}

def _choices(enum) -> str:
    """The metavar of an enum option: its choices, ``[a|b|c]``."""
    return "[" + "|".join(e.value for e in enum) + "]"


class Backend(str, Enum):
    vulkan = "vulkan"
    metal = "metal"
    dx12 = "dx12"
    gl = "gl"


def _check_backend(value: Optional[str]) -> Optional[str]:
    if value is not None and value.lower() not in [b.value for b in Backend]:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(b.value for b in Backend)}.")
    return value.lower() if value else None


AdapterOpt = typer.Option(None, "--adapter", envvar="GPUTEX_ADAPTER", metavar="NAME",
                          help="Use the adapter whose name contains NAME (case-insensitive).")
BackendOpt = typer.Option(None, "--backend", envvar="GPUTEX_BACKEND", metavar=_choices(Backend),
                          callback=_check_backend, help="Only adapters of this backend.")
JsonOpt = typer.Option(False, "--json", help="One JSON object per input on stdout.")
DebugOpt = typer.Option(False, "--debug", help="Show tracebacks.")
QuietOpt = typer.Option(False, "--quiet", "-q", help="Print errors only.")
VerboseOpt = typer.Option(False, "--verbose", "-v", help="Also print the adapter and each input's stage timings.")
FormatOpt = typer.Option(None, "--format", "-f", metavar="FORMAT",
                         help="Texture format, e.g. rgba16float (default: chosen from the image).")
SpaceOpt = typer.Option(None, "--color-space", metavar=_choices(ColorSpace),
                        help="How the data is meant (default: from the file).")
BudgetOpt = typer.Option(64, "--budget", min=1, metavar="MIB", help="Host staging memory per transfer, MiB.")
PathOpt = typer.Option(UploadPath.auto, "--upload-path", metavar=_choices(UploadPath),
                       help="How pixels reach the GPU (auto: by size).")
MaxPixelsOpt = typer.Option(None, "--max-pixels", min=1, metavar="N",
                            help="Refuse images above N pixels (default 16384^2).")
WorkersOpt = typer.Option(None, "--workers", min=0, metavar="N", show_default="from --jobs",
                          help="Codec worker processes per kind (0: codecs in threads; default --jobs from 3 "
                               "jobs and 2 inputs up).")
RecursiveOpt = typer.Option(False, "--recursive", "-r", help="Take the images in folders (tree kept under -o).")
JobsOpt = typer.Option(os.cpu_count() or 1, "--jobs", "-j", min=1, metavar="N", show_default="the cores",
                       help="Decode/encode workers: threads for 1-2 jobs or one input, else N decoding and "
                            "N encoding processes.")
UploadJobsOpt = typer.Option(os.cpu_count() or 1, "--jobs", "-j", min=1, metavar="N", show_default="the cores",
                             help="Decode threads (upload runs no encodes).")
ThreadsOpt = typer.Option(None, "--threads", min=1, metavar="N",
                          help="Cap every pool (codecs, copies, PNG deflate, lavapipe) at N threads; --jobs is "
                               "held to it.")
MemoryOpt = typer.Option(None, "--memory", min=1, metavar="MIB",
                         help="Cap the decoded images in flight at MIB (one larger image still runs, alone).")
ManifestOpt = typer.Option(None, "--manifest", metavar="FILE",
                           help="Write FILE.json: per output its cache key (see gputex key), SHA-256, adapter, "
                                "driver and timings.")
MaxRatioOpt = typer.Option(None, "--max-ratio", min=0, metavar="R",
                           help="Refuse images decoding to >64 MiB and more than R times their file size "
                                "(default 1000; 0: no limit).")


def _err(message: str) -> None:
    typer.echo(f"gputex: {_printable(message)}", err=True)


def _printable(text: str) -> str:
    """One line, whatever the names in it: control characters (a newline in a file name) and
    bytes that are not UTF-8 (kept by Python as surrogates) are shown as backslash escapes."""
    import re

    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    text = raw.decode("utf-8", "backslashreplace")
    return re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", lambda m: repr(m.group())[1:-1], text)


def _session(adapter: Optional[str], backend: Optional[str], soon=None):
    """The Session (``soon``: a Future of one, from :func:`gputex.device.session_soon`);
    adapter and usage errors end the command with their exit codes."""
    from .device import Session

    try:
        return soon.result() if soon is not None else Session(adapter=adapter, backend=backend)
    except NoAdapterError as e:
        _err(str(e))
        raise typer.Exit(EXIT_NO_GPU)
    except ValueError as e:
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)


def _validate_format(name: Optional[str], encode: bool = False) -> None:
    """Exit 2 unless ``name`` is a format gputex fills from images (``encode``: or BC-encodes)."""
    if name is None:
        return
    from .formats import get_format

    try:
        fmt = get_format(name)
    except GputexError as e:
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)
    from .bcenc import ENCODERS

    if not fmt.image and encode and fmt.name not in ENCODERS and fmt.name.startswith("bc"):
        _err(f"format {fmt.name} is not encoded by gputex yet; it encodes {', '.join(ENCODERS)}")
        raise typer.Exit(EXIT_USAGE)
    if not fmt.image and not (encode and fmt.name in ENCODERS):
        from .formats import IMAGE_FORMATS

        also = f" (block-compressed: {', '.join(ENCODERS)})" if encode else ""
        _err(f"format {fmt.name} cannot be filled from an image; use one of: {', '.join(IMAGE_FORMATS)}{also}")
        raise typer.Exit(EXIT_USAGE)


def _validate_encoding(format: Optional[str], quality: str, report: bool, *, volume: bool, **options) -> None:
    """Exit 2 for --quality/--report without a BC format gputex encodes, or options that do not fit it."""
    from .bcenc import check_options, encodable, parse_quality

    try:
        parse_quality(quality)
    except GputexError as e:
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)
    if not (format and encodable(format)):
        if report or quality.strip().lower() != "normal":
            _err(f"{'--report' if report else '--quality'} applies to block compression; add --format "
                 "bc1-rgba-unorm (or bc3/bc4/bc5)")
            raise typer.Exit(EXIT_USAGE)
        return
    problem = check_options(format, **options)
    if problem is None and volume:
        problem = f"--volume with {format}: WebGPU has no 3D BC textures (texture-compression-bc-sliced-3d)"
    if problem:
        _err(problem)
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


def _inputs(args: Optional[List[str]], recursive: bool, packs: Optional[List[str]] = None):
    from .batch import expand_inputs

    items = expand_inputs(args or [], recursive)
    if packs:
        from .transform import pack_item

        try:
            items += [pack_item(spec) for spec in packs]
        except GputexError as e:
            _err(str(e))
            raise typer.Exit(EXIT_USAGE)
    if not items:
        _err("no inputs")
        raise typer.Exit(EXIT_USAGE)
    return items


def _run_batch(items, as_json: bool, session, render, *, jobs: int = 1, steps=None, one=None,
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
    quiet, verbose = _state.get("quiet", False), _state.get("verbose", False)
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
            d["adapter"] = session.name
            typer.echo(json.dumps(d))
        elif not quiet:
            if (adapter_line or verbose) and not state["header"]:
                state["header"] = True
                typer.echo(f"adapter: {session.name}")
            render([result], session)
        if not result.ok:
            state["failed"] += 1
            if _state["debug"] and result.exception is not None:
                import traceback

                traceback.print_exception(result.exception, file=sys.stderr)
            _err(result.error or f"{result.source}: failed")
        if not quiet:
            for w in result.warnings:
                _err(f"warning: {w}")
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
                _err(str(e))
                raise typer.Exit(EXIT_NO_GPU if isinstance(e, NoAdapterError) else EXIT_USAGE)
        if state["stop"] and len(results) < len(items):
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        if bar:
            bar.stop()
            bar = None
        ok = sum(1 for r in results if r.ok)
        how = "terminated" if state["stop"] == getattr(signal, "SIGTERM", None) else "interrupted"
        _state["announced"] = True
        _err(f"{how} after {len(results)} of {len(items)} inputs ({ok} ok, {state['failed']} failed); "
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
        _err(f"{len(results) - state['failed'] - skipped} ok, {state['failed']} failed"
             + (f", {skipped} up to date" if skipped else "")
             + f", {secs:.2f} s, {state['bytes'] / max(secs, 1e-9) / 1e6:.0f} MB/s")
    from .errors import UsageError

    if any(isinstance(r.exception, UsageError) for r in results):
        return EXIT_USAGE
    return EXIT_FAILED if state["failed"] else EXIT_OK


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _options(**kw):
    from .pipeline import Options

    return Options(**kw)


def _mip_kwargs(filter: Filter, alpha: Alpha, alpha_coverage, normal_map: bool, wrap: Wrap):
    from .pipeline import MipOptions

    return MipOptions(filter=filter.value, alpha=alpha.value, alpha_coverage=alpha_coverage, normal_map=normal_map,
                      wrap=wrap.value)


def _transform(resize: Optional[str], max_size: Optional[int], pot: bool, swizzle: Optional[str]):
    """The --resize/--max-size/--pot/--swizzle flags as a :class:`gputex.transform.Transform`
    (None when none is given); a malformed value is a usage error."""
    if resize is None and max_size is None and not pot and swizzle is None:
        return None
    from .transform import Transform, check_swizzle, parse_size

    try:
        return Transform(resize=parse_size(resize) if resize is not None else None, max_size=max_size, pot=pot,
                         swizzle=check_swizzle(swizzle) if swizzle is not None else None)
    except GputexError as e:
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)


MipsOpt = typer.Option(False, "--mips", help="Generate the mip chain on the GPU.")
LevelsOpt = typer.Option(None, "--mip-count", min=1, metavar="N",
                         help="Make N mip levels (implies --mips; default: the full chain).")
LevelsAliasOpt = typer.Option(None, "--levels", min=1, hidden=True)  # the old name of --mip-count
FilterOpt = typer.Option(Filter.box, "--filter", metavar=_choices(Filter),
                         help="Mip filter: box (exact area average) or a radius-3 kernel.")
AlphaOpt = typer.Option(Alpha.weighted, "--alpha", metavar=_choices(Alpha),
                        help="How mips treat alpha: weighted averages colour by alpha.")
CoverageOpt = typer.Option(None, "--alpha-coverage", min=0.0, max=1.0, metavar="CUTOFF",
                           help="Keep the fraction of texels with alpha >= CUTOFF that level 0 has.")
NormalOpt = typer.Option(False, "--normal-map",
                         help="Data is a normal map: linear (as --color-space linear); renormalize each level.")
WrapOpt = typer.Option(Wrap.clamp, "--wrap", metavar=_choices(Wrap),
                       help="Edge handling for kernels wider than the footprint.")
ResizeOpt = typer.Option(None, "--resize", metavar="WxH",
                         help="Resize level 0 to W x H on the GPU with --filter (a 0 side keeps the "
                              "aspect ratio).")
MaxSizeOpt = typer.Option(None, "--max-size", min=1, metavar="N",
                          help="Scale down on the GPU so neither side exceeds N (aspect ratio kept).")
PotOpt = typer.Option(False, "--pot", help="Resize each side to the nearest power of two (ties up).")
SwizzleOpt = typer.Option(None, "--swizzle", metavar="SPEC",
                          help="Reorder channels: 1-4 of r g b a 0 1, e.g. bgra, rrr1, rgb1.")
PackOpt = typer.Option(None, "--pack", metavar="SPEC",
                       help="One texture from channels of several images, e.g. "
                            "r=rough.png,g=metal.png,b=ao.png:g (repeatable).")


@app.command(cls=_Command, epilog="""\b
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
    container: Container = typer.Option(Container.ktx2, "--container", metavar=_choices(Container),
                                        help="The file type with -o FOLDER."),
    zstd: Optional[int] = typer.Option(None, "--zstd", min=1, max=22, metavar="LEVEL",
                                       help="KTX2: Zstandard-supercompress each level (1-22)."),
    skip_existing: bool = typer.Option(False, "--skip-existing",
                                       help="With -o: skip inputs whose texture file exists and is newer."),
    array: bool = typer.Option(False, "--array", help="All inputs become the layers of one 2D array texture."),
    cube: bool = typer.Option(False, "--cube", help="Inputs are cube faces +x -x +y -y +z -z (6 per cube)."),
    volume: bool = typer.Option(False, "--volume", help="Inputs are the depth slices of one 3D texture."),
    manifest: Optional[str] = ManifestOpt, threads: Optional[int] = ThreadsOpt, memory: Optional[int] = MemoryOpt,
    verify: Optional[bool] = typer.Option(None, "--verify/--no-verify", show_default="on, off with -o",
                                          help="Read the texture back and compare it with what was sent; "
                                               "off by default when -o writes a file (the check costs a "
                                               "read-back of level 0)."),
    workers: Optional[int] = WorkersOpt,
    quality: str = typer.Option("normal", "--quality", metavar="fast|normal|best",
                                help="BC encoding effort (--format bc*; or 0, 1, 2)."),
    report: bool = typer.Option(False, "--report", help="BC encoding: print the PSNR of every level against "
                                "its source."),
    as_json: bool = JsonOpt, adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    debug: bool = DebugOpt,
    quiet: bool = QuietOpt, verbose: bool = VerboseOpt, levels_alias: Optional[int] = LevelsAliasOpt,
    resize: Optional[str] = ResizeOpt, max_size: Optional[int] = MaxSizeOpt, pot: bool = PotOpt,
    swizzle: Optional[str] = SwizzleOpt, pack: Optional[List[str]] = PackOpt,
) -> None:
    """Upload images and verify the GPU holds them exactly.

    Reads the texture back and compares it with what was sent, and shows the copy
    layout (row pitch, padding, staging). Texture files (KTX2, KTX, DDS) are uploaded
    as stored. With -o the texture, mips included, is written as KTX2 or DDS;
    --format bc1/bc3/bc4/bc5/bc6h/bc7-* encodes its blocks on the GPU.
    """
    _state.update(debug=debug, quiet=quiet, verbose=verbose)
    levels = levels or levels_alias
    transform = _transform(resize, max_size, pot, swizzle)
    _validate_format(format, encode=True)
    _validate_encoding(format, quality, report, normal_map=normal_map, alpha=alpha.value,
                       alpha_coverage=alpha_coverage, premultiply=premultiply,
                       color_space=color_space.value if color_space else None, volume=volume)
    from .caps import cap_jobs

    jobs = cap_jobs(jobs, threads)
    budget = min(budget, max(1, memory // 4)) if memory else budget
    kinds = [k for k, on in (("array", array), ("cube", cube), ("volume", volume)) if on]
    if len(kinds) > 1:
        _err("choose one of --array, --cube, --volume")
        raise typer.Exit(EXIT_USAGE)
    from .outputs import check_texture_out, newer_than_all, texture_names

    rules = dict(container=container.value, zstd=zstd, skip_existing=skip_existing)
    _usage(lambda: check_texture_out(out, **rules))  # before the inputs are read
    items = _inputs(images, recursive, pack)
    _usage(lambda: check_texture_out(out, **rules, kind=kinds[0] if kinds else None, inputs=len(items)))
    try:
        names, _ = texture_names(out, [i.path for i in items])  # created, stale temporaries swept
    except GputexError as e:
        _err(str(e))
        raise typer.Exit(EXIT_FAILED)
    opts = _options(format=format, color_space=color_space.value if color_space else None,
                    flip_y=flip_y, premultiply=premultiply, exif_rotate=not no_exif_rotate,
                    budget=budget << 20, upload_path=upload_path.value, max_pixels=max_pixels,
                    max_ratio=max_ratio, mips=mips or levels is not None, mip_levels=levels,
                    mip_options=_mip_kwargs(filter, alpha, alpha_coverage, normal_map, wrap),
                    out=out, container=container.value, zstd=zstd, skip_existing=skip_existing,
                    transform=transform, quality=quality.strip().lower(), report=report, verify=verify)
    from .cli_scale import manifest_for

    mf = manifest_for("upload", manifest, out)  # before any work: an option it cannot key is exit 2
    if kinds:
        bad = [i for i in items if i.error]
        if bad:
            _err(bad[0].error)
            raise typer.Exit(EXIT_FAILED)
        if any(getattr(i, "sources", None) for i in items):
            _err(f"--{kinds[0]} assembles image files; --pack makes one texture of its own")
            raise typer.Exit(EXIT_USAGE)
        if skip_existing and newer_than_all(out, [i.path for i in items]):
            if not quiet:
                typer.echo(f"{out}: up to date")
            raise typer.Exit(EXIT_OK)
        from .assembly import assemble_file

        session = _session(adapter, backend)
        result = assemble_file(session, [i.path for i in items], kinds[0], opts)
        written = mf is None or mf([result], session, inputs=[i.path for i in items])
        if as_json:
            d = result.as_dict()
            d["adapter"] = session.name
            typer.echo(json.dumps(d))
        elif not quiet:
            _render_upload([result], session)
        if not result.ok:
            _err(result.error or "failed")
        from .errors import UsageError

        raise typer.Exit(EXIT_OK if result.ok and written else EXIT_USAGE if isinstance(result.exception, UsageError)
                         else EXIT_FAILED)
    from .run import stages

    code = _run_batch(items, as_json, None, _render_upload, jobs=jobs, adapter_line=True,
                      steps=stages("upload", opts, names), adapter=adapter, backend=backend, workers=workers,
                      manifest=mf, memory=memory)
    raise typer.Exit(code)


def _usage(check) -> None:
    """Run ``check()``; its :class:`~gputex.errors.UsageError` is one line and exit 2."""
    from .errors import UsageError

    try:
        check()
    except UsageError as e:
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)


def _render_upload(results, session) -> None:
    for r in results:
        if r.skipped:
            typer.echo(f"{r.source}: up to date")
            continue
        if not (r.ok or r.layout):
            continue
        lay = r.layout
        typer.echo(
            f"{r.source}: {r.format} {r.width}x{r.height} ({r.color_space}), {lay['data_bytes']} bytes; "
            f"write_texture bytes_per_row {lay['bytes_per_row']}; capture bytes_per_row "
            f"{lay['padded_bytes_per_row']} (+{lay['padding_per_row']} padding per row), staging "
            f"{lay['staging_bytes']} bytes; path {r.upload_path}; "
            + (f"resized from {r.resized_from[0]}x{r.resized_from[1]}" if r.resized_from
               else "exact round trip" if r.verified else "not verified" if r.verified is None else "MISMATCH")
            + (f"; {r.texture}" if r.texture and r.texture != "2d" else "")
            + (f"; {r.levels} levels" if r.levels and r.levels > 1 else "")
            + (f" -> {', '.join(r.outputs)}" if r.outputs else "")
            + _timings(r)
        )
        _render_bc_report(r)


def _render_bc_report(r) -> None:
    """``--report``: one line per encoded level (and layer)."""
    for row in r.bc_report or []:
        typer.echo(f"  {r.format} level {row['level']}" + (f" layer {row['layer']}" if "layer" in row else "")
                   + f": PSNR {_fmt_db(row['psnr'])} dB"
                   + (f", alpha {_fmt_db(row['psnr_alpha'])} dB" if "psnr_alpha" in row else "")
                   + (f", SSIM {row['ssim']:.5f}" if row.get("ssim") is not None else ""))


def _timings(r) -> str:
    """With -v: the input's stage timings."""
    if not _state.get("verbose") or not r.timings:
        return ""
    return "  [" + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r.timings.items()) + "]"


@app.command(cls=_Command, epilog="""\b
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
    level: str = typer.Option("0", "--level", metavar="N|all", help="Mip level to write, or all of them."),
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
    float_as: FloatAs = typer.Option(FloatAs.tiff, "--float-as", metavar=_choices(FloatAs),
                                     help="Float textures as tiff (exact), npy (exact), exr (exact), "
                                          "hdr (RGBE) or png (16-bit, clamped)."),
    png_compression: str = typer.Option("fast", "--png-compression", metavar="fast|0-9",
                                        help="fast (fpng for 8-bit RGB/RGBA, else zlib 1) or a zlib level."),
    bc_decode: BCDecode = typer.Option(BCDecode.spec, "--bc-decode", metavar=_choices(BCDecode),
                                       help="BC1-BC5 files: spec (the specification's arithmetic, the same on "
                                            "every GPU) or sampler (this GPU's texture units)."),
    budget: int = BudgetOpt, upload_path: UploadPath = PathOpt, max_pixels: Optional[int] = MaxPixelsOpt,
    max_ratio: Optional[float] = MaxRatioOpt, recursive: bool = RecursiveOpt, jobs: int = JobsOpt,
    skip_existing: bool = typer.Option(False, "--skip-existing",
                                       help="Skip inputs whose output exists and is newer (incremental builds)."),
    workers: Optional[int] = WorkersOpt,
    manifest: Optional[str] = ManifestOpt, threads: Optional[int] = ThreadsOpt, memory: Optional[int] = MemoryOpt,
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
    _state.update(debug=debug, quiet=quiet, verbose=verbose)
    levels = levels or levels_alias
    transform = _transform(resize, max_size, pot, swizzle)
    _validate_format(format)
    if level != "all" and not level.isdigit():
        _err(f"--level must be a number or 'all', got {level!r}")
        raise typer.Exit(EXIT_USAGE)
    if png_compression != "fast" and not (png_compression.isdigit() and int(png_compression) <= 9):
        _err(f"--png-compression must be 'fast' or 0-9, got {png_compression!r}")
        raise typer.Exit(EXIT_USAGE)
    from .caps import cap_jobs

    jobs = cap_jobs(jobs, threads)
    budget = min(budget, max(1, memory // 4)) if memory else budget
    items = _inputs(sources, recursive, pack)
    from .outputs import SingleOutput

    single = os.path.splitext(out)[1].lower() in SingleOutput.SUFFIXES and not os.path.isdir(out)
    if single:
        why = ("it takes one input" if len(items) > 1 else
               "--sheet adds a second output" if sheet else
               "--level all with a mip chain writes several" if level == "all" and (mips or levels) else "")
        if why:
            _err(f"{out}: one output file, but {why}; give -o a folder")
            raise typer.Exit(EXIT_USAGE)
        float_as = FloatAs({".png": "png", ".npy": "npy", ".exr": "exr", ".hdr": "hdr"}.get(
            os.path.splitext(out)[1].lower(), "tiff"))
    folder = (os.path.dirname(out) or ".") if single else out
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        _err(f"{folder}: cannot create output folder ({e.strerror or e})")
        raise typer.Exit(EXIT_FAILED)
    if not os.access(folder, os.W_OK):
        _err(f"{folder}: output folder is not writable")
        raise typer.Exit(EXIT_FAILED)
    from .cli_scale import manifest_for
    from .outputs import OutputNames
    from .run import stages

    opts = _options(format=format, color_space=color_space.value if color_space else None,
                    flip_y=flip_y, premultiply=premultiply, exif_rotate=not no_exif_rotate,
                    budget=budget << 20, upload_path=upload_path.value, max_pixels=max_pixels,
                    max_ratio=max_ratio, mips=mips or levels is not None, mip_levels=levels, level=level,
                    float_as=float_as.value, png_level=None if png_compression == "fast" else int(png_compression),
                    sheet=sheet, skip_existing=skip_existing, bc_decode=bc_decode.value, transform=transform,
                    mip_options=_mip_kwargs(filter, alpha, alpha_coverage, normal_map, wrap))
    inputs = [p for i in items for p in (getattr(i, "sources", None) or [i.path])]
    names = SingleOutput(out, inputs) if single else OutputNames(out, inputs)
    # the run sweeps the folder, starts the codec workers, then makes the device on its own thread
    code = _run_batch(items, as_json, None, _render_capture, jobs=jobs, steps=stages("capture", opts, names),
                      adapter=adapter, backend=backend, workers=workers, sweep=[folder],
                      manifest=manifest_for("capture", manifest, None), memory=memory)
    raise typer.Exit(code)


def _render_capture(results, session) -> None:
    for r in results:
        if r.skipped:
            typer.echo(f"{r.source}: up to date")
        elif r.ok:
            typer.echo(f"{r.source} -> {', '.join(r.outputs)}  ({r.format} {r.width}x{r.height}"
                       + (f" from {r.resized_from[0]}x{r.resized_from[1]}" if r.resized_from else "")
                       + (f", {r.levels} levels" if r.levels and r.levels > 1 else "")
                       + "".join(f"; {n}" for n in r.notes) + ")" + _timings(r))


@app.command(cls=_Command, epilog="""\b
Examples:
  gputex compare a.png b.png
  gputex compare a.png b.png --max-diff 1 --diff-image diff/ab.png""")
def compare(
    a: str = typer.Argument(..., metavar="A", help="First image or texture file."),
    b: str = typer.Argument(..., metavar="B", help="Second image or texture file."),
    level: str = typer.Option("0", "--level", metavar="N|all", help="Level to compare, or all (with --mips)."),
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
    _state.update(debug=debug, quiet=quiet, verbose=verbose)
    _validate_format(format)
    if diff_image is not None and os.path.dirname(diff_image):
        try:
            os.makedirs(os.path.dirname(diff_image), exist_ok=True)
        except OSError as e:
            _err(f"{os.path.dirname(diff_image)}: cannot create output folder ({e.strerror or e})")
            raise typer.Exit(EXIT_FAILED)
    if level != "all" and not level.isdigit():
        _err(f"--level must be a number or 'all', got {level!r}")
        raise typer.Exit(EXIT_USAGE)
    session = _session(adapter, backend)
    from .report import Thresholds, compare_files

    opts = _options(format=format, color_space=color_space.value if color_space else None, mips=mips,
                    level=level, mip_options=_mip_kwargs(filter, alpha, None, False, Wrap.clamp))
    try:
        report = compare_files(session, a, b, opts, Thresholds(max_diff, min_psnr), diff_image)
    except GputexError as e:
        if debug:
            raise
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)
    report["adapter"] = session.name
    if as_json:
        typer.echo(json.dumps(report))
    elif not quiet:
        if verbose:
            typer.echo(f"adapter: {session.name}")
        _render_compare(report)
        if verbose:
            typer.echo(f"compared in {report['compare_seconds'] * 1000:.1f} ms")
    raise typer.Exit(EXIT_OK if report["within"] else EXIT_FAILED)


def _fmt_db(v) -> str:
    return "inf" if v is None else f"{v:.2f}"


def _render_compare(report: dict) -> None:
    names = "rgba"
    for lv in report["levels"]:
        c = lv["channels"]
        ch = names[:c] if c != 2 else "ra"
        per = lambda key, f: ", ".join(f"{ch[i]} {f(lv[key][i])}" for i in range(c))  # noqa: E731
        typer.echo(f"level {lv['level']} {lv['width']}x{lv['height']} {lv['format']}: "
                   f"max diff {per('max_abs_diff', lambda v: f'{v:g}')}; "
                   f"MAE {per('mae', lambda v: f'{v:.6g}')}; MSE {per('mse', lambda v: f'{v:.6g}')}; "
                   f"PSNR {_fmt_db(lv['psnr_all'])} dB ({per('psnr', _fmt_db)}); "
                   f"{lv['differing_texels']} texels differ; SSIM "
                   + ("n/a (under 11x11)" if lv["ssim"] is None else f"{lv['ssim']:.6f}"))
    verdict = "identical" if all(lv["identical"] for lv in report["levels"]) else (
        "within thresholds" if report["within"] else "DIFFERENT")
    typer.echo(f"{report['a']} vs {report['b']}: {verdict} ({report['readback_bytes']} bytes read back)")


@app.command(cls=_Command, epilog="""\b
Examples:
  gputex stats photo.png
  gputex stats height16.png --histogram 64 --json""")
def stats(
    images: List[str] = typer.Argument(..., metavar="IMAGE", help="Image or texture files."),
    histogram: int = typer.Option(0, "--histogram", min=0, max=4096, metavar="BINS",
                                  help="Histogram bins per channel (0: none)."),
    level: str = typer.Option("0", "--level", metavar="N|all", help="Level, or all (with --mips)."),
    format: Optional[str] = FormatOpt,
    color_space: Optional[ColorSpace] = SpaceOpt,
    mips: bool = MipsOpt,
    as_json: bool = JsonOpt, adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    debug: bool = DebugOpt,
    quiet: bool = QuietOpt, verbose: bool = VerboseOpt,
) -> None:
    """Per-channel min, max, mean, std and histogram, on the GPU."""
    _state.update(debug=debug, quiet=quiet, verbose=verbose)
    _validate_format(format)
    if level != "all" and not level.isdigit():
        _err(f"--level must be a number or 'all', got {level!r}")
        raise typer.Exit(EXIT_USAGE)
    session = _session(adapter, backend)
    from .report import stats_file

    opts = _options(format=format, color_space=color_space.value if color_space else None, mips=mips, level=level)
    code = _run_batch(_inputs(images, False), as_json, session, _render_stats,
                      one=lambda p: stats_file(session, p, opts, histogram))
    raise typer.Exit(code)


def _render_stats(results, session) -> None:
    for r in results:
        if not r.ok:
            continue
        for st in r.stats:
            typer.echo(f"{r.source} level {st['level']} {st['width']}x{st['height']} {st['format']}:")
            for i in range(st["channels"]):
                typer.echo(f"  channel {i}: min {st['min'][i]:g} max {st['max'][i]:g} "
                           f"mean {st['mean'][i]:.6g} std {st['std'][i]:.6g}")
                if st["histogram"]:
                    typer.echo(f"    histogram over [{st['histogram_range'][i][0]:g}, "
                               f"{st['histogram_range'][i][1]:g}): {' '.join(map(str, st['histogram'][i]))}")


@app.command(cls=_Command, epilog="""\b
Examples:
  gputex layout 61 37
  gputex layout 1000 1000 --format bc7-rgba-unorm --json""")
def layout(
    width: int = typer.Argument(..., min=1, help="Width in texels."),
    height: int = typer.Argument(..., min=1, help="Height in texels."),
    format: str = typer.Option("rgba8unorm", "--format", "-f", metavar="FORMAT", help="Any WebGPU texture format."),
    layers: int = typer.Option(1, "--layers", min=1, metavar="N", help="Array layers."),
    as_json: bool = typer.Option(False, "--json", help="Print the layout as one JSON object."),
) -> None:
    """The copy arithmetic for a texture, without a GPU."""
    from .formats import get_format
    from .layout import copy_layout

    try:
        fmt = get_format(format)
    except GputexError as e:
        _err(str(e))
        raise typer.Exit(EXIT_USAGE)
    lay = copy_layout(fmt, width, height, layers).as_dict()
    lay["block"] = list(fmt.block)
    lay["block_bytes"] = fmt.block_bytes
    if as_json:
        typer.echo(json.dumps(lay))
        return
    for key, value in lay.items():
        typer.echo(f"{key:22} {value}")


@app.command(cls=_Command, epilog="""\b
Examples:
  gputex info
  gputex info sky.ktx2 --json""")
def info(
    files: List[str] = typer.Argument(None, metavar="FILE",
                                      help="Texture files (KTX2, KTX, DDS) to describe; none: the GPU."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per file, or one for the GPU."),
    adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
) -> None:
    """Describe texture files, or the GPU: adapters, limits, formats.

    A file: container, format, size, levels, layers, faces, supercompression and DFD.
    No FILE: the gputex version, the adapters (the chosen one marked), its limits, and
    what each texture format can do on it.
    """
    if files:
        raise typer.Exit(_info_files(files, as_json))
    session = _session(adapter, backend)
    from .device import list_adapters
    from .probe import format_capabilities

    adapters = [session.info.as_dict()]
    for a in list_adapters(backend):
        d = {"name": a.info.get("device", ""), "backend": a.info.get("backend_type", ""),
             "type": a.info.get("adapter_type", ""), "chosen": False}
        if (d["name"], d["backend"]) != (session.info.name, session.info.backend):
            adapters.append(d)
    caps = format_capabilities(session)
    import wgpu

    report = {"version": version_line().split()[1], "wgpu": wgpu.__version__, "adapters": adapters,
              "chosen": session.name, "features": sorted(session.features),
              "limits": {k: session.limits[k] for k in sorted(session.info.limits)}, "formats": caps}
    if as_json:
        typer.echo(json.dumps(report))
        return
    typer.echo(f"{version_line()} (wgpu-py {report['wgpu']})")
    typer.echo(f"chosen adapter: {session.name}")
    for a in adapters:
        typer.echo(f"  {'*' if a['chosen'] else ' '} {a['name']} ({a['backend']}, {a['type']})")
    typer.echo("limits:")
    for k, v in report["limits"].items():
        typer.echo(f"  {k:36} {v}")
    typer.echo("formats (upload render filter storage capture):")
    for name, c in caps.items():
        marks = " ".join("yes" if c[k] else " - " for k in ("upload", "render", "filter", "storage", "capture"))
        typer.echo(f"  {name:24} {marks}")


def _info_files(files: List[str], as_json: bool) -> int:
    from .texfile import read_texture_file

    failed = 0
    for path in files:
        try:
            d = read_texture_file(path, inflate=False).describe()  # headers only: nothing inflated
        except GputexError as e:
            failed += 1
            _err(str(e))
            if as_json:
                typer.echo(json.dumps({"file": path, "ok": False, "error": str(e)}))
            continue
        if as_json:
            typer.echo(json.dumps(d))
            continue
        size = f"{d['width']}x{d['height']}" + (f"x{d['depth']}" if d["depth"] > 1 else "")
        typer.echo(f"{path}: {d['container'].upper()} {d['type']} {d['format']} {size}, {len(d['levels'])} level(s), "
                   f"{d['layers']} layer(s), {d['faces']} face(s), {d['color_space']}, "
                   f"supercompression {d['supercompression']}, {d['file_bytes']} bytes")
        for lv in d["levels"]:
            extra = f" (stored {lv['stored_bytes']})" if "stored_bytes" in lv else ""
            dims = f"{lv['width']}x{lv['height']}" + (f"x{lv['depth']}" if "depth" in lv else "")
            typer.echo(f"  level {lv['level']}: {dims}, {lv['bytes']} bytes{extra}")
        if "dfd" in d:
            dfd = d["dfd"]
            typer.echo(f"  DFD: model {dfd['color_model']}, primaries {dfd['color_primaries']}, transfer "
                       f"{dfd['transfer_function']}, flags {dfd['flags']}, block {dfd['texel_block']}, "
                       f"{dfd['bytes_plane0']} bytes/block, {len(dfd['samples'])} sample(s)")
        for k, v in d.get("key_values", {}).items():
            typer.echo(f"  {k}: {v}")
    return EXIT_FAILED if failed else EXIT_OK


@app.command(cls=_Command, epilog="""\b
Examples:
  gputex validate sky.ktx2
  gputex validate out/*.ktx2 --strict --json""")
def validate(
    files: List[str] = typer.Argument(..., metavar="FILE", help="KTX2 files."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per file."),
    strict: bool = typer.Option(False, "--strict", help="Warnings (the spec's 'should's) fail too."),
) -> None:
    """Check KTX2 files against every rule of the KTX 2.0 spec.

    Each problem names its rule. Exit 0 when all are valid, 1 otherwise.
    """
    from .ktx2 import validate as check

    failed = 0
    for path in files:
        from .inputs import read_input

        try:
            data = read_input(path)  # regular files only, size-capped
        except GputexError as e:
            failed += 1
            _err(str(e))
            continue
        problems = check(data, path)
        errors = [p for p in problems if p.fatal or strict]
        failed += bool(errors)
        if as_json:
            typer.echo(json.dumps({"file": path, "valid": not errors, "problems": [
                {"rule": p.rule, "message": p.message, "error": p.fatal or strict} for p in problems]}))
            continue
        if not problems:
            typer.echo(f"{path}: valid KTX2")
        for p in problems:
            kind = "error" if (p.fatal or strict) else "warning"
            (_err if kind == "error" else typer.echo)(f"{path}: {kind} [{p.rule}] {p.message}")
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


from .cli_scale import register as _register_scale  # noqa: E402  (serve, key)

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


def main() -> None:
    """Entry point of the ``gputex`` command."""
    debug = "--debug" in sys.argv
    _quiet_libraries(debug)
    for stream in (sys.stdout, sys.stderr):  # names that are not UTF-8 print as their own bytes
        try:
            stream.reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError):
            pass
    try:
        code = app(standalone_mode=False)
    except typer.Exit as e:
        if e.exit_code in (EXIT_INTERRUPTED, 143):
            _settle()
        sys.exit(e.exit_code)
    except BrokenPipeError:  # `gputex info | head -2`: the reader has all it wanted
        _quiet_stdout()
        sys.exit(EXIT_OK)
    except SystemExit as e:
        if e.code == EXIT_FAILED and _stdout_gone():  # typer's own handling of the same (exit 1)
            _quiet_stdout()
            sys.exit(EXIT_OK)
        raise
    except KeyboardInterrupt:
        _err("interrupted")
        _settle()
        sys.exit(EXIT_INTERRUPTED)
    except SystemExit:
        raise
    except Exception as e:  # click usage errors (typer may vendor click) and anything unexpected
        if type(e).__name__ == "Abort":  # click's wrapper around KeyboardInterrupt
            _err("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        if hasattr(e, "show") and hasattr(e, "exit_code"):
            e.show()
            sys.exit(EXIT_USAGE)
        if debug:
            raise
        _err(f"internal error: {type(e).__name__}: {e} (run with --debug for the traceback)")
        sys.exit(EXIT_FAILED)
    if code == EXIT_INTERRUPTED and not _state.get("announced"):  # typer turned a Ctrl-C into 130
        _err("interrupted")
    if code in (EXIT_INTERRUPTED, 143):
        _settle()
    sys.exit(code if isinstance(code, int) else EXIT_OK)


def _settle() -> None:
    """A stopped run waits for a device still being made (gputex.device.settle) before exiting."""
    device = sys.modules.get("gputex.device")
    if device is not None:
        try:
            device.settle()
        except BaseException:  # a second Ctrl-C while waiting: exit all the same
            pass
