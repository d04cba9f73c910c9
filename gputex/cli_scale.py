"""CLI commands for scale-out: ``serve``, ``key``, and the ``--manifest`` writer.

Registered on the app by :func:`register` (one line in ``cli.py``). Like ``cli.py``, nothing
heavy is imported at module level.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import typer

from .errors import GputexError, NoAdapterError

__all__ = ["register", "cli_settings", "Manifest"]

#: CLI parameters that are not settings of a conversion (inputs, output, how the run goes).
_NOT_SETTINGS = {"sources", "images", "out", "jobs", "as_json", "adapter", "backend", "debug", "manifest",
                 "threads", "memory", "quiet", "verbose", "version", "workers", "fsync",
                 "levels_alias",  # --levels, the old name of --mip-count: folded into "levels" below
                 "pack"}  # --pack makes inputs, not a setting: a key or manifest refuses it (below)


def cli_settings(command: str, params: dict[str, Any], ctx=None) -> dict[str, Any]:
    """The settings dict (:mod:`gputex.settings`) of a ``capture``/``upload`` command line's
    parsed parameters. A parameter settings.py does not know is refused when the command line
    sets it (``ctx``: the click context, which knows): a key that silently ignored an option
    that changes the bytes would be a wrong key."""
    from .settings import SPEC, SettingsError

    out = {}
    if params.get("pack"):
        raise SettingsError("--pack: packed textures have no cache key yet; key the source files instead")
    if params.get("levels_alias") is not None and params.get("levels") is None:
        params = dict(params, levels=params["levels_alias"])
    for name, value in params.items():
        if name in _NOT_SETTINGS:
            continue
        if name not in SPEC[command] and ctx is not None and _defaulted(ctx, name):
            continue  # an option left at its default changes nothing
        if name not in SPEC[command]:
            raise SettingsError(f"--{name.replace('_', '-')}: not known to gputex.settings, so it cannot be "
                                "part of a cache key (add it to settings.SPEC)")
        out[name] = value.value if hasattr(value, "value") else value
    return out


class Manifest:
    """``--manifest FILE.json``: per output its input, cache key, SHA-256, adapter, driver,
    timings; written atomically when the run ends."""

    def __init__(self, path: str, command: str, settings: dict, out: Optional[str]):
        self.path, self.command, self.settings, self.out = path, command, settings, out

    def __call__(self, results, session, inputs: Optional[list] = None) -> bool:
        """Write the manifest of ``results`` (False, with one line on stderr, if it cannot be);
        ``inputs``: the files of one assembled texture (``--array``/``--cube``/``--volume``:
        one key over all of them)."""
        from .atomic import write_atomic
        from .keys import cache_key, file_sha256, input_key
        from .settings import adapter_dependent, normalised
        from .version import __version__

        info: Any = session.info if session is not None else None
        named: Optional[dict] = None  # no session (no device was made): the adapter a Session would choose
        if info is None and adapter_dependent(self.command, self.settings) and any(r.ok for r in results):
            from .keys import adapter_identity

            try:
                info = named = adapter_identity()
            except NoAdapterError as e:
                info = named = {"name": None, "backend": None, "driver": None, "error": str(e)}
        entries, failed = [], []
        for r in results:
            if not r.ok:
                failed.append({"source": r.source, "error": r.error})
                continue
            if r.skipped:
                continue
            try:
                if named is not None and named["name"] is None:  # adapter-dependent, and no adapter to name
                    raise OSError(0, named["error"])
                key = (cache_key([file_sha256(p) for p in inputs], self.command, self.settings, self.out, info)
                       if inputs else input_key(r.source, self.command, self.settings, self.out, info))
            except OSError as e:
                key = None
                warning = f"{r.source}: no cache key ({e.strerror or e})"
                r.warnings.append(warning)
                from .cli_options import print_error

                print_error(f"warning: {warning}")  # (the result's line was printed already)
            name = info.get("name") if isinstance(info, dict) else info.name if info else None
            driver = info.get("driver") if isinstance(info, dict) else info.driver if info else None
            base = {"source": r.source, "key": key, "adapter": name, "driver": driver,
                    "timings": {k: round(v, 6) for k, v in r.timings.items()}}
            for p in r.outputs or [None]:
                e = dict(base, output=p)
                if p is not None:
                    e["sha256"], e["bytes"] = file_sha256(p), os.path.getsize(p)
                entries.append(e)
        doc = {"gputex": __version__, "command": self.command,
               "settings": normalised(self.command, self.settings, self.out),
               "adapter_dependent": adapter_dependent(self.command, self.settings),
               "adapter": (dict(named, chosen=False) if named is not None else info.as_dict() if info else None),
               "outputs": entries, "failed": failed}
        from .cli_options import print_error

        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            write_atomic(self.path, (json.dumps(doc, indent=1) + "\n").encode())
        except (GputexError, OSError) as e:
            print_error(str(e) if isinstance(e, GputexError) else f"{self.path}: cannot write the manifest "
                 f"({e.strerror or e})")
            return False
        return True


def _defaulted(ctx, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("DEFAULT", "DEFAULT_MAP")


def manifest_for(command: str, path: Optional[str], out: Optional[str]) -> Optional[Manifest]:
    """A :class:`Manifest` for the running command's parameters, or None without ``path``;
    an option that cannot be keyed is a usage error (exit 2)."""
    if path is None:
        return None
    try:  # typer >= 0.24 vendors click
        from typer._click.globals import get_current_context
    except ImportError:
        from click import get_current_context
    from .cli_options import EXIT_USAGE, print_error

    try:
        ctx = get_current_context()
        settings = cli_settings(command, ctx.params, ctx)
    except GputexError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE)
    return Manifest(path, command, settings, out)


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``key`` to the app."""
    from .cli_options import AdapterOpt, BackendOpt, FsyncOpt, JsonOpt

    @app.command()
    def serve(
        stdio: bool = typer.Option(False, "--stdio", help="Requests on stdin, replies on stdout (JSON lines)."),
        threads: Optional[int] = typer.Option(None, "--threads", min=1,
                                              help="Cap every pool (codecs, copies, lavapipe) at N threads."),
        memory: Optional[int] = typer.Option(None, "--memory", min=1, help="Cap decoded images in flight, MiB."),
        requests: Optional[int] = typer.Option(None, "--requests", min=1,
                                               help="Requests run at once (default: --threads, at least 2)."),
        adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt, fsync: bool = FsyncOpt,
    ) -> None:
        """A long-lived worker: JSON requests on stdin, one reply a line on stdout.

        Keeps one device and the codec pools warm and converts requests: one JSON object a line
        on stdin ({"id": 1, "command": "capture", "inputs": ["a.png"], "out": "out/", "mips": true}),
        one JSON reply a line on stdout, in the order requests complete. Bad requests get an
        error reply; EOF or SIGTERM ends it (exit 0)."""
        from .cli_options import EXIT_NO_GPU, EXIT_USAGE, print_error

        if not stdio:
            print_error("serve needs --stdio (the only transport)")
            raise typer.Exit(EXIT_USAGE)
        from .converter import Converter

        if fsync:
            from .atomic import set_fsync

            set_fsync(True)
        conv = Converter(adapter=adapter, backend=backend, threads=threads, memory=memory)
        try:
            with conv:
                from .serve import serve_stdio

                code = serve_stdio(conv, requests=requests or max(2, conv.threads))
        except NoAdapterError as e:
            print_error(str(e))
            raise typer.Exit(EXIT_NO_GPU)
        except ValueError as e:  # an unknown backend
            print_error(str(e))
            raise typer.Exit(EXIT_USAGE)
        raise typer.Exit(code)

    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def key(
        ctx: typer.Context,
        command: str = typer.Option("capture", "--for", help="The command the key is for: capture or upload."),
        as_json: bool = JsonOpt, adapter: Optional[str] = AdapterOpt, backend: Optional[str] = BackendOpt,
    ) -> None:
        """Print the cache key of each input (equal keys: equal output bytes).

        Takes IMAGE... and the options of `capture` (or with
        --for upload, of `upload`). Equal keys mean equal output bytes: a hash of the input's
        content, the settings that change bytes, the gputex version and code, the codec
        libraries' versions, and the adapter where the output depends on it (mips,
        --bc-decode sampler). One line per input: KEY  PATH (one key for --array/--cube/--volume)."""
        from .cli_options import EXIT_FAILED, EXIT_NO_GPU, EXIT_USAGE, print_error

        if command not in ("capture", "upload"):
            print_error(f"--for must be capture or upload, got {command!r}")
            raise typer.Exit(EXIT_USAGE)
        args = list(ctx.args)
        if command == "capture" and not any(a in ("-o", "--out") or a.startswith("--out=") for a in args):
            args += ["-o", os.devnull]  # capture requires -o; it does not change the key
        sub = typer.main.get_command(app).commands[command]
        try:
            sub_ctx = sub.make_context(command, args)
            params = sub_ctx.params
        except Exception as e:  # click's usage errors
            if hasattr(e, "format_message"):
                print_error(e.format_message())
                raise typer.Exit(EXIT_USAGE)
            raise
        from .batch import expand_inputs
        from .keys import adapter_identity, cache_key, file_sha256
        from .settings import adapter_dependent

        try:
            settings = cli_settings(command, params, sub_ctx)
            out = params.get("out") if command == "upload" else None
            ident = adapter_identity(adapter, backend) if adapter_dependent(command, settings) else None
        except NoAdapterError as e:
            print_error(str(e))
            raise typer.Exit(EXIT_NO_GPU)
        except GputexError as e:
            print_error(str(e))
            raise typer.Exit(EXIT_USAGE)
        items = expand_inputs(params.get("sources") or params.get("images") or [], bool(settings.get("recursive")))
        failed = 0
        hashes = []
        for item in items:
            try:
                if item.error:
                    raise OSError(item.error)
                hashes.append((item.path, file_sha256(item.path)))
            except OSError as e:
                failed += 1
                print_error(item.error or f"{item.path}: cannot read ({e.strerror or e})")
        if failed:
            raise typer.Exit(EXIT_FAILED)
        one = any(settings.get(k) for k in ("array", "cube", "volume"))
        groups = [(", ".join(p for p, _ in hashes), [h for _, h in hashes])] if one else \
            [(p, [h]) for p, h in hashes]
        for source, hs in groups:
            k = cache_key(hs, command, settings, out, ident)
            if as_json:
                typer.echo(json.dumps({"source": source, "key": k, "adapter": ident}))
            else:
                typer.echo(f"{k}  {source}")
        raise typer.Exit(0)
