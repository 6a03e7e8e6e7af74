"""The three providers' batch APIs for the simulator, on their wire formats.

- OpenAI Batch: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST /v1/batches``,
  ``GET /v1/batches/{id}``, ``GET /v1/files/{id}`` and ``/content`` (output and error files).
- Anthropic Message Batches: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}`` and
  ``/results`` (JSON lines).
- Gemini batch mode: ``POST /v1beta/models/{model}:batchGenerateContent`` with inlined requests,
  ``GET /v1beta/batches/{id}`` (an Operation whose metadata carries the state and the responses).

A batch ends ``batch_delay_s`` after it was created (read when polled, so a test can shorten it
for a batch already submitted). Each request is then answered by the same scripted model as an
online call; ``batch_fail_first=N`` makes the first N batched requests fail with
``batch_fail_status`` (a per-request failure inside an otherwise healthy batch).
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import orjson

from . import _anthropic, _gemini, _openai, _responses
from ._errors import error_response
from ._rules import SimRequest

if TYPE_CHECKING:
    from ._server import Simulator

Response = tuple[int, dict[str, str], bytes]

ANTHROPIC_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_OPENAI_ENDPOINTS = {"/v1/chat/completions": "chat", "/v1/responses": "responses"}
_GEMINI_CREATE = re.compile(r"/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):batchGenerateContent$")
_BATCH_GET = re.compile(r"/v1(?:beta|alpha)?/batches/(?P<id>[^/:]+)$")
_ANTHROPIC_GET = re.compile(r"/v1/messages/batches/(?P<id>[^/]+)(?P<results>/results)?$")
_OPENAI_FILE = re.compile(r"/v1/files/(?P<id>[^/]+)(?P<content>/content)?$")


@dataclass
class _Item:
    custom_id: str
    body: dict[str, Any]
    status: int = 0
    """HTTP status of the answer once processed (200 or the error's)."""
    answer: dict[str, Any] | None = None


@dataclass
class _Job:
    provider: str
    id: str
    kind: str
    """chat | responses | messages | gemini: the wire format each request speaks."""
    items: list[_Item]
    created: float
    created_wall: datetime
    model: str | None = None
    display_name: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    ended: float | None = None
    error: str | None = None
    """Set when the whole batch failed validation (OpenAI): no request is answered."""


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created: int


def _json(status: int, value: Any) -> Response:
    return status, {"content-type": "application/json"}, orjson.dumps(value)


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class BatchService:
    """Batch jobs and files held in memory by one :class:`Simulator`."""

    def __init__(self, sim: Simulator, *, delay_s: float = 0.0, fail_first: int = 0, fail_status: int = 500) -> None:
        self.sim = sim
        self.delay_s = delay_s
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.jobs: dict[str, _Job] = {}
        self.files: dict[str, _File] = {}
        self.created: Counter[str] = Counter()
        """Batches created, per provider (what a resumed run must not add to)."""
        self.polls: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._failed = 0
        self._lock = threading.RLock()

    # -- routing -------------------------------------------------------------------------------

    def route(self, method: str, path: str, headers: Mapping[str, str], raw: bytes) -> Response | None:
        """The answer to a batch-API request, or None when ``path`` is not one (an online call)."""
        route = path.split("?", 1)[0].rstrip("/")
        handlers: list[tuple[str, re.Pattern[str] | str, Callable[..., Response]]] = [
            ("POST", "/v1/files", lambda: self._openai_upload(headers, raw)),
            ("POST", "/v1/batches", lambda: self._openai_create(raw)),
            # OpenAI's GET /v1/batches/{id} and Gemini's /v1[beta]/batches/{id}: the job says which
            ("GET", _BATCH_GET, lambda m: self._batch_get(m["id"], route)),
            ("GET", _OPENAI_FILE, lambda m: self._openai_file(m["id"], bool(m["content"]))),
            ("POST", "/v1/messages/batches", lambda: self._anthropic_create(raw)),
            ("GET", _ANTHROPIC_GET, lambda m: self._anthropic_get(m["id"], bool(m["results"]))),
            ("POST", _GEMINI_CREATE, lambda m: self._gemini_create(m["model"], raw)),
        ]
        for verb, pattern, handler in handlers:
            if verb != method:
                continue
            if isinstance(pattern, str):
                if route == pattern:
                    return handler()
                continue
            found = pattern.search(route)
            if found is not None and found.end() == len(route):
                return handler(found.groupdict())
        return None

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def _body(self, raw: bytes) -> Any:
        try:
            return orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            return None

    # -- processing ----------------------------------------------------------------------------

    def _settle(self, job: _Job) -> bool:
        """Process the job once its delay has passed; True when it has ended."""
        with self._lock:
            if job.ended is not None:
                return True
            if job.error is not None:
                job.ended = time.monotonic()
                return True
            if time.monotonic() - job.created < self.delay_s:
                return False
            for item in job.items:
                item.status, item.answer = self._answer(job, item)
            job.ended = time.monotonic()
            if job.provider == "openai":
                self._openai_files(job)
            return True

    def _progress(self, job: _Job) -> float:
        if job.ended is not None:
            return 1.0
        return 0.0 if self.delay_s <= 0 else min(1.0, (time.monotonic() - job.created) / self.delay_s)

    def _answer(self, job: _Job, item: _Item) -> tuple[int, dict[str, Any]]:
        """One batched request answered by its scripted model, as an online call would be."""

        provider = job.provider
        body = item.body
        if job.kind == "chat":
            request, render = _openai.parse_chat_request(body), _openai.chat_completion
        elif job.kind == "responses":
            request, render = _responses.parse_responses_request(body), _responses.response
        elif job.kind == "messages":
            request, render = _anthropic.parse_messages_request(body), _anthropic.message
        else:
            request, render = _gemini.parse_generate_request(str(job.model), body), _gemini.generate_content
        n, entry = self._record(job, request)
        if self._failed < self.fail_first:
            self._failed += 1
            entry["status"] = self.fail_status
            return self.fail_status, orjson.loads(error_response(provider, self.fail_status, "simulated failure in a batch")[2])
        try:
            reply, entry["noise"] = self.sim._answer(request)
        except KeyError:
            entry["status"] = 404
            return 404, orjson.loads(error_response(provider, 404, f"The model `{request.model}` does not exist")[2])
        if reply.error is not None:
            entry["status"] = int(reply.error.get("status", 400))
            message = str(reply.error.get("message", "scripted error"))
            return entry["status"], orjson.loads(error_response(provider, entry["status"], message)[2])
        return 200, render(request, reply, n)

    def _record(self, job: _Job, request: SimRequest) -> tuple[int, dict[str, Any]]:
        """Log a batched request in ``sim.requests`` (marked with its batch), never rate-limited."""
        sim = self.sim
        with sim._lock:
            sim._count += 1
            entry = {"path": f"batch:{job.kind}", "body": request.raw, "provider": job.provider,
                     "model": request.model, "status": 200, "received": time.monotonic(), "noise": [],
                     "batch": job.id}
            sim.requests.append(entry)
            return sim._count, entry

    # -- OpenAI --------------------------------------------------------------------------------

    def _openai_upload(self, headers: Mapping[str, str], raw: bytes) -> Response:
        ctype = headers.get("content-type") or ""
        if "multipart/form-data" not in ctype:
            return _openai_error(400, "file uploads are multipart/form-data")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name:
                fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
        if "file" not in fields or "purpose" not in fields:
            return _openai_error(400, "'file' and 'purpose' are required")
        filename, data = fields["file"]
        upload = _File(self._new_id("file-sim"), filename or "upload.jsonl", fields["purpose"][1].decode(), data,
                       int(time.time()))
        with self._lock:
            self.files[upload.id] = upload
        return _json(200, self._file_object(upload))

    def _file_object(self, f: _File) -> dict[str, Any]:
        return {"id": f.id, "object": "file", "bytes": len(f.data), "created_at": f.created, "filename": f.filename,
                "purpose": f.purpose, "status": "processed", "expires_at": None, "status_details": None}

    def _openai_file(self, file_id: str, content: bool) -> Response:
        f = self.files.get(file_id)
        if f is None:
            return _openai_error(404, f"No such File object: {file_id}")
        if content:
            return 200, {"content-type": "application/octet-stream"}, f.data
        return _json(200, self._file_object(f))

    def _openai_create(self, raw: bytes) -> Response:
        body = self._body(raw)
        if not isinstance(body, dict):
            return _openai_error(400, "request body is not JSON")
        endpoint = body.get("endpoint")
        if endpoint not in _OPENAI_ENDPOINTS:
            return _openai_error(400, f"unsupported endpoint {endpoint!r}")
        if body.get("completion_window") != "24h":
            return _openai_error(400, "completion_window must be '24h'")
        upload = self.files.get(str(body.get("input_file_id")))
        if upload is None or upload.purpose != "batch":
            return _openai_error(400, f"input file {body.get('input_file_id')!r} not found or not purpose=batch")
        job = _Job("openai", self._new_id("batch_sim"), _OPENAI_ENDPOINTS[endpoint], [], time.monotonic(),
                   datetime.now(timezone.utc), metadata=dict(body.get("metadata") or {}), input_file_id=upload.id)
        job.error = self._openai_lines(job, upload.data, endpoint)
        with self._lock:
            self.jobs[job.id] = job
            self.created["openai"] += 1
        return _json(200, self._openai_batch_object(job))

    def _openai_lines(self, job: _Job, data: bytes, endpoint: str) -> str | None:
        """Read the input file into the job; a message when validation fails the whole batch."""
        seen: set[str] = set()
        models: set[str] = set()
        for lineno, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                return f"line {lineno}: blank lines are not allowed"
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                return f"line {lineno}: not valid JSON"
            cid, body = row.get("custom_id"), row.get("body")
            if not isinstance(cid, str) or not isinstance(body, dict):
                return f"line {lineno}: custom_id and body are required"
            if row.get("method") != "POST" or row.get("url") != endpoint:
                return f"line {lineno}: method must be POST and url {endpoint}"
            if cid in seen:
                return f"line {lineno}: duplicate custom_id {cid!r}"
            seen.add(cid)
            models.add(str(body.get("model")))
            job.items.append(_Item(cid, body))
        if not job.items:
            return "the input file has no requests"
        if len(models) > 1:
            return "every request in a batch must use the same model"
        job.model = models.pop()
        return None

    def _openai_files(self, job: _Job) -> None:
        out, err = [], []
        for i, item in enumerate(job.items):
            line = {"id": f"batch_req_{job.id}_{i}", "custom_id": item.custom_id,
                    "response": {"status_code": item.status, "request_id": f"req_{job.id}_{i}", "body": item.answer},
                    "error": None}
            (out if item.status == 200 else err).append(orjson.dumps(line) + b"\n")
        for rows, attr, name in ((out, "output_file_id", "output"), (err, "error_file_id", "errors")):
            if rows:
                f = _File(self._new_id("file-sim"), f"batch_{job.id}_{name}.jsonl", "batch_output", b"".join(rows),
                          int(time.time()))
                self.files[f.id] = f
                setattr(job, attr, f.id)

    def _batch_get(self, batch_id: str, route: str) -> Response:
        job = self.jobs.get(batch_id)
        gemini = job.provider == "gemini" if job is not None else not route.startswith("/v1/")
        return self._gemini_get(batch_id) if gemini else self._openai_batch(batch_id)

    def _openai_batch(self, batch_id: str) -> Response:
        job = self.jobs.get(batch_id)
        if job is None or job.provider != "openai":
            return _openai_error(404, f"No batch found with id '{batch_id}'")
        self.polls["openai"] += 1
        self._settle(job)
        return _json(200, self._openai_batch_object(job))

    def _openai_batch_object(self, job: _Job) -> dict[str, Any]:
        created = int(job.created_wall.timestamp())
        total = len(job.items)
        ended = job.ended is not None
        if job.error is not None:
            status = "failed" if ended else "validating"
            counts = {"total": 0, "completed": 0, "failed": 0}
        else:
            status = "completed" if ended else "in_progress"
            done = sum(1 for i in job.items if i.status == 200) if ended else int(total * self._progress(job))
            failed = sum(1 for i in job.items if i.status not in (0, 200)) if ended else 0
            counts = {"total": total, "completed": done, "failed": failed}
        return {
            "id": job.id, "object": "batch", "endpoint": next(k for k, v in _OPENAI_ENDPOINTS.items() if v == job.kind),
            "errors": {"object": "list", "data": [{"code": "invalid_request", "message": job.error, "line": None,
                                                   "param": None}]} if job.error else None,
            "input_file_id": job.input_file_id, "completion_window": "24h", "status": status,
            "output_file_id": job.output_file_id, "error_file_id": job.error_file_id, "created_at": created,
            "in_progress_at": created if job.error is None else None, "expires_at": created + 86400,
            "finalizing_at": None, "completed_at": int(time.time()) if ended and job.error is None else None,
            "failed_at": int(time.time()) if ended and job.error else None, "expired_at": None,
            "cancelling_at": None, "cancelled_at": None, "request_counts": counts,
            "metadata": job.metadata or None, "model": job.model,
        }

    # -- Anthropic -----------------------------------------------------------------------------

    def _anthropic_create(self, raw: bytes) -> Response:

        body = self._body(raw)
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return error_response("anthropic", 400, "requests: a non-empty list is required")
        items, seen = [], set()
        for i, request in enumerate(requests):
            cid = request.get("custom_id") if isinstance(request, dict) else None
            if not isinstance(cid, str) or not ANTHROPIC_CUSTOM_ID.fullmatch(cid):
                return error_response("anthropic", 400, f"requests.{i}.custom_id: String should match pattern "
                                                "'^[a-zA-Z0-9_-]{1,64}$'")
            if cid in seen:
                return error_response("anthropic", 400, f"requests.{i}.custom_id: duplicate custom_id {cid!r}")
            seen.add(cid)
            params = request.get("params")
            if not isinstance(params, dict) or params.get("stream"):
                return error_response("anthropic", 400, f"requests.{i}.params: non-streaming Messages parameters required")
            items.append(_Item(cid, params))
        job = _Job("anthropic", self._new_id("msgbatch_sim"), "messages", items, time.monotonic(),
                   datetime.now(timezone.utc))
        with self._lock:
            self.jobs[job.id] = job
            self.created["anthropic"] += 1
        return _json(200, self._anthropic_object(job))

    def _anthropic_get(self, batch_id: str, results: bool) -> Response:

        job = self.jobs.get(batch_id)
        if job is None or job.provider != "anthropic":
            return error_response("anthropic", 404, f"message batch {batch_id} not found")
        if not results:
            self.polls["anthropic"] += 1
            self._settle(job)
            return _json(200, self._anthropic_object(job))
        if job.ended is None:
            return error_response("anthropic", 400, f"message batch {batch_id} is still processing")
        lines = []
        for item in job.items:
            if item.status == 200:
                result: dict[str, Any] = {"type": "succeeded", "message": item.answer}
            else:
                result = {"type": "errored", "error": dict(item.answer or {}) | {"request_id": f"req_{job.id}"}}
            lines.append(orjson.dumps({"custom_id": item.custom_id, "result": result}) + b"\n")
        return 200, {"content-type": "application/binary"}, b"".join(lines)

    def _anthropic_object(self, job: _Job) -> dict[str, Any]:
        ended = job.ended is not None
        ok = sum(1 for i in job.items if i.status == 200) if ended else 0
        return {
            "id": job.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else len(job.items), "succeeded": ok,
                               "errored": len(job.items) - ok if ended else 0, "canceled": 0, "expired": 0},
            "ended_at": _iso(datetime.now(timezone.utc)) if ended else None,
            "created_at": _iso(job.created_wall), "expires_at": _iso(job.created_wall + timedelta(days=1)),
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": f"{self.sim.base_url}/v1/messages/batches/{job.id}/results" if ended else None,
        }

    # -- Gemini --------------------------------------------------------------------------------

    def _gemini_create(self, model: str, raw: bytes) -> Response:

        body = self._body(raw)
        batch = body.get("batch") if isinstance(body, dict) else None
        requests = ((batch or {}).get("inputConfig") or {}).get("requests") or {}
        requests = requests.get("requests") if isinstance(requests, dict) else None
        if not isinstance(requests, list) or not requests:
            return error_response("gemini", 400, "batch.inputConfig.requests.requests: a non-empty list is required")
        items = []
        for i, entry in enumerate(requests):
            request = entry.get("request") if isinstance(entry, dict) else None
            if not isinstance(request, dict):
                return error_response("gemini", 400, f"batch.inputConfig.requests.requests[{i}].request is required")
            key = (entry.get("metadata") or {}).get("key")
            items.append(_Item(str(key if key is not None else i), request))
        job = _Job("gemini", self._new_id("sim"), "gemini", items, time.monotonic(), datetime.now(timezone.utc),
                   model=model, display_name=str(batch.get("displayName") or ""),
                   metadata={i: dict(e.get("metadata") or {}) for i, e in enumerate(requests)})
        with self._lock:
            self.jobs[job.id] = job
            self.created["gemini"] += 1
        return _json(200, self._gemini_operation(job))

    def _gemini_get(self, batch_id: str) -> Response:

        job = self.jobs.get(batch_id)
        if job is None or job.provider != "gemini":
            return error_response("gemini", 404, f"batch batches/{batch_id} not found")
        self.polls["gemini"] += 1
        self._settle(job)
        return _json(200, self._gemini_operation(job))

    def _gemini_operation(self, job: _Job) -> dict[str, Any]:
        ended = job.ended is not None
        now = _iso(datetime.now(timezone.utc))
        total = len(job.items)
        ok = sum(1 for i in job.items if i.status == 200) if ended else 0
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "model": f"models/{job.model}", "displayName": job.display_name, "name": f"batches/{job.id}",
            "createTime": _iso(job.created_wall), "updateTime": now,
            "state": "BATCH_STATE_SUCCEEDED" if ended else "BATCH_STATE_RUNNING",
            "batchStats": {"requestCount": str(total), "successfulRequestCount": str(ok),
                           "failedRequestCount": str(total - ok if ended else 0),
                           "pendingRequestCount": str(0 if ended else total)},
        }
        operation: dict[str, Any] = {"name": f"batches/{job.id}", "metadata": meta}
        if ended:
            responses = []
            for i, item in enumerate(job.items):
                entry: dict[str, Any] = {"metadata": job.metadata.get(i)} if job.metadata.get(i) else {}
                if item.status == 200:
                    entry["response"] = item.answer
                else:
                    entry["error"] = (item.answer or {}).get("error") or {"code": item.status, "message": "failed"}
                responses.append(entry)
            output = {"inlinedResponses": {"inlinedResponses": responses}}
            meta.update({"endTime": now, "output": output})
            operation.update({"done": True, "response": {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
                **output}})
        return operation


def _openai_error(status: int, message: str) -> Response:

    return error_response("openai", status, message)

