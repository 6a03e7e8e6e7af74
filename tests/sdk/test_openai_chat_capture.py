"""The real openai client against the simulator, captured by the SDK into OTLP/JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import evalshift_sdk
from evalshift_sdk.schema import normalise_toolset, toolset_ref

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _lines(directory: Path) -> list[str]:
    return [line for f in sorted(directory.glob("*.jsonl")) for line in f.read_text().splitlines() if line]


def _spans(directory: Path) -> list[dict]:
    return [s for line in _lines(directory) for rs in json.loads(line)["resourceSpans"]
            for ss in rs["scopeSpans"] for s in ss["spans"]]


def _attr(span: dict, key: str):
    for kv in span["attributes"]:
        if kv["key"] == key:
            return next(iter(kv["value"].values()))
    return None


@pytest.fixture
def client(demo_simulator):
    return openai.OpenAI(base_url=demo_simulator.openai_base_url, api_key="sk-test-SECRET-KEY-123")


def _one_turn(client) -> None:
    with evalshift_sdk.turn(prompt_id="support", inputs={"ticket": "where is order L1111?"}, tags=["status"]):
        first = client.chat.completions.create(
            model="sim-baseline",
            messages=[{"role": "user", "content": "Where is my order L1111?"}],
            tools=TOOLS,
            tool_choice="auto",
        )
        call = first.choices[0].message.tool_calls[0]
        evalshift_sdk.record_tool("lookup_order", {"order_id": "L1111"}, result={"status": "shipped"})
        client.chat.completions.create(
            model="sim-baseline",
            messages=[
                {"role": "user", "content": "Where is my order L1111?"},
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "{\"status\": \"shipped\"}"},
            ],
            tools=TOOLS,
        )


def test_every_capture_line_parses_as_export_trace_service_request(capture_dir, client):
    _one_turn(client)
    evalshift_sdk.flush()
    lines = _lines(capture_dir)
    assert lines
    names = []
    for line in lines:
        request = json_format.Parse(line, ExportTraceServiceRequest())
        names += [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert sorted(names) == sorted(
        ["invoke_agent support", "chat sim-baseline", "chat sim-baseline", "execute_tool lookup_order"]
    )


def test_spans_record_offered_requested_executed(capture_dir, client):
    _one_turn(client)
    evalshift_sdk.flush()
    spans = _spans(capture_dir)
    chats = sorted((s for s in spans if s["name"] == "chat sim-baseline"), key=lambda s: int(s["startTimeUnixNano"]))
    ref = toolset_ref(normalise_toolset(TOOLS))
    assert _attr(chats[0], "evalshift.toolset_ref") == ref
    assert json.loads((capture_dir / "toolsets" / (ref.split(":")[1] + ".json")).read_text()) == normalise_toolset(TOOLS)
    requested = json.loads(_attr(chats[0], "evalshift.requested_tool_calls"))
    assert [(c["tool_name"], c["arguments"]) for c in requested] == [("lookup_order", {"order_id": "L1111"})]
    assert json.loads(_attr(chats[0], "evalshift.generation_config")) == {"tool_choice": "auto"}
    tool_span = next(s for s in spans if s["name"] == "execute_tool lookup_order")
    assert _attr(tool_span, "gen_ai.tool.call.id") == requested[0]["call_id"]
    root = next(s for s in spans if s["name"] == "invoke_agent support")
    assert {s["traceId"] for s in spans} == {root["traceId"]}
    assert all(s.get("parentSpanId") == root["spanId"] for s in spans if s is not root)


def test_ids_are_hex_and_enums_integers(capture_dir, client):
    _one_turn(client)
    evalshift_sdk.flush()
    for span in _spans(capture_dir):
        int(span["traceId"], 16)
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        assert isinstance(span["kind"], int)
        assert isinstance(span["status"]["code"], int)


def test_api_key_never_reaches_the_captures(capture_dir, client):
    _one_turn(client)
    evalshift_sdk.flush()
    blob = "".join(p.read_text() for p in capture_dir.rglob("*.json*"))
    assert "SECRET-KEY" not in blob


def test_host_gets_the_same_response_with_and_without_capture(demo_simulator, client, tmp_path):
    def ask():
        r = client.chat.completions.create(
            model="sim-baseline", messages=[{"role": "user", "content": "Where is my order L1111?"}], tools=TOOLS
        )
        return [(c.function.name, c.function.arguments) for c in r.choices[0].message.tool_calls]

    bare = ask()
    evalshift_sdk.init(tmp_path / "c", enabled=True)
    try:
        captured = ask()
    finally:
        evalshift_sdk.shutdown()
    assert bare == captured == [("lookup_order", '{"order_id":"L1111"}')]
