"""Imported last by the batch's worker fork server (:data:`gputex.early.WORKER_MODULES`): what each
decode worker's first chain would otherwise build for itself, built once in the server, so the
workers it forks inherit it (:func:`gputex.mips.cpu.warm`: the C engine's 8-bit sRGB code tables).
On the H200 host a worker's first chain took 20-25 ms against 11-12 ms for its later ones."""

from .mips.cpu import warm

warm()
