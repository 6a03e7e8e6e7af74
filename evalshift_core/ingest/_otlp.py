"""OTLP/JSON decoding: a span as read, its attribute values, and the checks of a span's shape.

Ids may be hex (OTLP/JSON) or base64 (protobuf JSON); attribute values are decoded on first use.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from typing import Any

from evalshift_sdk import schema as A
from evalshift_sdk.schema import json_or_text

BadSpan = Callable[[str, str, str | None], None]
"""``(field, problem, trace_id or None)`` of a span left out of its line."""


class Span:
    """One span as read: the OTLP/JSON span object, its scope and ``file:line``.

    Attributes are decoded on first use, and JSON-encoded attribute text stays text until a
    reader asks for it: most spans of a big sync are never looked at that closely.
    """

    __slots__ = ("raw", "scope", "source", "trace_id", "parent_span_id", "_attrs")

    def __init__(self, raw: dict[str, Any], scope: str, source: str) -> None:
        self.raw = raw
        self.scope = scope
        self.source = source
        trace_id = raw.get("traceId") or ""
        self.trace_id = trace_id if len(trace_id) == 32 else hex_id(trace_id, 32)
        parent = raw.get("parentSpanId")
        self.parent_span_id = (parent if len(parent) == 16 else hex_id(parent, 16) or None) if parent else None
        self._attrs: dict[str, Any] | None = None

    @property
    def span_id(self) -> str:
        return hex_id(self.raw.get("spanId"), 16)

    @property
    def name(self) -> str:
        return self.raw.get("name") or ""  # null is an unset name

    @property
    def start(self) -> int:
        return int(self.raw.get("startTimeUnixNano") or 0)

    @property
    def end(self) -> int:
        return int(self.raw.get("endTimeUnixNano") or 0)

    @property
    def status(self) -> int:
        code = (self.raw.get("status") or {}).get("code", 0)
        if isinstance(code, str):  # protobuf-JSON enum names
            return {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
        return int(code)

    @property
    def status_message(self) -> str | None:
        return (self.raw.get("status") or {}).get("message")

    @property
    def flags(self) -> int:
        return int(self.raw.get("flags") or 0)

    @property
    def attrs(self) -> dict[str, Any]:
        if self._attrs is None:
            self._attrs = decode_attributes(self.raw.get("attributes"))
        return self._attrs

    @property
    def operation(self) -> Any:
        return self.attrs.get(A.OPERATION)

    def to_json(self) -> list[Any]:
        return [self.raw, self.scope, self.source]

    @classmethod
    def from_json(cls, row: list[Any]) -> Span:
        return cls(row[0], row[1], row[2])



class AttributeShapeError(ValueError):
    """An attribute value that is not a valid OTLP/JSON ``AnyValue``; ``key`` names it."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"attributes.{key}: {problem}")
        self.key = key
        self.problem = problem


def _int_value(raw: Any) -> int:
    # OTLP/JSON writes int64 as a string; a longer run of digits than int64 has is refused
    # before int() (which stops at 4,300 digits, and which the suite could not write back).
    if type(raw) is int or (type(raw) is str and 0 < len(raw) <= 20):
        value = int(raw)
        if -(2**63) <= value < 2**64:
            return value
    raise ValueError(f"intValue {str(raw)[:40]!r} is not a 64-bit integer")


def _values_of(container: Any, kind: str) -> list[Any]:
    if container is None:
        return []
    if not isinstance(container, dict) or not isinstance(container.get("values", []), list):
        raise ValueError(f"{kind} must be an object holding a values list")
    return container.get("values") or []


def _value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return _int_value(v["intValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "arrayValue" in v:
        return [_value(x) if isinstance(x, dict) else None for x in _values_of(v["arrayValue"], "arrayValue")]
    if "kvlistValue" in v:
        out = {}
        for kv in _values_of(v["kvlistValue"], "kvlistValue"):
            if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
                raise ValueError("kvlistValue entries must be objects with a string key")
            inner = kv.get("value") or {}
            out[kv["key"]] = _value(inner) if isinstance(inner, dict) else None
        return out
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def decode_attributes(attrs: Iterable[dict[str, Any]] | None) -> dict[str, Any]:
    """OTLP/JSON ``KeyValue`` list -> dict; JSON-encoded attribute text is left as text.

    A value that is not a valid ``AnyValue`` raises AttributeShapeError naming its key.
    """
    if not attrs:
        return {}
    try:
        return {kv["key"]: v["stringValue"] if "stringValue" in (v := kv["value"]) else _value(v)
                for kv in attrs}
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        pass  # a KeyValue without value, not a dict, or a damaged value: decode one by one
    out: dict[str, Any] = {}
    for kv in attrs:
        if not isinstance(kv, dict):
            continue
        key = str(kv.get("key"))
        v = kv.get("value") or {}
        try:
            out[key] = _value(v) if isinstance(v, dict) else None
        except (TypeError, ValueError, AttributeError, RecursionError) as exc:
            raise AttributeShapeError(key, str(exc)) from exc
    return out


def json_attr(attrs: dict[str, Any], key: str) -> Any:
    """An attribute holding JSON text, decoded; text that is not JSON is returned as is."""
    return json_or_text(attrs.get(key))


def hex_id(raw: Any, hex_len: int) -> str:
    """A trace/span id as hex; protobuf-JSON's base64 ids (24 / 12 characters) are converted."""
    if not raw:
        return ""
    if len(raw) == hex_len:
        return raw
    try:
        return base64.b64decode(raw, validate=True).hex()
    except (binascii.Error, ValueError, TypeError):
        return str(raw)


def _is_time(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0) or (
        type(value) is str and (value == "" or (len(value) <= 20 and value.isdigit() and value.isascii())))


def _is_id(value: Any) -> bool:
    return type(value) is str and 0 < len(value) <= 64


def _is_nanos(value: Any) -> bool:
    return type(value) is str and len(value) <= 20 and value.isdigit() and value.isascii()


def span_problem(raw: Any) -> tuple[str, str] | None:
    """``(field, problem)`` when a span's fields that grouping turns and ordering them read
    (outside a turn's own guard) have the wrong type, else None.

    The rest (status, start time, attributes) is read while a turn is built; a turn failing
    there asks :func:`full_span_problem` which field of which span was to blame.
    """
    # The shape every OTLP/JSON writer produces, checked in one expression: the common case.
    if type(raw) is dict and _is_id(raw.get("traceId")) and _is_id(raw.get("spanId")) \
            and ((parent := raw.get("parentSpanId")) is None or _is_id(parent)) \
            and type(raw.get("name")) is str and _is_nanos(raw.get("endTimeUnixNano")) \
            and "flags" not in raw:
        return None
    return full_span_problem(raw)


def full_span_problem(raw: Any) -> tuple[str, str] | None:
    """``(field, problem)`` for any field of a span with the wrong type, else None."""
    if type(raw) is not dict:
        return "", "each span must be a JSON object"
    for key in ("traceId", "spanId"):
        value = raw.get(key)
        if type(value) is not str or not value or len(value) > 64:
            return key, "must be a non-empty id string"
    parent = raw.get("parentSpanId")
    if parent is not None and (type(parent) is not str or len(parent) > 64):
        return "parentSpanId", "must be an id string"
    name = raw.get("name")
    if name is not None and type(name) is not str:
        return "name", "must be a string"
    if not _is_time(raw.get("startTimeUnixNano")):
        return "startTimeUnixNano", "must be an integer count of nanoseconds"
    if not _is_time(raw.get("endTimeUnixNano")):
        return "endTimeUnixNano", "must be an integer count of nanoseconds"
    flags = raw.get("flags")
    if flags is not None and (type(flags) is not int or not 0 <= flags < 2**32):
        return "flags", "must be a 32-bit integer"
    status = raw.get("status")
    if status is not None:
        if type(status) is not dict:
            return "status", "must be an object"
        code = status.get("code", 0)
        if type(code) not in (int, str) or (type(code) is int and not 0 <= code < 2**31):
            return "status.code", "must be an integer or a STATUS_CODE_ name"
        message = status.get("message")
        if message is not None and type(message) is not str:
            return "status.message", "must be a string"
    attributes = raw.get("attributes")
    if attributes is not None and type(attributes) is not list:
        return "attributes", "must be a list of key/value objects"
    return None


def spans_of_request(request: Any, source: str, on_bad_span: BadSpan | None = None) -> list[Span]:
    """Every span of one ``ExportTraceServiceRequest``; raises ValueError on a wrong shape.

    With ``on_bad_span`` a span whose fields have the wrong type is handed to it (its field,
    the problem and its trace id when readable) and left out; the line's other spans are kept.
    """
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object with resourceSpans")
    out: list[Span] = []
    for i, rs in enumerate(request.get("resourceSpans") or ()):
        for j, ss in enumerate(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ()):
            scope_obj = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            scope = scope_obj.get("name", "")
            if not isinstance(scope, str):
                raise ValueError(f"resourceSpans[{i}].scopeSpans[{j}].scope.name must be a string")
            for k, sp in enumerate(ss.get("spans") or ()):
                problem = span_problem(sp)
                if problem is None:
                    out.append(Span(sp, scope, source))
                    continue
                field = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]" + (f".{problem[0]}" if problem[0] else "")
                if on_bad_span is None:
                    raise ValueError(f"{field}: {problem[1]}")
                trace_id = sp.get("traceId") if isinstance(sp, dict) else None
                on_bad_span(field, problem[1], trace_id if isinstance(trace_id, str) and trace_id else None)
    return out

