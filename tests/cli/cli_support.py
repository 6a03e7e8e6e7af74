"""Helpers to drive the installed ``evalshift`` entry point as a user would: a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXE = str(Path(sys.executable).parent / "evalshift")
REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``evalshift ARGS`` in ``cwd``; no EVALSHIFT_* or provider variables leak in from the test run.

    PYTHONPATH is passed on, so the subprocess imports the same evalshift the tests import.
    """
    env_out = {k: v for k, v in os.environ.items()
               if not k.startswith(("EVALSHIFT_", "OPENAI_", "ANTHROPIC_", "GOOGLE_"))}
    env_out.update(env or {})
    return subprocess.run([EXE, *args], cwd=cwd, env=env_out, capture_output=True, text=True, timeout=timeout)


def assert_user_error(out: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit code 1, exactly one line on stderr starting with 'error:', no traceback; returns it."""
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]
