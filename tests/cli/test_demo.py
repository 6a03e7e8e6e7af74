"""`evalshift demo` as a user runs it: the installed entry point, in a clean directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def test_demo_prints_failing_verdict_naming_security_tool_and_writes_report(tmp_path):
    exe = shutil.which("evalshift") or str(Path(sys.executable).parent / "evalshift")
    out = subprocess.run([exe, "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Verdict: FAIL" in out.stdout
    # the first verdict line is the headline, in plain words, naming the tool the candidate dropped
    first = next(line for line in out.stdout.splitlines() if line.startswith("Verdict: "))
    assert first == ("Verdict: FAIL — the candidate stopped calling notify_security_team on 7 of 32 examples "
                     "(all tagged security); on 3 it called issue_refund where the source called lookup_order "
                     "(all tagged urgent).")
    assert "notify_security_team" in out.stdout
    assert "TOOL_SELECTION_DRIFT" in out.stdout
    report = next(line for line in out.stdout.splitlines() if line.startswith("Report: ")).removeprefix("Report: ")
    assert (tmp_path / report).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".evalshift"]
    # 7 security tickets lose notify_security_team, 3 urgent refunds start with issue_refund;
    # an example regressed on both the conformance and the divergence side is listed once.
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Regressed examples ("))
    listed = [line.split(":")[0].strip() for line in lines[start + 1:] if line.startswith("  support-")]
    assert lines[start] == "Regressed examples (10):"
    assert len(listed) == len(set(listed)) == 10
    assert sum("[notify_security_team]" in line for line in lines[start + 1:start + 11]) == 7
