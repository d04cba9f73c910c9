"""A version-gated shim for wgpu-py: textures with ``view_formats``.

wgpu-py 0.32.0's ``GPUDevice.create_texture`` raises ``NotImplementedError`` for a non-empty
``view_formats``, although the C descriptor it fills (``WGPUTextureDescriptor``) has the two
fields (``viewFormatCount``, ``viewFormats``) and wgpu-native honours them. gputex needs them for
an sRGB texture whose levels a compute shader stores: an ``rgba8unorm-srgb`` texture cannot be a
storage texture, so it is made as ``rgba8unorm`` with the view format ``rgba8unorm-srgb``
(written through linear storage views, read through sRGB views; :class:`gputex.texture.Texture`
keeps both formats), as SPD and every engine do.

:func:`create_texture` calls wgpu-py's own where that takes the view formats (tested once per
process on a 1x1 texture), else fills the same descriptor with them as wgpu-py's own code does
(``inspect.getsource(GPUDevice.create_texture)``; the list converted as its surface configuration
converts one) and wraps the result as it does (``GPUTexture(label, id, device, tex_info)``).

**When it can go:** upstream merged the fix (pygfx/wgpu-py PR #832: the two fields set); with a
wgpu-py release that contains it the feature test passes, the shim is never used, and this
module (and its lines in ``tests/structure/test_import_graph.py``) can be deleted, its callers
calling ``device.create_texture`` again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

__all__ = ["create_texture", "native_view_formats"]

_NATIVE: bool | None = None
_LOCK = threading.Lock()


def native_view_formats(device: Any) -> bool:
    """Whether the installed wgpu-py's ``create_texture`` takes ``view_formats`` (tested once
    per process: a 1x1 ``rgba8unorm`` texture with the view format ``rgba8unorm-srgb``)."""
    global _NATIVE
    with _LOCK:
        if _NATIVE is None:
            import wgpu

            try:
                device.create_texture(size=(1, 1, 1), format="rgba8unorm", usage=wgpu.TextureUsage.COPY_DST,
                                      view_formats=["rgba8unorm-srgb"]).destroy()
                _NATIVE = True
            except NotImplementedError:
                _NATIVE = False
        return _NATIVE


def create_texture(device: Any, *, view_formats: Sequence[str] = (), **kwargs: Any) -> Any:
    """``device.create_texture(**kwargs, view_formats=view_formats)``, also where the installed
    wgpu-py does not take ``view_formats`` (the module docstring)."""
    if not view_formats or native_view_formats(device):
        return device.create_texture(view_formats=list(view_formats), **kwargs)
    return _create_with_view_formats(device, list(view_formats), **kwargs)


def _create_with_view_formats(device: Any, view_formats: list[str], *, label: str = "",
                              size: tuple[int, int, int], mip_level_count: int = 1, sample_count: int = 1,
                              dimension: str = "2d", format: str, usage: int,
                              texture_binding_view_dimension: str | None = None) -> Any:
    """wgpu-py 0.32.0's ``GPUDevice.create_texture`` with ``viewFormatCount``/``viewFormats``
    filled in (its own code otherwise; sizes as a tuple, usage as flags)."""
    from wgpu.backends.wgpu_native._api import (
        GPUTexture,
        enummap,
        libf,
        new_array,
        new_struct,
        new_struct_p,
        to_c_string_view,
    )

    size = tuple(int(v) for v in size)  # type: ignore[assignment]
    if len(size) != 3:
        raise ValueError(f"texture size must be (width, height, depth or layers), got {size}")
    c_size = new_struct("WGPUExtent3D", width=size[0], height=size[1], depthOrArrayLayers=size[2])
    c_view_formats = new_array("WGPUTextureFormat[]", [enummap["TextureFormat." + f] for f in view_formats])
    struct = new_struct_p(
        "WGPUTextureDescriptor *",
        label=to_c_string_view(label),
        size=c_size,
        mipLevelCount=int(mip_level_count or 1),
        sampleCount=int(sample_count or 1),
        dimension=dimension,
        format=format,
        usage=int(usage),
        viewFormatCount=len(view_formats),
        viewFormats=c_view_formats,
    )
    tex_id = libf.wgpuDeviceCreateTexture(device._internal, struct)
    tex_info = {"size": size, "mip_level_count": int(mip_level_count or 1), "sample_count": int(sample_count or 1),
                "dimension": dimension, "format": format, "usage": int(usage),
                "texture_binding_view_dimension": texture_binding_view_dimension}
    return GPUTexture(label, tex_id, device, tex_info)
