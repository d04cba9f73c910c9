"""Contact sheet: every mip level side by side in one image, top-aligned, 1-texel gaps."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["contact_sheet"]


def contact_sheet(levels: list[np.ndarray], gap: int = 1) -> np.ndarray:
    """Place ``(H, W, C)`` arrays left to right on a zero background (transparent where alpha)."""
    import numpy as np

    height = max(a.shape[0] for a in levels)
    width = sum(a.shape[1] for a in levels) + gap * (len(levels) - 1)
    sheet = np.zeros((height, width, levels[0].shape[2]), levels[0].dtype)
    x = 0
    for a in levels:
        sheet[: a.shape[0], x : x + a.shape[1]] = a
        x += a.shape[1] + gap
    return sheet
