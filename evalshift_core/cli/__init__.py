"""The ``evalshift`` command line: a thin click layer over the library, and the demo."""

from ._main import main

__all__ = ["main"]
