"""Known answers for ``tool_trace_structure``: call count, parallelism, counts and refusals."""

from __future__ import annotations

import pytest
from evaluator_builders import example, trace

from evalshift_core import ConfigError, Example
from evalshift_core.evaluators import build_evaluators, evaluate_pair


def score(ex, src, tgt, **config):
    [rec] = evaluate_pair(ex, src, tgt, {"tool_trace_structure": [config]})
    return rec


ONLY_COUNT = {"check_parallelism": False, "check_refusals": False}


@pytest.mark.parametrize("n_target, ok", [(2, True), (3, True), (1, True), (4, False), (0, False)])
def test_call_count_drift_within_the_default_tolerance_of_one(n_target, ok):
    """Seed 000: "Call-count drift within `call_count_tolerance` (default 1)"."""
    rec = score(example(), trace("a", "b"), trace(*["a"] * n_target), **ONLY_COUNT)
    assert rec["target_score"] == (1.0 if ok else 0.0)
    assert rec["source_score"] == 1.0
    assert ("TOOL_TRACE_STRUCTURE_DRIFT" in rec["labels"]) is (not ok)


def test_call_count_tolerance_is_configurable():
    rec = score(example(), trace("a", "b"), trace("a", "b", "c"), call_count_tolerance=0, **ONLY_COUNT)
    assert rec["target_score"] == 0.0
    assert rec["metadata"]["failed"] == ["call_count"]


def test_parallelism_must_match():
    """Seed 000: "parallelism match" — a parallel fan-out on one side, sequential on the other."""
    rec = score(example(), trace("search", "search"), trace("search"), check_call_count=False, check_refusals=False)
    assert rec["target_score"] == 0.0
    assert rec["metadata"]["failed"] == ["parallelism"]


def test_expected_tool_count_when_set():
    """Seed 000: "`expected_tool_count` when set"."""
    ex = Example(id="e", expected_tool_count=1)
    rec = score(ex, trace("lookup_order"), trace("lookup_order", "lookup_order", "lookup_order"), **ONLY_COUNT)
    # drift component 0 (3 vs 1 > tolerance), expected-count component: source 1, target 0
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)
    assert rec["metadata"]["failed"] == ["call_count", "expected_tool_count"]


def test_expected_parallel_when_set():
    ex = Example(id="e", expected_parallel=True)
    rec = score(ex, trace("a"), trace("a"), check_call_count=False, check_refusals=False)
    assert (rec["source_score"], rec["target_score"]) == (0.5, 0.5)  # both issued one call, not a fan-out


@pytest.mark.parametrize("source_refusal, target_refusal", [(None, "I can't help with that."), ("I won't.", None)])
def test_a_refusal_mismatch_is_a_refusal_regression_of_at_least_high(source_refusal, target_refusal):
    """Seed 000: "a refusal mismatch forces severity to at least `high` and flags `REFUSAL_REGRESSION`"."""
    rec = score(example(), trace(text="ok", refusal=source_refusal), trace(text="ok", refusal=target_refusal),
                check_call_count=False, check_parallelism=False)
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)
    assert rec["labels"] == ["REFUSAL_REGRESSION"]
    assert rec["metadata"]["min_severity"] == "high"


def test_each_check_toggles_off_independently():
    """Seed 000: "Each check toggles off independently via `check_call_count`, `check_parallelism`, `check_refusals`"."""
    src, tgt = trace("a", refusal=None), trace("a", "a", "a", "a", refusal="no")
    assert score(example(), src, tgt)["target_score"] == 0.0
    assert score(example(), src, tgt, check_call_count=False, check_refusals=False)["target_score"] == 0.0
    assert score(example(), src, tgt, check_parallelism=False, check_refusals=False)["target_score"] == 0.0
    assert score(example(), src, tgt, check_call_count=False, check_parallelism=False)["target_score"] == 0.0
    assert score(example(), trace("a"), trace("a", "b"), check_call_count=True, check_parallelism=False,
                 check_refusals=False)["target_score"] == 1.0
    with pytest.raises(ConfigError):
        build_evaluators({"tool_trace_structure": [{"check_call_count": False, "check_parallelism": False,
                                                     "check_refusals": False}]})


def test_rounds_are_graded_separately():
    """Seed 001: per-round scoring with the detail under metadata.rounds."""
    src = trace(rounds=[["a"], ["b"], []])
    tgt = trace(rounds=[["a"], ["b", "b", "b"], []])
    rec = score(example(), src, tgt, **ONLY_COUNT)
    assert [r["target_score"] for r in rec["metadata"]["rounds"]] == [1.0, 0.0, 1.0]
    assert rec["target_score"] == pytest.approx(2 / 3)
