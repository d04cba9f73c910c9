"""Transforms: the size arithmetic (pure), the GPU resize against a float64 reference, the
chain after a resize, swizzles and channel packs (exact codes), and their CLI errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image as PILImage
from typer.testing import CliRunner

import gputex
from gputex.cli import app
from gputex.errors import UsageError
from gputex.transform import (
    apply_swizzle,
    check_swizzle,
    nearest_pot,
    pack_item,
    parse_size,
    resize_texture,
    target_size,
)

from reference import _finish, apply, box_matrix, kernel_matrix, to_canonical

runner = CliRunner()


# -- pure size arithmetic ----------------------------------------------------------------------

@given(st.integers(1, 1 << 20))
def test_nearest_pot_is_the_nearest_power_of_two(n):
    p = nearest_pot(n)
    assert p & (p - 1) == 0
    candidates = [1 << k for k in range(22)]
    best = min(abs(c - n) for c in candidates)
    assert abs(p - n) == best
    assert not any(c > p and abs(c - n) == best for c in candidates), "a tie goes up"


def test_nearest_pot_examples():
    assert [nearest_pot(n) for n in (1, 2, 3, 5, 6, 40, 48, 61, 96, 100, 1000)] == \
        [1, 2, 4, 4, 8, 32, 64, 64, 128, 128, 1024]


@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(0, 3000), st.integers(0, 3000))
def test_resize_keeps_aspect_when_one_side_is_zero(w, h, rw, rh):
    if rw == 0 and rh == 0:
        return
    W, H = target_size(w, h, (rw, rh))
    if rw and rh:
        assert (W, H) == (rw, rh)
    elif rw:
        assert W == rw and H == max(1, int(np.floor(h * rw / w + 0.5)))
    else:
        assert H == rh and W == max(1, int(np.floor(w * rh / h + 0.5)))


@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(1, 4096), st.booleans())
def test_max_size_bounds_the_longer_side(w, h, n, pot):
    W, H = target_size(w, h, max_size=n, pot=pot)
    assert max(W, H) <= n or (pot and max(W, H) == 1)
    if pot:
        assert W & (W - 1) == 0 and H & (H - 1) == 0
        pw, ph = nearest_pot(w), nearest_pot(h)
        if max(pw, ph) <= n:
            assert (W, H) == (pw, ph)
        else:  # halved together: the aspect ratio of the powers of two is kept where both stay >= 1
            assert max(W, H) * 2 > n
    elif max(w, h) <= n:
        assert (W, H) == (w, h)
    else:
        assert max(W, H) == n


def test_size_and_swizzle_parsing_errors():
    assert parse_size("512x256") == (512, 256) and parse_size("64X0") == (64, 0)
    for bad in ("512", "x", "ax3", "0x0", "-1x5"):
        with pytest.raises(UsageError):
            parse_size(bad)
    with pytest.raises(UsageError, match=r"--swizzle wants 1-4 of r, g, b, a, 0, 1 \(e.g. bgra, rrr1, rgb1\), "
                                         r"got 'rgbax'"):
        check_swizzle("rgbax")
    assert check_swizzle("BGRA") == "bgra"


# -- GPU resize against float64 ----------------------------------------------------------------

def _reference(a, W, H, *, srgb, alpha="weighted", filter="box", wrap="clamp", normal=False):
    """Float64 final values of the resized image (texture components in [0, 1])."""
    h, w, channels = a.shape
    if filter == "box":
        My, Mx = box_matrix(h, H), box_matrix(w, W)
    else:
        My, Mx = kernel_matrix(h, H, filter, wrap), kernel_matrix(w, W, filter, wrap)
    lin = to_canonical(a, channels, srgb, alpha, normal)
    if alpha == "weighted" and channels in (2, 4) and not normal:
        pm = apply(My, np.concatenate([lin[..., :3] * lin[..., 3:], lin[..., 3:]], -1), Mx)
        pl = apply(My, lin, Mx)
        al = pm[..., 3:]
        val = np.concatenate([np.where(al > 0, pm[..., :3] / np.where(al > 0, al, 1), pl[..., :3]), al], -1)
    else:
        val = apply(My, lin, Mx)
    return np.clip(_finish(val, channels, srgb, normal), 0, 1)


def _image(rng, w, h, channels, holes, bits=8):
    top = (1 << bits) - 1
    a = rng.integers(0, top + 1, (h, w, channels), np.uint16 if bits == 16 else np.uint8)
    if channels in (2, 4):
        a[..., -1] = np.where(rng.random((h, w)) < 0.4, 0, a[..., -1]) if holes else top
    return a


def _resized(gpu, a, fmt, space, W, H, **kw):
    tex = gputex.upload(gpu, gputex.from_array(a, space), fmt, usage=_binding())
    try:
        out = resize_texture(tex, W, H, **kw)
        try:
            return gputex.capture(out, 0)
        finally:
            out.destroy()
    finally:
        tex.destroy()


def _binding():
    import wgpu

    return wgpu.TextureUsage.TEXTURE_BINDING


RESIZES = [((61, 37), (23, 11)), ((61, 37), (100, 50)), ((5, 5), (2, 2)), ((1, 9), (3, 1)), ((7, 13), (7, 4)),
           ((256, 128), (64, 64)), ((3, 2), (11, 7))]


@pytest.mark.gpu
@pytest.mark.parametrize("src,dst", RESIZES)
@pytest.mark.parametrize("space", ["srgb", "linear"])
@pytest.mark.parametrize("alpha", ["weighted", "straight", "premultiplied"])
def test_box_resize_rgba8_matches_float64(gpu, src, dst, space, alpha):
    rng = np.random.default_rng(101)
    for holes in (False, True):
        a = _image(rng, *src, 4, holes)
        got = _resized(gpu, a, "rgba8unorm", space, *dst, alpha=alpha)
        ref = _reference(a / 255, *dst, srgb=space == "srgb", alpha=alpha)
        assert got.shape == ref.shape == (dst[1], dst[0], 4)
        d = np.abs(got.astype(np.float64) - ref * 255)
        assert d.max() <= 1.0 and d.mean() <= 0.5, (d.max(), d.mean())


@pytest.mark.gpu
@pytest.mark.parametrize("filt", ["kaiser", "lanczos", "triangle"])
@pytest.mark.parametrize("wrap", ["clamp", "repeat", "mirror"])
@pytest.mark.parametrize("src,dst", [((61, 37), (23, 11)), ((19, 9), (40, 21)), ((64, 64), (17, 64)),
                                     ((256, 128), (16, 8))])
@pytest.mark.parametrize("precision", ["exact", "float32"])
def test_kernel_resize_matches_float64(gpu, monkeypatch, filt, wrap, src, dst, precision):
    """The float64 path (the default with shader-f64) and the float32 one. The float32 one goes by
    tiles where 8 destination rows' taps reach at most 32 source rows: 9 -> 21 rows (11) and 64 -> 64
    (15); 37 -> 11 rows reach 47 under Kaiser and Lanczos (each texel's 2D footprint) and exactly 32
    under the triangle (tiles); 128 -> 8 reach 209 and 91 (2D)."""
    from gputex.mips import common

    asked = []
    real = common.pipeline

    def spy(session, shader, consts, entries, entry="main", *rest):
        if shader == "mip_reduce.wgsl":
            asked.append(entry)
        return real(session, shader, consts, entries, entry, *rest)

    monkeypatch.setattr(common, "pipeline", spy)
    tiles = dst[1] in (21, 64) or (dst[1] == 11 and filt == "triangle")
    rng = np.random.default_rng(102)
    for holes, alpha, space in ((False, "straight", "srgb"), (True, "weighted", "srgb"),
                                (True, "premultiplied", "linear")):
        a = _image(rng, *src, 4, holes)
        asked.clear()
        got = _resized(gpu, a, "rgba8unorm", space, *dst, filter=filt, wrap=wrap, alpha=alpha, precision=precision)
        if precision == "float32":
            assert asked == ["tile_main" if tiles else "main"]
        ref = _reference(a / 255, *dst, srgb=space == "srgb", alpha=alpha, filter=filt, wrap=wrap)
        d = np.abs(got.astype(np.float64) - ref * 255)
        assert d.max() <= 1.0 and d.mean() <= 0.5, (holes, alpha, d.max(), d.mean())


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,channels,bits,bar", [("r8unorm", 1, 8, 1.0), ("rg8unorm", 2, 8, 1.0),
                                                   ("rgba16unorm", 4, 16, 0.55), ("rgba16float", 4, 16, None),
                                                   ("rgba32float", 4, 16, None)])
@pytest.mark.parametrize("precision", ["exact", "float32"])
def test_resize_other_formats(gpu, fmt, channels, bits, bar, precision):
    """The float32 path (precision="float32", or no shader-f64) and the default."""
    rng = np.random.default_rng(103)
    a = _image(rng, 61, 37, channels, True, bits)
    top = (1 << bits) - 1
    if fmt.endswith("float"):
        a = (a / top).astype(np.float32)
    got = _resized(gpu, a, fmt, "linear", 29, 13, alpha="weighted", precision=precision)
    ref = _reference(a / (1 if fmt.endswith("float") else top), 29, 13, srgb=False, alpha="weighted")
    if bar is None:  # float formats: float32 sums; rgba16float also rounds to half precision
        tol = 2e-3 if fmt == "rgba16float" else 2e-6
        assert np.abs(got.astype(np.float64) - ref).max() <= tol
    else:
        d = np.abs(got.astype(np.float64) - ref * top)
        assert d.max() <= bar, d.max()


@pytest.mark.gpu
def test_normal_map_resize_is_unit_length(gpu):
    rng = np.random.default_rng(104)
    v = rng.normal(size=(37, 61, 3))
    v[..., 2] = np.abs(v[..., 2]) + 0.5
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    a = np.concatenate([np.round((v * 0.5 + 0.5) * 255), np.full((37, 61, 1), 255)], -1).astype(np.uint8)
    got = _resized(gpu, a, "rgba8unorm", "linear", 20, 9, normal_map=True)
    n = got[..., :3] / 255 * 2 - 1
    assert np.abs(np.linalg.norm(n, axis=-1) - 1).max() < 0.02
    ref = _reference(a / 255, 20, 9, srgb=False, normal=True)
    assert np.abs(got.astype(np.float64) - ref * 255).max() <= 1.0


@pytest.mark.gpu
def test_chain_starts_from_the_resized_image(gpu, tmp_path):
    """--resize with --mips: level 0 is the resized image, and every later level is exactly what
    the mips make from that image uploaded on its own."""
    rng = np.random.default_rng(105)
    a = _image(rng, 61, 37, 4, True)
    src = tmp_path / "a.png"
    PILImage.fromarray(a).save(src)
    r = runner.invoke(app, ["capture", str(src), "-o", str(tmp_path / "out"), "--resize", "40x0", "--mips",
                            "--level", "all"])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip().endswith("(rgba8unorm-srgb 40x24 from 61x37, 6 levels)")
    levels = [np.asarray(PILImage.open(tmp_path / "out" / f"a_level{i}.png")) for i in range(6)]
    ref0 = _reference(a / 255, 40, 24, srgb=True)
    assert np.abs(levels[0] - ref0 * 255).max() <= 1.0
    tex = gputex.upload(gpu, gputex.from_array(levels[0], "srgb"), mips=True)
    try:
        for i in range(1, 6):
            assert np.array_equal(gputex.capture(tex, i), levels[i]), f"level {i}"
    finally:
        tex.destroy()


@pytest.mark.gpu
def test_max_size_and_pot_on_the_command_line(gpu, tmp_path):
    src = tmp_path / "b.png"
    PILImage.fromarray(_image(np.random.default_rng(106), 61, 37, 3, False)).save(src)
    for flags, size in ((["--max-size", "32"], (32, 19)), (["--pot"], (64, 32)),
                        (["--pot", "--max-size", "16"], (16, 8)), (["--resize", "0x10"], (16, 10))):
        out = tmp_path / ("o" + "".join(flags)) / "x.png"
        r = runner.invoke(app, ["capture", str(src), "-o", str(out), *flags])
        assert r.exit_code == 0, r.output
        assert PILImage.open(out).size == size, flags
    r = runner.invoke(app, ["upload", str(src), "--resize", "10x10"])
    assert r.exit_code == 0 and r.stdout.rstrip().endswith("resized from 61x37"), r.output


@pytest.mark.gpu
def test_resize_errors(gpu, tmp_path):
    src = tmp_path / "b.png"
    PILImage.fromarray(np.zeros((4, 4, 3), np.uint8)).save(src)
    r = runner.invoke(app, ["capture", str(src), "-o", str(tmp_path), "--resize", "12"])
    assert r.exit_code == 2 and r.stderr == "gputex: --resize wants WxH, e.g. 512x256 or 512x0, got '12'\n"
    r = runner.invoke(app, ["capture", str(src), "-o", str(tmp_path / "o"), "--resize", "2x2", "--format", "rgba8uint"])
    assert r.exit_code == 1
    assert "mips need a unorm or float format; rgba8uint holds integers" in r.stderr


# -- swizzle and pack: exact codes -------------------------------------------------------------

def test_swizzle_codes_are_exact():
    rng = np.random.default_rng(107)
    rgba = rng.integers(0, 256, (5, 7, 4), np.uint8)
    im = gputex.from_array(rgba)
    assert np.array_equal(apply_swizzle(im, "bgra").pixels, rgba[..., [2, 1, 0, 3]])
    out = apply_swizzle(im, "rrr1").pixels
    assert np.array_equal(out[..., :3], np.repeat(rgba[..., :1], 3, -1)) and (out[..., 3] == 255).all()
    grey16 = rng.integers(0, 65536, (5, 7), np.uint16)
    out = apply_swizzle(gputex.from_array(grey16), "ra0").pixels
    assert out.dtype == np.uint16 and out.shape == (5, 7, 3)
    assert np.array_equal(out[..., 0], grey16) and (out[..., 1] == 65535).all() and (out[..., 2] == 0).all()
    f = rng.random((3, 4, 3)).astype(np.float32)
    out = apply_swizzle(gputex.from_array(f), "b1").pixels
    assert np.array_equal(out[..., 0], f[..., 2]) and (out[..., 1] == 1.0).all()


@pytest.mark.gpu
def test_swizzle_on_the_command_line(gpu, tmp_path):
    rng = np.random.default_rng(108)
    rgba = rng.integers(0, 256, (9, 11, 4), np.uint8)
    src = tmp_path / "s.png"
    PILImage.fromarray(rgba).save(src)
    r = runner.invoke(app, ["capture", str(src), "-o", str(tmp_path / "s_bgr1.png"), "--swizzle", "bgr1"])
    assert r.exit_code == 0, r.output
    want = np.concatenate([rgba[..., [2, 1, 0]], np.full((9, 11, 1), 255, np.uint8)], -1)
    assert np.array_equal(np.asarray(PILImage.open(tmp_path / "s_bgr1.png")), want)
    r = runner.invoke(app, ["upload", str(src), "--swizzle", "g"])
    assert r.exit_code == 0 and ": r8unorm 11x9 " in r.stdout and "exact round trip" in r.stdout, r.output
    r = runner.invoke(app, ["upload", str(src), "--swizzle", "rgbx"])
    assert r.exit_code == 2


def test_pack_spec_parsing():
    it = pack_item("r=rough.png, g=metal.png:g ,b=1")
    assert it.channels == (("r", "rough.png", "r"), ("g", "metal.png", "g"), ("b", None, "1"))
    assert it.sources == ("rough.png", "metal.png") and it.stem == "rough_packed"
    assert pack_item("a=x.png:a").channels == (("r", None, "0"), ("g", None, "0"), ("b", None, "0"),
                                               ("a", "x.png", "a"))
    for bad, msg in (("r=a.png,r=b.png", "channel r given twice"), ("x=a.png", "each part is"),
                     ("r=1,g=0", "no image file in it")):
        with pytest.raises(UsageError, match=msg):
            pack_item(bad)


@pytest.mark.gpu
def test_pack_on_the_command_line(gpu, tmp_path):
    rng = np.random.default_rng(109)
    rough = rng.integers(0, 256, (13, 17), np.uint8)
    metal = rng.integers(0, 256, (13, 17, 3), np.uint8)
    ao16 = rng.integers(0, 65536, (13, 17), np.uint16)
    PILImage.fromarray(rough).save(tmp_path / "rough.png")
    PILImage.fromarray(metal).save(tmp_path / "metal.png")
    import imagecodecs

    (tmp_path / "ao.png").write_bytes(imagecodecs.png_encode(ao16))
    spec = f"r={tmp_path / 'rough.png'},g={tmp_path / 'metal.png'}:b,a=1"
    r = runner.invoke(app, ["capture", "--pack", spec, "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    got = np.asarray(PILImage.open(tmp_path / "out" / "rough_packed.png"))
    want = np.stack([rough, metal[..., 2], np.zeros_like(rough), np.full_like(rough, 255)], -1)
    assert np.array_equal(got, want)
    # 8- and 16-bit sources: 16-bit result, 8-bit codes times 257; linear by default
    spec = f"r={tmp_path / 'rough.png'},g={tmp_path / 'ao.png'}"
    r = runner.invoke(app, ["capture", "--pack", spec, "-o", str(tmp_path / "p16.png")])
    assert r.exit_code == 0, r.output
    got = imagecodecs.png_decode((tmp_path / "p16.png").read_bytes())
    assert got.dtype == np.uint16 and np.array_equal(got, np.stack([rough.astype(np.uint16) * 257, ao16], -1))
    r = runner.invoke(app, ["upload", "--pack", spec])
    assert r.exit_code == 0 and "rg16unorm 17x13 (linear)" in r.stdout and "exact round trip" in r.stdout, r.output
    PILImage.fromarray(np.zeros((4, 4), np.uint8)).save(tmp_path / "small.png")
    r = runner.invoke(app, ["upload", "--pack", f"r={tmp_path / 'rough.png'},g={tmp_path / 'small.png'}"])
    assert r.exit_code == 1
    assert r.stderr == (f"gputex: {tmp_path / 'small.png'}: 4x4 does not match {tmp_path / 'rough.png'} (17x13); "
                        "--pack inputs must share their size\n")
    r = runner.invoke(app, ["upload", "--pack", "q=1"])
    assert r.exit_code == 2 and "each part is CHANNEL=FILE[:c]" in r.stderr


@pytest.mark.gpu
def test_array_and_cube_layers_are_resized_like_single_images(gpu, tmp_path):
    rng = np.random.default_rng(110)
    paths = []
    for i in range(6):
        paths.append(str(tmp_path / f"f{i}.png"))
        PILImage.fromarray(_image(rng, 20, 20, 4, True)).save(paths[-1])
    for kind, flags in (("array", ["--resize", "13x7"]), ("cube", ["--max-size", "8"])):
        out = tmp_path / f"{kind}.ktx2"
        r = runner.invoke(app, ["upload", *paths, f"--{kind}", "--mips", "-o", str(out), *flags])
        assert r.exit_code == 0, r.output
        assert "resized from 20x20" in r.stdout
        r = runner.invoke(app, ["capture", str(out), "--level", "all", "-o", str(tmp_path / kind)])
        assert r.exit_code == 0, r.output
        for i, p in enumerate(paths):
            one = tmp_path / f"{kind}_one{i}"
            assert runner.invoke(app, ["capture", p, "--mips", "--level", "all", "-o", str(one), *flags]).exit_code == 0
            names = sorted(os.listdir(one))
            for name in names:
                level = name.split("_level")[1].split(".")[0]
                suffix = f"_layer{i}" if kind == "array" else f"_face{i}"
                got = np.asarray(PILImage.open(tmp_path / kind / f"{kind}_level{level}{suffix}.png"))
                assert np.array_equal(got, np.asarray(PILImage.open(one / name))), (kind, i, name)
    r = runner.invoke(app, ["upload", *paths, "--cube", "-o", str(tmp_path / "c.ktx2"), "--resize", "8x4"])
    assert r.exit_code == 1 and "cube faces must stay square; the resize makes them 8x4" in r.stderr
    r = runner.invoke(app, ["upload", *paths, "--volume", "-o", str(tmp_path / "v.ktx2"), "--pot"])
    assert r.exit_code == 2
    assert r.stderr == "gputex: --volume textures are not resized (--resize, --max-size and --pot are 2D)\n"


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,filt", [(f, k) for f in ["rgba16unorm", "rg16unorm", "rgba32float", "rgba8unorm",
                                                        "rgba8unorm-srgb"]
                                       for k in ["box", "lanczos", "kaiser", "triangle"]
                                       if not (k == "box" and f.startswith("rgba8"))])  # 8-bit box: float32 path
def test_float64_formats_resize_correctly_rounded(gpu, fmt, filt):
    """Where the mips take their float64 path (shader-f64: box for 16-bit unorm and float32,
    kernels also for the 4-byte 8-bit formats), the resize does too: within half a unit in the
    last place of the float64 reference (1000x999 -> 3x2 sums its footprints in chunks)."""
    from gputex.mips.exact import EXACT_FORMATS

    if not gpu.has_feature("shader-f64"):
        pytest.skip(f"{gpu.name} lacks shader-f64")
    assert filt != "box" or fmt in EXACT_FORMATS
    rng = np.random.default_rng(111)
    c = 2 if fmt.startswith("rg16") else 4
    cases = [((61, 37), (23, 11), "srgb", "weighted"), ((19, 9), (40, 21), "linear", "straight"),
             ((64, 64), (17, 64), "linear", "premultiplied")]
    if filt == "box":
        cases.append(((1000, 999), (3, 2), "srgb", "weighted"))
    for (w, h), (W, H), space, mode in cases:
        space = "srgb" if fmt.endswith("-srgb") else space  # an -srgb format always holds sRGB data
        if fmt.endswith("float"):
            if space == "srgb":
                continue
            a = rng.random((h, w, c)).astype(np.float32)
            top = 1
        else:
            bits = 16 if "16" in fmt else 8
            top = (1 << bits) - 1
            a = rng.integers(0, top + 1, (h, w, c), np.uint16 if bits == 16 else np.uint8)
        a[..., -1] = np.where(rng.random((h, w)) < 0.3, 0, a[..., -1])
        got = _resized(gpu, a, fmt, space, W, H, filter=filt, alpha=mode).astype(np.float64)
        ref = _reference(a.astype(np.float64) / top, W, H, srgb=space == "srgb", alpha=mode, filter=filt)
        if fmt.endswith("float"):
            ref = _reference_unclipped(a.astype(np.float64), W, H, alpha=mode, filter=filt)
            ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
            assert (np.abs(got - ref) <= 0.5 * ulp + 1e-13).all(), (w, h, mode)
        else:
            err = np.abs(got - ref * top)
            assert err.max() <= 0.5 + 1e-6, (w, h, space, mode, err.max())


def _reference_unclipped(a, W, H, *, alpha, filter):
    """As :func:`_reference` for linear float data, without clipping colour to [0, 1]."""
    h, w, channels = a.shape
    My, Mx = (box_matrix(h, H), box_matrix(w, W)) if filter == "box" else \
        (kernel_matrix(h, H, filter, "clamp"), kernel_matrix(w, W, filter, "clamp"))
    lin = to_canonical(a, channels, False, alpha)
    if alpha == "weighted" and channels in (2, 4):
        pm = apply(My, np.concatenate([lin[..., :3] * lin[..., 3:], lin[..., 3:]], -1), Mx)
        pl = apply(My, lin, Mx)
        al = pm[..., 3:]
        val = np.concatenate([np.where(al > 0, pm[..., :3] / np.where(al > 0, al, 1), pl[..., :3]), al], -1)
    else:
        val = apply(My, lin, Mx)
    return _finish(val, channels, False, False)


@pytest.mark.gpu
def test_library_upload_with_size(gpu):
    """gputex.upload(size=...) resizes before the chain, as --resize does."""
    rng = np.random.default_rng(112)
    a = _image(rng, 61, 37, 4, True)
    size = gputex.target_size(61, 37, pot=True)
    assert size == (64, 32)
    tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), "rgba8unorm-srgb", mips=True, size=size)
    try:
        assert (tex.width, tex.height, tex.levels) == (64, 32, 7)
        level0 = gputex.capture(tex, 0)
        assert np.abs(level0 - _reference(a / 255, 64, 32, srgb=True) * 255).max() <= 1.0
        again = gputex.upload(gpu, gputex.from_array(level0, "srgb"), "rgba8unorm-srgb", mips=True)
        try:
            for i in range(1, 7):
                assert np.array_equal(gputex.capture(tex, i), gputex.capture(again, i)), f"level {i}"
        finally:
            again.destroy()
    finally:
        tex.destroy()
