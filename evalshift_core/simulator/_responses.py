"""OpenAI Responses API wire format for the simulator (``POST /v1/responses``, JSON and SSE)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from ._rules import Reply, SimRequest
from ._wire import body_tokens, call_id, parse_arguments, pieces, sse, tokens


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content or []:
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text"):
            texts.append(str(part.get("text", "")))
    return "".join(texts)


def parse_responses_request(body: dict[str, Any]) -> SimRequest:
    """Responses input items reduced to semconv messages."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "parts": [{"type": "text", "content": body["instructions"]}]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message" or ("role" in item and kind not in ("function_call", "function_call_output")):
            text = _content_text(item.get("content"))
            role = item.get("role", "user")
            messages.append({"role": "system" if role == "developer" else role,
                             "parts": [{"type": "text", "content": text}] if text else []})
        elif kind == "function_call":
            part = {"type": "tool_call", "id": item.get("call_id"), "name": item.get("name"),
                    "arguments": parse_arguments(item.get("arguments"))}
            if messages and messages[-1]["role"] == "assistant":
                messages[-1]["parts"].append(part)
            else:
                messages.append({"role": "assistant", "parts": [part]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "parts": [
                {"type": "tool_call_response", "id": item.get("call_id"), "response": item.get("output")}]})
    names = [t.get("name") for t in body.get("tools") or [] if t.get("type") == "function" and t.get("name")]
    return SimRequest(model=str(body.get("model", "")), messages=messages, tool_names=names, raw=body)


def _output(reply: Reply, request_no: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if reply.text is not None or reply.refusal is not None:
        content: list[dict[str, Any]] = []
        if reply.refusal is not None:
            content.append({"type": "refusal", "refusal": reply.refusal})
        if reply.text is not None:
            content.append({"type": "output_text", "text": reply.text, "annotations": []})
        out.append({"id": f"msg_sim{request_no}", "type": "message", "status": "completed",
                    "role": "assistant", "content": content})
    for i, c in enumerate(reply.tool_calls):
        out.append({"id": call_id("fc_sim", request_no, i), "type": "function_call", "status": "completed",
                    "arguments": orjson.dumps(c["arguments"]).decode(),
                    "call_id": call_id("call_", request_no, i), "name": c["name"]})
    return out


def response(request: SimRequest, reply: Reply, request_no: int, *, status: str = "completed",
             output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out = _output(reply, request_no) if output is None else output
    input_tokens = body_tokens(request.raw.get("input", []))
    output_tokens = tokens((reply.text or "") + (reply.refusal or "") + str(reply.tool_calls))
    body = request.raw
    return {
        "id": f"resp_sim{request_no}", "object": "response", "created_at": int(time.time()),
        "status": status, "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "model": request.model, "output": out,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "temperature": body.get("temperature", 1.0), "top_p": body.get("top_p", 1.0),
        "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools", []),
        "text": {"format": {"type": "text"}}, "truncation": "disabled", "metadata": {},
        "usage": None if status != "completed" else {
            "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    }


def response_events(request: SimRequest, reply: Reply, request_no: int) -> Iterator[bytes]:
    """The same reply as the Responses SSE event sequence (``event:`` + ``data:`` lines)."""
    seq = iter(range(10**6))

    def ev(kind: str, **data: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

    yield ev("response.created", response=response(request, reply, request_no, status="in_progress", output=[]))
    yield ev("response.in_progress", response=response(request, reply, request_no, status="in_progress", output=[]))
    for index, item in enumerate(_output(reply, request_no)):
        if item["type"] == "message":
            yield ev("response.output_item.added", output_index=index,
                     item=item | {"status": "in_progress", "content": []})
            for ci, content in enumerate(item["content"]):
                if content["type"] == "output_text":
                    yield ev("response.content_part.added", item_id=item["id"], output_index=index,
                             content_index=ci, part={"type": "output_text", "text": "", "annotations": []})
                    for piece in pieces(content["text"]):
                        yield ev("response.output_text.delta", item_id=item["id"], output_index=index,
                                 content_index=ci, delta=piece, logprobs=[])
                    yield ev("response.output_text.done", item_id=item["id"], output_index=index,
                             content_index=ci, text=content["text"], logprobs=[])
                else:
                    yield ev("response.content_part.added", item_id=item["id"], output_index=index,
                             content_index=ci, part={"type": "refusal", "refusal": ""})
                    yield ev("response.refusal.delta", item_id=item["id"], output_index=index,
                             content_index=ci, delta=content["refusal"])
                    yield ev("response.refusal.done", item_id=item["id"], output_index=index,
                             content_index=ci, refusal=content["refusal"])
                yield ev("response.content_part.done", item_id=item["id"], output_index=index,
                         content_index=ci, part=content)
        else:
            yield ev("response.output_item.added", output_index=index,
                     item=item | {"status": "in_progress", "arguments": ""})
            for piece in pieces(item["arguments"], 8):
                yield ev("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                         delta=piece)
            yield ev("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                     arguments=item["arguments"])
        yield ev("response.output_item.done", output_index=index, item=item)
    yield ev("response.completed", response=response(request, reply, request_no))
