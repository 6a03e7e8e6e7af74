"""Gemini wire format for the simulator: ``models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` (JSON and SSE, camelCase as the REST API speaks it)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ._rules import Reply, SimRequest
from ._wire import body_tokens, call_id, sse, tokens

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)")


def match_path(path: str) -> tuple[str, bool] | None:
    """``(model, streaming)`` when ``path`` is a Gemini generate call, else None."""
    found = _PATH.search(path.split("?", 1)[0])
    if found is None:
        return None
    return found.group("model"), found.group("method") == "streamGenerateContent"


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    return obj.get(camel, obj.get(snake))


def parse_generate_request(model: str, body: dict[str, Any]) -> SimRequest:
    """generateContent request reduced to semconv messages."""
    messages: list[dict[str, Any]] = []
    system = _get(body, "systemInstruction", "system_instruction")
    if system:
        text = "".join(p.get("text", "") for p in system.get("parts", []))
        messages.append({"role": "system", "parts": [{"type": "text", "content": text}]})
    for content in body.get("contents", []):
        role = "assistant" if content.get("role") == "model" else "user"
        parts: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for p in content.get("parts", []):
            fc = _get(p, "functionCall", "function_call")
            fr = _get(p, "functionResponse", "function_response")
            if fc is not None:
                parts.append({"type": "tool_call", "id": fc.get("id"), "name": fc.get("name"),
                              "arguments": fc.get("args", {})})
            elif fr is not None:
                results.append({"type": "tool_call_response", "id": fr.get("id"), "name": fr.get("name"),
                                "response": fr.get("response")})
            elif "text" in p and not p.get("thought"):
                parts.append({"type": "text", "content": p["text"]})
        if results:
            messages.append({"role": "tool", "parts": results})
        if parts or not results:
            messages.append({"role": role, "parts": parts})
    names = []
    for tool in body.get("tools") or []:
        for decl in _get(tool, "functionDeclarations", "function_declarations") or []:
            if decl.get("name"):
                names.append(decl["name"])
    return SimRequest(model=model, messages=messages, tool_names=names, raw=body)


def _parts(reply: Reply, request_no: int, model: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if reply.text:
        parts.append({"text": reply.text})
    for i, c in enumerate(reply.tool_calls):
        fc = {"name": c["name"], "args": c["arguments"]}
        if model.startswith("gemini-3"):
            fc["id"] = call_id("g", request_no, i)  # Gemini 3 returns call ids; older models none
        parts.append({"functionCall": fc})
    return parts


def _usage(request: SimRequest, reply: Reply) -> dict[str, Any]:
    prompt = body_tokens(request.raw.get("contents", []))
    out = tokens((reply.text or "") + str(reply.tool_calls))
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out}


def generate_content(request: SimRequest, reply: Reply, request_no: int) -> dict[str, Any]:
    if reply.refusal is not None:
        # Gemini's closest thing to a refusal: a SAFETY finish with empty content.
        candidate: dict[str, Any] = {"content": {}, "finishReason": "SAFETY", "index": 0}
    else:
        candidate = {"content": {"role": "model", "parts": _parts(reply, request_no, request.model)},
                     "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": _usage(request, reply),
            "modelVersion": request.model, "responseId": f"sim{request_no:08d}"}


def generate_content_events(request: SimRequest, reply: Reply, request_no: int) -> Iterator[bytes]:
    """The SSE stream: one chunk per part, the last carrying finishReason (``\\r\\n\\r\\n``-framed)."""
    full = generate_content(request, reply, request_no)
    candidate = full["candidates"][0]
    parts = candidate["content"].get("parts", [])
    head = {k: full[k] for k in ("usageMetadata", "modelVersion", "responseId")}
    for part in parts:
        yield sse({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]} | head,
                  sep=b"\r\n\r\n")
    last = {"content": {"role": "model", "parts": [{"text": ""}]}} if parts else {"content": {}}
    yield sse({"candidates": [last | {"finishReason": candidate["finishReason"], "index": 0}]} | head,
              sep=b"\r\n\r\n")
