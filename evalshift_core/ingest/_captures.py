"""Ingest: OTLP/JSON span lines become captures, one agent turn each, events in order.

Reads what ``evalshift_sdk`` writes and what an OpenTelemetry Collector's file exporter writes
(plain or gzip, hex or base64 ids), streaming: a turn is emitted as soon as its root span ends.

Spans arrive in the order they end, so a turn's children precede its root; a turn is complete
when its root arrives. Spans whose root has not arrived yet stay pending (across files, rotations
and, through the sync state, across syncs): memory is bounded by the open turns, not the file.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evalshift_sdk import schema as A
from evalshift_sdk.schema import json_or_text

from .._io import open_maybe_gzip
from .._limits import MAX_LINE_BYTES
from ..store._paths import toolset_ref_problem
from . import _genai as genai

Warn = Callable[[str], None]

_MODEL_OPERATIONS = frozenset({A.OP_CHAT, "generate_content", "text_completion"})
_CAPTURE_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
# OTLP SpanFlags: bit 8 says whether the parent's remoteness is known, bit 9 that it is remote.
_REMOTE_PARENT = 0x300
_STREAM_INCOMPLETE = getattr(A, "STREAM_INCOMPLETE", "evalshift.stream_incomplete")


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
        self.trace_id = trace_id if len(trace_id) == 32 else _id(trace_id, 32)
        parent = raw.get("parentSpanId")
        self.parent_span_id = (parent if len(parent) == 16 else _id(parent, 16) or None) if parent else None
        self._attrs: dict[str, Any] | None = None

    @property
    def span_id(self) -> str:
        return _id(self.raw.get("spanId"), 16)

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


@dataclass
class Capture:
    """One captured agent turn in the capture event schema."""

    trace_id: str
    """Trace id of the turn."""
    root_span_id: str = ""
    """Span id of the turn's root span."""
    root_is_trace_root: bool = True
    """False when the turn's root has a parent (a host span, or a remote caller)."""
    prompt_id: str | None = None
    """The ``turn(prompt_id=...)`` given, if any (another instrumentation's agent name)."""
    inputs: dict[str, Any] | None = None
    """The ``turn(inputs=...)`` given, if any."""
    tags: list[str] = field(default_factory=list)
    """The ``turn(tags=...)`` given."""
    start_time_unix_nano: int = 0
    """When the turn started."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """``model_call`` / ``tool_call`` / ``tool_result`` events in order."""
    source: str | None = None
    """``file:line`` of the root span."""
    toolsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Toolsets built from another instrumentation's recorded tool definitions, by ref."""
    notes: list[str] = field(default_factory=list)
    """What another instrumentation's spans did not record (said once per turn)."""
    raw_messages: dict[int, Any] = field(default_factory=dict, repr=False)
    """Input messages of later rounds, still JSON text, when the builder skipped decoding them."""

    def messages_of(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """A model call's input messages, decoding them now if the builder deferred it."""
        if event.get("messages") is not None:
            return event["messages"]
        raw = self.raw_messages.get(event.get("round_index", 0))
        if isinstance(raw, (str, bytes)):
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return []
            return value if isinstance(value, list) else []
        return []

    def model_calls(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "model_call"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id, "root_span_id": self.root_span_id, "prompt_id": self.prompt_id,
            "inputs": self.inputs, "tags": self.tags, "start_time_unix_nano": self.start_time_unix_nano,
            "events": self.events, "source": self.source,
        }


# ---------------------------------------------------------------------------------------------
# Decoding OTLP/JSON


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


def _id(raw: Any, hex_len: int) -> str:
    """A trace/span id as hex; protobuf-JSON's base64 ids (24 / 12 characters) are converted."""
    if not raw:
        return ""
    if len(raw) == hex_len:
        return raw
    try:
        return base64.b64decode(raw, validate=True).hex()
    except (binascii.Error, ValueError, TypeError):
        return str(raw)


BadSpan = Callable[[str, str, str | None], None]
"""``(field, problem, trace_id or None)`` of a span left out of its line."""


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


# ---------------------------------------------------------------------------------------------
# Reading files, incrementally


@dataclass
class FilePosition:
    """How far a capture file has been read: whole lines only."""

    offset: int = 0
    """Bytes consumed (uncompressed bytes for a gzip file)."""
    line: int = 0
    """Lines consumed."""
    inode: int | None = None
    """The file's inode when it was read, to notice a file replaced under the same name."""
    examples: int = 0
    """Examples promoted from turns whose root span this file held (sync bookkeeping)."""
    suites: list[str] = field(default_factory=list)
    """Suites those examples went to."""

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "line": self.line, "inode": self.inode,
                "examples": self.examples, "suites": sorted(self.suites)}


_LUMBERJACK = re.compile(r"^(.*)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)(\.jsonl?(?:\.gz)?)$")
_SEQUENCE = re.compile(r"^(.*?)(?:\.(\d+))?(\.jsonl?(?:\.gz)?)$")


def _rotation_key(path: Path) -> tuple[str, str, int, str]:
    """Order rotated files oldest first, so a turn's children come before its root.

    Our SDK's ``spans-<stamp>-<pid>.jsonl`` then ``.1.jsonl``, ``.2.jsonl``; the Collector's
    file exporter (lumberjack) keeps ``traces.json`` current and renames old ones to
    ``traces-<timestamp>.json`` backups, which come before it.
    """
    m = _LUMBERJACK.match(path.name)
    if m:
        return (m.group(1), m.group(3), 0, m.group(2))
    m = _SEQUENCE.match(path.name)
    if not m:
        return (path.name, "", 0, "")
    if m.group(2) is not None:
        return (m.group(1), m.group(3), 0, f"{int(m.group(2)):012d}")
    return (m.group(1), m.group(3), 0, "")  # a base name: first of our SDK's sequence


def capture_files(capture_dir: str | os.PathLike[str]) -> list[Path]:
    """Capture files under a directory (or the file itself), oldest rotation first."""
    root = Path(capture_dir)
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    # Dotfiles are temp files mid-write; sync-state.json is sync's own bookkeeping.
    files = [p for p in root.iterdir() if p.is_file() and p.name.endswith(_CAPTURE_SUFFIXES)
             and not p.name.startswith(".") and p.name != "sync-state.json"]
    keys = {p: _rotation_key(p) for p in files}
    with_backups = {(k[0], k[1]) for p, k in keys.items() if _LUMBERJACK.match(p.name)}

    def order(p: Path) -> tuple[str, str, int, str]:
        k = keys[p]
        if k[3] == "" and (k[0], k[1]) in with_backups:
            return (k[0], k[1], 1, "")  # the Collector's current file: after its backups
        return k

    return sorted(files, key=order)


def iter_lines(
    path: Path, position: FilePosition, warn: Warn
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` of whole lines after ``position``, advancing it.

    A last line without its newline is a writer still appending: it is left for next time.
    A truncated gzip stream (a file still being compressed) ends the read the same way.
    """
    with open_maybe_gzip(path) as fh:
        try:
            if position.offset:
                fh.seek(position.offset)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                position.line += 1
                position.offset += len(raw)
                yield position.line, raw
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            if position.offset == 0:
                warn(f"{path}: not a readable gzip file ({exc}); skipped")


def read_spans(
    path: Path, position: FilePosition, warn: Warn, on_bad_span: Callable[[str, str | None], None] | None = None
) -> Iterator[list[Span]]:
    """Spans of each whole new line of ``path``; a corrupt line is reported and skipped, and so
    is a damaged span (``on_bad_span(message, trace_id)`` hears of it; else it is a warning)."""
    for lineno, raw in iter_lines(path, position, warn):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"

        def bad_span(field: str, problem: str, trace_id: str | None, where: str = where) -> None:
            message = f"{where}: {field}: {problem}; span skipped"
            if on_bad_span is None:
                warn(message)
            else:
                on_bad_span(message, trace_id)

        try:
            if len(raw) > MAX_LINE_BYTES:
                raise ValueError(f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
            request = orjson.loads(raw)
            spans = spans_of_request(request, where, bad_span)
        except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError) as exc:
            warn(f"{where}: not a valid OTLP/JSON line ({exc}); skipped")
            continue
        if spans:
            yield spans


# ---------------------------------------------------------------------------------------------
# Grouping spans into turns


def is_turn_root(span: Span) -> bool:
    """A span that closes an agent turn: a trace root, our ``invoke_agent``, or a remote child."""
    if span.parent_span_id is None:
        return True
    if span.scope == A.SCOPE_NAME and span.name.startswith(A.OP_INVOKE_AGENT):
        return True
    return (span.flags & _REMOTE_PARENT) == _REMOTE_PARENT


class TurnAssembler:
    """Collects spans by trace and releases a turn's spans when its root arrives."""

    RECENT = 4096
    """Closed traces remembered, to tell a span that ended after its root from a new turn."""

    def __init__(self, pending: Iterable[Span] = ()) -> None:
        self.pending: dict[str, list[Span]] = {}
        for span in pending:
            self.pending.setdefault(span.trace_id, []).append(span)
        self._closed: OrderedDict[str, None] = OrderedDict()
        self.late = 0
        """Spans that ended after their trace's root span and were left out of its turn."""
        self.late_source: str | None = None

    def add(self, span: Span) -> list[Span] | None:
        """Add one span; returns a complete turn's spans (root last) when ``span`` closes one."""
        if span.parent_span_id is not None and not is_turn_root(span):
            if span.trace_id in self._closed:
                # e.g. a stream consumed after the request span ended: too late for its turn.
                self.late += 1
                self.late_source = self.late_source or span.source
                return None
            pending = self.pending.get(span.trace_id)
            if pending is None:
                self.pending[span.trace_id] = [span]
            else:
                pending.append(span)
            return None
        if span.parent_span_id is None:
            self._closed[span.trace_id] = None
            if len(self._closed) > self.RECENT:
                self._closed.popitem(last=False)
        waiting = self.pending.pop(span.trace_id, None)
        if not waiting:
            return [span]
        if span.parent_span_id is None:
            waiting.append(span)
            return waiting
        # A turn inside a host's trace: take only the root's descendants; the rest keeps waiting.
        children: dict[str | None, list[Span]] = {}
        for s in waiting:
            children.setdefault(s.parent_span_id, []).append(s)
        turn: list[Span] = []
        stack = [span.span_id]
        while stack:
            for child in children.pop(stack.pop(), ()):
                turn.append(child)
                stack.append(child.span_id)
        taken = {id(s) for s in turn}
        rest = [s for s in waiting if id(s) not in taken]
        if rest:
            self.pending[span.trace_id] = rest
        turn.append(span)
        return turn

    def held_back(self) -> list[Span]:
        """Spans whose turn has not ended yet."""
        return [s for spans in self.pending.values() for s in spans]

    @property
    def held_back_turns(self) -> int:
        return len(self.pending)

    def late_warning(self) -> str | None:
        """What to tell the user about spans that ended after their turn's root, if any."""
        if not self.late:
            return None
        return (f"{self.late} span(s) ended after their turn's root span and were left out of it "
                f"(first at {self.late_source}): a model call or tool outliving the turn that made it")


# ---------------------------------------------------------------------------------------------
# Building a capture from a turn's spans


def _is_model_span(span: Span) -> bool:
    op = span.attrs.get(A.OPERATION)
    if op is not None:
        return op in _MODEL_OPERATIONS
    return span.attrs.get("llm.request.type") in {"chat", "completion"}


def _is_ours(span: Span) -> bool:
    return span.scope == A.SCOPE_NAME or A.REQUESTED_TOOL_CALLS in span.attrs or A.TOOLSET_REF in span.attrs


def _as(kind: type, value: Any) -> Any:
    """``value`` when it has the expected JSON shape, else an empty one (a foreign writer's junk)."""
    return value if isinstance(value, kind) else kind()


def _toolset_ref(value: Any) -> str | None:
    if value is None:
        return None
    problem = toolset_ref_problem(value)
    if problem is not None:
        raise ValueError(f"{A.TOOLSET_REF} {str(value)[:80]!r} {problem}")
    return value


def _messages(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise ValueError(f"{A.INPUT_MESSAGES} is not a list of messages")
    return value


def _requested(value: Any) -> list[dict[str, Any]] | None:
    """The recorded requested calls, checked: a damaged entry fails the turn, not the suite."""
    if not isinstance(value, list):
        return None
    out = []
    for call in value:
        if not isinstance(call, dict) or not isinstance(call.get("tool_name"), str) or not call["tool_name"]:
            raise ValueError(f"{A.REQUESTED_TOOL_CALLS} holds an entry without a tool_name: {call!r}")
        cid = call.get("call_id")
        out.append({"call_id": None if cid is None else str(cid), "tool_name": call["tool_name"],
                    "arguments": call.get("arguments")})
    return out


def _model_call_event(span: Span, round_index: int, messages: bool = True) -> dict[str, Any]:
    a = span.attrs
    usage = {}
    if A.INPUT_TOKENS in a:
        usage["input_tokens"] = a[A.INPUT_TOKENS]
    if A.OUTPUT_TOKENS in a:
        usage["output_tokens"] = a[A.OUTPUT_TOKENS]
    requested = json_attr(a, A.REQUESTED_TOOL_CALLS)
    event: dict[str, Any] = {
        "type": "model_call",
        "round_index": round_index,
        "model": a.get(A.RESPONSE_MODEL) or a.get(A.REQUEST_MODEL),
        "request_model": a.get(A.REQUEST_MODEL),
        "provider": a.get(A.PROVIDER),
        "toolset_ref": _toolset_ref(a.get(A.TOOLSET_REF)),
        "generation_config": _as(dict, json_attr(a, A.GENERATION_CONFIG)),
        "messages": _messages(json_attr(a, A.INPUT_MESSAGES)) if messages else None,
        "requested_tool_calls": _requested(requested),
        "text": a.get(A.OUTPUT_TEXT),
        "refusal": a.get(A.REFUSAL),
        "usage": usage,
        "error": (a.get(A.ERROR_TYPE) or span.status_message or "error") if span.status == 2 else None,
    }
    system = json_attr(a, A.SYSTEM_INSTRUCTIONS)
    if system:
        event["system_instructions"] = system
    if a.get(_STREAM_INCOMPLETE):
        event["stream_incomplete"] = True
    return event


def _tool_events(span: Span) -> tuple[dict[str, Any], dict[str, Any]]:
    a = span.attrs
    call_id = a.get(A.TOOL_CALL_ID)
    call_id = None if call_id is None else str(call_id)
    name = str(a.get(A.TOOL_NAME) or span.name.removeprefix("execute_tool").strip())
    error = a.get(A.TOOL_ERROR)
    if error is None and span.status == 2:
        error = span.status_message or a.get(A.ERROR_TYPE) or "error"
    return (
        {"type": "tool_call", "call_id": call_id, "tool_name": name, "arguments": json_attr(a, A.TOOL_CALL_ARGUMENTS)},
        {"type": "tool_result", "call_id": call_id, "tool_name": name,
         "result": json_attr(a, A.TOOL_CALL_RESULT), "error": error},
    )


def build_capture(spans: list[Span], *, all_messages: bool = True) -> Capture | None:
    """Turn the spans of one agent turn (root last) into a capture; None without a model call.

    ``all_messages=False`` decodes only round 1's input messages (what promotion reads), and
    defers the rest to ``Capture.messages_of``: later rounds repeat the whole conversation.
    """
    model_spans: list[tuple[int, Span]] = []
    tool_spans: list[Span] = []
    for s in spans:
        op = s.attrs.get(A.OPERATION)
        if op in _MODEL_OPERATIONS or (op is None and _is_model_span(s)):
            model_spans.append((s.start, s))
        elif op == A.OP_EXECUTE_TOOL:
            tool_spans.append(s)
    if not model_spans:
        return None
    model_spans.sort(key=lambda t: t[0])
    root = spans[-1]
    ra = root.attrs
    toolsets: dict[str, list[dict[str, Any]]] = {}
    notes: list[str] = []
    # (time, kind, sequence, event): model call, tool call, tool result; sequence breaks ties.
    timeline: list[tuple[int, int, int, dict[str, Any]]] = []
    raw_messages: dict[int, Any] = {}
    for i, (start, s) in enumerate(model_spans, start=1):
        if _is_ours(s):
            decode = all_messages or i == 1
            event = _model_call_event(s, i, decode)
            if not decode:
                raw_messages[i] = s.attrs.get(A.INPUT_MESSAGES)
        else:
            event, tools, missing = genai.model_call_event(s, i)
            if tools is not None and event.get("toolset_ref"):
                toolsets[event["toolset_ref"]] = tools
            for note in missing:
                if note not in notes:
                    notes.append(note)
        timeline.append((start, 0, i, event))
    for j, s in enumerate(tool_spans):
        call, result = _tool_events(s)
        timeline.append((s.start, 1, j, call))
        timeline.append((s.end, 2, j, result))
    timeline.sort(key=lambda t: (t[0], t[1], t[2]))
    inputs = json_attr(ra, A.INPUTS)
    tags = ra.get(A.TAGS) or []
    prompt_id = ra.get(A.PROMPT_ID)
    if prompt_id is None and root.scope != A.SCOPE_NAME:
        prompt_id = ra.get(A.AGENT_NAME)
    if prompt_id is not None:
        prompt_id = str(prompt_id)
    return Capture(
        trace_id=root.trace_id,
        root_span_id=root.span_id,
        root_is_trace_root=root.parent_span_id is None,
        prompt_id=prompt_id,
        inputs=inputs if isinstance(inputs, dict) else None,
        tags=[str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
        start_time_unix_nano=min(root.start, model_spans[0][0]),
        events=[t[3] for t in timeline],
        source=root.source,
        toolsets=toolsets,
        notes=notes,
        raw_messages=raw_messages,
    )


def iter_captures(
    paths: Iterable[str | os.PathLike[str]],
    *,
    warn: Warn | None = None,
    assembler: TurnAssembler | None = None,
    positions: dict[str, FilePosition] | None = None,
) -> Iterator[Capture]:
    """Stream the captures of complete turns in ``paths`` (files, or directories of them)."""
    say: Warn = warn or (lambda _msg: None)
    asm = assembler or TurnAssembler()
    for p in paths:
        for path in capture_files(p):
            pos = positions.setdefault(str(path), FilePosition()) if positions is not None else FilePosition()
            for batch in read_spans(path, pos, say):
                for span in batch:
                    spans = asm.add(span)
                    if spans is not None:
                        capture = build_capture(spans)
                        if capture is not None:
                            yield capture
    late = asm.late_warning()
    if late:
        say(late)


def load_captures(capture_dir: str | os.PathLike[str]) -> list[Capture]:
    """Every complete turn under ``capture_dir`` as a capture, oldest turn first.

    Turns whose root span has not been written yet are left out (``sync`` holds them back).
    """
    captures = list(iter_captures([capture_dir]))
    captures.sort(key=lambda c: c.start_time_unix_nano)
    return captures
