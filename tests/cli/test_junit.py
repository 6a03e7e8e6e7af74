"""JUnit XML for CI gates: a testcase per comparison and per regression, and the verdict."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalshift_core.report._junit import build_junit, write_junit

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


def _failures(root: ET.Element) -> list[str]:
    return [f"{c.get('classname')}::{c.get('name')}" for c in root.iter("testcase") if c.find("failure") is not None]


INCONCLUSIVE = {**PAYLOAD, "verdict": "inconclusive",
                "reasons": ["tool_selection.routing (conformance): 8 measured examples, fewer than min_examples 10"]}


def test_an_inconclusive_run_is_skipped_not_failed_so_it_agrees_with_exit_code_0():
    root = build_junit(INCONCLUSIVE)
    assert _failures(root) == []
    cases = _cases(root)
    assert cases["evalshift.verdict::verdict"].find("skipped").get("message") == "verdict: inconclusive"
    # what a FAIL would have failed is still listed, as skipped with the verdict named
    significant = cases["evalshift.comparisons::tool_selection.routing (conformance)"].find("skipped")
    assert "not decisive: the verdict is inconclusive" in significant.get("message")
    assert (root.get("failures"), root.get("skipped")) == ("0", "4")


def test_under_fail_on_inconclusive_the_verdict_is_the_one_failure_as_exit_3_says():
    root = build_junit(INCONCLUSIVE, fail_on_inconclusive=True)
    assert _failures(root) == ["evalshift.verdict::verdict"]
    failure = _cases(root)["evalshift.verdict::verdict"].find("failure")
    assert failure.get("message") == "verdict: inconclusive" and "min_examples" in failure.text


def test_a_passing_verdict_fails_nothing_even_with_regressed_examples():
    root = build_junit({**PAYLOAD, "verdict": "pass"}, fail_on_inconclusive=True)
    assert _failures(root) == []
    regression = _cases(root)["evalshift.regressions.tool_selection.routing (conformance)::ex_security_01"]
    assert "TOOL_SELECTION_DRIFT" in regression.find("skipped").get("message")


def test_one_root_cause_is_one_failure_per_example_not_one_per_side():
    """Conformance and divergence regressed on the same examples and tools: ten examples, ten failures."""
    sides = ("conformance", "divergence")
    comparisons = [{**PAYLOAD["comparisons"][0], "side": side} for side in sides]
    regressions = [
        {"example_id": f"ex_security_{i:02d}", "evaluator": "tool_selection", "name": "routing", "side": side,
         "source_score": 1.0, "target_score": 0.0, "labels": ["TOOL_SELECTION_DRIFT"], "tools": ["notify_security_team"]}
        for i in range(10) for side in sides
    ]
    headline = "FAIL — the candidate stopped calling notify_security_team on 10 of 32 examples (all tagged security)."
    root = build_junit({**PAYLOAD, "headline": headline, "comparisons": comparisons, "regressions": regressions})
    failed = _failures(root)
    assert failed.count("evalshift.comparisons::tool_selection.routing (conformance)") == 1
    assert "evalshift.comparisons::tool_selection.routing (divergence)" not in failed
    per_example = [f for f in failed if f.startswith("evalshift.regressions.")]
    assert len(per_example) == 10
    cases = _cases(root)
    message = cases["evalshift.regressions.tool_selection.routing (conformance)::ex_security_03"].find("failure").get("message")
    assert message.endswith("; the divergence side agrees")
    assert "counted there" in cases["evalshift.comparisons::tool_selection.routing (divergence)"].find("skipped").get("message")
    assert cases["evalshift.verdict::verdict"].find("failure").get("message") == headline
