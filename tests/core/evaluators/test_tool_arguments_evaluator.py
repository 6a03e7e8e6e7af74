"""Known answers for ``tool_arguments``: matching, per-field strategies, defaults and modes."""

from __future__ import annotations

import pytest
from evaluator_builders import call, example, expected, trace

from evalshift_core import ConfigError, Example
from evalshift_core.evaluators import build_evaluators, evaluate_pair
from evalshift_core.evaluators.tool_arguments import NO_MATCHED_CALLS, numeric_score


def score(ex, src, tgt, **config):
    [rec] = evaluate_pair(ex, src, tgt, {"tool_arguments": [config]})
    return rec


REFUND = example("issue_refund")


def test_unlisted_fields_are_exact_and_the_detail_shows_the_values():
    """Seed 000: "Fields you do not list default to `exact`" — and a report can show `12.0 → "12"`."""
    rec = score(REFUND, trace(call("issue_refund", order_id="A1", amount_usd=12.0)),
                trace(call("issue_refund", order_id="A1", amount_usd="12")))
    assert rec["source_score"] == 1.0
    assert rec["target_score"] == 0.5
    assert rec["labels"] == ["ARGUMENT_VALUE_DRIFT"]
    assert rec["metadata"]["fields"] == [{"tool": "issue_refund", "field": "amount_usd", "source": 12.0,
                                          "target": "12", "score": 0.0, "label": "ARGUMENT_VALUE_DRIFT"}]
    assert rec["metadata"]["tools"] == ["issue_refund"]


def test_exact_treats_json_numbers_by_value_but_not_bools():
    same = score(REFUND, trace(call("issue_refund", amount_usd=12)), trace(call("issue_refund", amount_usd=12.0)))
    boolish = score(REFUND, trace(call("issue_refund", express=1)), trace(call("issue_refund", express=True)))
    assert same["target_score"] == 1.0
    assert boolish["target_score"] == 0.0


@pytest.mark.parametrize("target, expected_score", [(100.0, 1.0), (102.5, 0.5), (105.0, 0.0), (110.0, 0.0), (97.5, 0.5)])
def test_numeric_relative_error_decays_linearly_to_zero_at_the_default_tolerance(target, expected_score):
    """Seed 000: "`numeric` (relative error decaying linearly to zero at `numeric_tolerance`, default `0.05`)"."""
    rec = score(REFUND, trace(call("issue_refund", amount_usd=100.0)), trace(call("issue_refund", amount_usd=target)),
                fields={"amount_usd": "numeric"})
    assert rec["target_score"] == pytest.approx(expected_score)


def test_numeric_tolerance_is_configurable_and_fields_can_name_their_tool():
    rec = score(REFUND, trace(call("issue_refund", amount_usd=100.0)), trace(call("issue_refund", amount_usd=105.0)),
                fields={"issue_refund.amount_usd": "numeric"}, numeric_tolerance=0.1)
    assert rec["target_score"] == pytest.approx(0.5)
    assert numeric_score(0.0, 0.0, 0.05) == 1.0 and numeric_score(0.0, 1e-9, 0.05) == 0.0


def test_subset_strategy_scores_the_share_of_reference_items_kept():
    rec = score(REFUND, trace(call("issue_refund", tags=["vip", "eu"])), trace(call("issue_refund", tags=["eu", "late"])),
                fields={"tags": "subset"})
    assert rec["target_score"] == 0.5


def test_semantic_strategy_borrows_the_semantic_evaluator_and_degrades_to_exact_without_one():
    """Seed 000: "`semantic` (embedding cosine, borrowing the configured `semantic` evaluator's model and cache — without one it degrades to `exact`)"."""
    src = trace(call("issue_refund", reason="The parcel arrived damaged."))
    tgt = trace(call("issue_refund", reason="The package came broken."))
    alone = score(REFUND, src, tgt, fields={"reason": "semantic"})
    recs = evaluate_pair(REFUND, src, tgt, {"tool_arguments": [{"fields": {"reason": "semantic"}}], "semantic": [{}]})
    borrowed = recs[0]
    assert alone["target_score"] == 0.0
    assert 0.3 < borrowed["target_score"] < 1.0
    unrelated = evaluate_pair(REFUND, src, trace(call("issue_refund", reason="Stock prices rose in Tokyo today.")),
                              {"tool_arguments": [{"fields": {"reason": "semantic"}}], "semantic": [{}]})[0]
    assert unrelated["target_score"] < borrowed["target_score"]


def test_a_field_on_one_side_only_scores_half():
    """Seed 000: "A field present on one side only scores **0.5**, not 0"."""
    rec = score(REFUND, trace(call("issue_refund", order_id="A1")), trace(call("issue_refund", order_id="A1", note="x")))
    assert rec["target_score"] == pytest.approx((1.0 + 0.5) / 2)
    assert rec["metadata"]["fields"][0]["missing"] == "source"


def test_strict_optional_fields_restore_zero():
    """Seed 000: "`optional_fields_scored: strict` restores the harsher 0.0"."""
    rec = score(REFUND, trace(call("issue_refund", order_id="A1", note="x")), trace(call("issue_refund", order_id="A1")),
                optional_fields_scored="strict")
    assert rec["target_score"] == pytest.approx(0.5)


def test_greedy_matches_by_tool_name_and_nearest_sequence_index():
    """Seed 000: "Calls are matched greedily by `(tool_name, nearest sequence_index)`"."""
    src = trace(call("search", q="a"), call("lookup_order", order_id="A1"), call("search", q="b"))
    tgt = trace(call("lookup_order", order_id="A1"), call("search", q="a"), call("search", q="b"))
    rec = score(example("search"), src, tgt)
    # search@0 takes the nearest target search (@1, q=a), search@2 takes @2 (q=b): all equal.
    assert rec["target_score"] == 1.0


def test_optimal_matching_avoids_greedy_false_negatives_on_repeated_tools():
    """One response listing the same calls in another order is the same response: by default
    the calls of a round are assigned optimally; `matching: greedy` keeps the seed's rule."""
    src = trace(call("search", q="a"), call("search", q="b"))
    tgt = trace(call("search", q="b"), call("search", q="a"))
    greedy = score(example("search"), src, tgt, matching="greedy")
    default = score(example("search"), src, tgt)
    assert greedy["target_score"] == 0.0
    assert default["target_score"] == 1.0 and default["labels"] == []


def test_drift_mode_pins_source_score_at_one():
    """Seed 000: "Default drift mode pins `source_score` at 1.0 by construction"."""
    ex = example(expected("issue_refund", {"amount_usd": 12.0}))
    rec = score(ex, trace(call("issue_refund", amount_usd=999.0)), trace(call("issue_refund", amount_usd=12.0)))
    assert rec["source_score"] == 1.0  # a hallucinating source scores a perfect 1.0 forever
    assert rec["metadata"]["against"] == "source"


def test_no_matched_calls_between_source_and_target_is_a_regression():
    """Seed 001: "the tool_arguments evaluator scores a regression when the target doesn't reuse any of the same tool names as the source"."""
    rec = score(REFUND, trace(call("issue_refund", order_id="A1")), trace(call("escalate", order_id="A1")))
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)
    assert rec["metadata"]["reason"] == NO_MATCHED_CALLS == "no matched calls between source and target"
    assert rec["labels"] == ["TOOL_SELECTION_DRIFT"]
    assert rec["skipped"] is False


def test_a_source_without_calls_leaves_nothing_to_drift_from():
    rec = score(REFUND, trace(text="Hi"), trace(call("issue_refund")))
    assert rec["skipped"] is True


def test_against_expected_scores_both_sides_with_union_of_keys():
    """Seed 000: "`against: expected` ... scoring **both** sides against `expected_tools[].arguments`. ... `exact` compares the union"."""
    ex = example(expected("issue_refund", {"order_id": "A1", "amount_usd": 12.0}))
    rec = score(ex, trace(call("issue_refund", order_id="A1", amount_usd=12.0, note="n")),
                trace(call("issue_refund", order_id="A2", amount_usd=12.0)), against="expected")
    assert rec["source_score"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert rec["target_score"] == pytest.approx(0.5)
    [field] = rec["metadata"]["fields"]
    assert field["field"] == "order_id" and field["expected"] == "A1" and field["target"] == "A2"


@pytest.mark.parametrize("strategy", ["subset", "contains_per_field"])
def test_subset_and_contains_per_field_compare_only_recorded_keys(strategy):
    """Seed 000: "`subset` and `contains_per_field` compare only the recorded keys"."""
    ex = example(expected("issue_refund", {"order_id": "A1"}, match_strategy=strategy))
    rec = score(ex, trace(call("issue_refund", order_id="A1", note="extra")), trace(call("issue_refund", order_id="A1")),
                against="expected")
    assert (rec["source_score"], rec["target_score"]) == (1.0, 1.0)


def test_contains_per_field_accepts_a_value_containing_the_recorded_one():
    ex = example(expected("search", {"q": "refund policy"}, match_strategy="contains_per_field"))
    rec = score(ex, trace(call("search", q="refund policy EU")), trace(call("search", q="returns")), against="expected")
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)


def test_an_expected_call_never_made_scores_zero():
    """Seed 000: "An expected call the model never made scores 0"."""
    ex = example(expected("lookup_order", {"order_id": "A1"}), expected("issue_refund", {"order_id": "A1"}))
    rec = score(ex, trace(call("lookup_order", order_id="A1"), call("issue_refund", order_id="A1")),
                trace(call("lookup_order", order_id="A1")), against="expected")
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.5)
    assert rec["metadata"]["missing_calls"] == ["issue_refund"]


def test_no_expected_arguments_is_skipped_neutrally():
    """Seed 000: "an example with no expected arguments is skipped neutrally at 1.0/1.0"."""
    rec = score(example("issue_refund"), trace(call("issue_refund", a=1)), trace(call("issue_refund", a=2)),
                against="expected")
    assert rec["skipped"] is True
    assert (rec["source_score"], rec["target_score"]) == (1.0, 1.0)


def test_rounds_are_graded_separately_and_averaged():
    """Seed 001: "records the mean over replayed rounds, with the per-round detail under metadata.rounds"."""
    src = trace(rounds=[[call("lookup_order", order_id="A1")], [call("issue_refund", amount_usd=12.0)], []])
    tgt = trace(rounds=[[call("lookup_order", order_id="A1")], [call("issue_refund", amount_usd="12")], []])
    rec = score(REFUND, src, tgt)
    rounds = rec["metadata"]["rounds"]
    assert [r.get("skipped", False) for r in rounds] == [False, False, True]  # answer round: no calls
    assert rec["target_score"] == pytest.approx((1.0 + 0.0) / 2)
    assert rec["metadata"]["fields"][0]["round"] == 2


def test_against_expected_uses_each_rounds_own_ground_truth():
    ex = Example(id="r", expected_tool_rounds=[[{"tool_name": "lookup_order", "arguments": {"order_id": "A1"}}],
                                             [{"tool_name": "issue_refund", "arguments": {"amount_usd": 12.0}}]])
    src = trace(rounds=[[call("lookup_order", order_id="A1")], [call("issue_refund", amount_usd=12.0)], []])
    tgt = trace(rounds=[[call("lookup_order", order_id="A1")], [call("issue_refund", amount_usd=13.0)], []])
    rec = score(ex, src, tgt, against="expected")
    assert rec["target_score"] == pytest.approx(0.5)
    assert rec["source_score"] == 1.0


@pytest.mark.parametrize("bad", [{"against": "oracle"}, {"matching": "fuzzy"}, {"numeric_tolerance": -1},
                                 {"optional_fields_scored": "loose"}, {"fields": {"amount_usd": "approx"}}])
def test_bad_settings_are_config_errors(bad):
    with pytest.raises(ConfigError):
        build_evaluators({"tool_arguments": [bad]})


def test_optimal_matching_also_applies_against_expected():
    ex = example(expected("search", {"q": "a"}), expected("search", {"q": "b"}))
    src = trace(call("search", q="a"), call("search", q="b"))
    tgt = trace(call("search", q="b"), call("search", q="a"))
    greedy = score(ex, src, tgt, against="expected", matching="greedy")
    default = score(ex, src, tgt, against="expected")
    assert (greedy["source_score"], greedy["target_score"]) == (1.0, 0.0)
    assert (default["source_score"], default["target_score"]) == (1.0, 1.0)


def test_a_parallel_response_listed_in_another_order_scores_one_in_both_modes():
    """Calls of one model response have no order of their own (BFCL's reordered parallel answers):
    by default they are assigned optimally, in drift mode and against expected alike."""
    ex = example(expected("get_weather", {"city": "Paris"}), expected("get_weather", {"city": "Tokyo"}),
                 expected("get_time", {"tz": "CET"}))
    src = trace(call("get_weather", city="Paris"), call("get_weather", city="Tokyo"), call("get_time", tz="CET"))
    tgt = trace(call("get_time", tz="CET"), call("get_weather", city="Tokyo"), call("get_weather", city="Paris"))
    drift = score(ex, src, tgt)
    conformance = score(ex, src, tgt, against="expected")
    assert (drift["target_score"], drift["labels"]) == (1.0, [])
    assert (conformance["source_score"], conformance["target_score"], conformance["labels"]) == (1.0, 1.0, [])
    assert score(ex, src, tgt, matching="greedy")["target_score"] < 1.0  # the seed's literal rule


def test_a_names_only_expectation_before_one_with_arguments_keeps_its_own_call():
    """Mixed expectations of one tool: the argument-less one matches any call of the tool, so the one
    with arguments still meets the call it describes (it used to shift onto the wrong call)."""
    ex = example(expected("get_x"), expected("get_x", {"a": 1}))
    same = trace(call("get_x"), call("get_x", a=1))
    for matching in ("optimal", "greedy"):
        rec = score(ex, same, same, against="expected", matching=matching)
        assert (rec["source_score"], rec["target_score"], rec["labels"]) == (1.0, 1.0, []), matching
