"""Which input a C library's line on descriptor 2 belongs to (gputex.chatter): a decode's watch
claims what appeared while it ran, so another input's GPU step watched at the same time (the
GPU thread on input k while input k + 1 decodes) does not report it too."""

from __future__ import annotations

import os
import threading

from gputex.chatter import captured, watch


def test_a_decode_claims_its_lines_from_an_overlapping_gpu_step():
    gpu_step: list[str] = []
    decode: list[str] = []
    with captured():
        with watch("a.png", gpu_step):
            os.write(2, b"wgpu-hal: own line\n")
            with watch("b.tiff", decode, claim=True):
                os.write(2, b"ZIPDecode: Not enough data\n")
            os.write(2, b"wgpu-hal: later line\n")
    assert decode == ["b.tiff: ZIPDecode: Not enough data"]
    assert gpu_step == ["a.png: wgpu-hal: own line (+1 more line)"]


def test_a_decode_still_running_when_the_gpu_step_ends_keeps_its_lines():
    gpu_step: list[str] = []
    decode: list[str] = []
    started, printed, gpu_done = threading.Event(), threading.Event(), threading.Event()

    def decoder():
        with watch("b.tiff", decode, claim=True):
            started.set()
            os.write(2, b"TIFFFillTile: short read\n")
            printed.set()
            gpu_done.wait(10)

    with captured():
        with watch("a.png", gpu_step):
            t = threading.Thread(target=decoder)
            t.start()
            assert started.wait(10) and printed.wait(10)
        gpu_done.set()
        t.join(10)
    assert gpu_step == []
    assert decode == ["b.tiff: TIFFFillTile: short read"]


def test_two_decodes_at_once_both_report_a_shared_line():
    first: list[str] = []
    second: list[str] = []
    with captured():
        with watch("a.png", first, claim=True):
            with watch("b.png", second, claim=True):
                os.write(2, b"PNG warning: sBIT: invalid\n")
    assert first == ["a.png: PNG warning: sBIT: invalid"]
    assert second == ["b.png: PNG warning: sBIT: invalid"]


def test_a_claim_of_an_earlier_capture_does_not_hide_a_later_line():
    old: list[str] = []
    with captured():
        with watch("a.png", old, claim=True):
            os.write(2, b"x" * 64 + b"\n")
    later: list[str] = []
    with captured():
        with watch("c.png", later):
            os.write(2, b"late chatter\n")
    assert later == ["c.png: late chatter"]
