"""Request settings -> :class:`~gputex.pipeline.Options`, checked; and their normalised form.

``gputex serve`` requests, :class:`gputex.Converter` calls, ``gputex key`` and the distributed
run all name their settings as the CLI's long options with dashes as underscores
(``color_space="linear"``, ``level="all"``, ``budget=64`` in MiB). This module is the one
place that checks them (one line naming the option, the value and what is allowed) and
builds the :class:`Options` the pipeline runs with. Pure: no GPU, numpy or typer import.

:func:`normalised` is what a cache key hashes: only the settings that change output bytes,
every default filled in, names canonical. Staging budget, upload path, pixel/ratio limits,
``skip_existing`` and the run's resources (jobs, threads, memory) change how a run goes or
whether it refuses an input, never the bytes written, so they are left out.
"""

from __future__ import annotations

from typing import Any

from .errors import GputexError
from .mips.filters import FILTER_NAMES

__all__ = ["SettingsError", "COMMANDS", "CHOICES", "SPEC", "RUN_KEYS", "make_options", "normalised", "adapter_dependent",
           "default"]

COMMANDS = ("capture", "upload")


class SettingsError(GputexError, ValueError):
    """A request's setting is unknown or has a value the command does not take."""


def _choice(*values: str):
    def check(name: str, v: Any) -> str:
        if isinstance(v, str) and v in values:
            return v
        raise SettingsError(f"{name}: {v!r} is not one of {', '.join(values)}")
    return check


def _bool(name: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    raise SettingsError(f"{name}: {v!r} is not true or false")


def _int(lo: int, hi: int | None = None):
    def check(name: str, v: Any) -> int:
        if isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi):
            return v
        raise SettingsError(f"{name}: {v!r} is not a whole number " + (f"in {lo}-{hi}" if hi else f">= {lo}"))
    return check


def _float(lo: float, hi: float | None = None):
    def check(name: str, v: Any) -> float:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi):
            return float(v)
        raise SettingsError(f"{name}: {v!r} is not a number " + (f"in {lo}-{hi}" if hi is not None else f">= {lo}"))
    return check


def _str(name: str, v: Any) -> str:
    if isinstance(v, str) and v:
        return v
    raise SettingsError(f"{name}: {v!r} is not a non-empty string")


def _level(name: str, v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return str(v)
    if isinstance(v, str) and (v == "all" or v.isdigit()):
        return v
    raise SettingsError(f"{name}: {v!r} is not a level number or 'all'")


def _png_compression(name: str, v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 9:
        return str(v)
    if isinstance(v, str) and (v == "fast" or (v.isdigit() and int(v) <= 9)):
        return v
    raise SettingsError(f"{name}: {v!r} is not 'fast' or a zlib level 0-9")


def _size(name: str, v: Any) -> str:
    from .transform import parse_size

    if isinstance(v, str):
        try:
            w, h = parse_size(v)
        except GputexError as e:
            raise SettingsError(f"{name}: {e}") from e
        return f"{w}x{h}"
    raise SettingsError(f"{name}: {v!r} is not a size WxH")


def _swizzle(name: str, v: Any) -> str:
    from .transform import check_swizzle

    if isinstance(v, str):
        try:
            return check_swizzle(v)
        except GputexError as e:
            raise SettingsError(f"{name}: {e}") from e
    raise SettingsError(f"{name}: {v!r} is not a swizzle such as rgb1")


def _quality(name: str, v: Any) -> str:
    from .bcenc import parse_quality

    try:
        return parse_quality(v)
    except GputexError as e:
        raise SettingsError(f"{name}: {e}") from e


#: The values of each choice setting, first the default where it has one. The CLI builds its
#: option choices from these (``gputex.cli_options``), so the two never drift apart.
CHOICES: dict[str, tuple[str, ...]] = {
    "color_space": ("srgb", "linear"),
    "filter": tuple(FILTER_NAMES),
    "alpha": ("weighted", "straight", "premultiplied"),
    "wrap": ("clamp", "repeat", "mirror"),
    "upload_path": ("auto", "write_texture", "staging"),
    "float_as": ("tiff", "npy", "png", "exr", "hdr"),
    "bc_decode": ("spec", "sampler"),
    "container": ("ktx2", "dds"),
}

#: Every setting, its check and default (as the CLI's); the commands that take it.
_COMMON = {
    "format": (_str, None), "color_space": (_choice(*CHOICES["color_space"]), None),
    "flip_y": (_bool, False), "premultiply": (_bool, False), "no_exif_rotate": (_bool, False),
    "mips": (_bool, False), "levels": (_int(1), None), "filter": (_choice(*CHOICES["filter"]), "box"),
    "alpha": (_choice(*CHOICES["alpha"]), "weighted"),
    "alpha_coverage": (_float(0.0, 1.0), None), "normal_map": (_bool, False),
    "wrap": (_choice(*CHOICES["wrap"]), "clamp"),
    "budget": (_int(1), 64), "upload_path": (_choice(*CHOICES["upload_path"]), "auto"),
    "max_pixels": (_int(1), None), "max_ratio": (_float(0.0), None), "recursive": (_bool, False),
    "resize": (_size, None), "max_size": (_int(1), None), "pot": (_bool, False), "swizzle": (_swizzle, None),
}
SPEC: dict[str, dict[str, tuple]] = {
    "capture": {**_COMMON, "level": (_level, "0"), "sheet": (_bool, False),
                "float_as": (_choice(*CHOICES["float_as"]), "tiff"),
                "png_compression": (_png_compression, "fast"),
                "bc_decode": (_choice(*CHOICES["bc_decode"]), "spec"), "skip_existing": (_bool, False)},
    "upload": {**_COMMON, "container": (_choice(*CHOICES["container"]), "ktx2"), "zstd": (_int(1, 22), None),
               "array": (_bool, False), "cube": (_bool, False), "volume": (_bool, False),
               "skip_existing": (_bool, False), "quality": (_quality, "normal"), "report": (_bool, False),
               "verify": (_bool, None)},
}
#: Settings of a whole run (a server, a Converter, a cluster), not of one request.
RUN_KEYS = ("jobs", "threads", "memory", "adapter", "backend")
#: Output-neutral settings, left out of :func:`normalised` (see the module docstring).
_NEUTRAL = {"budget", "upload_path", "max_pixels", "max_ratio", "recursive", "skip_existing", "report", "verify"}


def checked(command: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Every setting of ``command`` with its default filled in; unknown ones refused."""
    if command not in SPEC:
        raise SettingsError(f"command: {command!r} is not one of {', '.join(COMMANDS)}")
    spec = SPEC[command]
    out: dict[str, Any] = {}
    for name, value in settings.items():
        if name in RUN_KEYS:
            raise SettingsError(f"{name}: is a setting of the whole run (give it when the server, "
                                "Converter or cluster starts), not of one request")
        if name not in spec:
            raise SettingsError(f"{name}: unknown option for {command} (known: {', '.join(sorted(spec))})")
        out[name] = None if value is None else spec[name][0](name, value)
    for name, (_, default) in spec.items():
        if out.get(name) is None:
            out[name] = default
    if command == "upload" and sum(out[k] for k in ("array", "cube", "volume")) > 1:
        raise SettingsError("choose one of array, cube, volume")
    if out["format"] is not None:
        from .formats import get_format

        # FormatError names unknown formats; what a known one can be made from is the pipeline's
        # call (per input), so this check never drifts from it
        out["format"] = get_format(out["format"]).name
    return out


def make_options(command: str, settings: dict[str, Any], out: str | None = None):
    """The pipeline :class:`~gputex.pipeline.Options` for ``command`` with these settings
    (the same mapping as the CLI's ``capture``/``upload``)."""
    from .pipeline import Options

    s = checked(command, settings)
    if command == "upload" and s["zstd"] is not None and not _ktx2_out(out, s["container"]):
        raise SettingsError("zstd: needs KTX2 output (out X.ktx2, or a folder with container ktx2)")
    from .pipeline import MipOptions

    mip = MipOptions(filter=s["filter"], alpha=s["alpha"], alpha_coverage=s["alpha_coverage"],
                     normal_map=s["normal_map"], wrap=s["wrap"])
    kw: dict[str, Any] = dict(
        format=s["format"], color_space=s["color_space"], flip_y=s["flip_y"], premultiply=s["premultiply"],
        exif_rotate=not s["no_exif_rotate"], budget=s["budget"] << 20, upload_path=s["upload_path"],
        max_pixels=s["max_pixels"], max_ratio=s["max_ratio"], mips=s["mips"] or s["levels"] is not None,
        mip_levels=s["levels"], mip_options=mip, transform=_transform(s))
    if command == "capture":
        kw.update(level=s["level"], float_as=s["float_as"], sheet=s["sheet"], skip_existing=s["skip_existing"],
                  png_level=None if s["png_compression"] == "fast" else int(s["png_compression"]),
                  bc_decode=s["bc_decode"])
    else:
        kw.update(out=out, container=s["container"], zstd=s["zstd"], skip_existing=s["skip_existing"],
                  quality=s["quality"], report=s["report"], verify=s["verify"])
    return Options(**kw)


def _transform(s: dict[str, Any]):
    """The resize/max_size/pot/swizzle settings as a :class:`gputex.transform.Transform`, or None."""
    if s["resize"] is None and s["max_size"] is None and not s["pot"] and s["swizzle"] is None:
        return None
    from .transform import Transform, parse_size

    return Transform(resize=parse_size(s["resize"]) if s["resize"] else None, max_size=s["max_size"],
                     pot=s["pot"], swizzle=s["swizzle"])


def _ktx2_out(out: str | None, container: str) -> bool:
    if out is None:
        return False
    low = out.lower()
    if low.endswith((".ktx2", ".dds")):
        return low.endswith(".ktx2")
    return container == "ktx2"


def normalised(command: str, settings: dict[str, Any], out: str | None = None) -> dict[str, Any]:
    """The settings that decide the output bytes, every default filled in (sorted keys).

    For ``upload`` the container comes from ``out`` (``X.dds``/``X.ktx2``, or a folder and
    ``container``); without ``out`` nothing is written and the container is None."""
    s = checked(command, settings)
    if s.get("levels") is not None:
        s["mips"] = True
    if not s["mips"]:  # the mip settings change nothing without mips
        for k in ("levels", "filter", "alpha", "alpha_coverage", "normal_map", "wrap"):
            s.pop(k, None)
    if command == "upload":
        low = (out or "").lower()
        s["container"] = None if out is None else ("dds" if low.endswith(".dds") else
                                                   "ktx2" if low.endswith(".ktx2") else s["container"])
    return {k: s[k] for k in sorted(s) if k not in _NEUTRAL}


def adapter_dependent(command: str, settings: dict[str, Any]) -> bool:
    """Whether the output bytes may differ between adapters for these settings.

    Uploads, captures and texture files without mips move bytes exactly (the conversions
    run on the CPU), and BC files decoded with ``bc_decode="spec"`` use the specification's
    integer arithmetic: those outputs are the same on every adapter. Mip chains (GPU
    arithmetic: float32 or float64 paths chosen by the device's features),
    ``bc_decode="sampler"`` (the GPU's texture units) and BC encoding other than the
    integer-exact ``quality="fast"`` BC1/BC3/BC4/BC5 unorm encoders are adapter-dependent.
    """
    s = normalised(command, settings)
    fmt = s.get("format") or ""
    # BC encoding: only the integer-exact "fast" BC1/BC3/BC4/BC5 unorm encoders (gputex.bcenc)
    # give the same blocks on every adapter; the others use float arithmetic
    bc_float = fmt.startswith(("bc1", "bc3", "bc4", "bc5", "bc6h", "bc7")) and not (
        s.get("quality") == "fast" and fmt.startswith(("bc1", "bc3", "bc4-r-unorm", "bc5-rg-unorm")))
    return bool(s.get("mips")) or s.get("bc_decode") == "sampler" or bc_float


def default(command: str, name: str) -> Any:
    """The default of setting ``name`` of ``command`` (the CLI's option defaults come from here)."""
    return SPEC[command][name][1]
