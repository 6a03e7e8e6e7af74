"""Drift records scored against their A/A baseline: the recording, source repeats, an imported baseline."""

from __future__ import annotations

from evaluator_builders import call, example, expected, trace

from evalshift_core import Call, Example, ToolTrace
from evalshift_core.evaluators import evaluate_pair, evaluate_run
from evalshift_core.evaluators._calibration import recording_trace

DRIFT = {"tool_selection": [{"name": "routing", "conformance": "expected", "divergence": "set"}],
         "tool_arguments": [{"name": "args"}]}


def recorded(*expected_tools, model="sim-baseline", **fields) -> Example:
    fields.setdefault("recording", {"model": model})
    return example(*expected_tools, promotion_source="requested", **fields)


def by_name(records):
    return {(r["evaluator"], r["side"]): r for r in records}


def test_a_recording_of_the_source_model_is_the_baseline_of_every_drift_comparison():
    """Source and target are each scored against the recording, the same way: the source replay
    that drifted from the recording scores below 1.0 too, so the paired test compares like with like."""
    ex = recorded(expected("lookup_order", {"order_id": "A1"}), expected("issue_refund", {"amount_usd": 12}))
    source = trace(call("lookup_order", order_id="A1"), call("issue_refund", amount_usd=12.5))
    target = trace(call("lookup_order", order_id="A1"), call("issue_refund", amount_usd=12))
    rows = by_name(evaluate_pair(ex, source, target, DRIFT, source_model="openai:sim-baseline"))
    args = rows[("tool_arguments", None)]
    assert args["metadata"]["baseline"]["kind"] == "recording"
    # against the recording the source's refund call drifted on its one field (mean of two calls: 0.5)
    assert (args["source_score"], args["target_score"]) == (0.5, 1.0)
    assert args["metadata"]["baseline"]["labels"] == ["ARGUMENT_VALUE_DRIFT"]
    assert args["metadata"]["baseline"]["fields"] == {"ARGUMENT_VALUE_DRIFT": ["issue_refund.amount_usd"]}
    divergence = rows[("tool_selection", "divergence")]
    assert divergence["metadata"]["baseline"]["kind"] == "recording"
    # conformance compares both sides with ground truth: calibrated as it is, no baseline key
    assert "baseline" not in rows[("tool_selection", "conformance")]["metadata"]


def test_a_recording_of_another_model_does_not_calibrate_and_says_why():
    ex = recorded(expected("lookup_order", {"order_id": "A1"}), model="gpt-4o")
    rows = evaluate_pair(ex, trace(call("lookup_order", order_id="A1")), trace(call("lookup_order", order_id="B2")),
                         {"tool_arguments": [{"name": "args"}]}, source_model="openai:gpt-4.1")
    assert rows[0]["metadata"]["baseline"] == {"kind": "none", "recording": "recorded from gpt-4o, not the source model"}
    assert (rows[0]["source_score"], rows[0]["target_score"]) == (1.0, 0.0)


def test_a_names_only_recording_calibrates_selection_but_not_arguments():
    ex = recorded("lookup_order")
    rows = by_name(evaluate_pair(ex, trace("lookup_order"), trace("lookup_order"), DRIFT, source_model="sim-baseline"))
    assert rows[("tool_selection", "divergence")]["metadata"]["baseline"]["kind"] == "recording"
    assert rows[("tool_arguments", None)]["metadata"]["baseline"]["recording"] == "recorded tool names only (--names-only)"


def test_a_recording_without_answer_text_cannot_calibrate_text_evaluators():
    ex = recorded("lookup_order")
    [row] = evaluate_pair(ex, trace(text="a"), trace(text="b"), {"text_match": [{"name": "exact"}]},
                          source_model="sim-baseline")
    assert row["metadata"]["baseline"] == {"kind": "none", "recording": "recorded no answer text"}
    ex = recorded("lookup_order", recording={"model": "sim-baseline", "text": "b"})
    [row] = evaluate_pair(ex, trace(text="a"), trace(text="b"), {"text_match": [{"name": "exact"}]},
                          source_model="sim-baseline")
    assert (row["metadata"]["baseline"]["kind"], row["source_score"], row["target_score"]) == ("recording", 0.0, 1.0)


def test_the_recording_trace_has_the_rounds_a_replay_covers():
    ex = recorded(recording={"model": "m", "text": "done", "refusal": None},
                  expected_tool_rounds=[[expected("lookup_order", {"id": 1})], [expected("issue_refund", {"id": 1})], []],
                  tool_result_fixtures=[[{"tool_name": "lookup_order", "result": "ok"}]])
    rec = recording_trace(ex)
    assert rec.round_count == 2
    assert [(c.tool_name, c.round_index) for c in rec.calls] == [("lookup_order", 1), ("issue_refund", 2)]
    assert rec.final_text == "done"
    single = recorded(expected("lookup_order", {"id": 1}), recording={"model": "m"})
    assert recording_trace(single).round_count is None


def test_a_second_source_run_is_the_baseline_when_there_is_no_recording():
    """``baseline=`` (source_repeats' second run): the twin is scored against the first run as the target is."""
    ex = example("lookup_order")
    first = trace(call("lookup_order", order_id="A1"), call("get_customer", id=1))
    second = trace(call("get_customer", id=1), call("lookup_order", order_id="A1"))  # same calls, other order
    target = trace(call("lookup_order", order_id="A1"))
    rows = by_name(evaluate_pair(ex, first, target, DRIFT, baseline=second))
    args = rows[("tool_arguments", None)]
    assert args["metadata"]["baseline"]["kind"] == "source_repeats"
    assert (args["source_score"], args["target_score"]) == (1.0, 0.5)
    divergence = rows[("tool_selection", "divergence")]
    assert (divergence["source_score"], divergence["target_score"]) == (1.0, 0.5)


def test_without_any_baseline_a_drift_record_is_marked_uncalibrated():
    rows = by_name(evaluate_pair(example("a"), trace("a"), trace("b"), DRIFT))
    assert rows[("tool_selection", "divergence")]["metadata"]["baseline"] == {"kind": "none"}
    assert rows[("tool_arguments", None)]["metadata"]["baseline"] == {"kind": "none"}


def test_evaluate_run_reads_source_repeats_from_the_run_rows():
    """Repeats 0..N-2 are the references and the last repeat the twin: with three source runs the
    target and the twin are each averaged over two references."""
    ex = example("a", id="e1")
    rows = [
        Call(example_id="e1", role="source", model="openai:m", trace=trace("a")),
        Call(example_id="e1", role="source", model="openai:m", trace=trace("a", "b"), repeat=1),
        Call(example_id="e1", role="source", model="openai:m", trace=trace("a"), repeat=2),
        Call(example_id="e1", role="target", model="openai:m", trace=trace("a", "b")),
    ]
    [conformance, divergence] = evaluate_run([ex], rows, {"tool_selection": [
        {"name": "routing", "conformance": "expected", "divergence": "set"}]}, progress=False)
    assert divergence.metadata["baseline"]["kind"] == "source_repeats"
    assert divergence.metadata["baseline"]["references"] == 2
    # twin (a) vs references (a), (a, b): 1.0 and 0.5; target (a, b) vs them: 0.5 and 1.0
    assert (divergence.source_score, divergence.target_score) == (0.75, 0.75)
    # the conformance side scores the first source run only
    assert conformance.source_score == 1.0 and "baseline" not in conformance.metadata


def test_a_failed_repeat_leaves_the_other_runs_as_the_baseline():
    ex = example("a", id="e1")
    rows = [
        Call(example_id="e1", role="source", model="openai:m", trace=trace("a")),
        Call(example_id="e1", role="source", model="openai:m", error="round 1/1: 500", repeat=1),
        Call(example_id="e1", role="target", model="openai:m", trace=trace("b")),
    ]
    [record] = evaluate_run([ex], rows, {"tool_selection": [{"name": "d", "mode": "set"}]}, progress=False)
    assert record.metadata["baseline"] == {"kind": "none"}


def test_an_imported_baseline_timeline_calibrates_agent_trace():
    def timeline(*names):
        return {"events": [{"type": "tool_call", "tool_name": n, "arguments": {}} for n in names]}

    config = {"agent_trace": [{"name": "safety", "dangerous_tools": ["delete_record"]}]}
    [uncalibrated] = evaluate_pair(example(), timeline("search", "delete_record"), timeline("delete_record"), config)
    assert uncalibrated["metadata"]["baseline"] == {"kind": "none"}
    [row] = evaluate_pair(example(), timeline("search", "delete_record"), timeline("delete_record"), config,
                          baseline=timeline("search", "delete_record"))
    assert row["metadata"]["baseline"]["kind"] == "imported"
    assert row["source_score"] == 1.0 and row["target_score"] < 1.0


def test_timelines_ignore_replay_repeats():
    """Imported timelines are external loops: the replay's source repeats cannot calibrate them."""
    events = [{"type": "tool_call", "tool_name": "x", "arguments": {}}]
    ex = example(id="e1")
    rows = [Call(example_id="e1", role="source", model="openai:m", trace=ToolTrace()),
            Call(example_id="e1", role="source", model="openai:m", trace=ToolTrace(), repeat=1),
            Call(example_id="e1", role="target", model="openai:m", trace=ToolTrace())]
    [record] = evaluate_run([ex], rows, {"agent_trace": [{"name": "t"}]},
                            timelines={("e1", "source"): events, ("e1", "target"): events}, progress=False)
    assert record.metadata["timeline"] == "imported" and record.metadata["baseline"] == {"kind": "none"}
