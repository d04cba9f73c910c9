"""KTX2 key/value data, rule by rule as ``ktx validate`` checks it (Khronos ids 70xx-71xx):
the entry layout (lengths, NUL-terminated UTF-8 keys, zero padding, sorted unique keys), the
reserved ``KTX`` prefix, a warning for custom keys and a missing ``KTXwriter``, and each key
the specification defines (``KTXcubemapIncomplete``, ``KTXorientation``, ``KTXglFormat``,
``KTXdxgiFormat__``, ``KTXmetalPixelFormat``, ``KTXswizzle``, ``KTXwriter``,
``KTXwriterScParams``, ``KTXastcDecodeMode``, ``KTXanimData``). Pure."""

from __future__ import annotations

import struct

from .dfd import BLOCK_MODELS
from .vkformat import vk_name

__all__ = ["check_kvd", "KNOWN_KEYS"]

KNOWN_KEYS = ("KTXcubemapIncomplete", "KTXorientation", "KTXglFormat", "KTXdxgiFormat__", "KTXmetalPixelFormat",
              "KTXswizzle", "KTXwriter", "KTXwriterScParams", "KTXastcDecodeMode", "KTXanimData")
MODEL_ASTC = 162


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def check_kvd(w, data: bytes, off: int, length: int, error, warning) -> dict:
    """Every key/value rule (70xx, 71xx) the data at ``off`` breaks, through ``error`` and
    ``warning``; returns the pairs (KTX text values decoded, binary ones as hex) for
    ``gputex info``. ``w`` is the :class:`.ktx2_rules.Walk` of the header and DFD."""
    pos, end, keys, values = off, off + length, [], {}
    while pos < end:
        left = end - pos
        if left < 6:
            error(7002, f"{left} byte(s) of key/value data remain, too few for an entry")
            pos = end
            break
        (n,) = struct.unpack_from("<I", data, pos)
        kv_at = pos + 4
        if n < 2:
            error(7004, f"a keyAndValueByteLength at byte {pos} is {n}; it must be at least 2")
        else:
            if kv_at + n > end:
                error(7003, f"keyAndValueByteLength {n} at byte {pos} runs past the key/value data "
                      f"({end - kv_at} byte(s) left)")
                n = end - kv_at
            kv = data[kv_at: kv_at + n]
            nul = kv.find(b"\0")
            raw_key = kv if nul < 0 else kv[:nul]
            if not raw_key:
                error(7013, "a key is empty")
            else:
                if raw_key.startswith(b"\xef\xbb\xbf"):
                    raw_key = raw_key[3:]
                    error(7006, f"the key {raw_key!r} starts with a byte order mark")
                try:
                    key = raw_key.decode("utf-8")
                except UnicodeDecodeError as e:
                    key = raw_key.decode("utf-8", "replace")
                    error(7007, f"the key {key!r} is not UTF-8 (invalid byte at index {e.start})")
                if nul < 0:
                    error(7005, f"the key/value entry {key!r} has no NUL after its key")
                if key in values:
                    error(7013, f"the key {key!r} appears more than once")
                keys.append(key)
                values[key] = bytes(kv[nul + 1:]) if nul >= 0 else b""
        pos = kv_at + n
        pad_end = min(_align(pos, 4), end)
        if any(data[pos: pad_end]):
            error(7011, f"padding after a key/value entry at byte {pos} is not zero")
        pos = _align(pos, 4)
    if pos != end:
        error(7008, f"the key/value entries and padding make {pos - off} bytes; kvdByteLength is {length}")
    if keys != sorted(keys, key=lambda k: k.encode("utf-8")):
        error(7012, f"the keys are not sorted: {keys}")
    for key in keys:
        value = values[key]
        if key in KNOWN_KEYS:
            _known_key(w, key, value, error, warning)
        elif key.startswith(("KTX", "ktx")):
            error(7009, f"the key {key!r} is not defined, and keys starting KTX or ktx are reserved")
        else:
            warning(7010, f"custom key {key!r}")
    if "KTXanimData" in values and "KTXcubemapIncomplete" in values:
        error(7130, "KTXanimData and KTXcubemapIncomplete cannot both be present")
    if "KTXwriter" not in values:
        if "KTXwriterScParams" in values:
            error(7124, "KTXwriterScParams is present without KTXwriter")
        else:
            warning(7125, "KTXwriter is missing; writers are strongly urged to identify themselves with it")
    return {k: (v.rstrip(b"\0").decode("utf-8", "replace") if k in KNOWN_KEYS and k not in (
        "KTXcubemapIncomplete", "KTXglFormat", "KTXdxgiFormat__", "KTXmetalPixelFormat", "KTXanimData")
        else v.hex()) for k, v in values.items()}


def _text(value: bytes, missing_null: int, error) -> str:
    if not value.endswith(b"\0"):
        error(missing_null, "the value does not end with a NUL")
        return value.decode("utf-8", "replace")
    return value[:-1].decode("utf-8", "replace")


def _known_key(w, key: str, value: bytes, error, warning) -> None:
    dims = 3 if w.depth else 2 if w.height else 1
    if key == "KTXcubemapIncomplete":
        if len(value) != 1:
            error(7106, f"KTXcubemapIncomplete is {len(value)} bytes; it must be 1")
        if not value:
            return
        bits = value[0]
        if bits & 0xC0:
            error(7101, f"KTXcubemapIncomplete is {bits:08b}; its two high bits must be 0")
        count = bin(bits & 0x3F).count("1")
        if count == 6:
            warning(7102, "KTXcubemapIncomplete marks all six faces present; it is unnecessary")
        if count == 0:
            error(7103, "KTXcubemapIncomplete marks no face present")
        elif w.layers % count:
            error(7104, f"layerCount {w.layers} is not a multiple of the {count} faces KTXcubemapIncomplete marks")
        if w.faces != 1:
            error(7105, f"faceCount is {w.faces}; with KTXcubemapIncomplete it must be 1")
        if w.width != w.height:
            error(3008, f"a cube map's faces must be square, got {w.width}x{w.height}")
        if w.depth:
            error(3013, f"pixelDepth is {w.depth}; cube map faces must be 2D (pixelDepth 0)")
    elif key == "KTXorientation":
        text = _text(value, 7107, error)
        if len(text) != dims:
            error(7108, f"KTXorientation {text!r} has {len(text)} dimension(s); the texture has {dims}")
        for i, (a, b) in enumerate((("r", "l"), ("d", "u"), ("o", "i"))[:min(dims, len(text))]):
            if text[i] not in (a, b):
                error(7109, f"KTXorientation {text!r}: dimension {i} is {text[i]!r}, not {a!r} or {b!r}")
    elif key == "KTXglFormat":
        if w.vk:
            error(7111, f"KTXglFormat is present, so vkFormat must be VK_FORMAT_UNDEFINED, not {vk_name(w.vk)}")
        if len(value) != 12:
            error(7110, f"KTXglFormat is {len(value)} bytes; it must be 12")
        elif struct.unpack_from("<3I", value)[1:] != (0, 0) and (
                w.scheme == 1 or w.dfd.get("model") in BLOCK_MODELS):
            error(7112, "KTXglFormat: glFormat and glType must be 0 for compressed formats")
    elif key == "KTXdxgiFormat__":
        if w.vk:
            error(7114, f"KTXdxgiFormat__ is present, so vkFormat must be VK_FORMAT_UNDEFINED, not {vk_name(w.vk)}")
        if len(value) != 4:
            error(7113, f"KTXdxgiFormat__ is {len(value)} bytes; it must be 4")
    elif key == "KTXmetalPixelFormat":
        if w.vk:
            error(7116, "KTXmetalPixelFormat is present, so vkFormat must be VK_FORMAT_UNDEFINED, not "
                  f"{vk_name(w.vk)}")
        if len(value) != 4:
            error(7115, f"KTXmetalPixelFormat is {len(value)} bytes; it must be 4")
    elif key == "KTXswizzle":
        text = _text(value, 7117, error)
        if len(text) != 4:
            error(7118, f"KTXswizzle is {len(value)} bytes; it must be 5 (four characters and a NUL)")
        for i, c in enumerate(text[:4]):
            if c not in "rgba01":
                error(7119, f"KTXswizzle character {i} is {c!r}, not one of rgba01")
        if w.vk in (124, 125, 126, 127, 128, 129, 130):
            warning(7121, f"KTXswizzle has no effect on {vk_name(w.vk)}")
    elif key in ("KTXwriter", "KTXwriterScParams"):
        null_rule, utf_rule = (7122, 7123) if key == "KTXwriter" else (7126, 7127)
        if not value.endswith(b"\0"):
            error(null_rule, f"{key} does not end with a NUL")
        try:
            value.rstrip(b"\0").decode("utf-8") if value.endswith(b"\0") else value.decode("utf-8")
        except UnicodeDecodeError as e:
            error(utf_rule, f"{key} is not UTF-8 (invalid byte at index {e.start})")
    elif key == "KTXastcDecodeMode":
        text = _text(value, 7131, error)
        if text not in ("rgb9e5", "unorm8"):
            error(7132, f"KTXastcDecodeMode is {text!r}; it must be 'rgb9e5' or 'unorm8'")
        model = w.dfd.get("model")
        if model is not None and model != MODEL_ASTC:
            warning(7134, f"KTXastcDecodeMode has no effect on colorModel {model}")
        elif text == "unorm8" and not (157 <= w.vk <= 184):
            error(7133, f"KTXastcDecodeMode 'unorm8' is only valid for LDR ASTC, not {vk_name(w.vk)}")
        if w.dfd.get("transfer") == 2:
            warning(7135, "KTXastcDecodeMode has no effect with the SRGB transfer function")
    elif key == "KTXanimData":
        if len(value) != 12:
            error(7128, f"KTXanimData is {len(value)} bytes; it must be 12")
        if w.layers == 0:
            error(7129, "KTXanimData is present but layerCount is 0: it needs an array texture")
