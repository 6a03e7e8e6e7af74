"""Target calls checked against the offered tool's ``input_schema`` (``ARGUMENT_SCHEMA_VIOLATION``).

A migrated model that sends ``{"amount_usd": "12"}`` to a tool declaring ``amount_usd`` a number
has broken the call whatever the source did: the tool would reject it or coerce it. jsonschema
checks types, required keys, enums and the rest of the schema the model was offered.

Validators are compiled once per distinct schema (a suite offers a handful of toolsets to
thousands of examples) and only calls of a tool whose schema constrains something are checked;
a schema that is itself invalid, or needs a ``$ref`` that does not resolve locally, gives no
verdict rather than a false label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._models import Tool, ToolCall

ARGUMENT_SCHEMA_VIOLATION = "ARGUMENT_SCHEMA_VIOLATION"
ROOT_FIELD = "(arguments)"
"""Field name of a violation at the top of the arguments (a missing required key names the key)."""
MESSAGE_CAP = 300

_UNCONSTRAINED = ({}, {"type": "object"}, {"type": "object", "properties": {}})


def constrains(schema: Any) -> bool:
    """True when a schema says anything about the arguments (the default empty object does not)."""
    return isinstance(schema, dict) and schema not in _UNCONSTRAINED


class SchemaCheck:
    """Validators for the tools offered to a pair, compiled once per schema and reused."""

    __slots__ = ("_by_schema", "_by_toolset")

    def __init__(self) -> None:
        self._by_schema: dict[bytes, Any] = {}
        """Canonical schema JSON -> compiled validator, or None when the schema is unusable."""
        self._by_toolset: dict[str, dict[str, Any]] = {}
        """``toolset_ref`` -> tool name -> validator or None."""

    def validator(self, tools: Sequence[Tool], toolset_ref: str | None, name: str) -> Any:
        """The validator of tool ``name`` among the offered ``tools``, or None (not offered, no
        schema, an unusable schema). Cached by ``toolset_ref`` (a content hash) when there is one."""
        cache = self._by_toolset.get(toolset_ref) if toolset_ref is not None else None
        if cache is not None and name in cache:
            return cache[name]
        tool = next((t for t in tools if t.name == name), None)
        schema = tool.input_schema if tool is not None else None
        validator = self._compiled(schema) if constrains(schema) else None
        if toolset_ref is not None:
            self._by_toolset.setdefault(toolset_ref, {})[name] = validator
        return validator

    def _compiled(self, schema: dict[str, Any]) -> Any:
        import orjson

        try:
            key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return None
        if key in self._by_schema:
            return self._by_schema[key]
        from jsonschema import exceptions, validators

        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        try:
            cls.check_schema(schema)
            validator: Any = _Checked(cls(schema), surely_valid(schema))
        except (exceptions.SchemaError, TypeError, ValueError):
            validator = None
        self._by_schema[key] = validator
        return validator

    def violations(self, tools: Sequence[Tool] | None, toolset_ref: str | None,
                   calls: Sequence[ToolCall], *, rounds: bool) -> list[dict[str, Any]]:
        """One field entry per violation in ``calls`` of a tool with a schema, in call order.

        ``{"tool", "field", "target", "message", "label"}``, plus ``round`` when
        ``rounds`` (a multi-round trace). Each call reports each field once (its first error).
        """
        if not calls or not tools:
            return []
        out: list[dict[str, Any]] = []
        for call in calls:
            validator = self.validator(tools, toolset_ref, call.tool_name)
            if validator is None:
                continue
            arguments = call.arguments
            fast = validator.fast
            if fast is not None and fast(arguments):
                continue
            try:
                errors = sorted(validator.full.iter_errors(arguments), key=_error_order)  # one walk
                if not errors:
                    continue
            except Exception:  # noqa: BLE001 - an unresolvable $ref or a pathological schema: no verdict
                continue
            seen: set[str] = set()
            for error in errors:
                field, value = _located(error, arguments)
                if field in seen:
                    continue
                seen.add(field)
                entry: dict[str, Any] = {
                    "tool": call.tool_name, "field": field, "target": value,
                    "message": _message(error), "label": ARGUMENT_SCHEMA_VIOLATION,
                }
                if value is _ABSENT:
                    entry["target"] = None
                    entry["missing"] = "target"
                if rounds:
                    entry["round"] = call.round_index
                out.append(entry)
        return out


_ABSENT = object()


class _Checked:
    """A compiled jsonschema validator and, for the common flat schemas, a fast pre-check."""

    __slots__ = ("fast", "full")

    def __init__(self, full: Any, fast: Callable[[Any], bool] | None) -> None:
        self.full = full
        self.fast = fast


# -- the fast pre-check ---------------------------------------------------------------------------
# jsonschema walks a schema keyword by keyword (tens of microseconds a call); most tool schemas
# are a flat object of typed, maybe enumerated, properties. For those a plain-Python check says
# "surely valid" in about a microsecond. It only ever answers True when jsonschema would too:
# anything it does not fully understand (a keyword outside the subset, a float for an integer,
# a non-string enum value) makes it answer False, and jsonschema decides. So it can skip work,
# never hide a violation, and never invent one (every label comes from jsonschema's errors).

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "deprecated"})
_TOP_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
_PROPERTY_KEYS = _ANNOTATIONS | {"type", "enum"}
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "number": lambda v: type(v) is int or type(v) is float,  # bool is not a number in JSON Schema
    "integer": lambda v: type(v) is int,  # 3.0 is an integer too: left to jsonschema
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}


def _property_check(prop: Any) -> Callable[[Any], bool] | None:
    if not isinstance(prop, dict) or not prop.keys() <= _PROPERTY_KEYS:
        return None
    checks: list[Callable[[Any], bool]] = []
    kind = prop.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not kinds or not all(isinstance(k, str) and k in _TYPE_CHECKS for k in kinds):
            return None
        tests = [_TYPE_CHECKS[k] for k in kinds]
        checks.append(tests[0] if len(tests) == 1 else (lambda v, tests=tests: any(t(v) for t in tests)))
    if "enum" in prop:
        if not isinstance(prop["enum"], list):
            return None
        allowed = frozenset(e for e in prop["enum"] if type(e) is str)
        checks.append(lambda v: type(v) is str and v in allowed)
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    first, second = checks
    return lambda v: first(v) and second(v)


def surely_valid(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A check answering True only for arguments ``schema`` surely accepts; None when the schema
    is outside the flat subset it understands."""
    if not schema.keys() <= _TOP_KEYS or schema.get("type", "object") != "object":
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    if type(extra) is not bool:
        return None
    checks = {}
    for name, prop in props.items():
        check = _property_check(prop)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)

    def fast(arguments: Any) -> bool:
        if type(arguments) is not dict:
            return False
        for key in needed:
            if key not in arguments:
                return False
        for key, value in arguments.items():
            check = checks.get(key)
            if check is None:
                if not extra:
                    return False
            elif not check(value):
                return False
        return True

    return fast


def _error_order(error: Any) -> tuple[Any, ...]:
    return (tuple(str(p) for p in error.absolute_path), error.validator or "", error.message)


def _located(error: Any, arguments: Any) -> tuple[str, Any]:
    """The top-level argument field an error is about, and the call's value of it."""
    path = list(error.absolute_path)
    if path:
        key = str(path[0])
        value = arguments.get(path[0], _ABSENT) if isinstance(arguments, dict) else _ABSENT
        return key, value
    if error.validator == "required" and isinstance(error.validator_value, list) and isinstance(arguments, dict):
        for key in error.validator_value:
            if key not in arguments:
                return str(key), _ABSENT
    if error.validator == "additionalProperties" and isinstance(arguments, dict):
        props = error.schema.get("properties") if isinstance(error.schema, dict) else None
        for key, value in arguments.items():
            if not isinstance(props, dict) or key not in props:
                return str(key), value
    return ROOT_FIELD, arguments


def _message(error: Any) -> str:
    """jsonschema's own words (``'12' is not of type 'number'``), capped."""
    text = str(error.message)
    return text if len(text) <= MESSAGE_CAP else text[: MESSAGE_CAP - 1] + "…"
