"""``evaluate_pair`` and ``evaluate_run``: the Python surfaces over one pair and over a run."""

from __future__ import annotations

import pytest
from evaluator_builders import call, example, trace

import evalshift_core
from evalshift_core import Call, ConfigError
from evalshift_core.evaluators import (
    LABELS,
    REGISTRY,
    build_evaluators,
    evaluate_pair,
    evaluate_run,
)

RECORD_KEYS = ["example_id", "evaluator", "name", "side", "source_score", "target_score", "skipped", "labels", "metadata"]


def test_evaluate_pair_accepts_plain_dicts_in_the_on_disk_shape():
    ex = {"id": "ex_security_01", "inputs": {"query": "..."}, "tags": ["security"],
          "expected_tools": [{"tool_name": "notify_security_team"}]}
    src = {"calls": [{"tool_name": "notify_security_team", "arguments": {}}]}
    tgt = {"calls": [], "final_text": "Please reset your password."}
    records = evalshift_core.evaluate_pair(ex, src, tgt, evaluators={"tool_selection": [{"name": "routing"}]})
    [rec] = records
    assert list(rec) == RECORD_KEYS
    assert (rec["example_id"], rec["evaluator"], rec["name"]) == ("ex_security_01", "tool_selection", "routing")
    assert rec["labels"] == ["TOOL_SELECTION_DRIFT"]


def test_evaluate_pair_returns_one_record_per_configured_evaluator_and_side():
    config = {"tool_selection": [{"conformance": "expected", "divergence": "set"}], "tool_arguments": [{}],
              "tool_trace_structure": [{}], "agent_trace": [{}], "text_match": [{}]}
    records = evaluate_pair(example("a"), trace(call("a", x=1)), trace(call("a", x=1)), config)
    assert [(r["evaluator"], r["side"]) for r in records] == [
        ("tool_selection", "conformance"), ("tool_selection", "divergence"), ("tool_arguments", None),
        ("tool_trace_structure", None), ("agent_trace", None), ("text_match", None)]


def test_evaluate_pair_accepts_call_rows():
    src = Call(example_id="ex1", role="source", model="openai:a", trace=trace("a")).model_dump(mode="json")
    tgt = Call(example_id="ex1", role="target", model="openai:b", trace=trace("b"))
    [rec] = evaluate_pair(example("a"), src, tgt)
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)


def test_evaluate_run_skips_examples_whose_call_failed():
    """Seed 001: "a partially replayed example is unmeasured, not half-scored"."""
    calls = [
        Call(example_id="ex1", role="source", model="m", trace=trace("a")),
        Call(example_id="ex1", role="target", model="m", error="round 2/3: APIError: boom"),
        Call(example_id="ex2", role="source", model="m", trace=trace("a")),
        Call(example_id="ex2", role="target", model="m", trace=trace("a")),
    ]
    records = evaluate_run([example("a", id="ex1"), example("a", id="ex2")], calls, {"tool_selection": [{}]},
                           progress=False)
    assert [r.example_id for r in records] == ["ex2"]


def test_every_evaluator_is_one_registry_line():
    assert set(REGISTRY) == {"tool_selection", "tool_arguments", "tool_trace_structure", "agent_trace", "semantic",
                             "llm_judge", "text_match"}
    assert all(cls.type_name == name for name, cls in REGISTRY.items())


def test_labels_cover_the_seed_list():
    """Seed 000: "`TOOL_SELECTION_DRIFT`, `ARGUMENT_VALUE_DRIFT`, `TOOL_TRACE_STRUCTURE_DRIFT`, `TOOL_ORDER_DRIFT`, `DANGEROUS_ACTION_DRIFT`, `MISSING_VERIFICATION_STEP`, `UNNECESSARY_TOOL_CALL`, `REFUSAL_REGRESSION`, alongside the text-side ones"."""
    assert {"TOOL_SELECTION_DRIFT", "ARGUMENT_VALUE_DRIFT", "TOOL_TRACE_STRUCTURE_DRIFT", "TOOL_ORDER_DRIFT",
            "DANGEROUS_ACTION_DRIFT", "MISSING_VERIFICATION_STEP", "UNNECESSARY_TOOL_CALL", "REFUSAL_REGRESSION",
            "TOOL_GROUND_TRUTH_MISS", "TEXT_DRIFT", "EMPTY_RESPONSE"} | {"ARGUMENT_SCHEMA_VIOLATION"} == set(LABELS)


def test_two_instances_with_one_name_are_a_config_error():
    with pytest.raises(ConfigError, match="named"):
        build_evaluators({"tool_selection": [{"name": "routing"}, {"name": "routing", "mode": "set"}]})


@pytest.mark.parametrize("type_name", ["tool_selection", "tool_arguments", "tool_trace_structure", "agent_trace"])
def test_single_shot_pairs_carry_no_rounds_key_on_any_tool_evaluator(type_name):
    """Seed 001: "Single-shot pairs render exactly as before and carry no rounds key"."""
    [rec] = evaluate_pair(example("a"), trace(call("a", x=1)), trace(call("a", x=2)), {type_name: [{}]})
    assert "rounds" not in rec["metadata"]


@pytest.mark.parametrize("type_name", ["tool_selection", "tool_arguments", "tool_trace_structure"])
def test_multi_round_pairs_carry_per_round_detail_on_every_replayed_round(type_name):
    [rec] = evaluate_pair(example("a"), trace(rounds=[[call("a", x=1)], []]), trace(rounds=[[call("a", x=1)], []]),
                          {type_name: [{}]})
    assert [r["round"] for r in rec["metadata"]["rounds"]] == [1, 2]


def test_evaluate_run_shows_progress_when_asked(capsys):
    """design.md: "Long work (run, sync over many files, evaluate over big suites) shows progress"."""
    calls = [Call(example_id="ex1", role=role, model="m", trace=trace("a")) for role in ("source", "target")]
    evaluate_run([example("a", id="ex1")], calls, {"tool_selection": [{}]}, progress=True)
    assert "evaluate" in capsys.readouterr().err
