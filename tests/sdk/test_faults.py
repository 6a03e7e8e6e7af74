"""Never hurts the host: with faults inside the SDK, the host sees exactly what it would without it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from sdk_support import CassetteServer, Interaction, openai_client, read_spans

import evalshift_sdk
from evalshift_sdk import _exporter, _runtime
from evalshift_sdk.instrumentation import _genai
from evalshift_sdk.instrumentation import openai as openai_instr

COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"order_id\":\"A1\"}"}}]}}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}
SSE = "".join(
    f"data: {json.dumps(chunk)}\n\n"
    for chunk in [
        {"id": "c2", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
         "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_2", "type": "function", "function": {"name": "lookup_order", "arguments": ""}}]}, "finish_reason": None}]},
        {"id": "c2", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
         "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"order_id\":"}}]}, "finish_reason": None}]},
        {"id": "c2", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
         "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"B2\"}"}}]}, "finish_reason": "tool_calls"}]},
    ]
) + "data: [DONE]\n\n"
ERROR = {"error": {"message": "model not found", "type": "invalid_request_error", "code": "model_not_found"}}
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]


def _interactions(odd_body: bytes | None = None) -> list[Interaction]:
    json_h = [("Content-Type", "application/json")]
    return [
        Interaction("POST", "/v1/chat/completions", None, 200, json_h, odd_body or json.dumps(COMPLETION).encode()),
        Interaction("POST", "/v1/chat/completions", None, 200, [("Content-Type", "text/event-stream")], SSE.encode()),
        Interaction("POST", "/v1/chat/completions", None, 404, json_h, json.dumps(ERROR).encode()),
    ]


class Unserialisable:
    __slots__ = ()

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def _scenario(odd_body: bytes | None = None) -> list[Any]:
    """What the host sees: return values, streamed chunks and exceptions, as plain data."""
    seen: list[Any] = []

    @evalshift_sdk.tool
    def lookup_order(order_id: str, handle: Any = None) -> dict:
        return {"order_id": order_id, "status": "shipped"}

    @evalshift_sdk.tool
    def broken(order_id: str) -> dict:
        raise ValueError(f"no order {order_id}")

    with CassetteServer(_interactions(odd_body)) as server:
        client = openai_client(server)
        messages = [{"role": "user", "content": "where is A1?"}]
        with evalshift_sdk.turn(prompt_id="faults", inputs={"weird": Unserialisable()}):
            first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            seen.append(first.model_dump())
            seen.append(lookup_order("A1", handle=Unserialisable()))
            seen.append([c.model_dump() for c in client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True)])
            try:
                broken("B2")
            except ValueError as exc:
                seen.append(("ValueError", str(exc)))
            try:
                client.chat.completions.create(model="nope", messages=messages)
            except Exception as exc:  # noqa: BLE001 - the host's exception is the observation
                seen.append((type(exc).__name__, str(exc), getattr(exc, "status_code", None)))
            evalshift_sdk.record_tool("lookup_order", {"x": Unserialisable()}, result=Unserialisable(), call_id="call_2")
    return seen


def _with_sdk(directory: Path, odd_body: bytes | None = None) -> list[Any]:
    evalshift_sdk.init(directory, enabled=True)
    try:
        return _scenario(odd_body)
    finally:
        evalshift_sdk.shutdown()


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected internal bug")


BOOKKEEPING_STEPS = [
    (_genai.ModelCall, "start"),
    (_genai.ModelCall, "finish"),
    (_genai.ModelCall, "fail"),
    (_genai, "snapshot"),
    (_genai.Deferred, "resolve"),
    (_genai, "toolset_of"),
    (_genai, "dumps"),
    (openai_instr, "messages_to_semconv"),
    (openai_instr, "generation_config_of"),
    (openai_instr, "chat_finish_kwargs"),
    (openai_instr, "_streams"),
    (openai_instr.ChatAccumulator, "on_chunk"),
    (openai_instr.ChatAccumulator, "result"),
    (_runtime.TurnState, "add_requested"),
    (_runtime.TurnState, "link"),
    (_runtime, "tool_span"),
    (_runtime, "finish_tool_span"),
    (_runtime, "_mark_error"),
    (_exporter, "encode_line"),
    (_exporter.ToolsetStore, "offer"),
]


@pytest.mark.parametrize(("owner", "name"), BOOKKEEPING_STEPS, ids=[f"{getattr(o, '__name__', o)}.{n}" for o, n in BOOKKEEPING_STEPS])
def test_injected_bug_in_each_bookkeeping_step_leaves_the_host_unchanged(owner, name, tmp_path, monkeypatch):
    monkeypatch.delenv("EVALSHIFT_RAISE_INTERNAL")  # production mode: the guard swallows
    bare = _scenario()
    monkeypatch.setattr(owner, name, _boom)
    assert _with_sdk(tmp_path / "c") == bare


def test_without_faults_the_scenario_is_captured(tmp_path):
    """The scenario above really exercises the bookkeeping (so the injected bugs are hit)."""
    bare = _scenario()
    assert _with_sdk(tmp_path) == bare
    spans = read_spans(tmp_path)
    ops = sorted(s["attrs"]["gen_ai.operation.name"] for s in spans)
    assert ops == ["chat", "chat", "chat", "execute_tool", "execute_tool", "execute_tool", "invoke_agent"]
    failed = [s for s in spans if s["attrs"].get("evalshift.tool.failed")]
    assert [s["attrs"]["gen_ai.tool.name"] for s in failed] == ["broken"]
    error = next(s for s in spans if s["attrs"].get("error.type") == "NotFoundError")
    assert error["status"]["code"] == 2


def test_exporter_that_raises(tmp_path, monkeypatch):
    bare = _scenario()
    monkeypatch.setattr(_exporter.JsonLinesSpanExporter, "export", _boom)
    assert _with_sdk(tmp_path) == bare


def test_capture_directory_not_writable(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    bare = _scenario()
    with caplog.at_level(logging.WARNING, logger="evalshift_sdk"):
        assert _with_sdk(blocker / "captures") == bare
    assert any("could not write captures" in r.message for r in caplog.records)


def test_capture_disk_full(tmp_path, monkeypatch):
    """Writes hit ENOSPC (/dev/full stands in for a full disk)."""
    bare = _scenario()
    monkeypatch.setattr(_exporter.JsonLinesSpanExporter, "_current_path", lambda self: Path("/dev/full"))
    assert _with_sdk(tmp_path) == bare


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic, on the host's own model_dump
@pytest.mark.parametrize(
    "odd_body",
    [b'{"choices": "not a list", "model": 7}', b'{"unexpected": true}', b'{"choices": [{"message": null}]}'],
)
def test_response_of_an_unexpected_shape(odd_body, tmp_path, monkeypatch):
    monkeypatch.delenv("EVALSHIFT_RAISE_INTERNAL")
    bare = _scenario(odd_body)
    assert _with_sdk(tmp_path, odd_body) == bare


def test_redact_hook_that_raises_drops_the_batch_not_the_host(tmp_path):
    bare = _scenario()
    evalshift_sdk.init(tmp_path, enabled=True, redact=_boom)
    try:
        assert _scenario() == bare
    finally:
        evalshift_sdk.shutdown()
    assert read_spans(tmp_path) == []  # nothing unredacted left memory
