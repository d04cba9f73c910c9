"""Code that runs in gputex's encoder worker processes (spawned: imports nothing heavy).

fpng holds the GIL for the whole of an encode (about 33 ms for a 2048^2 RGBA image), so in
a batch, threads running it stall every other thread: the GPU thread above all, which needs
the GIL back after each of its ~200 wgpu calls per image. Batches therefore run fpng here,
in processes; the pixels come through a file in /dev/shm (no pickling of the image).
"""

from __future__ import annotations

import signal


def init() -> None:
    """Worker start: Ctrl-C is the parent's to handle (it stops the batch between inputs)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def fpng_file(path: str, shape: tuple) -> bytes:
    """fpng-encode the uint8 image stored raw in ``path``."""
    import fpng
    import numpy as np

    a = np.fromfile(path, np.uint8).reshape(shape)
    return fpng.from_ndarray(a)
