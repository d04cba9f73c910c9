"""gputex's version (its own module: the writers record it and the package imports nothing for it)."""

__version__ = "0.1.0"
