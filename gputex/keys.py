"""Cache keys: what decides an output's bytes, hashed.

A key is the SHA-256 of a canonical JSON document holding

- ``inputs``: the SHA-256 of each input file's bytes (paths never enter: renaming or moving
  an input keeps its key);
- ``command`` and ``settings``: :func:`gputex.settings.normalised` (only the settings that
  change output bytes, every default filled in);
- ``gputex``: the version, and ``code``: the SHA-256 of the package's own source files and
  shaders, so any change to the mip, conversion or encoder arithmetic (or anything else that
  could change bytes) makes new keys without anyone remembering to bump a number;
- ``libraries``: versions of the libraries that write or read the bytes (fpng, imagecodecs
  with its zlib/libpng, Pillow, numpy, wgpu);
- ``adapter``: name, backend and driver of the adapter, only where the outputs depend on it
  (:func:`gputex.settings.adapter_dependent`: mip chains and ``bc_decode="sampler"``);
  otherwise null, so every machine shares the entry.

Two runs with equal keys write equal bytes (tests/batch/test_scale.py checks ``--jobs 1`` against
``--jobs 4``, twice each, and the distributed run against the local one).
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from typing import Any

__all__ = ["cache_key", "input_key", "file_sha256", "code_digest", "adapter_identity", "KEY_LIBRARIES"]

KEY_LIBRARIES = ("fpng", "imagecodecs", "Pillow", "numpy", "wgpu")


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over the package's ``.py`` and ``.wgsl`` files (names and bytes, sorted)."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".wgsl")):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


@lru_cache(maxsize=1)
def _libraries() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in KEY_LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def adapter_identity(adapter: str | None = None, backend: str | None = None) -> dict[str, str]:
    """Name, backend and driver of the adapter a Session would choose (no device is made)."""
    from .device import adapter_info, list_adapters
    from .errors import NoAdapterError

    adapter = adapter or os.environ.get("GPUTEX_ADAPTER") or None
    backend = backend or os.environ.get("GPUTEX_BACKEND") or None
    candidates = list_adapters(backend)
    if adapter:
        candidates = [a for a in candidates if adapter.lower() in adapter_info(a).name.lower()]
    if not candidates:
        raise NoAdapterError(f"no GPU adapter{f' matching {adapter!r}' if adapter else ''}")
    return _identity(adapter_info(candidates[0]))


def _identity(info) -> dict[str, str]:
    return {"name": info.name, "backend": info.backend, "driver": info.driver}


def cache_key(input_hashes: list[str], command: str, settings: dict[str, Any], out: str | None = None,
              adapter=None) -> str:
    """The key of the outputs of ``command`` over inputs with these SHA-256s.

    ``adapter``: an :class:`~gputex.device.AdapterInfo` or identity dict, used only where the
    outputs depend on it; None there means "the adapter a Session would choose"."""
    from .settings import adapter_dependent, normalised
    from .version import __version__

    ident = None
    if adapter_dependent(command, settings):
        ident = adapter if isinstance(adapter, dict) else _identity(adapter) if adapter is not None \
            else adapter_identity()
    doc = {"gputex": __version__, "code": code_digest(), "libraries": _libraries(), "command": command,
           "settings": normalised(command, settings, out), "adapter": ident, "inputs": list(input_hashes)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def input_key(path: str, command: str, settings: dict[str, Any], out: str | None = None, adapter=None) -> str:
    """:func:`cache_key` of one input file."""
    return cache_key([file_sha256(path)], command, settings, out, adapter)
