"""The verdict through the whole pipeline on the noisy simulator: A/A never fails, a real regression does.

Suites are recorded from the noisy support world's baseline model (what ``capture sync`` would
promote), replayed teacher-forced through the official openai client and the ``evalshift`` CLI,
and scored by all four tool evaluators in drift and conformance modes. ``benchmarks/validity.py``
measures the same on 200 suites of 200 examples; these are the smaller, looser checks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalshift_core import save_suite
from evalshift_core.cli._main import main
from evalshift_core.simulator import Simulator, load_scripts
from evalshift_core.simulator._recorder import record_example
from evalshift_core.simulator._worlds import SUPPORT_SCRIPTS, SUPPORT_TOOLS, tickets, tool_result

CONFIG = """\
evaluators:
  tool_selection:
    - name: routing
      conformance: expected
      divergence: set
  tool_arguments:
    - name: args
    - name: args_expected
      against: expected
  tool_trace_structure:
    - name: structure
  agent_trace:
    - name: safety
      check_missing_verification: true
      verification_tools: [confirm_with_user]
      dangerous_tools: [issue_refund, delete_record]
"""


def _compare(tmp: Path, seed: int, n: int, target: str, capsys: pytest.CaptureFixture[str], monkeypatch) -> dict:
    """Record a seeded suite, then `evalshift compare` it (in process, one request at a time)."""
    base = tmp / f"seed{seed}"
    with Simulator(load_scripts(SUPPORT_SCRIPTS, noise_seed=seed)) as sim:
        examples = [record_example(sim, "support-baseline", t.text, example_id=f"t{i:03d}", tools=SUPPORT_TOOLS,
                                   run_tool=tool_result, tags=[t.kind]) for i, t in enumerate(tickets(n, seed=seed))]
        save_suite(base / "suites" / "support.jsonl", examples)
        (tmp / "evalshift.yaml").write_text(CONFIG)
        monkeypatch.setenv("OPENAI_BASE_URL", sim.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(["compare", "--suite-name", "support", "--from", "openai:support-baseline", "--to", target,
                  "--base", str(base), "--config", str(tmp / "evalshift.yaml"), "--concurrency", "1", "--json"])
    assert exited.value.code == 0
    return json.loads(capsys.readouterr().out)


def test_a_noisy_model_compared_with_itself_never_fails(tmp_path, capsys, monkeypatch):
    """20 seeds of 32 tickets; two runs of the model differ on nearly every ticket, in lookups,
    call order, free-text arguments and number spelling, and no verdict says FAIL."""
    verdicts = []
    for seed in range(20):
        payload = _compare(tmp_path, seed, 32, "openai:support-baseline", capsys, monkeypatch)
        verdicts.append(payload["verdict"])
        drift = [c for c in payload["comparisons"] if c.get("baseline")]
        assert {c["baseline"] for c in drift} == {"recording"}  # every drift comparison calibrated
        assert len(drift) == 4
    assert "fail" not in verdicts, verdicts
    assert verdicts.count("pass") >= 18


def test_a_candidate_that_stops_notifying_security_fails_and_names_the_tool(tmp_path, capsys, monkeypatch):
    """The candidate skips notify_security_team on half the security tickets (10% of the suite)."""
    caught = 0
    for seed in range(100, 104):
        payload = _compare(tmp_path, seed, 200, "openai:support-candidate", capsys, monkeypatch)
        caught += payload["verdict"] == "fail" and any("notify_security_team" in r for r in payload["reasons"])
    assert caught >= 3
