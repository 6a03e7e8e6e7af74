"""Every command of the design has --help with an example."""

from __future__ import annotations

import pytest

COMMANDS = [["init"], ["capture", "sync"], ["capture", "promote"], ["run"], ["evaluate"], ["compare"], ["cache", "info"], ["cache", "clear"],
            ["traces", "import"], ["tools", "sync"], ["report"], ["demo"], ["simulator"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_shows_an_example(cli, command):
    out = cli(*command, "--help")
    assert out.returncode == 0, out.stderr
    assert "Example:" in out.stdout
    assert f"evalshift {' '.join(command)}" in out.stdout.split("Example:", 1)[1]


def test_bare_evalshift_prints_the_walkthrough(cli):
    out = cli()
    assert out.returncode == 0
    assert "evalshift capture sync" in out.stdout


@pytest.mark.parametrize("command", [[], ["compare"], ["evaluate"], ["demo"]], ids=lambda c: " ".join(c) or "evalshift")
def test_help_lists_every_exit_code(cli, command):
    out = cli(*command, "--help")
    assert out.returncode == 0, out.stderr
    codes = out.stdout.split("Exit codes:", 1)[1]
    for line in ("0  done", "1  a user error", "every call of a side failed", "2  the verdict is FAIL under --fail-on-regression",
                 "3  the verdict is INCONCLUSIVE under --fail-on-inconclusive"):
        assert line in codes, line
