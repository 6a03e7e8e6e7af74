"""JUnit XML for CI gates: a testcase per comparison and per regression, and the verdict."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalshift_core._junit import build_junit, write_junit

PAYLOAD = {
    "run_id": "r1",
    "verdict": "fail",
    "reasons": ["tool_selection.routing (conformance): target 0.7 vs source 1.0"],
    "comparisons": [
        {"evaluator": "tool_selection", "name": "routing", "side": "conformance", "n": 30, "source_mean": 1.0,
         "target_mean": 0.7, "difference": -0.3, "p_adjusted": 0.001, "test": "wilcoxon", "severity": "high",
         "status": "measured"},
        {"evaluator": "tool_selection", "name": "routing", "side": "divergence", "n": 30, "source_mean": 1.0,
         "target_mean": 0.98, "difference": -0.02, "p_adjusted": 0.4, "test": "wilcoxon", "severity": "low",
         "status": "measured"},
        {"evaluator": "semantic", "name": "answer", "side": None, "n": 0, "status": "unknown"},
    ],
    "regressions": [
        {"example_id": "ex_security_01", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
         "source_score": 1.0, "target_score": 0.0, "labels": ["TOOL_SELECTION_DRIFT"],
         "tools": ["notify_security_team"]},
    ],
}


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {f"{c.get('classname')}::{c.get('name')}": c for c in root.iter("testcase")}


def test_one_testcase_per_comparison_and_regression_plus_the_verdict():
    cases = _cases(build_junit(PAYLOAD))
    assert cases["evalshift.verdict::verdict"].find("failure") is not None
    significant = cases["evalshift.comparisons::tool_selection.routing (conformance)"]
    assert significant.find("failure") is not None and "severity high" in significant.find("failure").get("message")
    assert cases["evalshift.comparisons::tool_selection.routing (divergence)"].find("failure") is None
    assert cases["evalshift.comparisons::semantic.answer"].find("skipped").get("message") == "Nothing measured"
    regression = cases["evalshift.regressions.tool_selection.routing (conformance)::ex_security_01"]
    assert regression.find("failure").get("type") == "TOOL_SELECTION_DRIFT"
    assert "notify_security_team" in regression.find("failure").get("message")
    assert len(cases) == 5


def test_counts_add_up_and_the_file_parses(tmp_path):
    write_junit(tmp_path / "out.xml", PAYLOAD)
    root = ET.parse(tmp_path / "out.xml").getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures")) == ("5", "3")
    for suite in root.iter("testsuite"):
        assert int(suite.get("tests")) == len(suite.findall("testcase"))


def test_a_passing_verdict_has_no_verdict_failure():
    cases = _cases(build_junit({**PAYLOAD, "verdict": "pass", "regressions": []}))
    assert cases["evalshift.verdict::verdict"].find("failure") is None
