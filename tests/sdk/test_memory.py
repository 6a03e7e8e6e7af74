"""No per-turn state outlives its turn: memory stays flat over many calls."""

from __future__ import annotations

import gc
import sys
import tracemalloc

from sdk_support import TOOL_CALL_COMPLETION, in_process_openai

import evalshift_sdk
from evalshift_sdk._runtime import TurnState
from evalshift_sdk.instrumentation._genai import ModelCall, observe_sync
from evalshift_sdk.instrumentation.openai import _finish_chat, _start_chat

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]


def _alive(cls: type) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def test_memory_flat_over_100k_calls(tmp_path):
    """100k model calls (10k turns of ten calls and a tool execution) through the SDK's bookkeeping:
    request and response extraction, turn linking, spans and the export thread. The provider
    call itself is a real ChatCompletion handed back in-process (the real client over an
    in-process transport costs ~2 ms a call here; the next test covers that path)."""
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(TOOL_CALL_COMPLETION)
    kwargs = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "where is A1?"}], "tools": TOOLS}

    def network(**_: object) -> ChatCompletion:
        return completion

    # Spans flow through the processor and exporter but are dropped before the disk.
    evalshift_sdk.init(tmp_path, enabled=True, redact=lambda attributes: None)
    try:

        def calls(n: int) -> None:
            for _ in range(n // 10):
                with evalshift_sdk.turn(prompt_id="mem"):
                    for _ in range(10):
                        observe_sync("openai.chat", network, (), kwargs, _start_chat, _finish_chat)
                    evalshift_sdk.record_tool("lookup_order", {"order_id": "A1"}, result={"status": "shipped"})

        calls(5_000)
        evalshift_sdk.flush()
        gc.collect()
        before = sys.getallocatedblocks()
        calls(100_000)
        evalshift_sdk.flush()
        gc.collect()
        grown = sys.getallocatedblocks() - before
        assert _alive(TurnState) == 0 and _alive(ModelCall) == 0
    finally:
        evalshift_sdk.shutdown()
    # 100k calls leave fewer blocks behind than one call's worth of spans each would.
    assert grown < 20_000, grown


def test_real_client_turns_leave_nothing_behind(tmp_path):
    """The real openai client over an in-process transport: what our code allocated and still
    holds after warm-up does not grow with the number of turns (tracemalloc, our files only)."""
    client = in_process_openai()
    evalshift_sdk.init(tmp_path, enabled=True, redact=lambda attributes: None)
    ours = [tracemalloc.Filter(True, "*evalshift_sdk*")]

    def turns(n: int) -> None:
        for _ in range(n):
            with evalshift_sdk.turn(prompt_id="mem"):
                client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], tools=TOOLS)

    tracemalloc.start()
    try:
        turns(100)
        evalshift_sdk.flush()
        gc.collect()
        first = sum(s.size for s in tracemalloc.take_snapshot().filter_traces(ours).statistics("filename"))
        turns(600)
        evalshift_sdk.flush()
        gc.collect()
        second = sum(s.size for s in tracemalloc.take_snapshot().filter_traces(ours).statistics("filename"))
    finally:
        tracemalloc.stop()
        evalshift_sdk.shutdown()
    assert second - first < 16 * 1024, (first, second)  # OpenLLMetry leaked ~17 KiB per turn
