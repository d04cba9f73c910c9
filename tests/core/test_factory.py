"""The test image factory itself: exact patterns and files that read back as written."""

from __future__ import annotations

import imagecodecs
import numpy as np
import pytest
from PIL import Image

from factory import alpha_holes, checker, gradient, noise, write


def test_gradient_runs_from_0_to_the_top_code():
    g = gradient(5, 9, 4, np.uint16)
    assert g.shape == (5, 9, 4) and g.dtype == np.uint16
    assert list(g[0, :, 0][[0, -1]]) == [0, 65535] and list(g[:, 0, 1][[0, -1]]) == [0, 65535]
    assert g[0, 0, 2] == 0 and g[-1, -1, 2] == 65535 and (g[..., 3] == 65535).all()
    assert np.all(np.diff(g[0, :, 0].astype(int)) > 0)


def test_checker_cells_alternate():
    c = checker(4, 6, cell=2, c=1)
    assert c[:, :, 0].tolist() == [[0, 0, 255, 255, 0, 0]] * 2 + [[255, 255, 0, 0, 255, 255]] * 2


def test_rng_fixture_is_seeded_from_the_test_name(rng):
    import zlib

    want = np.random.default_rng(zlib.crc32(b"test_factory.py::test_rng_fixture_is_seeded_from_the_test_name"))
    assert rng.integers(0, 2**63) == want.integers(0, 2**63)


def test_alpha_holes_zero_about_the_fraction(rng):
    a = alpha_holes(rng, np.full((100, 100, 4), 255, np.uint8), 0.3)
    assert 0.25 < (a[..., 3] == 0).mean() < 0.35 and (a[..., :3] == 255).all()


@pytest.mark.parametrize("c", [None, 1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_files_read_back_exactly(rng, tmp_path, c, dtype):
    a = noise(rng, 7, 5, c, dtype)
    path = write(tmp_path / "sub" / "x.png", a)
    back = imagecodecs.png_decode(open(path, "rb").read())
    assert back.dtype == dtype and np.array_equal(back, a[:, :, 0] if c == 1 else a)


def test_pillow_options_and_other_suffixes_go_through_pillow(rng, tmp_path):
    a = noise(rng, 6, 4, 3)
    assert np.array_equal(np.asarray(Image.open(write(tmp_path / "x.png", a, compress_level=1))), a)
    f = noise(rng, 3, 2, None, np.float32)
    assert np.array_equal(np.asarray(Image.open(write(tmp_path / "f.tiff", f))), f)
