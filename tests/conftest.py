"""Shared fixtures: one GPU session for the whole run, and the adapter named in the log."""

from __future__ import annotations

import os
import zlib

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


# The slow cases, measured with ``pytest --slow --durations=150`` on the 2-core lavapipe machine
# (about 300 of the full run's 486 s): each costs over a second and a smaller sibling, or a
# test of the same code, stays in the default run. Whole tests by name; others by a parameter.
SLOW_TESTS = {
    "test_kernels_16bit_and_float_within_half_ulp",  # float64 kernel chains (mips)
    "test_outputs_do_not_depend_on_jobs_or_time",  # 4 batches x 2 runs (scale)
    "test_small_shared_memory_falls_back_with_identical_outputs",  # 64 MB tmpfs batches (hostile)
    "test_portable_fallbacks_give_the_same_outputs_and_modes",
    "test_gl_backend_refuses_mips_and_bc_and_matches_vulkan_elsewhere",
    "test_batch_under_1_gb_with_a_bomb_writes_every_good_output",
    "test_png_to_ktx2_and_dds_captures_equal_direct_capture",
    "test_encoded_bc_dds_and_ktx2_capture_within_1_lsb",
    "test_peak_memory_does_not_grow_with_file_count",
    "test_distributed_equals_local_and_retries_a_killed_worker",
}
SLOW_PARAMS = {
    "test_kernels_match_reference": ("1000-999", "257-131", "256-128", "255-2"),  # small sizes stay
    "test_ctrl_c_to_the_process_group_in_the_first_second": ("[0.1]", "[0.6]", "[1.0]"),  # 0.0, 0.3 stay
    "test_rgba8_box_is_correctly_rounded": ("1000-999",),
    "test_rgba16_box_is_correctly_rounded": ("1000-999",),
    "test_box_rgba8_matches_reference": ("1000-999",),
}


def _is_slow(item) -> bool:
    name = getattr(item, "originalname", item.name)
    return (item.get_closest_marker("slow") is not None or name in SLOW_TESTS
            or any(p in item.name for p in SLOW_PARAMS.get(name, ())))


def pytest_collection_modifyitems(config, items):
    """The default run leaves out the slow cases (``slow`` marker, or listed above: large
    float64 references, long kernels, signal timing sweeps, clusters); ``--slow`` (what CI
    runs) includes them. Tests that take the ``gpu`` fixture get the ``gpu`` marker."""
    for item in items:
        if _is_slow(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        # `gpu`: every test that takes the gpu fixture; the others that need an adapter (the CLI
        # making its own device, a gputex subprocess) carry @pytest.mark.gpu themselves.
        if "gpu" in getattr(item, "fixturenames", ()) and item.get_closest_marker("gpu") is None:
            item.add_marker(pytest.mark.gpu)
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


def rng_seed(nodeid: str) -> int:
    """The seed of a test's generator: CRC-32 of its id without the folders
    (``test_mips.py::test_box[7-13]``), so it is the same in every run, every xdist worker and
    whichever tests run before it, and stays the same when a file moves between folders."""
    return zlib.crc32(nodeid.rsplit("/", 1)[-1].encode())


@pytest.fixture
def mip_shader(monkeypatch):
    """Integer mip chains made by the shaders even on a CPU adapter, where the host's C engine
    would make them (``GPUTEX_MIPS_ENGINE=shader``, :mod:`gputex.mips.cpu`): for the tests of the
    shaders, their pipelines and self-checks (``tests/mips/``, the rehearsal's tests)."""
    monkeypatch.setenv("GPUTEX_MIPS_ENGINE", "shader")


@pytest.fixture
def rng(request):
    """The test's own numpy generator, seeded from its name (see ``rng_seed``)."""
    import numpy as np

    return np.random.default_rng(rng_seed(request.node.nodeid))


@pytest.fixture
def tmp_png(tmp_path):
    """Write an array as a PNG (8- or 16-bit, 1-4 channels) and return its path."""
    from factory import write

    def make(a, name="img.png"):
        return write(tmp_path / name, a)

    return make
