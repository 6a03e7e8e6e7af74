"""The ``evalshift`` command line: a thin click layer over the library, and the demo.

``main`` is imported on first use, so ``import evalshift_core`` (which reads the demo's scripts
path from ``cli._demo``) does not import click.
"""

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from ._main import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
