"""Mip levels stored straight into the texture (``textureStore`` through write views, no
output buffer and no copies) by the exact integer chains: the single-pass chain (``spd.py``) and
the cell chain (``odd.py``).

An sRGB format cannot be a storage texture, so a texture whose levels will be stored is made as
its linear twin with the sRGB format as a view format (:func:`stored_format` says when and which;
``gputex/wgpu_compat.py``). Each chain checks its stored form once per session and kind of chain
(:func:`checked`); where the stored levels disagree with the model and the buffer's pass, the
chain takes the buffer from then on (:func:`stores`), later textures of the format are not made
for it, and the report says so (:func:`store_note`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .intbox import MAX_BASE_TEXELS

if TYPE_CHECKING:
    from ..texture import Texture

__all__ = ["STORE_LEVELS", "STORED_FORMATS", "stored_format", "check_key", "stores", "store_failed", "checked",
           "store_note"]

#: Textures whose levels an exact chain will store get made for it (:func:`stored_format`). None: the
#: developer flag ``GPUTEX_MIPS_STORE`` (``1``/``0``), else on every adapter but a CPU one (there
#: the host's C engine makes the chain: ``mips/cpu.py``); the tests force it on lavapipe.
STORE_LEVELS: bool | None = None
#: The formats whose levels can be stored (8-bit RGBA: one texel a textureStore, ``store_value``).
STORED_FORMATS = ("rgba8unorm", "rgba8unorm-srgb", "bgra8unorm", "bgra8unorm-srgb")


def stored_format(session, fmt, width: int, height: int, levels: int, depth: int = 1, *, filter: str = "box",
                  precision: str = "exact", normal_map: bool = False, coverage: float | None = None) -> str:
    """The storage format a texture of this format, size and levels should be made with
    (``create_texture(store_levels=...)``) because the exact chain (``spd.py`` or ``odd.py``) will
    store its levels (the module docstring): ``fmt`` itself or its linear twin; "" where the mip
    step will not store them."""
    from ..devflags import flag
    from .common import storage_twin

    on = STORE_LEVELS
    if on is None:
        on = flag("GPUTEX_MIPS_STORE") == "1" or (flag("GPUTEX_MIPS_STORE") != "0"
                                                  and session.info.adapter_type != "CPU")
    if (not on or levels < 2 or depth != 1 or precision != "exact" or filter != "box" or normal_map
            or coverage is not None or fmt.name not in STORED_FORMATS or width * height > MAX_BASE_TEXELS
            or max(width, height) >= 1 << 16  # (this chain's sizes, and the cell chain's: mips/odd.py)
            or session.cache("mip-store").peek(("failed", fmt.name)) is not None):  # (a failed stored self-check)
        return ""
    return storage_twin(session, fmt) or ""


def check_key(fmt, color_space: str, alpha: str) -> tuple:
    """What a chain's self-checks and stored-level failures are kept under: the format, the colour
    space, and whether alpha weights the colour."""
    return fmt.name, color_space, alpha == "weighted" and fmt.channels != 1


def stores(tex: Texture, alpha: str, cache: str = "mip-spd") -> bool:
    """Whether a chain (its session cache: ``mip-spd``, ``mip-odd``) stores ``tex``'s levels:
    the texture was made for it, and the chain's stored self-check did not fail on this session."""
    return (bool(tex.storage) and tex.format.name in STORED_FORMATS
            and tex.session.cache(cache).peek(("store-failed",) + check_key(tex.format, tex.color_space, alpha))
            is None)


def store_failed(session, fmt, color_space: str, alpha: str, cache: str, why: str) -> None:
    """Record that a chain's (its cache's) stored levels failed their self-check on ``session``:
    the chain takes the buffer (:func:`stores`), later textures of the format are not made for it."""
    session.cache(cache).put(("store-failed",) + check_key(fmt, color_space, alpha), why)
    session.cache("mip-store").put(("failed", fmt.name), why)


def checked(session, fmt, color_space: str, alpha: str, storage: str, cache: str, run) -> tuple[bool, str]:
    """A chain's self-check (``run(storage)``: :func:`.integer.matches_model` over the chain, on
    a texture made for stored levels or not), once per session and kind of chain: with
    ``storage`` the stored chain first, and where it disagrees the buffer's (the chain then takes
    the buffer, :func:`store_note` says so)."""
    c = session.cache(cache)
    if storage and fmt.name in STORED_FORMATS:
        ok, why = c.get((f"{cache}-store-check", storage) + check_key(fmt, color_space, alpha), lambda: run(storage))
        if ok:
            return True, ""
        store_failed(session, fmt, color_space, alpha, cache, why)
    return c.get((f"{cache}-self-check",) + check_key(fmt, color_space, alpha), lambda: run(""))


def store_note(tex: Texture, alpha: str, cache: str = "mip-spd") -> str:
    """``MipReport.note`` where ``tex``'s levels could have been stored but the chain's (its
    cache's) stored self-check failed on this session (its buffer made them), else ""."""
    why = tex.session.cache(cache).peek(("store-failed",) + check_key(tex.format, tex.color_space, alpha))
    if not tex.storage or why is None:
        return ""
    return (f"{tex.session.name}: storing the mip levels through {tex.storage} failed its self-check ({why}); "
            "they went through a buffer")
