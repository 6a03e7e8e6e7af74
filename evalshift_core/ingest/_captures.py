"""Ingest: OTLP/JSON span lines become captures, one agent turn each, events in order.

Reads what ``evalshift_sdk`` writes and what an OpenTelemetry Collector's file exporter writes
(plain or gzip, hex or base64 ids), streaming: a turn is emitted as soon as its root span ends.
The steps, one module each: ``_files`` reads the capture files' new whole lines in rotation
order, ``_otlp`` decodes their spans, ``_turns`` groups spans into turns, and this module
builds a turn's capture (``_genai`` reads other instrumentations' GenAI spans, ``_openinference``
their OpenInference spans).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from evalshift_sdk import schema as A

from ..store._paths import toolset_ref_problem
from . import _genai as genai
from . import _openinference as oi
from ._files import FilePosition, Warn, capture_files, read_spans
from ._otlp import Span, json_attr
from ._turns import TurnAssembler

_MODEL_OPERATIONS = frozenset({A.OP_CHAT, "generate_content", "text_completion"})
_STREAM_INCOMPLETE = getattr(A, "STREAM_INCOMPLETE", "evalshift.stream_incomplete")


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
        elif op is None and (kind := oi.kind(s)) is not None:
            if kind == oi.KIND_LLM:
                model_spans.append((s.start, s))
            elif kind == oi.KIND_TOOL:
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
            dialect = oi if s.attrs.get(A.OPERATION) is None and oi.kind(s) == oi.KIND_LLM else genai
            event, tools, missing = dialect.model_call_event(s, i)
            if tools is not None and event.get("toolset_ref"):
                toolsets[event["toolset_ref"]] = tools
            for note in missing:
                if note not in notes:
                    notes.append(note)
        timeline.append((start, 0, i, event))
    for j, s in enumerate(tool_spans):
        call, result = oi.tool_events(s) if s.attrs.get(A.OPERATION) is None else _tool_events(s)
        timeline.append((s.start, 1, j, call))
        timeline.append((s.end, 2, j, result))
    timeline.sort(key=lambda t: (t[0], t[1], t[2]))
    inputs = json_attr(ra, A.INPUTS)
    tags = ra.get(A.TAGS) or []
    prompt_id = ra.get(A.PROMPT_ID)
    if prompt_id is None and root.scope != A.SCOPE_NAME:
        prompt_id = ra.get(A.AGENT_NAME) or ra.get("agent.name")
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
