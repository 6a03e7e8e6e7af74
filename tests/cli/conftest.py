"""Fixtures for the CLI tests: the installed entry point in a fresh temp folder."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_support import run_cli


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``cli("init", "--force")`` runs the installed entry point in a fresh temp folder."""

    def _run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=cwd or tmp_path, env=env)

    return _run
