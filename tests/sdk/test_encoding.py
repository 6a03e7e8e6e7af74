"""The capture line: OTLP/JSON written span by span is the same bytes as the request encoded whole."""

from __future__ import annotations

import json
from types import SimpleNamespace

import orjson
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from evalshift_sdk._exporter import encode_line, encode_request
from evalshift_sdk._spans import CaptureSpan

SAMPLED = TraceFlags(TraceFlags.SAMPLED)
OURS = InstrumentationScope("evalshift_sdk", "0.1.0")
THEIRS = InstrumentationScope("vendor", None)


def _span(name, attributes, *, trace=1, span=2, parent=None, resource=None, scope=OURS, events=(), status=None):
    return ReadableSpan(
        name=name,
        context=SpanContext(trace, span, is_remote=False, trace_flags=SAMPLED),
        parent=None if parent is None else SpanContext(trace, parent, is_remote=False, trace_flags=SAMPLED),
        resource=resource or Resource({"service.name": "agent"}),
        attributes=attributes,
        events=events,
        kind=SpanKind.CLIENT,
        status=status or Status(StatusCode.UNSET),
        start_time=10,
        end_time=20,
        instrumentation_scope=scope,
    )


def test_a_line_groups_spans_by_resource_then_scope_like_the_request():
    a, b = Resource({"service.name": "a"}), Resource({"service.name": "b", "n": 3})
    spans = [
        _span("chat m", {"gen_ai.operation.name": "chat", "x": 1.5, "ok": True}, resource=a, parent=9),
        _span("execute_tool t", {"gen_ai.tool.name": "t", "tags": ["p", "q"]}, span=3, resource=b, scope=THEIRS),
        _span("invoke_agent", {}, span=4, resource=a, scope=THEIRS, status=Status(StatusCode.ERROR, "boom"),
              events=[Event("exception", {"exception.type": "ValueError"}, 15)]),
        _span("chat n", {"n": 2**40}, span=5, resource=a),
    ]
    line = encode_line(spans)
    assert line == orjson.dumps(encode_request(spans))
    decoded = json.loads(line)
    [first, second] = decoded["resourceSpans"]
    assert [s["scope"]["name"] for s in first["scopeSpans"]] == ["evalshift_sdk", "vendor"]
    assert [s["name"] for s in first["scopeSpans"][0]["spans"]] == ["chat m", "chat n"]
    assert first["scopeSpans"][0]["spans"][0]["parentSpanId"] == format(9, "016x")
    assert second["resource"]["attributes"][1] == {"key": "n", "value": {"intValue": "3"}}
    assert first["scopeSpans"][1]["spans"][0]["status"] == {"code": 2, "message": "boom"}


def test_our_own_spans_encode_with_their_ids_and_parent():
    rt = SimpleNamespace(resource=Resource({"service.name": "agent"}), scope=OURS)
    turn = CaptureSpan(rt, "invoke_agent p", None, {"gen_ai.operation.name": "invoke_agent"})
    chat = CaptureSpan(rt, "chat m", turn, {"gen_ai.operation.name": "chat"}, SpanKind.CLIENT)
    turn.end_time = chat.end_time = turn.start_time + 1
    [encoded_chat, encoded_turn] = json.loads(encode_line([chat, turn]))["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert encoded_chat["traceId"] == encoded_turn["traceId"] == format(turn.trace_id, "032x")
    assert encoded_chat["parentSpanId"] == encoded_turn["spanId"] == format(turn.span_id, "016x")
    assert "parentSpanId" not in encoded_turn
    assert encoded_chat["kind"] == 3 and encoded_turn["kind"] == 1  # OTLP: CLIENT, INTERNAL
    assert encode_line([chat, turn]) == orjson.dumps(encode_request([chat, turn]))


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

VALUES = st.one_of(
    st.text(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.text(), max_size=3),
)


@hypothesis.given(st.lists(st.dictionaries(st.text(min_size=1, max_size=12), VALUES, max_size=6), min_size=1, max_size=5))
def test_a_line_is_the_request_serialised_for_any_attributes(attribute_sets):
    spans = [_span(f"s{i}", attrs, span=i + 1, scope=OURS if i % 2 else THEIRS) for i, attrs in enumerate(attribute_sets)]
    assert encode_line(spans) == orjson.dumps(encode_request(spans))
