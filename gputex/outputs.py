"""Where outputs go: their names, the folders they go in, and the rules of ``-o``.

Names never collide within one run (``stem-2``, ``stem-3``...) and never hit an input
(:class:`OutputNames`); ``capture -o FILE.png`` takes exactly one output (:class:`SingleOutput`);
``upload -o`` takes a ``.ktx2``/``.dds`` file or a folder (:func:`check_texture_out`, one line per
rule). Files themselves are written whole or not at all by :mod:`gputex.encode` (a temporary
beside the output, renamed over it) and :mod:`gputex.texfile`; :func:`prepare_folder` creates an
output folder and sweeps the temporaries a killed run left there. Pure: no GPU or numpy import.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .errors import OutputError, UsageError

__all__ = ["output_name", "stem_of", "OutputNames", "SingleOutput", "refuse_overwriting_inputs",
           "prepare_folder", "texture_names", "texture_output", "check_texture_out", "up_to_date",
           "newer_than_all", "TEXTURE_SUFFIXES"]

#: What ``upload -o FILE`` writes (anything else names a folder).
TEXTURE_SUFFIXES = (".ktx2", ".dds")


def prepare_folder(folder: str) -> None:
    """Create an output folder (OutputError, one line, when it cannot be) and remove the
    temporary files a killed run left in it."""
    from .atomic import sweep_stale

    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{folder}: cannot create output folder ({e.strerror or e})") from None
    sweep_stale(folder)


def is_texture_file_out(out: str | None) -> bool:
    """``upload -o X.ktx2`` / ``X.dds``: one texture file (else a folder)."""
    return out is not None and os.path.splitext(out)[1].lower() in TEXTURE_SUFFIXES


def check_texture_out(out: str | None, *, container: str = "ktx2", zstd: int | None = None,
                      skip_existing: bool = False, kind: str | None = None, inputs: int = 1) -> None:
    """The rules of ``upload -o``; a broken one is a :class:`UsageError` (exit 2) naming it."""
    single = is_texture_file_out(out)
    if out is not None and not single and os.path.splitext(out)[1].lower() in (".ktx", ".png"):
        raise UsageError(f"{out}: gputex writes .ktx2 or .dds texture files (or give a folder)")
    if zstd is not None and (out is None or (single and not out.lower().endswith(".ktx2"))
                             or (not single and container != "ktx2")):
        raise UsageError("--zstd needs KTX2 output (-o X.ktx2, or -o FOLDER with --container ktx2)")
    if skip_existing and out is None:
        raise UsageError("--skip-existing needs -o (the texture files to compare with)")
    if kind == "cube" and inputs % 6:
        raise UsageError(f"--cube needs 6 images per cube (+x -x +y -y +z -z), got {inputs}")
    if single and kind is None and inputs > 1:
        raise UsageError(f"{out}: one output file for {inputs} inputs; give -o a folder, or use "
                         "--array/--cube/--volume")
    if kind is not None and out is not None and not single:
        raise UsageError(f"--{kind} makes one texture: give -o a .ktx2 or .dds file")


def texture_names(out: str | None, inputs: Sequence[str]) -> tuple[OutputNames | None, str | None]:
    """(names for ``upload -o FOLDER``, or None; the folder written into, or None), the folder
    created and swept (:func:`prepare_folder`)."""
    if out is None:
        return None, None
    single = is_texture_file_out(out)
    folder = (os.path.dirname(out) or ".") if single else out
    prepare_folder(folder)
    return (None if single else OutputNames(out, list(inputs))), folder


def newer_than_all(out: str, paths: Sequence[str]) -> bool:
    """``out`` exists and is at least as new as every one of ``paths``."""
    try:
        since = os.path.getmtime(out)
        return all(os.path.getmtime(p) <= since for p in paths)
    except OSError:
        return False


def stem_of(item) -> str:
    """The output name stem of an input: its file name without the suffix (packs: their own)."""
    stem = getattr(item, "stem", None)
    return stem or os.path.splitext(os.path.basename(item.path))[0]


def texture_output(out: str, container: str, names: OutputNames | None, item) -> str:
    """The texture file of ``item`` for ``upload -o`` (a file, or ``<stem>.<container>`` in the folder)."""
    if is_texture_file_out(out):
        refuse_overwriting_inputs(out, [item.path])
        return out
    stem = stem_of(item)
    assert names is not None
    return names.take(stem, "." + container, item.subdir)


def refuse_overwriting_inputs(out: str, inputs: list[str]) -> None:
    """OutputError if ``out`` is one of ``inputs`` (the same file, by any name or hard link):
    inputs are never overwritten."""
    for p in inputs:
        try:
            same = os.path.samefile(out, p)
        except (OSError, ValueError):
            same = False
        if same:
            raise OutputError(f"{out}: output would overwrite the input {p}; choose another output name")


def up_to_date(item, names: OutputNames | SingleOutput | None, out: str | None, container: str) -> bool:
    """An output of this input (capture: level 0 or the only level; upload -o: its texture
    file) exists and is at least as new as the input (every source of a pack)."""
    stem = stem_of(item)
    try:
        since = max(os.path.getmtime(p) for p in getattr(item, "sources", None) or [item.path])
    except OSError:
        return False
    if isinstance(names, SingleOutput):
        candidates = [names.path]
    elif out is not None:  # upload -o: a texture file, or one per input in a folder
        single = is_texture_file_out(out)
        candidates = [out] if single or names is None else \
            [os.path.join(names.folder(item.subdir), stem + "." + container)]
    elif names is not None:
        folder = names.folder(item.subdir)
        candidates = [os.path.join(folder, name + suffix) for name in (stem, output_name(stem, 0))
                      for suffix in (".png", ".tiff", ".npy", ".exr", ".hdr")]
    else:
        return False
    return any(os.path.exists(p) and os.path.getmtime(p) >= since for p in candidates)


def output_name(stem: str, level: int | None = None, layer: int | None = None, *, faces: int = 1,
                slice_: int | None = None, array: bool = False) -> str:
    """``stem``, plus ``_level<L>``, then ``_layer<N>`` (arrays), ``_face<F>`` (cube maps, F = 0..5
    for +x -x +y -y +z -z; cube arrays get ``_layer<N>_face<F>``) or ``_slice<Z>`` (volumes),
    where they apply."""
    name = stem
    if level is not None:
        name += f"_level{level}"
    if slice_ is not None:
        name += f"_slice{slice_}"
    elif layer is not None:
        if faces == 6:
            cube, face = divmod(layer, 6)
            name += (f"_layer{cube}" if array else "") + f"_face{face}"
        else:
            name += f"_layer{layer}"
    return name


class OutputNames:
    """Hands out output paths that never collide within one run and never hit an input."""

    def __init__(self, out_dir: str, inputs: list[str]):
        self.out_dir = out_dir
        self.used: set[str] = set()
        self.inputs = {os.path.realpath(p) for p in inputs}
        self._real: dict[str, str] = {}  # output folder -> its real path

    def _realpath(self, folder: str, name: str) -> str:
        """``realpath(folder/name)``, resolving the folder once (one lstat per output, not one per
        path component: ~12 outputs per image, on the in-order GPU thread)."""
        path = os.path.join(folder, name)
        if os.path.islink(path):
            return os.path.realpath(path)
        real = self._real.get(folder)
        if real is None:
            real = self._real[folder] = os.path.realpath(folder)
        return os.path.join(real, name)

    def folder(self, subdir: str = "") -> str:
        return os.path.join(self.out_dir, subdir) if subdir else self.out_dir

    def take(self, stem: str, suffix: str, subdir: str = "") -> str:
        folder = self.folder(subdir)
        if subdir:
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as e:  # e.g. the sub-folder's name is taken by a file
                what = "exists and is not a folder" if os.path.lexists(folder) else (e.strerror or str(e))
                raise OutputError(f"{folder}: cannot create output folder ({what})") from None
        n, name = 1, stem
        while True:
            path = os.path.join(folder, name + suffix)
            if path not in self.used:
                break
            n += 1
            name = f"{stem}-{n}"
        if self._realpath(folder, name + suffix) in self.inputs:
            raise OutputError(f"{path}: output would overwrite an input; choose another -o folder")
        self.used.add(path)
        return path


class SingleOutput:
    """``capture -o FILE.png``: the one output of a one-input run goes to ``path``; a second
    output, or data that the file's suffix cannot hold, is a usage error."""

    SUFFIXES = (".png", ".tiff", ".tif", ".npy", ".exr", ".hdr")

    def __init__(self, path: str, inputs: list[str]):
        self.path = path
        self.out_dir = os.path.dirname(path) or "."
        self.used: set[str] = set()
        self.inputs = {os.path.realpath(p) for p in inputs}

    def folder(self, subdir: str = "") -> str:
        return self.out_dir

    def take(self, stem: str, suffix: str, subdir: str = "") -> str:
        if self.used:
            raise UsageError(f"{self.path}: this capture has more than one output (levels, layers, faces or "
                             "a sheet); give -o a folder")
        ext = os.path.splitext(self.path)[1].lower()
        want = ".tiff" if ext == ".tif" else ext
        if want != suffix:
            raise UsageError(f"{self.path}: this capture is written as {suffix} (its data does not fit {want}); "
                             f"name the output *{suffix}")
        if os.path.realpath(self.path) in self.inputs:
            raise OutputError(f"{self.path}: output would overwrite an input; choose another -o")
        self.used.add(self.path)
        return self.path
