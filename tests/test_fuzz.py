"""Fuzzing the decode entry point: mutated real files and random bytes either decode or raise
a GputexError (one clear line) - never another exception, a hang, or a huge allocation.

CI runs a bounded number of examples; ``GPUTEX_FUZZ_EXAMPLES`` raises it for long runs.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage

import gputex
from gputex import png
from gputex.errors import GputexError

EXAMPLES = int(os.environ.get("GPUTEX_FUZZ_EXAMPLES", "150"))
MAX_PIXELS = 1 << 22  # keep every accepted decode small


def _seeds() -> list[bytes]:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (9, 13, 4), np.uint8)
    out = []
    for fmt, mode in (("PNG", "RGBA"), ("PNG", "P"), ("PNG", "L"), ("JPEG", "RGB"), ("GIF", "P"), ("BMP", "RGB"),
                      ("TIFF", "RGBA"), ("WEBP", "RGBA"), ("TGA", "RGBA"), ("PPM", "RGB"), ("ICO", "RGBA")):
        buf = io.BytesIO()
        im = PILImage.fromarray(a).convert(mode)
        im.save(buf, fmt)
        out.append(buf.getvalue())
    import imagecodecs

    out.append(imagecodecs.png_encode(rng.integers(0, 65536, (7, 5, 3), np.uint16)))
    return out


SEEDS = _seeds()


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "splice", "big"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[i] ^= draw(st.integers(1, 255))
        elif op == "truncate":
            del data[i:]
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 16))]
        elif op == "splice":
            other = draw(st.sampled_from(SEEDS))
            j = draw(st.integers(0, len(other) - 1))
            data[i:] = other[j:]
        else:  # a header field set to a huge value
            data[i:i + 4] = b"\x7f\xff\xff\xff"
    return bytes(data)


def _decode_bytes(tmp_path, data: bytes) -> None:
    p = tmp_path / "fuzz.img"
    p.write_bytes(data)
    try:
        img = gputex.decode(str(p), max_pixels=MAX_PIXELS)
    except GputexError as e:
        msg = str(e)
        assert msg.startswith(f"{p}: ") and "\n" not in msg, msg
        return
    assert img.width * img.height <= MAX_PIXELS
    assert img.pixels.ndim == 3 and 1 <= img.channels <= 4


FUZZ = settings(max_examples=EXAMPLES, deadline=2000, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(data=mutated())
def test_mutated_files_decode_or_fail_cleanly(tmp_path, data):
    _decode_bytes(tmp_path, data)


@FUZZ
@given(data=st.binary(max_size=512))
def test_random_bytes_decode_or_fail_cleanly(tmp_path, data):
    _decode_bytes(tmp_path, data)


@FUZZ
@given(data=mutated())
def test_png_chunk_walker_raises_only_valueerror(data):
    try:
        png.read_header(data)
    except ValueError:
        pass


REGRESSIONS = os.path.join(os.path.dirname(__file__), "fuzz_regressions")


@pytest.mark.parametrize("name", sorted(os.listdir(REGRESSIONS)))
def test_fuzz_findings_stay_fixed(tmp_path, name):
    """Inputs the long fuzz runs found (tiff_rational_offset.tiff: Pillow raised TypeError)."""
    path = os.path.join(REGRESSIONS, name)
    with pytest.raises(GputexError) as e:
        gputex.decode(path, max_pixels=MAX_PIXELS)
    assert str(e.value).startswith(f"{path}: corrupt image data (") and "\n" not in str(e.value)
