"""Row-pitch arithmetic: properties over odd widths and every format, and the 640 CTS vectors."""

from __future__ import annotations

import csv
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputex.formats import FORMATS
from gputex.layout import (
    bands,
    blocks,
    copy_layout,
    mip_count,
    mip_size,
    padded_bytes_per_row,
    physical_size,
    required_bytes_in_copy,
    tight_bytes_per_row,
)

SIZED = [f for f in FORMATS.values() if f.block_bytes > 0]
formats = st.sampled_from(SIZED)
dims = st.integers(min_value=1, max_value=20000)


def _vectors():
    path = os.path.join(os.path.dirname(__file__), "data", "copy-vectors.tsv")
    with open(path) as f:
        rows = [r for r in csv.reader((ln for ln in f if not ln.startswith("#")), delimiter="\t")]
    header, body = rows[0], rows[1:]
    return [dict(zip(header, r)) for r in body]


VECTORS = _vectors()


def test_vector_file_has_640_cases():
    assert len(VECTORS) == 640


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: (f"{v['method']}-{v['format']}-{v['copyWidth']}x{v['copyHeight']}"
                                                      f"x{v['copyDepthOrLayers']}-{v['bytesPerRow']}-{v['rowsPerImage']}"))
def test_required_bytes_matches_cts_vectors(v):
    fmt = FORMATS[v["format"]]
    want = (int(v["blockW"]), int(v["blockH"]), int(v["bytesPerBlock"]))
    assert (fmt.block[0], fmt.block[1], fmt.block_bytes) == want
    got = required_bytes_in_copy(fmt, int(v["copyWidth"]), int(v["copyHeight"]), int(v["copyDepthOrLayers"]),
                                 int(v["bytesPerRow"]), int(v["rowsPerImage"]))
    assert got == int(v["requiredBytesInCopy"])
    assert int(v["offset"]) + got == int(v["minDataSize"])


@given(formats, dims)
def test_tight_row_covers_every_block(fmt, width):
    across = -(-width // fmt.block[0])
    assert tight_bytes_per_row(fmt, width) == across * fmt.block_bytes
    assert across * fmt.block[0] >= width > (across - 1) * fmt.block[0]


@given(formats, dims)
def test_padded_row_is_smallest_multiple_of_256(fmt, width):
    tight, padded = tight_bytes_per_row(fmt, width), padded_bytes_per_row(fmt, width)
    assert padded % 256 == 0 and padded >= tight and padded - tight < 256


@given(formats, dims, dims, st.integers(1, 8))
def test_layout_is_consistent(fmt, w, h, layers):
    lay = copy_layout(fmt, w, h, layers)
    across, down = blocks(fmt, w, h)
    # bytes_per_row counts block rows: independent of the height (the classic bug)
    assert lay.bytes_per_row == tight_bytes_per_row(fmt, w)
    assert lay.rows_per_image == down == -(-h // fmt.block[1])
    assert lay.data_bytes == across * fmt.block_bytes * down * layers
    # staging holds every padded row of every layer except the last row's padding, rounded to 4
    exact = lay.padded_bytes_per_row * (down * layers - 1) + across * fmt.block_bytes
    assert lay.staging_bytes == exact + (-exact) % 4
    assert lay.padding_bytes == lay.staging_bytes - lay.data_bytes >= 0


@given(dims, dims)
def test_mip_chain_ends_at_1x1(w, h):
    n = mip_count(w, h)
    assert mip_size(w, h, n - 1) == (1, 1)
    assert n == 1 or mip_size(w, h, n - 2) != (1, 1)
    for level in range(n):
        assert mip_size(w, h, level) == (max(1, w >> level), max(1, h >> level))


def test_small_bc_levels_occupy_whole_blocks():
    bc7 = FORMATS["bc7-rgba-unorm"]
    assert physical_size(bc7, 2, 2) == (4, 4)
    assert physical_size(bc7, 1, 1) == (4, 4)
    lay = copy_layout(bc7, 1, 1)
    assert (lay.bytes_per_row, lay.rows_per_image, lay.data_bytes) == (16, 1, 16)


@given(st.integers(0, 5000), st.integers(1, 5000), st.integers(1, 1 << 24))
def test_bands_cover_rows_once_within_budget(rows, row_bytes, budget):
    parts = bands(rows, row_bytes, budget)
    covered = [r for a, b in parts for r in range(a, b)]
    assert covered == list(range(rows))
    for a, b in parts:
        assert b > a
        assert (b - a) * row_bytes <= budget or b - a == 1


@pytest.mark.parametrize("width,rgba8,rgba16f,rgba32f,r8", [
    (1, 256, 256, 256, 256), (7, 256, 256, 256, 256), (33, 256, 512, 768, 256), (63, 256, 512, 1024, 256),
    (64, 256, 512, 1024, 256), (65, 512, 768, 1280, 256), (127, 512, 1024, 2048, 256),
    (258, 1280, 2304, 4352, 512), (425, 1792, 3584, 6912, 512), (800, 3328, 6400, 12800, 1024)])
def test_padded_rows_match_reference_table(width, rgba8, rgba16f, rgba32f, r8):
    # copy-rules.md section 6
    got = [padded_bytes_per_row(FORMATS[n], width) for n in ("rgba8unorm", "rgba16float", "rgba32float", "r8unorm")]
    assert got == [rgba8, rgba16f, rgba32f, r8]
