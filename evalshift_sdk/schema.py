"""The capture format EvalShift writes and reads: span attribute names, the toolset canonical
form and its content-addressed ref, and the JSON-or-text rule for attribute values.

The SDK writes with these names and functions and ``evalshift_core`` reads with them, so a capture
file, a toolset sidecar and a loaded suite always agree. Imports nothing heavier than orjson.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

__all__ = [
    "AGENT_NAME", "DEFERRED", "ERROR_TYPE", "FINISH_REASONS", "GENERATION_CONFIG", "IMPLICIT_TURN", "INPUTS",
    "INPUT_MESSAGES", "INPUT_TOKENS", "LATENCY_MS", "OPERATION", "OP_CHAT", "OP_EXECUTE_TOOL", "OP_INVOKE_AGENT",
    "OUTPUT_MESSAGES", "OUTPUT_TEXT", "OUTPUT_TOKENS", "PROMPT_ID", "PROVIDER", "REFUSAL", "REQUESTED_TOOL_CALLS",
    "REQUEST_MODEL", "RESPONSE_ID", "RESPONSE_MODEL", "SCOPE_NAME", "STREAMED", "STREAM_INCOMPLETE",
    "SYSTEM_INSTRUCTIONS", "TAGS", "TOOLSET_REF", "TOOL_CALL_ARGUMENTS", "TOOL_CALL_ID", "TOOL_CALL_RESULT",
    "TOOL_DEFINITIONS", "TOOL_ERROR", "TOOL_FAILED", "TOOL_NAME",
    "ToolShapeError", "canonical_json", "json_or_text", "normalise_tool", "normalise_toolset", "ref_filename",
    "toolset_ref",
]

# -- span names and attribute keys ------------------------------------------------------------------
# GenAI semantic-convention names where they exist; what they lack lives under ``evalshift.*``.

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
AGENT_NAME = "gen_ai.agent.name"
ERROR_TYPE = "error.type"

TOOLSET_REF = "evalshift.toolset_ref"
REQUESTED_TOOL_CALLS = "evalshift.requested_tool_calls"
GENERATION_CONFIG = "evalshift.generation_config"
REFUSAL = "evalshift.refusal"
OUTPUT_TEXT = "evalshift.output_text"
PROMPT_ID = "evalshift.prompt_id"
INPUTS = "evalshift.inputs"
TAGS = "evalshift.tags"
TOOL_ERROR = "evalshift.tool.error"
TOOL_FAILED = "evalshift.tool.failed"
STREAMED = "evalshift.streamed"
# The host stopped reading a stream before its end (closed, broken out of, or dropped).
STREAM_INCOMPLETE = "evalshift.stream_incomplete"
LATENCY_MS = "evalshift.latency_ms"
IMPLICIT_TURN = "evalshift.implicit_turn"
# Reserved, never written: the key under which a model call's pending conversions travel until
# the export thread resolves them into the attributes above (``instrumentation._genai.Deferred``).
DEFERRED = "evalshift.internal.deferred"

OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_INVOKE_AGENT = "invoke_agent"

# The instrumentation scope of every span the SDK writes.
SCOPE_NAME = "evalshift_sdk"


# -- toolsets ---------------------------------------------------------------------------------------
# One function computes a toolset's identity for both the SDK and the core, so a sidecar written by
# a production agent and a toolset loaded by `evalshift run` always agree on their ref.

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class ToolShapeError(ValueError):
    """A tool dict matches none of the accepted provider shapes."""


def normalise_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """Return one tool in the canonical (Anthropic-like) shape.

    Accepts the Anthropic shape (``name``/``input_schema``), the OpenAI Chat shape
    (``{"type": "function", "function": {...}}``), the OpenAI Responses shape
    (``{"type": "function", "name": ..., "parameters": ...}``) and a Gemini function
    declaration (``name``/``parameters``). ``strict`` is kept only when set.
    """
    if not isinstance(tool, Mapping):
        raise ToolShapeError(f"a tool must be a mapping, got {type(tool).__name__}")
    src: Mapping[str, Any] = tool
    strict = tool.get("strict")
    if isinstance(tool.get("function"), Mapping):
        src = tool["function"]
        strict = src.get("strict", strict)
    name = src.get("name")
    if not isinstance(name, str) or not name:
        raise ToolShapeError("a tool needs a non-empty string 'name'")
    schema = src.get("input_schema")
    if schema is None:
        schema = src.get("parameters")
    if schema is None:
        schema = src.get("parameters_json_schema")
    if schema is None:
        schema = _EMPTY_SCHEMA
    if not isinstance(schema, Mapping):
        raise ToolShapeError(f"tool {name!r}: the parameter schema must be a mapping")
    out: dict[str, Any] = {"name": name, "input_schema": dict(schema)}
    description = src.get("description")
    if description:
        out["description"] = str(description)
    if strict is not None:
        out["strict"] = bool(strict)
    return out


def normalise_toolset(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Normalise every tool, keeping the order the application offered them in."""
    return [normalise_tool(t) for t in tools]


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the bytes a toolset's identity is taken over."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def toolset_ref(normalised: list[dict[str, Any]]) -> str:
    """``sha256:<hex>`` of the canonical JSON of an already-normalised tool list."""
    return "sha256:" + hashlib.sha256(canonical_json(normalised)).hexdigest()


def ref_filename(ref: str) -> str:
    """The sidecar file name for a ref: ``<hex>.json``."""
    return ref.split(":", 1)[-1] + ".json"


# -- attribute values -------------------------------------------------------------------------------


def json_or_text(value: Any) -> Any:
    """JSON text (str or bytes) decoded; anything else, or text that is not JSON, as it is."""
    if isinstance(value, (str, bytes)):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value
