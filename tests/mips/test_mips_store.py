"""Mip levels stored straight into the texture (issue 16): the ``view_formats`` shim
(gputex/wgpu_compat.py), a texture's physical (linear twin) and logical (sRGB) formats
(gputex/texture.py), and the single-pass chain storing its levels with ``textureStore`` (gputex/mips/spd.py):
the stored path's bytes equal the buffer path's, the integer chain's and the Python model's, and the
float64 reference's rounding; what users see keeps the logical format."""

from __future__ import annotations

import numpy as np
import pytest
from test_mips_int import _image, assert_correctly_rounded

import gputex
from gputex.errors import GPUError
from gputex.layout import mip_count
from gputex.mips import spd
from gputex.mips import stored as stored_levels
from gputex.mips.intbox import model_chain
from gputex.texture import copy_usage, create_texture

from reference import filter_levels

pytestmark = pytest.mark.gpu


def srgb_decode(codes: np.ndarray) -> np.ndarray:
    """The sRGB transfer function's inverse in float64 (IEC 61966-2-1)."""
    c = codes.astype(np.float64) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


# -- the view_formats shim ---------------------------------------------------------------------

_STORE_THEN_LOAD = """
@group(0) @binding(0) var dst: texture_storage_2d<rgba8unorm, write>;
@compute @workgroup_size(64, 1)
fn store(@builtin(global_invocation_id) g: vec3<u32>) {
    let x = g.x;
    let codes = vec4<u32>(x, 255u - x, (x * 7u + 3u) % 256u, (x * 13u + g.y) % 256u);
    textureStore(dst, g.xy, (vec4<f32>(codes) + vec4<f32>(0.25)) / 255.0);
}

@group(0) @binding(1) var src: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(64, 1)
fn load(@builtin(global_invocation_id) g: vec3<u32>) {
    out[g.y * 256u + g.x] = textureLoad(src, vec2<i32>(g.xy), 0);
}
"""


def _codes() -> np.ndarray:
    x, y = np.meshgrid(np.arange(256), np.arange(2))
    return np.stack([x, 255 - x, (x * 7 + 3) % 256, (x * 13 + y) % 256], axis=-1)


def test_shim_stores_through_the_linear_view_and_reads_srgb(gpu):
    """Codes stored through an rgba8unorm storage view of a texture made with the view format
    rgba8unorm-srgb: its bytes are the codes, and a load through the sRGB view gives their float64
    sRGB decode (alpha linear); every code passes through every channel."""
    import wgpu

    from gputex.wgpu_compat import create_texture as shim_create

    U = wgpu.TextureUsage
    dev = gpu.device
    tex = shim_create(dev, size=(256, 2, 1), format="rgba8unorm", view_formats=["rgba8unorm-srgb"],
                      usage=U.STORAGE_BINDING | U.TEXTURE_BINDING | U.COPY_SRC)
    assert tex.format == "rgba8unorm"
    module = dev.create_shader_module(code=_STORE_THEN_LOAD)
    out = dev.create_buffer(size=256 * 2 * 16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    enc = dev.create_command_encoder()
    for entry, resources in (
            ("store", {0: tex.create_view(usage=U.STORAGE_BINDING)}),
            ("load", {1: tex.create_view(format="rgba8unorm-srgb", usage=U.TEXTURE_BINDING),
                      2: {"buffer": out, "offset": 0, "size": out.size}})):
        pipe = dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": entry})
        bind = dev.create_bind_group(layout=pipe.get_bind_group_layout(0),
                                     entries=[{"binding": b, "resource": r} for b, r in resources.items()])
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, bind)
        cpass.dispatch_workgroups(4, 2, 1)
        cpass.end()
    gpu.check("store then load", dev.queue.submit, [enc.finish()])
    stored = np.frombuffer(dev.queue.read_texture({"texture": tex, "mip_level": 0, "origin": (0, 0, 0)},
                                                  {"offset": 0, "bytes_per_row": 1024, "rows_per_image": 2},
                                                  (256, 2, 1)), np.uint8).reshape(2, 256, 4)
    loaded = np.frombuffer(dev.queue.read_buffer(out), np.float32).reshape(2, 256, 4).astype(np.float64)
    tex.destroy()
    codes = _codes()
    assert np.array_equal(stored, codes)
    want = np.concatenate([srgb_decode(codes[..., :3]), codes[..., 3:] / 255], axis=-1)
    # Vulkan lets the sRGB decode be approximate (lavapipe's is off by up to 2.5% at code 3, 1.2e-3
    # near 0.7): each colour must lie nearer its own code's float64 decode than any other code's
    # (a linear read, c / 255, would not); alpha is c / 255
    err = np.abs(loaded - want)
    assert err[..., 3].max() < 1e-6
    lut = srgb_decode(np.arange(256))
    nearest = np.abs(loaded[..., :3, None] - lut).argmin(-1)
    assert np.array_equal(nearest, codes[..., :3])


def test_shim_rejects_an_undeclared_view_format(gpu):
    import wgpu

    from gputex.wgpu_compat import create_texture as shim_create

    tex = shim_create(gpu.device, size=(4, 4, 1), format="rgba8unorm", view_formats=["rgba8unorm-srgb"],
                      usage=wgpu.TextureUsage.TEXTURE_BINDING)
    with pytest.raises(GPUError, match="view format: .*Rgba16Float.*not present in the texture's viewFormat"):
        gpu.check("view format", tex.create_view, format="rgba16float")
    tex.destroy()


def test_shim_without_view_formats_is_wgpus_own(gpu, monkeypatch):
    """No view formats: wgpu-py's own create_texture, the feature test not even run."""
    import wgpu

    import gputex.wgpu_compat as compat

    monkeypatch.setattr(compat, "native_view_formats", lambda device: pytest.fail("feature test run"))
    tex = compat.create_texture(gpu.device, size=(8, 4, 1), format="rgba8unorm-srgb", mip_level_count=3,
                                usage=wgpu.TextureUsage.COPY_DST)
    assert (tex.format, tex.size, tex.mip_level_count, tex.usage) == ("rgba8unorm-srgb", (8, 4, 1), 3,
                                                                      wgpu.TextureUsage.COPY_DST)
    tex.destroy()


def test_shim_passes_view_formats_to_a_wgpu_that_takes_them(monkeypatch):
    """A wgpu-py whose create_texture takes view_formats (a release with PR #832): the feature
    test passes once and the view formats go to wgpu-py's own create_texture, no shim."""
    import gputex.wgpu_compat as compat

    calls = []

    class Device:
        def create_texture(self, **kw):
            calls.append(kw)
            return type("Tex", (), {"destroy": lambda self: None, "kw": kw})()

    monkeypatch.setattr(compat, "_NATIVE", None)
    monkeypatch.setattr(compat, "_create_with_view_formats", lambda *a, **k: pytest.fail("shim used"))
    dev = Device()
    for _ in range(2):
        tex = compat.create_texture(dev, size=(8, 4, 1), format="rgba8unorm", usage=4,
                                    view_formats=("rgba8unorm-srgb",))
        assert tex.kw == {"size": (8, 4, 1), "format": "rgba8unorm", "usage": 4, "view_formats": ["rgba8unorm-srgb"]}
    assert compat._NATIVE is True and len(calls) == 3  # the feature test once, then the two textures
    assert calls[0]["view_formats"] == ["rgba8unorm-srgb"] and calls[0]["size"] == (1, 1, 1)


def test_store_levels_must_be_the_format_or_its_storable_twin(gpu):
    """create_texture's store_levels names the format itself or its linear twin; anything else is
    gputex's own one-line error, not wgpu's."""
    for fmt, store in (("r8unorm", "rgba8unorm"), ("rgba8unorm-srgb", "rgba8unorm-srgb"),
                       ("rgba8unorm", "bgra8unorm")):
        with pytest.raises(gputex.FormatError) as e:
            create_texture(gpu, gputex.get_format(fmt), 16, 16, levels=3, store_levels=store, source="t.png")
        twin = gputex.get_format(fmt).linear_name
        assert str(e.value) == (f"t.png: {fmt} levels cannot be stored through {store!r} (store_levels is the "
                                f"format itself or its linear twin {twin}, and a storage-capable one: "
                                "gputex.mips.stored_format says which)")


# -- the texture's formats -----------------------------------------------------------------------

def test_stored_texture_is_its_linear_twin_with_the_logical_format(gpu):
    fmt = gputex.get_format("rgba8unorm-srgb")
    tex = create_texture(gpu, fmt, 32, 16, levels=6, store_levels="rgba8unorm")
    try:
        assert tex.texture.format == "rgba8unorm" and tex.format.name == "rgba8unorm-srgb"
        assert tex.storage == "rgba8unorm"
        assert tex.view(base_mip_level=1, mip_level_count=1) is not None
        assert tex.storage_view(5) is not None
    finally:
        tex.destroy()
    plain = create_texture(gpu, fmt, 32, 16, levels=6)
    assert plain.texture.format == "rgba8unorm-srgb" and plain.storage == ""
    one = create_texture(gpu, fmt, 32, 16, levels=1, store_levels="rgba8unorm")  # no levels to store
    assert one.texture.format == "rgba8unorm-srgb" and one.storage == ""
    plain.destroy()
    one.destroy()


def test_stored_format_policy(gpu, monkeypatch):
    fmt = gputex.get_format
    monkeypatch.setattr(stored_levels, "STORE_LEVELS", True)
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 64, 32, 7) == "rgba8unorm"
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm"), 64, 32, 7) == "rgba8unorm"
    want_bgra = "bgra8unorm" if gpu.has_feature("bgra8unorm-storage") else ""
    assert stored_levels.stored_format(gpu, fmt("bgra8unorm-srgb"), 64, 32, 7) == want_bgra
    for kw in ({"precision": "fast"}, {"filter": "kaiser"}, {"normal_map": True}, {"coverage": 0.5}):
        assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 64, 32, 7, **kw) == "", kw
    assert stored_levels.stored_format(gpu, fmt("rgba16unorm"), 64, 32, 7) == ""  # not 8-bit RGBA
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 61, 37, 6) == "rgba8unorm"  # the cell chain stores too
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 64, 32, 1) == ""  # no levels
    monkeypatch.setattr(stored_levels, "STORE_LEVELS", None)
    monkeypatch.setenv("GPUTEX_MIPS_STORE", "0")
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 64, 32, 7) == ""
    monkeypatch.setenv("GPUTEX_MIPS_STORE", "1")
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 64, 32, 7) == "rgba8unorm"
    monkeypatch.delenv("GPUTEX_MIPS_STORE")
    assert stored_levels.stored_format(gpu, fmt("rgba8unorm-srgb"), 64, 32, 7) == (
        "" if gpu.info.adapter_type == "CPU" else "rgba8unorm")


# -- the chain stores its levels ------------------------------------------------------------------

def _chain(gpu, a, fmt, space, alpha, store: str):
    """(report, levels 1.., whether its levels were stored) of ``a`` uploaded as ``fmt`` (made for
    stored levels through ``store``, or not) and mipped by the exact chain."""
    from gputex.upload import upload

    tex = upload(gpu, gputex.from_array(a, space), fmt, levels=mip_count(*a.shape[1::-1]), store_levels=store,
                 usage=copy_usage(__import__("wgpu").TextureUsage.TEXTURE_BINDING))
    try:
        stored = stored_levels.stores(tex, alpha, "mip-spd" if spd.spd_plan(tex.width, tex.height, tex.levels) else "mip-odd")
        report = gputex.generate_mips(tex, alpha=alpha, precision="exact")
        return report, [gputex.capture(tex, lv) for lv in range(1, tex.levels)], stored
    finally:
        tex.destroy()


# halving chains (the single-pass chain), other sizes (the cell chain, mips/odd.py)
@pytest.mark.parametrize("w,h", [(2, 1), (1, 2), (64, 64), (16, 256), (256, 8), (512, 256), (7, 13), (61, 37),
                                 (257, 131), (96, 48)])
@pytest.mark.parametrize("fmt,space,alpha", [("rgba8unorm-srgb", "srgb", "weighted"),
                                             ("rgba8unorm-srgb", "srgb", "straight"),
                                             ("rgba8unorm", "linear", "premultiplied"),
                                             ("bgra8unorm-srgb", "srgb", "weighted")])
def test_stored_levels_equal_the_buffer_path_the_model_and_the_reference(gpu, w, h, fmt, space, alpha):
    twin = fmt.replace("-srgb", "")
    if twin.startswith("bgra") and not gpu.has_feature("bgra8unorm-storage"):
        pytest.skip("no bgra8unorm-storage")
    a = _image(np.random.default_rng(2100 + w * 3 + h), w, h, 4, 8, "holes")
    report, got, stored = _chain(gpu, a, fmt, space, alpha, twin)
    assert stored and report.precision == "integer" and report.note == ""
    plan = spd.spd_plan(w, h, mip_count(w, h)) and spd.chain_plan(gpu, w, h, mip_count(w, h), True)[0]
    if plan:
        assert report.sources == [s for s, n in plan for _ in range(n)]
    _, buffered, stored_too = _chain(gpu, a, fmt, space, alpha, "")
    assert not stored_too
    model = model_chain(a.tolist(), 4, 8, space == "srgb", alpha == "weighted", mip_count(w, h))
    ref = filter_levels(a / 255, 4, srgb=space == "srgb", alpha_mode=alpha)
    for lv, (g, b, m, r) in enumerate(zip(got, buffered, model, ref), start=1):
        what = f"{fmt} {w}x{h} {alpha} level {lv}"
        assert np.array_equal(g, b), f"{what}: stored != buffer path"
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{what}: != model"
        assert_correctly_rounded(g, r, 255, what)


@pytest.mark.parametrize("w,h", [(64, 64), (512, 256), (256, 8), (61, 37)])
@pytest.mark.parametrize("fmt,space,alpha", [("rgba8unorm-srgb", "srgb", "weighted"),
                                             ("rgba8unorm", "linear", "premultiplied")])
def test_stored_levels_with_the_gpu_forms_equal_the_model(gpu, monkeypatch, w, h, fmt, space, alpha):
    """What a GPU adapter runs by default (the single-pass chain's GPU forms, ``ROUND_A_LEVEL``,
    and its tables in workgroup memory), storing its levels: the model's bytes (on any adapter)."""
    monkeypatch.setattr(spd, "ROUND_A_LEVEL", True)
    monkeypatch.setattr(spd, "SMEM_TABLES", True)
    a = _image(np.random.default_rng(2150 + w + h), w, h, 4, 8, "holes")
    report, got, stored = _chain(gpu, a, fmt, space, alpha, "rgba8unorm")
    assert stored and report.precision == "integer" and report.note == ""
    model = model_chain(a.tolist(), 4, 8, space == "srgb", alpha == "weighted", mip_count(w, h))
    for lv, (g, m) in enumerate(zip(got, model), start=1):
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"{fmt} {w}x{h} {alpha} level {lv}"


def test_fewer_storage_bindings_make_more_passes_same_bytes(gpu, monkeypatch):
    """A device allowing 4 storage textures a stage: at most 4 levels a pass (1024x512: 10 levels in
    three passes of 4, 4 and 2, or 3, 4 and 3 with the GPU forms' first pass of 3, instead of 6 and 4),
    the model's bytes."""
    monkeypatch.setattr(gpu, "limits", dict(gpu.limits, **{"max-storage-textures-per-shader-stage": 4}))
    a = _image(np.random.default_rng(2200), 1024, 512, 4, 8, "holes")
    report, got, stored = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "rgba8unorm")
    if spd.first_pass_levels(gpu) == spd.SPLIT_FIRST == 3:  # the GPU forms: a first pass of three
        assert stored and report.sources == [0] * 3 + [3] * 4 + [7] * 3
    else:
        assert stored and report.sources == [0] * 4 + [4] * 4 + [8] * 2
    model = model_chain(a.tolist(), 4, 8, True, True, mip_count(1024, 512))
    for lv, (g, m) in enumerate(zip(got, model), start=1):
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"level {lv}"


@pytest.mark.parametrize("fmt,space", [("rgba8unorm", "linear"), ("rgba8unorm-srgb", "srgb")])
def test_failed_stored_self_check_takes_the_buffer(gpu, monkeypatch, fmt, space):
    """An adapter whose stored levels disagree with the model: the chain takes the buffer (the
    model's bytes; of an sRGB texture made for stored levels, whose base it then reads through
    the linear view), the report says so, and later textures of the format are not made for
    stored levels."""
    import gputex.mips.integer as integer

    keys = [("mip-spd-store-check", "rgba8unorm", fmt, space, False), ("store-failed", fmt, space, False),
            ("mip-spd-sg-check", "rgba8unorm", fmt, space, False), ("mip-spd-sg-check", "", fmt, space, False)]
    failed = ("failed", fmt)
    monkeypatch.setattr(stored_levels, "STORE_LEVELS", True)
    assert stored_levels.stored_format(gpu, gputex.get_format(fmt), 64, 32, 7) == "rgba8unorm"
    real = integer.matches_model

    def disagreeing(*args, storage="", **kw):
        if storage:
            return False, "level 1 texel (0, 0): got [1, 2, 3, 4], expected [1, 2, 3, 5]"
        return real(*args, storage=storage, **kw)

    cache = gpu.cache("mip-spd")
    for k in keys:
        cache.pop(k)
    gpu.cache("mip-store").pop(failed)
    monkeypatch.setattr(integer, "matches_model", disagreeing)
    try:
        a = _image(np.random.default_rng(2300), 64, 32, 4, 8, "holes")
        report, got, _ = _chain(gpu, a, fmt, space, "straight", "rgba8unorm")
        assert report.precision == "integer"
        assert report.note == (f"{gpu.name}: storing the mip levels through rgba8unorm failed its self-check "
                               "(level 1 texel (0, 0): got [1, 2, 3, 4], expected [1, 2, 3, 5]); "
                               "they went through a buffer")
        model = model_chain(a.tolist(), 4, 8, space == "srgb", False, mip_count(64, 32))
        for lv, (g, m) in enumerate(zip(got, model), start=1):
            assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"level {lv}"
        assert stored_levels.stored_format(gpu, gputex.get_format(fmt), 64, 32, 7) == ""
    finally:
        for k in keys:
            cache.pop(k)
        gpu.cache("mip-store").pop(failed)


def test_upload_stores_the_levels_and_shows_the_logical_format(gpu, monkeypatch, tmp_path):
    """gputex.upload(mips=True, store_levels=True) where stored levels apply: the texture is made
    for them, every step that reads it (capture, compare, the KTX2 writer) sees rgba8unorm-srgb and
    the same bytes as a texture made without them. Without store_levels (the library's default:
    the caller gets the texture object) the GPU texture is of the format itself."""
    monkeypatch.setattr(stored_levels, "STORE_LEVELS", True)
    a = _image(np.random.default_rng(2400), 128, 64, 4, 8, "holes")
    tex = gputex.upload(gpu, gputex.from_array(a, "srgb"), mips=True, store_levels=True)
    plain = gputex.upload(gpu, gputex.from_array(a, "srgb"), mips=True)
    try:
        assert (tex.storage, tex.texture.format, tex.format.name) == ("rgba8unorm", "rgba8unorm",
                                                                     "rgba8unorm-srgb")
        assert plain.storage == "" and plain.texture.format == "rgba8unorm-srgb"
        for lv in range(tex.levels):
            assert np.array_equal(gputex.capture(tex, lv), gputex.capture(plain, lv)), f"level {lv}"
        for lv in (0, 1, 3):
            diff = gputex.compare(tex, plain, level=lv)
            assert diff.max_abs_diff == [0.0] * 4 and diff.differing_texels == 0, f"level {lv}"
        gputex.write_texture_file(tex, str(tmp_path / "s.ktx2"))
        gputex.write_texture_file(plain, str(tmp_path / "p.ktx2"))
        assert (tmp_path / "s.ktx2").read_bytes() == (tmp_path / "p.ktx2").read_bytes()
        assert gputex.read_texture_file(str(tmp_path / "s.ktx2")).format.name == "rgba8unorm-srgb"
    finally:
        tex.destroy()
        plain.destroy()


def test_cell_chain_stores_levels_made_in_bands(gpu, monkeypatch):
    """The cell chain's levels made in bands of rows (a binding limit of 8 KiB: level 1 of 257x131
    in bands of 32 rows, and the fast levels' miss lists): each band stored at its rows."""
    import gputex.mips.odd as odd

    monkeypatch.setattr(odd, "_limit", lambda session: 8192)
    a = _image(np.random.default_rng(2500), 257, 131, 4, 8, "holes")
    report, got, stored = _chain(gpu, a, "rgba8unorm-srgb", "srgb", "weighted", "rgba8unorm")
    assert stored and report.precision == "integer" and report.note == ""
    model = model_chain(a.tolist(), 4, 8, True, True, mip_count(257, 131))
    for lv, (g, m) in enumerate(zip(got, model), start=1):
        assert np.array_equal(g, np.array(m, g.dtype).reshape(g.shape)), f"level {lv}"


def test_every_step_reads_a_stored_texture_as_the_srgb_one(gpu, monkeypatch):
    """The steps that read a texture's values through views (the float and kernel chains, the
    resize, BC encoding, stats) give a texture made for stored levels (rgba8unorm with the sRGB view
    format) exactly what they give the rgba8unorm-srgb texture of the same bytes."""
    from gputex.transform import resize_texture

    a = _image(np.random.default_rng(2600), 64, 32, 4, 8, "holes")
    texs = {}
    monkeypatch.setattr(stored_levels, "STORE_LEVELS", True)
    for on in (True, False):
        texs[on] = gputex.upload(gpu, gputex.from_array(a, "srgb"), mips=True, store_levels=on)
    stored, plain = texs[True], texs[False]
    try:
        assert stored.texture.format == "rgba8unorm" and plain.texture.format == "rgba8unorm-srgb"

        def levels(t):
            return [gputex.capture(t, lv) for lv in range(t.levels)]

        for kw in ({"precision": "fast"}, {"filter": "kaiser"}, {"precision": "fast", "alpha": "straight"}):
            got = [gputex.generate_mips(t, **kw) and levels(t) for t in (stored, plain)]
            for lv, (g, p) in enumerate(zip(*got)):
                assert np.array_equal(g, p), f"{kw} level {lv}"
        small = [resize_texture(t, 24, 12) for t in (stored, plain)]
        assert np.array_equal(gputex.capture(small[0]), gputex.capture(small[1]))
        for t in small:
            t.destroy()
        bc = [gputex.encode_blocks(t, "bc7-rgba-unorm-srgb", quality="fast") for t in (stored, plain)]
        for lv in range(stored.levels):
            assert np.array_equal(gputex.capture_bytes(bc[0], lv), gputex.capture_bytes(bc[1], lv)), f"bc7 level {lv}"
        for t in bc:
            t.destroy()
        s, p = gputex.stats(stored, level=1), gputex.stats(plain, level=1)
        assert (s.min, s.max, s.mean, s.std) == (p.min, p.max, p.mean, p.std)
    finally:
        stored.destroy()
        plain.destroy()
