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

from typing import TYPE_CHECKING, Any

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
    UsageError,
)
from .version import __version__  # noqa: E402,F401

__all__ = [
    "Session",
    "Converter",
    "Image",
    "Texture",
    "TextureFile",
    "decode",
    "read_texture_file",
    "write_texture_file",
    "from_array",
    "upload",
    "generate_mips",
    "capture",
    "capture_bytes",
    "encode",
    "compare",
    "stats",
    "encode_blocks",
    "copy_layout",
    "get_format",
    "resize_texture",
    "target_size",
    "apply_swizzle",
    "pack_channels",
    "GputexError",
    "InputError",
    "DecodeError",
    "FormatError",
    "LimitError",
    "GPUError",
    "DeviceLostError",
    "NoAdapterError",
    "OutputError",
    "UsageError",
]

# The verbs whose names are also their modules' (decode, capture, compare, encode, upload) are
# bound here, after importing those modules (small: no numpy, wgpu or Pillow at module level),
# so ``gputex.decode`` etc. stay the functions even after the submodules are imported
# elsewhere (an import binds a submodule's name in its package only the first time). The rest
# load on first use (:func:`__getattr__`): ``import gputex`` leaves out the device, the mips,
# the containers, the BC encoder and the long-lived converter, which a command that needs them
# imports anyway and one that does not (``gputex upload -o X.ktx2`` needs no BC encoder or
# converter) never pays for.
from .capture import capture, capture_bytes  # noqa: E402
from .compare import compare, stats  # noqa: E402
from .decode import Image, decode, from_array  # noqa: E402
from .encode import encode  # noqa: E402

if TYPE_CHECKING:
    from .device import Session
    from .texfile import TextureFile
    from .texture import Texture

#: name -> module of the names that load on first use
_LAZY = {
    "Session": "device", "Converter": "converter", "encode_blocks": "bcenc", "get_format": "formats",
    "copy_layout": "layout", "generate_mips": "mips", "TextureFile": "texfile", "read_texture_file": "texfile",
    "Texture": "texture", "resize_texture": "transform", "target_size": "transform", "apply_swizzle": "transform",
    "pack_channels": "transform",
}


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY` (and any submodule, as ``gputex.mips`` was before) on first use."""
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'gputex' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


from . import upload as _upload_module  # noqa: E402,F401  (bound before the function below takes the name)


def write_texture_file(texture: Texture | TextureFile, path: str, *, zstd: int | None = None,
                       budget: int = 64 << 20) -> str:
    """Write a GPU texture (every level, layer, face and slice, read back exactly) or a
    :class:`TextureFile` as KTX2 or DDS, by the suffix of ``path``; whole or not at all.

    Parameters
    ----------
    texture
        A :class:`Texture` (from :func:`upload`) or a :class:`TextureFile` (from
        :func:`read_texture_file`).
    path
        ``*.ktx2`` or ``*.dds``.
    zstd
        KTX2 only: Zstandard-supercompress each level at this level (1-22).
    budget
        Host staging memory per read-back transfer, in bytes.

    Returns
    -------
    str
        ``path``.
    """
    from .texfile import TextureFile
    from .texfile import write_texture_file as _write

    if not isinstance(texture, TextureFile):
        from .capture import capture_texture_file

        texture = capture_texture_file(texture, budget=budget)
    _write(texture, path, zstd=zstd)
    return path


def upload(session: Session, image: Image | TextureFile, format: str | None = None, *,
           mips: bool | int = False, size: tuple[int, int] | None = None, **kwargs: Any) -> Texture:
    """Upload ``image`` to a new texture; ``mips=True`` (or a level count) also makes the mip chain.

    ``image`` may also be a :class:`TextureFile` (from :func:`read_texture_file`): its levels
    go up as stored (block-compressed ones stay compressed; ``format`` must be None).

    ``size=(W, H)`` resizes level 0 on the GPU first (:func:`gputex.resize_texture`, with the
    mip options' filter, alpha mode, wrap and normal-map setting; :func:`gputex.target_size`
    computes ``--max-size``/``--pot`` sizes); the chain then starts from the resized image.

    ``store_levels=True`` lets the exact mip chain store the levels where it serves them (8-bit
    RGBA box mips on a GPU: no copies, about twice as fast there): the texture's GPU object
    (``.texture``) is then the linear twin format (``rgba8unorm`` for ``rgba8unorm-srgb``) with
    the sRGB format as a view format, so views of it for your own shaders come from
    :meth:`Texture.view`; ``.format``, captures and files are the same either way. Off by
    default: ``.texture`` is then a texture of ``.format`` itself.

    Other keyword arguments are those of :func:`gputex.upload.upload` and, for the mip
    options (``filter``, ``alpha``, ``alpha_coverage``, ``normal_map``, ``wrap``, ``precision``,
    and ``mip_path`` for its ``path``), :func:`gputex.generate_mips`.
    """
    import wgpu

    from .texfile import TextureFile
    from .upload import upload as _upload

    if isinstance(image, TextureFile):
        from .upload import upload_texture_file

        if mips or size is not None:
            raise FormatError(f"{image.source}: mips= and size= are for images; a texture file is uploaded with the "
                              "levels it holds")
        if format is not None:
            raise FormatError(f"{image.source}: a texture file is uploaded in its own format "
                              f"({image.format.name}); format cannot convert it")
        kwargs["usage"] = kwargs.get("usage", 0) | wgpu.TextureUsage.TEXTURE_BINDING
        return upload_texture_file(session, image, **kwargs)

    from .formats import get_format

    if format is not None and not isinstance(format, str) or (format and get_format(format).compressed):
        return _upload(session, image, format, **kwargs)  # its own error for a compressed format
    from .pipeline import MipOptions, Options, Result, upload_image
    from .transform import Transform

    mip_keys = {"filter", "alpha", "alpha_coverage", "normal_map", "wrap", "precision"}
    mip = MipOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in mip_keys})
    if "mip_path" in kwargs:  # generate_mips's path= (path= is the upload path)
        mip.path = kwargs.pop("mip_path")
    store = bool(kwargs.pop("store_levels", False))
    upload_kw = {"color_space", "premultiply", "flip_y", "budget", "path", "usage", "progress"}
    unknown = sorted(set(kwargs) - upload_kw)
    if unknown:
        raise TypeError(f"upload() got an unexpected keyword argument {unknown[0]!r}")
    levels = None if mips is True or not mips else int(mips)
    opts = Options(format=format, color_space=kwargs.get("color_space"), premultiply=kwargs.get("premultiply", False),
                   flip_y=kwargs.get("flip_y", False), budget=kwargs.get("budget", 64 << 20),
                   upload_path=kwargs.get("path", "auto"), mips=bool(mips), mip_levels=levels, mip_options=mip,
                   transform=Transform(resize=tuple(size)) if size is not None else None)
    # the CLI's own step (gputex.pipeline): the same format, levels, resize and mips
    return upload_image(session, image, opts, Result(source=image.source), usage=kwargs.get("usage", 0),
                        progress=kwargs.get("progress"), store=store)
