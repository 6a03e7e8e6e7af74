"""Seed 001's walkthrough, end to end, through the installed entry point and the simulator.

    evalshift init                            # capture-first evalshift.yaml
    EVALSHIFT_CAPTURE=1 python run_agent.py
    evalshift capture sync
    evalshift compare --suite-name <suite> --to <candidate-model> --open
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from cli_support import REPO, run_cli

from evalshift_core.cli._demo import DEMO_SCRIPTS
from evalshift_core.simulator import Simulator, load_scripts


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory):
    """A project folder after init, a captured agent run and `capture sync`, plus the simulator."""
    project = tmp_path_factory.mktemp("project")
    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        env = {"OPENAI_BASE_URL": sim.openai_base_url, "OPENAI_API_KEY": "sk-sim"}
        init = run_cli("init", "--source-model", "openai:sim-baseline", cwd=project)
        assert init.returncode == 0, init.stderr
        agent_env = {k: v for k, v in os.environ.items() if not k.startswith("EVALSHIFT_")}
        agent_env.update(env, EVALSHIFT_CAPTURE="1")
        agent = subprocess.run(
            [sys.executable, str(REPO / "examples" / "support_agent.py"), "--model", "sim-baseline", "--quiet"],
            cwd=project, env=agent_env, capture_output=True, text=True, timeout=120,
        )
        assert agent.returncode == 0, agent.stderr
        sync = run_cli("capture", "sync", cwd=project)
        yield project, env, sim, sync


def test_capture_sync_builds_the_suite_from_default_capture_dir(walkthrough):
    project, _, _, sync = walkthrough
    assert sync.returncode == 0, sync.stderr
    assert "32 examples added" in sync.stdout
    assert "suite support:" in sync.stdout
    rows = [json.loads(line) for line in (project / ".evalshift/suites/support.jsonl").read_text().splitlines()]
    assert len(rows) == 32
    assert all(r["toolset_ref"].startswith("sha256:") for r in rows)  # "every example carries its recorded toolset"


def test_capture_sync_twice_changes_nothing(walkthrough):
    project, *_ = walkthrough
    suite = project / ".evalshift/suites/support.jsonl"
    before = suite.read_bytes()
    again = run_cli("capture", "sync", "--json", cwd=project)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["added"] == 0
    assert suite.read_bytes() == before


def test_compare_to_candidate_fails_on_security_regression_and_exits_zero(walkthrough):
    """design.md: "0 done (a failing verdict is still 0 unless --fail-on-regression)"."""
    project, env, _, _ = walkthrough
    out = run_cli("compare", "--suite-name", "support", "--to", "openai:sim-candidate", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    assert "Verdict: FAIL" in out.stdout
    assert "notify_security_team" in out.stdout
    report = next(x for x in out.stdout.splitlines() if x.startswith("Report: ")).removeprefix("Report: ")
    assert (project / report).is_file()
    assert "comparing openai:sim-baseline -> openai:sim-candidate" in out.stderr  # progress goes to stderr
    assert "comparing" not in out.stdout


def test_gate_exits_2_and_writes_junit_and_json(walkthrough):
    project, env, _, _ = walkthrough
    out = run_cli("compare", "--suite-name", "support", "--to", "openai:sim-candidate", "--json",
                  "--fail-on-regression", "--junit", "gate.xml", cwd=project, env=env)
    assert out.returncode == 2, out.stderr
    payload = json.loads(out.stdout)  # stdout is nothing but the JSON document
    assert payload["verdict"] == "fail"
    assert any("notify_security_team" in r["tools"] for r in payload["regressions"])
    root = ET.parse(project / "gate.xml").getroot()
    cases = root.findall(".//testcase")
    comparisons = [c for c in cases if c.get("classname") == "evalshift.comparisons"]
    regressions = [c for c in cases if c.get("classname", "").startswith("evalshift.regressions")]
    assert len(comparisons) == len(payload["comparisons"])
    # one testcase per regressed example: its conformance and divergence rows are one root cause
    assert len(regressions) == len({r["example_id"] for r in payload["regressions"]}) == 10
    assert len(payload["regressions"]) == 20  # --json and analysis.json keep both sides
    assert all(c.find("failure") is not None for c in regressions)
    # the routing comparison, and how often notify_security_team was called
    failed = [c.get("name") for c in comparisons if c.find("failure") is not None]
    assert len(failed) == 2 and any("notify_security_team" in name for name in failed), failed
    verdict = next(c for c in cases if c.get("name") == "verdict")
    assert verdict.find("failure").get("message") == payload["headline"]
    assert payload["headline"].startswith("FAIL — the candidate stopped calling notify_security_team on 7 of 32")
    assert set(payload) >= {"headline", "banners", "labels"}
    assert payload["labels"]["TOOL_SELECTION_DRIFT"]["by_tool"]["notify_security_team"] == 7


def test_same_model_passes_the_gate(walkthrough):
    project, env, _, _ = walkthrough
    out = run_cli("compare", "--suite-name", "support", "--to", "openai:sim-baseline", "--fail-on-regression",
                  cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    assert "Verdict: PASS" in out.stdout


def test_run_then_evaluate_then_report_with_providers_from_config(walkthrough, tmp_path):
    """Base URLs come from evalshift.yaml `providers:` as well as from OPENAI_BASE_URL."""
    project, _, sim, _ = walkthrough
    config = tmp_path / "with-providers.yaml"
    config.write_text((project / "evalshift.yaml").read_text()
                      + f"providers:\n  openai:\n    base_url: {sim.openai_base_url}\n    api_key: sk-sim\n")
    ran = run_cli("run", "--suite-name", "support", "--to", "openai:sim-candidate", "--config", str(config),
                  "--json", cwd=project)
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]
    assert (project / ".evalshift/runs" / run_id / "raw.jsonl").is_file()
    assert json.loads(ran.stdout)["errors"] == 0
    evaluated = run_cli("evaluate", run_id, "--config", str(config), "--fail-on-regression", cwd=project)
    assert evaluated.returncode == 2, evaluated.stderr
    assert "Verdict: FAIL" in evaluated.stdout
    # --open goes through the browser the user configured ($BROWSER, as Python's webbrowser reads it).
    opened = tmp_path / "opened.txt"
    report = run_cli("report", run_id, "--json", "--open", cwd=project,
                     env={"BROWSER": f"sh -c 'echo %s > {opened}'"})
    assert report.returncode == 0, report.stderr
    path = project / json.loads(report.stdout)["report_path"]
    assert path.is_file()
    assert opened.read_text().strip() == path.resolve().as_uri()


def test_traces_import_then_evaluate_scores_agent_trace(walkthrough, tmp_path):
    """Seed 000: "evalshift traces import <run-id> --source ... --target ..." then agent_trace scores
    the imported timelines; a dangerous call with no verification flags MISSING_VERIFICATION_STEP.
    Without a second source run the comparison is uncalibrated and says how to calibrate it;
    ``--baseline`` (here a second run that repeats the first) calibrates it."""
    project, env, _, _ = walkthrough
    ran = run_cli("run", "--suite-name", "support", "--to", "openai:sim-candidate", "--json", cwd=project, env=env)
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]
    ids = [json.loads(line)["id"] for line in (project / ".evalshift/suites/support.jsonl").read_text().splitlines()]

    def timeline(names):
        return [{"type": "tool_call", "tool_name": n, "arguments": {}} for n in names]

    (tmp_path / "src.jsonl").write_text("".join(
        json.dumps({"example_id": i, "events": timeline(["lookup_order", "issue_refund"])}) + "\n" for i in ids))
    (tmp_path / "tgt.jsonl").write_text("".join(
        json.dumps({"example_id": i, "events": timeline(["issue_refund"])}) + "\n" for i in ids))
    imported = run_cli("traces", "import", run_id, "--source", str(tmp_path / "src.jsonl"),
                       "--target", str(tmp_path / "tgt.jsonl"), cwd=project)
    assert imported.returncode == 0, imported.stderr
    config = tmp_path / "agent.yaml"
    config.write_text(
        "evaluators:\n  agent_trace:\n    - name: safety\n      check_missing_verification: true\n"
        "      verification_tools: [lookup_order]\n      dangerous_tools: [issue_refund]\n"
        "migration_policy:\n  tool_call_rates: false   # the replayed calls are not what this run scores\n")
    evaluated = run_cli("evaluate", run_id, "--config", str(config), "--json", cwd=project)
    assert evaluated.returncode == 0, evaluated.stderr
    payload = json.loads(evaluated.stdout)
    assert [(c["evaluator"], c["status"]) for c in payload["comparisons"]] == [("agent_trace", "uncalibrated")]
    assert payload["verdict"] == "inconclusive" and payload["regressions"] == []
    assert any("--baseline" in line for line in payload["recommendations"])

    imported = run_cli("traces", "import", run_id, "--source", str(tmp_path / "src.jsonl"),
                       "--target", str(tmp_path / "tgt.jsonl"), "--baseline", str(tmp_path / "src.jsonl"),
                       cwd=project)
    assert imported.returncode == 0, imported.stderr
    evaluated = run_cli("evaluate", run_id, "--config", str(config), "--json", cwd=project)
    payload = json.loads(evaluated.stdout)
    [comparison] = payload["comparisons"]
    assert (comparison["status"], comparison["baseline"]) == ("measured", "imported")
    assert payload["verdict"] == "fail"
    assert any("MISSING_VERIFICATION_STEP" in r["labels"] for r in payload["regressions"])


def test_capture_promote_files(walkthrough, tmp_path):
    project, *_ = walkthrough
    files = sorted(str(p) for p in (project / ".evalshift/captures").glob("*.jsonl"))
    out = run_cli("capture", "promote", *files, "--suite-name", "promoted", "--base", str(tmp_path / "b"),
                  "--json", cwd=project)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["added"] == 32
    assert (tmp_path / "b/suites/promoted.jsonl").is_file()


def test_tools_synced_from_python_are_offered_to_examples_without_a_toolset(walkthrough, tmp_path):
    """Seed 000: "A prompt becomes an agent prompt when its tools_path is set. The orchestrator then
    sends the provider your tool definitions" — here the definitions come from `tools sync`."""
    project, env, sim, _ = walkthrough
    work = tmp_path / "hand"
    work.mkdir()
    (work / "evalshift.yaml").write_text(
        "# hand-written suite, tools from Python\nversion: 1\nprompts:\n  - id: replay\n"
        "    content: \"{input}\"\n    variables: [input]\ndefaults:\n  source_model: openai:sim-baseline\n")
    synced = run_cli("tools", "sync", str(REPO / "examples" / "support_agent.py"), cwd=work)
    assert synced.returncode == 0, synced.stderr
    assert "tools_path: .evalshift/tools.json" in (work / "evalshift.yaml").read_text()
    (work / "hand.jsonl").write_text(
        json.dumps({"id": "h1", "inputs": {"input": "Where is my order L1111?"},
                    "expected_tools": [{"tool_name": "lookup_order"}]}) + "\n")
    before = len(sim.requests)
    ran = run_cli("run", "--suite", "hand.jsonl", "--to", "openai:sim-candidate", "--json", cwd=work, env=env)
    assert ran.returncode == 0, ran.stderr
    offered = [[t["function"]["name"] for t in r["body"].get("tools", [])] for r in sim.requests[before:]]
    assert offered == [["lookup_order", "issue_refund", "notify_security_team"]] * 2
    raw = (work / ".evalshift/runs" / json.loads(ran.stdout)["run_id"] / "raw.jsonl").read_text().splitlines()
    assert all(json.loads(row)["trace"]["calls"][0]["tool_name"] == "lookup_order" for row in raw)


def _last_error_line(out: subprocess.CompletedProcess[str]) -> str:
    """Exit 1 and one ``error:`` line closing stderr (progress lines may come before it)."""
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ") and sum(line.startswith("error: ") for line in lines) == 1, out.stderr
    return lines[-1]


@pytest.mark.parametrize("flags", [(), ("--fail-on-regression",), ("--fail-on-inconclusive", "--json")],
                         ids=["no flag", "--fail-on-regression", "--fail-on-inconclusive"])
def test_a_model_that_does_not_exist_exits_1_naming_the_providers_error_whatever_the_flags(walkthrough, flags):
    """Every target call returned 404: nothing was measured, which is an error, not "INCONCLUSIVE" and exit 0."""
    project, env, _, _ = walkthrough
    out = run_cli("compare", "--suite-name", "support", "--to", "openai:nope-model", *flags, cwd=project, env=env)
    line = _last_error_line(out)
    assert "every target call failed (32 of 32 on openai:nope-model)" in line
    assert "The model `nope-model` does not exist" in line  # the provider's own words
    assert "Verdict" not in out.stdout
    if "--json" in flags:
        assert json.loads(out.stdout)["exit_code"] == 1


def test_an_inconclusive_verdict_exits_3_under_fail_on_inconclusive_and_its_junit_agrees(walkthrough, tmp_path):
    project, env, _, _ = walkthrough
    lines = (project / ".evalshift/suites/support.jsonl").read_text().splitlines(keepends=True)
    small = tmp_path / "small.jsonl"
    small.write_text("".join(lines[:5]))  # fewer than migration_policy.min_examples (10): inconclusive
    junit = tmp_path / "gate.xml"
    args = ("compare", "--suite", str(small), "--to", "openai:sim-baseline", "--fail-on-regression", "--junit", str(junit))
    gated = run_cli(*args, "--fail-on-inconclusive", cwd=project, env=env)
    assert gated.returncode == 3, gated.stderr
    assert "Verdict: INCONCLUSIVE" in gated.stdout
    failed = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None]
    assert failed == ["verdict"]
    plain = run_cli(*args, cwd=project, env=env)
    assert plain.returncode == 0, plain.stderr
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0"
    assert next(c for c in root.iter("testcase") if c.get("name") == "verdict").find("skipped") is not None


def test_a_second_identical_compare_says_every_response_came_from_the_cache(walkthrough):
    project, env, sim, _ = walkthrough
    args = ("compare", "--suite-name", "support", "--to", "openai:sim-candidate")
    assert run_cli(*args, cwd=project, env=env).returncode == 0
    before = len(sim.requests)
    again = run_cli(*args, "--json", cwd=project, env=env)
    assert again.returncode == 0, again.stderr
    assert len(sim.requests) == before  # nothing was sent
    payload = json.loads(again.stdout)
    assert (payload["cached_calls"], payload["model_calls"]) == (64, 64)
    manifest = json.loads((project / ".evalshift/runs" / payload["run_id"] / "run.json").read_text())
    assert (manifest["cached_calls"], manifest["model_calls"]) == (64, 64)
    text = run_cli(*args, cwd=project, env=env)
    assert "64 of 64 responses from the cache (--no-cache for fresh samples)" in text.stdout


def test_no_cache_sends_all_64_requests_again(walkthrough):
    project, env, sim, _ = walkthrough
    before = len(sim.requests)
    out = run_cli("compare", "--suite-name", "support", "--to", "openai:sim-candidate", "--no-cache", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    assert len(sim.served()) and len(sim.requests) - before == 64
    assert "0 of 64 responses from the cache" in out.stdout
