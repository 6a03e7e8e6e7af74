"""Fuzz tests of every input kind a user, a capture or a run hands EvalShift.

Each test draws a few dozen inputs (EVALSHIFT_FUZZ_EXAMPLES, seeded by the suite's derandomized
hypothesis profile); EVALSHIFT_FUZZ_REPORT=path writes the tally of a run as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# The capture agent and its simulator scripts live with the core tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "core"))


def pytest_sessionfinish(session, exitstatus) -> None:  # noqa: ARG001 - pytest's hook signature
    from fuzz_support import TALLY

    target = os.environ.get("EVALSHIFT_FUZZ_REPORT")
    if target and TALLY:
        Path(target).write_text(json.dumps({k: dict(v) for k, v in sorted(TALLY.items())}, indent=2) + "\n")
