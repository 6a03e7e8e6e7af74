"""OpenInference spans, as the real openinference-instrumentation-openai emits them, become a suite.

The same refund conversation is recorded twice, live around the real openai client on the
simulator: once by openinference-instrumentation-openai, once by the official GenAI-semconv
instrumentation. Both files promote into suites whose examples agree field by field. The
Anthropic conversation, recorded by openinference-instrumentation-anthropic, promotes into the
suite evalshift_sdk's own capture of it gives. Both packages come with the dev extra.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import openai
from _capture_agent import REFUND_TICKET, TOOLS, simulator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evalshift_core import load_suite
from evalshift_core.ingest._captures import load_captures
from evalshift_core.promote._sync import sync
from evalshift_core.store._suites import read_sidecar, toolset_path
from evalshift_sdk._exporter import encode_request
from evalshift_sdk.schema import json_or_text, normalise_toolset, toolset_ref

ToolSpan = Callable[[Any, str, str], AbstractContextManager[Any]]


def _run_tool(name: str, arguments: str) -> dict[str, Any]:
    return {"ok": True, "tool": name, "args": json.loads(arguments or "{}")}


def _agent(client: openai.OpenAI, tracer, tool_span: ToolSpan | None) -> None:
    """The refund loop under one app span; each execution in a TOOL span when ``tool_span``."""
    with tracer.start_as_current_span("handle_ticket"):
        messages = [{"role": "system", "content": "You are a support agent."},
                    {"role": "user", "content": REFUND_TICKET}]
        for _ in range(4):
            r = client.chat.completions.create(model="sim-baseline", messages=messages, tools=TOOLS,
                                               temperature=0.2)
            msg = r.choices[0].message
            if not msg.tool_calls:
                return
            messages.append(msg.model_dump(exclude_none=True))
            for call in msg.tool_calls:
                span = tool_span(tracer, call.function.name, call.function.arguments) if tool_span else nullcontext()
                with span as s:
                    result = _run_tool(call.function.name, call.function.arguments)
                    if s is not None:
                        s.set_attribute("tool_call.id", call.id)
                        s.set_output(json.dumps(result), mime_type="application/json")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


def _oi_tool_span(tracer, name: str, arguments: str) -> AbstractContextManager[Any]:
    """A TOOL span through OpenInference's own tracer API (what frameworks instrumented by it use)."""
    span = tracer.start_as_current_span(name, openinference_span_kind="tool")
    return _Entered(span, name, arguments)


class _Entered:
    def __init__(self, cm, name: str, arguments: str) -> None:
        self.cm, self.name, self.arguments = cm, name, arguments

    def __enter__(self):
        span = self.cm.__enter__()
        span.set_tool(name=self.name, parameters=TOOLS[[t["function"]["name"] for t in TOOLS].index(self.name)]
                      ["function"]["parameters"])
        span.set_input(self.arguments, mime_type="application/json")
        return span

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


def _record(make: Callable[[], Any], directory: Path, tool_spans: bool = False, agent: Callable[..., None] | None = None) -> Path:
    """Recorded in a forked child, so no instrumentation outlives its test in this process."""
    child = multiprocessing.get_context("fork").Process(target=_record_here,
                                                        args=(make, directory, tool_spans, agent or _agent))
    child.start()
    child.join(120)
    assert child.exitcode == 0, "recording failed in the child (its traceback is above)"
    return directory / "otel.jsonl"


def _record_here(make: Callable[[], Any], directory: Path, tool_spans: bool, agent: Callable[..., None]) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = make()
    instrumentor.instrument(tracer_provider=provider)
    try:
        if tool_spans:
            from openinference.instrumentation import OITracer, TraceConfig

            tracer = OITracer(provider.get_tracer("app"), config=TraceConfig())
        else:
            tracer = provider.get_tracer("app")
        with simulator() as sim:
            agent(openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-test"), tracer,
                  _oi_tool_span if tool_spans else None)
    finally:
        instrumentor.uninstrument()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "otel.jsonl").write_text(json.dumps(encode_request(exporter.get_finished_spans())) + "\n")


def _openinference():
    from openinference.instrumentation.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


def _genai():
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


def _suite(tmp_path: Path, make: Callable[[], Any], name: str, **kw: Any):
    captures = tmp_path / name / "captures"
    _record(make, captures, **kw)
    result = sync(captures, base=tmp_path / name / "base", suite_name="otel", rounds="all")
    (ex,) = load_suite(result.suites["otel"])
    return result, ex


_IGNORED = {"id", "cluster"}  # ids: cluster is the trace id


def test_openinference_suite_matches_the_genai_semconv_suite(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    oi_result, oi_ex = _suite(tmp_path, _openinference, "oi")
    _, genai_ex = _suite(tmp_path, _genai, "genai")
    oi_fields, genai_fields = oi_ex.model_dump(exclude=_IGNORED), genai_ex.model_dump(exclude=_IGNORED)
    assert oi_fields.keys() == genai_fields.keys()
    assert {k: v for k, v in oi_fields.items() if genai_fields[k] != v} == {}
    # ... and they are the refund conversation, not two equally empty examples.
    assert [[c.tool_name for c in r] for r in oi_ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert oi_ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}
    assert [[f.tool_name for f in r] for r in oi_ex.tool_result_fixtures] == [["lookup_order"], ["issue_refund"]]
    assert json.loads(oi_ex.tool_result_fixtures[0][0].result)["args"] == {"order_id": "A1001"}
    assert oi_ex.generation_config == {"temperature": 0.2}
    assert oi_ex.inputs["input"] == REFUND_TICKET and oi_ex.history[0]["role"] == "system"
    assert oi_ex.toolset_ref == toolset_ref(normalise_toolset(TOOLS))
    base = tmp_path / "oi" / "base"
    assert read_sidecar(toolset_path(base, oi_ex.toolset_ref), oi_ex.toolset_ref) == normalise_toolset(TOOLS)
    assert oi_result.unrecognised == 0 and oi_result.unrecognised_line() is None


def test_openinference_tool_spans_become_executions(tmp_path):
    """TOOL spans (tool.name, input.value, output.value, tool_call.id) are the turn's executions."""
    captures = tmp_path / "captures"
    _record(_openinference, captures, tool_spans=True)
    (capture,) = load_captures(captures)
    kinds = [(e["type"], e.get("tool_name")) for e in capture.events]
    assert kinds == [("model_call", None), ("tool_call", "lookup_order"), ("tool_result", "lookup_order"),
                     ("model_call", None), ("tool_call", "issue_refund"), ("tool_result", "issue_refund"),
                     ("model_call", None)]
    first = capture.model_calls()[0]
    call, result = capture.events[1], capture.events[2]
    assert call["call_id"] == first["requested_tool_calls"][0]["call_id"] is not None
    assert call["arguments"] == {"order_id": "A1001"}
    assert result["result"]["args"] == {"order_id": "A1001"} and result["error"] is None
    assert first["model"] and first["provider"] == "openai"
    assert first["usage"]["input_tokens"] > 0
    result = sync(captures, base=tmp_path / "base", suite_name="otel", rounds="all")
    (ex,) = load_suite(result.suites["otel"])
    assert [[c.tool_name for c in r] for r in ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]


# -- Anthropic -------------------------------------------------------------------------------------

ANTHROPIC_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in TOOLS]


def _anthropic_agent(tracer) -> None:
    """The refund loop on the real anthropic client: tool_use blocks answered by tool_result blocks."""
    import anthropic

    with simulator() as sim, tracer.start_as_current_span("handle_ticket"):
        client = anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key="sk-test", max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": REFUND_TICKET}]
        for _ in range(4):
            r = client.messages.create(model="sim-baseline", max_tokens=256, system="You are a support agent.",
                                       messages=messages, tools=ANTHROPIC_TOOLS)
            uses = [b for b in r.content if b.type == "tool_use"]
            if not uses:
                return
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": json.dumps(_run_tool(b.name, json.dumps(b.input)))}
                for b in uses]})


def _record_anthropic(directory: Path, sdk: bool) -> None:
    if sdk:
        import evalshift_sdk

        evalshift_sdk.init(directory, enabled=True, providers=["anthropic"])
        try:
            from opentelemetry import trace

            with evalshift_sdk.turn():
                _anthropic_agent(trace.get_tracer("app"))
        finally:
            evalshift_sdk.shutdown()
        return
    from openinference.instrumentation.anthropic import AnthropicInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        _anthropic_agent(provider.get_tracer("app"))
    finally:
        instrumentor.uninstrument()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "otel.jsonl").write_text(json.dumps(encode_request(exporter.get_finished_spans())) + "\n")


def test_openinference_anthropic_spans_become_the_same_suite_as_the_sdk_capture(tmp_path):
    examples = {}
    for name, sdk in (("oi", False), ("sdk", True)):
        child = multiprocessing.get_context("fork").Process(target=_record_anthropic, args=(tmp_path / name, sdk))
        child.start()
        child.join(120)
        assert child.exitcode == 0, "recording failed in the child (its traceback is above)"
        result = sync(tmp_path / name, base=tmp_path / name / "base", suite_name="s", rounds="all")
        (examples[name],) = load_suite(result.suites["s"])
    oi_fields, sdk_fields = (examples[n].model_dump(exclude=_IGNORED) for n in ("oi", "sdk"))
    # The SDK decodes an Anthropic tool_result's JSON text (replay encodes it again); the spans
    # keep the text the app sent. Same fixtures either way, compared decoded.
    for fields in (oi_fields, sdk_fields):
        for fixture in (f for r in fields["tool_result_fixtures"] for f in r):
            fixture["result"] = json_or_text(fixture["result"])
    assert {k: (v, sdk_fields[k]) for k, v in oi_fields.items() if sdk_fields[k] != v} == {}
    ex = examples["oi"]
    assert [[c.tool_name for c in r] for r in ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}
    assert ex.toolset_ref == toolset_ref(normalise_toolset(ANTHROPIC_TOOLS))
    assert ex.generation_config == {"max_tokens": 256}


# -- OpenAI Responses API --------------------------------------------------------------------------


def _responses_agent(client: openai.OpenAI, tracer, tool_span: ToolSpan | None) -> None:
    """The refund loop on the Responses API: function_call items answered by function_call_output."""
    tools = [{"type": "function", **t["function"]} for t in TOOLS]
    with tracer.start_as_current_span("handle_ticket"):
        items: list[dict[str, Any]] = [{"role": "user", "content": REFUND_TICKET}]
        for _ in range(4):
            r = client.responses.create(model="sim-baseline", instructions="You are a support agent.", input=items,
                                        tools=tools, temperature=0.2)
            calls = [o for o in r.output if o.type == "function_call"]
            if not calls:
                return
            for call in calls:
                items.append(call.model_dump(exclude_none=True))
                items.append({"type": "function_call_output", "call_id": call.call_id,
                              "output": json.dumps(_run_tool(call.name, call.arguments))})


def test_openinference_responses_api_spans_become_the_chat_suite(tmp_path):
    """The same conversation over Responses promotes into what it gives over Chat Completions."""
    _, chat = _suite(tmp_path, _openinference, "chat")
    _, responses = _suite(tmp_path, _openinference, "responses", agent=_responses_agent)
    chat_fields, responses_fields = chat.model_dump(exclude=_IGNORED), responses.model_dump(exclude=_IGNORED)
    assert {k: (v, chat_fields[k]) for k, v in responses_fields.items() if chat_fields[k] != v} == {}
    assert [[c.tool_name for c in r] for r in responses.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert responses.toolset_ref == toolset_ref(normalise_toolset(TOOLS))
