"""The integer box chain on the GPU: correctly rounded 8- and 16-bit unorm mips, the same bytes on
every adapter (``mip_int.wgsl``; the arithmetic and its error bound are in :mod:`.intbox`).

Each level's exact integer sums come from the base (footprint rows in chunks, so no invocation
loops more than ``intbox.LOOP_LIMIT`` times) or from an earlier level whose stored sums tile its
footprints exactly; the same pass turns the sums into codes (exact threshold comparisons) and
writes the level's bytes into a padded buffer, copied into the texture.

The self-check (:func:`self_check`) runs once per session and kind of chain (format, colour
space, alpha mode) before the first such chain: a 13x7 chain whose bytes must equal those of
``intbox.model_chain`` (the same integer arithmetic in Python; the tests hold both against the
float64 reference). An adapter that disagrees gets the float path instead, and the chain's
report says so (``MipReport.note``).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from ..kernels import dispatch, submit_timed, timestamps
from ..layout import align_up
from .common import integer_entries, pipeline
from .intbox import BUCKETS, MAX_BASE_TEXELS, bucket_table, code_words, lin_table, plan_chain, threshold_table

if TYPE_CHECKING:
    from ..texture import Texture

__all__ = ["INT_FORMATS", "int_ok", "int_chain", "self_check", "matches_model", "expected_levels"]

#: Formats the integer chain serves (unorm, 8 or 16 bits a channel).
INT_FORMATS = ("r8unorm", "rg8unorm", "rgba8unorm", "rgba8unorm-srgb", "bgra8unorm", "bgra8unorm-srgb",
               "r16unorm", "rg16unorm", "rgba16unorm")


def int_ok(tex: Texture, filter: str, normal_map: bool, coverage) -> bool:
    """Whether the integer chain can make ``tex``'s box mips."""
    return (filter == "box" and not normal_map and coverage is None and tex.depth == 1
            and tex.format.name in INT_FORMATS and tex.width * tex.height <= MAX_BASE_TEXELS)


def slots(channels: int) -> int:
    """Sum slots a texel keeps: colour (1 for one channel, else 3) plus alpha or a second channel."""
    return (3 if channels == 4 else 1) + (channels != 1)


def table_words(bits: int, srgb: bool, float_thresholds: bool = False):
    """The tables the integer shaders read, as uint32 words: L (2 words a code) then Q (3 words
    a code) for sRGB data, then with ``float_thresholds`` Q / 2**32 as float32 (what the
    single-pass chain's float screen compares with) and at 8 bits ``intbox.bucket_table``'s
    codes, four a word, then ``intbox.code_words`` (a word a bucket); a stand-in for linear data."""
    import numpy as np

    if not srgb:
        return np.zeros(4, np.uint32)
    lin = np.array(lin_table(bits, True), dtype=object)
    thr = np.array(threshold_table(bits, True), dtype=object)
    mask = 0xFFFFFFFF
    parts = [np.stack([lin & mask, lin >> 32], -1).astype(np.uint64).astype(np.uint32).ravel(),
             np.stack([thr & mask, (thr >> 32) & mask, thr >> 64], -1).astype(np.uint64).astype(np.uint32).ravel()]
    if float_thresholds:
        parts.append(np.array([float(q) / 2.0 ** 32 for q in thr], np.float64).astype(np.float32).view(np.uint32))
        if bits == 8:  # intbox.bucket_table's codes, four bytes a word; then intbox.code_words
            parts.append(np.array(bucket_table() + (0,) * (-BUCKETS % 4), np.uint8).view(np.uint32))
            parts.append(np.array(code_words(), np.uint32))
    return np.concatenate(parts)


def tables_buffer(session, bits: int, srgb: bool, float_thresholds: bool = False):
    """:func:`table_words` in a storage buffer, made once per session."""
    import wgpu

    def make():
        data = table_words(bits, srgb, float_thresholds)
        return session.device.create_buffer_with_data(data=data.tobytes(), usage=wgpu.BufferUsage.STORAGE)

    return session.cache("mip-int").get(("tables", bits, srgb, float_thresholds), make)


def int_chain(tex: Texture, alpha: str, layer: int = 0, measure: bool = False):
    """Fill levels 1.. of ``tex`` with the integer box chain. Returns (sources, gpu_ns, pass_ns)."""
    import wgpu

    session, device, fmt = tex.session, tex.session.device, tex.format
    channels, bits = fmt.channels, fmt.bits
    srgb = tex.color_space == "srgb"
    nslots = slots(channels)
    bpt = fmt.block_bytes
    limit = min(session.limits.get("max-storage-buffer-binding-size", 128 << 20), 1 << 30)
    plan = plan_chain(tex.width, tex.height, tex.levels, nslots * 12, limit)
    consts = {"CHANNELS": channels, "BITS": bits, "SRGB": srgb, "SRGB_VIEW": fmt.srgb,
              "WEIGHTED": alpha == "weighted", "BGRA": fmt.bgra}
    entries = integer_entries("surssr")
    tables = tables_buffer(session, bits, srgb)
    total = tex.width * tex.height

    # bands of destination rows: the output band and the partial sums each fit a binding
    work = []
    for p in plan:
        dw, dh = tex.size(p.level)
        pitch = align_up(dw * bpt, 256)
        per_row = max(pitch, dw * p.chunks * 84 if p.chunks > 1 else 0)
        rows = max(1, min(dh, min(limit, 64 << 20) // per_row))
        work.append((p, dw, dh, pitch, rows))
    out_size = max(pitch * rows for _, _, _, pitch, rows in work)
    part_size = max([dw * rows * p.chunks * 84 for p, dw, _, _, rows in work if p.chunks > 1] + [16])
    owned = []

    def buffer(size, usage, what):
        b = session.check(f"{tex.source}: {what}", device.create_buffer, size=size, usage=usage)
        owned.append(b)
        return b

    try:
        out = buffer(out_size, wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST,
                     "mip output buffer")
        partial = buffer(part_size, wgpu.BufferUsage.STORAGE, "mip partial sums")
        stand_in = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")  # (read-only and writable
        stand_in_w = buffer(16, wgpu.BufferUsage.STORAGE, "mip stand-in")  # bindings need one each)
        sums = {}
        for p, dw, dh, _, _ in work:
            if p.store:
                sums[p.level] = buffer(dw * dh * nslots * 12, wgpu.BufferUsage.STORAGE, "mip level sums")
        base = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer,
                        array_layer_count=1, dimension="2d")
        query = timestamps(session, 2 * len(plan) + 8) if measure else None
        enc = device.create_command_encoder()

        def run(pipe, bgl, res, groups):
            bind = device.create_bind_group(layout=bgl, entries=[{"binding": i, "resource": r}
                                                                 for i, r in enumerate(res)])
            dispatch(enc, pipe, bind, groups, query.next() if query else None)

        def whole(b):
            return {"buffer": b, "offset": 0, "size": b.size}

        for p, dw, dh, pitch, rows in work:
            c = dict(consts, STORE=p.store)
            src_size = tex.size(p.source)
            for r0 in range(0, dh, rows):
                n = min(rows, dh - r0)
                prm = struct.pack("<11I", *src_size, dw, dh, r0, n, pitch // 4, p.chunks, p.chunk_rows, total, nslots)
                res = [base, whole(out), {"buffer": session.uniform(prm)},
                       whole(sums[p.source]) if p.source else whole(stand_in),
                       whole(sums[p.level]) if p.store else whole(stand_in_w), whole(partial), whole(tables)]
                if bpt < 4:
                    enc.clear_buffer(out, 0, pitch * n)
                groups = (-(-dw // 8), -(-n // 8), 1)
                if p.source:
                    run(*pipeline(session, "mip_int.wgsl", c, entries, "from_sums"), res, groups)
                else:
                    run(*pipeline(session, "mip_int.wgsl", c, entries, "from_base"), res, groups[:2] + (p.chunks,))
                    if p.chunks > 1:
                        run(*pipeline(session, "mip_int.wgsl", c, entries, "finish"), res, groups)
                enc.copy_buffer_to_texture({"buffer": out, "offset": 0, "bytes_per_row": pitch, "rows_per_image": n},
                                           {"texture": tex.texture, "mip_level": p.level, "origin": (0, r0, layer)},
                                           (dw, n, 1))
        gpu_ns, pass_ns = submit_timed(session, enc, query, f"{tex.source}: mip chain (integer)")
    finally:
        for b in owned:
            b.destroy()
    return [p.source for p in plan], gpu_ns, pass_ns


def hashed_words(w: int, h: int, channels: int):
    """(h, w, channels) uint64 words below 2^32 from a multiplicative hash of each value's index:
    the self-checks' images (no random generator whose stream could change)."""
    import numpy as np

    i = np.arange(w * h * channels, dtype=np.uint64).reshape(h, w, channels)
    return (i * np.uint64(2654435761) + np.uint64(12345)) % np.uint64(1 << 32)


def self_check_image(channels: int, bits: int):
    """The self-check's 13x7 image: values from an integer hash (no random generator whose
    stream could change), some texels and one whole footprint column transparent."""
    import numpy as np

    mix = hashed_words(13, 7, channels)
    v = (mix >> np.uint64(7)) & np.uint64((1 << bits) - 1)
    if channels in (2, 4):
        v[::3, ::2, -1] = 0
        v[:, 10:, -1] = 0
    return v.astype(np.uint8 if bits == 8 else np.uint16)


def check_codes(channels: int, bits: int, size: tuple[int, int] | None = None):
    """:func:`self_check_image`, tiled to ``size`` (width, height) where given."""
    import numpy as np

    codes = self_check_image(channels, bits)
    if size is None:
        return codes
    w, h = size
    return np.ascontiguousarray(np.tile(codes, (-(-h // 7), -(-w // 13), 1))[:h, :w])


def _engine_serves(codes, channels: int, bits: int, srgb: bool) -> bool:
    """Whether :func:`expected_levels` of ``codes`` comes from the host C engine (not the model)."""
    from . import cpu

    return cpu.available() and cpu.serves(channels, bits, srgb, codes.shape[1], codes.shape[0])


def expected_levels(codes, channels: int, bits: int, srgb: bool, weighted: bool, levels: int) -> list:
    """Levels 1..``levels - 1`` of the integer chain of ``codes`` (``(h, w, channels)`` uint8 or
    uint16), each ``(h, w, channels)``: the bytes of ``intbox.model_chain``, which the self-checks
    compare a chain with. Computed by the host C engine (``mips/cpu.py``) where it is built and
    serves the kind (``tests/mips/test_cpu_engine.py`` holds it to the model, and this function
    to the model at every self-check's image): ~0.1 ms, where the model's pure Python took 30-60
    ms holding the GIL (H200 host: the first chain of each kind waited ~40 ms of it before its
    pipelines were made). Else by the model itself."""
    import numpy as np

    from . import cpu
    from .intbox import model_chain

    if _engine_serves(codes, channels, bits, srgb):
        return cpu.host_chain(np.ascontiguousarray(codes), channels, bits, srgb, weighted, levels, nthreads=1)
    dtype = np.uint8 if bits == 8 else np.uint16
    return [np.array(lv, dtype).reshape(len(lv), len(lv[0]), channels)
            for lv in model_chain(codes.tolist(), channels, bits, srgb, weighted, levels)]


def matches_model(session, fmt, color_space: str, alpha: str, chain, size: tuple[int, int] | None,
                  levels: int, storage: str = "") -> tuple[bool, str]:
    """:func:`_matches_model` as a ``mips:self-check`` span (``GPUTEX_TRACE``)."""
    from ..trace import span

    with span("mips:self-check", format=fmt.name, chain=getattr(chain, "__name__", ""), storage=storage):
        return _matches_model(session, fmt, color_space, alpha, chain, size, levels, storage)


def _matches_model(session, fmt, color_space: str, alpha: str, chain, size: tuple[int, int] | None,
                   levels: int, storage: str = "") -> tuple[bool, str]:
    """Run ``chain(tex, alpha)`` over :func:`check_codes` (:func:`self_check_image` tiled to
    ``size``, or as it is) uploaded as ``fmt`` with ``levels`` levels (``storage``: made for its
    levels to be stored through that format, ``create_texture(store_levels=)``), its levels read
    back in one map: (True, "") where every level has the bytes of ``intbox.model_chain``
    (:func:`expected_levels`), else (False, the first texel that differs). The self-checks of the
    integer chains (this one, spd, odd) share it."""
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import nullcontext

    import numpy as np

    from ..capture import capture_levels
    from ..decode import from_array
    from ..upload import upload

    codes = check_codes(fmt.channels, fmt.bits, size)
    args = (codes, fmt.channels, fmt.bits, color_space == "srgb", alpha == "weighted", levels)
    # the C engine's reference at once (~0.1 ms); the model's Python (35-45 ms) on a thread while
    # this one makes the chain's pipelines
    engine = _engine_serves(*args[:4])
    pool: Any
    with ThreadPoolExecutor(1, thread_name_prefix="gputex-model") if not engine else nullcontext() as pool:
        model = None if engine else pool.submit(expected_levels, *args)
        tex = upload(session, from_array(codes, color_space), fmt.name, levels=levels, color_space=color_space,
                     usage=binding_usage(), store_levels=storage)
        try:
            chain(tex, alpha)
            expected = expected_levels(*args) if model is None else model.result()
        except BaseException:
            tex.destroy()
            raise
    try:
        for lv, got in enumerate(capture_levels(tex, list(range(1, tex.levels))), start=1):
            exp = expected[lv - 1].astype(got.dtype).reshape(got.shape)
            if not np.array_equal(got, exp):
                y, x = (int(b) for b in np.argwhere(got != exp)[0][:2])
                return False, (f"level {lv} texel ({y}, {x}): got {got[y, x].tolist()}, "
                               f"expected {exp[y, x].tolist()}")
    finally:
        tex.destroy()
    return True, ""


def self_check(session, fmt, color_space: str, alpha: str) -> tuple[bool, str]:
    """Once per session and kind of chain: the integer chain of :func:`self_check_image` must give
    the bytes of ``intbox.model_chain`` (the same integers computed in Python). Returns (passed,
    what differed)."""
    key = ("self-check", fmt.name, color_space, alpha == "weighted" and fmt.channels != 1)
    return session.cache("mip-int").get(key, lambda: matches_model(session, fmt, color_space, alpha, int_chain,
                                                                   None, 4))


def binding_usage() -> int:
    import wgpu

    return wgpu.TextureUsage.TEXTURE_BINDING
