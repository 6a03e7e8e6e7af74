"""The ``evalshift`` command line: a thin layer over the library functions.

Exit codes: 0 done (a failing verdict is still 0 unless ``--fail-on-regression``), 1 user error
with a one-line message, never a traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from ._exceptions import EvalShiftError


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn every EvalShiftError into a one-line message and exit code 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EvalShiftError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:
            click.echo(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), err=True)
            sys.exit(1)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="evalshift")
def cli() -> None:
    """Catch tool-call regressions before you swap the model behind an agent."""


@cli.command()
@click.option("--base", default=".evalshift", show_default=True, help="Where suites, toolsets and runs live.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 2 when the verdict is fail.")
@user_errors
def demo(base: str, fail_on_regression: bool) -> None:
    """Run the whole pipeline offline on the built-in simulator.

    \b
    Example:
      evalshift demo
    """
    from ._demo import run_demo

    comparison = run_demo(base, echo=click.echo)
    a = comparison.analysis
    click.echo("")
    click.secho(f"Verdict: {a.verdict.upper()}", bold=True, fg="red" if a.verdict == "fail" else "green")
    for reason in a.reasons:
        click.echo(f"  - {reason}")
    if comparison.regressions:
        click.echo(f"\nRegressions ({len(comparison.regressions)}):")
        for r in comparison.regressions:
            click.echo(f"  {r.example_id}: {', '.join(r.labels) or 'score drop'} [{', '.join(r.tools)}]")
    click.echo(f"\nReport: {comparison.report_path}")
    click.echo(f"Run id: {comparison.run_id}")
    if fail_on_regression and a.verdict == "fail":
        sys.exit(2)


def main() -> None:
    cli(prog_name="evalshift")


if __name__ == "__main__":  # pragma: no cover
    main()
