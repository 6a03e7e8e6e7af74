"""OTLP/JSON lines exporter: one ``ExportTraceServiceRequest`` per line, plus toolset sidecars.

It runs on the BatchSpanProcessor's worker thread, so the caller's thread never touches a file.
Errors become a FAILURE result, never an exception.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from . import _attributes as A
from ._toolsets import canonical_json, ref_filename

logger = logging.getLogger("evalshift_sdk")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(attrs: Any) -> list[dict[str, Any]]:
    if not attrs:
        return []
    return [{"key": k, "value": _any_value(v)} for k, v in attrs.items()]


def encode_span(span: ReadableSpan) -> dict[str, Any]:
    """One span in the OTLP/JSON encoding (hex ids, integer enums, lowerCamelCase)."""
    ctx = span.context
    out: dict[str, Any] = {
        "traceId": format(ctx.trace_id, "032x"),
        "spanId": format(ctx.span_id, "016x"),
        "name": span.name,
        "kind": int(span.kind.value) + 1,  # OTLP SpanKind is the API enum shifted by one
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _attributes(span.attributes),
        "status": {"code": int(span.status.status_code.value)},
    }
    if span.parent is not None:
        out["parentSpanId"] = format(span.parent.span_id, "016x")
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {
                "timeUnixNano": str(ev.timestamp),
                "name": ev.name,
                "attributes": _attributes(ev.attributes),
            }
            for ev in span.events
        ]
    return out


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Group spans by resource and scope into one ``ExportTraceServiceRequest``."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str], list[dict[str, Any]]]]] = {}
    for span in spans:
        res_key = id(span.resource)
        _, scopes = by_resource.setdefault(res_key, (span.resource, {}))
        scope = span.instrumentation_scope
        scope_key = (scope.name if scope else "", (scope.version or "") if scope else "")
        scopes.setdefault(scope_key, []).append(encode_span(span))
    resource_spans = []
    for resource, scopes in by_resource.values():
        resource_spans.append(
            {
                "resource": {"attributes": _attributes(resource.attributes if resource else {})},
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": encoded}
                    for (name, version), encoded in scopes.items()
                ],
            }
        )
    return {"resourceSpans": resource_spans}


class ToolsetStore:
    """Toolsets seen on the hot path, waiting for the exporter thread to write their sidecars."""

    def __init__(self) -> None:
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._written: set[str] = set()
        self._lock = threading.Lock()

    def offer(self, ref: str, normalised: list[dict[str, Any]]) -> None:
        if ref in self._written or ref in self._pending:
            return
        with self._lock:
            self._pending.setdefault(ref, normalised)

    def take(self, ref: str) -> list[dict[str, Any]] | None:
        with self._lock:
            return self._pending.pop(ref, None)

    def mark_written(self, ref: str) -> None:
        with self._lock:
            self._written.add(ref)

    def restore(self, ref: str, tools: list[dict[str, Any]]) -> None:
        with self._lock:
            self._pending.setdefault(ref, tools)


class JsonLinesSpanExporter(SpanExporter):
    """Append spans as OTLP/JSON lines under ``directory``, rotating files by size.

    Each process writes its own file (the pid is in the name, re-read after a fork), and
    toolset sidecars go to ``directory/toolsets/<hex>.json``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        toolsets: ToolsetStore,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        redact: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.toolsets = toolsets
        self.max_bytes = max_bytes
        self.redact = redact
        self._lock = threading.Lock()
        self._pid = -1
        self._path: Path | None = None
        self._seq = 0
        self._failed_once = False

    def _current_path(self) -> Path:
        pid = os.getpid()
        if pid != self._pid or self._path is None:
            self._pid = pid
            self._seq = 0
            stamp = time.strftime("%Y%m%dT%H%M%S")
            self._base = f"spans-{stamp}-{pid}"
            self._path = self.directory / f"{self._base}.jsonl"
        elif self._path.exists() and self._path.stat().st_size >= self.max_bytes:
            self._seq += 1
            self._path = self.directory / f"{self._base}.{self._seq}.jsonl"
        return self._path

    def _write_sidecars(self, spans: Sequence[ReadableSpan]) -> None:
        for span in spans:
            ref = (span.attributes or {}).get(A.TOOLSET_REF)
            if not isinstance(ref, str):
                continue
            tools = self.toolsets.take(ref)
            if tools is None:
                continue
            target = self.directory / "toolsets" / ref_filename(ref)
            try:
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_suffix(f".tmp{os.getpid()}")
                    tmp.write_bytes(canonical_json(tools))
                    os.replace(tmp, target)
                self.toolsets.mark_written(ref)
            except OSError:
                self.toolsets.restore(ref, tools)
                raise

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            request = encode_request(spans)
            if self.redact is not None:
                request = self.redact(request)
            line = orjson.dumps(request) + b"\n"
            with self._lock:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._write_sidecars(spans)
                with open(self._current_path(), "ab") as fh:
                    fh.write(line)
            return SpanExportResult.SUCCESS
        except Exception as exc:  # noqa: BLE001 - an exporter must never raise into the SDK
            if not self._failed_once:
                self._failed_once = True
                logger.warning("evalshift_sdk: could not write captures to %s: %s", self.directory, exc)
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
