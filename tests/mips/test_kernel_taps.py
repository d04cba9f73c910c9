"""The float64 kernel chains' taps and tiles: ``gputex.mips.filters.kernel_taps`` (all texels of
an axis at once) against the one-tap-at-a-time definition with each filter's scalar weight
function (the same indices and float64 weights, to the bit); every chain level fits the
separable shader's tiles (``mip_exact_sep.wgsl``); both float64 kernel shaders stay right; which
one runs where."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gputex.mips.filters import get_filter, kernel_taps


def one_by_one(n, m, filter, wrap):
    f = get_filter(filter)
    r = n / m
    scale = max(r, 1.0)
    out = []
    for j in range(m):
        c = (j + 0.5) * r
        reach = f.radius * scale
        acc: dict[int, float] = {}
        for t in range(math.floor(c - reach), math.ceil(c + reach) + 1):
            x = (t + 0.5 - c) / scale
            if abs(x) >= f.radius:
                continue
            if wrap == "repeat":
                idx = t % n
            elif wrap == "mirror":
                mm = t % (2 * n)
                idx = 2 * n - 1 - mm if mm >= n else mm
            else:
                idx = min(max(t, 0), n - 1)
            acc[idx] = acc.get(idx, 0.0) + f.weight(x)
        total = sum(acc.values())
        out.append((sorted(acc), [acc[i] / total for i in sorted(acc)]))
    return out


@pytest.mark.parametrize("filter", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "repeat", "mirror"])
@pytest.mark.parametrize("n,m", [(1, 1), (2, 1), (3, 1), (5, 2), (7, 3), (13, 6), (61, 30), (257, 128),
                                 (999, 499), (1000, 500)])
def test_taps_equal_the_scalar_definition(filter, wrap, n, m):
    want = one_by_one(n, m, filter, wrap)
    got = kernel_taps(n, m, filter, wrap)
    assert len(got) == m
    for j, ((wi, ww), (gi, gw)) in enumerate(zip(want, got)):
        assert gi == wi, f"texel {j}: indices {gi} vs {wi}"
        assert np.array_equal(gw, np.array(ww)), f"texel {j}: weights differ by {np.abs(gw - ww).max()}"


@pytest.mark.parametrize("filter", ["kaiser", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "repeat", "mirror"])
def test_every_chain_level_fits_the_separable_tiles(filter, wrap):
    """mip_exact_sep.wgsl holds at most SEP_SLOTS source columns / rows per tile: every level of a
    chain (each from the one before, at most 2 + 1/size times smaller) fits, so the 2D-footprint
    shader is never needed there; a resize-like ratio does not fit and gets None."""
    from gputex.layout import mip_size
    from gputex.mips.exact import sep_tables

    for w, h in [(1, 1), (1, 9), (9, 1), (3, 3), (5, 7), (13, 7), (61, 37), (255, 2), (257, 131), (1000, 999),
                 (4095, 4097), (8191, 31)]:
        level = 1
        while True:
            (pw, ph), (dw, dh) = mip_size(w, h, level - 1), mip_size(w, h, level)
            if (pw, ph) == (1, 1):
                break
            assert sep_tables(pw, ph, dw, dh, filter, wrap) is not None, f"{w}x{h} level {level}"
            level += 1
    assert sep_tables(300, 300, 30, 30, filter, wrap) is None


@pytest.mark.parametrize("filter", ["kaiser", "lanczos"])
def test_both_float64_kernel_shaders_match_the_reference(rng, gpu, filter, monkeypatch):
    """mip_exact_sep.wgsl (the default) and mip_exact_kernel.wgsl (the 2D footprint: where an
    adapter type is listed in KERNEL_SHADER, and wherever a level would not fit the tiles), each
    forced: within half an LSB of the float64 reference, and the same bytes on this image (they
    sum in another order; a value within 1e-9 of a step of a tie takes the even code in both, see
    the triangle test below)."""
    import gputex

    from reference import filter_levels

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    a = rng.integers(0, 256, (37, 61, 4), np.uint8)
    a[..., 3] = np.where(rng.random((37, 61)) < 0.3, 0, a[..., 3])

    def levels():
        tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, filter=filter,
                            precision="fast")
        try:
            return [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
        finally:
            tex.destroy()

    monkeypatch.setenv("GPUTEX_MIPS_KERNEL", "sep")
    sep = levels()
    monkeypatch.setenv("GPUTEX_MIPS_KERNEL", "2d")
    two_d = levels()
    ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted", filter=filter)
    for got in (sep, two_d):
        for i, (g, r) in enumerate(zip(got, ref), start=1):
            d = np.abs(g.astype(np.float64) - np.clip(r, 0, 1) * 255)
            assert d.max() <= 0.5 + 1e-6, f"level {i}: {d.max():.4f} LSB"
    assert all(np.array_equal(x, y) for x, y in zip(sep, two_d))


def test_triangle_ties_go_to_the_even_code_in_both_shaders(rng, gpu, monkeypatch):
    """The triangle filter at 2:1 (weights 1/8, 3/8, 3/8, 1/8 an axis) puts colour values exactly
    on the midpoint between two codes, where the float64 sums' last bits (their order, an adapter's
    fused multiply-adds) would decide: lavapipe and the H200 rounded such ties differently, and so
    did the two shaders. A value within ``TIE`` of a midpoint takes the even code: both shaders give
    the same bytes, every code is within half an LSB of the float64 reference, every tie is even
    (this image has ties), and away from ties the code is the reference's rounding."""
    import gputex

    from reference import filter_levels

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    a = rng.integers(0, 256, (40, 60, 4), np.uint8)
    a[..., 3] = 255

    def levels(shader):
        monkeypatch.setenv("GPUTEX_MIPS_KERNEL", shader)
        tex = gputex.upload(gpu, gputex.from_array(a, "linear"), "rgba8unorm", mips=True, filter="triangle",
                            precision="fast")
        try:
            return [gputex.capture(tex, lv).astype(np.float64) for lv in range(1, tex.levels)]
        finally:
            tex.destroy()

    sep, two_d = levels("sep"), levels("2d")
    ref = [np.clip(r, 0, 1) * 255 for r in filter_levels(a / 255, 4, srgb=False, alpha_mode="weighted",
                                                         filter="triangle")]
    assert len(sep) == len(two_d) == len(ref) == 5
    ties = 0
    for s_, t_, r in zip(sep, two_d, ref):
        assert np.array_equal(s_, t_)
        assert np.abs(s_ - r).max() <= 0.5 + 1e-9
        on_tie = np.abs(r - np.floor(r) - 0.5) < 1e-9
        ties += int(on_tie.sum())
        assert np.all(s_[on_tie] % 2 == 0), "a tie went to the odd code"
        assert np.array_equal(s_[~on_tie], np.floor(r[~on_tie] + 0.5))
    assert ties > 0


def test_kernel_shader_policy(gpu, monkeypatch):
    """The separable shader by default (measured faster on lavapipe and on the H200), an adapter
    type listed in KERNEL_SHADER its own, the developer override over both, a bad value a clear error."""
    from gputex.errors import FormatError
    from gputex.mips.exact import KERNEL_SHADER, kernel_shader

    monkeypatch.delenv("GPUTEX_MIPS_KERNEL", raising=False)
    assert kernel_shader(gpu) == "sep"
    monkeypatch.setitem(KERNEL_SHADER, gpu.info.adapter_type, "2d")
    assert kernel_shader(gpu) == "2d"
    monkeypatch.delitem(KERNEL_SHADER, gpu.info.adapter_type)
    monkeypatch.setenv("GPUTEX_MIPS_KERNEL", "2D")
    assert kernel_shader(gpu) == "2d"
    monkeypatch.setenv("GPUTEX_MIPS_KERNEL", "tiled")
    with pytest.raises(FormatError, match="^GPUTEX_MIPS_KERNEL must be sep or 2d, got 'tiled'$"):
        kernel_shader(gpu)


def _kernel_levels(gpu, a, fmt, space, filter, alpha):
    import gputex

    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, filter=filter, alpha=alpha,
                        precision="fast")
    try:
        gputex.generate_mips(tex, filter=filter, alpha=alpha)
        return [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


@pytest.mark.parametrize("fmt,alpha", [("rgba8unorm-srgb", "weighted"), ("rgba8unorm-srgb", "straight"),
                                       ("rgba16unorm", "weighted"), ("rg16unorm", "premultiplied")])
def test_float64_levels_in_planes_equal_texels_side_by_side(rng, gpu, fmt, alpha, monkeypatch):
    """exact.SOA (each level's float64 values a plane per value, and without weighted alpha only the
    four the next level reads) against a texel's eight words side by side: the same bytes at every
    level, and within half an LSB of the float64 reference."""
    from gputex.mips import exact

    from reference import filter_levels

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    c = 2 if fmt.startswith("rg16") else 4
    big = 65535 if "16" in fmt else 255
    a = rng.integers(0, big + 1, (37, 61, c), np.uint16 if big > 255 else np.uint8)
    a[..., -1] = np.where(rng.random((37, 61)) < 0.3, 0, a[..., -1])
    space = "srgb" if fmt.endswith("srgb") else "linear"
    got = {}
    for soa in (True, False):
        monkeypatch.setattr(exact, "SOA", soa)
        got[soa] = _kernel_levels(gpu, a, fmt, space, "kaiser", alpha)
    assert len(got[True]) == len(got[False]) == 5
    assert all(np.array_equal(x, y) for x, y in zip(got[True], got[False]))
    ref = filter_levels(a / big, c, srgb=space == "srgb", alpha_mode=alpha, filter="kaiser")
    for i, (g, r) in enumerate(zip(got[True], ref), start=1):
        assert np.abs(g.astype(np.float64) - np.clip(r, 0, 1) * big).max() <= 0.5 + 1e-6, f"level {i}"


def test_a_chain_through_both_float64_shaders_keeps_its_bytes(rng, gpu, monkeypatch):
    """A level the separable shader cannot hold goes to the 2D-footprint shader, between levels of
    the separable one: both read and write the same layout of float64 values (level 2 forced to the
    2D shader here gives the chain's bytes), and a texel with more than SEP_TAPS taps an axis is one
    the separable shader does not hold."""
    from gputex.layout import mip_size
    from gputex.mips import exact

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    a = rng.integers(0, 256, (131, 257, 4), np.uint8)
    a[..., 3] = np.where(rng.random((131, 257)) < 0.3, 0, a[..., 3])
    monkeypatch.delenv("GPUTEX_MIPS_KERNEL", raising=False)
    whole = _kernel_levels(gpu, a, "rgba8unorm-srgb", "srgb", "lanczos", "weighted")
    tables = exact.sep_tables
    (pw, ph), (dw, dh) = mip_size(257, 131, 1), mip_size(257, 131, 2)
    asked = []

    def sep_tables(*args):
        asked.append(args[:4])
        return None if args[:4] == (pw, ph, dw, dh) else tables(*args)

    monkeypatch.setattr(exact, "sep_tables", sep_tables)
    mixed = _kernel_levels(gpu, a, "rgba8unorm-srgb", "srgb", "lanczos", "weighted")
    assert (pw, ph, dw, dh) in asked and (257, 131, pw, ph) in asked
    assert len(mixed) == len(whole) == 8
    assert all(np.array_equal(x, y) for x, y in zip(mixed, whole))
    monkeypatch.setattr(exact, "sep_tables", tables)
    taps = max(len(ids) for ids, _ in kernel_taps(pw, dw, "lanczos", "clamp") + kernel_taps(ph, dh, "lanczos", "clamp"))
    tables.cache_clear()
    try:
        monkeypatch.setattr(exact, "SEP_TAPS", taps - 1)
        assert tables(pw, ph, dw, dh, "lanczos", "clamp") is None
        monkeypatch.setattr(exact, "SEP_TAPS", taps)
        tables.cache_clear()
        assert tables(pw, ph, dw, dh, "lanczos", "clamp") is not None
    finally:
        tables.cache_clear()


def test_workgroup_bytes_counts_the_declarations():
    from gputex.mips.exact import workgroup_bytes

    code = ("var<workgroup> a: array<f64, 10>;\nvar<workgroup> b : array<u32,3>;\nvar<workgroup> c: vec2<u32>;\n"
            "var<workgroup> d: u32;\nvar<private> e: array<f64, 100>;\nvar<workgroup> f: array<f32, 5>;")
    assert workgroup_bytes(code) == 80 + 12 + 8 + 4 + 20


def test_the_separable_shaders_form_fits_the_devices_workgroup_memory(gpu, monkeypatch):
    """mip_exact_sep.wgsl with its taps in workgroup memory where the device allows it (NVIDIA's
    Vulkan: 48 KB), with the taps read from the storage buffers where 32 KB is the limit (lavapipe,
    Metal, D3D12), the 2D shader where neither fits (WebGPU's default 16 KB); its KMAX is
    exact.SEP_TAPS."""
    import re

    from gputex.kernels import load_wgsl
    from gputex.mips import exact

    smem = exact.workgroup_bytes(load_wgsl("mip_exact_sep.wgsl"))
    small = exact.workgroup_bytes(load_wgsl("mip_exact_sep.wgsl", **exact.SEP_GLOBAL_TAPS))
    assert 32768 < smem <= 49152 and 16384 < small <= 32768
    assert exact.sep_form(49152) == {} and exact.sep_form(smem) == {}
    assert exact.sep_form(smem - 1) == exact.sep_form(32768) == exact.SEP_GLOBAL_TAPS
    assert exact.sep_form(small - 1) is None
    monkeypatch.delenv("GPUTEX_MIPS_KERNEL", raising=False)
    monkeypatch.setattr(exact, "workgroup_limit", lambda session: 16384)
    assert exact.kernel_shader(gpu) == "2d"
    monkeypatch.setattr(exact, "workgroup_limit", lambda session: 32768)
    assert exact.kernel_shader(gpu) == "sep"
    kmax = re.search(r"const KMAX: u32 = (\d+)u;", load_wgsl("mip_exact_sep.wgsl"))
    assert kmax and int(kmax.group(1)) == exact.SEP_TAPS


@pytest.mark.parametrize("fmt,filter,alpha", [("rgba8unorm-srgb", "kaiser", "weighted"),
                                              ("rgba16unorm", "lanczos", "straight")])
def test_both_forms_of_the_separable_shader_give_the_same_bytes(rng, gpu, fmt, filter, alpha, monkeypatch):
    """The taps in workgroup memory (forced here: lavapipe does not hold the device to its limit) and
    read from the storage buffers: the same bytes at every level."""
    from gputex.mips import exact

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    big = 65535 if "16" in fmt else 255
    a = rng.integers(0, big + 1, (131, 257, 4), np.uint16 if big > 255 else np.uint8)
    a[..., 3] = np.where(rng.random((131, 257)) < 0.3, 0, a[..., 3])
    monkeypatch.delenv("GPUTEX_MIPS_KERNEL", raising=False)
    space = "srgb" if fmt.endswith("srgb") else "linear"
    got = []
    for limit in (1 << 20, 32768):
        monkeypatch.setattr(exact, "workgroup_limit", lambda session, limit=limit: limit)
        got.append(_kernel_levels(gpu, a, fmt, space, filter, alpha))
    assert len(got[0]) == len(got[1]) == 8
    assert all(np.array_equal(x, y) for x, y in zip(*got))


@pytest.mark.parametrize("shader", ["sep", "2d"])
@pytest.mark.parametrize("fmt", ["rgba8unorm-srgb", "rgba16unorm", "rg16unorm"])
def test_kernel_chains_carry_the_plain_colour_under_transparent_blocks(rng, gpu, fmt, shader, monkeypatch):
    """A transparent block wide enough that later levels' filtered alpha is <= 0 there: those texels
    take the plain colour, carried from level to level in its own planes, within half an LSB of the
    float64 reference (random transparent texels alone never reach it after level 1)."""
    from reference import filter_levels

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    monkeypatch.setenv("GPUTEX_MIPS_KERNEL", shader)
    big = 65535 if "16" in fmt else 255
    c = 2 if fmt.startswith("rg16") else 4
    a = rng.integers(0, big + 1, (61, 77, c), np.uint16 if big > 255 else np.uint8)
    a[:40, :50, -1] = 0
    space = "srgb" if fmt.endswith("srgb") else "linear"
    got = _kernel_levels(gpu, a, fmt, space, "kaiser", "weighted")
    ref = filter_levels(a / big, c, srgb=space == "srgb", alpha_mode="weighted", filter="kaiser")
    assert len(got) == len(ref) == 6
    assert (ref[1][..., -1] <= 0).any(), "no level-2 texel without coverage: the test image does not reach the plain colour"
    for i, (g, r) in enumerate(zip(got, ref), start=1):
        d = np.abs(g.astype(np.float64) - np.clip(r, 0, 1) * big)
        assert d.max() <= 0.5 + 1e-6, f"level {i}: {d.max():.3f} LSB"


@pytest.mark.parametrize("fmt,alpha", [("rgba16unorm", "straight"), ("rgba16unorm", "weighted")])
def test_16bit_triangle_ties_go_to_the_even_code(rng, gpu, fmt, alpha):
    """16-bit outputs take the same rule as 8-bit ones: a value on a midpoint between two codes
    (the triangle at 2:1) the even code; away from ties the reference's rounding."""
    from reference import filter_levels

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    a = rng.integers(0, 65536, (64, 64, 4), np.uint16)
    a[..., 3] = 65535
    got = _kernel_levels(gpu, a, fmt, "linear", "triangle", alpha)
    ref = [np.clip(r, 0, 1) * 65535 for r in filter_levels(a / 65535, 4, srgb=False, alpha_mode=alpha,
                                                           filter="triangle")]
    assert len(got) == len(ref) == 6
    ties = 0
    for g, r in zip(got, ref):
        g = g.astype(np.float64)
        on_tie = np.abs(r - np.floor(r) - 0.5) < 1e-9
        ties += int(on_tie.sum())
        assert np.all(g[on_tie] % 2 == 0), "a tie went to the odd code"
        assert np.array_equal(g[~on_tie], np.floor(r[~on_tie] + 0.5))
    assert ties > 0
