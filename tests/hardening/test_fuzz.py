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


# -- texture-file parsers (KTX2, KTX 1, DDS): same rule, no GPU needed ----------------------------

def _texture_seeds() -> list[bytes]:
    from gputex.dds import write_dds
    from gputex.formats import get_format
    from gputex.ktx2 import write_ktx2
    from gputex.texfile import TextureFile

    import texmaker

    rng = np.random.default_rng(1)
    out = []
    for name, w, h, levels, faces in (("rgba8unorm", 9, 5, 4, 1), ("bc7-rgba-unorm", 13, 6, 4, 1),
                                      ("r16float", 4, 4, 3, 6), ("bc1-rgba-unorm", 8, 8, 4, 1)):
        fmt = get_format(name)
        tf = TextureFile(fmt, w, h, faces=faces, source="seed", color_space="linear")
        tf.levels = []
        for i in range(levels):
            lw, lh, _ = tf.level_size(i)
            n = (-(-lw // fmt.block[0])) * (-(-lh // fmt.block[1])) * fmt.block_bytes * faces
            tf.levels.append(rng.integers(0, 256, n, np.uint8).tobytes())
        out.append(b"".join(bytes(p) for p in write_ktx2(tf)))
        out.append(b"".join(bytes(p) for p in write_ktx2(tf, zstd=3)))
        out.append(b"".join(bytes(p) for p in write_dds(tf)))
    a = rng.integers(0, 256, (7, 5), np.uint8)
    out.append(texmaker.ktx1("r8unorm", 5, 7, [[r.tobytes() for r in a]], bytes_per_texel=1))
    out.append(texmaker.ktx2_zlib(out[0]))
    # formats read by expansion (gputex.containers.expand) and a 1D texture
    words = rng.integers(0, 1 << 16, 35, np.uint16).astype("<u2").tobytes()
    out.append(texmaker.ktx2(4, 7, 5, [words], block_bytes=2, type_size=2,
                             samples=[(0, 5, 2, 0, 31), (5, 6, 1, 0, 63), (11, 5, 0, 0, 31)]))
    out.append(texmaker.ktx2(123, 3, 3, [rng.integers(0, 256, 36, np.uint8).tobytes()], block_bytes=4, type_size=4,
                             samples=[(0, 9, 0, 0, 8448), (27, 5, 0x20, 15, 31), (9, 9, 1, 0, 8448),
                                      (27, 5, 0x21, 15, 31), (18, 9, 2, 0, 8448), (27, 5, 0x22, 15, 31)]))
    out.append(texmaker.ktx2(23, 2, 2, [rng.integers(0, 256, 36, np.uint8).tobytes()], block_bytes=3, layers=3,
                             samples=[(0, 8, 0, 0, 255), (8, 8, 1, 0, 255), (16, 8, 2, 0, 255)],
                             kv={"KTXcubemapIncomplete": b"\x07", "KTXwriter": b"t\0"}))
    out.append(texmaker.ktx2(37, 6, 0, [bytes(24), bytes(12), bytes(4)], block_bytes=4,
                             samples=[(8 * i, 8, c, 0, 255) for i, c in enumerate((0, 1, 2, 15))],
                             kv={"KTXorientation": b"r\0", "KTXwriter": b"t\0"}))
    return out


TEXTURE_SEEDS = _texture_seeds()


@st.composite
def mutated_texture(draw):
    data = bytearray(draw(st.sampled_from(TEXTURE_SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "truncate", "word", "big"]))
        if op == "flip":
            data[i] ^= draw(st.integers(1, 255))
        elif op == "truncate":
            del data[max(i, 4):]
        elif op == "word":  # a header/index field set to a small number
            data[i:i + 4] = draw(st.integers(0, 70)).to_bytes(4, "little")
        else:
            data[i:i + 4] = b"\xff\xff\xff\x7f"
        if not data:
            break
    return bytes(data)


@FUZZ
@given(data=mutated_texture())
def test_mutated_texture_files_parse_or_fail_cleanly(tmp_path, data):
    from gputex.ktx2 import validate
    from gputex.texfile import level_bytes, read_texture_file

    p = tmp_path / "fuzz.tex"
    p.write_bytes(data)
    try:
        tf = read_texture_file(str(p))
    except GputexError as e:
        msg = str(e)
        assert msg.startswith(f"{p}: ") and "\n" not in msg, msg
    else:
        assert [len(lv) for lv in tf.levels] == [level_bytes(tf, i) for i in range(len(tf.levels))]
    if data.startswith(b"\xabKTX 20"):
        for problem in validate(data, str(p)):
            assert problem.rule and "\n" not in problem.message
