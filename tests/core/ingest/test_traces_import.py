"""``traces import`` validation and storage, and ``evaluate`` over a run on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalshift_core import Call, Example, InputError, RunNotFoundError, ToolCall, ToolTrace
from evalshift_core.evaluators import evaluate
from evalshift_core.ingest._traces import TRACES_FILE, import_traces, load_traces, trace_from_events

RUN_ID = "20261130-000000-abc123"
SAFETY = {"agent_trace": [{"name": "safety", "check_missing_verification": True,
                           "verification_tools": ["confirm_with_user"], "dangerous_tools": ["delete_record"]}]}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A finished run on disk: two examples, both sides replayed, the second failed on target."""
    base = tmp_path / ".evalshift"
    run_dir = base / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"schema_version": 1, "run_id": RUN_ID}))
    examples = [Example(id="ex1", prompt_id="replay", expected_tools=[{"tool_name": "delete_record"}]),
                Example(id="ex2", prompt_id="replay")]
    write_jsonl(run_dir / "examples.jsonl", [e.model_dump(mode="json", exclude_none=True) for e in examples])
    calls = [
        Call(example_id="ex1", role="source", model="openai:a",
             trace=ToolTrace(calls=[ToolCall(tool_name="delete_record", arguments={"id": 7})])),
        Call(example_id="ex1", role="target", model="openai:b",
             trace=ToolTrace(calls=[ToolCall(tool_name="delete_record", arguments={"id": 7})])),
        Call(example_id="ex2", role="source", model="openai:a", trace=ToolTrace(final_text="hi")),
        Call(example_id="ex2", role="target", model="openai:b", error="round 1/1: APITimeoutError: timed out"),
    ]
    write_jsonl(run_dir / "raw.jsonl", [c.model_dump(mode="json", exclude_none=True) for c in calls])
    return base


def timeline(example_id, *names, **extra):
    events = [{"type": "model_call", "round_index": 1, "requested_tool_calls": None, "text": None}]
    for i, n in enumerate(names):
        events.append({"type": "tool_call", "call_id": f"c{i}", "tool_name": n, "arguments": {}})
        events.append({"type": "tool_result", "call_id": f"c{i}", "tool_name": n, "result": "ok", "error": None})
    return {"prompt_id": "replay", "example_id": example_id, "events": events, **extra}


def test_import_stores_one_line_per_prompt_example_role(base, tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", [timeline("ex1", "confirm_with_user", "delete_record")])
    tgt = write_jsonl(tmp_path / "t.jsonl", [timeline("ex1", "delete_record", role="target")])
    out = import_traces(base, RUN_ID, src, tgt)
    assert out.name == TRACES_FILE
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["prompt_id"], r["example_id"], r["role"]) for r in rows] == [("replay", "ex1", "source"),
                                                                           ("replay", "ex1", "target")]
    assert set(load_traces(out.parent)) == {("ex1", "source"), ("ex1", "target")}


@pytest.mark.parametrize(
    "line, field",
    [
        ({"prompt_id": "replay", "events": []}, "example_id"),
        ({"example_id": "ex1"}, "events"),
        ({"example_id": "ex1", "events": [{"type": "llm_call"}]}, "events[0].type"),
        ({"example_id": "ex1", "events": [{"type": "tool_call", "arguments": {}}]}, "events[0].tool_name"),
        ({"example_id": "ex1", "events": [{"type": "tool_call", "tool_name": "x", "arguments": 3}]}, "events[0].arguments"),
        ({"example_id": "ex1", "events": [{"type": "model_call", "round_index": 0}]}, "events[0].round_index"),
        ({"example_id": "ex1", "events": [{"type": "model_call", "requested_tool_calls": [{"arguments": {}}]}]},
         "events[0].requested_tool_calls[0].tool_name"),
        ({"example_id": "ex1", "role": "target", "events": []}, "role"),
        ({"example_id": "nope", "events": []}, "example_id"),
    ],
)
def test_a_bad_line_names_file_line_and_field_and_writes_nothing(base, tmp_path, line, field):
    src = write_jsonl(tmp_path / "s.jsonl", [timeline("ex1"), line])
    tgt = write_jsonl(tmp_path / "t.jsonl", [timeline("ex1")])
    with pytest.raises(InputError) as info:
        import_traces(base, RUN_ID, src, tgt)
    assert (info.value.file, info.value.line, info.value.field) == (str(src), 2, field)
    assert str(info.value).startswith(f"{src}:2: {field}: ")
    assert not (base / "runs" / RUN_ID / TRACES_FILE).exists()


def test_a_second_trace_for_the_same_example_is_rejected(base, tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", [timeline("ex1"), timeline("ex1")])
    tgt = write_jsonl(tmp_path / "t.jsonl", [])
    with pytest.raises(InputError, match="first on line 1"):
        import_traces(base, RUN_ID, src, tgt)


def test_a_failed_import_keeps_what_was_imported_before(base, tmp_path):
    good = write_jsonl(tmp_path / "s.jsonl", [timeline("ex1", "delete_record")])
    out = import_traces(base, RUN_ID, good, write_jsonl(tmp_path / "t.jsonl", []))
    before = out.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(InputError):
        import_traces(base, RUN_ID, good, bad)
    assert out.read_bytes() == before


def test_missing_file_and_missing_run(base, tmp_path):
    with pytest.raises(InputError, match="file not found"):
        import_traces(base, RUN_ID, tmp_path / "none.jsonl", tmp_path / "none.jsonl")
    with pytest.raises(RunNotFoundError):
        import_traces(base, "no-such-run", tmp_path / "a", tmp_path / "b")


def test_evaluate_writes_scores_and_feeds_imported_timelines_to_agent_trace(base, tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", [timeline("ex1", "confirm_with_user", "delete_record")])
    tgt = write_jsonl(tmp_path / "t.jsonl", [timeline("ex1", "delete_record")])
    import_traces(base, RUN_ID, src, tgt)
    scores = evaluate(base, RUN_ID, {**SAFETY, "tool_selection": [{}]}, progress=False)
    rows = [json.loads(line) for line in (base / "runs" / RUN_ID / "scores.jsonl").read_text().splitlines()]
    assert rows == [s.model_dump(mode="json") for s in scores]
    # ex2's target failed: a partially replayed example is unmeasured, not half-scored
    assert {r["example_id"] for r in rows} == {"ex1"}
    safety = next(r for r in rows if r["evaluator"] == "agent_trace")
    assert safety["metadata"]["timeline"] == "imported"
    assert "MISSING_VERIFICATION_STEP" in safety["labels"]
    assert list(safety) == ["example_id", "evaluator", "name", "side", "source_score", "target_score", "skipped",
                            "labels", "metadata"]


def test_trace_from_events_reads_rounds_from_model_calls():
    events = [
        {"type": "model_call", "round_index": 1, "requested_tool_calls": [{"tool_name": "lookup_order", "arguments": {}}]},
        {"type": "tool_call", "tool_name": "lookup_order", "arguments": {}},
        {"type": "model_call", "round_index": 2, "requested_tool_calls": [], "text": "Done.", "refusal": None},
    ]
    trace = trace_from_events(events)
    assert trace.round_count == 2
    assert [c.round_index for c in trace.calls] == [1]
    assert trace.final_text == "Done."
