"""The format table is complete and agrees with WebGPU."""

from __future__ import annotations

import pytest

from gputex.errors import FormatError
from gputex.formats import FORMATS, IMAGE_FORMATS, get_format


def test_every_wgpu_format_has_a_row():
    import wgpu

    names = {getattr(wgpu.TextureFormat, k) for k in dir(wgpu.TextureFormat) if not k.startswith("_")}
    assert names - set(FORMATS) == set()
    assert set(FORMATS) - names == set()


def test_issue_formats_are_accepted():
    wanted = ["r8unorm", "rg8unorm", "rgba8unorm", "rgba8unorm-srgb", "bgra8unorm", "bgra8unorm-srgb",
              "r16unorm", "rg16unorm", "rgba16unorm", "r16float", "rg16float", "rgba16float", "r32float",
              "rg32float", "rgba32float", "rgb10a2unorm", "r8uint", "r8sint", "rgba16uint", "rgba32sint"]
    assert set(wanted) <= set(IMAGE_FORMATS)


@pytest.mark.parametrize("name,bpb,block", [("rgba8unorm", 4, (1, 1)), ("rgba16float", 8, (1, 1)),
                                            ("rgba32float", 16, (1, 1)), ("bc1-rgba-unorm", 8, (4, 4)),
                                            ("bc7-rgba-unorm", 16, (4, 4)), ("astc-10x8-unorm", 16, (10, 8)),
                                            ("rgb10a2unorm", 4, (1, 1)), ("rg16unorm", 4, (1, 1))])
def test_block_facts(name, bpb, block):
    f = FORMATS[name]
    assert (f.block_bytes, f.block) == (bpb, block)


def test_srgb_twins():
    assert get_format("rgba8unorm").srgb_name == "rgba8unorm-srgb"
    assert get_format("bgra8unorm-srgb").linear_name == "bgra8unorm"
    assert get_format("r8unorm").srgb_name is None


def test_unknown_format_message():
    with pytest.raises(FormatError, match=r"^unknown texture format 'rgb8unorm'; use one of: r8unorm, "):
        get_format("rgb8unorm")
    assert get_format("RGBA8UNORM_SRGB").name == "rgba8unorm-srgb"
