"""Texel-copy arithmetic: row pitch, block rows, staging sizes, mip sizes, bands.

Pure functions, no GPU import. The rules are WebGPU's (``shared/reference/copy-rules.md``):

* ``bytes_per_row`` is the distance between rows of *blocks* (a 4x4 block row for BC).
  ``queue.write_texture`` accepts the tight value; buffer copies
  (``copy_buffer_to_texture`` / ``copy_texture_to_buffer``) need a multiple of 256.
* ``rows_per_image`` counts block rows; it is needed when a copy has several layers.
* the minimum data size is
  ``bytes_per_row * rows_per_image * (layers - 1) + bytes_per_row * (blocks_down - 1)
  + blocks_across * block_bytes``: the last row is not padded.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .formats import Format

__all__ = [
    "COPY_ALIGNMENT",
    "CopyLayout",
    "align_up",
    "blocks",
    "tight_bytes_per_row",
    "padded_bytes_per_row",
    "required_bytes_in_copy",
    "mip_count",
    "mip_size",
    "physical_size",
    "copy_layout",
    "bands",
]

#: ``bytes_per_row`` alignment for buffer <-> texture copies.
COPY_ALIGNMENT = 256


def align_up(value: int, alignment: int) -> int:
    """Smallest multiple of ``alignment`` that is >= ``value``."""
    return -(-value // alignment) * alignment


def blocks(fmt: Format, width: int, height: int) -> tuple[int, int]:
    """Blocks across and down that cover ``width x height`` texels (partial blocks count whole)."""
    bw, bh = fmt.block
    return -(-width // bw), -(-height // bh)


def tight_bytes_per_row(fmt: Format, width: int) -> int:
    """Bytes in one row of blocks with no padding: what ``write_texture`` takes."""
    return blocks(fmt, width, 1)[0] * fmt.block_bytes


def padded_bytes_per_row(fmt: Format, width: int, alignment: int = COPY_ALIGNMENT) -> int:
    """Tight row rounded up to ``alignment`` (256 for buffer copies); at least one alignment unit."""
    return max(alignment, align_up(tight_bytes_per_row(fmt, width), alignment))


def required_bytes_in_copy(
    fmt: Format, width: int, height: int, layers: int, bytes_per_row: int, rows_per_image: int
) -> int:
    """WebGPU's ``requiredBytesInCopy`` for a copy of ``width x height x layers`` texels."""
    across, down = blocks(fmt, width, height)
    if layers <= 0:
        return 0
    total = bytes_per_row * rows_per_image * (layers - 1)
    if down > 0:
        total += bytes_per_row * (down - 1) + across * fmt.block_bytes
    return total


def mip_count(width: int, height: int, depth: int = 1) -> int:
    """Levels in a full chain: ``1 + floor(log2(max(w, h, d)))``."""
    return max(width, height, depth, 1).bit_length()


def mip_size(width: int, height: int, level: int) -> tuple[int, int]:
    """Logical size of ``level``: ``max(1, size >> level)`` on each axis."""
    return max(1, width >> level), max(1, height >> level)


def physical_size(fmt: Format, width: int, height: int) -> tuple[int, int]:
    """Logical size rounded up to whole blocks (what a copy of a small BC level covers)."""
    across, down = blocks(fmt, width, height)
    return across * fmt.block[0], down * fmt.block[1]


@dataclass(frozen=True)
class CopyLayout:
    """How one image (all layers of one mip level) travels to and from the GPU."""

    format: str
    width: int
    height: int
    layers: int
    blocks_across: int
    blocks_down: int
    bytes_per_row: int  # tight: write_texture
    rows_per_image: int  # block rows
    padded_bytes_per_row: int  # copy_texture_to_buffer / copy_buffer_to_texture
    padding_per_row: int
    data_bytes: int  # tight bytes of all layers: what is uploaded
    staging_bytes: int  # buffer size a padded copy of all layers needs
    padding_bytes: int  # staging_bytes - data_bytes

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def copy_layout(fmt: Format, width: int, height: int, layers: int = 1) -> CopyLayout:
    """The full copy arithmetic for ``width x height x layers`` of ``fmt`` at one level."""
    across, down = blocks(fmt, width, height)
    tight = across * fmt.block_bytes
    padded = padded_bytes_per_row(fmt, width)
    data = tight * down * layers
    staging = required_bytes_in_copy(fmt, width, height, layers, padded, down)
    staging = align_up(staging, 4)  # mappable buffers are a multiple of 4 bytes
    return CopyLayout(
        format=fmt.name, width=width, height=height, layers=layers,
        blocks_across=across, blocks_down=down,
        bytes_per_row=tight, rows_per_image=down,
        padded_bytes_per_row=padded, padding_per_row=padded - tight,
        data_bytes=data, staging_bytes=staging, padding_bytes=staging - data,
    )


def bands(rows: int, row_bytes: int, budget: int, multiple: int = 1) -> list[tuple[int, int]]:
    """Split ``rows`` block rows into consecutive ``(start, stop)`` bands of at most ``budget`` bytes.

    A band always holds at least one row (a single row larger than the budget
    still goes in one piece). ``multiple`` keeps band starts on that many rows.
    """
    if rows <= 0:
        return []
    per = max(1, budget // max(row_bytes, 1))
    if per >= multiple:
        per -= per % multiple
    per = max(per, 1)
    return [(start, min(rows, start + per)) for start in range(0, rows, per)]
