"""OpenInference spans, read into the capture event schema next to the GenAI semconv.

OpenInference is what Arize Phoenix, LlamaIndex, DSPy, CrewAI and the OpenAI Agents SDK
instrumentation emit: ``openinference.span.kind`` names a span ``LLM`` (a model call), ``TOOL``
(a tool execution), ``AGENT`` or ``CHAIN`` (the app around them). An LLM span flattens its
conversation into indexed attributes::

    llm.input_messages.{i}.message.role / .content / .contents.{k}.message_content.text
    llm.input_messages.{i}.message.tool_calls.{j}.tool_call.id / .function.name / .function.arguments
    llm.input_messages.{i}.message.tool_call_id
    llm.output_messages.{i}.message...              (the same shape: the response)
    llm.tools.{i}.tool.json_schema                  (one offered tool, as JSON text)
    llm.model_name, llm.invocation_parameters (JSON), llm.provider / llm.system,
    llm.token_count.prompt / .completion

and a TOOL span records ``tool.name``, its arguments as ``input.value`` and its result as
``output.value`` (``tool.parameters`` is the tool's schema, not the call's arguments).
Everything here yields the same event and note shapes ``_genai`` does, so promotion reads both alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalshift_sdk.schema import json_or_text

from ._genai import NOTE_NO_OUTPUT, NOTE_NO_TOOL_CHOICE, offered_toolset

if TYPE_CHECKING:
    from ._otlp import Span

SPAN_KIND = "openinference.span.kind"
KIND_LLM = "LLM"
KIND_TOOL = "TOOL"

NOTE_NO_CONTENT = (
    "no message content recorded (OpenInference hides it when OPENINFERENCE_HIDE_INPUT_MESSAGES or "
    "OPENINFERENCE_HIDE_INPUTS is set: unset them to capture it)"
)

# Invocation parameters that map onto generation_config keys (the SDK's names).
_GENERATION = {
    "temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "max_tokens": "max_tokens",
    "frequency_penalty": "frequency_penalty", "presence_penalty": "presence_penalty", "seed": "seed",
    "stop": "stop", "stop_sequences": "stop", "n": "n", "response_format": "response_format",
    "tool_choice": "tool_choice", "parallel_tool_calls": "parallel_tool_calls",
}


def kind(span: Span) -> str | None:
    """The span's OpenInference kind, upper-cased, or None for a span of another dialect."""
    value = span.attrs.get(SPAN_KIND)
    return value.upper() if isinstance(value, str) else None


def _nested(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes grouped by N, in index order, as ``{rest: value}``."""
    groups: dict[int, dict[str, Any]] = {}
    cut = len(prefix) + 1
    for key, value in attrs.items():
        if not key.startswith(prefix) or key[cut - 1:cut] != ".":
            continue
        index, _, rest = key[cut:].partition(".")
        if index.isdigit() and rest:
            groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def _text(message: dict[str, Any]) -> str | None:
    content = message.get("message.content")
    if content is not None:
        return content if isinstance(content, str) else str(content)
    texts = [str(c.get("message_content.text", "")) for c in _nested(message, "message.contents")
             if c.get("message_content.type", "text") == "text" and c.get("message_content.text") is not None]
    return "".join(texts) if texts else None


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Requested calls: ``message.tool_calls``, or tool-use content blocks when only they were written."""
    out = []
    entries = _nested(message, "message.tool_calls") or [
        c for c in _nested(message, "message.contents") if c.get("tool_call.function.name")]
    for call in entries:
        name = call.get("tool_call.function.name")
        if not name:
            continue
        cid = call.get("tool_call.id")
        out.append({"id": None if cid is None else str(cid), "name": str(name),
                    "arguments": json_or_text(call.get("tool_call.function.arguments"))})
    return out


def _message(message: dict[str, Any]) -> dict[str, Any]:
    """One flattened OpenInference message as a semconv message (role + parts)."""
    role = str(message.get("message.role") or "user")
    text = _text(message)
    call_id = message.get("message.tool_call_id")
    if role == "tool" or (call_id is not None and role != "assistant"):
        return {"role": "tool", "parts": [{"type": "tool_call_response",
                                           "id": None if call_id is None else str(call_id), "response": text}]}
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "content": text})
    for call in _calls(message):
        parts.append({"type": "tool_call", **call})
    return {"role": role, "parts": parts}


def _messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [_message(m) for m in _nested(attrs, prefix)]


def _tool_definitions(attrs: dict[str, Any]) -> list[Any]:
    return [json_or_text(t.get("tool.json_schema")) for t in _nested(attrs, "llm.tools")
            if t.get("tool.json_schema") is not None]


def model_call_event(span: Span, round_index: int) -> tuple[dict[str, Any], list[dict[str, Any]] | None, list[str]]:
    """A model_call event from an OpenInference LLM span, the toolset it offered, and what it lacks."""
    a = span.attrs
    notes: list[str] = []
    messages = _messages(a, "llm.input_messages")
    if not messages:
        notes.append(NOTE_NO_CONTENT)
    outputs = _messages(a, "llm.output_messages")
    calls: list[dict[str, Any]] | None = None
    text: str | None = None
    if outputs:
        parts = [p for m in outputs for p in m["parts"]]
        calls = [{"call_id": p["id"], "tool_name": p["name"], "arguments": p["arguments"]}
                 for p in parts if p["type"] == "tool_call"]
        text = "".join(str(p["content"]) for p in parts if p["type"] == "text") or None
    else:
        notes.append(NOTE_NO_OUTPUT)
    params = json_or_text(a.get("llm.invocation_parameters"))
    params = params if isinstance(params, dict) else {}
    config = {key: params[name] for name, key in _GENERATION.items() if params.get(name) is not None}
    definitions = _tool_definitions(a)
    tools, ref = offered_toolset(definitions, calls, notes)
    if definitions and "tool_choice" not in config:
        notes.append(NOTE_NO_TOOL_CHOICE)
    usage = {}
    for key, name in (("input_tokens", "llm.token_count.prompt"), ("output_tokens", "llm.token_count.completion")):
        if name in a:
            usage[key] = a[name]
    provider = a.get("llm.provider") or a.get("llm.system")
    request_model = a.get("llm.request.model_name") or params.get("model")
    event: dict[str, Any] = {
        "type": "model_call",
        "round_index": round_index,
        "model": a.get("llm.response.model_name") or a.get("llm.model_name") or request_model,
        "request_model": None if request_model is None else str(request_model),
        "provider": str(provider).lower() if provider is not None else None,
        "toolset_ref": ref,
        "generation_config": config,
        "messages": messages,
        "requested_tool_calls": calls,
        "text": text,
        "refusal": None,
        "usage": usage,
        "error": (a.get("exception.type") or span.status_message or "error") if span.status == 2 else None,
    }
    return event, tools, notes


def tool_events(span: Span) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tool_call and tool_result events of an OpenInference TOOL span."""
    a = span.attrs
    call_id = a.get("tool_call.id", a.get("tool.id"))
    call_id = None if call_id is None else str(call_id)
    name = str(a.get("tool.name") or a.get("tool_call.function.name") or span.name)
    arguments = a.get("tool_call.function.arguments", a.get("input.value"))
    error = None
    if span.status == 2:
        error = span.status_message or a.get("exception.message") or a.get("exception.type") or "error"
    return (
        {"type": "tool_call", "call_id": call_id, "tool_name": name, "arguments": json_or_text(arguments)},
        {"type": "tool_result", "call_id": call_id, "tool_name": name,
         "result": json_or_text(a.get("output.value")), "error": error},
    )
