"""OpenAI Chat Completions wire format for the simulator (JSON and SSE)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from ._rules import Reply, SimRequest
from ._wire import call_id, parse_arguments


def parse_chat_request(body: dict[str, Any]) -> SimRequest:
    messages = []
    for msg in body.get("messages", []):
        role = msg.get("role", "user")
        parts: list[dict[str, Any]] = []
        content = msg.get("content")
        if role == "tool":
            parts.append({"type": "tool_call_response", "id": msg.get("tool_call_id"), "response": content})
        else:
            if isinstance(content, str) and content:
                parts.append({"type": "text", "content": content})
            elif isinstance(content, list):
                for p in content:
                    if isinstance(p, dict) and p.get("type") == "text":
                        parts.append({"type": "text", "content": p.get("text", "")})
            for call in msg.get("tool_calls") or []:
                fn = call.get("function", {})
                parts.append(
                    {"type": "tool_call", "id": call.get("id"), "name": fn.get("name"),
                     "arguments": parse_arguments(fn.get("arguments"))}
                )
        messages.append({"role": role, "parts": parts})
    names = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") or tool
        if fn.get("name"):
            names.append(fn["name"])
    return SimRequest(model=str(body.get("model", "")), messages=messages, tool_names=names, raw=body)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _call_id(n: int, seed: str) -> str:
    return call_id("call_", int(seed), n)


def chat_completion(request: SimRequest, reply: Reply, request_no: int) -> dict[str, Any]:
    tool_calls = [
        {
            "id": _call_id(i, f"{request_no}"),
            "type": "function",
            "function": {"name": c["name"], "arguments": orjson.dumps(c["arguments"]).decode()},
        }
        for i, c in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": reply.refusal}
    if tool_calls:
        message["tool_calls"] = tool_calls
    finish = "tool_calls" if tool_calls else "stop"
    prompt_tokens = _tokens(orjson.dumps(request.raw.get("messages", [])).decode())
    completion_tokens = _tokens((reply.text or "") + (reply.refusal or "") + str(reply.tool_calls))
    return {
        "id": f"chatcmpl-sim{request_no}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chat_completion_chunks(request: SimRequest, reply: Reply, request_no: int) -> Iterator[bytes]:
    """The same reply as an SSE stream, arguments split into fragments as real streams do."""
    full = chat_completion(request, reply, request_no)
    base = {k: full[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        body = base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage is not None:
            body = body | {"usage": usage}
        return b"data: " + orjson.dumps(body) + b"\n\n"

    message = full["choices"][0]["message"]
    yield chunk({"role": "assistant", "content": ""})
    if message.get("refusal"):
        for piece in _pieces(message["refusal"]):
            yield chunk({"refusal": piece})
    if message.get("content"):
        for piece in _pieces(message["content"]):
            yield chunk({"content": piece})
    for i, tc in enumerate(message.get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                     "function": {"name": tc["function"]["name"], "arguments": ""}}]})
        for piece in _pieces(tc["function"]["arguments"], 8):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, full["choices"][0]["finish_reason"])
    if (request.raw.get("stream_options") or {}).get("include_usage"):
        yield b"data: " + orjson.dumps(base | {"choices": [], "usage": full["usage"]}) + b"\n\n"
    yield b"data: [DONE]\n\n"


def _pieces(text: str, size: int = 12) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]
