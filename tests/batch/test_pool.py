"""The batch pool's size (gputex.batch.pool_threads): with worker processes, a thread for every
task that may be in flight (so no read-back waits in the queue behind slow writes), held to
``2 * jobs`` under a ``--threads`` cap."""

from __future__ import annotations

from gputex.batch import pool_threads


def test_a_thread_for_every_task_in_flight(monkeypatch):
    monkeypatch.delenv("GPUTEX_THREADS", raising=False)
    # jobs + 1 decodes and 2 * jobs encodes at most (batch._overlap's bounds)
    assert pool_threads(16, 8) == 16 + 1 + 2 * 16
    assert pool_threads(3, 3) == 10
    assert pool_threads(16, 0) == 16  # codecs in the threads themselves: one per job


def test_held_under_a_thread_cap(monkeypatch):
    monkeypatch.setenv("GPUTEX_THREADS", "12")
    assert pool_threads(6, 6) == 12
    assert pool_threads(6, 0) == 6
