"""The rehearsal on the device thread (gputex.run.rehearsal, from gputex.warmup's header reads):
which inputs get one, and that it leaves the real chain nothing to make (every pipeline cache hit)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from gputex.pipeline import MipOptions, Options, Result, upload_image
from gputex.run import rehearsal
from gputex.warmup import png_shape

# the rehearsal makes the shaders' pipelines: keep the chains on them on a CPU adapter too
pytestmark = pytest.mark.usefixtures("mip_shader")


def test_png_shape_reads_the_ihdr(tmp_png, tmp_path, rng):
    assert png_shape(tmp_png(rng.integers(0, 256, (8, 32, 4), np.uint8), "a.png")) == (32, 8, 4, 8, "srgb")
    assert png_shape(tmp_png(rng.integers(0, 65536, (5, 3), np.uint16), "b.png")) == (3, 5, 1, 16, "linear")
    for name, chunk in (("e.png", b"gAMA"), ("f.png", b"tRNS")):  # another colour space, an added alpha
        data = (tmp_path / "a.png").read_bytes()
        extra = struct.pack(">I4s", 4, chunk) + bytes(4) + struct.pack(">I", zlib.crc32(chunk + bytes(4)))
        (tmp_path / name).write_bytes(data[:33] + extra + data[33:])
        assert png_shape(str(tmp_path / name)) is None
    (tmp_path / "c.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x04\0\0\0\x04\x08\x03")  # palette
    assert png_shape(str(tmp_path / "c.png")) is None
    (tmp_path / "d.png").write_bytes(b"GIF89a" + bytes(40))
    assert png_shape(str(tmp_path / "d.png")) is None
    assert png_shape(str(tmp_path / "missing.png")) is None


def test_rehearsal_only_where_it_meets_the_real_chain(tmp_png, rng):
    pot = tmp_png(rng.integers(0, 256, (64, 128, 4), np.uint8), "pot.png")
    odd = tmp_png(rng.integers(0, 256, (63, 128, 4), np.uint8), "odd.png")
    assert rehearsal(Options(mips=True), [pot]) is not None
    assert rehearsal(Options(mips=True), [odd]) is not None  # at its own size (on a GPU)
    assert rehearsal(Options(mips=False), [pot]) is None
    assert rehearsal(Options(mips=True), ["-"]) is None


def test_the_rehearsal_image_keeps_the_long_side_and_the_passes_shapes(gpu, monkeypatch):
    """One texel high with the CPU adapters' forms; with the GPU forms as short as keeps each
    first pass's level 3 halving level 2 on both axes (``SG_TILE``): 8 texels."""
    import gputex.mips.spd as spd

    monkeypatch.setattr(spd, "FIRST_PASS_LEVELS", None)
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", False)
    shape = spd.rehearsal_shape
    assert shape(gpu, 8192, 8192) == (1, 8192) and shape(gpu, 64, 4096) == (4096, 1) and shape(gpu, 1, 1) == (1, 1)
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)  # (a first pass of spd.SPLIT_FIRST levels)
    assert [shape(gpu, 8192, 8192), shape(gpu, 2048, 2048), shape(gpu, 64, 4096)] == [(8, 8192), (8, 2048), (4096, 8)]
    assert [shape(gpu, 16, 16), shape(gpu, 8, 8), shape(gpu, 4, 2), shape(gpu, 1, 1)] == [(8, 16), (8, 8), (1, 4), (1, 1)]
    assert spd.pass_shapes(gpu, 8192, 8) == spd.pass_shapes(gpu, 8192, 8192) != spd.pass_shapes(gpu, 8192, 4)


@pytest.mark.gpu
@pytest.mark.parametrize("h,w,channels,dtype", [
    (256, 512, 4, np.uint8),
    (128, 128, 1, np.uint16),
    (64, 8192, 4, np.uint8),  # 14 levels: three passes of the single-pass chain, each its own pipeline
])
@pytest.mark.parametrize("gpu_forms", [None, True])  # (True: the GPU forms, forced on any adapter)
def test_after_a_rehearsal_the_real_chain_makes_no_pipeline(gpu, tmp_png, rng, monkeypatch, h, w, channels, dtype,
                                                            gpu_forms):
    import gputex.mips.spd as spd
    from gputex.decode import decode
    from gputex.device import Session

    if gpu_forms:
        monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
        monkeypatch.setattr(spd, "SUBGROUPS", True)

    top = 255 if dtype == np.uint8 else 65535
    path = tmp_png(rng.integers(0, top + 1, (h, w, channels), dtype).squeeze(), "in.png")
    opts = Options(mips=True, mip_options=MipOptions(filter="box"))
    session = Session()  # fresh caches
    run = rehearsal(opts, [path])
    assert run is not None
    run(session)
    before = {name: c.stats() for name, c in session.caches().items()}
    assert before, "the rehearsal made nothing"
    tex = upload_image(session, decode(path), opts, Result(path))
    try:
        assert tex.levels == max(w, h).bit_length()
        after = {name: c.stats() for name, c in session.caches().items()}
        grown = {n: (before.get(n, {}).get("misses", 0), s["misses"]) for n, s in after.items()
                 if s["misses"] != before.get(n, {}).get("misses", 0)}
        assert not grown, f"caches that missed after the rehearsal: {grown}"
    finally:
        tex.destroy()


def _levels_tile(w: int, h: int) -> bool:
    """Every level from 2 on takes its sums from an earlier level (``cpu.sources``: no cell grid)."""
    from gputex.mips.cpu import sources

    full = max(w, h).bit_length()
    return all(src != 0 for src in sources(w, h, full)[1:])


@pytest.mark.parametrize("w,h", [(8192, 8192), (16384, 16384), (16384, 4096), (12288, 8192), (8193, 2049),
                                 (4097, 4097), (8191, 8193), (8190, 8190), (16383, 16385), (6000, 4000),
                                 (4095, 4097), (1, 1), (4096, 4096), (16385, 16384), (1 << 28, 1)])
def test_host_size_takes_sizes_whose_levels_tile(w, h):
    """Up to 2^24 texels the host engine takes any size; above (its 128-bit build, to 2^28 texels)
    only sizes whose chain needs no grid of cell sums (``cpu.sources``: its plan, computed apart),
    those grids taking 1.6 GB at 8191 x 8193."""
    from gputex.warmup import HOST_MAX_TEXELS, HOST_SUMS64_TEXELS, host_size

    texels = w * h
    expected = texels <= HOST_SUMS64_TEXELS or (texels <= HOST_MAX_TEXELS and _levels_tile(w, h))
    assert host_size(w, h) is expected
    assert host_size(8192, 8192) and not host_size(8191, 8193) and not host_size(16384, 16385)


def test_png_wants_device_by_its_size(tmp_path):
    """The IHDR check: an 8-bit 8192^2 PNG is the host's (no device at the start), an 8-bit
    8191 x 8193 one and a 16-bit one want the device (only the first 33 bytes are read)."""
    from gputex.warmup import png_wants_device

    def header(name: str, w: int, h: int, depth: int) -> str:
        body = b"IHDR" + struct.pack(">IIBBBBB", w, h, depth, 6, 0, 0, 0)
        path = tmp_path / name
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + body + struct.pack(">I", zlib.crc32(body)))
        return str(path)

    assert png_wants_device(header("big.png", 8192, 8192, 8)) is False
    assert png_wants_device(header("odd.png", 8191, 8193, 8)) is True
    assert png_wants_device(header("small_odd.png", 4095, 4097, 8)) is False
    assert png_wants_device(header("deep.png", 64, 64, 16)) is True
    assert png_wants_device(str(tmp_path / "none.png")) is None
