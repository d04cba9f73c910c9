"""Shared fixtures: one GPU session for the whole run, and the adapter named in the log."""

from __future__ import annotations

import os

import pytest

_SESSION = None
_SESSION_ERROR = None


def _get_session():
    global _SESSION, _SESSION_ERROR
    if _SESSION is None and _SESSION_ERROR is None:
        try:
            import gputex

            _SESSION = gputex.Session()
        except Exception as e:  # no adapter: GPU tests skip with the reason
            _SESSION_ERROR = f"{type(e).__name__}: {e}"
    return _SESSION


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (CI does; the default run leaves them out)")


def pytest_collection_modifyitems(config, items):
    """The default run leaves out tests marked ``slow`` (large float64 references, long
    kernels, fuzzing, clusters); ``--slow`` (what CI runs) includes them."""
    if config.getoption("--slow"):
        return
    keep, slow = [], []
    for item in items:
        (slow if item.get_closest_marker("slow") else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep


def pytest_report_header(config):
    s = _get_session()
    return [f"gputex adapter: {s.name}" if s else f"gputex adapter: none ({_SESSION_ERROR})"]


def pytest_terminal_summary(terminalreporter):
    # also with -q, where the report header is not printed
    terminalreporter.write_line(pytest_report_header(None)[0])


def pytest_sessionstart(session):
    s = _get_session()
    if os.environ.get("GPUTEX_EXPECT_LAVAPIPE"):
        # CI promises lavapipe (Mesa's software Vulkan): fail loudly if we ran on anything else.
        assert s is not None, f"GPUTEX_EXPECT_LAVAPIPE is set but no adapter: {_SESSION_ERROR}"
        assert s.info.backend == "Vulkan" and "llvmpipe" in s.info.name.lower(), (
            f"expected lavapipe, got {s.name}")


@pytest.fixture(scope="session")
def gpu():
    s = _get_session()
    if s is None:
        pytest.skip(f"no GPU adapter: {_SESSION_ERROR}")
    return s


@pytest.fixture
def tmp_png(tmp_path):
    """Write an array as a PNG (8- or 16-bit, 1-4 channels) and return its path."""

    def make(a, name="img.png"):
        import imagecodecs
        import numpy as np

        path = tmp_path / name
        arr = a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a
        path.write_bytes(imagecodecs.png_encode(np.ascontiguousarray(arr)))
        return str(path)

    return make
