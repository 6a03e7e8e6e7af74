"""Spans of a dialect nothing reads are counted and named, never dropped in silence."""

from __future__ import annotations

from pathlib import Path

from _capture_agent import write_spans

from evalshift_core.promote._sync import promote_files, sync


def _span(trace: str, span: str, parent: str | None, name: str, attrs: dict[str, str], start: int) -> dict:
    return {"traceId": trace * 32, "spanId": span * 16, **({"parentSpanId": parent * 16} if parent else {}),
            "name": name, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 10),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def _llm_turn() -> list[dict]:
    """A turn with one OpenInference LLM span and an HTTP span beside it: recognised."""
    llm = {"openinference.span.kind": "LLM", "llm.model_name": "m",
           "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi",
           "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "hello"}
    return [_span("c", "3", "1", "ChatCompletion", llm, 20), _span("c", "4", "1", "POST", {"http.method": "POST"}, 25),
            _span("c", "1", None, "agent", {"openinference.span.kind": "AGENT"}, 10)]


def _unknown_turns() -> list[dict]:
    """Two traces of an unknown dialect: a root with two children, and a lone root (4 spans)."""
    return [_span("a", "2", "1", "call_llm", {"vendor.prompt": "hi"}, 20),
            _span("a", "3", "1", "call_llm", {"vendor.prompt": "again"}, 30),
            _span("a", "1", None, "request", {"http.route": "/chat"}, 10),
            _span("b", "1", None, "request", {"http.route": "/chat"}, 40)]


def test_sync_counts_spans_of_turns_with_no_model_call(tmp_path: Path):
    captures = tmp_path / "captures"
    write_spans(captures / "mixed.jsonl", _llm_turn() + _unknown_turns(), scope="vendor")
    result = sync(captures, base=tmp_path / "base", suite_name="s")
    assert result.added == 1  # the OpenInference turn
    # The HTTP span inside the recognised turn is not counted; the other four are.
    assert result.unrecognised == 4
    assert result.unrecognised_source == f"{captures / 'mixed.jsonl'}:4"
    assert result.unrecognised_line() == (
        f"4 spans recognised as no model call: first at {captures / 'mixed.jsonl'}:4 "
        "(no evalshift, GenAI-semconv or OpenInference model-call span in their turn)")


def test_promote_counts_them_too_and_a_clean_file_reports_nothing(tmp_path: Path):
    unknown = tmp_path / "unknown.jsonl"
    write_spans(unknown, _unknown_turns()[3:], scope="vendor")
    result = promote_files([unknown], base=tmp_path / "base", suite_name="s")
    assert (result.added, result.unrecognised) == (0, 1)
    assert result.unrecognised_line().startswith(f"1 span recognised as no model call: first at {unknown}:1 ")
    clean = tmp_path / "clean.jsonl"
    write_spans(clean, _llm_turn(), scope="vendor")
    result = promote_files([clean], base=tmp_path / "base2", suite_name="s")
    assert (result.added, result.unrecognised, result.unrecognised_line()) == (1, 0, None)



def test_the_sdk_own_captures_report_none(tmp_path: Path):
    """No false alarm on evalshift_sdk's own turns (tool executions, several rounds)."""
    from _capture_agent import POLICY_TICKET, REFUND_TICKET, capture_turns, simulator

    with simulator() as sim:
        capture_turns(tmp_path / "captures", sim, [("sim-baseline", REFUND_TICKET), ("sim-baseline", POLICY_TICKET)])
    result = sync(tmp_path / "captures", base=tmp_path / "base")
    assert result.added == 2 and result.spans > 2
    assert (result.unrecognised, result.unrecognised_line()) == (0, None)
