"""KTX 2.0: a facade over :mod:`gputex.containers.ktx2` (where the reader, writer and
validator live), for the modules and tests that import it here."""

from .containers.ktx2 import (  # noqa: F401
                              WRITER,
                              Problem,
                              default_swizzle,
                              dfd_for,
                              read_ktx2,
                              validate,
                              validate_report,
                              write_ktx2,
)

__all__ = ["write_ktx2", "read_ktx2", "validate", "validate_report", "Problem", "dfd_for", "WRITER",
           "default_swizzle"]
