"""Session.wait: what the benchmarks' wall figures and ``measure`` without timestamps rely on."""

from __future__ import annotations


def test_session_wait_maps_behind_the_submitted_work(gpu, monkeypatch):
    """``Session.wait`` blocks until the GPU work submitted before it is done: a map waits only
    for the submissions that used the buffer, so the wait buffer is cleared by a submission of
    its own, queued behind the rest, before it is mapped (without it the map returned at once,
    and the benchmarks' wall figures timed only the encoding)."""
    calls = []
    queue = gpu.device.queue
    real_submit = queue.submit
    monkeypatch.setattr(queue, "submit", lambda bufs: (calls.append("submit"), real_submit(bufs))[1])
    gpu.wait()  # makes the buffer on first use
    buf = gpu.cached("wait-buffer", lambda: None)
    real_map = buf.map_sync
    monkeypatch.setattr(buf, "map_sync", lambda mode: (calls.append("map"), real_map(mode))[1])
    calls.clear()
    gpu.wait()
    assert calls[:2] == ["submit", "map"]  # (the map itself may submit an empty list as it polls)
