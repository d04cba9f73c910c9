"""Developer overrides read from the environment, in one place.

These are not user settings (those are function parameters and CLI options); they let a
developer force a code path without editing code, e.g. to compare paths on an adapter:

* ``GPUTEX_MIPS_PATH=compute|render``: the mip path of renderable formats that are not
  storage-capable when the caller did not choose one (``generate_mips(path=...)``);
* ``GPUTEX_MIPS_F64=0``: never use the float64 mip/resize paths (as on an adapter without
  ``shader-f64``).
"""

from __future__ import annotations

import os

__all__ = ["flag"]


def flag(name: str) -> str | None:
    """The stripped value of the environment variable ``name``, or None when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None
