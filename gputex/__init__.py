"""gputex: move images into GPU textures and back, exactly and fast.

The library in a nutshell::

    import gputex

    gpu = gputex.Session()                        # one adapter + device for many images
    image = gputex.decode("photo.png")            # 16-bit PNGs keep 16 bits
    tex = gputex.upload(gpu, image, mips=True)    # texture + GPU mip chain
    pixels = gputex.capture(tex, level=1)         # numpy (H, W, C), exactly what the GPU holds
    gputex.encode(pixels, "photo_level1.png", color_space=tex.color_space)

``import gputex`` loads no numpy, wgpu or Pillow; they load on first use.
"""

from __future__ import annotations

from typing import Any

from .errors import (
    DecodeError,
    DeviceLostError,
    FormatError,
    GPUError,
    GputexError,
    InputError,
    LimitError,
    NoAdapterError,
    OutputError,
)

__version__ = "0.1.0"

__all__ = [
    "Session",
    "Image",
    "Texture",
    "decode",
    "from_array",
    "upload",
    "generate_mips",
    "capture",
    "capture_bytes",
    "encode",
    "compare",
    "stats",
    "copy_layout",
    "get_format",
    "GputexError",
    "InputError",
    "DecodeError",
    "FormatError",
    "LimitError",
    "GPUError",
    "DeviceLostError",
    "NoAdapterError",
    "OutputError",
]

# Submodules are named for their step and import nothing heavy at module level
# (numpy, wgpu and Pillow load inside functions). Importing them here, then binding
# the functions, keeps ``gputex.decode`` etc. the functions even after the
# submodules are imported elsewhere.
from .capture import capture, capture_bytes  # noqa: E402
from .compare import compare, stats  # noqa: E402
from .decode import Image, decode, from_array  # noqa: E402
from .device import Session  # noqa: E402
from .encode import encode  # noqa: E402
from .formats import get_format  # noqa: E402
from .layout import copy_layout  # noqa: E402
from .mips import generate_mips  # noqa: E402
from .upload import Texture  # noqa: E402


def upload(session: "Session", image: "Image", format: str | None = None, *, mips: bool | int = False,
           **kwargs: Any) -> "Texture":
    """Upload ``image`` to a new texture; ``mips=True`` (or a level count) also makes the mip chain.

    Other keyword arguments are those of :func:`gputex.upload.upload` and, for the mip
    options (``filter``, ``alpha``, ``alpha_coverage``, ``normal_map``, ``wrap``, ``precision``),
    :func:`gputex.generate_mips`.
    """
    import wgpu

    from .upload import upload as _upload
    from .layout import mip_count

    mip_keys = {"filter", "alpha", "alpha_coverage", "normal_map", "wrap", "precision"}
    mip_kw = {k: kwargs.pop(k) for k in list(kwargs) if k in mip_keys}
    levels = 1
    if mips:
        full = mip_count(image.width, image.height)
        levels = full if mips is True else min(int(mips), full)
    if levels > 1:
        kwargs["usage"] = kwargs.get("usage", 0) | wgpu.TextureUsage.TEXTURE_BINDING
    tex = _upload(session, image, format, levels=levels, **kwargs)
    if levels > 1:
        from .mips import generate_mips

        generate_mips(tex, **mip_kw)
    return tex

