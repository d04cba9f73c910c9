"""Coverage-guided fuzzing of the decode entry point with atheris (not collected by pytest).

    python tests/hardening/fuzz_atheris.py -max_total_time=1200 [corpus_dir]

Images through decode, KTX2/KTX/DDS files by their magic (as a batch reads them). Any
exception other than a one-line GputexError naming the file is a finding. A corpus folder
given that is empty gets the seeds of tests/bombs.py (ICO, TIFF-tile and KTX2 Zstd/ZLIB bomb
shapes, small texture files) and tests/hardening/test_fuzz.py.
"""

from __future__ import annotations

import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: bombs
with atheris.instrument_imports():
    import gputex  # noqa: F401
    from gputex.errors import GputexError

from bombs import fuzz_seeds, read_any  # noqa: E402

PATH = os.path.join(tempfile.mkdtemp(), "case.img")


def one_input(data: bytes) -> None:
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        read_any(PATH, 1 << 22)
    except GputexError as e:
        msg = str(e)
        if not msg.startswith(PATH + ": ") or "\n" in msg:
            raise AssertionError(f"bad message: {msg!r}") from e


if __name__ == "__main__":
    import logging
    import warnings

    logging.getLogger("PIL").propagate = False
    warnings.simplefilter("ignore")
    corpus = [a for a in sys.argv[1:] if not a.startswith("-")]
    if corpus and os.path.isdir(corpus[0]) and not os.listdir(corpus[0]):
        from test_fuzz import SEEDS

        for i, seed in enumerate(SEEDS + fuzz_seeds()):
            with open(os.path.join(corpus[0], f"seed{i:02d}"), "wb") as f:
                f.write(seed)
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
