"""Every command of the design has --help with an example."""

from __future__ import annotations

import pytest

COMMANDS = [["init"], ["capture", "sync"], ["capture", "promote"], ["run"], ["evaluate"], ["compare"],
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
