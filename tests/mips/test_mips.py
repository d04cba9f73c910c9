"""GPU mips against the float64 reference: box on the base footprint, alpha modes, colour
spaces, kernels, normal maps, alpha coverage, the gamma test image."""

from __future__ import annotations

import os

import numpy as np
import pytest

import gputex
from gputex.layout import mip_count
from gputex.mips import box_source_level

from factory import alpha_holes
from reference import filter_levels

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = [(1, 1), (1, 9), (9, 1), (2, 3), (5, 5), (7, 13), (255, 2), (257, 131), (1000, 999), (64, 64), (256, 128)]


def _image(rng, w, h, channels, alpha_kind):
    a = rng.integers(0, 256, (h, w, channels), np.uint8)
    if channels in (2, 4):
        if alpha_kind == "opaque":
            a[..., -1] = 255
        elif alpha_kind == "holes":  # whole transparent regions, colour hidden under them
            alpha_holes(rng, a, 0.4)
    return a


def _check(gpu_levels, ref_levels, scale, max_lsb=1.0, mean_lsb=0.5, mean_min_texels=1):
    for i, (g, r) in enumerate(zip(gpu_levels, ref_levels), start=1):
        d = np.abs(g.astype(np.float64) - r * scale)
        assert g.shape == r.shape, f"level {i}: shape {g.shape} vs {r.shape}"
        assert d.max() <= max_lsb, f"level {i}: max error {d.max():.3f} LSB"
        if g.shape[0] * g.shape[1] >= mean_min_texels:
            assert d.mean() <= mean_lsb, f"level {i}: mean error {d.mean():.3f} LSB"


def _run(gpu, a, fmt, space, **mip):
    # precision="fast": these tests hold the float chains (the reference path) to the float64
    # reference; tests/mips/test_mips_int.py does the same for the integer chain (the default)
    mip.setdefault("precision", "fast")
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, **mip)
    try:
        return [gputex.capture(tex, lv) for lv in range(1, tex.levels)]
    finally:
        tex.destroy()


@pytest.mark.parametrize("w,h", SIZES)
@pytest.mark.parametrize("space", ["srgb", "linear"])
@pytest.mark.parametrize("alpha", ["weighted", "straight", "premultiplied"])
def test_box_rgba8_matches_reference(rng, gpu, w, h, space, alpha):
    for alpha_kind in ("opaque", "holes"):
        a = _image(rng, w, h, 4, alpha_kind)
        got = _run(gpu, a, "rgba8unorm", space, alpha=alpha)
        assert len(got) == mip_count(w, h) - 1
        ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=alpha)
        _check(got, ref, 255)


@pytest.mark.parametrize("fmt,channels", [("rgba8unorm-srgb", 4), ("bgra8unorm-srgb", 4), ("bgra8unorm", 4),
                                          ("r8unorm", 1), ("rg8unorm", 2), ("rgb10a2unorm", 4)])
@pytest.mark.parametrize("w,h", [(7, 13), (257, 131), (64, 64)])
@pytest.mark.parametrize("path", ["compute", "render"])
def test_box_other_8bit_formats(rng, gpu, fmt, channels, w, h, path):
    a = _image(rng, w, h, channels, "holes")
    srgb = fmt.endswith("srgb") or fmt in ("r8unorm", "rg8unorm")
    got = _run(gpu, a, fmt, "srgb" if srgb else "linear", mip_path=path)  # r8, rg8, rgb10a2: the render path
    if fmt == "rgb10a2unorm":
        # the reference starts from what the texture holds: 10-bit colour, 2-bit alpha
        base = gputex.capture(gputex.upload(gpu, gputex.from_array(a), fmt)) / np.array([1023, 1023, 1023, 3])
        ref = filter_levels(base, channels, srgb=False)
        # compare 10-bit colour and 2-bit alpha separately
        got_rgb = [g[..., :3] for g in got]
        _check(got_rgb, [r[..., :3] for r in ref], 1023)
        _check([g[..., 3:] for g in got], [r[..., 3:] for r in ref], 3)
        return
    ref = filter_levels(a / 255, channels, srgb=srgb)
    _check(got, ref, 255)


@pytest.mark.parametrize("w,h", SIZES)
@pytest.mark.parametrize("space", ["srgb", "linear"])
@pytest.mark.parametrize("alpha", ["opaque", "holes"])
@pytest.mark.parametrize("mode", ["weighted", "straight", "premultiplied"])
def test_box_16bit_within_half_lsb(rng, gpu, w, h, space, alpha, mode):
    a = rng.integers(0, 65536, (h, w, 4), np.uint16)
    if alpha == "opaque":
        a[..., 3] = 65535
    else:
        a[..., 3] = np.where(rng.random((h, w)) < 0.4, 0, a[..., 3])
    got = _run(gpu, a, "rgba16unorm", space, alpha=mode)
    ref = filter_levels(a / 65535, 4, srgb=space == "srgb", alpha_mode=mode)
    # Half a unit in the last place: the float64 path (shader-f64) rounds exactly. Without
    # shader-f64, float32 arithmetic (sRGB pow, alpha weighting) flips near-ties (measured
    # max 0.518 LSB). The mean is judged where a level has enough texels to mean something.
    bar = 0.5 + 1e-6 if gpu.has_feature("shader-f64") else 0.55  # + the float64 reference's own noise
    _check(got, ref, 65535, max_lsb=bar, mean_lsb=0.3, mean_min_texels=256)


@pytest.mark.parametrize("fmt", ["rgba16float", "rgba32float", "rg32float", "r32float", "rg16unorm"])
@pytest.mark.parametrize("w,h", [(1, 1), (2, 3), (7, 13), (257, 131), (1000, 999), (64, 64)])
@pytest.mark.parametrize("mode", ["weighted", "straight"])
def test_box_float_formats(rng, gpu, fmt, w, h, mode):
    c = 4 if fmt.startswith("rgba") else (2 if fmt.startswith("rg") else 1)
    if fmt == "rg16unorm":
        a = rng.integers(0, 65536, (h, w, 2), np.uint16)
        a[..., 1] = np.where(rng.random((h, w)) < 0.3, 0, a[..., 1])
        got = _run(gpu, a, fmt, "linear", alpha=mode)
        ref = filter_levels(a / 65535, 2, srgb=False, alpha_mode=mode)
        bar = 0.5 + 1e-6 if gpu.has_feature("shader-f64") else 0.55
        _check(got, ref, 65535, max_lsb=bar, mean_lsb=0.3, mean_min_texels=256)
        return
    a = rng.random((h, w, c)).astype(np.float32)
    a = a.astype(np.float16).astype(np.float32)
    if c > 1:
        a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, a[..., -1])
    got = _run(gpu, a, fmt, "linear", alpha=mode)
    ref = filter_levels(a.astype(np.float64), c, srgb=False, alpha_mode=mode)
    for i, (g, r) in enumerate(zip(got, ref), start=1):
        g = g.astype(np.float64)
        if fmt == "rgba16float":  # within half an f16 ulp (+ f32 noise)
            ulp = np.spacing(np.abs(r).astype(np.float16)).astype(np.float64)
            assert (np.abs(g - r) <= 0.5 * ulp + 1e-6).all(), f"level {i}"
        elif gpu.has_feature("shader-f64"):  # within half a float32 ulp: exactly rounded
            ulp = np.spacing(np.abs(r).astype(np.float32)).astype(np.float64)
            # (+ 1e-13: at ties the float64 reference's own rounding, up to ~1e-14, decides)
            assert (np.abs(g - r) <= 0.5 * ulp + 1e-13).all(), f"level {i}: {np.abs(g - r).max()}"
        else:
            assert np.abs(g - r).max() <= 2e-6, f"level {i}"


@pytest.mark.parametrize("filt", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "repeat", "mirror"])
@pytest.mark.parametrize("w,h", SIZES)
def test_kernels_match_reference(rng, gpu, filt, wrap, w, h):
    for alpha_kind, mode, space in (("opaque", "straight", "srgb"), ("holes", "weighted", "srgb"),
                                    ("holes", "weighted", "linear"), ("holes", "premultiplied", "linear")):
        a = _image(rng, w, h, 4, alpha_kind)
        got = _run(gpu, a, "rgba8unorm", space, filter=filt, wrap=wrap, alpha=mode)
        ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=mode, filter=filt, wrap_mode=wrap)
        _check(got, [np.clip(r, 0, 1) for r in ref], 255)


@pytest.mark.parametrize("filt", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("w,h", [(7, 13), (61, 37), (64, 64)])
def test_kernels_float32_path_match_reference(rng, gpu, filt, w, h):
    """precision="float32": the WGSL kernels of mip_reduce.wgsl (not the float64 taps), held to the
    same bar as the float64 path."""
    for alpha_kind, mode, space in (("opaque", "straight", "srgb"), ("holes", "weighted", "srgb")):
        a = _image(rng, w, h, 4, alpha_kind)
        got = _run(gpu, a, "rgba8unorm", space, filter=filt, alpha=mode, precision="float32")
        ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=mode, filter=filt)
        _check(got, [np.clip(r, 0, 1) for r in ref], 255)


@pytest.mark.parametrize("filt", ["kaiser", "lanczos", "triangle"])
def test_kernels_weighted_grey_alpha(rng, gpu, filt):
    """rg8 (grey + alpha) goes through the pack pass: the plain colour is chained there too."""
    a = _image(rng, 61, 37, 2, "holes")
    got = _run(gpu, a, "rg8unorm", "srgb", filter=filt, alpha="weighted")
    ref = filter_levels(a / 255, 2, srgb=True, alpha_mode="weighted", filter=filt)
    _check(got, [np.clip(r, 0, 1) for r in ref], 255)


def test_triangle_taps_are_the_tent():
    """The float64 path's taps come from the filter's own weight function (they were Kaiser for
    every filter but lanczos): a 2:1 tent weighs 1 3 3 1 / 8; 3 -> 1 (ratio 3: half-width 3
    texels, centre 1.5) weighs texels -1..3 by 1/3 2/3 1 2/3 1/3, and clamping folds the
    outer two onto texels 0 and 2: 1 1 1 / 3."""
    from gputex.mips import kernel_taps

    taps = kernel_taps(8, 4, "triangle", "repeat")
    assert [i for i, _ in taps] == [[0, 1, 2, 7], [1, 2, 3, 4], [3, 4, 5, 6], [0, 5, 6, 7]]
    assert [list(w) for _, w in taps[1:3]] == [[1 / 8, 3 / 8, 3 / 8, 1 / 8]] * 2
    (idx, w), = kernel_taps(3, 1, "triangle", "clamp")
    assert idx == [0, 1, 2] and np.allclose(w, [1 / 3] * 3, rtol=0, atol=1e-15)


def test_filter_registry_reaches_the_cli_and_errors():
    from gputex.cli import Filter
    from gputex.errors import FormatError
    from gputex.mips import FILTER_NAMES, generate_mips

    assert [f.value for f in Filter] == FILTER_NAMES == ["box", "kaiser", "lanczos", "triangle"]
    with pytest.raises(FormatError, match="^unknown filter 'cubic'; use box, kaiser, lanczos or triangle$"):
        generate_mips(None, filter="cubic")


def test_gamma_test_image_level1_matches_solid_block(gpu):
    img = gputex.decode(os.path.join(ROOT, "samples", "gamma_lines_64x32.png"))
    tex = gputex.upload(gpu, img, mips=True)  # defaults: sRGB format, box, weighted
    level1 = gputex.capture(tex, 1).astype(int)
    lines, solid = level1[:, :16, :3], level1[:, 16:, :3]
    assert (solid == 188).all()
    assert np.abs(lines - 188).max() <= 1


@pytest.mark.parametrize("channels", [2, 4])
def test_normal_maps_are_unit_length(gpu, channels):
    w, h = 131, 77
    n = np.random.default_rng(17 + channels).normal(size=(h, w, 3))
    n[..., 2] = np.abs(n[..., 2]) + 0.3
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    enc = np.clip(np.floor((n * 0.5 + 0.5) * 255 + 0.5), 0, 255).astype(np.uint8)
    a = enc[..., :2] if channels == 2 else np.concatenate([enc, np.full((h, w, 1), 255, np.uint8)], -1)
    fmt = "rg8unorm" if channels == 2 else "rgba8unorm"
    got = _run(gpu, a, fmt, "linear", normal_map=True)
    ref = filter_levels(a / 255, channels, srgb=False, normal=True)
    # best-fit rounding takes floor or ceil (whichever is closer to unit length): under 1 LSB
    # from the exact value, plus the float32 shader's noise (measured up to 9e-6 LSB)
    _check(got, ref, 255, max_lsb=1.0 + 1e-4)
    for g in got:
        v = g[..., :2].astype(np.float64) / 255 * 2 - 1
        if channels == 4:
            v = g[..., :3].astype(np.float64) / 255 * 2 - 1
            length = np.linalg.norm(v, axis=-1)
        else:
            z = np.sqrt(np.clip(1 - (v ** 2).sum(-1, keepdims=True), 0, None))
            length = np.linalg.norm(np.concatenate([v, z], -1), axis=-1)
        assert np.abs(length - 1).max() <= 1 / 255


def test_alpha_coverage_is_preserved(rng, gpu):
    w = h = 256
    y, x = np.mgrid[0:h, 0:w]
    # foliage-like alpha: thin antialiased fronds (plus grain) that plain averaging thins out
    fronds = np.clip((np.sin(x * 0.9) * np.sin(y * 0.45) - 0.55) * 6 + 0.5 + rng.normal(0, 0.08, (h, w)), 0, 1)
    alpha = np.floor(fronds * 255 + 0.5)
    a = np.dstack([rng.integers(0, 256, (h, w, 3)), alpha]).astype(np.uint8)
    cutoff = 0.5
    c0 = (a[..., 3] / 255 >= cutoff).mean()
    plain = _run(gpu, a, "rgba8unorm", "srgb")
    kept = _run(gpu, a, "rgba8unorm", "srgb", alpha_coverage=cutoff)
    for level, (_p, k) in enumerate(zip(plain, kept), start=1):
        if k.shape[0] * k.shape[1] < 256:
            break  # fewer texels than the 1% granularity
        cov = (k[..., 3] / 255 >= cutoff).mean()
        assert abs(cov - c0) <= 0.01, f"level {level}: coverage {cov:.4f} vs {c0:.4f}"
    assert abs((plain[2][..., 3] / 255 >= cutoff).mean() - c0) > 0.01  # the test image needs it


def test_box_source_levels_tile_exactly():
    # power of two: each level from the previous one, except that level 1 is never a source
    assert [box_source_level(64, 64, lv) for lv in range(1, 7)] == [0, 0, 2, 3, 4, 5]
    # 20 -> 10 -> 5 -> 2 -> 1: 2 does not divide 5, so level 3 reads the base; level 4 reads level 3
    assert [box_source_level(20, 20, lv) for lv in range(1, 5)] == [0, 0, 0, 3]


def test_integer_formats_refuse_mips(rng, gpu):
    a = rng.integers(0, 255, (4, 4, 4), np.uint8)
    with pytest.raises(gputex.FormatError, match="mips need a unorm or float format; rgba8uint holds integers"):
        gputex.upload(gpu, gputex.from_array(a), "rgba8uint", mips=True)


def test_levels_option_makes_fewer(rng, gpu):
    a = rng.integers(0, 255, (16, 16, 4), np.uint8)
    tex = gputex.upload(gpu, gputex.from_array(a), "rgba8unorm", mips=3)
    assert tex.levels == 3 and gputex.capture(tex, 2).shape == (4, 4, 4)


def _reference_3d(vol, srgb, weighted, levels):
    """Float64 3D box reference: area weights over the base footprint on x, y and z."""
    from reference import box_matrix, linear_to_srgb, srgb_to_linear

    d, h, w, _ = vol.shape
    rgb = srgb_to_linear(vol[..., :3]) if srgb else vol[..., :3]
    a = vol[..., 3:]
    out = []
    for lv in range(1, levels):
        dd, dh, dw = max(1, d >> lv), max(1, h >> lv), max(1, w >> lv)
        Mz, My, Mx = box_matrix(d, dd), box_matrix(h, dh), box_matrix(w, dw)

        def f(x, Mz=Mz, My=My, Mx=Mx):
            return np.einsum("Zz,Yy,Xx,zyxc->ZYXc", Mz, My, Mx, x, optimize=True)

        alpha = f(a)
        plain = f(rgb)
        if weighted:
            num = f(rgb * a)
            col = np.where(alpha > 0, num / np.where(alpha > 0, alpha, 1), plain)
        else:
            col = plain
        col = linear_to_srgb(col) if srgb else col
        out.append(np.concatenate([col, alpha], -1))
    return out


@pytest.mark.parametrize("w,h,d", [(7, 6, 5), (8, 8, 8), (1, 1, 9), (13, 3, 4)])
@pytest.mark.parametrize("fmt,space", [("rgba8unorm-srgb", "srgb"), ("rgba8unorm", "linear"),
                                       ("rgba16float", "linear")])
@pytest.mark.parametrize("alpha", ["weighted", "straight"])
def test_3d_box_mips_match_reference(rng, gpu, w, h, d, fmt, space, alpha):
    import wgpu

    from gputex.capture import capture
    from gputex.texture import create_texture
    from gputex.upload import write_image

    f = gputex.get_format(fmt)
    levels = mip_count(w, h, d)
    if f.kind == "float":
        vol = rng.random((d, h, w, 4)).astype(np.float16).astype(np.float32)
        vol[..., 3] = np.where(rng.random((d, h, w)) < 0.3, 0, vol[..., 3])
        base = vol.astype(np.float64)
    else:
        vol = rng.integers(0, 256, (d, h, w, 4), np.uint8)
        vol[..., 3] = np.where(rng.random((d, h, w)) < 0.3, 0, vol[..., 3])
        base = vol / 255
    tex = create_texture(gpu, f, w, h, depth=d, levels=levels, color_space=space,
                         usage=wgpu.TextureUsage.COPY_DST | wgpu.TextureUsage.COPY_SRC
                         | wgpu.TextureUsage.TEXTURE_BINDING)
    try:
        for z in range(d):
            write_image(tex, gputex.from_array(vol[z], space), layer=z)
        gputex.generate_mips(tex, alpha=alpha)
        ref = _reference_3d(base, space == "srgb", alpha == "weighted", levels)
        for lv, r in enumerate(ref, start=1):
            got = np.stack([capture(tex, lv, z) for z in range(r.shape[0])]).astype(np.float64)
            if f.kind == "float":
                ulp = np.spacing(np.abs(r).astype(np.float16)).astype(np.float64)
                assert (np.abs(got - r) <= 0.5 * ulp + 1e-6).all(), f"level {lv}"
            else:
                err = np.abs(got - r * 255)
                assert err.max() <= 1.0 and err.mean() <= 0.5, f"level {lv}: {err.max():.3f}"
    finally:
        tex.destroy()


@pytest.mark.parametrize("filt", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "repeat", "mirror"])
@pytest.mark.parametrize("fmt", ["rgba16unorm", "rg16unorm", "rgba32float"])
def test_kernels_16bit_and_float_within_half_ulp(rng, gpu, filt, wrap, fmt):
    """Kernels on 16-bit unorm and float32 formats: the float64 chain (shader-f64) is within half
    a unit in the last place of the float64 reference at every level, every alpha mode."""
    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64 (the float32 chain is not exactly rounded)")
    c = 2 if fmt.startswith("rg16") else 4
    for (w, h), space, mode in (((257, 131), "srgb", "weighted"), ((7, 13), "linear", "straight"),
                                ((64, 64), "linear", "premultiplied"), ((255, 2), "srgb", "weighted"),
                                ((1, 9), "linear", "weighted")):
        if fmt.endswith("float"):
            if space == "srgb":
                continue
            a = rng.random((h, w, c)).astype(np.float32)
            src = a.astype(np.float64)
        else:
            a = rng.integers(0, 65536, (h, w, c), np.uint16)
            src = a / 65535
        a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, a[..., -1])
        src = a.astype(np.float64) if fmt.endswith("float") else a / 65535
        got = _run(gpu, a, fmt, space, filter=filt, wrap=wrap, alpha=mode)
        ref = filter_levels(src, c, srgb=space == "srgb", alpha_mode=mode, filter=filt, wrap_mode=wrap)
        for i, (g, r) in enumerate(zip(got, ref), start=1):
            g = g.astype(np.float64)
            if fmt.endswith("float"):
                ulp = np.spacing(np.abs(r).astype(np.float32)).astype(np.float64)
                assert (np.abs(g - r) <= 0.5 * ulp + 1e-13).all(), f"{w}x{h} level {i}"
            else:
                err = np.abs(g - np.clip(r, 0, 1) * 65535)
                assert err.max() <= 0.5 + 1e-6, f"{w}x{h} {space} {mode} level {i}: {err.max():.4f} LSB"


@pytest.mark.parametrize("fmt", ["rgba8unorm-srgb", "bgra8unorm-srgb", "bgra8unorm"])
def test_kernels_on_srgb_and_bgra_formats(rng, gpu, fmt):
    a = _image(rng, 257, 131, 4, "holes")
    got = _run(gpu, a, fmt, "srgb", filter="lanczos", alpha="weighted")
    ref = filter_levels(a / 255, 4, srgb=True, alpha_mode="weighted", filter="lanczos")
    _check(got, [np.clip(r, 0, 1) for r in ref], 255)


RENDER_FORMATS = [("r8unorm", 1, np.uint8), ("rg8unorm", 2, np.uint8), ("rgb10a2unorm", 4, np.uint8),
                  ("r16float", 1, np.float32), ("rg16float", 2, np.float32)]


@pytest.mark.parametrize("fmt,channels,dtype", RENDER_FORMATS)
@pytest.mark.parametrize("w,h", [(1, 9), (5, 5), (61, 37), (256, 128)])
@pytest.mark.parametrize("space", ["srgb", "linear"])
@pytest.mark.parametrize("filt", ["box", "lanczos"])
def test_render_path_agrees_with_compute_path(gpu, monkeypatch, fmt, channels, dtype, w, h, space, filt):
    """The render path (fragment shader drawing each level) against the compute path, same
    arithmetic up to the value the fragment shader returns: the code already quantized, k / max.

    * float16 formats: equal bytes on every adapter (the value is a half float: the attachment
      stores it exactly);
    * unorm formats: at most 1 code apart. The attachment converts k / max (a float32 that is
      not exactly k / max) to unorm, and Vulkan lets that conversion return either integer
      next to ``value * max`` when it is not an integer ("should round to nearest"): lavapipe
      rounds to nearest and gives the compute path's bytes, the H200 differed by 1 code
      (rgb10a2unorm, 61x37). Both paths are held to the float64 reference by
      test_box_other_8bit_formats.

    The compute path sums each texel's 2D footprint here, as the render path does (a kernel
    filter's compute levels go by separable tiles by default: tests/mips/test_float32_kernels.py
    holds those to the 2D footprint and the reference).
    """
    import wgpu

    from gputex.mips import chain, needs_render_target

    monkeypatch.setattr(chain, "TILES", False)

    gen = np.random.default_rng([w, h, channels, len(space), len(filt)])  # this test's own input
    a = (gen.integers(0, 256, (h, w, channels), np.uint8) if dtype == np.uint8
         else gen.random((h, w, channels), np.float32) * 4)
    if channels in (2, 4) and dtype == np.uint8:
        a[..., -1] = np.where(gen.random((h, w)) < 0.3, 0, a[..., -1])
    levels = {}
    for path in ("compute", "render"):
        assert needs_render_target(gpu, fmt, path) == (path == "render")
        tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, mips=True, filter=filt, precision="fast",
                            mip_path=path)
        assert bool(tex.texture.usage & wgpu.TextureUsage.RENDER_ATTACHMENT) == (path == "render")
        levels[path] = [gputex.capture(tex, lv) for lv in range(tex.levels)]
        tex.destroy()
    assert len(levels["render"]) == mip_count(w, h)
    for lv, (c, r) in enumerate(zip(levels["compute"], levels["render"])):
        if dtype == np.float32:
            assert c.tobytes() == r.tobytes(), f"level {lv} differs between the compute and the render path"
        else:
            d = np.abs(c.astype(np.int64) - r.astype(np.int64)).max()
            assert d <= 1, f"level {lv}: the render path is {d} codes from the compute path"


def test_mips_path_setting_is_checked(gpu, monkeypatch):
    from gputex.errors import FormatError

    a = gputex.from_array(np.zeros((4, 4, 1), np.uint8))
    with pytest.raises(FormatError, match="^unknown mip path 'fragment'; use compute or render$"):
        gputex.upload(gpu, a, "r8unorm", mips=True, mip_path="fragment")
    # the developer override (gputex/devflags.py) is checked the same way
    monkeypatch.setenv("GPUTEX_MIPS_PATH", "fragment")
    with pytest.raises(FormatError, match="^GPUTEX_MIPS_PATH must be compute or render, got 'fragment'$"):
        gputex.upload(gpu, a, "r8unorm", mips=True)
