"""Anthropic Messages wire format for the simulator (``POST /v1/messages``, JSON and SSE)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ._rules import Reply, SimRequest
from ._wire import body_tokens, call_id, pieces, sse, tokens


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _result_content(content: Any) -> Any:
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content


def parse_messages_request(body: dict[str, Any]) -> SimRequest:
    """Messages API request reduced to semconv messages (tool results become tool messages)."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
        messages.append({"role": "system", "parts": [{"type": "text", "content": text}]})
    for msg in body.get("messages", []):
        role = msg.get("role", "user")
        parts: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in _blocks(msg.get("content")):
            kind = block.get("type")
            if kind == "text":
                parts.append({"type": "text", "content": block.get("text", "")})
            elif kind == "tool_use":
                parts.append({"type": "tool_call", "id": block.get("id"), "name": block.get("name"),
                              "arguments": block.get("input")})
            elif kind == "tool_result":
                results.append({"type": "tool_call_response", "id": block.get("tool_use_id"),
                                "response": _result_content(block.get("content"))})
        if results:
            messages.append({"role": "tool", "parts": results})
        if parts or not results:
            messages.append({"role": role, "parts": parts})
    names = [t.get("name") for t in body.get("tools") or [] if t.get("name")]
    return SimRequest(model=str(body.get("model", "")), messages=messages, tool_names=names, raw=body)


def _content(reply: Reply, request_no: int) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    text = reply.refusal if reply.refusal is not None else reply.text
    if text:
        content.append({"type": "text", "text": text})
    for i, c in enumerate(reply.tool_calls):
        content.append({"type": "tool_use", "id": call_id("toolu_sim", request_no, i), "name": c["name"],
                        "input": c["arguments"]})
    return content


def _stop_reason(reply: Reply) -> str:
    if reply.refusal is not None:
        return "refusal"
    return "tool_use" if reply.tool_calls else "end_turn"


def message(request: SimRequest, reply: Reply, request_no: int) -> dict[str, Any]:
    return {
        "id": f"msg_sim{request_no:08d}", "type": "message", "role": "assistant", "model": request.model,
        "content": _content(reply, request_no), "stop_reason": _stop_reason(reply), "stop_sequence": None,
        "usage": {"input_tokens": body_tokens(request.raw.get("messages", [])),
                  "output_tokens": tokens((reply.text or "") + (reply.refusal or "") + str(reply.tool_calls)),
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def message_events(request: SimRequest, reply: Reply, request_no: int) -> Iterator[bytes]:
    """The Messages SSE sequence: message_start, content blocks with deltas, message_delta/stop."""
    full = message(request, reply, request_no)
    start = full | {"content": [], "stop_reason": None, "usage": full["usage"] | {"output_tokens": 1}}
    yield sse({"type": "message_start", "message": start}, event="message_start")
    yield sse({"type": "ping"}, event="ping")
    for index, block in enumerate(full["content"]):
        if block["type"] == "text":
            yield sse({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                      event="content_block_start")
            for piece in pieces(block["text"]):
                yield sse({"type": "content_block_delta", "index": index,
                           "delta": {"type": "text_delta", "text": piece}}, event="content_block_delta")
        else:
            yield sse({"type": "content_block_start", "index": index,
                       "content_block": block | {"input": {}}}, event="content_block_start")
            for piece in pieces(orjson.dumps(block["input"]).decode(), 8):
                yield sse({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta", "partial_json": piece}}, event="content_block_delta")
        yield sse({"type": "content_block_stop", "index": index}, event="content_block_stop")
    yield sse({"type": "message_delta", "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
               "usage": {"output_tokens": full["usage"]["output_tokens"]}}, event="message_delta")
    yield sse({"type": "message_stop"}, event="message_stop")
