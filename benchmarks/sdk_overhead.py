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

ROUNDS = 12
CALLS = 30  # per mode, per round, per shape: many short interleaved blocks ride out load swings
ISOLATED_CALLS = 5_000
WHOLE_CALLS = 200
CALLER_TARGET_US = 30.0  # non-streaming, caller thread
WHOLE_TARGET_US = 60.0  # non-streaming, every thread (export included)
STREAM_TARGET_US = (60.0, 1.0)  # streamed: per call, per chunk

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


def _stream(parts: list[str]) -> bytes:
    """A streamed tool call: a first chunk naming it, one chunk per argument fragment, the end."""
    return (
        _chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                     "function": {"name": "lookup_order", "arguments": ""}}]})
        + "".join(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}) for part in parts)
        + _chunk({}, "tool_calls")
        + "data: [DONE]\n\n"
    ).encode()


SHORT_PARTS = ["{\"", "order", "_id\"", ":\"", "A1", "\"}"]
# The same call with an 81-character order id sent a character a chunk: 90 chunks in all.
LONG_PARTS = ["{\"", "order", "_id\"", ":\"", *("A" * 81), "\"}"]
STREAM = _stream(SHORT_PARTS)
LONG_STREAM = _stream(LONG_PARTS)
SHORT_CHUNKS, LONG_CHUNKS = STREAM.count(b"data: {"), LONG_STREAM.count(b"data: {")
LONG_MODEL = "gpt-4o-mini-long"  # the request that is answered with LONG_STREAM


def _client() -> openai.OpenAI:
    def reply(request: httpx2.Request) -> httpx2.Response:
        body = request.content.replace(b" ", b"")
        if b'"stream":true' in body:
            stream = LONG_STREAM if LONG_MODEL.encode() in body else STREAM
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=stream)
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=COMPLETION)

    http = httpx2.Client(transport=httpx2.MockTransport(reply))
    return openai.OpenAI(api_key="sk-bench", base_url="http://in-process/v1", http_client=http, max_retries=0)


def _time(call: Callable[[], Any], n: int, around: Callable[[], Any] | None = None) -> tuple[list[float], list[float]]:
    """Per-call (wall µs, caller-thread CPU µs). CPU time is immune to other processes on a
    busy machine; wall time also counts waiting for the GIL behind our export thread."""
    wall, cpu = [], []
    for _ in range(n):
        scope = around() if around is not None else None
        if scope is not None:
            scope.__enter__()
        c0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        call()
        wall.append((time.perf_counter_ns() - t0) / 1000.0)
        cpu.append((time.thread_time_ns() - c0) / 1000.0)
        if scope is not None:
            scope.__exit__(None, None, None)
    return wall, cpu


class Mode:
    """One way of running the client: bare, or under one instrumentation."""

    def __init__(
        self, name: str, on: Callable[[], Any], off: Callable[[], Any], around: Any = None, once: bool = False
    ) -> None:
        self.name, self.on, self.off, self.around = name, on, off, around
        # OpenLLMetry's uninstrument() leaves wrappers behind (each on/off cycle makes even the
        # bare client slower), so it is switched on once, after the interleaved rounds.
        self.once = once
        # (clock, shape) -> one median per round
        self.medians: dict[tuple[str, str], list[float]] = {}


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
        modes.append(Mode("OpenLLMetry openai", lambda: oll.instrument(tracer_provider=provider), oll.uninstrument, once=True))
    except ImportError as exc:
        print(f"(OpenLLMetry instrumentation not installed: {exc})")
    return modes


def main() -> int:
    client = _client()

    def non_streaming() -> Any:
        return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, tool_choice="auto")

    def streaming() -> Any:
        return list(client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, stream=True))

    def long_streaming() -> Any:
        return list(client.chat.completions.create(model=LONG_MODEL, messages=MESSAGES, tools=TOOLS, stream=True))

    modes = _modes()
    shapes = {"non-streaming": non_streaming, "streaming": streaming, f"{LONG_CHUNKS} chunks": long_streaming}
    for _ in range(30):  # warm the client and imports
        for call in shapes.values():
            call()
    def block(mode: Mode) -> None:
        _time(non_streaming, 5, mode.around)  # settle after patching
        for shape, call in shapes.items():
            wall, cpu = _time(call, CALLS, mode.around)
            mode.medians.setdefault(("wall", shape), []).append(statistics.median(wall))
            mode.medians.setdefault(("cpu", shape), []).append(statistics.median(cpu))

    for r in range(ROUNDS):
        t0 = time.perf_counter()
        for mode in modes:
            if mode.once:
                continue
            mode.on()
            try:
                block(mode)
            finally:
                mode.off()
        print(f"round {r + 1}/{ROUNDS}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    whole = _with_export(client)  # before OpenLLMetry goes on for good
    for mode in modes:
        if mode.once:
            mode.on()
            for _ in range(ROUNDS):
                block(mode)

    bare = modes[0]
    print(f"sdk_overhead: {ROUNDS} rounds x {CALLS} calls per mode and shape, modes interleaved per round;")
    print("added = median over rounds of (mode's median - bare's median in the same round);")
    print("OpenLLMetry runs after the rounds (its uninstrument leaks wrappers), against bare's median")
    added: dict[tuple[str, str, str], float] = {}
    for clock in ("cpu", "wall"):
        label = "caller-thread CPU time" if clock == "cpu" else "wall time"
        print(f"\n{label}:")
        print(f"{'mode':<24}{'shape':<15}{'median µs':>11}{'added µs':>10}{'ratio':>8}")
        for shape in shapes:
            base = bare.medians[(clock, shape)]
            for mode in modes:
                mine = mode.medians[(clock, shape)]
                if mode.once:  # not interleaved: against the bare rounds' median
                    diff = statistics.median(mine) - statistics.median(base)
                else:
                    diff = statistics.median(m - b for m, b in zip(mine, base))
                added[(clock, mode.name, shape)] = diff
                med = statistics.median(mine)
                print(f"{mode.name:<24}{shape:<15}{med:>11.1f}{diff:>10.1f}{med / statistics.median(base):>8.3f}")
    print(f"\nstreamed, fitted through {SHORT_CHUNKS} and {LONG_CHUNKS} chunks (caller-thread CPU added):")
    for mode in modes:
        short = added[("cpu", mode.name, "streaming")]
        per_chunk = (added[("cpu", mode.name, f"{LONG_CHUNKS} chunks")] - short) / (LONG_CHUNKS - SHORT_CHUNKS)
        per_call = short - SHORT_CHUNKS * per_chunk
        print(f"  {mode.name:<24}{per_call:8.1f} µs per call + {per_chunk:6.2f} µs per chunk")
    print()
    for clock in ("cpu", "wall"):
        ours = added[(clock, "evalshift_sdk", "non-streaming")]
        for other in ("official genai-openai", "OpenLLMetry openai"):
            theirs = added.get((clock, other, "non-streaming"))
            if theirs and theirs > 0:
                print(f"[{clock}] evalshift_sdk adds {ours / theirs:.2f}x what {other} adds (non-streaming)")
    print("\nevalshift_sdk including its export thread (all threads' CPU over blocks of "
          f"{WHOLE_CALLS} non-streaming calls, flushed to the files inside the block; median of {ROUNDS}):")
    print(f"  bare {whole[0]:8.1f} µs/call   instrumented {whole[1]:8.1f} µs/call   added {whole[2]:6.1f} µs/call")
    if whole[3] is not None:
        print(f"  of which exporting (the export thread, and the flush ending each block): {whole[3]:6.1f} µs/call")
    isolated = _isolated()
    print("\nevalshift_sdk bookkeeping alone (the same parsed ChatCompletion / chunks handed back")
    print(f"in-process, {ISOLATED_CALLS} calls each; caller-thread CPU, median):")
    for shape, (bare_us, ours_us) in isolated.items():
        print(f"  {shape:<15} bare {bare_us:8.1f} µs   instrumented {ours_us:8.1f} µs   added {ours_us - bare_us:6.1f} µs")
    short = added[("cpu", "evalshift_sdk", "streaming")]
    per_chunk = (added[("cpu", "evalshift_sdk", f"{LONG_CHUNKS} chunks")] - short) / (LONG_CHUNKS - SHORT_CHUNKS)
    for label, value, target in (
        ("non-streaming, caller thread", added[("cpu", "evalshift_sdk", "non-streaming")], CALLER_TARGET_US),
        ("non-streaming, whole (every thread)", whole[2], WHOLE_TARGET_US),
        ("streamed, per call", short - SHORT_CHUNKS * per_chunk, STREAM_TARGET_US[0]),
        ("streamed, per chunk", per_chunk, STREAM_TARGET_US[1]),
    ):
        verdict = "within" if value <= target else "OVER"
        print(f"evalshift_sdk {label}: {value:.1f} µs added at median, {verdict} the {target:g} µs target")
    return 0


def _with_export(client: openai.OpenAI) -> tuple[float, float, float, float | None]:
    """Per-call CPU of every thread, so the work left to the export thread (converting the
    request and response, encoding, writing) and the turn around each call are counted too:
    the caller-thread figures above leave them out. Bare and instrumented blocks alternate;
    added is the median over rounds of (instrumented - bare) in the same round. Returns bare,
    instrumented, added, and the export's share: the export thread's CPU plus the flush that
    ends each block (None if the thread's clock cannot be read)."""
    import evalshift_sdk
    from evalshift_sdk._runtime import get_runtime

    def block(instrumented: bool) -> float:
        c0 = time.process_time_ns()
        for _ in range(WHOLE_CALLS):
            if instrumented:
                with evalshift_sdk.turn(prompt_id="bench"):
                    client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, tool_choice="auto")
            else:
                client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, tool_choice="auto")
        if instrumented:
            f0 = time.thread_time_ns()
            evalshift_sdk.flush()  # exports what is still queued, on this thread
            flushing.append((time.thread_time_ns() - f0) / 1000.0 / WHOLE_CALLS)
        return (time.process_time_ns() - c0) / 1000.0 / WHOLE_CALLS

    def export_thread_clock() -> Any:
        thread = getattr(getattr(get_runtime(), "processor", None), "_thread", None)
        try:
            return time.pthread_getcpuclockid(thread.ident) if thread is not None else None
        except (AttributeError, OSError):
            return None

    bare, ours, added, exporting, flushing = [], [], [], [], []
    directory = tempfile.mkdtemp(prefix="evalshift-bench-")
    for _ in range(ROUNDS):
        bare.append(block(False))
        evalshift_sdk.init(directory, enabled=True, providers=["openai"])
        try:
            clock = export_thread_clock()
            e0 = time.clock_gettime_ns(clock) if clock is not None else 0
            ours.append(block(True))
            if clock is not None:
                exporting.append((time.clock_gettime_ns(clock) - e0) / 1000.0 / WHOLE_CALLS + flushing[-1])
        finally:
            evalshift_sdk.shutdown()
        added.append(ours[-1] - bare[-1])
    return (
        statistics.median(bare),
        statistics.median(ours),
        statistics.median(added),
        statistics.median(exporting) if exporting else None,
    )


def _isolated() -> dict[str, tuple[float, float]]:
    """Our per-call cost without the client's own ~1-4 ms of noise around it: the wrapper the
    SDK installs, around a function that hands back what the client would have returned."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    import evalshift_sdk
    from evalshift_sdk.instrumentation import openai as instrumentation
    from evalshift_sdk.instrumentation._genai import observe_sync

    completion = ChatCompletion.model_validate_json(COMPLETION)
    chunks = [
        ChatCompletionChunk.model_validate_json(line[len("data: "):])
        for line in STREAM.decode().split("\n\n")
        if line.startswith("data: {")
    ]
    kwargs = {"model": "gpt-4o-mini", "messages": MESSAGES, "tools": TOOLS, "tool_choice": "auto"}
    stream_kwargs = {**kwargs, "stream": True}

    def network(**_: Any) -> Any:
        return completion

    def streamed(**_: Any) -> Any:
        return iter(chunks)

    def measure(fn: Callable[[], Any]) -> float:
        samples = []
        for _ in range(ISOLATED_CALLS):
            c0 = time.thread_time_ns()
            fn()
            samples.append((time.thread_time_ns() - c0) / 1000.0)
        return statistics.median(samples[ISOLATED_CALLS // 10:])

    evalshift_sdk.init(tempfile.mkdtemp(prefix="evalshift-bench-"), enabled=True, providers=["openai"])
    try:
        with evalshift_sdk.turn(prompt_id="bench"):
            start, finish = instrumentation._start_chat, instrumentation._finish_chat
            acc = instrumentation.ChatAccumulator
            out = {
                "non-streaming": (
                    measure(lambda: network(**kwargs)),
                    measure(lambda: observe_sync("openai.chat", network, (), kwargs, start, finish)),
                ),
                "streaming": (
                    measure(lambda: list(streamed(**stream_kwargs))),
                    measure(lambda: list(observe_sync("openai.chat", streamed, (), stream_kwargs, start, finish, acc))),
                ),
            }
    finally:
        evalshift_sdk.shutdown()
    return out


if __name__ == "__main__":
    sys.exit(main())
