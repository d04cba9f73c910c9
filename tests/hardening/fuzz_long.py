"""Long fuzz run of the decode entry point (not collected by pytest).

    python tests/hardening/fuzz_long.py SECONDS [SEED]

Mutates the same seed files as tests/hardening/test_fuzz.py plus the bomb shapes and small texture
files of tests/bombs.py (flips, truncations, insertions, deletions, splices, huge header
values) and random bytes; every case must decode (images, or KTX2/KTX/DDS by their magic, as
a batch reads them) or raise a one-line GputexError naming the file. Prints the number of
cases, the outcomes, peak RSS, and saves any other exception's input (and any case that
raised the peak RSS past 300 MB) under /tmp/gputex-fuzz/.
"""

from __future__ import annotations

import collections
import os
import random
import resource
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: bombs
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # gputex

from test_fuzz import MAX_PIXELS  # noqa: E402
from test_fuzz import SEEDS as IMAGE_SEEDS  # noqa: E402

from gputex.errors import GputexError  # noqa: E402

from bombs import fuzz_seeds, read_any  # noqa: E402

SEEDS = IMAGE_SEEDS + fuzz_seeds()


def mutate(rng: random.Random) -> bytes:
    if rng.random() < 0.1:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 512)))
    data = bytearray(rng.choice(SEEDS))
    for _ in range(rng.randint(1, 6)):
        if not data:
            break
        i = rng.randrange(len(data))
        op = rng.randrange(6)
        if op == 0:
            data[i] ^= rng.randint(1, 255)
        elif op == 1:
            del data[i:]
        elif op == 2:
            data[i:i] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
        elif op == 3:
            del data[i:i + rng.randint(1, 16)]
        elif op == 4:
            other = rng.choice(SEEDS)
            data[i:] = other[rng.randrange(len(other)):]
        else:
            data[i:i + 4] = b"\x7f\xff\xff\xff"
    return bytes(data)


def main() -> None:
    seconds = float(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    out = "/tmp/gputex-fuzz"
    os.makedirs(out, exist_ok=True)
    outcomes: collections.Counter = collections.Counter()
    bad = 0
    slowest = 0.0
    over = False
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.img")
        end = time.time() + seconds
        while time.time() < end:
            data = mutate(rng)
            with open(path, "wb") as f:
                f.write(data)
            t0 = time.perf_counter()
            try:
                read_any(path, MAX_PIXELS)
                outcomes["decoded"] += 1
            except GputexError as e:
                msg = str(e)
                if not msg.startswith(f"{path}: ") or "\n" in msg:
                    bad += 1
                    open(f"{out}/badmsg-{bad}.bin", "wb").write(data)
                outcomes[type(e).__name__] += 1
            except Exception:
                bad += 1
                open(f"{out}/crash-{bad}.bin", "wb").write(data)
                outcomes["UNEXPECTED " + traceback.format_exc().strip().splitlines()[-1][:100]] += 1
            slowest = max(slowest, time.perf_counter() - t0)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if peak > 300 and not over:
                over = True
                bad += 1
                open(f"{out}/memory-{bad}.bin", "wb").write(data)
                outcomes[f"PEAK RSS {peak:.0f} MB"] += 1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"cases {sum(outcomes.values())} in {seconds:.0f} s; problems {bad}; slowest case {slowest * 1e3:.0f} ms; "
          f"peak RSS {rss:.0f} MB")
    for k, v in outcomes.most_common():
        print(f"  {v:8d}  {k}")


if __name__ == "__main__":
    main()
