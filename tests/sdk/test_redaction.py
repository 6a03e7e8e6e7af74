"""Nothing leaves the SDK without passing ``redact=``: attributes, status messages (the host's
exception text, a provider's 401 quoting the key), events and resource attributes, in the
capture files and in every OTLP/HTTP request body; credentials are stripped from any text."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sdk_support import read_spans

import evalshift_sdk
from evalshift_sdk._scrub import scrub

MARKER = "MARKER7f3a"
"""What the redact hook removes: the stand-in for a customer's data or a secret."""
KEY = f"sk-proj-{MARKER}0123456789abcdefXYZ"
"""An API key holding the marker, which the provider's 401 quotes back."""


class Collector:
    """A loopback OTLP/HTTP collector keeping every raw request body it is posted."""

    def __init__(self) -> None:
        bodies = self.bodies = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests(self) -> list[Any]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        return [ExportTraceServiceRequest.FromString(b) for b in self.bodies]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def drop_marker(attributes: dict[str, Any]) -> dict[str, Any]:
    """A hook that scrubs one string from every value it is shown, and nothing else."""
    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(MARKER, "[removed]")
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return {k: clean(v) for k, v in attributes.items()}


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.close()


def _everything_written(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in directory.rglob("*") if p.is_file())


def _assert_marker_nowhere(directory: Path, collector: Collector) -> None:
    assert collector.bodies, "the OTLP collector received nothing"
    assert MARKER.encode() not in _everything_written(directory)
    for body in collector.bodies:
        assert MARKER.encode() not in body


def test_host_exceptions_holding_customer_data_reach_neither_files_nor_the_collector(tmp_path, collector):
    """Issue: the span's status message was str(exc)[:500], never shown to the hook."""
    evalshift_sdk.init(tmp_path, enabled=True, otlp_endpoint=collector.endpoint, redact=drop_marker)

    @evalshift_sdk.tool
    def charge(card: str) -> None:
        raise ValueError(f"card declined for {MARKER} ({card})")

    try:
        with pytest.raises(RuntimeError), evalshift_sdk.turn(prompt_id="billing", inputs={"who": MARKER}):
            with pytest.raises(ValueError):
                charge(f"4242 {MARKER}")
            evalshift_sdk.record_tool("refund", {"order": MARKER}, error=f"refund refused: {MARKER}")
            raise RuntimeError(f"turn failed for {MARKER}")
    finally:
        evalshift_sdk.shutdown()
    spans = read_spans(tmp_path)
    assert len(spans) == 3
    root = next(s for s in spans if s["name"].startswith("invoke_agent"))
    # The hook saw the status message and what it returned is what was written.
    assert root["status"] == {"code": 2, "message": "turn failed for [removed]"}
    tool = next(s for s in spans if s["name"] == "execute_tool charge")
    assert tool["status"]["message"] == "card declined for [removed] (4242 [removed])"
    assert tool["attrs"]["evalshift.tool.error"] == "card declined for [removed] (4242 [removed])"
    _assert_marker_nowhere(tmp_path, collector)
    statuses = [s.status.message for r in collector.requests() for rs in r.resource_spans
                for ss in rs.scope_spans for s in ss.spans]
    assert "turn failed for [removed]" in statuses


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_401_quoting_the_api_key_reaches_neither_files_nor_the_collector(tmp_path, collector, provider):
    """Issue: the provider's 401 text, which quotes the API key, went out as the status message.
    The real provider SDK talks to the simulator, scripted to answer 401 with the key in it."""
    from evalshift_core.simulator import Simulator, load_scripts

    scripts = {"m": [{"when": {}, "reply": {"error": {"status": 401,
                                                      "message": f"Incorrect API key provided: {KEY}."}}}]}
    evalshift_sdk.init(tmp_path, enabled=True, otlp_endpoint=collector.endpoint, redact=drop_marker)
    try:
        # The host still gets the provider's error.
        with Simulator(load_scripts(scripts)) as sim, pytest.raises(Exception, match="401"):
            _call(provider, sim)
    finally:
        evalshift_sdk.shutdown()
    (chat,) = [s for s in read_spans(tmp_path) if s["attrs"].get("gen_ai.operation.name") in ("chat", "generate_content")]
    assert chat["status"]["code"] == 2 and "401" in chat["status"]["message"]
    _assert_marker_nowhere(tmp_path, collector)


def test_without_a_hook_the_sdk_still_strips_the_key_from_a_401(tmp_path, collector):
    from evalshift_core.simulator import Simulator, load_scripts

    scripts = {"m": [{"when": {}, "reply": {"error": {"status": 401, "message": f"Incorrect API key provided: {KEY}."}}}]}
    evalshift_sdk.init(tmp_path, enabled=True, otlp_endpoint=collector.endpoint)
    try:
        with Simulator(load_scripts(scripts)) as sim, pytest.raises(Exception, match="401"):
            _call("openai", sim)
    finally:
        evalshift_sdk.shutdown()
    (chat,) = read_spans(tmp_path)
    assert "Incorrect API key provided: sk-[REDACTED]" in chat["status"]["message"]
    assert KEY.encode() not in _everything_written(tmp_path)
    assert all(KEY.encode() not in body and b"0123456789abcdefXYZ" not in body for body in collector.bodies)


def test_one_span_with_a_credential_in_a_batch_of_clean_ones(tmp_path, collector):
    """The check runs on a batch's encoded line: the batch that could hold a credential is
    scrubbed span by span, and only the span holding it changes, in the files and for the Collector."""
    evalshift_sdk.init(tmp_path, enabled=True, otlp_endpoint=collector.endpoint)
    try:
        for i in range(20):
            result = {"order": f"A{i}", "note": "sort key=name; the bearer of bad news"}
            if i == 7:
                result["debug"] = f"retrying with Authorization: Bearer {MARKER}abc123 and api_key={KEY}"
            evalshift_sdk.record_tool("lookup_order", {"order_id": f"A{i}"}, result=result)
        evalshift_sdk.flush()
    finally:
        evalshift_sdk.shutdown()
    spans = read_spans(tmp_path)
    results = {s["attrs"]["gen_ai.tool.call.arguments"]["order_id"]: s["attrs"]["gen_ai.tool.call.result"] for s in spans}
    assert sorted(results) == sorted(f"A{i}" for i in range(20))
    assert MARKER.encode() not in _everything_written(tmp_path)
    assert collector.bodies and all(MARKER.encode() not in body for body in collector.bodies)
    assert results.pop("A7")["debug"] == "retrying with Authorization: [REDACTED] and api_key=[REDACTED]"
    assert all(v == {"order": k, "note": "sort key=name; the bearer of bad news"} for k, v in results.items())


def _call(provider: str, sim: Any) -> None:
    if provider == "openai":
        import openai

        client = openai.OpenAI(base_url=sim.openai_base_url, api_key=KEY, max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    elif provider == "anthropic":
        import anthropic

        client = anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key=KEY, max_retries=0)
        client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    else:
        from google import genai

        client = genai.Client(api_key=KEY, http_options={"base_url": sim.gemini_base_url, "api_version": "v1beta"})
        client.models.generate_content(model="m", contents="hi")


def test_resource_attributes_pass_the_hook_too(tmp_path, collector, monkeypatch):
    """Resource attributes come from the environment (OTEL_RESOURCE_ATTRIBUTES) as well."""
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"deployment.note={MARKER},team=support")
    evalshift_sdk.init(tmp_path, enabled=True, otlp_endpoint=collector.endpoint, redact=drop_marker)
    try:
        evalshift_sdk.record_tool("lookup", {"q": 1}, result={"ok": True})
    finally:
        evalshift_sdk.shutdown()
    _assert_marker_nowhere(tmp_path, collector)
    (request,) = collector.requests()
    resource = {kv.key: kv.value.string_value for kv in request.resource_spans[0].resource.attributes}
    assert resource["deployment.note"] == "[removed]" and resource["team"] == "support"


def test_the_hook_can_drop_a_status_message_and_a_span_name_follows_its_redacted_attribute(tmp_path):
    def hook(attributes: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in attributes.items() if k != "otel.status_description"}
        if "gen_ai.tool.name" in out:
            out["gen_ai.tool.name"] = "tool"
        return out

    evalshift_sdk.init(tmp_path, enabled=True, redact=hook)
    try:
        evalshift_sdk.record_tool(f"lookup_{MARKER}", {}, error="boom")
    finally:
        evalshift_sdk.shutdown()
    (span,) = read_spans(tmp_path)
    assert span["name"] == "execute_tool tool" and span["status"] == {"code": 2}
    assert MARKER.encode() not in _everything_written(tmp_path)


def test_record_exception_text_false_records_only_the_exception_type(tmp_path):
    evalshift_sdk.init(tmp_path, enabled=True, record_exception_text=False)

    @evalshift_sdk.tool
    def charge() -> None:
        raise KeyError(f"customer {MARKER}")

    try:
        with pytest.raises(KeyError), evalshift_sdk.turn(prompt_id="billing"):
            charge()
        evalshift_sdk.record_tool("refund", {}, error=f"refused for {MARKER}")
    finally:
        evalshift_sdk.shutdown()
    spans = {s["name"]: s for s in read_spans(tmp_path)}
    assert spans["execute_tool charge"]["status"] == {"code": 2, "message": "KeyError"}
    assert spans["execute_tool charge"]["attrs"]["evalshift.tool.error"] == "KeyError"
    assert spans["execute_tool refund"]["attrs"]["evalshift.tool.error"] == "ToolError"
    assert spans["invoke_agent billing"]["status"] == {"code": 2, "message": "KeyError"}
    assert MARKER.encode() not in _everything_written(tmp_path)


def test_a_failing_hook_is_logged_without_the_data_it_was_given(tmp_path, caplog):
    def hook(attributes: dict[str, Any]) -> dict[str, Any]:
        raise ValueError(f"cannot handle {attributes.get('gen_ai.tool.call.arguments')}")

    evalshift_sdk.init(tmp_path, enabled=True, redact=hook)
    try:
        with caplog.at_level(logging.WARNING, logger="evalshift_sdk"):
            evalshift_sdk.record_tool("lookup", {"card": MARKER})
            evalshift_sdk.flush()
    finally:
        evalshift_sdk.shutdown()
    assert read_spans(tmp_path) == []  # the batch is dropped: nothing unredacted is written
    assert "redact hook failed (ValueError)" in caplog.text and MARKER not in caplog.text


@pytest.mark.parametrize(("text", "expected"), [
    ("Incorrect API key provided: sk-proj-abcdefghijklmnop1234.", "Incorrect API key provided: sk-[REDACTED]."),
    ("key sk-ant-api03-AbCdEf_0123456789-xyz in use", "key sk-[REDACTED] in use"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: [REDACTED]"),
    ("headers={'authorization': 'Bearer abc.def-123456'}", "headers={'authorization': '[REDACTED]'}"),
    ("got bearer abcdefgh12345678 back", "got bearer [REDACTED] back"),
    ('{"x-api-key": "sk-ant-123"}', '{"x-api-key": "[REDACTED]"}'),
    ("x-goog-api-key: AIzaSyA-1234567890abcdefghi", "x-goog-api-key: [REDACTED]"),
    ("POST /v1beta/models/m:generateContent?key=AIzaSyA-1234567890abcdefghi&alt=sse",
     "POST /v1beta/models/m:generateContent?key=[REDACTED]&alt=sse"),
    ("api_key=abc123", "api_key=[REDACTED]"),
    ("key=AIzaSyA-1234567890abcdefghi", "key=[REDACTED]"),
    # Header names match in any case, whatever the case of the rest of the text.
    ("AuThOrIzAtIoN: s3cr3tvalue", "AuThOrIzAtIoN: [REDACTED]"),
    ("x-API-kEy: abc123", "x-API-kEy: [REDACTED]"),
    ("Api_kEY=zzz", "Api_kEY=[REDACTED]"),
    ("lone surrogate \ud800 then api_key=abc123", "lone surrogate \ud800 then api_key=[REDACTED]"),
    # Ordinary text stays as it was.
    ("sort key=name, then sk-learn", "sort key=name, then sk-learn"),
    ("the bearer of bad news", "the bearer of bad news"),
    ("monkey business with a keyboard", "monkey business with a keyboard"),
    ("", ""),
])
def test_scrub_strips_credentials_and_nothing_else(text, expected):
    assert scrub(text) == expected


def test_exception_events_and_links_pass_the_hook(tmp_path):
    """Our spans carry no events, but whatever reaches the exporter with one is redacted too."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags

    from evalshift_sdk._exporter import CaptureExporter, JsonLinesSpanExporter, ToolsetStore

    context = SpanContext(1, 2, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    span = ReadableSpan(
        name=f"execute_tool {MARKER}", context=context, resource=Resource({"host.note": MARKER}),
        attributes={"gen_ai.tool.name": MARKER, "n": 1},
        events=[Event("exception", {"exception.type": "ValueError", "exception.message": f"bad {MARKER}",
                                    "exception.stacktrace": f"Traceback ... {KEY}"}, 5)],
        links=[Link(context, {"why": MARKER})],
        status=Status(StatusCode.ERROR, f"bad {MARKER}"), start_time=1, end_time=2,
    )
    exporter = CaptureExporter(JsonLinesSpanExporter(tmp_path, ToolsetStore()), redact=drop_marker)
    exporter.export([span])
    (written,) = read_spans(tmp_path)
    assert MARKER.encode() not in _everything_written(tmp_path)
    assert written["name"] == "execute_tool [removed]" and written["status"]["message"] == "bad [removed]"
    (event,) = written["events"]
    assert {kv["key"]: kv["value"]["stringValue"] for kv in event["attributes"]} == {
        "exception.type": "ValueError", "exception.message": "bad [removed]",
        "exception.stacktrace": "Traceback ... sk-[REDACTED]"}
