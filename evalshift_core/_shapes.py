"""Shape checks for the free-form parts of an example that the replay reads field by field.

``history`` messages and ``generation_config`` are plain JSON on the Example model, so a suite
line could hold a message part that is a string, or ``stop: 1.5``, and still validate; these
checks refuse them at load, naming the field, instead of failing mid-replay. A toolset ref's
shape is checked here too: the models check it, and the store turns a ref into a file name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._limits import format_path

_TOOLSET_REF = re.compile(r"sha256:[0-9a-f]{64}")


class ShapeError(ValueError):
    """A value of the wrong shape; ``path`` is relative to the field being validated."""

    def __init__(self, message: str, path: list[str | int]) -> None:
        super().__init__(f"{format_path(path)}: {message}" if path else message)
        self.message = message
        self.path = path


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def check_messages(messages: list[Any]) -> None:
    """Semconv messages: ``{"role": str, "parts": [{"type": str, ...}]}``, as promotion writes them."""
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise ShapeError(f"each message must be an object with role and parts, not {_kind(msg)}", [i])
        role = msg.get("role")
        if role is not None and not isinstance(role, str):
            raise ShapeError(f"must be a string, not {_kind(role)}", [i, "role"])
        parts = msg.get("parts", [])
        if not isinstance(parts, list):
            raise ShapeError(f"must be a list of parts, not {_kind(parts)}", [i, "parts"])
        for j, part in enumerate(parts):
            where: list[str | int] = [i, "parts", j]
            if not isinstance(part, Mapping):
                raise ShapeError(f"each part must be an object with a type, not {_kind(part)}", where)
            kind = part.get("type")
            if kind is not None and not isinstance(kind, str):
                raise ShapeError(f"must be a string, not {_kind(kind)}", [*where, "type"])
            if kind in ("tool_call", "tool_call_response"):
                for key in ("id", "name"):
                    value = part.get(key)
                    if value is not None and not isinstance(value, str):
                        raise ShapeError(f"must be a string or null, not {_kind(value)}", [*where, key])


_NUMBER_KEYS = frozenset({"temperature", "top_p", "topP", "presence_penalty", "presencePenalty",
                          "frequency_penalty", "frequencyPenalty"})
_INTEGER_KEYS = frozenset({"top_k", "topK", "max_tokens", "max_completion_tokens", "max_output_tokens",
                           "maxOutputTokens", "seed"})
_STOP_KEYS = frozenset({"stop", "stop_sequences", "stopSequences"})
_TOOL_CHOICE_KEYS = frozenset({"tool_choice", "tool_config", "toolConfig"})


def check_generation_config(config: Mapping[str, Any]) -> None:
    """The settings every provider understands must have their type; other keys pass through."""
    for key, value in config.items():
        if value is None:
            continue
        if key in _NUMBER_KEYS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ShapeError(f"must be a number, not {_kind(value)}", [key])
        elif key in _INTEGER_KEYS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ShapeError(f"must be an integer, not {_kind(value)}", [key])
        elif key in _STOP_KEYS:
            if not isinstance(value, str) and not (
                    isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise ShapeError(f"must be a string or a list of strings, not {_kind(value)}", [key])
        elif key == "parallel_tool_calls":
            if not isinstance(value, bool):
                raise ShapeError(f"must be true or false, not {_kind(value)}", [key])
        elif key in _TOOL_CHOICE_KEYS:
            _check_tool_choice(value, [key])


def _check_tool_choice(value: Any, path: list[str | int]) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, Mapping):
        raise ShapeError(f"must be a string or an object, not {_kind(value)}", path)
    for key in ("function_calling_config", "functionCallingConfig"):
        fcc = value.get(key)
        if fcc is None:
            continue
        if not isinstance(fcc, Mapping):
            raise ShapeError(f"must be an object, not {_kind(fcc)}", [*path, key])
        for names_key in ("allowed_function_names", "allowedFunctionNames"):
            names = fcc.get(names_key)
            if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
                raise ShapeError(f"must be a list of strings, not {_kind(names)}", [*path, key, names_key])
    function = value.get("function")
    if function is not None and not isinstance(function, Mapping):
        raise ShapeError(f"must be an object, not {_kind(function)}", [*path, "function"])
    for key in ("type", "name"):
        item = value.get(key) if key != "name" else (value.get("name") or (function or {}).get("name"))
        if item is not None and not isinstance(item, str):
            raise ShapeError(f"must be a string, not {_kind(item)}", [*path, key])


def toolset_ref_problem(value: object) -> str | None:
    """Why ``value`` is not a toolset ref (``sha256:`` + 64 lowercase hex), or None."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not _TOOLSET_REF.fullmatch(value):
        return "must be 'sha256:' followed by 64 lowercase hex digits"
    return None
