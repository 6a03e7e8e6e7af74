"""Toolset canonical form and content-addressed identity.

One function computes a toolset's identity for both the SDK and the core, so a sidecar written
by a production agent and a toolset loaded by `evalshift run` always agree on their ref.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

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
