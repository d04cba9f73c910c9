"""One exception root for gputex.

Every error gputex raises is a :class:`GputexError`; each subclass is also the
fitting built-in exception, so ``except OSError`` or ``except ValueError`` in a
caller keeps working. Where a wgpu error caused it, that error is the
``__cause__``. The CLI maps these to exit codes in one place (``cli.py``).
"""

from __future__ import annotations

__all__ = [
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
    "UnsupportedError",
]


class GputexError(Exception):
    """Root of every gputex error. ``str(err)`` is one line for the user."""


class InputError(GputexError, OSError):
    """An input path is missing, unreadable, or not a file."""


class DecodeError(GputexError, ValueError):
    """An input file could not be decoded as an image (not an image, truncated, corrupt)."""


class FormatError(GputexError, ValueError):
    """A texture format or conversion was asked for that cannot hold the data or is unknown."""


class LimitError(GputexError, ValueError):
    """A size exceeds a device limit or a budget."""


class GPUError(GputexError, RuntimeError):
    """The GPU reported an error (validation, out of memory, device lost)."""


class DeviceLostError(GPUError):
    """The GPU device was lost (driver reset, removal); the session can be recreated."""


class NoAdapterError(GPUError):
    """No usable GPU adapter or device was found."""


class OutputError(GputexError, OSError):
    """An output could not be written (folder not writable, would overwrite an input, disk full)."""


class UsageError(GputexError, ValueError):
    """Options that cannot work together for this input (the CLI exits with 2)."""


class UnsupportedError(GPUError, NotImplementedError):
    """The adapter's backend cannot do this operation correctly (refused, never wrong data)."""
