"""OpenInference's flattened attributes, read by hand-written known answers and by hypothesis."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core.ingest._captures import build_capture
from evalshift_core.ingest._openinference import NOTE_NO_CONTENT, model_call_event, tool_events
from evalshift_core.ingest._otlp import Span
from evalshift_sdk.schema import normalise_toolset, toolset_ref

TOOL = {"type": "function", "function": {"name": "lookup_order", "description": "Look up an order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}


def _span(span_id: str, parent: str | None, attrs: dict, start: int, end: int, status: int = 0) -> Span:
    raw = {"traceId": "a" * 32, "spanId": span_id * 16, "name": "x", "startTimeUnixNano": start,
           "endTimeUnixNano": end, "status": {"code": status}}
    if parent:
        raw["parentSpanId"] = parent * 16
    span = Span(raw, "openinference.instrumentation.openai", f"f.jsonl:{start}")
    span._attrs = attrs
    return span


LLM_1 = {
    "openinference.span.kind": "LLM", "llm.provider": "openai", "llm.system": "openai",
    "llm.model_name": "gpt-x-2025", "llm.invocation_parameters": '{"model": "gpt-x", "temperature": 0.2, '
    '"tool_choice": "auto", "max_completion_tokens": 9}',
    "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Be brief.",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.contents.0.message_content.type": "text",
    "llm.input_messages.1.message.contents.0.message_content.text": "Where is A1001?",
    "llm.tools.0.tool.json_schema": '{"type": "function", "function": {"name": "lookup_order", '
    '"description": "Look up an order.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}',
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order_id": "A1001"}',
    "llm.token_count.prompt": 40, "llm.token_count.completion": 7,
}
TOOL_SPAN = {"openinference.span.kind": "TOOL", "tool.name": "lookup_order", "tool_call.id": "call_1",
             "tool.parameters": '{"type": "object"}', "input.value": '{"order_id": "A1001"}',
             "output.value": '{"status": "shipped"}'}
LLM_2 = {
    "openinference.span.kind": "LLM", "llm.model_name": "gpt-x-2025",
    "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Where is A1001?",
    # Anthropic's instrumentation writes a tool_use block under contents only in some versions.
    "llm.input_messages.1.message.role": "assistant",
    "llm.input_messages.1.message.contents.0.message_content.type": "tool_use",
    "llm.input_messages.1.message.contents.0.tool_call.id": "call_1",
    "llm.input_messages.1.message.contents.0.tool_call.function.name": "lookup_order",
    "llm.input_messages.1.message.contents.0.tool_call.function.arguments": '{"order_id": "A1001"}',
    "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.tool_call_id": "call_1",
    "llm.input_messages.2.message.content": '{"status": "shipped"}',
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.contents.0.message_content.type": "text",
    "llm.output_messages.0.message.contents.0.message_content.text": "It has shipped.",
}


def test_a_turn_of_openinference_spans_reads_into_events_in_order():
    spans = [_span("2", "1", LLM_1, 10, 20), _span("3", "1", TOOL_SPAN, 21, 25), _span("4", "1", LLM_2, 26, 30),
             _span("5", "1", {"http.method": "POST"}, 12, 18),
             _span("1", None, {"openinference.span.kind": "AGENT", "agent.name": "support"}, 5, 40)]
    capture = build_capture(spans)
    assert capture is not None and capture.prompt_id == "support"
    assert [(e["type"], e.get("tool_name")) for e in capture.events] == [
        ("model_call", None), ("tool_call", "lookup_order"), ("tool_result", "lookup_order"), ("model_call", None)]
    first, call, result, second = capture.events
    assert first["messages"] == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Where is A1001?"}]}]
    assert first["requested_tool_calls"] == [{"call_id": "call_1", "tool_name": "lookup_order",
                                              "arguments": {"order_id": "A1001"}}]
    assert (first["model"], first["request_model"], first["provider"]) == ("gpt-x-2025", "gpt-x", "openai")
    # Known generation keys only: max_completion_tokens has no generation_config name.
    assert first["generation_config"] == {"temperature": 0.2, "tool_choice": "auto"}
    assert first["usage"] == {"input_tokens": 40, "output_tokens": 7}
    tools = normalise_toolset([TOOL])
    assert first["toolset_ref"] == toolset_ref(tools) and capture.toolsets == {toolset_ref(tools): tools}
    assert call == {"type": "tool_call", "call_id": "call_1", "tool_name": "lookup_order",
                    "arguments": {"order_id": "A1001"}}
    assert result == {"type": "tool_result", "call_id": "call_1", "tool_name": "lookup_order",
                      "result": {"status": "shipped"}, "error": None}
    assert second["messages"][1:] == [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "lookup_order",
                                         "arguments": {"order_id": "A1001"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": '{"status": "shipped"}'}]}]
    assert (second["requested_tool_calls"], second["text"]) == ([], "It has shipped.")
    assert capture.notes == []


def test_what_a_span_did_not_record_is_said():
    event, tools, notes = model_call_event(_span("2", None, {"openinference.span.kind": "LLM"}, 1, 2), 1)
    assert event["messages"] == [] and event["requested_tool_calls"] is None and tools is None
    assert NOTE_NO_CONTENT in notes and any("no model response" in n for n in notes)
    failed = _span("3", None, {**TOOL_SPAN, "exception.message": "timeout"}, 1, 2, status=2)
    assert tool_events(failed)[1]["error"] == "timeout"


def test_chain_and_agent_spans_alone_are_no_model_call():
    spans = [_span("2", "1", {"openinference.span.kind": "CHAIN"}, 2, 3),
             _span("1", None, {"openinference.span.kind": "AGENT"}, 1, 4)]
    assert build_capture(spans) is None


_KEYS = st.sampled_from([
    "openinference.span.kind", "llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.name",
    "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments",
    "llm.input_messages.2.message.tool_call_id", "llm.input_messages.x.message.role",
    "llm.input_messages.0.message.contents.0.message_content.text",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.1.tool_call.id", "llm.output_messages.0.message.content",
    "llm.tools.0.tool.json_schema", "llm.tools.1.tool.json_schema", "llm.invocation_parameters",
    "llm.model_name", "llm.provider", "llm.token_count.prompt",
])
_VALUES = st.one_of(st.text(max_size=8), st.integers(), st.none(), st.just("[]"), st.just("{}"),
                    st.just('{"name": "t", "parameters": 3}'), st.just('{"type": "function"}'),
                    st.just('{"temperature": 0.1, "tool_choice": "auto"}'))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8))
def test_openinference_attributes_never_break_ingest(attrs):
    """Whatever an OpenInference writer recorded, reading it yields events or says what is missing."""
    span = Span({"traceId": "1" * 32, "spanId": "2" * 16, "name": "ChatCompletion"}, "other", "f:1")
    span._attrs = {k: v for k, v in attrs.items() if v is not None}
    event, tools, notes = model_call_event(span, 1)
    assert event["type"] == "model_call" and isinstance(notes, list)
    assert tools is None or event["toolset_ref"].startswith("sha256:")
    for m in event["messages"]:
        assert isinstance(m["role"], str) and isinstance(m["parts"], list)
    call, result = tool_events(span)
    assert call["type"] == "tool_call" and result["type"] == "tool_result" and isinstance(call["tool_name"], str)


_OTLP_VALUES = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.text(max_size=10) | st.sampled_from(["[]", "{}", "null", '{"a": 1}'])),
    st.builds(lambda v: {"intValue": v}, st.integers().map(str)), st.builds(lambda v: {"boolValue": v}, st.booleans()),
    st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(st.builds(lambda t: {"stringValue": t}, st.text(max_size=4)),
                                                                max_size=2)),
)


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(sorted({**LLM_1, **TOOL_SPAN, **LLM_2})), value=_OTLP_VALUES, span=st.integers(0, 2))
def test_sync_of_an_openinference_turn_with_any_attribute_value_never_fails(tmp_path_factory, key, value, span):
    """One attribute of a real-shaped OpenInference turn set to anything: sync finishes and says why."""
    from _capture_agent import write_spans

    from evalshift_core.promote._sync import sync

    def otlp(span_id: str, parent: str | None, attrs: dict, start: int) -> dict:
        out = [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
               for k, v in attrs.items()]
        return {"traceId": "a" * 32, "spanId": span_id * 16, **({"parentSpanId": parent * 16} if parent else {}),
                "name": "x", "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5), "attributes": out}

    turn = [otlp("2", "1", LLM_1, 10), otlp("3", "1", TOOL_SPAN, 20), otlp("4", "1", LLM_2, 30),
            otlp("1", None, {"openinference.span.kind": "AGENT"}, 5)]
    for attr in turn[span]["attributes"]:
        if attr["key"] == key:
            attr["value"] = value
    tmp = tmp_path_factory.mktemp("oi")
    write_spans(tmp / "captures" / "oi.jsonl", turn, scope="openinference")
    result = sync(tmp / "captures", base=tmp / "base", suite_name="s", rounds="all")
    assert result.added + result.quarantined + (result.unrecognised > 0) == 1
