"""Coverage-guided fuzzing of the decode entry point with atheris (not collected by pytest).

    python tests/fuzz_atheris.py -max_total_time=1200 [corpus_dir]

Any exception other than a one-line GputexError naming the file is a finding.
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    import gputex
    from gputex.errors import GputexError

PATH = os.path.join(tempfile.mkdtemp(), "case.img")


def one_input(data: bytes) -> None:
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        gputex.decode(PATH, max_pixels=1 << 22)
    except GputexError as e:
        msg = str(e)
        if not msg.startswith(PATH + ": ") or "\n" in msg:
            raise AssertionError(f"bad message: {msg!r}") from e


if __name__ == "__main__":
    import logging
    import warnings

    logging.getLogger("PIL").propagate = False
    warnings.simplefilter("ignore")
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
