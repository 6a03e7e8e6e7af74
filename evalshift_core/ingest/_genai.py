"""Model-call spans written by other instrumentations, read into the capture event schema.

Covers GenAI-semantic-convention spans (opentelemetry-instrumentation-genai-openai / -openai-v2
with message content captured, recent OpenLLMetry) and OpenLLMetry's older indexed attributes
(``gen_ai.prompt.N.*``, ``gen_ai.completion.N.*``, ``llm.request.functions.N.*``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalshift_sdk import schema as A
from evalshift_sdk.schema import ToolShapeError, json_or_text, normalise_toolset, toolset_ref

if TYPE_CHECKING:
    from ._otlp import Span

# Request attributes that map onto generation_config keys.
_GENERATION = {
    "gen_ai.request.temperature": "temperature",
    "gen_ai.request.top_p": "top_p",
    "gen_ai.request.top_k": "top_k",
    "gen_ai.request.max_tokens": "max_tokens",
    "gen_ai.request.frequency_penalty": "frequency_penalty",
    "gen_ai.request.presence_penalty": "presence_penalty",
    "gen_ai.request.seed": "seed",
    "gen_ai.request.stop_sequences": "stop",
    "gen_ai.request.choice.count": "n",
    "gen_ai.openai.request.seed": "seed",
    "gen_ai.openai.request.response_format": "response_format",
    "gen_ai.request.tool_choice": "tool_choice",
    "gen_ai.request.parallel_tool_calls": "parallel_tool_calls",
    "llm.request.tool_choice": "tool_choice",
    "llm.top_k": "top_k",
    "llm.frequency_penalty": "frequency_penalty",
    "llm.presence_penalty": "presence_penalty",
}

NOTE_NO_CONTENT = (
    "no message content recorded (run the instrumentation with content capture on, e.g. "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY or TRACELOOP_TRACE_CONTENT=true)"
)
NOTE_NO_OUTPUT = "no model response recorded: ground truth falls back to executed tool calls, if any"
NOTE_NO_TOOLS = "no tool definitions recorded: the example offers no tools"
NOTE_NO_TOOL_CHOICE = "tool_choice and parallel_tool_calls not recorded"


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _clean_part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "content": part.get("content", "")}
    if kind == "tool_call":
        return {"type": "tool_call", "id": part.get("id"), "name": part.get("name", ""),
                "arguments": json_or_text(part.get("arguments"))}
    if kind == "tool_call_response":
        return {"type": "tool_call_response", "id": part.get("id"), "response": part.get("response")}
    return {k: v for k, v in part.items() if v is not None}


def semconv_messages(raw: Any) -> list[dict[str, Any]]:
    """``gen_ai.input.messages`` as clean semconv messages (role + parts, no null keys)."""
    out: list[dict[str, Any]] = []
    value = json_or_text(raw)
    for msg in value if isinstance(value, list) else ():
        if not isinstance(msg, dict):
            continue
        raw_parts = msg.get("parts")
        parts = [p for p in map(_clean_part, raw_parts) if p is not None] if isinstance(raw_parts, list) else []
        out.append({"role": str(msg.get("role", "user")), "parts": parts})
    return out


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes grouped into a list of dicts ``{rest: value}`` by N."""
    groups: dict[int, dict[str, Any]] = {}
    cut = len(prefix) + 1
    for key, value in attrs.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[cut:].partition(".")
        if index.isdigit() and rest:
            groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def _legacy_tool_calls(entry: dict[str, Any]) -> list[dict[str, Any]]:
    calls = _indexed(entry, "tool_calls")
    if not calls and entry.get("function_call.name"):
        calls = [{"name": entry["function_call.name"], "arguments": entry.get("function_call.arguments")}]
    return calls


def legacy_messages(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenLLMetry's ``gen_ai.prompt.N.*`` attributes as semconv messages."""
    out: list[dict[str, Any]] = []
    for entry in _indexed(attrs, "gen_ai.prompt"):
        role = str(entry.get("role", "user"))
        parts: list[dict[str, Any]] = []
        content = entry.get("content")
        if content is not None and not isinstance(content, str):
            content = str(content)
        if role == "tool":
            parts.append({"type": "tool_call_response", "id": entry.get("tool_call_id"), "response": content})
        else:
            if content:
                parts.append({"type": "text", "content": content})
            for call in _legacy_tool_calls(entry):
                parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name", ""),
                              "arguments": json_or_text(call.get("arguments"))})
        out.append({"role": role, "parts": parts})
    return out


def _output(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Requested tool calls and text of the response; calls are None when nothing was recorded."""
    if A.OUTPUT_MESSAGES in attrs:
        messages = semconv_messages(attrs[A.OUTPUT_MESSAGES])
        parts = messages[0]["parts"] if messages else []
        calls = [{"call_id": _str_or_none(p.get("id")), "tool_name": str(p.get("name") or ""),
                  "arguments": p.get("arguments")}
                 for p in parts if p.get("type") == "tool_call"]
        texts = [str(p.get("content", "")) for p in parts if p.get("type") == "text"]
        return calls, ("".join(texts) or None)
    completions = _indexed(attrs, "gen_ai.completion")
    if completions:
        first = completions[0]
        calls = [{"call_id": _str_or_none(c.get("id")), "tool_name": str(c.get("name", "")),
                  "arguments": json_or_text(c.get("arguments"))}
                 for c in _legacy_tool_calls(first)]
        content = first.get("content")
        return calls, (str(content) if content else None)
    return None, None


def offered_toolset(
    definitions: list[Any] | None, calls: list[Any] | None, notes: list[str]
) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The toolset a model call offered, canonical, and its content-addressed ref; a note when
    its definitions are unreadable, or when it requested calls without recording any."""
    if not definitions:
        if calls:
            notes.append(NOTE_NO_TOOLS)
        return None, None
    try:
        tools = normalise_toolset(definitions)
    except ToolShapeError as exc:
        notes.append(f"tool definitions unreadable ({exc}): the example offers no tools")
        return None, None
    return tools, toolset_ref(tools)


def _tool_definitions(attrs: dict[str, Any]) -> list[dict[str, Any]] | None:
    if A.TOOL_DEFINITIONS in attrs:
        tools = json_or_text(attrs[A.TOOL_DEFINITIONS])
        return tools if isinstance(tools, list) else None
    functions = _indexed(attrs, "llm.request.functions")
    if not functions:
        return None
    return [{"name": str(f.get("name", "")), "description": f.get("description"),
             "parameters": json_or_text(f.get("parameters")) or {"type": "object", "properties": {}}}
            for f in functions]


def model_call_event(span: Span, round_index: int) -> tuple[dict[str, Any], list[dict[str, Any]] | None, list[str]]:
    """A model_call event from a foreign span, the toolset it recorded, and what it lacks."""
    a = span.attrs
    notes: list[str] = []
    if A.INPUT_MESSAGES in a:
        messages = semconv_messages(a[A.INPUT_MESSAGES])
    else:
        messages = legacy_messages(a)
    if not messages:
        notes.append(NOTE_NO_CONTENT)
    calls, text = _output(a)
    if calls is None:
        notes.append(NOTE_NO_OUTPUT)
    definitions = _tool_definitions(a)
    tools, ref = offered_toolset(definitions, calls, notes)
    config = {key: a[attr] for attr, key in _GENERATION.items() if attr in a}
    if "gen_ai.request.max_tokens" not in a and "llm.request.max_tokens" in a:
        config["max_tokens"] = a["llm.request.max_tokens"]
    if definitions and "tool_choice" not in config:
        notes.append(NOTE_NO_TOOL_CHOICE)
    usage = {}
    for key, names in (("input_tokens", (A.INPUT_TOKENS, "gen_ai.usage.prompt_tokens")),
                       ("output_tokens", (A.OUTPUT_TOKENS, "gen_ai.usage.completion_tokens"))):
        for name in names:
            if name in a:
                usage[key] = a[name]
                break
    event: dict[str, Any] = {
        "type": "model_call",
        "round_index": round_index,
        "model": a.get(A.RESPONSE_MODEL) or a.get(A.REQUEST_MODEL),
        "request_model": a.get(A.REQUEST_MODEL),
        "provider": a.get(A.PROVIDER) or (str(a["gen_ai.system"]).lower() if "gen_ai.system" in a else None),
        "toolset_ref": ref,
        "generation_config": config,
        "messages": messages,
        "requested_tool_calls": calls,
        "text": text,
        "refusal": None,
        "usage": usage,
        "error": (a.get(A.ERROR_TYPE) or span.status_message or "error") if span.status == 2 else None,
    }
    system = json_or_text(a.get(A.SYSTEM_INSTRUCTIONS))
    if isinstance(system, list) and system:
        event["system_instructions"] = system
    return event, tools, notes
