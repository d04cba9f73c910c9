"""What each wgpu backend can do correctly, per operation; the rest is refused, never zeros.

Measured on this project's machines (Mesa llvmpipe through EGL for OpenGL, lavapipe for
Vulkan), comparing every output with the Vulkan run and the float64 references:

- ``OpenGL``: upload, capture, ``compare`` and ``stats`` are bit-identical to Vulkan. Mip chains
  are not: levels 4-6 of a 64x32 ``rgba8unorm-srgb`` image and levels 1, 3-6 of an ``r8unorm``
  one came back all zero, exit 0. Block-compressed textures cannot be copied to a buffer
  (wgpu-hal: "compressed texture copy to buffer" not implemented), so ``--bc-decode spec`` and
  the upload check of BC files read garbage, and ``--bc-decode sampler`` differed from Vulkan
  by up to 255 codes as well.

Pure: no GPU import; a session is only asked for its backend's name.
"""

from __future__ import annotations

from .errors import UnsupportedError

__all__ = ["UNSUPPORTED", "require", "supported"]

#: backend (as wgpu names it) -> operation -> why it is refused there.
UNSUPPORTED: dict[str, dict[str, str]] = {
    "OpenGL": {
        "mips": "wgpu's GL backend returns zeros for some levels",
        "bc-decode": "wgpu's GL backend decodes them wrongly",
        "compressed-copy": "not implemented in wgpu's GL backend",
    },
}

_NAMES = {"mips": "mip generation", "bc-decode": "decoding block-compressed textures",
          "compressed-copy": "reading block-compressed textures back"}


def supported(backend: str, operation: str) -> bool:
    return operation not in UNSUPPORTED.get(backend, {})


def require(session, operation: str, source: str = "") -> None:
    """UnsupportedError (naming ``source``) when ``session``'s backend cannot do ``operation``
    correctly."""
    backend = getattr(getattr(session, "info", None), "backend", "")
    why = UNSUPPORTED.get(backend, {}).get(operation)
    if why:
        raise UnsupportedError(f"{source + ': ' if source else ''}{_NAMES.get(operation, operation)} is not "
                               f"supported on the {backend} backend ({why}); use --backend vulkan, metal "
                               "or dx12")
