"""Time the capture SDK adds to each model call, beside the official OTel and OpenLLMetry ones.

A non-streaming and a streaming tool-call completion go through the real ``openai`` client over
an in-process transport (no sockets); every mode is measured in the same run, interleaved.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai

ROUNDS = 1
CALLS = 100  # per mode, per round, per shape
TARGET_US = 60.0

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by id.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "description": "Refund an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}},
                "required": ["order_id", "amount_usd"],
            },
        },
    },
]
MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Where is my order A1?"},
]
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                     "tool_calls": [{"id": "call_1", "type": "function",
                                     "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"A1\"}"}}]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }
).encode()


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


STREAM = (
    _chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                 "function": {"name": "lookup_order", "arguments": ""}}]})
    + "".join(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
              for part in ["{\"", "order", "_id\"", ":\"", "A1", "\"}"])
    + _chunk({}, "tool_calls")
    + "data: [DONE]\n\n"
).encode()


def _client() -> openai.OpenAI:
    def reply(request: httpx2.Request) -> httpx2.Response:
        if b'"stream":true' in request.content.replace(b" ", b""):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=STREAM)
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=COMPLETION)

    http = httpx2.Client(transport=httpx2.MockTransport(reply))
    return openai.OpenAI(api_key="sk-bench", base_url="http://in-process/v1", http_client=http, max_retries=0)


def _time(call: Callable[[], Any], n: int, around: Callable[[], Any] | None = None) -> list[float]:
    out = []
    for _ in range(n):
        scope = around() if around is not None else None
        if scope is not None:
            scope.__enter__()
        t0 = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - t0) / 1000.0)
        if scope is not None:
            scope.__exit__(None, None, None)
    return out


class Mode:
    """One way of running the client: bare, or under one instrumentation."""

    def __init__(self, name: str, on: Callable[[], Any], off: Callable[[], Any], around: Any = None) -> None:
        self.name, self.on, self.off, self.around = name, on, off, around
        self.samples: dict[str, list[float]] = {"non-streaming": [], "streaming": []}


def _modes() -> list[Mode]:
    import evalshift_sdk

    capture_dir = tempfile.mkdtemp(prefix="evalshift-bench-")
    modes = [
        Mode("bare client", lambda: None, lambda: None),
        Mode(
            "evalshift_sdk",
            lambda: evalshift_sdk.init(capture_dir, enabled=True, providers=["openai"]),
            evalshift_sdk.shutdown,
            around=lambda: evalshift_sdk.turn(prompt_id="bench"),
        ),
    ]
    # The other two report through the global provider: give it the same batch processor.
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Discard(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    trace.set_tracer_provider(provider)
    try:
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor as Official

        official = Official()
        modes.append(Mode("official genai-openai", lambda: official.instrument(tracer_provider=provider), official.uninstrument))
    except ImportError as exc:
        print(f"(official instrumentation not installed: {exc})")
    try:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetry

        oll = OpenLLMetry()
        modes.append(Mode("OpenLLMetry openai", lambda: oll.instrument(tracer_provider=provider), oll.uninstrument))
    except ImportError as exc:
        print(f"(OpenLLMetry instrumentation not installed: {exc})")
    return modes


def main() -> int:
    client = _client()

    def non_streaming() -> Any:
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, tool_choice="auto")

    def streaming() -> Any:
        return list(client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, stream=True))

    modes = _modes()
    for _ in range(30):  # warm the client and imports
        non_streaming()
        streaming()
    for _ in range(ROUNDS):
        for mode in modes:
            mode.on()
            try:
                _time(non_streaming, 20, mode.around)  # settle after patching
                mode.samples["non-streaming"] += _time(non_streaming, CALLS, mode.around)
                mode.samples["streaming"] += _time(streaming, CALLS, mode.around)
            finally:
                mode.off()

    bare = modes[0]
    print(f"sdk_overhead: {ROUNDS} rounds x {CALLS} calls per mode and shape, interleaved; median per call")
    print(f"{'mode':<24}{'shape':<15}{'median µs':>11}{'added µs':>10}{'ratio':>8}")
    added: dict[tuple[str, str], float] = {}
    for shape in ("non-streaming", "streaming"):
        base = statistics.median(bare.samples[shape])
        for mode in modes:
            med = statistics.median(mode.samples[shape])
            added[(mode.name, shape)] = med - base
            print(f"{mode.name:<24}{shape:<15}{med:>11.1f}{med - base:>10.1f}{med / base:>8.3f}")
    ours = added[("evalshift_sdk", "non-streaming")]
    for other in ("official genai-openai", "OpenLLMetry openai"):
        theirs = added.get((other, "non-streaming"))
        if theirs:
            print(f"evalshift_sdk adds {ours / theirs:.2f}x what {other} adds (non-streaming)")
    verdict = "within" if ours <= TARGET_US else "OVER"
    print(f"evalshift_sdk non-streaming added {ours:.1f} µs at median: {verdict} the {TARGET_US:.0f} µs target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
