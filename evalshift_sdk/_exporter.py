"""OTLP/JSON lines exporter: one ``ExportTraceServiceRequest`` per line, plus toolset sidecars.

It runs on the export thread (``_spans.SpanQueue``), so the caller's thread never touches a file.
Errors become a FAILURE result, never an exception.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from . import schema as A
from ._guard import capture_internal_exceptions
from ._scrub import might_hold_credentials, scrub
from ._spans import CaptureSpan
from .schema import canonical_json, ref_filename

logger = logging.getLogger("evalshift_sdk")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


# OTLP's SpanKind is the API enum shifted by one; a dict lookup, where ``.value`` on an enum
# member is a Python-level property call.
_OTLP_KIND = {kind: int(kind.value) + 1 for kind in SpanKind}
_STATUS_CODE = {code: int(code.value) for code in StatusCode}


def _any_value(value: Any) -> dict[str, Any]:
    kind = type(value)  # exact types first: nearly every value is a plain str
    if kind is str:
        return {"stringValue": value}
    if kind is int:
        return {"intValue": str(value)}
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
    return [
        {"key": k, "value": {"stringValue": v} if type(v) is str else _any_value(v)} for k, v in attrs.items()
    ]


def _ids(span: Any) -> tuple[int, int, int | None]:
    """Trace, span and parent span ids: read straight off our own spans, from the
    ``SpanContext`` of anyone else's."""
    if type(span) is CaptureSpan:
        return span.trace_id, span.span_id, span.parent_id
    ctx, parent = span.context, span.parent
    return ctx.trace_id, ctx.span_id, None if parent is None else parent.span_id


def encode_span(span: ReadableSpan) -> dict[str, Any]:
    """One span in the OTLP/JSON encoding (hex ids, integer enums, lowerCamelCase)."""
    trace_id, span_id, parent_id = _ids(span)
    status = span.status
    out: dict[str, Any] = {
        "traceId": format(trace_id, "032x"),
        "spanId": format(span_id, "016x"),
        "name": span.name,
        "kind": _OTLP_KIND[span.kind],
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _attributes(span.attributes),
        "status": {"code": _STATUS_CODE[status.status_code]},
    }
    if parent_id is not None:
        out["parentSpanId"] = format(parent_id, "016x")
    if status.description:
        out["status"]["message"] = status.description
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


def _grouped(spans: Sequence[ReadableSpan]) -> list[tuple[Any, list[tuple[tuple[str, str], list[Any]]]]]:
    """Spans grouped by resource, then by instrumentation scope, in order of appearance."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str], list[Any]]]] = {}
    for span in spans:
        _, scopes = by_resource.setdefault(id(span.resource), (span.resource, {}))
        scope = span.instrumentation_scope
        scope_key = (scope.name if scope else "", (scope.version or "") if scope else "")
        scopes.setdefault(scope_key, []).append(span)
    return [(resource, list(scopes.items())) for resource, scopes in by_resource.values()]


def _resource_json(resource: Any) -> dict[str, Any]:
    return {"attributes": _attributes(resource.attributes if resource else {})}


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """Group spans by resource and scope into one ``ExportTraceServiceRequest``."""
    return {
        "resourceSpans": [
            {
                "resource": _resource_json(resource),
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": [encode_span(s) for s in members]}
                    for (name, version), members in scopes
                ],
            }
            for resource, scopes in _grouped(spans)
        ]
    }


def encode_line(spans: Sequence[ReadableSpan]) -> bytes:
    """``orjson.dumps(encode_request(spans))``, byte for byte, with each span serialised as soon
    as it is encoded: the encoded form is a few dozen small dicts and lists a span, and a whole
    batch of them alive at once used to trigger several garbage collections per batch."""
    resource_spans = []
    for resource, scopes in _grouped(spans):
        scope_spans = [
            b'{"scope":' + orjson.dumps({"name": name, "version": version})
            + b',"spans":[' + b",".join([orjson.dumps(encode_span(s)) for s in members]) + b"]}"
            for (name, version), members in scopes
        ]
        resource_spans.append(
            b'{"resource":' + orjson.dumps(_resource_json(resource)) + b',"scopeSpans":[' + b",".join(scope_spans) + b"]}"
        )
    return b'{"resourceSpans":[' + b",".join(resource_spans) + b"]}"


def _reinit_lock_after_fork(owner: Any) -> None:
    """Give ``owner`` a fresh ``_lock`` in a forked child: a lock held by a parent thread at
    fork time would otherwise stay held forever in the child."""
    if not hasattr(os, "register_at_fork"):
        return
    ref = weakref.ref(owner)

    def reinit() -> None:
        obj = ref()
        if obj is not None:
            obj._lock = threading.Lock()

    os.register_at_fork(after_in_child=reinit)


class ToolsetStore:
    """Toolsets seen on the hot path, waiting for the exporter thread to write their sidecars."""

    def __init__(self) -> None:
        self._pending: dict[str, list[dict[str, Any]]] = {}
        self._written: set[str] = set()
        self._lock = threading.Lock()
        _reinit_lock_after_fork(self)

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
    ) -> None:
        self.directory = Path(directory)
        self.toolsets = toolsets
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        _reinit_lock_after_fork(self)
        self._pid = -1
        self._path: Path | None = None
        self._seq = 0
        self._size = 0
        self._failed_once = False

    def _current_path(self) -> Path:
        pid = os.getpid()
        if pid != self._pid or self._path is None:
            self._pid = pid
            self._seq = 0
            self._size = 0
            stamp = time.strftime("%Y%m%dT%H%M%S")
            self._base = f"spans-{stamp}-{pid}"
            self._path = self.directory / f"{self._base}.jsonl"
        elif self._size >= self.max_bytes:
            self._seq += 1
            self._size = 0
            self._path = self.directory / f"{self._base}.{self._seq}.jsonl"
        return self._path

    def _append(self, line: bytes) -> None:
        """Append ``line`` to the current file, creating the directory the first time (or
        again, if it was removed); the file's size is read back from the write itself."""
        path = self._current_path()
        try:
            fh = open(path, "ab")  # noqa: SIM115 - closed below, in both branches
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(path, "ab")  # noqa: SIM115
        with fh:
            fh.write(line)
            self._size = fh.tell()

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
            line = encode_line(spans) + b"\n"
            with self._lock:
                self._write_sidecars(spans)
                self._append(line)
            return SpanExportResult.SUCCESS
        except Exception as exc:  # noqa: BLE001 - an exporter must never raise into the SDK
            if not self._failed_once:
                self._failed_once = True
                logger.warning("evalshift_sdk: could not write captures to %s: %s", self.directory, scrub(str(exc)))
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


Redact = Callable[[dict[str, Any]], "dict[str, Any] | None"]


STATUS_DESCRIPTION = "otel.status_description"
"""The key a span's status message goes to ``redact`` under (OpenTelemetry's name for it in
exporters whose format has no status field); what the hook returns there is the message."""
# Span names that end with one attribute's value ("invoke_agent {prompt_id}", "chat {model}",
# "execute_tool {name}"): a name follows that attribute through the hook.
_NAMED_BY = (A.AGENT_NAME, A.PROMPT_ID, A.REQUEST_MODEL, A.TOOL_NAME)


def _clean(value: Any) -> Any:
    if type(value) is str:
        return scrub(value)
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _clean_attributes(attributes: Any) -> dict[str, Any]:
    return {scrub(str(k)): _clean(v) for k, v in attributes.items()} if attributes else {}


def _might_hold_credentials(name: str, description: str | None, attributes: Any) -> bool:
    texts = [name, description or ""]
    for value in attributes.values():
        if type(value) is str:
            texts.append(value)
        elif isinstance(value, (list, tuple)):
            texts.extend(v for v in value if type(v) is str)
    return might_hold_credentials("\n".join(texts))


def _renamed(name: str, before: Any, after: dict[str, Any]) -> str:
    for key in _NAMED_BY:
        old = (before or {}).get(key)
        if isinstance(old, str) and old and name.endswith(" " + old) and after.get(key) != old:
            new = after.get(key)
            prefix = name[: -len(old) - 1]
            return f"{prefix} {new}" if isinstance(new, str) and new else prefix
    return name


def _resolve_deferred(spans: Sequence[ReadableSpan]) -> None:
    """Finish each model call's bookkeeping that was left for this thread (its messages,
    toolset and response as attribute values), before the redact hook or any exporter."""
    for span in spans:
        attrs = span.attributes
        deferred = attrs.get(A.DEFERRED) if attrs else None
        if deferred is None:
            continue
        try:
            with capture_internal_exceptions("export.resolve"):
                deferred.resolve()
        finally:
            # Never export the pending object itself, whatever resolve() did.
            deferred.attributes.pop(A.DEFERRED, None)


class CaptureExporter(SpanExporter):
    """What the span queue hands finished spans to, on the export thread: the
    ``redact`` hook first, then the capture files and, optionally, an OTLP/HTTP Collector.

    ``redact`` sees every attribute set that leaves the SDK: each span's attributes (a copy;
    structured values are JSON text) with its status message under ``otel.status_description``,
    each event's attributes and the resource's. It returns what to keep, or None to drop the
    span (or event). If it raises, the batch is dropped: an unredacted span never leaves memory.
    Credentials are then stripped from every text (:func:`_scrub.scrub`), hook or not.
    """

    def __init__(
        self,
        files: JsonLinesSpanExporter | None,
        *,
        otlp: SpanExporter | None = None,
        redact: Redact | None = None,
    ) -> None:
        self.files = files
        self.otlp = otlp
        self.redact = redact
        self._redact_failed_once = False
        self._resources: dict[int, tuple[Any, Any]] = {}

    def _redacted(self, spans: Sequence[ReadableSpan]) -> list[ReadableSpan] | None:
        out: list[ReadableSpan] = []
        try:
            for span in spans:
                kept = self._span(span)
                if kept is not None:
                    out.append(kept)
        except Exception as exc:  # noqa: BLE001 - the user's hook must not break export
            if not self._redact_failed_once:
                self._redact_failed_once = True
                # Its type only: the message may quote the very data the hook was to remove.
                logger.warning("evalshift_sdk: redact hook failed (%s), batch dropped", type(exc).__name__)
            return None
        return out

    def _attributes(self, attributes: Any) -> dict[str, Any] | None:
        """One attribute set scrubbed, then through the hook (None: drop what holds it)."""
        cleaned = _clean_attributes(attributes)
        if self.redact is None:
            return cleaned
        kept = self.redact(cleaned)
        return None if kept is None else dict(kept)

    def _resource(self, resource: Any) -> Any:
        """The resource as it may leave: through the hook once per resource (a runtime has one)."""
        key = id(resource)
        cached = self._resources.get(key)
        if cached is None or cached[0] is not resource:
            from opentelemetry.sdk.resources import Resource

            original = dict(resource.attributes) if resource is not None else {}
            attributes = self._attributes(original) or {}
            out = resource if attributes == original else Resource(attributes, getattr(resource, "schema_url", None))
            cached = self._resources[key] = (resource, out)
        return cached[1]

    def _span(self, span: ReadableSpan) -> ReadableSpan | None:
        resource = self._resource(span.resource)
        status = span.status
        attributes = span.attributes or {}
        # Nearly every span: no hook, nothing that looks like a credential, no events or links.
        if self.redact is None and resource is span.resource and not span.events and not span.links \
                and not _might_hold_credentials(span.name, status.description, attributes):
            return span
        attributes = dict(attributes)
        if status.description:
            attributes[STATUS_DESCRIPTION] = status.description
        kept = self._attributes(attributes)
        if kept is None:
            return None
        description = kept.pop(STATUS_DESCRIPTION, None)
        if description is not None and status.status_code is StatusCode.ERROR:
            status = Status(StatusCode.ERROR, scrub(str(description)))
        elif status.description:
            status = Status(status.status_code)
        events = []
        for event in span.events:
            event_attributes = self._attributes(event.attributes)
            if event_attributes is not None:
                events.append(Event(scrub(event.name), event_attributes, event.timestamp))
        links = [Link(link.context, self._attributes(link.attributes) or {}) for link in span.links]
        return ReadableSpan(
            name=scrub(_renamed(scrub(span.name), _clean_attributes(span.attributes), kept)),
            context=span.context,
            parent=span.parent,
            resource=resource,
            attributes=kept,
            events=events,
            links=links,
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        _resolve_deferred(spans)
        kept = self._redacted(spans)
        if kept is None:
            return SpanExportResult.FAILURE
        if not kept:
            return SpanExportResult.SUCCESS
        result = SpanExportResult.SUCCESS
        for target in (self.files, self.otlp):
            if target is None:
                continue
            try:
                if target is self.otlp:  # an OpenTelemetry exporter reads ReadableSpans
                    kept = [s.to_readable() if type(s) is CaptureSpan else s for s in kept]
                if target.export(kept) is not SpanExportResult.SUCCESS:
                    result = SpanExportResult.FAILURE
            except Exception as exc:  # noqa: BLE001 - an exporter must never raise into the SDK
                logger.debug("evalshift_sdk: export failed: %s", exc)
                result = SpanExportResult.FAILURE
        return result

    def shutdown(self) -> None:
        for target in (self.files, self.otlp):
            if target is not None:
                try:
                    target.shutdown()
                except Exception:  # noqa: BLE001, S110 - shutting down is best effort
                    pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def otlp_http_exporter(endpoint: str, headers: dict[str, str] | None = None) -> SpanExporter:
    """The official OTLP/HTTP (protobuf) exporter, from the ``evalshift[otlp]`` extra.

    ``endpoint`` is the Collector's base URL (``http://host:4318``) or its full traces URL.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ImportError(
            "OTLP/HTTP export needs the extra: pip install 'evalshift[otlp]'"
        ) from exc
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    return OTLPSpanExporter(endpoint=url, headers=headers)
