"""The decoded image: :class:`Image` (pixels and what they mean) and :func:`from_array`.

Its own module so every reader (decode, hdr, the containers' expansions) can make one without
importing the decoders: no numpy at import, no other gputex step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import DecodeError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Image", "from_array"]


@dataclass
class Image:
    """A decoded image: ``pixels`` is ``(height, width, channels)``, channels 1-4."""

    pixels: np.ndarray
    color_space: str  # "srgb" or "linear"
    source: str = "<array>"
    mode: str = ""
    pages: int = 1  # pages in the file (multi-page TIFF); this is one of them
    warnings: list[str] = field(default_factory=list)  # what the caller should be told

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def channels(self) -> int:
        return int(self.pixels.shape[2])

    @property
    def kind(self) -> str:
        """"unorm" (uint8/uint16), "float" or "int" (int32)."""
        k = self.pixels.dtype.kind
        return "float" if k == "f" else ("int" if k == "i" else "unorm")

    @property
    def bits(self) -> int:
        return self.pixels.dtype.itemsize * 8


def from_array(pixels: np.ndarray, color_space: str | None = None, source: str = "<array>") -> Image:
    """Wrap a numpy array (H, W) or (H, W, C) as an :class:`Image`.

    uint8 / uint16 are unorm data (sRGB by default), float32 linear, int32 integers.
    """
    import numpy as np

    a = np.asarray(pixels)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or not 1 <= a.shape[2] <= 4:
        raise DecodeError(f"{source}: array of shape {a.shape} is not (H, W) or (H, W, 1..4)")
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    if a.dtype == np.float64 or a.dtype == np.float16:
        a = a.astype(np.float32)
    if a.dtype not in (np.uint8, np.uint16, np.float32, np.int32):
        raise DecodeError(f"{source}: arrays of dtype {a.dtype} are not supported "
                          "(use uint8, uint16, int32 or float32)")
    a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("=")))
    if color_space is None:
        color_space = "linear" if a.dtype.kind in "fi" else "srgb"
    return Image(a, color_space, source, f"array:{a.dtype}")
