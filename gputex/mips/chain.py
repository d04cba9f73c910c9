"""The float32 mip chain (the reference path of every format and filter): for each level two
passes, all recorded into one command encoder, no CPU round trip between levels.

1. ``mip_reduce.wgsl`` filters a source level into a linear-light ``rgba32float`` work
   level (intermediate levels are kept at float precision, so chaining never
   accumulates 8-bit rounding). For ``box`` the source is the deepest earlier level
   (from 2 on) whose size divides this level's size on both axes (then its texels tile
   the footprint exactly: a 2x2 average on power-of-two sizes), else the base image with
   fractional edge weights: every level is the exact area average over the **base**
   footprint. Kernel filters chain from the previous level.
2. The level's bytes (sRGB-encoded where the data is sRGB, rounded to nearest in the
   shader) reach the texture by the fastest path the format allows:

   * **direct**: where the format or its non-sRGB twin is storage-capable (rgba8unorm
     serves rgba8unorm-srgb; rgba16float, rgba32float, r/rg32float; bgra8 with
     ``bgra8unorm-storage``), the reduce pass stores into a twin texture, and
     ``copy_texture_to_texture`` moves each level (on the H200 ``copy_buffer_to_texture``
     took over half of the chain's GPU time);
   * **render** (``path="render"``, renderable formats without a storage twin): a fragment
     shader draws each level into the texture;
   * **fused**: other formats of 4+ bytes per texel encode whole u32 words into a padded
     storage buffer in the same pass, then ``copy_buffer_to_texture``;
   * **pack**: 1- and 2-byte formats (and alpha coverage) run ``mip_pack.wgsl``, one u32
     word per invocation, then ``copy_buffer_to_texture``.

With ``alpha_coverage`` the chain is submitted first, the work levels' alpha is read
once, and each level's alpha scale is solved on the CPU (:func:`coverage_scales`) before packing.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..kernels import dispatch, timestamps
from ..layout import align_up, bands, mip_size
from .common import (
    PACK_FMT,
    REUSE_MAX_BYTES,
    box_source_level,
    kernel_tables,
    pipeline,
    plain_entries,
    reduce_render_pipeline,
    reused,
    stand_in,
    storage_twin,
)
from .common import entries as layout_entries
from .filters import FILTERS, TILE_SPAN, WRAPS, tile_rows

if TYPE_CHECKING:
    from ..texture import Texture

__all__ = ["Chain", "coverage_scales", "TILES", "tiled"]


#: Kernel filters' levels by ``mip_reduce.wgsl``'s separable tiles (``tile_main``, ``tile_direct``)
#: where their rows fit (:func:`tiled`). None: on; False: every texel sums its 2D footprint
#: (``main``, ``main_direct``), as the render path always does (tests compare the two).
TILES: bool | None = None


def tiled(filter: str, src_rows: int, dst_rows: int) -> bool:
    """Whether a kernel filter's step from ``src_rows`` to ``dst_rows`` rows (a mip level or a
    resize) runs by tiles: :data:`TILES` allows it and 8 destination rows' taps reach at most
    :data:`.filters.TILE_SPAN` source rows."""
    return (TILES is not False and filter != "box"
            and tile_rows(src_rows, dst_rows, filter) <= TILE_SPAN)


class Chain:
    """The passes of one mip chain, recorded into command encoders.

    A level's reduce pass also writes the format's bytes (``FUSED``) when a texel is a whole
    number of u32 words, no alpha-coverage scale is pending, and the level fits one storage
    binding; otherwise a pack pass per row band does it. Work levels no later level reads
    are not stored.
    """

    def __init__(self, tex: Texture, kind: str, filter: str, alpha: str, normal_map: bool, wrap: str, layer: int,
                 measure: bool, coverage: bool, render: bool = False):
        import wgpu

        self.tex, self.session, self.device = tex, tex.session, tex.session.device
        self.layer, self.filter, self.wrap, fmt = layer, filter, wrap, tex.format
        weighted = alpha == "weighted" and fmt.channels in (2, 4) and not normal_map
        self.space_srgb = tex.color_space == "srgb" and not normal_map
        self.split = weighted and filter != "box"
        self.common = {"FMT": PACK_FMT[kind], "CHANNELS": fmt.channels, "BPT": fmt.block_bytes,
                       "BGRA": fmt.bgra, "ENCODE_SRGB": self.space_srgb, "WEIGHTED": weighted,
                       "NORMAL": normal_map, "SPLIT_PLAIN": self.split}
        self.sizes = [mip_size(tex.width, tex.height, lv) for lv in range(tex.levels)]
        self.sources = [None] + [box_source_level(tex.width, tex.height, lv) if filter == "box" else lv - 1
                                 for lv in range(1, tex.levels)]
        w1, h1 = self.sizes[1]
        limit = min(self.session.limits.get("max-storage-buffer-binding-size", 128 << 20), 256 << 20)
        self.pitch1 = align_up(w1 * fmt.block_bytes, 256)
        self.band_rows = max(1, min(h1, limit // self.pitch1))
        self.direct = None if coverage else storage_twin(self.session, fmt)
        # render: the policy chose the render path (mips.needs_render_target) and the texture can be drawn into
        self.render = (not coverage and render and bool(tex.texture.usage & wgpu.TextureUsage.RENDER_ATTACHMENT))
        self.fused = (not self.direct and not self.render and fmt.block_bytes % 4 == 0 and not coverage
                      and self.band_rows >= h1)
        # work, scratch and output resources are kept for the next chain of the same shape
        # (a batch of same-size images, layers of an array): allocating and clearing a
        # 4096^2 rgba32float work level costs more than the whole chain on a fast GPU
        self.owned: list = []  # resources too big to keep for the next chain: freed in release()
        work_bytes = w1 * h1 * 16 * 4 // 3
        self.work = self._reused("work", (w1, h1, tex.levels - 1, bool(coverage)), work_bytes, lambda: self._texture(
            "mip work texture", "rgba32float", wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING
            | (wgpu.TextureUsage.COPY_SRC if coverage else 0)))
        scratch_size = 4 if self.direct or self.render else self.pitch1 * self.band_rows
        self.scratch = self._reused("scratch", scratch_size, scratch_size, lambda: self.session.check(
            f"{tex.source}: mip pack buffer", self.device.create_buffer, size=scratch_size,
            usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC))
        self.out = None
        if self.direct:
            self.out = self._reused("out", (w1, h1, tex.levels - 1, self.direct), w1 * h1 * fmt.block_bytes * 4 // 3,
                                    lambda: self._texture("mip output texture", self.direct,
                                                          wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.COPY_SRC))
            self.out_views = [self.out.create_view(base_mip_level=j, mip_level_count=1)
                              for j in range(tex.levels - 1)]
        self.base_view = tex.view(base_mip_level=0, mip_level_count=1, base_array_layer=layer,
                                  array_layer_count=1, dimension="2d")
        self.work_views = [self.work.create_view(base_mip_level=j, mip_level_count=1)
                           for j in range(tex.levels - 1)]
        self.plain_views = None
        if self.split:  # the plain colour of every level, chained beside the premultiplied one
            plain = self._reused("plain", (w1, h1, tex.levels - 1), work_bytes, lambda: self._texture(
                "mip plain-colour texture", "rgba32float",
                wgpu.TextureUsage.STORAGE_BINDING | wgpu.TextureUsage.TEXTURE_BINDING))
            self.plain_views = [plain.create_view(base_mip_level=j, mip_level_count=1)
                                for j in range(tex.levels - 1)]
        self.query = timestamps(self.session, 4 * tex.levels + 8) if measure else None
        self.enc = self.device.create_command_encoder()

    def _texture(self, what: str, format: str, usage: int):
        """A texture of level 1's size with a level for each of the chain's."""
        w1, h1 = self.sizes[1]
        return self.session.check(f"{self.tex.source}: {what}", self.device.create_texture, size=(w1, h1, 1),
                                  format=format, mip_level_count=self.tex.levels - 1, usage=usage)

    def _pass(self, pipe, bind, groups) -> None:
        dispatch(self.enc, pipe, bind, groups, self.query.next() if self.query else None)

    def _copy(self, level: int, pitch: int, y0: int, y1: int) -> None:
        self.enc.copy_buffer_to_texture(
            {"buffer": self.scratch, "offset": 0, "bytes_per_row": pitch, "rows_per_image": y1 - y0},
            {"texture": self.tex.texture, "mip_level": level, "origin": (0, y0, self.layer)},
            (self.sizes[level][0], y1 - y0, 1))

    def reduce_all(self) -> list[int]:
        import wgpu

        levels = self.tex.levels
        read = {s for s in self.sources[1:] if s}
        fmt = self.tex.format
        ktab = kernel_tables(self.session, "ktab", self.filter, [self.sizes[self.sources[lv]] + self.sizes[lv]
                                                                 for lv in range(1, levels)])
        for level in range(1, levels):
            src = self.sources[level]
            consts = dict(self.common, SRC_IS_BASE=src == 0, FILTER=FILTERS[self.filter].code, WRAP=WRAPS[self.wrap],
                          DECODE_SRGB=self.space_srgb and not fmt.srgb and src == 0, FUSED=self.fused,
                          STORE_WORK=level in read or not (self.fused or self.direct or self.render))
            (sw, sh), (dw, dh) = self.sizes[src], self.sizes[level]
            tile = tiled(self.filter, sh, dh)
            if self.render:
                pipe, bgl = reduce_render_pipeline(self.session, consts, layout_entries("reduce", stage=wgpu.ShaderStage.FRAGMENT),
                                             fmt.name)
            elif self.direct:
                pipe, bgl = pipeline(self.session, "mip_reduce.wgsl", consts, layout_entries("reduce", self.direct),
                                      "tile_direct" if tile else "main_direct", self.direct)
            else:
                pipe, bgl = pipeline(self.session, "mip_reduce.wgsl", consts, layout_entries("reduce"),
                                     "tile_main" if tile else "main")
            pitch = align_up(dw * fmt.block_bytes, 256)
            entries = [
                {"binding": 0, "resource": self.base_view if src == 0 else self.work_views[src - 1]},
                {"binding": 1, "resource": self.work_views[level - 1]},
                {"binding": 2, "resource": {"buffer": self.session.uniform(struct.pack("<5I", sw, sh, dw, dh, pitch // 4))}},
                {"binding": 3, "resource": {"buffer": self.scratch, "offset": 0, "size": self.scratch.size}},
                {"binding": 7, "resource": ktab[level - 1]},
            ]
            if self.direct:
                entries.append({"binding": 4, "resource": self.out_views[level - 1]})
            if self.split:
                entries += [{"binding": 5, "resource": self.plain_views[src - 1] if src else stand_in(
                                self.session, "sampled")},
                            {"binding": 6, "resource": self.plain_views[level - 1]}]
            else:
                entries += [{"binding": 5, "resource": stand_in(self.session, "sampled")},
                            {"binding": 6, "resource": stand_in(self.session, "storage")}]
            bind = self.device.create_bind_group(layout=bgl, entries=entries)
            if self.render:
                self._draw(pipe, bind, level)
                continue
            self._pass(pipe, bind, (-(-dw // 8), -(-dh // 8), 1))
            if self.fused:
                self._copy(level, pitch, 0, dh)
        if self.direct:  # the output texture's levels into the texture (copy-compatible formats)
            for level in range(1, levels):
                w, h = self.sizes[level]
                self.enc.copy_texture_to_texture({"texture": self.out, "mip_level": level - 1},
                                                 {"texture": self.tex.texture, "mip_level": level,
                                                  "origin": (0, 0, self.layer)}, (w, h, 1))
        return self.sources[1:]

    def _draw(self, pipe, bind, level: int) -> None:
        """The render path: one full-screen triangle into ``level``'s texels."""
        view = self.tex.view(base_mip_level=level, mip_level_count=1, base_array_layer=self.layer,
                             array_layer_count=1, dimension="2d")
        ts = self.query.next() if self.query else None
        attach = {"view": view, "load_op": "clear", "store_op": "store", "clear_value": (0, 0, 0, 0)}
        rpass = (self.enc.begin_render_pass(color_attachments=[attach], timestamp_writes=ts) if ts
                 else self.enc.begin_render_pass(color_attachments=[attach]))
        rpass.set_pipeline(pipe)
        rpass.set_bind_group(0, bind)
        rpass.draw(3)
        rpass.end()

    def pack_all(self, scales: list[float]) -> None:
        if self.fused or self.direct or self.render:
            return
        fmt = self.tex.format
        pipe, bgl = pipeline(self.session, "mip_pack.wgsl", self.common, layout_entries("pack") + plain_entries(False))
        for level in range(1, self.tex.levels):
            dw, dh = self.sizes[level]
            pitch = align_up(dw * fmt.block_bytes, 256)
            for y0, y1 in bands(dh, pitch, self.pitch1 * self.band_rows):
                prm = struct.pack("<4If", dw, y1 - y0, y0, pitch // 4, scales[level])
                bind = self.device.create_bind_group(layout=bgl, entries=[
                    {"binding": 0, "resource": self.work_views[level - 1]},
                    {"binding": 1, "resource": {"buffer": self.scratch, "offset": 0, "size": self.scratch.size}},
                    {"binding": 2, "resource": {"buffer": self.session.uniform(prm)}},
                    {"binding": 5, "resource": self.plain_views[level - 1] if self.split
                     else stand_in(self.session, "sampled")},
                ])
                self._pass(pipe, bind, (-(-((dw * fmt.block_bytes + 3) // 4) // 64), y1 - y0, 1))
                self._copy(level, pitch, y0, y1)

    def submit(self) -> None:
        if self.query:
            self.query.resolve(self.enc)
        self.session.check(f"{self.tex.source}: mip chain", self.device.queue.submit, [self.enc.finish()])
        self.enc = self.device.create_command_encoder()

    def _reused(self, kind: str, key, nbytes: int, make):
        """Resources up to REUSE_MAX_BYTES are kept in the session for the next chain of the same
        shape (one per kind); bigger ones are this chain's own and freed in release()."""
        if nbytes > REUSE_MAX_BYTES:
            obj = make()
            self.owned.append(obj)
            return obj
        return reused(self.session, kind, key, make)

    def release(self) -> None:
        for obj in self.owned:
            obj.destroy()
        self.owned.clear()


def coverage_scales(tex: Texture, work, cutoff: float, layer: int) -> list[float]:
    """Per-level alpha scale so that coverage at ``cutoff`` matches level 0 (one readback)."""
    import numpy as np

    from ..capture import capture
    from ..formats import get_format
    from ..texture import Texture as _T

    fmt = tex.format
    bits = 2 if fmt.packed else fmt.bits
    amax = (1 << bits) - 1
    base = capture(tex, 0, layer).astype(np.float64)
    a0 = base[:, :, -1] / (amax if fmt.kind == "unorm" else 1)
    # the stored value passes the test when it quantizes to >= cutoff
    threshold = (np.ceil(cutoff * amax - 1e-9) - 0.5) / amax if fmt.kind == "unorm" else cutoff
    target = float((a0 >= cutoff - 1e-12).mean())
    wtex = _T(tex.session, work, get_format("rgba32float"), *mip_size(tex.width, tex.height, 1),
              1, tex.levels - 1, source=tex.source)
    scales = [1.0]
    for level in range(1, tex.levels):
        a = np.sort(capture(wtex, level - 1)[:, :, 3].astype(np.float64).ravel())[::-1]
        k = int(round(target * a.size))
        if k <= 0:  # nothing passed at level 0: keep every texel below the cutoff
            scales.append(1.0 if a[0] < threshold else float(threshold / a[0] * (1 - 1e-6)))
        elif a[k - 1] <= 0:  # not enough alpha left to reach the coverage
            scales.append(1.0)
        else:
            scales.append(float(threshold / a[k - 1] * (1 + 1e-6)))
    return scales
