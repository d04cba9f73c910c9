"""What each texture format can do on the chosen device, found by trying (``gputex info``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .device import Session

__all__ = ["format_capabilities"]


def _can_create(session: Session, name: str, usage: int, size: tuple[int, int]) -> bool:
    try:
        tex = session.device.create_texture(size=(size[0], size[1], 1), format=name, usage=usage)
    except Exception:
        return False
    tex.destroy()
    return True


def format_capabilities(session: Session) -> dict[str, dict[str, bool]]:
    """For every non-depth format: can it be uploaded, rendered to, filtered, stored, captured.

    upload/render/storage/capture are tried (a 4x4 texture with that usage);
    filter comes from the format table plus the ``float32-filterable`` feature.
    """
    import wgpu

    from .formats import FORMATS

    u = wgpu.TextureUsage
    caps: dict[str, dict[str, bool]] = {}
    for name, fmt in FORMATS.items():
        if fmt.kind in ("depth", "stencil"):
            continue
        size = fmt.block
        if not session.has_feature(fmt.feature):
            caps[name] = dict.fromkeys(("upload", "render", "filter", "storage", "capture"), False)
            continue
        filterable = fmt.filterable or (fmt.kind == "float" and session.has_feature("float32-filterable"))
        caps[name] = {
            "upload": _can_create(session, name, u.COPY_DST | u.TEXTURE_BINDING, size),
            "render": _can_create(session, name, u.RENDER_ATTACHMENT, size),
            "filter": filterable,
            "storage": _can_create(session, name, u.STORAGE_BINDING, size),
            "capture": _can_create(session, name, u.COPY_SRC, size),
        }
    return caps
