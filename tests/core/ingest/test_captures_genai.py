"""Spans other instrumentations really emit, synced into a suite without our SDK.

The official opentelemetry-instrumentation-genai-openai (content capture on) and OpenLLMetry's
opentelemetry-instrumentation-openai run here, live, around the real openai client on the
simulator; OpenLLMetry's older indexed attributes come from a committed golden file it wrote.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
from pathlib import Path

import openai
import pytest
from _capture_agent import REFUND_TICKET, TOOLS, simulator
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evalshift_core import load_suite
from evalshift_core.cli._demo import find_example_agent
from evalshift_core.ingest._genai import NOTE_NO_CONTENT, NOTE_NO_OUTPUT, NOTE_NO_TOOL_CHOICE
from evalshift_core.promote._sync import sync
from evalshift_core.store._suites import read_sidecar, toolset_path
from evalshift_sdk._exporter import encode_request
from evalshift_sdk.schema import normalise_toolset, toolset_ref

GOLDEN = Path(__file__).parent / "data" / "captures"


def _agent(client: openai.OpenAI, tracer) -> None:
    """An agent instrumented only by the other package: one app span around its loop."""
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
                result = {"ok": True, "tool": call.function.name}
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})


def _record(instrumentor, directory: Path) -> Path:
    """The agent's spans from ``instrumentor``, recorded in a forked child: OpenLLMetry's
    ``uninstrument()`` leaves wrappers on the openai client behind, and they would change what
    later tests in this process send (they read a messages iterator before the request)."""
    child = multiprocessing.get_context("fork").Process(target=_record_here, args=(instrumentor, directory))
    child.start()
    child.join(120)
    assert child.exitcode == 0, "recording failed in the child (its traceback is above)"
    return directory / "otel.jsonl"


def _record_here(instrumentor, directory: Path) -> Path:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    try:
        with simulator() as sim:
            _agent(openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-test"), provider.get_tracer("app"))
    finally:
        instrumentor.uninstrument()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "otel.jsonl"
    path.write_text(json.dumps(encode_request(exporter.get_finished_spans())) + "\n")
    return path


def _official():
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


def _openllmetry():
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


@pytest.mark.parametrize("make", [_official, _openllmetry], ids=["genai-openai", "openllmetry"])
def test_live_instrumentation_spans_become_a_suite(make, tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    _record(make(), tmp_path / "captures")
    _assert_refund_suite(tmp_path, TOOLS)


def test_openllmetry_legacy_indexed_attributes(tmp_path):
    """gen_ai.prompt.N / gen_ai.completion.N / llm.request.functions.N (OpenLLMetry 0.40)."""
    (tmp_path / "captures").mkdir()
    (tmp_path / "captures" / "legacy.jsonl").write_bytes((GOLDEN / "openllmetry_0_40_legacy_attrs.jsonl").read_bytes())
    # It was recorded running examples/support_agent.py's tools.
    spec = importlib.util.spec_from_file_location("support_agent", find_example_agent())
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    _assert_refund_suite(tmp_path, agent.TOOLS)


def _assert_refund_suite(tmp_path: Path, tools: list[dict]) -> None:
    base = tmp_path / "base"
    result = sync(tmp_path / "captures", base=base, suite_name="otel", rounds="all")
    (ex,) = load_suite(result.suites["otel"])
    assert [[c.tool_name for c in r] for r in ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}
    assert ex.promotion_source == "requested"
    assert ex.generation_config == {"temperature": 0.2}
    assert ex.inputs["input"] == REFUND_TICKET
    assert ex.history[0]["role"] == "system"
    # The toolset is built from the recorded tool definitions and written content-addressed.
    assert ex.toolset_ref == toolset_ref(normalise_toolset(tools))
    assert read_sidecar(toolset_path(base, ex.toolset_ref), ex.toolset_ref) == normalise_toolset(tools)
    # Results the app sent back to the model serve as fixtures.
    assert [[f.tool_name for f in r] for r in ex.tool_result_fixtures] == [["lookup_order"], ["issue_refund"]]
    assert json.loads(ex.tool_result_fixtures[0][0].result)["ok"] is True
    assert any(NOTE_NO_TOOL_CHOICE in w for w in result.warnings)


def test_without_content_capture_the_warning_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    _record(_official(), tmp_path / "captures")
    result = sync(tmp_path / "captures", base=tmp_path / "base", suite_name="otel")
    (ex,) = load_suite(result.suites["otel"])
    assert any(NOTE_NO_CONTENT in w for w in result.warnings)
    assert any(NOTE_NO_OUTPUT in w for w in result.warnings)
    assert any("no tool ground truth" in w for w in result.warnings)
    assert ex.expected_tools is None and ex.expected_no_tools is None


_KEYS = st.sampled_from([
    "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.prompt.1.tool_calls.0.name",
    "gen_ai.prompt.1.tool_calls.0.arguments", "gen_ai.prompt.x.role", "gen_ai.completion.0.tool_calls.0.name",
    "gen_ai.completion.0.tool_calls.1.arguments", "gen_ai.completion.0.content", "gen_ai.completion.0.function_call.name",
    "llm.request.functions.0.name", "llm.request.functions.0.parameters", "llm.request.functions.1.description",
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions", "gen_ai.system_instructions",
    "gen_ai.request.temperature", "gen_ai.usage.prompt_tokens",
])
_VALUES = st.one_of(st.text(max_size=8), st.integers(), st.none(), st.just("[]"), st.just('[{"role": 1}]'),
                    st.just('[{"name": "t", "parameters": 3}]'), st.just('[{"parts": [{"type": "tool_call"}]}]'))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8))
def test_foreign_attributes_never_break_ingest(attrs):
    """Whatever another instrumentation wrote, reading it yields an event or says what is missing."""
    from evalshift_core.ingest._genai import model_call_event
    from evalshift_core.ingest._otlp import Span

    span = Span({"traceId": "1" * 32, "spanId": "2" * 16, "name": "chat"}, "other", "f:1")
    span._attrs = {k: v for k, v in attrs.items() if v is not None}
    event, tools, notes = model_call_event(span, 1)
    assert event["type"] == "model_call" and isinstance(notes, list)
    assert tools is None or event["toolset_ref"].startswith("sha256:")
