"""Ingest: OTLP/JSON span lines become captures, one agent turn each, events in order.

Reads what ``evalshift_sdk`` writes and what an OpenTelemetry Collector's file exporter writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, Field

from evalshift_sdk import _attributes as A

from ._io import iter_jsonl

_JSON_ATTRS = {
    A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS, A.TOOL_DEFINITIONS,
    A.REQUESTED_TOOL_CALLS, A.GENERATION_CONFIG, A.INPUTS, A.TOOL_CALL_ARGUMENTS, A.TOOL_CALL_RESULT,
}


class Capture(BaseModel):
    """One captured agent turn in the capture event schema."""

    trace_id: str
    """Trace id of the turn's root span."""
    prompt_id: str | None = None
    """The ``turn(prompt_id=...)`` given, if any."""
    inputs: dict[str, Any] | None = None
    """The ``turn(inputs=...)`` given, if any."""
    tags: list[str] = Field(default_factory=list)
    """The ``turn(tags=...)`` given."""
    start_time_unix_nano: int = 0
    """When the turn started."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """``model_call`` / ``tool_call`` / ``tool_result`` events in order."""
    source: str | None = None
    """``file:line`` of the root span."""

    def model_calls(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "model_call"]


def _value(v: dict[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    return None


def decode_attributes(attrs: Iterable[dict[str, Any]] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in attrs or []:
        key = kv.get("key")
        value = _value(kv.get("value") or {})
        if key in _JSON_ATTRS and isinstance(value, str):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
        out[key] = value
    return out


def iter_spans(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every span of an OTLP/JSON lines file, flattened, with ``attrs`` decoded."""
    for lineno, request in iter_jsonl(path, what="OTLP/JSON line"):
        for rs in request.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for span in ss.get("spans", []):
                    yield {
                        "trace_id": span.get("traceId", ""),
                        "span_id": span.get("spanId", ""),
                        "parent_span_id": span.get("parentSpanId") or None,
                        "name": span.get("name", ""),
                        "start": int(span.get("startTimeUnixNano", 0) or 0),
                        "end": int(span.get("endTimeUnixNano", 0) or 0),
                        "status": (span.get("status") or {}).get("code", 0),
                        "status_message": (span.get("status") or {}).get("message"),
                        "attrs": decode_attributes(span.get("attributes")),
                        "source": f"{path}:{lineno}",
                    }


def capture_files(capture_dir: str | os.PathLike[str]) -> list[Path]:
    root = Path(capture_dir)
    if root.is_file():
        return [root]
    return sorted(p for p in root.glob("*.jsonl*") if p.suffix in {".jsonl", ".gz"})


def _model_call_event(span: dict[str, Any], round_index: int) -> dict[str, Any]:
    a = span["attrs"]
    usage = {}
    if A.INPUT_TOKENS in a:
        usage["input_tokens"] = a[A.INPUT_TOKENS]
    if A.OUTPUT_TOKENS in a:
        usage["output_tokens"] = a[A.OUTPUT_TOKENS]
    event: dict[str, Any] = {
        "type": "model_call",
        "round_index": round_index,
        "model": a.get(A.RESPONSE_MODEL) or a.get(A.REQUEST_MODEL),
        "provider": a.get(A.PROVIDER),
        "toolset_ref": a.get(A.TOOLSET_REF),
        "generation_config": a.get(A.GENERATION_CONFIG) or {},
        "messages": a.get(A.INPUT_MESSAGES) or [],
        "requested_tool_calls": a.get(A.REQUESTED_TOOL_CALLS),
        "text": a.get(A.OUTPUT_TEXT),
        "refusal": a.get(A.REFUSAL),
        "usage": usage,
        "error": a.get(A.ERROR_TYPE) if span["status"] == 2 else None,
    }
    if A.SYSTEM_INSTRUCTIONS in a:
        event["system_instructions"] = a[A.SYSTEM_INSTRUCTIONS]
    return event


def _tool_events(span: dict[str, Any]) -> list[dict[str, Any]]:
    a = span["attrs"]
    call_id = a.get(A.TOOL_CALL_ID)
    name = a.get(A.TOOL_NAME) or span["name"].removeprefix("execute_tool ").strip()
    error = a.get(A.TOOL_ERROR)
    if error is None and span["status"] == 2:
        error = span.get("status_message") or a.get(A.ERROR_TYPE) or "error"
    return [
        {"type": "tool_call", "call_id": call_id, "tool_name": name, "arguments": a.get(A.TOOL_CALL_ARGUMENTS)},
        {"type": "tool_result", "call_id": call_id, "tool_name": name, "result": a.get(A.TOOL_CALL_RESULT), "error": error},
    ]


def build_capture(spans: list[dict[str, Any]]) -> Capture | None:
    """Turn the spans of one trace into a capture; None when it holds no model call."""
    ids = {s["span_id"] for s in spans}
    roots = [s for s in spans if not s["parent_span_id"] or s["parent_span_id"] not in ids]
    root = min(roots or spans, key=lambda s: s["start"])
    ra = root["attrs"]
    timeline: list[tuple[int, int, list[dict[str, Any]]]] = []
    model_spans = sorted(
        (s for s in spans if s["attrs"].get(A.OPERATION) in {A.OP_CHAT, "generate_content", "text_completion"}),
        key=lambda s: s["start"],
    )
    if not model_spans:
        return None
    for i, s in enumerate(model_spans, start=1):
        timeline.append((s["start"], 0, [_model_call_event(s, i)]))
    for s in spans:
        if s["attrs"].get(A.OPERATION) == A.OP_EXECUTE_TOOL:
            call, result = _tool_events(s)
            timeline.append((s["start"], 1, [call]))
            timeline.append((s["end"], 2, [result]))
    timeline.sort(key=lambda t: (t[0], t[1]))
    inputs = ra.get(A.INPUTS)
    tags = ra.get(A.TAGS) or []
    return Capture(
        trace_id=root["trace_id"],
        prompt_id=ra.get(A.PROMPT_ID),
        inputs=inputs if isinstance(inputs, dict) else None,
        tags=[str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
        start_time_unix_nano=root["start"],
        events=[e for _, _, events in timeline for e in events],
        source=root["source"],
    )


def load_captures(capture_dir: str | os.PathLike[str]) -> list[Capture]:
    """Read every capture file under ``capture_dir`` into captures, oldest turn first."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for path in capture_files(capture_dir):
        for span in iter_spans(path):
            by_trace.setdefault(span["trace_id"], []).append(span)
    captures = [c for spans in by_trace.values() if (c := build_capture(spans)) is not None]
    captures.sort(key=lambda c: c.start_time_unix_nano)
    return captures
