"""The host's integer mip engine (gputex/_mipcpu.c, gputex/mips/cpu.py): the bytes of
``intbox.model_chain`` (independent Python) and of the shader on this adapter, every alpha mode,
1, 2 and 4 channels, sRGB and linear, 8 and 16 bits; correctly rounded against the float64
reference on large odd sizes; the engine choice and its override."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_mips_int import _image, assert_correctly_rounded

import gputex
from gputex.errors import FormatError
from gputex.layout import mip_count
from gputex.mips import cpu
from gputex.mips.intbox import model_chain

from reference import filter_levels

pytestmark = pytest.mark.skipif(not cpu.available(), reason="gputex._mipcpu was not built (no C compiler)")

MODEL_SIZES = [(1, 1), (1, 9), (9, 1), (2, 3), (3, 5), (7, 13), (13, 7), (16, 16), (33, 20), (61, 37)]
KINDS = [(1, 8, False), (1, 8, True), (2, 8, False), (2, 8, True), (4, 8, False), (4, 8, True),
         (1, 16, False), (2, 16, False), (4, 16, False)]


def _model(a, channels, bits, srgb, weighted):
    levels = mip_count(a.shape[1], a.shape[0])
    return [np.array(lv, a.dtype).reshape(-1, len(lv[0]), channels)
            for lv in model_chain(a.tolist(), channels, bits, srgb, weighted, levels)]


@pytest.mark.parametrize("w,h", MODEL_SIZES)
@pytest.mark.parametrize("channels,bits,srgb", KINDS)
def test_c_engine_equals_the_model_chain(rng, w, h, channels, bits, srgb):
    a = _image(rng, w, h, channels, bits, "holes")
    for weighted in (True, False):
        got = cpu.host_chain(a, channels, bits, srgb, weighted, mip_count(w, h), nthreads=2)
        want = _model(a, channels, bits, srgb, weighted)
        assert len(got) == len(want) == mip_count(w, h) - 1
        for lv, (g, m) in enumerate(zip(got, want), 1):
            assert g.dtype == a.dtype and np.array_equal(g, m), f"level {lv} ({'weighted' if weighted else 'straight'})"


@pytest.mark.parametrize("w,h,channels,srgb", [(64, 64, 4, True), (257, 131, 4, True), (100, 75, 2, False),
                                               (96, 40, 1, True), (99, 61, 4, True), (45, 83, 2, True),
                                               (255, 3, 4, False), (131, 97, 1, False)])
def test_c_engine_equals_the_model_on_larger_sizes_and_any_thread_count(rng, w, h, channels, srgb):
    """Levels from stored sums (64x64, 96x40: the tiled plan), from the base (257x131: levels 1
    and 2 fused) and from cell grids (99x61, 45x83, 255x3, 131x97: levels 3.. no earlier level
    tiles, a grid merged into the next), rows split over 1, 2, 3 and 7 threads: always the
    model's bytes."""
    a = _image(rng, w, h, channels, 8, "holes")
    want = _model(a, channels, 8, srgb, True)
    for threads in (1, 2, 3, 7):
        got = cpu.host_chain(a, channels, 8, srgb, True, mip_count(w, h), nthreads=threads)
        for lv, (g, m) in enumerate(zip(got, want), 1):
            assert np.array_equal(g, m), f"level {lv}, {threads} threads"


@pytest.mark.parametrize("w,h", [(1000, 999), (1024, 768), (257, 131)])
@pytest.mark.parametrize("alpha", ["weighted", "straight"])
def test_c_engine_is_correctly_rounded_against_float64(rng, w, h, alpha):
    a = _image(rng, w, h, 4, 8, "holes")
    got = cpu.host_chain(a, 4, 8, True, alpha == "weighted", mip_count(w, h))
    ref = filter_levels(a / 255, 4, srgb=True, alpha_mode=alpha)
    assert len(got) == len(ref) == mip_count(w, h) - 1
    for lv, (g, r) in enumerate(zip(got, ref), 1):
        assert_correctly_rounded(g, r, 255, f"{w}x{h} level {lv}")


@pytest.mark.parametrize("w,h,channels", [(16, 16, 4), (61, 37, 4), (33, 20, 2), (64, 64, 4), (257, 131, 4),
                                           (99, 61, 4), (45, 83, 2)])
def test_weighted_chain_of_opaque_footprints_equals_the_model(rng, w, h, channels):
    """Weighted alpha over footprints opaque throughout takes the integer thresholds of the plain
    sums (``_mipcpu.c``: a = 255 * W): images opaque everywhere, and opaque in their left half
    with holes and partial alpha in the right (footprints of both kinds, and mixed ones, at
    every level: from the base, stored sums, cell grids), 1 and 3 threads: the model's bytes."""
    for kind in ("opaque", "half"):
        a = _image(rng, w, h, channels, 8, "opaque" if kind == "opaque" else "holes")
        if kind == "half":
            a[:, : w // 2, -1] = 255
        want = _model(a, channels, 8, True, True)
        for threads in (1, 3):
            got = cpu.host_chain(a, channels, 8, True, True, mip_count(w, h), nthreads=threads)
            for lv, (g, m) in enumerate(zip(got, want), 1):
                assert np.array_equal(g, m), f"{kind}, level {lv}, {threads} threads"


def test_every_pair_of_opaque_srgb_codes_rounds_as_intbox():
    """Level 1 of a 131072x1 image, opaque, holds the weighted average of every pair of 8-bit sRGB
    codes (red: (i, j), green: (j, i), blue (i + j) mod 256): each texel of all 65536 has
    ``intbox.round_code`` of its exact weighted sums, as the float screen gave them before."""
    from gputex.mips.intbox import lin_table, round_code

    i, j = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    a = np.full((1, 2 * 65536, 4), 255, np.uint8)
    a[0, 0::2, 0], a[0, 1::2, 0] = i.ravel(), j.ravel()
    a[0, 0::2, 1], a[0, 1::2, 1] = j.ravel(), i.ravel()
    a[0, 0::2, 2], a[0, 1::2, 2] = i.ravel(), (i + j).ravel() % 256
    got = cpu.host_chain(a, 4, 8, True, True, 2)[0][0]
    lin = lin_table(8, True)
    w = 65536  # each base texel's weight
    codes = {(p, q): round_code(w * 255 * (lin[p] + lin[q]), w * 510, 8, True) for p in range(256) for q in range(p, 256)}
    for ch in range(3):
        p, q = a[0, 0::2, ch].tolist(), a[0, 1::2, ch].tolist()
        want = [codes[(x, y) if x <= y else (y, x)] for x, y in zip(p, q)]
        assert got[:, ch].tolist() == want, ch
    assert (got[:, 3] == 255).all()


@pytest.mark.parametrize("weighted", [True, False])
def test_every_pair_of_srgb_codes_rounds_as_intbox(rng, weighted):
    """Level 1 of a 131072x1 image holds the average of every pair of 8-bit sRGB codes (red: (i,
    j), green: (j, i), blue random; alpha random, some 0): each of 3000 drawn texels (and four
    fixed ones) has ``intbox.round_code`` of its exact sums (the float screen decides none
    wrongly)."""
    from gputex.mips.intbox import lin_table, round_code

    i, j = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    a = np.zeros((1, 2 * 65536, 4), np.uint8)
    a[0, 0::2, 0], a[0, 1::2, 0] = i.ravel(), j.ravel()
    a[0, 0::2, 1], a[0, 1::2, 1] = j.ravel(), i.ravel()
    a[0, :, 2] = rng.integers(0, 256, 2 * 65536)
    a[0, :, 3] = np.where(rng.random(2 * 65536) < 0.2, 0, rng.integers(1, 256, 2 * 65536))
    got = cpu.host_chain(a, 4, 8, True, weighted, 2)[0][0]
    lin = lin_table(8, True)
    w, total = 65536, 2 * 65536  # each base texel's weight, and W
    for t in rng.choice(65536, 3000, replace=False).tolist() + [0, 255, 65535, 257 * 128]:
        p, q = a[0, 2 * t].tolist(), a[0, 2 * t + 1].tolist()
        al = w * (p[3] + q[3])
        for ch in range(3):
            if weighted and al:
                want = round_code(w * (p[3] * lin[p[ch]] + q[3] * lin[q[ch]]), al, 8, True)
            else:
                want = round_code(w * (lin[p[ch]] + lin[q[ch]]), total, 8, True)
            assert got[t, ch] == want, (t, ch)
        assert got[t, 3] == round_code(al, total, 8, False)


def test_c_engine_sums_do_not_overflow_at_its_largest_size():
    """4095x4097 (one texel under 2**24) of the largest codes, weighted: every sum is at its
    bound (W * 255 * 2**31 < 2**64); every level must stay 255 everywhere."""
    a = np.full((4097, 4095, 4), 255, np.uint8)
    for lv, g in enumerate(cpu.host_chain(a, 4, 8, True, True, mip_count(4095, 4097)), 1):
        assert g.min() == 255, f"level {lv}"
    a16 = np.full((4096, 4096, 2), 65535, np.uint16)
    assert all(g.min() == 65535 for g in cpu.host_chain(a16, 2, 16, False, True, 13))


@pytest.mark.parametrize("weighted", [False, True])
def test_c_engine_rounds_random_srgb_at_its_largest_size(rng, weighted):
    """4096x4096 random sRGB codes (W = 2**24, the largest the engine serves): straight alpha with
    random alpha, or weighted alpha over an opaque image (the integer thresholds' path for
    ``a == 255 * W``); sampled level-1 texels and every texel of levels 6.. have
    ``intbox.round_code`` of their exact sums (numpy int64 block sums of ``lin_table``: below
    2**56)."""
    from gputex.mips.intbox import lin_table, round_code

    n = 4096
    a = rng.integers(0, 256, (n, n, 4), dtype=np.uint8)
    if weighted:
        a[..., 3] = 255
    levels = cpu.host_chain(a, 4, 8, True, weighted, mip_count(n, n))
    lin = np.array(lin_table(8, True), np.int64)[a[..., :3]]
    alpha = a[..., 3].astype(np.int64)

    def block_sums(v, lv):
        s = 1 << lv
        return v.reshape(n // s, s, n // s, s, *v.shape[2:]).sum(axis=(1, 3))

    for lv in [1] + list(range(6, 13)):
        got = levels[lv - 1].reshape(n >> lv, n >> lv, 4)
        sums, asums, count = block_sums(lin, lv), block_sums(alpha, lv), 1 << (2 * lv)
        cells = [(int(y), int(x)) for y, x in rng.integers(0, n >> lv, (1500, 2))] if lv == 1 else \
            [(y, x) for y in range(n >> lv) for x in range(n >> lv)]
        for y, x in cells:  # (opaque and weighted: sum(255 * lin) / (255 * count), the same ratio)
            for ch in range(3):
                assert got[y, x, ch] == round_code(int(sums[y, x, ch]), count, 8, True), (lv, y, x, ch)
            assert got[y, x, 3] == round_code(int(asums[y, x]), count, 8, False), (lv, y, x)


def test_c_engine_refuses_what_it_does_not_serve():
    from gputex import _mipcpu

    base = np.zeros((4, 4, 4), np.uint8)
    out = np.zeros(64, np.uint8)
    with pytest.raises(ValueError, match="^sRGB data is served at 8 bits only$"):
        _mipcpu.chain(base, out, 2, 4, 2, 4, 16, True, False, b"", b"")
    with pytest.raises(ValueError, match="^base is not width \\* height texels$"):
        _mipcpu.chain(base, out, 5, 4, 2, 4, 8, False, False, b"", b"")
    with pytest.raises(ValueError, match="^channels must be 1, 2 or 4$"):
        _mipcpu.chain(base, out, 4, 4, 2, 3, 8, False, False, b"", b"")
    with pytest.raises(ValueError, match="^too many levels for the size$"):
        _mipcpu.chain(base, out, 4, 4, 4, 4, 8, False, False, b"", b"")
    assert not cpu.serves(4, 16, True, 64, 64) and not cpu.serves(4, 8, True, 16385, 16384)
    assert cpu.serves(4, 8, True, 16384, 16384) and cpu.serves(4, 8, True, 4097, 4096) and cpu.serves(2, 16, False, 9, 3)
    with pytest.raises(ValueError, match="^width \\* height must be 1 .. 2\\*\\*24$"):
        _mipcpu.chain(np.zeros(4097 * 4096, np.uint8), np.zeros(1 << 23, np.uint8), 4097, 4096, 2, 1, 8, False,
                      False, b"", b"")
    from gputex import _mipcpu128

    with pytest.raises(ValueError, match="^width \\* height must be 1 .. 2\\*\\*28$"):
        _mipcpu128.chain(b"", np.zeros(1, np.uint8), 16385, 16384, 2, 1, 8, False, False, b"", b"")


def _gpu_levels(gpu, a, fmt, space, alpha, engine, monkeypatch):
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", engine)
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, color_space=space)
    try:
        report = gputex.generate_mips(tex, alpha=alpha)
        return report, [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


GPU_CASES = [("rgba8unorm-srgb", "srgb", 4, 8), ("bgra8unorm-srgb", "srgb", 4, 8), ("rgba8unorm", "linear", 4, 8),
             ("rg8unorm", "linear", 2, 8), ("r8unorm", "srgb", 1, 8), ("rgba16unorm", "linear", 4, 16),
             ("r16unorm", "linear", 1, 16)]


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,space,channels,bits", GPU_CASES)
@pytest.mark.parametrize("w,h", [(1, 9), (7, 13), (64, 64), (257, 131)])
def test_c_engine_gives_the_shaders_bytes(gpu, rng, monkeypatch, fmt, space, channels, bits, w, h):
    if "16" in fmt and not gpu.has_feature("texture-format16bit-norm"):
        pytest.skip(f"{gpu.name} has no 16-bit norm formats")
    a = _image(rng, w, h, channels, bits, "holes")
    for alpha in ("weighted", "straight", "premultiplied"):
        r_shader, shader = _gpu_levels(gpu, a, fmt, space, alpha, "shader", monkeypatch)
        r_cpu, host = _gpu_levels(gpu, a, fmt, space, alpha, "cpu", monkeypatch)
        assert (r_shader.engine, r_cpu.engine) == ("shader", "cpu")
        assert r_cpu.precision == "integer" and r_cpu.exact
        for lv, (s, c) in enumerate(zip(shader, host), 1):
            assert np.array_equal(s, c), f"{alpha} level {lv}"


@pytest.mark.gpu
def test_each_layer_of_an_array_gets_the_shaders_bytes(gpu, rng, monkeypatch):
    """An array texture's chains, layer by layer: the C engine reads and writes only its layer."""
    import wgpu

    from gputex.formats import get_format
    from gputex.texture import copy_usage, create_texture
    from gputex.upload import write_image

    layers = [_image(rng, 37, 20, 4, 8, "holes") for _ in range(3)]
    got = {}
    for engine in ("shader", "cpu"):
        monkeypatch.setenv("GPUTEX_MIPS_ENGINE", engine)
        tex = create_texture(gpu, get_format("rgba8unorm-srgb"), 37, 20, layers=3, levels=6,
                             usage=copy_usage(wgpu.TextureUsage.TEXTURE_BINDING))
        try:
            for i, a in enumerate(layers):
                write_image(tex, gputex.from_array(a), layer=i)
            assert {gputex.generate_mips(tex, layer=i).engine for i in range(3)} == {engine}
            got[engine] = [gputex.capture(tex, lv, i) for i in range(3) for lv in range(1, 6)]
        finally:
            tex.destroy()
    assert all(np.array_equal(s, c) for s, c in zip(got["shader"], got["cpu"]))
    assert not np.array_equal(got["cpu"][0], got["cpu"][5])  # the layers differ


@pytest.mark.gpu
def test_engine_choice_and_its_override(gpu, rng, monkeypatch):
    a = _image(rng, 16, 8, 4, 8, "holes")
    monkeypatch.delenv("GPUTEX_MIPS_ENGINE")
    tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True)
    try:
        want = "cpu" if gpu.info.adapter_type == "CPU" else "shader"
        assert cpu.engine(tex) == want and gputex.generate_mips(tex).engine == want
        # what the integer chain does not serve stays on the GPU's paths
        assert gputex.generate_mips(tex, filter="kaiser").engine == "shader"
        monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "shader")
        assert gputex.generate_mips(tex).engine == "shader"
        monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "cpu")
        assert gputex.generate_mips(tex).engine == "cpu"
        # precision="int" is the multi-pass shader chain, the reference of the shader forms
        assert gputex.generate_mips(tex, precision="int").engine == "shader"
        monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "gpu")
        with pytest.raises(FormatError, match="^GPUTEX_MIPS_ENGINE must be auto, shader or cpu, got 'gpu'$"):
            gputex.generate_mips(tex)
    finally:
        tex.destroy()


@pytest.mark.gpu
def test_sizes_the_c_engine_does_not_serve_run_the_shader(gpu, monkeypatch):
    """16-bit sRGB data: the shader makes the chain even with GPUTEX_MIPS_ENGINE=cpu."""
    if not gpu.has_feature("texture-format16bit-norm"):
        pytest.skip(f"{gpu.name} has no 16-bit norm formats")
    a = np.arange(8 * 6 * 4, dtype=np.uint16).reshape(6, 8, 4) * 97
    report, _ = _gpu_levels(gpu, a, "rgba16unorm", "srgb", "weighted", "cpu", monkeypatch)
    assert report.engine == "shader" and report.precision == "integer"


@pytest.mark.gpu
def test_out_of_host_memory_falls_back_to_the_shader(gpu, rng, monkeypatch):
    a = _image(rng, 16, 8, 4, 8, "holes")
    r_shader, shader = _gpu_levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "shader", monkeypatch)

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cpu, "host_chain", no_memory)
    report, got = _gpu_levels(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "cpu", monkeypatch)
    assert report.engine == "shader" and report.precision == "integer"
    assert report.note == "<array>: no host memory for the C mip engine's sums; the shader was used"
    assert all(np.array_equal(s, g) for s, g in zip(shader, got))


def test_native_rows_are_a_view_of_the_image_or_none():
    from gputex.convert import native_rows, to_texture_rows
    from gputex.formats import get_format

    a = np.arange(5 * 3 * 4, dtype=np.uint8).reshape(5, 3, 4)
    srgb = get_format("rgba8unorm-srgb")
    rows = native_rows(a, "srgb", srgb)
    assert rows is not None and np.shares_memory(rows, a) and rows.shape == (5, 12)
    assert np.array_equal(rows, to_texture_rows(a, "srgb", srgb))
    a16 = np.arange(6 * 2 * 2, dtype="<u2").reshape(6, 2, 2)
    assert np.array_equal(native_rows(a16, "linear", get_format("rg16unorm")),
                          to_texture_rows(a16, "linear", get_format("rg16unorm")))
    # what the upload converts: no view
    assert native_rows(a, "srgb", srgb, premultiply=True) is None
    assert native_rows(a, "linear", srgb) is None  # linear data stored in an sRGB format
    assert native_rows(a, "srgb", get_format("bgra8unorm-srgb")) is None
    assert native_rows(a[:, :, :3], "srgb", srgb) is None
    assert native_rows(a[:, ::-1], "srgb", srgb) is None  # not contiguous
    assert native_rows(a16.astype(">u2"), "linear", get_format("rg16unorm")) is None


@pytest.mark.gpu
def test_the_upload_hands_level_0_to_the_host_engine(gpu, rng, monkeypatch):
    """``gputex.upload(..., mips=True)`` of an image stored as it is: no level read back (its
    bytes are the image's); flipped on upload: read back. The shader's bytes either way."""
    import importlib

    import wgpu

    from gputex.upload import upload as raw_upload

    capture_module = importlib.import_module("gputex.capture")  # (gputex.capture is the function)

    a = _image(rng, 45, 22, 4, 8, "holes")
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "shader")
    tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", mips=True)
    want = [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    tex.destroy()
    reads = []
    real = capture_module.capture_bytes
    monkeypatch.setattr(capture_module, "capture_bytes", lambda *a, **k: reads.append(a[1:]) or real(*a, **k))
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "cpu")
    for flip, read in ((False, []), (True, [(0, 0)])):
        reads.clear()
        tex = gputex.upload(gpu, gputex.from_array(a[::-1] if flip else a), "rgba8unorm-srgb", mips=True,
                            flip_y=flip)
        try:
            assert reads == read
            assert all(np.array_equal(gputex.capture(tex, lv), w) for lv, w in enumerate(want, 1))
        finally:
            tex.destroy()
    # a base of the wrong shape is not trusted: level 0 is read back
    tex = raw_upload(gpu, gputex.from_array(a), "rgba8unorm-srgb", levels=len(want) + 1,
                     usage=wgpu.TextureUsage.TEXTURE_BINDING)
    try:
        reads.clear()
        gputex.generate_mips(tex, base=np.zeros((22, 44 * 4), np.uint8))
        assert reads == [(0, 0)]
        assert all(np.array_equal(gputex.capture(tex, lv), w) for lv, w in enumerate(want, 1))
    finally:
        tex.destroy()


def test_sources_follow_the_tiling_plan():
    assert cpu.sources(64, 64, 7) == [0, 1, 2, 3, 4, 5]
    # 1537x1999: 768x999, 384x499, 192x249, 96x124, 48x62, 24x31, 12x15, 6x7, 3x3, 1x1
    assert cpu.sources(1537, 1999, 11) == [0, 0, 0, 0, 4, 5, 0, 0, 7, 9]
    for w, h in itertools.product((1, 3, 8, 37), (1, 5, 16)):
        for lv, src in enumerate(cpu.sources(w, h, mip_count(w, h)), 1):
            if src:
                assert max(1, w >> src) % max(1, w >> lv) == 0 and max(1, h >> src) % max(1, h >> lv) == 0


@pytest.mark.parametrize("size", [None, (128, 32), (45, 35)])  # (the int, spd and odd chains' check images)
@pytest.mark.parametrize("channels,bits,srgb", KINDS + [(4, 16, True), (2, 16, True)])
def test_self_checks_reference_is_the_model_at_every_check_image(monkeypatch, size, channels, bits, srgb):
    """``integer.expected_levels`` (the C engine where it serves the kind, else the model: 16-bit
    sRGB) gives the model's bytes for the self-checks' images, and so does its model path."""
    from gputex.mips import integer, odd, spd

    assert {spd.CHECK_SIZE, odd.CHECK_SIZE} == {(128, 32), (45, 35)}
    codes = integer.check_codes(channels, bits, size)
    levels = mip_count(codes.shape[1], codes.shape[0])
    for weighted in (True, False):
        want = _model(codes, channels, bits, srgb, weighted)
        for path in ("engine", "model"):
            if path == "model":
                monkeypatch.setattr(cpu, "available", lambda: False)
            got = integer.expected_levels(codes, channels, bits, srgb, weighted, levels)
            assert len(got) == len(want)
            for lv, (g, m) in enumerate(zip(got, want), start=1):
                assert g.dtype == m.dtype and np.array_equal(g, m), f"{path} {size} {weighted} level {lv}"
            monkeypatch.undo()


@pytest.mark.gpu
def test_a_self_check_without_the_engine_runs_the_model_on_a_thread_of_its_own(gpu, monkeypatch):
    """Where the C engine does not serve the kind (not built here; 16-bit sRGB), the self-check's
    reference is the model, computed on a thread while the chain is made; its verdict is the
    same. With the engine, the reference comes on the calling thread."""
    import threading

    from gputex.formats import get_format
    from gputex.mips import integer

    real, where = integer.expected_levels, []

    def recording(*args):
        where.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(integer, "expected_levels", recording)
    fmt = get_format("rgba8unorm-srgb")
    assert integer.matches_model(gpu, fmt, "srgb", "weighted", integer.int_chain, None, 4) == (True, "")
    monkeypatch.setattr(cpu, "available", lambda: False)
    assert integer.matches_model(gpu, fmt, "srgb", "weighted", integer.int_chain, None, 4) == (True, "")
    assert where[0] == threading.current_thread().name and where[1].startswith("gputex-model")


ARENA_CASES = [(64, 64, 4, 8, True, "opaque"), (99, 61, 4, 8, True, "holes"), (96, 40, 1, 8, False, "holes"),
               (131, 97, 2, 16, False, "holes"), (257, 131, 4, 8, True, "holes"), (45, 83, 2, 8, True, "opaque"),
               (16, 16, 4, 8, True, "holes")]


def test_chains_of_every_kind_and_size_in_turn_reuse_the_arena_and_keep_the_models_bytes(rng):
    """The process's arena of sums (``_mipcpu.c``) is kept between chains and not cleared: chains
    of other sizes and kinds in turn (stored levels, cell grids, fused levels; each finds the
    previous one's sums where its own go), each against the model; the arena grows to the
    largest chain's sums and stays that size for smaller ones; ``arena=False`` maps the sums for
    the chain alone (the same bytes) and leaves the arena as it is; ``release_arena`` unmaps it."""
    cpu.release_arena()
    assert cpu.arena_bytes() == 0
    images = [(_image(rng, w, h, ch, bits, alpha), ch, bits, srgb) for w, h, ch, bits, srgb, alpha in ARENA_CASES]
    wants = [_model(a, ch, bits, srgb, weighted) for a, ch, bits, srgb in images for weighted in (True, False)]
    sizes = []
    for round_ in range(2):
        i = 0
        for a, ch, bits, srgb in images:
            for weighted in (True, False):
                h, w = a.shape[:2]
                got = cpu.host_chain(a, ch, bits, srgb, weighted, mip_count(w, h), nthreads=1 + round_)
                for lv, (g, m) in enumerate(zip(got, wants[i]), 1):
                    assert np.array_equal(g, m), f"{w}x{h}x{ch} {bits}-bit, weighted {weighted}, level {lv}, round {round_}"
                i += 1
                sizes.append(cpu.arena_bytes())
    # 257x131x4 keeps levels 2.. (129x65 sums of 4 slots) and its grids: the arena holds at least that
    assert max(sizes) >= 64 * 32 * 4 * 8
    assert sizes == sorted(sizes) and sizes[-1] == max(sizes)  # grows, never shrinks
    kept = cpu.arena_bytes()
    a, ch, bits, srgb = images[1]
    got = cpu.host_chain(a, ch, bits, srgb, True, mip_count(99, 61), arena=False)
    assert all(np.array_equal(g, m) for g, m in zip(got, wants[2]))
    assert cpu.arena_bytes() == kept
    assert cpu.release_arena() == kept and cpu.arena_bytes() == 0


def test_chains_on_several_threads_at_once_share_the_arena_or_map_their_own(rng):
    """Chains called from several Python threads at once (the GIL released): one holds the arena,
    the others map their sums; every result is the model's."""
    from concurrent.futures import ThreadPoolExecutor

    cases = [(_image(rng, w, h, 4, 8, "holes"), w, h) for w, h in [(257, 131), (99, 61), (128, 128), (61, 37)] * 3]
    wants = [_model(a, 4, 8, True, True) for a, _, _ in cases]
    with ThreadPoolExecutor(4) as pool:
        gots = list(pool.map(lambda c: cpu.host_chain(c[0], 4, 8, True, True, mip_count(c[1], c[2]), nthreads=1),
                             cases))
    for (_, w, h), got, want in zip(cases, gots, wants):
        for lv, (g, m) in enumerate(zip(got, want), 1):
            assert np.array_equal(g, m), f"{w}x{h} level {lv}"


@pytest.mark.parametrize("w,h,channels,bits,srgb", [(256, 256, 4, 8, True), (192, 160, 4, 8, True), (256, 64, 2, 8, True),
                                                    (160, 192, 2, 16, False), (256, 128, 1, 8, False)])
def test_fused_bands_of_several_levels_equal_the_model(rng, w, h, channels, bits, srgb):
    """Levels that tile the one before alone, 16 rows or more, made in one band from the base
    (``_mipcpu.c``'s ``fused_after``: 256^2 levels 1-4, 192x160 levels 1-3, 256x64 levels 1-2),
    their sums in rings: opaque, half-opaque and holes, weighted and straight, rows split over 1,
    2, 3 and 5 threads: the model's bytes."""
    for alpha in ("opaque", "half", "holes"):
        a = _image(rng, w, h, channels, bits, "holes" if alpha == "half" else alpha)
        if alpha == "half":
            a[: h // 2, :, -1] = (1 << bits) - 1
        for weighted in (True, False):
            want = _model(a, channels, bits, srgb, weighted)
            for threads in (1, 2, 3, 5):
                got = cpu.host_chain(a, channels, bits, srgb, weighted, mip_count(w, h), nthreads=threads)
                for lv, (g, m) in enumerate(zip(got, want), 1):
                    assert np.array_equal(g, m), f"{alpha}, weighted {weighted}, level {lv}, {threads} threads"


def _child_chain(args):
    a, w, h = args
    got = cpu.host_chain(a, 4, 8, True, True, mip_count(w, h), nthreads=1)
    return [g.tobytes() for g in got], cpu.arena_bytes()


def test_a_forked_process_keeps_the_arena_and_the_models_bytes(rng):
    """A process forked after chains (as the batch's decode workers are, from a fork server) inherits
    the arena and makes its chains with it: the model's bytes, the arena no smaller."""
    import multiprocessing

    a = _image(rng, 257, 131, 4, 8, "holes")
    cpu.host_chain(a, 4, 8, True, True, mip_count(257, 131))
    kept = cpu.arena_bytes()
    assert kept > 0
    b = _image(rng, 99, 61, 4, 8, "opaque")
    with multiprocessing.get_context("fork").Pool(1) as pool:
        levels, child_kept = pool.apply(_child_chain, ((b, 99, 61),))
    want = _model(b, 4, 8, True, True)
    assert len(levels) == len(want) == mip_count(99, 61) - 1
    for lv, (g, m) in enumerate(zip(levels, want), 1):
        assert np.array_equal(np.frombuffer(g, np.uint8), m.reshape(-1)), f"level {lv}"
    assert child_kept >= kept


def _release_in_child(q):
    q.put(cpu.release_arena())


def test_a_process_forked_while_a_chain_holds_the_arena_finds_it_free(rng):
    """Forked (by another thread) while a chain holds the process's arena, the child does not
    inherit it held: its chains can take it (``pthread_atfork``), and ``release_arena`` there gives
    back the inherited mapping. Without the handler the child found it held for ever (0 freed)."""
    import multiprocessing
    import threading
    import time

    small = _image(rng, 257, 131, 4, 8, "holes")
    cpu.host_chain(small, 4, 8, True, True, mip_count(257, 131))  # the arena exists
    assert cpu.arena_bytes() > 0
    big = _image(rng, 4096, 4096, 4, 8, "opaque")
    t = threading.Thread(target=cpu.host_chain, args=(big, 4, 8, True, True, mip_count(4096, 4096)),
                         kwargs={"nthreads": 1})
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    t.start()
    time.sleep(0.02)  # inside the chain (~0.1-0.2 s at 4096²): the arena held by that thread
    assert t.is_alive()
    child = ctx.Process(target=_release_in_child, args=(q,))
    child.start()
    freed = q.get(timeout=60)
    child.join(60)
    t.join()
    assert child.exitcode == 0 and freed > 0


def _rgba8(rng, w, h, kind):
    """An RGBA8 image for the 2x2 kernels: ``opaque``; ``holes`` (alpha 0 on 40% and a whole
    quarter, random elsewhere); ``sparse`` (opaque but for single texels of alpha 0, 254 or
    random, so most groups of eight 2x2s are opaque and a few fall back); ``partial`` (alpha
    1..255 everywhere)."""
    a = rng.integers(0, 256, (h, w, 4), np.uint8)
    if kind == "holes":
        return _image(rng, w, h, 4, 8, "holes")
    if kind == "partial":
        a[..., 3] = rng.integers(1, 256, (h, w))
        return a
    a[..., 3] = 255
    if kind == "sparse":
        n = max(1, w * h // 97)
        ys, xs = rng.integers(0, h, n), rng.integers(0, w, n)
        a[ys, xs, 3] = rng.choice(np.array([0, 254, 1, 128], np.uint8), n)
    return a


# even sizes (level 1 of 2x2 footprints): multiples of 4 (levels 1 and 2 together in AVX-512),
# rows of groups of eight and a remainder, one texel wide at level 1 or 2, levels after the band;
# then odd on one axis or both (levels from the base of weighted footprints, cell grids)
RGBA8_SIZES = [(2, 2), (4, 4), (6, 10), (10, 6), (64, 64), (48, 20), (72, 36), (100, 36), (136, 8), (8, 136),
               (130, 68), (34, 2), (96, 16), (48, 21), (21, 48), (131, 67), (67, 5), (3, 3)]
# odd sizes for the AVX-512 kernels of levels from the base (h13odd): level 1 one group of eight (17), a
# group and a remainder, fewer than eight texels a row; x even but y odd (50x9: two terms a footprint);
# level 2 of x = 4m + 1 (regular groups), 4m + 2 and 4m + 3 (footprints shifting: gathered groups);
# one texel wide or high; a row of planes past 64 texels (the byte permutes' blocks) with a remainder
ODD_SIZES = [(17, 9), (50, 9), (98, 7), (103, 9), (13, 250), (255, 13), (7, 1), (1, 7), (5, 3), (129, 35)]


@pytest.mark.parametrize("w,h", RGBA8_SIZES + ODD_SIZES)
def test_rgba8_kernels_equal_the_model(rng, w, h):
    """The RGBA8 sRGB kernels (``_mipcpu.c``: level 1 of even sizes from the base and 2x2-tiled
    levels from sums, in portable C; level 1, and levels 1 and 2 together, in AVX-512 where the
    CPU has it: groups of eight, a group with a texel not opaque and each row's last texels by the
    portable kernels; odd sizes' levels from the base and cell grids) against the model: opaque, holes of alpha 0, single
    texels not opaque among opaque ones, partial alpha; weighted and straight; every
    ``kernels`` choice; 1 and 3 threads. Linear RGBA8 too: the engine runs it as sRGB data of
    tables of its own (L(k) = k * 2**23) unless ``kernels="generic"``."""
    for kind in ("opaque", "holes", "sparse", "partial"):
        a = _rgba8(rng, w, h, kind)
        for srgb, weighted in ((True, True), (True, False), (False, True), (False, False)):
            want = _model(a, 4, 8, srgb, weighted)
            for kernels in ("simd", "avx512", "portable", "generic"):
                for threads in (1, 3):
                    got = cpu.host_chain(a, 4, 8, srgb, weighted, mip_count(w, h), nthreads=threads, kernels=kernels)
                    for lv, (g, m) in enumerate(zip(got, want), 1):
                        assert np.array_equal(g, m), \
                            f"{kind}, sRGB {srgb}, weighted {weighted}, {kernels}, {threads} threads, level {lv}"


@pytest.mark.parametrize("kernels", ["simd", "portable"])
def test_rgba8_kernels_at_the_largest_size_round_as_intbox(rng, kernels):
    """4096x4096 (W = 2**24: level 2's fallback sums of four level-1 sums need 128 bits), opaque
    but for scattered texels of alpha 0, 254 or random and a transparent block, weighted: sampled
    texels of levels 1 and 2 (both kinds of footprint) have ``intbox.round_code`` of their exact
    sums (numpy int64 block sums of ``lin_table``, weighted by alpha: below 2**44)."""
    from gputex.mips.intbox import lin_table, round_code

    n = 4096
    a = _rgba8(rng, n, n, "sparse")
    a[100:140, 200:260, 3] = 0
    levels = cpu.host_chain(a, 4, 8, True, True, 3, kernels=kernels)
    lin = np.array(lin_table(8, True), np.int64)[a[..., :3]]
    alpha = a[..., 3].astype(np.int64)
    for lv in (1, 2):
        s, m = 1 << lv, n >> lv
        asum = alpha.reshape(m, s, m, s).sum(axis=(1, 3))
        wsum = (lin * alpha[..., None]).reshape(m, s, m, s, 3).sum(axis=(1, 3))
        psum = lin.reshape(m, s, m, s, 3).sum(axis=(1, 3))
        got = levels[lv - 1]
        picks = [(int(y), int(x)) for y, x in rng.integers(0, m, (1500, 2))]
        picks += [(int(y), int(x)) for y, x in zip(*np.nonzero(asum < 255 * s * s))][:1500]  # not opaque
        for y, x in picks:
            for ch in range(3):
                if asum[y, x]:
                    want = round_code(int(wsum[y, x, ch]), int(asum[y, x]), 8, True)
                else:
                    want = round_code(int(psum[y, x, ch]), s * s, 8, True)
                assert got[y, x, ch] == want, (lv, y, x, ch)
            assert got[y, x, 3] == round_code(int(asum[y, x]), s * s, 8, False), (lv, y, x)


def test_simd_kernels_run_where_the_cpu_has_avx512():
    """``cpu.simd()`` (``__builtin_cpu_supports`` in the engine) agrees with the CPU's flags in
    /proc/cpuinfo: AVX-512 F, DQ, BW and VL all present exactly where the AVX-512 kernels run."""
    try:
        flags = next(ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")).split(":", 1)[1].split()
    except (OSError, StopIteration):
        pytest.skip("no /proc/cpuinfo flags on this system")
    want = all(f in flags for f in ("avx512f", "avx512dq", "avx512bw", "avx512vl"))
    assert cpu.simd() == want


@pytest.mark.parametrize("w,h", [(259, 257), (257, 515)])
def test_odd_kernels_split_over_threads_give_the_same_bytes(rng, w, h):
    """Levels 1 and 2 of an odd size made together over threads (``_mipcpu.c``'s odd12_rows: level 2's
    rows split evenly, each level-1 row to one job; over 2**16 texels, so the rows are split): the bytes
    of one thread and of the portable kernels (the model's: test_rgba8_kernels_equal_the_model), every
    level, with alpha sparse, in holes and partial, weighted and straight."""
    for kind in ("sparse", "holes", "partial"):
        a = _rgba8(rng, w, h, kind)
        for weighted in (True, False):
            want = cpu.host_chain(a, 4, 8, True, weighted, mip_count(w, h), nthreads=1, kernels="portable")
            for threads in (1, 2, 3, 16):
                got = cpu.host_chain(a, 4, 8, True, weighted, mip_count(w, h), nthreads=threads)
                for lv, (g, m) in enumerate(zip(got, want), 1):
                    assert np.array_equal(g, m), (kind, weighted, threads, lv)


def _box_sums(plane, n_to):
    """Exact integer sums of ``plane`` (int64, h x w) over the footprints of the integer box chain
    from (h, w) to ``n_to`` = (h', w'): the weights of ``intbox._weights`` on each axis, one axis at a
    time (numpy, no engine code)."""
    from gputex.mips.intbox import _weights

    out = plane
    for axis, m in ((1, n_to[1]), (0, n_to[0])):
        n = out.shape[axis]
        res = np.zeros(out.shape[:axis] + (m,) + out.shape[axis + 1:], np.int64)
        for j in range(m):
            for t, wt in _weights(n, m, j):
                if axis == 1:
                    res[:, j] += wt * out[:, t]
                else:
                    res[j] += wt * out[t]
        out = res
    return out


@pytest.mark.slow
@pytest.mark.parametrize("w,h", [(1537, 1999), (1999, 1537), (2047, 2049)])
def test_odd_kernels_at_large_sizes_round_as_intbox(rng, w, h):
    """The batch's odd sizes and 2047x2049 (W = 2**22 - 1: the largest sums the AVX-512 odd kernels
    hold in doubles, just under 2**53), opaque but for scattered texels not opaque, weighted and
    straight: every texel of levels 1 and 2 (from the base) and 3 (the first cell grid) against
    exact numpy sums (``lin_table`` weighted by ``intbox._weights``) and thresholds
    ``ceil(Q[k] * W / 2**32)`` (opaque footprints, straight alpha's codes), and sampled footprints
    not opaque against ``intbox.round_code`` of their exact weighted sums; ``simd`` (byte permutes
    where the CPU has VBMI), ``avx512`` (gathers) and ``portable`` kernels alike."""
    from gputex.mips.intbox import lin_table, round_code, threshold_table

    a = _rgba8(rng, w, h, "sparse")
    lin = np.array(lin_table(8, True), np.int64)
    total = w * h
    t = np.array([-(-q * total >> 32) for q in threshold_table(8, True)][1:], np.int64)  # T[1..255]
    alpha = a[..., 3].astype(np.int64)
    ones = np.ones_like(alpha)
    for weighted in (True, False):
        got_all = {k: cpu.host_chain(a, 4, 8, True, weighted, 4, nthreads=1, kernels=k)
                   for k in ("simd", "avx512", "portable")}
        got_all["simd, 3 threads"] = cpu.host_chain(a, 4, 8, True, weighted, 4, nthreads=3)
        for k in ("avx512", "portable", "simd, 3 threads"):
            for lv in range(3):
                assert np.array_equal(got_all[k][lv], got_all["simd"][lv]), (k, lv + 1)
        got = got_all["simd"]
        for lv in (1, 2, 3):
            size = (max(1, h >> lv), max(1, w >> lv))
            asum = _box_sums(alpha, size)
            count = _box_sums(ones, size)
            psum = [_box_sums(lin[a[..., ch]], size) for ch in range(3)]
            opaque = asum == 255 * count
            g = got[lv - 1]
            for ch in range(3):
                want = np.searchsorted(t, psum[ch], side="right")
                sel = opaque if weighted else np.ones_like(opaque)
                assert np.array_equal(g[..., ch][sel], want[sel]), (weighted, lv, ch)
            want_a = np.minimum((2 * asum + total) // (2 * total), 255)
            assert np.array_equal(g[..., 3], want_a), (weighted, lv)
            if weighted:
                ys, xs = np.nonzero(~opaque)
                assert len(ys) > 0
                pick = rng.choice(len(ys), min(200, len(ys)), replace=False)
                for i in pick:
                    y, x = int(ys[i]), int(xs[i])
                    box = [(ty, tx, wy * wx) for ty, wy in _axis(h, size[0], y) for tx, wx in _axis(w, size[1], x)]
                    aw = sum(wt * int(alpha[ty, tx]) for ty, tx, wt in box)
                    for ch in range(3):
                        if aw:
                            s = sum(wt * int(alpha[ty, tx]) * int(lin[a[ty, tx, ch]]) for ty, tx, wt in box)
                            want = round_code(s, aw, 8, True)
                        else:
                            want = round_code(sum(wt * int(lin[a[ty, tx, ch]]) for ty, tx, wt in box), total, 8, True)
                        assert g[y, x, ch] == want, (lv, y, x, ch)


def _axis(n, m, j):
    from gputex.mips.intbox import _weights

    return _weights(n, m, j)


@pytest.mark.parametrize("w,h", [(6, 10), (131, 67), (17, 9), (1, 7), (259, 257), (255, 13)])
def test_the_128_bit_build_gives_the_64_bit_bytes_on_small_sizes(rng, monkeypatch, w, h):
    """``_mipcpu128`` (the same source with 128-bit sums, which ``host_chain`` takes over 2^24
    texels) on small bases, where the 64-bit build is exact too: the same bytes for every kind,
    alpha mode and loop form (review: the default run had computed nothing with it)."""
    from gputex import _mipcpu

    try:
        from gputex import _mipcpu128
    except ImportError:
        pytest.skip("gputex._mipcpu128 was not built")
    for channels, bits in ((4, 8), (2, 8), (1, 8), (4, 16), (1, 16)):
        top = 256 if bits == 8 else 65536
        a = rng.integers(0, top, (h, w, channels)).astype(np.uint8 if bits == 8 else np.uint16)
        if channels in (2, 4):
            alpha = a[..., -1]
            alpha[rng.random((h, w)) < 0.3] = 0
            alpha[rng.random((h, w)) < 0.4] = top - 1
        levels = max(w, h).bit_length()
        for srgb in ((True, False) if bits == 8 else (False,)):
            for weighted in ((True, False) if channels != 1 else (False,)):
                for kernels in ("simd", "portable", "generic"):
                    monkeypatch.setattr(cpu, "_mipcpu", _mipcpu)
                    want = cpu.host_chain(a, channels, bits, srgb, weighted, levels, nthreads=2, kernels=kernels)
                    monkeypatch.setattr(cpu, "_mipcpu", _mipcpu128)
                    got = cpu.host_chain(a, channels, bits, srgb, weighted, levels, nthreads=2, kernels=kernels)
                    for lv, (g, m) in enumerate(zip(got, want), start=1):
                        assert np.array_equal(g, m), (channels, bits, srgb, weighted, kernels, lv)
