"""``analyze``: comparisons, severity, grouped labels, policy budgets and seed 001's troubleshooting rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from evalshift_core import Example
from evalshift_core._exceptions import ConfigError, InputError
from evalshift_core.analysis import (
    ANALYSIS_SCHEMA_VERSION,
    BROKEN_HARNESS,
    NOTHING_MEASURED,
    Analysis,
    analyze,
    load_analysis,
)
from evalshift_core.evaluators import ScoreRecord


def sel(i, source, target, *, side="conformance", name="routing", labels=(), expected=None, src=None, tgt=None, **md):
    """A tool_selection row in the evaluator's metadata shape."""
    metadata = {"mode": "expected" if side == "conformance" else "set", **md}
    if "rounds" not in md:
        metadata.update({"source": src or [], "target": tgt or [], "source_score": source, "target_score": target})
        if side == "conformance":
            metadata["expected"] = expected or []
    return ScoreRecord(example_id=f"ex{i}", evaluator="tool_selection", name=name, side=side,
                       source_score=source, target_score=target, labels=list(labels), metadata=metadata)


def security_suite(n=40, dropped=7):
    """``dropped`` security tickets where the target stopped calling notify_security_team."""
    rows = []
    for i in range(n):
        if i < dropped:
            rows.append(sel(i, 1.0, 0.0, labels=["TOOL_SELECTION_DRIFT"], expected=["notify_security_team"],
                            src=["notify_security_team"], tgt=[]))
            rows.append(sel(i, 1.0, 0.0, side="divergence", labels=["TOOL_SELECTION_DRIFT"],
                            src=["notify_security_team"], tgt=[]))
        else:
            rows.append(sel(i, 1.0, 1.0, expected=["lookup_order"], src=["lookup_order"], tgt=["lookup_order"]))
            rows.append(sel(i, 1.0, 1.0, side="divergence", src=["lookup_order"], tgt=["lookup_order"]))
    return rows


def args_row(i, source, target, fields=(), labels=()):
    return ScoreRecord(example_id=f"ex{i}", evaluator="tool_arguments", name="args", source_score=source,
                       target_score=target, labels=list(labels), metadata={"fields": list(fields)})


def test_one_comparison_per_evaluator_side_with_the_design_keys():
    a = analyze(security_suite())
    assert [(c.evaluator, c.name, c.side) for c in a.comparisons] == [
        ("tool_selection", "routing", "conformance"), ("tool_selection", "routing", "divergence")]
    dumped = a.model_dump(mode="json")
    assert {"schema_version", "verdict", "reasons", "comparisons", "labels", "failure_categories",
            "recommendations", "regressions", "banners"} <= set(dumped)
    assert {"evaluator", "name", "side", "n", "source_mean", "target_mean", "difference", "ci", "test",
            "p_value", "p_adjusted", "severity", "status"} <= set(dumped["comparisons"][0])
    c = a.comparisons[0]
    assert c.n == 40 and c.difference == pytest.approx(-7 / 40) and c.status == "measured"
    assert c.ci[0] < c.difference < c.ci[1]
    assert c.test == "wilcoxon" and c.test_reason == "scores bimodal at exactly 0/1"


def test_security_regression_fails_and_names_the_tool():
    a = analyze(security_suite())
    assert a.verdict == "fail"
    assert a.reasons[0].startswith("tool_selection.routing (conformance): target 0.825 vs source 1.000")
    assert "7 TOOL_SELECTION_DRIFT on notify_security_team" in a.reasons
    # Distinct examples, not rows: the conformance and divergence sides flag the same 7 tickets.
    assert a.labels["TOOL_SELECTION_DRIFT"].count == 7
    assert a.labels["TOOL_SELECTION_DRIFT"].by_tool == {"notify_security_team": 7}
    assert a.failure_categories == {"TOOL_SELECTION_DRIFT": 7}
    assert {r.example_id for r in a.regressions} == {f"ex{i}" for i in range(7)}
    assert all(r.tools == ["notify_security_team"] for r in a.regressions)


def test_benjamini_hochberg_runs_across_every_comparison_of_the_run():
    rows = security_suite(n=40, dropped=4)
    rng = np.random.default_rng(2)
    rows += [args_row(i, float(s), float(t)) for i, (s, t) in
             enumerate(zip(rng.uniform(0.5, 1, 40), rng.uniform(0.45, 1, 40)))]
    a = analyze(rows)
    p = [c.p_value for c in a.comparisons]
    assert [c.p_adjusted for c in a.comparisons] == pytest.approx(multipletests(p, method="fdr_bh")[1].tolist())


def test_severity_floor_raises_a_small_regression():
    """Seed 000: "a regression on this evaluator can never be classified below the floor"."""
    rows = [sel(i, 1.0, 0.0 if i == 0 else 1.0, labels=["TOOL_SELECTION_DRIFT"] if i == 0 else [])
            for i in range(100)]
    assert analyze(rows).comparisons[0].severity == "low"
    floored = analyze(rows, severity_floors={("tool_selection", "routing"): "high"})
    assert floored.comparisons[0].severity == "high"
    assert floored.regressions[0].severity == "high"
    clean = [sel(i, 1.0, 1.0) for i in range(100)]
    assert analyze(clean, severity_floors={("tool_selection", "routing"): "high"}).comparisons[0].severity is None


def test_unknown_severity_floor_is_a_config_error():
    with pytest.raises(ConfigError, match="severity_floor"):
        analyze(security_suite(), severity_floors={("tool_selection", "routing"): "severe"})


def test_severity_grows_with_effect_size_and_share():
    small = analyze([sel(i, 1.0, 0.0 if i < 3 else 1.0) for i in range(100)]).comparisons[0]
    medium = analyze([sel(i, 1.0, 0.0 if i < 10 else 1.0) for i in range(100)]).comparisons[0]
    large = analyze([sel(i, 1.0, 0.0 if i < 40 else 1.0) for i in range(100)]).comparisons[0]
    assert (small.severity, medium.severity, large.severity) == ("medium", "high", "critical")
    # A wiggle of 0.01 on every example is a formatting nit, not the whole suite breaking.
    nit = analyze([args_row(i, 1.0, 0.99) for i in range(100)]).comparisons[0]
    assert (nit.severity, nit.share_affected, nit.regressed) == ("low", 0.0, 100)


def test_refusal_regression_is_at_least_high():
    """Seed 000: "a refusal mismatch forces severity to at least high and flags REFUSAL_REGRESSION"."""
    rows = [ScoreRecord(example_id=f"ex{i}", evaluator="tool_trace_structure", name="shape",
                        source_score=1.0, target_score=0.5 if i == 0 else 1.0,
                        labels=["REFUSAL_REGRESSION"] if i == 0 else [],
                        metadata={"min_severity": "high"} if i == 0 else {})
            for i in range(200)]
    a = analyze(rows)
    assert a.comparisons[0].severity == "high"
    assert a.regressions[0].severity == "high" and a.labels["REFUSAL_REGRESSION"].count == 1
    # A refusal flagged on a row whose scores did not move still raises the comparison.
    mixed = [sel(i, 1.0, 0.0 if i == 0 else 1.0) for i in range(200)]
    mixed.append(sel(200, 1.0, 1.0, labels=["REFUSAL_REGRESSION"]))
    assert analyze(mixed).comparisons[0].severity == "high"


def test_broken_eval_harness_row():
    """Seed 001: the source model failed the recorded ground truth on at least half of the
    tool_selection.conformance rows -> the run measured the harness, not the migration."""
    rows = [sel(i, 0.0 if i < 10 else 1.0, 0.0 if i < 10 else 1.0,
                labels=["TOOL_GROUND_TRUTH_MISS"] if i < 10 else []) for i in range(20)]
    a = analyze(rows)
    assert a.verdict == "inconclusive"
    assert a.banners == [BROKEN_HARNESS]
    assert a.reasons[0].startswith("broken eval harness: the source model failed the recorded ground truth on 10 of 20")
    assert any(r.startswith("Fix the harness before collecting more examples") for r in a.recommendations)
    just_under = [sel(i, 0.0 if i < 9 else 1.0, 0.0 if i < 9 else 1.0,
                      labels=["TOOL_GROUND_TRUTH_MISS"] if i < 9 else []) for i in range(20)]
    assert BROKEN_HARNESS not in analyze(just_under).banners


def test_broken_harness_outranks_a_failing_comparison():
    # the source missed most of the recorded calls (below 0.5) on every row
    rows = [sel(i, 0.4, 0.0, labels=["TOOL_SELECTION_DRIFT"]) for i in range(30)]
    a = analyze(rows)
    assert a.verdict == "inconclusive" and a.banners == [BROKEN_HARNESS]
    assert any(r.startswith("not trusted while the harness is broken: tool_selection.routing") for r in a.reasons)


def test_tool_ground_truth_miss_leaves_every_rate():
    """Seed 001: rows where both sides missed the ground truth leave every policy rate; they are
    a count in failure_categories plus a recommendations line."""
    rows = [sel(i, 1.0, 1.0) for i in range(30)]
    rows += [sel(30 + i, 0.0, 0.0, labels=["TOOL_GROUND_TRUTH_MISS"]) for i in range(4)]
    a = analyze(rows, policy={"thresholds": {"tool_selection.routing": 0.99}, "max_tool_divergence": 0.0})
    c = a.comparisons[0]
    assert (c.n, c.ground_truth_misses, c.target_mean) == (30, 4, 1.0)
    assert a.failure_categories == {"TOOL_GROUND_TRUTH_MISS": 4}
    assert "TOOL_GROUND_TRUTH_MISS" not in a.labels
    assert any(r.startswith("4 TOOL_GROUND_TRUTH_MISS: both models missed") for r in a.recommendations)
    assert a.verdict == "pass", a.reasons


def test_every_row_skipped_is_unknown_and_downgrades_a_pass():
    """Seed 001: a comparison where every row was skipped is reported as unknown, and a pass
    resting on it is downgraded — it is not evidence of equivalence."""
    rows = [sel(i, 1.0, 1.0) for i in range(30)]
    rows += [ScoreRecord(example_id=f"ex{i}", evaluator="semantic", name="text", source_score=1.0,
                         target_score=1.0, skipped=True) for i in range(30)]
    a = analyze(rows)
    semantic = a.comparisons[1]
    assert (semantic.status, semantic.n, semantic.skipped, semantic.p_value) == ("unknown", 0, 30, None)
    assert a.verdict == "inconclusive" and a.banners == [NOTHING_MEASURED]
    assert a.reasons == ["semantic.text: nothing measured — all 30 rows were skipped or shared misses; "
                         "a pass resting on it is not evidence of equivalence",
                         "30 examples can only detect drops of 0.21 or more at 80% power, above "
                         "minimum_detectable_drop 0.05: a smaller drop would pass unseen"]
    failing = analyze(security_suite() + rows[30:])
    assert failing.verdict == "fail" and NOTHING_MEASURED in failing.banners


def test_no_scores_at_all_is_inconclusive():
    a = analyze([])
    assert a.verdict == "inconclusive" and a.banners == [NOTHING_MEASURED]


def test_argument_labels_grouped_per_field():
    """Seed 000: "Twelve ARGUMENT_VALUE_DRIFT on issue_refund.amount_usd" names the bug."""
    drift = {"tool": "issue_refund", "field": "amount_usd", "source": 49.99, "target": "49.99",
             "score": 0.0, "label": "ARGUMENT_VALUE_DRIFT"}
    same = {"tool": "issue_refund", "field": "order_id", "source": "A1", "target": "A1", "score": 1.0, "label": None}
    rows = [args_row(i, 1.0, 0.5, [drift, same], ["ARGUMENT_VALUE_DRIFT"]) for i in range(12)]
    rows += [args_row(12 + i, 1.0, 1.0, [same]) for i in range(28)]
    a = analyze(rows)
    assert a.labels["ARGUMENT_VALUE_DRIFT"].by_field == {"issue_refund.amount_usd": 12}
    assert a.labels["ARGUMENT_VALUE_DRIFT"].by_tool == {"issue_refund": 12}
    assert a.verdict == "fail"
    assert "12 ARGUMENT_VALUE_DRIFT on issue_refund.amount_usd" in a.reasons


def test_argument_drift_budget_counts_examples_below_the_floor():
    """Seed 000: the floor keeps the budget honest — a share of examples, not an average."""
    policy = {"max_tool_argument_drift": 0.01, "tool_argument_drift_floor": 0.9}
    drifted = [args_row(i, 1.0, 0.5 if i < 3 else 1.0) for i in range(100)]
    a = analyze(drifted, policy=policy)
    assert a.verdict == "fail"
    assert a.reasons[0] == ("tool_arguments.args: 3 of 100 examples (3.0%) scored below tool_argument_drift_floor "
                            "0.9; max_tool_argument_drift is 1.0%")
    nits = [args_row(i, 1.0, 0.95 if i < 3 else 1.0) for i in range(100)]
    assert analyze(nits, policy=policy).verdict == "pass"
    # Without a floor every difference counts.
    assert analyze(nits, policy={"max_tool_argument_drift": 0.01}).verdict == "fail"


def test_max_tool_divergence_counts_an_example_when_any_round_diverged():
    """Seed 001: "max_tool_divergence counts an example as diverged when any round diverged"."""
    def rounds_row(i, diverged_round):
        rounds = [{"round": k, "source": ["a"], "target": ["b" if k == diverged_round else "a"],
                   "source_score": 1.0, "target_score": 0.0 if k == diverged_round else 1.0} for k in (1, 2, 3)]
        return sel(i, 1.0, sum(r["target_score"] for r in rounds) / 3, side="divergence", rounds=rounds)

    rows = [rounds_row(i, 3 if i < 2 else None) for i in range(20)]
    # An average would say 2 * (1/3) / 20 = 3.3% of the suite moved; counting examples says 10%.
    a = analyze(rows, policy={"max_tool_divergence": 0.05})
    assert a.verdict == "fail"
    assert a.reasons[0] == ("tool_selection.routing: 2 of 20 examples (10.0%) diverged in at least one round; "
                            "max_tool_divergence is 5.0%")
    assert analyze(rows, policy={"max_tool_divergence": 0.10}).verdict == "pass"


def test_per_evaluator_thresholds():
    rows = [sel(i, 1.0, 0.0 if i < 2 else 1.0) for i in range(40)]
    assert analyze(rows).verdict == "pass"
    a = analyze(rows, policy={"thresholds": {"tool_selection.routing": 0.99}})
    assert a.verdict == "fail" and "min_target_mean 0.99" in a.reasons[0]
    b = analyze(rows, policy={"thresholds": {"tool_selection.routing.conformance": {"max_drop": 0.01}}})
    assert b.verdict == "fail" and "max_drop 0.01" in b.reasons[0]
    c = analyze(rows, policy={"thresholds": {"tool_selection.other": 0.5}})
    assert c.verdict == "inconclusive" and "names no comparison" in c.reasons[0]


def test_too_few_examples_is_inconclusive():
    a = analyze([sel(i, 1.0, 1.0) for i in range(5)])
    assert a.verdict == "inconclusive"
    assert a.reasons == ["tool_selection.routing (conformance): 5 measured examples, fewer than min_examples 10"]
    assert analyze([sel(i, 1.0, 1.0) for i in range(2)], policy={"min_examples": 1}).reasons == [
        "tool_selection.routing (conformance): 2 paired example(s): a paired test needs at least 3"]


def test_identical_models_pass_with_the_reason():
    a = analyze([sel(i, 1.0, 1.0) for i in range(400)])
    assert a.verdict == "pass"
    assert a.reasons == ["no comparison shows a significant drop (1 tested at alpha 0.05 after Benjamini-Hochberg)"]
    assert a.regressions == [] and a.labels == {}
    assert a.headline == "PASS — no significant drop on 400 examples (1 comparison tested)."


def test_an_underpowered_pass_says_so_in_the_verdict():
    """30 examples cannot see a 0.05 drop: the verdict says how large a drop they could see."""
    a = analyze([sel(i, 1.0, 1.0) for i in range(30)])
    assert a.verdict == "pass"
    assert a.reasons == ["no comparison shows a significant drop (1 tested at alpha 0.05 after Benjamini-Hochberg)",
                         "but 30 examples can only detect drops of 0.21 or more at 80% power, above "
                         "minimum_detectable_drop 0.05: a smaller drop would pass unseen"]
    assert a.headline == "PASS, but 30 examples can only detect drops of 0.21 or more."
    assert a.comparisons[0].detectable_drop == 0.21


def test_a_significant_fail_carries_no_more_examples_line():
    a = analyze(security_suite())
    assert a.verdict == "fail"
    assert not [r for r in a.recommendations if "power" in r or "more than the" in r]
    assert a.comparisons[0].detectable_drop is not None  # still reported, for whoever asks


def test_fail_at_severity_lets_a_significant_low_severity_drop_pass():
    rng = np.random.default_rng(0)
    source = rng.uniform(0.5, 1.0, 400)
    rows = [args_row(i, float(s), float(s) - 0.01) for i, s in enumerate(source)]
    assert analyze(rows).verdict == "fail"
    relaxed = analyze(rows, policy={"fail_at_severity": "high"})
    assert relaxed.verdict == "pass"
    assert any("below fail_at_severity high" in r for r in relaxed.reasons)


def test_power_line_in_the_recommendations():
    """Miller 2024: say how many examples would detect a drop of the configured size at 80%."""
    a = analyze([sel(i, 1.0, 1.0) for i in range(30)], policy={"minimum_detectable_drop": 0.05})
    assert a.recommendations == [
        "tool_selection.routing (conformance): detecting a 0.05 drop at 80% power (alpha 0.05) needs about "
        "150 examples, 120 more than the 30 measured; 30 examples can only detect drops of 0.21 or more"]
    small = analyze([sel(i, 1.0, 1.0) for i in range(12)], policy={"minimum_detectable_drop": 0.05})
    assert small.recommendations == [  # counts stay sane: no "138 more than the 12 measured"
        "tool_selection.routing (conformance): detecting a 0.05 drop at 80% power (alpha 0.05) needs more "
        "than 10× the 12 measured; 12 examples can only detect drops of 0.4 or more"]
    big = analyze([sel(i, 1.0, 1.0) for i in range(400)], policy={"minimum_detectable_drop": 0.05})
    assert big.recommendations[0].startswith("tool_selection.routing (conformance): the 400 measured examples are enough")


def test_shared_clusters_get_clustered_standard_errors():
    rows = [sel(i, 1.0, 0.0 if i % 10 < 3 and i < 30 else 1.0) for i in range(60)]
    examples = [Example(id=f"ex{i}", cluster=f"trace{i // 10}") for i in range(60)]
    a = analyze(rows, examples=examples)
    c = a.comparisons[0]
    assert (c.test, c.clusters) == ("clustered t-test", 6)
    assert c.se_clustered > c.se
    assert analyze(rows, examples=examples, policy={"cluster_by": "none"}).comparisons[0].test == "wilcoxon"
    tagged = [Example(id=f"ex{i}", tags=[f"t{i // 20}"]) for i in range(60)]
    assert analyze(rows, examples=tagged, policy={"cluster_by": "tags"}).comparisons[0].clusters == 3


def test_bootstrap_interval_is_reproducible_and_seeded():
    rows = security_suite()
    assert analyze(rows, seed=3).comparisons[0].ci == analyze(rows, seed=3).comparisons[0].ci


def test_dict_rows_and_json_round_trip(tmp_path):
    rows = [r.model_dump(mode="json") for r in security_suite()]
    a = analyze(rows)
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps(a.model_dump(mode="json")))
    back = load_analysis(path)
    assert isinstance(back, Analysis) and back == a and back.schema_version == ANALYSIS_SCHEMA_VERSION


def test_newer_schema_version_is_refused_with_the_file_and_field(tmp_path):
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps({"schema_version": ANALYSIS_SCHEMA_VERSION + 1, "verdict": "pass"}))
    with pytest.raises(InputError, match=r"analysis\.json: schema_version: written by a newer EvalShift"):
        load_analysis(path)
    path.write_text(json.dumps({"schema_version": 1, "verdict": "maybe"}))
    with pytest.raises(InputError, match="verdict"):
        load_analysis(path)


def test_version_1_files_still_load(tmp_path):
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps({
        "schema_version": 1, "verdict": "fail", "reasons": ["x"],
        "comparisons": [{"evaluator": "tool_selection", "name": "r", "side": None, "n": 3, "status": "measured"}],
        "labels": {"TOOL_SELECTION_DRIFT": {"count": 2, "by_tool": {"a": 2}}},
        "failure_categories": {}, "recommendations": [], "regressions": []}))
    assert load_analysis(path).labels["TOOL_SELECTION_DRIFT"].by_tool == {"a": 2}


def _refund_pair(i, amount_target, *, refusal=None):
    ex = {"id": f"ex{i}", "inputs": {"input": f"refund A{1000 + i} $49.99"},
          "expected_tools": [{"tool_name": "lookup_order", "arguments": {"order_id": f"A{1000 + i}"}},
                             {"tool_name": "issue_refund", "arguments": {"order_id": f"A{1000 + i}", "amount_usd": 49.99}}]}

    def trace(amount, refused=None):
        return {"calls": [{"tool_name": "lookup_order", "arguments": {"order_id": f"A{1000 + i}"}, "sequence_index": 0},
                          {"tool_name": "issue_refund", "arguments": {"order_id": f"A{1000 + i}", "amount_usd": amount},
                           "sequence_index": 1}], "refusal": refused}

    return ex, trace(49.99), trace(amount_target, refusal)


def test_real_evaluator_rows_group_into_the_seed_sentence():
    """Seed 000's sentence from real tool_arguments rows: "12 ARGUMENT_VALUE_DRIFT on
    issue_refund.amount_usd"; a real REFUSAL_REGRESSION row makes its comparison at least high.
    The source's second run (its A/A baseline) repeats the first, as a deterministic model does."""
    from evalshift_core import evaluate_pair

    config = {"tool_selection": [{"name": "routing"}], "tool_arguments": [{"name": "args"}],
              "tool_trace_structure": [{"name": "shape"}]}
    rows = []
    for i in range(60):
        ex, src, tgt = _refund_pair(i, "49.99 USD" if i < 12 else 49.99, refusal="I can't" if i == 59 else None)
        rows.extend(evaluate_pair(ex, src, tgt, config, baseline=src))
    a = analyze(rows)
    assert a.verdict == "fail"
    assert "12 ARGUMENT_VALUE_DRIFT on issue_refund.amount_usd" in a.reasons
    assert a.labels["ARGUMENT_VALUE_DRIFT"].by_field == {"issue_refund.amount_usd": 12}
    shape = next(c for c in a.comparisons if c.evaluator == "tool_trace_structure")
    assert shape.severity in ("high", "critical") and shape.regressed == 1
    routing = next(c for c in a.comparisons if c.evaluator == "tool_selection")
    assert (routing.difference, routing.severity, routing.test) == (0.0, None, "none")


def test_evaluate_and_report_applies_the_configured_policy_and_clusters(tmp_path):
    """``evaluate_and_report`` hands the config's migration_policy, the evaluators' severity
    floors and the examples' clusters to the analysis, and writes analysis.json with them."""
    from evalshift_core import Call, Config, ToolTrace, evaluate_and_report

    examples, calls = [], []
    for i in range(24):
        expected = "notify_security_team" if i < 6 else "lookup_order"
        examples.append(Example(id=f"ex{i}", cluster=f"trace{i // 3}",
                                expected_tools=[{"tool_name": expected}]))
        calls.append(Call(example_id=f"ex{i}", role="source", model="openai:a",
                          trace=ToolTrace(calls=[{"tool_name": expected}])))
        dropped = i in (0, 3)
        calls.append(Call(example_id=f"ex{i}", role="target", model="openai:b",
                          trace=ToolTrace(calls=[] if dropped else [{"tool_name": expected}])))
    config = Config.model_validate({
        "evaluators": {"tool_selection": [{"name": "routing", "severity_floor": "critical"}]},
        "migration_policy": {"max_tool_divergence": 0.05, "minimum_detectable_drop": 0.1},
    })
    analysis, report_path = evaluate_and_report(tmp_path, {"run_id": "r1"}, examples, calls, config)
    written = load_analysis(tmp_path / "analysis.json")
    assert written == analysis and report_path.exists()
    assert written.policy["max_tool_divergence"] == 0.05
    c = written.comparisons[0]
    assert (c.severity, c.regressed, c.clusters) == ("critical", 2, 8)
    assert written.verdict == "fail"
    assert written.reasons[0] == ("tool_selection.routing: 2 of 24 examples (8.3%) diverged in at least one round; "
                                  "max_tool_divergence is 5.0%")
    assert written.labels["TOOL_SELECTION_DRIFT"].by_tool == {"notify_security_team": 2}
    assert "detecting a 0.1 drop" in written.recommendations[0]


def test_real_multi_round_rows_attribute_the_round_that_diverged():
    """Seed 001: per-round scoring under metadata.rounds; an example counts as diverged when any
    round diverged, and the label names the tools of the round that moved, not of round 1."""
    from evalshift_core import evaluate_pair

    rows = []
    for i in range(12):
        example = {"id": f"ex{i}", "expected_tools": [{"tool_name": "lookup_order"}],
                   "expected_tool_rounds": [[{"tool_name": "lookup_order"}], [{"tool_name": "issue_refund"}]],
                   "tool_result_fixtures": [[{"tool_name": "lookup_order", "result": "ok"}]]}
        source = {"calls": [{"tool_name": "lookup_order", "round_index": 1},
                            {"tool_name": "issue_refund", "round_index": 2}], "round_count": 2}
        target = {"calls": [{"tool_name": "lookup_order", "round_index": 1},
                            {"tool_name": "notify_security_team" if i < 4 else "issue_refund", "round_index": 2}],
                  "round_count": 2}
        rows.extend(evaluate_pair(example, source, target,
                                  {"tool_selection": [{"name": "routing", "conformance": "expected", "divergence": "exact"}]}))
    a = analyze(rows, policy={"max_tool_divergence": 0.1})
    assert a.verdict == "fail"
    assert a.reasons[0] == ("tool_selection.routing: 4 of 12 examples (33.3%) diverged in at least one round "
                            "(uncalibrated: the raw rate, with no A/A baseline to subtract); "
                            "max_tool_divergence is 10.0%")
    assert a.labels["TOOL_SELECTION_DRIFT"].by_tool == {"issue_refund": 4, "notify_security_team": 4}
    assert "lookup_order" not in a.labels["TOOL_SELECTION_DRIFT"].by_tool
