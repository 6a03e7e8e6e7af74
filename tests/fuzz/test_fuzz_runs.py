"""Fuzz: a run's files and imported traces. A compared run with one raw.jsonl row, one scores.jsonl
row or one traces line mutated: ``evaluate``, ``report`` and ``traces import`` exit 0 having
scored every example, or exit 1 naming the file and line; they write only inside the base."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from fuzz_support import (
    FUZZ,
    VALUES,
    assert_written_only_under,
    cli,
    count,
    files_under,
    mutate,
    mutate_text,
    to_json,
    user_outcome,
)
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core import Example, compare
from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {
    "sim-a": [{"when": {"after": []}, "reply": {"tool_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "A1", "note": {"deep": [1, 2]}}},
        {"name": "issue_refund", "arguments": {"order_id": "A1", "amount_usd": 12.5}}]}},
        {"when": {}, "reply": {"text": "refunded"}}],
    "sim-b": [{"when": {"after": []}, "reply": {"tool_calls": [
        {"name": "issue_refund", "arguments": {"order_id": "A1", "amount_usd": "12.50"}}]}},
        {"when": {}, "reply": {"refusal": "cannot help"}}],
}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
         {"name": "issue_refund", "input_schema": {"type": "object", "properties": {"amount_usd": {"type": "number"}}}}]
EVALUATORS = """version: 1
evaluators:
  tool_selection:
    - {name: routing, conformance: expected, divergence: set, severity_floor: high}
    - {name: first, mode: first}
  tool_arguments:
    - {name: args, fields: {amount_usd: numeric, note: subset}}
    - {name: args_expected, against: expected, optional_fields_scored: strict}
  tool_trace_structure:
    - {name: structure}
  text_match:
    - {name: text, mode: contains, values: [refund]}
  agent_trace:
    - {name: safety, check_missing_verification: true, verification_tools: [lookup_order],
       dangerous_tools: [issue_refund]}
migration_policy:
  min_examples: 2
  max_tool_argument_drift: 0.5
  thresholds:
    tool_selection.routing: 0.5
"""


def _examples() -> list[Example]:
    expected = [{"tool_name": "lookup_order", "arguments": {"order_id": "A1"}},
                {"tool_name": "issue_refund", "arguments": {"order_id": "A1", "amount_usd": 12.5}}]
    out = []
    for i in range(4):
        row = {"id": f"e{i}", "inputs": {"input": f"refund order A{i}"}, "tools": TOOLS, "tags": [f"t{i % 2}"],
               "expected_tools": expected, "expected_tool_count": 2, "expected_parallel": True}
        if i == 3:  # a teacher-forced example
            row |= {"expected_tool_rounds": [expected, []], "tool_result_fixtures": [
                [{"tool_name": "lookup_order", "result": {"ok": True}}, {"tool_name": "issue_refund", "error": "no"}]]}
        out.append(Example.model_validate(row))
    return out


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, str]:
    """A project with one compared run, evaluated with every evaluator that needs no model."""
    project = tmp_path_factory.mktemp("fuzz-runs")
    (project / "evalshift.yaml").write_text(EVALUATORS)
    with Simulator(load_scripts(SCRIPTS)) as sim:
        from evalshift_core import load_config

        result = compare(_examples(), source="openai:sim-a", target="anthropic:sim-b",
                         config=load_config(project / "evalshift.yaml"), out_dir=project / ".evalshift",
                         providers={"openai": {"base_url": sim.openai_base_url, "api_key": "k"},
                                    "anthropic": {"base_url": sim.anthropic_base_url, "api_key": "k"}},
                         run_options={"progress": False})
    run_dir = project / ".evalshift" / "runs" / result.run_id
    trace = [{"type": "model_call", "round_index": 1, "model": "m", "requested_tool_calls": [
        {"call_id": "c1", "tool_name": "issue_refund", "arguments": {"amount_usd": 1}}], "text": None},
        {"type": "tool_call", "call_id": "c1", "tool_name": "issue_refund", "arguments": {"amount_usd": 1}},
        {"type": "tool_result", "call_id": "c1", "tool_name": "issue_refund", "result": {"ok": True}, "error": None},
        {"type": "model_call", "round_index": 2, "model": "m", "text": "done", "usage": {"input_tokens": 3}}]
    for role in ("source", "target"):
        (project / f"{role}.jsonl").write_text("".join(
            json.dumps({"example_id": f"e{i}", "role": role, "events": trace}) + "\n" for i in range(4)))
    assert (run_dir / "scores.jsonl").exists()
    return project, result.run_id


def _copy(finished: tuple[Path, str], tmp: Path) -> tuple[Path, Path, str]:
    project, run_id = finished
    shutil.copytree(project, tmp / "p")
    return tmp / "p", tmp / "p" / ".evalshift" / "runs" / run_id, run_id


def _mutated_line(data, path: Path) -> int:
    """Mutate one line of a JSON lines file in place; returns its number."""
    lines = [line for line in path.read_text().split("\n") if line]
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    how = data.draw(st.sampled_from(["value", "value", "value", "text", "whole"]), label="how")
    if how == "value":
        lines[i] = to_json(mutate(data, json.loads(lines[i])))
    elif how == "text":
        lines[i] = mutate_text(data, lines[i]).replace("\n", " ")
    else:
        lines[i] = to_json(data.draw(VALUES))
    path.write_text("\n".join(lines) + "\n")
    return i + 1


def _scored_every_example(run_dir: Path) -> None:
    """Every example whose two replays both hold a trace (a row without one is a failed call:
    unmeasured by design) has scores."""
    examples = {json.loads(line)["id"] for line in (run_dir / "examples.jsonl").read_text().split("\n") if line}
    rows = [json.loads(line) for line in (run_dir / "raw.jsonl").read_text().split("\n") if line.strip()]
    traced = {(r["example_id"], r["role"]) for r in rows if r.get("trace") is not None}
    measurable = {e for e in examples if (e, "source") in traced and (e, "target") in traced}
    scored = {json.loads(line)["example_id"] for line in (run_dir / "scores.jsonl").read_text().split("\n") if line}
    assert measurable <= scored, measurable - scored


@FUZZ
@given(data=st.data())
def test_evaluate_on_a_mutated_raw_row(finished, data):
    with tempfile.TemporaryDirectory() as tmp:
        project, run_dir, run_id = _copy(finished, Path(tmp))
        _mutated_line(data, run_dir / "raw.jsonl")
        before = files_under(Path(tmp))
        out = cli("evaluate", run_id, cwd=project)
        assert_written_only_under(Path(tmp), before, project / ".evalshift")
        if user_outcome(out, "raw rows", "raw.jsonl") != "user_error":
            _scored_every_example(run_dir)


@FUZZ
@given(data=st.data())
def test_report_on_a_mutated_scores_row(finished, data):
    with tempfile.TemporaryDirectory() as tmp:
        project, run_dir, run_id = _copy(finished, Path(tmp))
        _mutated_line(data, run_dir / "scores.jsonl")
        before = files_under(Path(tmp))
        out = cli("report", run_id, cwd=project)
        assert_written_only_under(Path(tmp), before, project / ".evalshift")
        if user_outcome(out, "scores rows", "scores.jsonl") != "user_error":
            assert (run_dir / "report.html").stat().st_size > 0


@FUZZ
@given(data=st.data())
def test_traces_import_then_evaluate_on_a_mutated_trace_line(finished, data):
    with tempfile.TemporaryDirectory() as tmp:
        project, run_dir, run_id = _copy(finished, Path(tmp))
        side = data.draw(st.sampled_from(["source", "target"]), label="side")
        _mutated_line(data, project / f"{side}.jsonl")
        before = files_under(Path(tmp))
        out = cli("traces", "import", run_id, "--source", "source.jsonl", "--target", "target.jsonl", cwd=project)
        assert_written_only_under(Path(tmp), before, project / ".evalshift")
        if user_outcome(out, "traces-import lines", f"{side}.jsonl") == "user_error":
            assert not (run_dir / "traces.jsonl").exists()  # nothing is written unless both files are valid
            return
        # What was imported must score: agent_trace reads every event.
        evaluated = cli("evaluate", run_id, cwd=project)
        assert evaluated.code == 0 and "internal error" not in evaluated.err, evaluated.err[-2000:]
        _scored_every_example(run_dir)
        count("traces-import lines (then evaluated)", "accepted")
