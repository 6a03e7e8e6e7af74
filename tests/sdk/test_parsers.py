"""Property tests for what turns provider payloads into records: fragments, JSON, messages."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_sdk._jsonsafe import dumps
from evalshift_sdk.instrumentation._genai import parse_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
arguments = st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=5)


def _cuts(text: str, data: st.DataObject) -> list[str]:
    points = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=60, deadline=None)
@given(args=arguments, data=st.data())
def test_openai_streamed_arguments_join_to_the_sent_value(args, data):
    """However the arguments are fragmented across chunks, the record is the parsed whole."""
    from openai.types.chat import ChatCompletionChunk

    from evalshift_sdk.instrumentation.openai import ChatAccumulator

    text = json.dumps(args)
    acc = ChatAccumulator()
    chunks = [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]
    chunks += [{"index": 0, "function": {"arguments": part}} for part in _cuts(text, data)]
    for tc in chunks:
        acc.on_chunk(ChatCompletionChunk.model_validate({
            "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}],
        }))
    [call] = acc.result()["tool_calls"]
    assert call == {"call_id": "call_1", "tool_name": "f", "arguments": args}


@settings(max_examples=60, deadline=None)
@given(args=arguments, data=st.data())
def test_anthropic_input_json_deltas_join_to_the_sent_value(args, data):
    from anthropic.types import RawContentBlockDeltaEvent, RawContentBlockStartEvent

    from evalshift_sdk.instrumentation.anthropic import MessagesAccumulator

    acc = MessagesAccumulator()
    acc.on_chunk(RawContentBlockStartEvent.model_validate(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}
    ))
    for part in _cuts(json.dumps(args), data):
        acc.on_chunk(RawContentBlockDeltaEvent.model_validate(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": part}}
        ))
    assert acc.result()["tool_calls"] == [{"call_id": "toolu_1", "tool_name": "f", "arguments": args}]


@given(value=json_values)
def test_parse_arguments_round_trips_json_and_keeps_other_text(value):
    assert parse_arguments(json.dumps(value)) == value
    assert parse_arguments("not json {") == "not json {"
    assert parse_arguments("") == {}


class _Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("repr fails")

    def model_dump(self, **_: object) -> dict:
        raise RuntimeError("dump fails")


@given(value=json_values, hostile_at=st.integers(0, 3))
def test_dumps_never_raises_and_keeps_json_values(value, hostile_at):
    assert json.loads(dumps(value)) == value
    nested: object = _Hostile()
    for _ in range(hostile_at):
        nested = {"x": [nested, value]}
    json.loads(dumps(nested))  # always valid JSON text, whatever the host put in
