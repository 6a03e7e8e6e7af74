"""The analysis of calibrated and uncalibrated drift comparisons, budgets and the harness banner."""

from __future__ import annotations

import random

from evalshift_core import Example, analyze


def drift_row(i, source, target, *, kind="source_repeats", labels=(), baseline_labels=(), tools=None,
              baseline_tools=None, name="args", evaluator="tool_arguments", side=None):
    baseline = {"kind": kind}
    if kind != "none":
        baseline.update({"references": 1, "labels": list(baseline_labels)})
        if baseline_tools:
            baseline["tools"] = baseline_tools
    metadata = {"baseline": baseline}
    if tools:
        metadata["label_tools"] = tools
    return {"example_id": f"ex{i}", "evaluator": evaluator, "name": name, "side": side, "source_score": source,
            "target_score": target, "labels": list(labels), "metadata": metadata}


def conformance_row(i, source, target, labels=()):
    return {"example_id": f"ex{i}", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
            "source_score": source, "target_score": target, "labels": list(labels),
            "metadata": {"mode": "expected", "expected": ["a"], "source": ["a"], "target": ["a"]}}


def test_a_drift_comparison_without_any_baseline_is_uncalibrated_and_cannot_fail():
    rows = [drift_row(i, 1.0, 0.0 if i < 25 else 1.0, kind="none", labels=["ARGUMENT_VALUE_DRIFT"] if i < 25 else [])
            for i in range(50)]
    a = analyze(rows)
    [c] = a.comparisons
    assert (c.status, c.p_value, c.uncalibrated, c.drift_share) == ("uncalibrated", None, 50, 0.5)
    assert a.verdict == "inconclusive"  # nothing could be tested: a pass would rest on nothing
    assert a.regressions == []
    assert a.labels["ARGUMENT_VALUE_DRIFT"].count == 25  # shown with its labels
    assert any("source_repeats: 2" in line and "uncalibrated" in line for line in a.recommendations)


def test_an_uncalibrated_comparison_beside_a_tested_one_leaves_the_verdict_to_the_tested_one():
    rows = [conformance_row(i, 1.0, 1.0) for i in range(40)]
    rows += [drift_row(i, 1.0, 0.0, kind="none", evaluator="tool_selection", name="routing", side="divergence",
                       labels=["TOOL_SELECTION_DRIFT"]) for i in range(40)]
    a = analyze(rows)
    assert a.verdict == "pass"
    assert any("uncalibrated, not tested" in r for r in a.reasons)
    assert not any("TOOL_SELECTION_DRIFT" in r for r in a.reasons)


def test_the_same_noise_on_both_sides_passes_and_a_real_drop_fails():
    rng = random.Random(4)
    aa = [drift_row(i, float(rng.random() < 0.7), float(rng.random() < 0.7)) for i in range(200)]
    assert analyze(aa).verdict == "pass"
    drop = [drift_row(i, float(rng.random() < 0.7), float(rng.random() < 0.4)) for i in range(200)]
    a = analyze(drop)
    assert a.verdict == "fail" and a.comparisons[0].baseline == "source_repeats"
    c = a.comparisons[0]
    assert c.drift_share is not None and c.baseline_drift_share is not None
    assert c.drift_share > c.baseline_drift_share


def test_partially_calibrated_rows_are_tested_on_the_calibrated_ones_only():
    rows = [drift_row(i, 1.0, 1.0) for i in range(30)] + [drift_row(30 + i, 1.0, 0.0, kind="none") for i in range(10)]
    a = analyze(rows)
    [c] = a.comparisons
    assert (c.status, c.n, c.uncalibrated, c.difference) == ("measured", 30, 10, 0.0)
    assert any("10 of 40 examples had no A/A baseline" in line for line in a.recommendations)


def test_reasons_name_only_labels_the_target_shows_more_often_than_the_source_itself():
    """A noisy free-text field drifts as often on the source's own second run: not a reason. A tool
    the target stopped calling is, with the A/A count beside it where it is not zero."""
    rows = []
    for i in range(60):
        noisy = i % 2 == 0
        dropped = i < 15
        labels = ["ARGUMENT_VALUE_DRIFT"] * noisy + ["TOOL_SELECTION_DRIFT"] * dropped
        tools = {"ARGUMENT_VALUE_DRIFT": ["think"]} if noisy else {}
        if dropped:
            tools["TOOL_SELECTION_DRIFT"] = ["notify_security_team"]
        rows.append(drift_row(i, 0.8 if noisy else 1.0, (0.8 if noisy else 1.0) - 0.5 * dropped, labels=labels,
                              tools=tools, baseline_labels=["ARGUMENT_VALUE_DRIFT"] * noisy
                              + ["TOOL_SELECTION_DRIFT"] * (i == 41),
                              baseline_tools={"ARGUMENT_VALUE_DRIFT": ["think"]} if noisy else
                              ({"TOOL_SELECTION_DRIFT": ["notify_security_team"]} if i == 41 else None)))
    a = analyze(rows)
    assert a.verdict == "fail"
    assert a.labels["ARGUMENT_VALUE_DRIFT"].baseline_count == 30
    assert a.labels["TOOL_SELECTION_DRIFT"].baseline_by_tool == {"notify_security_team": 1}
    assert "15 TOOL_SELECTION_DRIFT on notify_security_team (1 in the source's own runs)" in a.reasons
    assert not any("ARGUMENT_VALUE_DRIFT" in r for r in a.reasons)


def test_a_calibrated_budget_counts_drift_in_excess_of_the_source_and_needs_confidence():
    def rows(target_rate, source_rate, n=200, seed=1):
        rng = random.Random(seed)
        return [drift_row(i, 0.0 if rng.random() < source_rate else 1.0, 0.0 if rng.random() < target_rate else 1.0)
                for i in range(n)]

    policy = {"max_tool_argument_drift": 0.05}
    same = analyze(rows(0.30, 0.30), policy=policy)
    line = next(r for r in same.reasons if "max_tool_argument_drift" in r)
    assert "in the source's own runs (source_repeats)" in line and same.verdict == "pass"
    worse = analyze(rows(0.60, 0.30), policy=policy)
    assert worse.verdict == "fail"
    assert any("max_tool_argument_drift is 5.0%" in r and "in excess" in r for r in worse.reasons)


def test_an_uncalibrated_budget_uses_the_raw_rate_and_says_so():
    rows = [drift_row(i, 1.0, 0.0 if i < 10 else 1.0, kind="none") for i in range(40)]
    a = analyze(rows, policy={"max_tool_argument_drift": 0.1})
    assert a.verdict == "fail"
    assert any("uncalibrated: the raw rate" in r for r in a.reasons)


def _harness_rows(n=20, missed=12):
    return [conformance_row(i, 0.0 if i < missed else 1.0, 0.0 if i < missed else 1.0,
                            labels=["TOOL_GROUND_TRUTH_MISS"] if i < missed else []) for i in range(n)]


def test_a_hand_written_suite_the_source_misses_gets_no_harness_banner():
    """The banner's premise, expectations captured from the source model, holds for promoted
    examples only; a hand-written ground truth the source misses 60% of the time is a finding."""
    examples = [Example(id=f"ex{i}", expected_tools=[{"tool_name": "a"}]) for i in range(20)]
    a = analyze(_harness_rows(), examples=examples)
    assert "broken eval harness" not in a.banners
    assert any("missed the ground truth on 12 of 20 examples not promoted from captures" in r
               for r in a.recommendations)


def test_a_promoted_suite_the_source_misses_still_gets_the_harness_banner():
    examples = [Example(id=f"ex{i}", expected_tools=[{"tool_name": "a"}], promotion_source="requested")
                for i in range(20)]
    a = analyze(_harness_rows(), examples=examples)
    assert "broken eval harness" in a.banners and a.verdict == "inconclusive"


def _use(dropped, added, source, target, n=40):
    return {"examples": n, "tags": {}, "swaps": [],
            "tools": [{"tool": "notify_security_team", "source": source, "target": target, "dropped": dropped,
                       "added": added, "dropped_tags": {}, "added_tags": {}}]}


def test_each_tools_call_rate_is_tested_with_the_exact_mcnemar_test():
    """7 examples lost the call and none gained it: p = 2 * 0.5**7, alone in its family."""
    rows = [conformance_row(i, 1.0, 1.0) for i in range(40)]
    a = analyze(rows, tool_use=_use(7, 0, 7, 0))
    rate = next(c for c in a.comparisons if c.evaluator == "tool_calls")
    assert (rate.name, rate.test, rate.n, rate.regressed) == ("notify_security_team", "mcnemar", 40, 7)
    assert rate.p_value == 2 * 0.5**7
    assert (rate.source_mean, rate.target_mean, rate.difference) == (7 / 40, 0.0, -7 / 40)
    assert a.verdict == "fail"
    assert a.reasons[0].startswith("tool_calls.notify_security_team: the target stopped calling it on 7 of 40 "
                                   "examples (called on 0, the source on 7); exact McNemar adjusted p=")


def test_a_call_rate_that_moves_both_ways_alike_is_not_a_change_and_the_test_can_be_off():
    rows = [conformance_row(i, 1.0, 1.0) for i in range(40)]
    balanced = analyze(rows, tool_use=_use(6, 6, 12, 12))
    assert balanced.verdict == "pass"
    assert next(c for c in balanced.comparisons if c.evaluator == "tool_calls").p_value == 1.0
    off = analyze(rows, tool_use=_use(7, 0, 7, 0), policy={"tool_call_rates": False})
    assert off.verdict == "pass" and not any(c.evaluator == "tool_calls" for c in off.comparisons)


def test_a_tool_the_target_started_calling_fails_too():
    rows = [conformance_row(i, 1.0, 1.0) for i in range(40)]
    a = analyze(rows, tool_use=_use(0, 9, 0, 9))
    assert a.verdict == "fail"
    assert "started calling it on 9 of 40 examples" in a.reasons[0]
