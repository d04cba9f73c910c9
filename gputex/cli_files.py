"""The texture-file and arithmetic commands: ``layout``, ``info``, ``validate``. Registered on the
app by :func:`register` (one line in ``cli.py``), in this order."""

from __future__ import annotations

import json
from typing import List, Optional

import typer

from .cli_options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    AdapterOpt,
    BackendOpt,
    Command,
    Commands,
    print_error,
    version_line,
)
from .cli_run import open_session
from .errors import GputexError

__all__ = ["register"]

_commands = Commands()
#: Adds ``layout``, ``info`` and ``validate`` to the app.
register = _commands.register


@_commands.command(cls=Command, epilog="""\b
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
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
    lay = copy_layout(fmt, width, height, layers).as_dict()
    lay["block"] = list(fmt.block)
    lay["block_bytes"] = fmt.block_bytes
    if as_json:
        typer.echo(json.dumps(lay))
        return
    for key, value in lay.items():
        typer.echo(f"{key:22} {value}")


@_commands.command(cls=Command, epilog="""\b
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
    session = open_session(adapter, backend)
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
            print_error(str(e))
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


@_commands.command(cls=Command, epilog="""\b
Examples:
  gputex validate sky.ktx2
  gputex validate out/*.ktx2 --strict --json""")
def validate(
    files: List[str] = typer.Argument(..., metavar="FILE", help="KTX2 files."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per file."),
    strict: bool = typer.Option(False, "--strict", help="Warnings (the spec's 'should's) fail too."),
) -> None:
    """Check KTX2 files against every rule of the KTX 2.0 spec.

    Each problem names its rule (Khronos's ``ktx validate`` ids), as an error or a warning as
    Khronos classes it; what gputex itself cannot read (a valid file) is said apart and never
    fails. Exit 0 when all are valid, 1 otherwise.
    """
    from .inputs import read_input
    from .ktx2 import validate_report

    failed = 0
    for path in files:
        try:
            data = read_input(path)  # regular files only, size-capped
        except GputexError as e:
            failed += 1
            print_error(str(e))
            continue
        obj, lines, bad = validate_report(data, path, strict=strict)
        failed += bad
        if as_json:
            typer.echo(json.dumps(obj))
            continue
        for stream, line in lines:
            (print_error if stream == "err" else typer.echo)(line)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)
