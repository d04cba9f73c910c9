"""DDS: a facade over :mod:`gputex.containers.dds`, for the modules and tests that import it here."""

from .containers.dds import read_dds, write_dds  # noqa: F401

__all__ = ["read_dds", "write_dds"]
