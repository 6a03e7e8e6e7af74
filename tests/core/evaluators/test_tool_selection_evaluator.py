"""Known answers for ``tool_selection``: every mode, default, side and label of the seeds."""

from __future__ import annotations

import pytest
from evaluator_builders import example, trace

from evalshift_core import ConfigError, Example
from evalshift_core.evaluators import build_evaluators, evaluate_pair


def score(ex, src, tgt, **config):
    return evaluate_pair(ex, src, tgt, {"tool_selection": [config]})


def test_default_mode_is_expected_and_matches_in_order():
    """Seed 000: "`expected` (default) | Both sides against the example's `expected_tools`, matched **in order**"."""
    ex = example("lookup_order", "issue_refund")
    [rec] = score(ex, trace("lookup_order", "issue_refund"), trace("issue_refund", "lookup_order"))
    assert rec["metadata"]["mode"] == "expected"
    assert rec["source_score"] == 1.0
    assert rec["target_score"] == 0.5  # LCS 1 of 2: the order counts
    assert rec["labels"] == ["TOOL_ORDER_DRIFT"]
    assert rec["metadata"]["expected"] == ["lookup_order", "issue_refund"]


def test_expected_mode_grades_the_source_too():
    """Seed 000: "the source model is a baseline, not an oracle" — both sides face the ground truth."""
    ex = example("notify_security_team")
    [rec] = score(ex, trace("reset_password"), trace("notify_security_team"))
    assert (rec["source_score"], rec["target_score"]) == (0.0, 1.0)
    assert rec["labels"] == []


def test_expected_set_is_multiset_recall():
    """Seed 000: "`expected_set` | The same ground truth, order-insensitive — multiset recall"."""
    ex = example("search", "search", "summarise")
    [rec] = score(ex, trace("summarise", "search", "search"), trace("search", "summarise"), mode="expected_set")
    assert rec["source_score"] == 1.0
    assert rec["target_score"] == pytest.approx(2 / 3)  # one of the two searches is missing


def test_exact_is_sequence_equality_against_the_source():
    """Seed 000: "`exact` | Sequence equality against the source model"."""
    ex = example("a")  # ground truth is ignored by a divergence mode
    [same] = score(ex, trace("b", "c"), trace("b", "c"), mode="exact")
    [moved] = score(ex, trace("b", "c"), trace("c", "b"), mode="exact")
    assert (same["source_score"], same["target_score"]) == (1.0, 1.0)
    assert (moved["source_score"], moved["target_score"]) == (1.0, 0.0)
    assert moved["labels"] == ["TOOL_ORDER_DRIFT"]


def test_set_is_jaccard_over_names():
    """Seed 000: "`set` | Jaccard over the tool-name sets"."""
    [rec] = score(example(), trace("a", "b", "c"), trace("a", "b", "d"), mode="set")
    assert rec["target_score"] == pytest.approx(2 / 4)
    assert rec["labels"] == ["TOOL_SELECTION_DRIFT"]


def test_first_compares_the_first_call_only():
    """Seed 000: "`first` | First call only"."""
    [same_first] = score(example(), trace("a", "b"), trace("a", "z", "y"), mode="first")
    [other_first] = score(example(), trace("a", "b"), trace("b", "a"), mode="first")
    assert same_first["target_score"] == 1.0
    assert other_first["target_score"] == 0.0


def test_expected_no_tools_scores_one_iff_zero_calls():
    """Seed 000: "Examples marked `expected_no_tools` score 1.0 if and only if zero calls were made"."""
    ex = Example(id="policy", expected_no_tools=True)
    [rec] = score(ex, trace(text="Our policy is 30 days."), trace("lookup_order"))
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)
    assert rec["labels"] == ["UNNECESSARY_TOOL_CALL"]


def test_conformance_and_divergence_sides_from_seed_001_config():
    """Seed 001: "conformance: expected  # each side vs example.expected_tools / divergence: set  # target vs source, Jaccard on names"."""
    ex = example("notify_security_team")
    recs = score(ex, trace("notify_security_team"), trace("reset_password"), name="routing",
                 conformance="expected", divergence="set", severity_floor="high")
    assert [r["side"] for r in recs] == ["conformance", "divergence"]
    conformance, divergence = recs
    assert (conformance["source_score"], conformance["target_score"]) == (1.0, 0.0)
    assert conformance["labels"] == ["TOOL_SELECTION_DRIFT"]
    assert (divergence["source_score"], divergence["target_score"]) == (1.0, 0.0)
    assert divergence["metadata"]["source"] == ["notify_security_team"]


def test_severity_floor_is_carried_on_the_evaluator():
    """Seed 000: "`severity_floor: low|medium|high|critical` means a regression on this evaluator can never be classified below the floor"."""
    [ev] = build_evaluators({"tool_selection": [{"name": "routing", "severity_floor": "high"}]})
    assert ev.severity_floor == "high"
    with pytest.raises(ConfigError, match="severity_floor"):
        build_evaluators({"tool_selection": [{"severity_floor": "urgent"}]})


def test_both_sides_missing_the_ground_truth_is_labelled():
    """Seed 001: "TOOL_GROUND_TRUTH_MISS — a conformance row where both sides missed the ground truth"."""
    [rec] = score(example("notify_security_team"), trace("reset_password"), trace("reset_password"),
                  conformance="expected")
    assert rec["labels"] == ["TOOL_GROUND_TRUTH_MISS"]


def test_no_ground_truth_is_skipped_not_scored():
    [rec] = score(Example(id="bare"), trace("a"), trace("b"))
    assert rec["skipped"] is True
    assert (rec["source_score"], rec["target_score"]) == (1.0, 1.0)


def test_single_shot_pairs_carry_no_rounds_key():
    """Seed 001: "Single-shot pairs render exactly as before and carry no rounds key"."""
    [rec] = score(example("a"), trace("a"), trace("a"))
    assert "rounds" not in rec["metadata"]


def test_each_round_is_graded_against_its_own_ground_truth():
    """Seed 001: "each tool evaluator grades round k against its own ground truth and records the mean over replayed rounds, with the per-round detail under metadata.rounds"."""
    ex = Example(id="loop", expected_tool_rounds=[[{"tool_name": "lookup_order"}], [{"tool_name": "issue_refund"}]],
                 expected_tools=[{"tool_name": "lookup_order"}])
    src = trace(rounds=[["lookup_order"], ["issue_refund"], []], text="Refunded.")
    tgt = trace(rounds=[["lookup_order"], ["lookup_order"], []], text="Refunded.")
    [rec] = score(ex, src, tgt)
    rounds = rec["metadata"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3]
    assert [r["expected"] for r in rounds] == [["lookup_order"], ["issue_refund"], []]
    assert [r["target_score"] for r in rounds] == [1.0, 0.0, 1.0]
    assert rec["target_score"] == pytest.approx(2 / 3)
    assert rec["source_score"] == 1.0
    assert rec["labels"] == ["TOOL_SELECTION_DRIFT"]


def test_answer_round_catches_a_candidate_that_keeps_calling_tools():
    """Seed 001: "a candidate that keeps calling tools when it should have answered is caught"."""
    ex = Example(id="loop", expected_tool_rounds=[[{"tool_name": "lookup_order"}]])
    src = trace(rounds=[["lookup_order"], []], text="Shipped.")
    tgt = trace(rounds=[["lookup_order"], ["lookup_order"]])
    [rec] = score(ex, src, tgt)
    assert rec["metadata"]["rounds"][1]["target_score"] == 0.0
    assert "UNNECESSARY_TOOL_CALL" in rec["labels"]


@pytest.mark.parametrize(
    "config, field",
    [
        ({"tool_selection": [{"mode": "sometimes"}]}, "evaluators.tool_selection[0]"),
        ({"tool_selection": [{"divergence": "expected"}]}, "evaluators.tool_selection[0]"),
        ({"tool_selection": [{"mode": "set", "conformance": "expected"}]}, "evaluators.tool_selection[0]"),
        ({"tool_selection": [{"modes": "set"}]}, "evaluators.tool_selection[0]"),
        ({"tool_choice": [{}]}, "evaluators.tool_choice"),
    ],
)
def test_bad_config_names_the_field(config, field):
    with pytest.raises(ConfigError) as info:
        build_evaluators(config)
    assert info.value.field == field


@pytest.mark.parametrize("against", ["tool_selection", "tool_arguments"])
def test_a_shared_miss_does_not_depend_on_which_side_did_better(against):
    """Both sides missed the ground truth (each below 0.5): TOOL_GROUND_TRUTH_MISS whichever side
    scored higher, so the rows that leave the test leave symmetrically; dropping only the rows the
    target did no worse on would fail every A/A comparison of a non-deterministic model."""
    from evaluator_builders import call, expected

    if against == "tool_selection":
        ex = example("a", "b", "c")
        config = {"tool_selection": [{"name": "r", "conformance": "expected"}]}
        worse, better = trace("x"), trace("a", "x", "y")
    else:
        ex = example(expected("a", {"k": 1, "l": 2, "m": 3}))
        config = {"tool_arguments": [{"name": "args", "against": "expected"}]}
        worse, better = trace(call("a", k=9, l=9, m=9)), trace(call("a", k=1, l=9, m=9))
    [down] = evaluate_pair(ex, better, worse, config)
    [up] = evaluate_pair(ex, worse, better, config)
    assert down["source_score"] > down["target_score"] and max(down["source_score"], down["target_score"]) < 0.5
    assert down["labels"] == up["labels"] == ["TOOL_GROUND_TRUTH_MISS"]
