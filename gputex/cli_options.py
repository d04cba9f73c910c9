"""The CLI's shared vocabulary: exit codes, the option choices, the option groups that
``upload`` and ``capture`` (and ``compare``/``stats``) declare once, the ``--level`` check, and
the one-line error printer. Like ``cli.py``: typer only, nothing heavy at module level.

The names with a leading underscore are the CLI modules' own helpers (``cli``, ``cli_run``,
``cli_render``, ``cli_files``, ``cli_scale``), not API.
"""

from __future__ import annotations

import os
from enum import Enum
from typing import Any, Optional

import typer

from .settings import CHOICES, default

__all__ = ['version_line', 'EXIT_OK', 'EXIT_FAILED', 'EXIT_USAGE', 'EXIT_NO_GPU', 'EXIT_INTERRUPTED',
           'EXIT_CODES', 'Command', 'Group', 'ColorSpace', 'UploadPath', 'FloatAs', 'Filter', 'Alpha', 'BCDecode',
           'Container', 'Wrap', 'Backend', 'cli_state', 'choices_metavar', 'check_backend', 'AdapterOpt', 'BackendOpt',
           'JsonOpt', 'DebugOpt', 'QuietOpt', 'VerboseOpt', 'FormatOpt', 'SpaceOpt', 'BudgetOpt', 'PathOpt',
           'MaxPixelsOpt', 'WorkersOpt', 'RecursiveOpt', 'JobsOpt', 'UploadJobsOpt', 'ThreadsOpt', 'MemoryOpt',
           'ManifestOpt', 'MaxRatioOpt', 'check_level', 'print_error', 'printable', 'MipsOpt', 'LevelsOpt',
           'LevelsAliasOpt', 'FilterOpt', 'AlphaOpt', 'CoverageOpt', 'NormalOpt', 'WrapOpt', 'ResizeOpt',
           'MaxSizeOpt', 'PotOpt', 'SwizzleOpt', 'PackOpt', 'FsyncOpt', 'Commands']


def version_line() -> str:
    """``gputex X.Y.Z``."""
    from .version import __version__

    return f"gputex {__version__}"


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

EXIT_CODES = (
    "Exit codes: 0 every input ok; 1 one or more inputs failed (the others are still "
    "processed); 2 usage error; 3 no usable GPU adapter or device; 130 interrupted (Ctrl-C); "
    "143 terminated (SIGTERM)."
)


class Command(typer.core.TyperCommand):
    """Arguments as git and ruff show them: ``IMAGE...`` in the usage line and the list,
    ``[FILE]...`` when optional, no type labels."""

    @staticmethod
    def _arg(param, usage: bool) -> str:
        name = param.metavar or param.name.upper()
        many = param.nargs != 1
        if usage and not param.required:
            return f"[{name}]" + ("..." if many else "")
        return name + ("..." if many else "")

    def parse_args(self, ctx, args):
        from .cli_coerce import install

        install(self.get_params(ctx))  # plain values converted without pydantic (0.11 s of start-up)
        return super().parse_args(ctx, args)

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


class Group(typer.core.TyperGroup):
    """The ``gputex`` group: its own options (``--version``, completion) converted as the
    commands' are (:mod:`gputex.cli_coerce`)."""

    def parse_args(self, ctx, args):
        from .cli_coerce import install

        install(self.get_params(ctx))
        return super().parse_args(ctx, args)


def _enum(name: str, setting: str) -> type:
    """A choice option's Enum, its members the setting's values (:data:`gputex.settings.CHOICES`)."""
    return Enum(name, [(v, v) for v in CHOICES[setting]], type=str)  # type: ignore[return-value]


# the choices of each option come from gputex.settings (the request form of the same options)
ColorSpace = _enum("ColorSpace", "color_space")
UploadPath = _enum("UploadPath", "upload_path")
FloatAs = _enum("FloatAs", "float_as")
Filter = _enum("Filter", "filter")
Alpha = _enum("Alpha", "alpha")
BCDecode = _enum("BCDecode", "bc_decode")
Container = _enum("Container", "container")
Wrap = _enum("Wrap", "wrap")


cli_state = {"debug": False}

def choices_metavar(enum) -> str:
    """The metavar of an enum option: its choices, ``[a|b|c]``."""
    return "[" + "|".join(e.value for e in enum) + "]"


class Backend(str, Enum):
    vulkan = "vulkan"
    metal = "metal"
    dx12 = "dx12"
    gl = "gl"


def check_backend(value: Optional[str]) -> Optional[str]:
    if value is not None and value.lower() not in [b.value for b in Backend]:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(b.value for b in Backend)}.")
    return value.lower() if value else None


AdapterOpt = typer.Option(None, "--adapter", envvar="GPUTEX_ADAPTER", metavar="NAME",
                          help="Use the adapter whose name contains NAME (case-insensitive).")
BackendOpt = typer.Option(None, "--backend", envvar="GPUTEX_BACKEND", metavar=choices_metavar(Backend),
                          callback=check_backend, help="Only adapters of this backend.")
JsonOpt = typer.Option(False, "--json", help="One JSON object per input on stdout.")
DebugOpt = typer.Option(False, "--debug", help="Show tracebacks.")
QuietOpt = typer.Option(False, "--quiet", "-q", help="Print errors only.")
VerboseOpt = typer.Option(False, "--verbose", "-v", help="Also print the adapter and each input's stage timings.")
FormatOpt = typer.Option(None, "--format", "-f", metavar="FORMAT",
                         help="Texture format, e.g. rgba16float (default: chosen from the image).")
SpaceOpt = typer.Option(None, "--color-space", metavar=choices_metavar(ColorSpace),
                        help="How the data is meant (default: from the file).")
BudgetOpt = typer.Option(default("upload", "budget"), "--budget", min=1, metavar="MIB", help="Host staging memory per transfer, MiB.")
PathOpt = typer.Option(UploadPath(default("upload", "upload_path")), "--upload-path", metavar=choices_metavar(UploadPath),
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
                             help="Decode workers: threads for 1-2 jobs or one input, else N/2 (at least 3) "
                                  "decoding processes (with --mips -o DIR, where they may write mipped "
                                  "files themselves: N, or N-1 when a device is made at the start); "
                                  "with -o, N threads write the files.")
ThreadsOpt = typer.Option(None, "--threads", min=1, metavar="N",
                          help="Cap every pool (codecs, copies, PNG deflate, lavapipe) at N threads; --jobs is "
                               "held to it.")
MemoryOpt = typer.Option(None, "--memory", min=1, metavar="MIB",
                         help="Cap the decoded images in flight at MIB (one larger image still runs, alone).")
ManifestOpt = typer.Option(None, "--manifest", metavar="FILE",
                           help="Write FILE.json: per output its cache key (see gputex key), SHA-256, adapter, "
                                "driver and timings.")
FsyncOpt = typer.Option(False, "--fsync",
                        help="Flush each output to the disk before it gets its name (survives a power loss; "
                             "without it an output still appears whole or not at all if gputex is killed).")
MaxRatioOpt = typer.Option(None, "--max-ratio", min=0, metavar="R",
                           help="Refuse images decoding to >64 MiB and more than R times their file size "
                                "(default 1000; 0: no limit).")


def check_level(value: str) -> str:
    """``--level``, checked once while the options are parsed: a number or ``all`` (exit 2 otherwise)."""
    if value != "all" and not value.isdigit():
        print_error(f"--level must be a number or 'all', got {value!r}")
        raise typer.Exit(EXIT_USAGE)
    return value


class Commands:
    """Commands a CLI module declares (``@commands.command(...)``, as ``@app.command``) and
    adds to the app when the app is assembled (``commands.register(app)``), in declaration order."""

    def __init__(self) -> None:
        self.declared: list[tuple[Any, dict[str, Any]]] = []

    def command(self, **kw: Any) -> Any:
        def add(fn: Any) -> Any:
            self.declared.append((fn, kw))
            return fn
        return add

    def register(self, app: typer.Typer) -> None:
        for fn, kw in self.declared:
            app.command(**kw)(fn)


def print_error(message: str) -> None:
    typer.echo(f"gputex: {printable(message)}", err=True)


def printable(text: str) -> str:
    """One line, whatever the names in it: control characters (a newline in a file name) and
    bytes that are not UTF-8 (kept by Python as surrogates) are shown as backslash escapes."""
    import re

    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    text = raw.decode("utf-8", "backslashreplace")
    return re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", lambda m: repr(m.group())[1:-1], text)


MipsOpt = typer.Option(False, "--mips", help="Generate the mip chain on the GPU.")
LevelsOpt = typer.Option(None, "--mip-count", min=1, metavar="N",
                         help="Make N mip levels (implies --mips; default: the full chain).")
LevelsAliasOpt = typer.Option(None, "--levels", min=1, hidden=True)  # the old name of --mip-count
FilterOpt = typer.Option(Filter(default("capture", "filter")), "--filter", metavar=choices_metavar(Filter),
                         help="Mip filter: box (exact area average) or a radius-3 kernel.")
AlphaOpt = typer.Option(Alpha(default("capture", "alpha")), "--alpha", metavar=choices_metavar(Alpha),
                        help="How mips treat alpha: weighted averages colour by alpha.")
CoverageOpt = typer.Option(None, "--alpha-coverage", min=0.0, max=1.0, metavar="CUTOFF",
                           help="Keep the fraction of texels with alpha >= CUTOFF that level 0 has.")
NormalOpt = typer.Option(False, "--normal-map",
                         help="Data is a normal map: linear (as --color-space linear); renormalize each level.")
WrapOpt = typer.Option(Wrap(default("capture", "wrap")), "--wrap", metavar=choices_metavar(Wrap),
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
