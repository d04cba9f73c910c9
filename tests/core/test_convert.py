"""Conversion rules, checked against independent float64 formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputex.convert import from_texture_rows, linear_to_srgb, srgb_to_linear, to_texture_rows
from gputex.errors import FormatError
from gputex.formats import get_format


def _round_half_up(x):
    return np.floor(np.asarray(x, np.float64) + 0.5)


@given(st.integers(0, 65535))
def test_16_to_8_bits_is_correctly_rounded(v):
    a = np.full((1, 1, 1), v, np.uint16)
    got = to_texture_rows(a, "linear", get_format("r8unorm"))[0, 0]
    assert got == _round_half_up(v * 255 / 65535)


@given(st.integers(0, 255))
def test_8_to_16_bits_is_exact(v):
    a = np.full((1, 1, 1), v, np.uint8)
    got = to_texture_rows(a, "linear", get_format("r16unorm")).view("<u2")[0, 0]
    assert got == v * 257


def test_unorm_to_float_and_back():
    a = np.arange(256, dtype=np.uint8).reshape(1, 256, 1)
    f = to_texture_rows(a, "srgb", get_format("r32float")).view("<f4")[0]
    assert np.array_equal(f, (np.arange(256) / 255).astype(np.float32))
    h = to_texture_rows(a, "srgb", get_format("r16float")).view("<f2")[0]
    assert np.array_equal(h, (np.arange(256) / 255).astype(np.float16))


def test_float_to_unorm_clamps_and_rounds():
    a = np.array([[-0.5, 0.0, 0.5 / 255, 0.3, 1.0, 7.0]], np.float32)[:, :, None]
    got = to_texture_rows(a, "linear", get_format("r8unorm"))[0]
    assert list(got) == [0, 0, 1, 77, 255, 255]


def test_linear_data_into_srgb_format_is_encoded():
    a = np.array([[[0.0, 0.5, 1.0, 0.5]]], np.float32)
    got = to_texture_rows(a, "linear", get_format("rgba8unorm-srgb"))[0]
    want = list(_round_half_up(linear_to_srgb(np.array([0.0, 0.5, 1.0])) * 255)) + [128]
    assert list(got) == want


def test_luma_for_colour_into_one_channel():
    a = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 200, 30]]], np.uint8)
    got = to_texture_rows(a, "srgb", get_format("r8unorm"))[0]
    want = _round_half_up(a[0].astype(float) @ [0.299, 0.587, 0.114])
    assert list(got) == list(want)


def test_grey_alpha_into_rg_and_rgba():
    a = np.array([[[10, 200], [30, 0]]], np.uint8)
    assert list(to_texture_rows(a, "srgb", get_format("rg8unorm"))[0]) == [10, 200, 30, 0]
    assert list(to_texture_rows(a, "srgb", get_format("rgba8unorm"))[0]) == [10, 10, 10, 200, 30, 30, 30, 0]


def test_rgb10a2_packing():
    a = np.array([[[65535, 0, 32768, 65535]]], np.uint16)
    word = to_texture_rows(a, "linear", get_format("rgb10a2unorm")).view("<u4")[0, 0]
    r, g, b, al = word & 1023, (word >> 10) & 1023, (word >> 20) & 1023, word >> 30
    assert (r, g, b, al) == (1023, 0, _round_half_up(32768 * 1023 / 65535), 3)
    back = from_texture_rows(to_texture_rows(a, "linear", get_format("rgb10a2unorm")), get_format("rgb10a2unorm"), 1)
    assert back.tolist() == [[[1023, 0, 512, 3]]]


def test_integer_formats_take_codes_unchanged_or_refuse():
    a = np.array([[[3, 250]]], np.uint8)
    assert list(to_texture_rows(a, "srgb", get_format("rg16uint")).view("<u2")[0]) == [3, 250]
    with pytest.raises(FormatError, match=r"^values 3\.\.250 do not fit rg8sint \(-128\.\.127\)$"):
        to_texture_rows(a, "srgb", get_format("rg8sint"))
    with pytest.raises(FormatError, match="^float data cannot be stored in integer format r8uint"):
        to_texture_rows(np.zeros((1, 1, 1), np.float32), "linear", get_format("r8uint"))


def test_srgb_transfer_functions_invert():
    v = np.linspace(0, 1, 1001)
    assert np.allclose(linear_to_srgb(srgb_to_linear(v)), v, atol=1e-12)
    assert abs(srgb_to_linear(188 / 255) - 0.5) < 0.003
