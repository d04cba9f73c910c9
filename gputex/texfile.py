"""Texture files: the names the rest of gputex imports, kept here as a thin facade over
:mod:`gputex.containers` (the registry, the model, the per-format modules)."""

from __future__ import annotations

from .containers import (  # noqa: F401
                         MAX_TEXTURE_BYTES,
                         MAX_TEXTURE_DIMENSION,
                         TextureFile,
                         check_shape,
                         default_color_space,
                         image_bytes,
                         is_texture_file,
                         level_bytes,
                         read_texture_file,
                         sniff,
                         write_texture_file,
)

__all__ = ["TextureFile", "read_texture_file", "write_texture_file", "is_texture_file", "sniff",
           "level_bytes", "image_bytes", "MAX_TEXTURE_DIMENSION", "MAX_TEXTURE_BYTES"]
