"""The ``evalshift`` command line: a thin click layer over the library, and the demo."""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (the ``evalshift`` console script); see :func:`._main.main`.

    click is imported only here, so ``import evalshift_core`` (which reads the demo's scripts from
    this package) works where only the library's own dependencies are installed.
    """
    from ._main import main as run

    run(argv)
