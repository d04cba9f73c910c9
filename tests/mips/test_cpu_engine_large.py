"""The host's integer mip engine over 2^24 texels (``gputex/_mipcpu128.c``: ``_mipcpu.c`` built
with 128-bit sums, which ``cpu.host_chain`` takes above ``cpu.SUMS64_TEXELS``), against references
that do not come from the engine: ``intbox.model_chain`` of a small tile whose repetition makes a
large power-of-two image (every level of the image is then known exactly), codes at the sums'
bounds, and sampled texels of odd sizes computed from intbox's weights and ``round_code``
(every texel of one odd size also against the shader). Slow: images of 64-256 MB."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image

from gputex.layout import mip_count
from gputex.mips import cpu
from gputex.mips.intbox import _weights, lin_table, model_chain, round_code

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(cpu._mipcpu128 is None, reason="gputex._mipcpu128 was not built (no C compiler)")]


def _tile(rng, t, channels, bits, alpha):
    """A t x t tile: random codes, colour mostly bright (70% in the top quarter: sums of weighted
    alpha past 2**64 over opaque footprints at 2^26 texels, which 64-bit sums would wrap); alpha 0
    on ~30%, full on ~30%, partial elsewhere (``mixed``), or full everywhere (``opaque``)."""
    top = (1 << bits) - 1
    a = rng.integers(0, top + 1, (t, t, channels), np.uint8 if bits == 8 else np.uint16)
    a[...] = np.where(rng.random(a.shape) < 0.7, rng.integers(top - top // 4, top + 1, a.shape), a)
    if channels in (2, 4):
        r = rng.random((t, t))
        a[..., -1] = top if alpha == "opaque" else np.where(r < 0.3, 0, np.where(r < 0.6, top, a[..., -1]))
    return a


def _tiled_levels(tile, channels, bits, srgb, weighted, w, h):
    """Levels 1.. of the (w, h) image of ``tile`` repeated (w, h, the tile's size powers of two):
    level k <= log2(t) is the tile's level k repeated, each later one the tile's top level
    everywhere (each footprint then covers whole tiles); the tile's levels from the model."""
    t = tile.shape[0]
    model = [np.array(lv, tile.dtype).reshape(-1, len(lv[0]), channels)
             for lv in model_chain(tile.tolist(), channels, bits, srgb, weighted, mip_count(t, t))]
    out = []
    for k in range(1, mip_count(w, h)):
        lw, lh = max(1, w >> k), max(1, h >> k)
        if k < len(model) + 1 and (t >> k) >= 1 and k < mip_count(t, t):
            out.append(np.tile(model[k - 1], (lh // (t >> k), lw // (t >> k), 1)))
        else:
            out.append(np.broadcast_to(model[-1], (lh, lw, channels)))
    return out


@pytest.mark.parametrize("w,h,channels,bits,srgb,alpha,kernels", [
    (8192, 8192, 4, 8, True, "mixed", "simd"),       # 2^26: the fused band from level 1 to 9
    (8192, 8192, 4, 8, True, "opaque", "simd"),      # opaque footprints' integer thresholds
    (8192, 8192, 4, 8, True, "mixed", "generic"),    # the engine's loops without the RGBA8 kernels
    (16384, 4096, 4, 8, False, "mixed", "simd"),     # 8-bit linear RGBA: sRGB tables of its own
    (8192, 8192, 2, 8, True, "mixed", "simd"),
    (16384, 2048, 2, 16, False, "mixed", "simd"),    # 16-bit linear, integer division codes
])
def test_tiled_image_over_2_24_texels_equals_the_tiles_model(rng, w, h, channels, bits, srgb, alpha, kernels):
    tile = _tile(rng, 16, channels, bits, alpha)
    a = np.tile(tile, (h // 16, w // 16, 1))
    assert w * h > cpu.SUMS64_TEXELS
    for weighted in (True, False):
        got = cpu.host_chain(a, channels, bits, srgb, weighted, mip_count(w, h), nthreads=2, kernels=kernels)
        want = _tiled_levels(tile, channels, bits, srgb, weighted, w, h)
        assert len(got) == len(want) == mip_count(w, h) - 1
        for lv, (g, m) in enumerate(zip(got, want), 1):
            assert g.dtype == a.dtype and np.array_equal(g, m), f"level {lv} ({'weighted' if weighted else 'straight'})"


@pytest.mark.parametrize("w,h", [(16384, 16384), (16383, 16385)])
def test_largest_codes_at_2_28_texels_stay_the_largest(w, h):
    """Sums at their bound (W * 255 * 2**31, past 2**66 at 2^28 texels: 64 bits would wrap):
    every level of an image of the largest codes, weighted, keeps them."""
    a = np.full((h, w, 4), 255, np.uint8)
    for lv, g in enumerate(cpu.host_chain(a, 4, 8, True, True, mip_count(w, h)), 1):
        assert g.min() == 255, f"level {lv}"


def _texel(a, lin, w, h, lv, x, y, weighted):
    """Texel (x, y) of level ``lv`` of RGBA8 sRGB ``a`` from intbox's definitions: the integer
    weights of each axis (``intbox._weights``), the exact sums (numpy row sums, below 2**52; the
    rows' weighted sum in Python integers) and ``round_code``."""
    dw, dh = max(1, w >> lv), max(1, h >> lv)
    xs, ys = _weights(w, dw, x), _weights(h, dh, y)
    x0, y0 = xs[0][0], ys[0][0]
    wx = np.array([wt for _, wt in xs], np.int64)
    wy = [wt for _, wt in ys]
    block = a[y0:y0 + len(ys), x0:x0 + len(xs)]
    al = block[..., 3].astype(np.int64)
    ls = lin[block[..., :3]]
    plain = (ls * wx[None, :, None]).sum(axis=1)  # (rows, 3)
    prod = (ls * (al * wx[None, :])[..., None]).sum(axis=1)
    asum = (al * wx[None, :]).sum(axis=1)
    p = [sum(int(wy[j]) * int(plain[j, c]) for j in range(len(wy))) for c in range(3)]
    s = [sum(int(wy[j]) * int(prod[j, c]) for j in range(len(wy))) for c in range(3)]
    alpha = sum(int(wy[j]) * int(asum[j]) for j in range(len(wy)))
    total = w * h
    colour = [round_code(s[c], alpha, 8, True) if weighted and alpha else round_code(p[c], total, 8, True)
              for c in range(3)]
    return tuple(colour + [round_code(alpha, total, 8, False)])


@pytest.mark.parametrize("w,h,weighted", [(8191, 8193, True), (8193, 2049, True), (4097, 4097, False)])
def test_odd_sizes_over_2_24_texels_round_as_intbox(rng, w, h, weighted):
    """Odd sizes (levels 1-2 from the base of weighted footprints, later ones from cell grids or
    tiling levels): random sRGB codes with holes of alpha 0, partial alpha, and an opaque quarter
    of bright colours (weighted sums past 2**64 at 8191x8193, at every level: each sum is over W);
    60 sampled texels of levels 1-3, and three (corners, middle) of each later level whose
    footprints are at most W / 16 texels, each against its exact sums. (The last levels of odd
    sizes: ``test_largest_codes_at_2_28_texels_stay_the_largest``.)"""
    a = _image(rng, w, h, 4, 8, "holes")
    a[h // 2:, w // 2:, 3] = 255  # an opaque quarter (opaque footprints' thresholds), bright
    a[h // 2:, w // 2:, :3] = rng.integers(200, 256, (h - h // 2, w - w // 2, 3))
    got = cpu.host_chain(a, 4, 8, True, weighted, mip_count(w, h), nthreads=2)
    lin = np.array(lin_table(8, True), np.int64)
    for lv, g in enumerate(got, 1):
        lh, lw = g.shape[:2]
        if lv <= 3:
            cells = [(int(x), int(y)) for x, y in zip(rng.integers(0, lw, 60), rng.integers(0, lh, 60))]
            cells += [(0, 0), (lw - 1, lh - 1), (lw // 2, lh // 2)]
        elif lw * lh >= 16:
            cells = [(0, 0), (lw - 1, lh - 1), (lw // 2, lh // 2)]
        else:
            continue
        for x, y in cells:
            assert tuple(g[y, x].tolist()) == _texel(a, lin, w, h, lv, x, y, weighted), (lv, x, y)


@pytest.mark.gpu
def test_odd_size_over_2_24_texels_gives_the_shaders_bytes(gpu, rng, monkeypatch):
    """4097x4097 (2^24 + 8193 texels), weighted RGBA8 sRGB with holes: every level of the 128-bit
    engine equals the shader's (GPUTEX_MIPS_ENGINE=shader; on lavapipe, this CPU)."""
    import gputex

    a = _image(rng, 4097, 4097, 4, 8, "holes")
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "shader")
    tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True)
    try:
        report = gputex.generate_mips(tex, alpha="weighted")
        shader = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()
    assert report.engine == "shader" and report.precision == "integer"
    got = cpu.host_chain(a, 4, 8, True, True, mip_count(4097, 4097))
    assert len(got) == len(shader)
    for lv, (g, s) in enumerate(zip(got, shader), 1):
        assert np.array_equal(g, s.reshape(g.shape)), f"level {lv}"


@pytest.mark.gpu
def test_upload_of_an_8192_png_makes_the_gpu_paths_ktx2_on_the_host(gpu, rng, tmp_path):
    """``gputex upload X.png --mips -o X.ktx2`` of an 8-bit 8192² PNG (2^26 texels): the chain and
    the file made on the host with no device (the result line says so; ``GPUTEX_TRACE`` has no
    ``device`` span, no ``gpu`` step), the same bytes as the device's path
    (``GPUTEX_SPLIT_DEVICE=start``, ``GPUTEX_MIPS_ENGINE=shader``: the shader on this adapter)."""
    import json
    import os
    import subprocess
    import sys

    import gputex

    from pngmaker import make_png

    tile = _tile(rng, 64, 4, 8, "mixed")
    a = np.tile(tile, (128, 128, 1))
    a[4096:, :, :3] = a[4096:, :, :3] // 2 + np.arange(8192, dtype=np.uint16)[:, None] % 128  # (not a tiled chain)
    src = tmp_path / "big.png"
    src.write_bytes(make_png(a, 6, 8))
    root = os.path.dirname(os.path.dirname(os.path.abspath(gputex.__file__)))
    files = {}
    for path, extra in (("host", {}), ("device", {"GPUTEX_SPLIT_DEVICE": "start", "GPUTEX_MIPS_ENGINE": "shader"})):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTEX_")}
        env.update(extra, PYTHONPATH=root + os.pathsep + env.get("PYTHONPATH", ""),
                   GPUTEX_TRACE=str(tmp_path / f"{path}.jsonl"))
        out = tmp_path / f"{path}.ktx2"
        p = subprocess.run([sys.executable, "-m", "gputex", "upload", str(src), "--format", "rgba8unorm-srgb", "--mips",
                            "--filter", "box", "-o", str(out)], capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr
        spans = {json.loads(line)["what"] for line in open(tmp_path / f"{path}.jsonl")}
        if path == "host":
            assert "chain and file made on the host" in p.stdout, p.stdout
            assert "mips:host-engine" in spans and not {"device", "gpu", "stage:upload"} & spans, spans
        else:
            assert {"device", "stage:mips", "stage:capture"} <= spans and "mips:host-engine" not in spans, spans
        files[path] = out.read_bytes()
    assert files["host"] == files["device"]
