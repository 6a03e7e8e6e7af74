"""Replay through the providers' batch APIs: the same calls at about half the price.

``run(batch=True)`` (``evalshift run/compare --batch``, ``replay: {batch: true}``) plans every
request as online replay does, then submits each model's uncached requests as one batch (split
only where a provider's size limits demand): OpenAI Batch (a JSONL file upload, then
``/v1/batches`` on the chat-completions or responses endpoint), Anthropic Message Batches, Gemini
batch mode (inlined requests). Teacher-forced rounds are independent (round k sees the recorded
rounds, never the model's own), so every round of every example can go in at once.

Each request's ``custom_id`` is built from indices (``e12-s0-r2``: example 12 of the run, the
source's first replay, round 2), safe for every provider; ``batches.json`` in the run folder maps
it back to (example, role, repeat, round) and holds every batch's id and state. A resumed run
polls the batches it finds there and never resubmits their requests. Results become the same
raw.jsonl rows as online replay; a request that failed inside a batch is retried online when its
error is transient and the retry policy allows retries, else it fails its example as online
replay would (``round k/n: ...``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._exceptions import ReplayError
from .._io import atomic_write_json, check_schema_version, iter_jsonl
from .._models import Usage
from ..store._runs import RAW_FILE, existing_run_dir, load_manifest
from ._execute import (
    Finished,
    Replayer,
    RetryPolicy,
    close_clients,
    failed_row,
    run_sync,
    write_rows,
)
from ._plan import Unit
from ._routing import route, settings_for
from .clients import (
    BaseClient,
    ModelCallError,
    ModelResponse,
    PreparedRequest,
    classify_error,
    make_client,
)

BATCHES_FILE = "batches.json"
STATE_VERSION = 1
REPORT_NOTE = "replayed through batch APIs"

# (requests, bytes) one batch may hold: OpenAI 50,000 requests / 200 MB file; Anthropic 100,000
# requests / 256 MB; Gemini inlined requests 20 MB in all. Kept a little below each.
PROVIDER_LIMITS: dict[str, tuple[int, int]] = {
    "openai": (50_000, 190_000_000),
    "anthropic": (100_000, 240_000_000),
    "gemini": (50_000, 18_000_000),
}
_STATUS_CODES = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                 "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529}
_GEMINI_ENDED = {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
                 "JOB_STATE_PARTIALLY_SUCCEEDED"}
_OPENAI_ENDED = {"completed", "failed", "expired", "cancelled"}


@dataclass
class BatchPolicy:
    """How batches are polled: ``poll_s`` after submission, then 1.5x longer each time up to
    ``max_poll_s``. ``max_requests`` caps a batch below the provider's own limit."""

    poll_s: float = 5.0
    max_poll_s: float = 60.0
    factor: float = 1.5
    max_requests: int | None = None

    def waits(self) -> Any:
        wait = self.poll_s
        while True:
            yield wait
            wait = min(max(self.max_poll_s, self.poll_s), wait * self.factor)


def custom_id(position: int, role: str, repeat: int, round_no: int) -> str:
    """``e{example}-{s|t}{repeat}-r{round}``: indices only, within ``^[a-zA-Z0-9_-]{1,64}$``."""
    return f"e{position}-{'s' if role == 'source' else 't'}{repeat}-r{round_no}"


# -- the state in the run folder ------------------------------------------------------------


class BatchState:
    """``batches.json``: the request mapping and every batch's id and state (rewritten atomically)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / BATCHES_FILE
        data: dict[str, Any] = {}
        if self.path.exists():
            try:
                data = orjson.loads(self.path.read_bytes())
            except orjson.JSONDecodeError as exc:
                raise ReplayError(f"{self.path}: not valid JSON ({exc}); the batches it named cannot be "
                                  "resumed") from exc
        if not isinstance(data, dict):
            raise ReplayError(f"{self.path}: not a batch state (a JSON object); the batches it named cannot be "
                              "resumed")
        check_schema_version(data.get("schema_version", STATE_VERSION), STATE_VERSION, file=str(self.path))
        self.requests: dict[str, dict[str, Any]] = dict(data.get("requests") or {})
        self.batches: list[dict[str, Any]] = list(data.get("batches") or [])

    def save(self) -> None:
        atomic_write_json(self.path, {"schema_version": STATE_VERSION, "batches": self.batches,
                                      "requests": self.requests})

    def covering(self, cid: str, key: str) -> dict[str, Any] | None:
        """The batch already holding this exact request, unless its result there was an error."""
        for rec in reversed(self.batches):
            if rec.get("id") and rec.get("keys", {}).get(cid) == key and cid not in rec.get("errored", []):
                return rec
        return None

    def summary(self) -> list[dict[str, Any]]:
        """What run.json records of each batch."""
        keys = ("name", "provider", "model", "id", "status", "requests", "succeeded", "failed", "submitted", "ended")
        return [{k: rec.get(k) for k in keys} for rec in self.batches]


# -- provider adapters ----------------------------------------------------------------------


@dataclass
class _Poll:
    done: bool
    status: str
    completed: int = 0
    failed: int = 0


def _error(message: str, status: int | None, *, retryable: bool | None = None) -> ModelCallError:
    if retryable is None:
        retryable = status is None or status in (408, 409, 425, 429) or status >= 500
    label = f"{status} " if status is not None else ""
    return ModelCallError(f"in batch: {label}{message}".strip(), status=status, retryable=retryable)


def _parse(client: BaseClient, response: Any) -> ModelResponse | ModelCallError:
    try:
        return client.parse(response)
    except Exception as exc:  # noqa: BLE001 - a result the client cannot read fails that request only
        return _error(f"unreadable result: {type(exc).__name__}: {exc}", None, retryable=False)


class _OpenAI:
    async def submit(self, client: BaseClient, slots: list[_Slot], name: str, run_id: str) -> dict[str, Any]:
        sdk = client.sdk()
        endpoint = "/v1/responses" if getattr(client, "api", "chat") == "responses" else "/v1/chat/completions"
        lines = b"".join(orjson.dumps({"custom_id": s.cid, "method": "POST", "url": endpoint, "body": s.request.body},
                                      option=orjson.OPT_NON_STR_KEYS) + b"\n" for s in slots)
        upload = await sdk.files.create(file=(f"evalshift-{run_id}-{name}.jsonl", lines, "application/jsonl"),
                                        purpose="batch")
        batch = await sdk.batches.create(input_file_id=upload.id, endpoint=endpoint, completion_window="24h",
                                         metadata={"evalshift_run": run_id, "evalshift_batch": name})
        return {"id": batch.id, "input_file_id": upload.id, "endpoint": endpoint, "status": batch.status}

    async def poll(self, client: BaseClient, rec: dict[str, Any]) -> _Poll:
        batch = await client.sdk().batches.retrieve(rec["id"])
        rec["output_file_id"], rec["error_file_id"] = batch.output_file_id, batch.error_file_id
        if batch.status == "failed":
            errors = getattr(batch.errors, "data", None) or []
            rec["error"] = "; ".join(str(e.message) for e in errors) or "the batch failed"
        counts = batch.request_counts
        ok, failed = getattr(counts, "completed", 0) or 0, getattr(counts, "failed", 0) or 0
        return _Poll(batch.status in _OPENAI_ENDED, batch.status, ok + failed, failed)

    async def results(self, client: BaseClient, rec: dict[str, Any]) -> dict[str, ModelResponse | ModelCallError]:
        if rec.get("status") == "failed":
            return {cid: _error(f"batch {rec['id']} failed: {rec.get('error')}", None, retryable=False)
                    for cid in rec["keys"]}
        if getattr(client, "api", "chat") == "responses":
            from openai.types.responses import Response as Parsed
        else:
            from openai.types.chat import ChatCompletion as Parsed
        sdk = client.sdk()
        out: dict[str, ModelResponse | ModelCallError] = {}
        for file_id in (rec.get("output_file_id"), rec.get("error_file_id")):
            if not file_id:
                continue
            content = (await sdk.files.content(file_id)).content
            for line in content.splitlines():
                if not line.strip():
                    continue
                row = orjson.loads(line)
                cid, response, error = row.get("custom_id"), row.get("response"), row.get("error")
                if not isinstance(cid, str):
                    continue
                if isinstance(response, Mapping) and response.get("status_code") == 200:
                    out[cid] = _parse(client, Parsed.construct(**(response.get("body") or {})))
                elif isinstance(response, Mapping):
                    body = response.get("body") or {}
                    detail = (body.get("error") or {}).get("message") if isinstance(body, Mapping) else None
                    out[cid] = _error(str(detail or body), int(response.get("status_code") or 0) or None)
                else:  # not attempted: expired, cancelled
                    error = error if isinstance(error, Mapping) else {}
                    out[cid] = _error(f"{error.get('code') or 'no response'}: {error.get('message') or ''}", None)
        return out


class _Anthropic:
    @staticmethod
    def _batches(client: BaseClient) -> Any:
        sdk = client.sdk()
        batches = getattr(sdk.messages, "batches", None)
        return batches if batches is not None else sdk.beta.messages.batches

    async def submit(self, client: BaseClient, slots: list[_Slot], name: str, run_id: str) -> dict[str, Any]:
        batch = await self._batches(client).create(
            requests=[{"custom_id": s.cid, "params": s.request.body} for s in slots])
        return {"id": batch.id, "status": batch.processing_status}

    async def poll(self, client: BaseClient, rec: dict[str, Any]) -> _Poll:
        batch = await self._batches(client).retrieve(rec["id"])
        c = batch.request_counts
        failed = c.errored + c.canceled + c.expired
        return _Poll(batch.processing_status == "ended", batch.processing_status, c.succeeded + failed, failed)

    async def results(self, client: BaseClient, rec: dict[str, Any]) -> dict[str, ModelResponse | ModelCallError]:
        out: dict[str, ModelResponse | ModelCallError] = {}
        async for item in await self._batches(client).results(rec["id"]):
            result = item.result
            if result.type == "succeeded":
                out[item.custom_id] = _parse(client, result.message)
            elif result.type == "errored":
                error = getattr(result.error, "error", None)
                kind = str(getattr(error, "type", "api_error"))
                out[item.custom_id] = _error(f"{kind}: {getattr(error, 'message', '')}", _STATUS_CODES.get(kind))
            else:  # canceled or expired: never attempted
                out[item.custom_id] = _error(f"request {result.type}", None)
        return out


class _Gemini:
    def __init__(self) -> None:
        self._jobs: dict[str, Any] = {}

    async def submit(self, client: BaseClient, slots: list[_Slot], name: str, run_id: str) -> dict[str, Any]:
        from google.genai import types

        keyed = "metadata" in getattr(types.InlinedRequest, "model_fields", {})
        src = []
        for s in slots:
            args = client._make_call_args(s.request.body)  # type: ignore[attr-defined]
            entry: dict[str, Any] = {"contents": args["contents"], "config": args["config"]}
            if keyed:
                entry["metadata"] = {"key": s.cid}
            src.append(entry)
        job = await client.sdk().aio.batches.create(model=slots[0].request.model, src=src,
                                                    config={"display_name": f"evalshift-{run_id}-{name}"})
        return {"id": job.name, "status": _state(job)}

    async def poll(self, client: BaseClient, rec: dict[str, Any]) -> _Poll:
        job = await client.sdk().aio.batches.get(name=rec["id"])
        self._jobs[rec["id"]] = job
        state = _state(job)
        if state in ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"):
            rec["error"] = getattr(job.error, "message", None) or state
        return _Poll(state in _GEMINI_ENDED, state)

    async def results(self, client: BaseClient, rec: dict[str, Any]) -> dict[str, ModelResponse | ModelCallError]:
        job = self._jobs.get(rec["id"]) or await client.sdk().aio.batches.get(name=rec["id"])
        state = _state(job)
        if state == "JOB_STATE_FAILED":
            return {cid: _error(f"batch {rec['id']} failed: {rec.get('error')}", None, retryable=False)
                    for cid in rec["keys"]}
        order = list(rec["keys"])  # responses come back in the order of the requests
        out: dict[str, ModelResponse | ModelCallError] = {}
        for i, item in enumerate(getattr(job.dest, "inlined_responses", None) or []):
            cid = (item.metadata or {}).get("key") if getattr(item, "metadata", None) else None
            cid = cid or (order[i] if i < len(order) else None)
            if cid is None:
                continue
            if item.response is not None:
                out[cid] = _parse(client, item.response)
            else:
                code = getattr(item.error, "code", None)
                out[cid] = _error(str(getattr(item.error, "message", None) or "failed"), int(code) if code else None)
        return out


def _state(job: Any) -> str:
    state = getattr(job, "state", None)
    return str(getattr(state, "name", state) or "JOB_STATE_PENDING")


_ADAPTERS: dict[str, Callable[[], Any]] = {"openai": _OpenAI, "anthropic": _Anthropic, "gemini": _Gemini}


def _check_sdk(provider: str, client: BaseClient) -> None:
    """A clear message when the installed SDK has no batch API."""
    sdk = client.sdk()
    if provider == "openai":
        ok = hasattr(sdk, "batches") and hasattr(sdk, "files")
    elif provider == "anthropic":
        ok = hasattr(sdk.messages, "batches") or hasattr(getattr(getattr(sdk, "beta", None), "messages", None),
                                                         "batches")
    else:
        ok = hasattr(sdk.aio, "batches")
    if not ok:
        raise ReplayError(f"the installed {provider} SDK has no batch API; upgrade it or replay without --batch")


# -- execution --------------------------------------------------------------------------------


@dataclass
class _Slot:
    """One round of one unit: a request the batch (or the cache) answers."""

    cid: str
    unit: Unit
    index: int
    request: PreparedRequest
    key: str
    batch: str | None = None
    """The id of the batch that answers it."""
    copies: list[tuple[Unit, int]] = field(default_factory=list)
    """Other (unit, round) with the very same request and sample: answered by this one, as the
    response cache would answer them online."""


@dataclass
class _Pending:
    unit: Unit
    responses: list[ModelResponse | ModelCallError | None]
    origin: list[str]
    """Per round: cache, batch or online (how it is priced)."""
    left: int = 0


@dataclass
class BatchOutcome:
    batches: list[dict[str, Any]] = field(default_factory=list)
    submitted: int = 0
    """Batches this invocation created (a resumed run that found all of its batches: 0)."""
    retried_online: int = 0


async def _with_retries(call: Callable[[], Any], retry: RetryPolicy, what: str) -> Any:
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:  # noqa: BLE001 - triaged like a model call
            err = classify_error(exc)
            if not err.retryable or attempt >= retry.max_retries:
                raise ReplayError(f"{what}: {err}") from exc
            await asyncio.sleep(retry.delay(attempt, err.retry_after))
            attempt += 1


class _BatchRun:
    def __init__(self, units: list[Unit], replayer: Replayer, raw: Path, run_dir: Path, run_id: str,
                 positions: Mapping[str, int], policy: BatchPolicy, on_change: Callable[[list[dict[str, Any]]], None],
                 bar: Any) -> None:
        self.units, self.replayer, self.raw, self.run_id = units, replayer, raw, run_id
        self.positions, self.policy, self.on_change, self.bar = positions, policy, on_change, bar
        self.state = BatchState(run_dir)
        self.adapters = {name: make() for name, make in _ADAPTERS.items()}
        self.slots: dict[str, _Slot] = {}
        self.pending: dict[tuple[str, str, int], _Pending] = {}
        self.outcome = BatchOutcome()
        retry = replayer.retry
        # the batch attempt was the first try: online retries get what the policy has left
        self.retrier: Replayer | None = None
        if retry.max_retries > 0:
            self.retrier = Replayer(prices=replayer.prices, cache=replayer.cache, use_cache=False,
                                     retry=dataclasses.replace(retry, max_retries=retry.max_retries - 1),
                                     gates=replayer.gates)
            self.retrier.tally = replayer.tally
        self._write_lock = asyncio.Lock()
        self._online: list[asyncio.Task[None]] = []

    # planning

    def plan(self) -> list[_Slot]:
        """Answer what the cache can; the rest are slots, keyed by custom id."""
        r = self.replayer
        todo: list[_Slot] = []
        by_key: dict[str, _Slot] = {}
        for unit in self.units:
            n = len(unit.requests)
            pending = _Pending(unit, [None] * n, [""] * n, left=n)
            self.pending[unit.key] = pending
            for k, request in enumerate(unit.requests):
                hit = r.cache.get(request, unit.sample) if r.use_cache and r.cache is not None else None
                if hit is not None:
                    r.tally.cache_hits += 1
                    r.tally.responses += 1
                    pending.responses[k], pending.origin[k] = hit, "cache"
                    pending.left -= 1
                    continue
                key = f"{request.cache_key()}|{unit.sample}"
                if r.use_cache and key in by_key:
                    by_key[key].copies.append((unit, k))
                    continue
                cid = custom_id(self.positions[unit.example.id], unit.role, unit.repeat, k + 1)
                # batches.json keeps a short form: a changed suite or config is never resumed as this one
                slot = by_key[key] = _Slot(cid, unit, k, request, f"{request.cache_key()[:16]}|{unit.sample}")
                self.slots[cid] = slot
                todo.append(slot)
        return todo

    async def submit(self, todo: list[_Slot]) -> list[dict[str, Any]]:
        """Batches to drive: those already holding a slot (resumed), then new ones for the rest."""
        drive: dict[int, dict[str, Any]] = {}
        fresh: dict[tuple[str, str], list[_Slot]] = {}
        for slot in todo:
            rec = self.state.covering(slot.cid, slot.key)
            if rec is not None:
                slot.batch = rec["id"]
                drive[id(rec)] = rec
            else:
                fresh.setdefault((slot.unit.gate_key, str(slot.unit.model)), []).append(slot)
        for (_, model), slots in fresh.items():
            client, provider = slots[0].unit.client, slots[0].unit.model.provider
            _check_sdk(provider, client)
            for chunk in self._chunks(provider, slots):
                name = f"{model.replace(':', '-')}-{len(self.state.batches) + 1}"
                adapter = self.adapters[provider]
                created = await _with_retries(
                    lambda a=adapter, cl=client, c=chunk, n=name: a.submit(cl, c, n, self.run_id),
                    self.replayer.retry, f"could not submit the batch for {model}")
                rec = {"name": name, "provider": provider, "model": model, "client_key": slots[0].unit.gate_key,
                       **created, "requests": len(chunk), "succeeded": 0, "failed": 0,
                       "submitted": _now(), "ended": None, "keys": {s.cid: s.key for s in chunk}, "errored": []}
                for s in chunk:
                    s.batch = created["id"]
                    self.state.requests[s.cid] = {"example_id": s.unit.example.id, "role": s.unit.role,
                                                  "repeat": s.unit.repeat, "round": s.index + 1}
                self.state.batches.append(rec)
                self.state.save()  # the id is on disk before anything waits on it
                self.outcome.submitted += 1
                drive[id(rec)] = rec
        self.on_change(self.state.summary())
        return list(drive.values())

    def _chunks(self, provider: str, slots: list[_Slot]) -> list[list[_Slot]]:
        max_n, max_bytes = PROVIDER_LIMITS[provider]
        if self.policy.max_requests:
            max_n = min(max_n, self.policy.max_requests)
        chunks: list[list[_Slot]] = [[]]
        size = 0
        for slot in slots:
            n = slot.request.size_chars() + 256
            if chunks[-1] and (len(chunks[-1]) >= max_n or size + n > max_bytes):
                chunks.append([])
                size = 0
            chunks[-1].append(slot)
            size += n
        return chunks

    # waiting

    async def drive(self, rec: dict[str, Any]) -> None:
        provider = rec["provider"]
        adapter = self.adapters[provider]
        client = next(s.unit.client for s in self.slots.values() if s.cid in rec["keys"])
        waits = self.policy.waits()
        seen = 0
        failures = 0
        while True:
            try:
                poll = await adapter.poll(client, rec)
            except Exception as exc:  # noqa: BLE001 - a poll that failed is tried again, then reported
                err = classify_error(exc)
                failures += 1
                if not err.retryable or failures > self.replayer.retry.max_retries:
                    raise ReplayError(f"could not poll batch {rec['id']} ({rec['model']}): {err}; "
                                      f"`evalshift run --resume {self.run_id}` tries again") from exc
                await asyncio.sleep(self.replayer.retry.delay(failures - 1, err.retry_after))
                continue
            failures = 0
            changed = (rec["status"], rec["succeeded"], rec["failed"]) != (
                poll.status, poll.completed - poll.failed, poll.failed)
            rec["status"], rec["succeeded"], rec["failed"] = poll.status, poll.completed - poll.failed, poll.failed
            mine = min(poll.completed, rec["requests"])
            if mine > seen:
                self.bar.update(mine - seen)
                seen = mine
            if poll.done:
                break
            if changed:
                self.state.save()
            await asyncio.sleep(next(waits))
        results = await _with_retries(lambda: adapter.results(client, rec), self.replayer.retry,
                                      f"could not read the results of batch {rec['id']} ({rec['model']})")
        self.bar.update(max(0, rec["requests"] - seen))
        rec["ended"] = rec.get("ended") or _now()
        ok = [cid for cid, r in results.items() if isinstance(r, ModelResponse)]
        rec["succeeded"], rec["failed"] = len(ok), rec["requests"] - len(ok)
        rec["errored"] = sorted(cid for cid in rec["keys"] if not isinstance(results.get(cid), ModelResponse))
        self.state.save()
        self.on_change(self.state.summary())
        finished: list[_Pending] = []
        for cid in rec["keys"]:
            slot = self.slots.get(cid)
            if slot is None or slot.batch != rec["id"]:
                continue  # not needed by this invocation (its row is written), or answered by another batch
            self._deliver(slot, results.get(cid) or _error("no result for this request", None), finished)
        await self._flush(finished)

    def _deliver(self, slot: _Slot, result: ModelResponse | ModelCallError, finished: list[_Pending]) -> None:
        tally = self.replayer.tally
        tally.requests += 1
        if isinstance(result, ModelCallError) and result.retryable and self.retrier is not None:
            self._online.append(asyncio.create_task(self._retry_online(slot)))
            return
        if isinstance(result, ModelResponse):
            result.dropped_params = list(slot.request.dropped_params)
            tally.responses += 1
            tally.spent += self._cost(slot.unit, result, "batch")
        self._resolve(slot, result, "batch", finished)

    def _resolve(self, slot: _Slot, result: ModelResponse | ModelCallError, origin: str,
                 finished: list[_Pending]) -> None:
        """Give the answer to its round and to every copy of the request (those as cache hits)."""
        for i, (unit, k) in enumerate([(slot.unit, slot.index), *slot.copies]):
            pending = self.pending[unit.key]
            if pending.responses[k] is not None:
                continue
            copy = i > 0 and isinstance(result, ModelResponse)
            if copy:
                self.replayer.tally.cache_hits += 1
                self.replayer.tally.responses += 1
            pending.responses[k], pending.origin[k] = result, "cache" if copy else origin
            pending.left -= 1
            if pending.left == 0:
                finished.append(pending)

    async def _retry_online(self, slot: _Slot) -> None:
        assert self.retrier is not None
        self.outcome.retried_online += 1
        result: ModelResponse | ModelCallError
        try:
            result, _ = await self.retrier.fetch(slot.unit, slot.request)
        except ModelCallError as err:
            result = err
        finished: list[_Pending] = []
        self._resolve(slot, result, "online", finished)
        await self._flush(finished)

    def _cost(self, unit: Unit, response: ModelResponse, origin: str) -> float:
        prices = self.replayer.prices
        return prices.cost(str(unit.model), response.input_tokens, response.output_tokens,
                           batch=origin != "online") or 0.0

    def _finish(self, pending: _Pending) -> Finished:
        unit = pending.unit
        fresh = [(unit.requests[k], r, unit.sample) for k, r in enumerate(pending.responses)
                 if isinstance(r, ModelResponse) and pending.origin[k] != "cache"]
        answered = [(k, r) for k, r in enumerate(pending.responses) if isinstance(r, ModelResponse)]
        cost = sum(self._cost(unit, r, pending.origin[k]) for k, r in answered)
        failed = next(((k, r) for k, r in enumerate(pending.responses) if isinstance(r, ModelCallError)), None)
        if failed is None:
            responses = [r for r in pending.responses if isinstance(r, ModelResponse)]
            row = self.replayer.row(unit, responses, all(o == "cache" for o in pending.origin))
            return row.model_copy(update={"cost_usd": cost}), fresh
        k, err = failed
        # every answered round was paid for, before or after the one that failed
        usage = Usage(input_tokens=sum(r.input_tokens for _, r in answered),
                      output_tokens=sum(r.output_tokens for _, r in answered))
        return failed_row(unit, k + 1, err, usage, cost), fresh

    async def _flush(self, finished: list[_Pending]) -> None:
        if not finished:
            return
        done = [self._finish(p) for p in finished]
        async with self._write_lock:
            await write_rows(self.raw, self.replayer.cache, done)
            self.replayer.tally.rows.extend(row for row, _ in done)
        self.bar.set_postfix_str(f"${self.replayer.tally.spent:.4f} spent", refresh=False)

    async def execute(self) -> BatchOutcome:
        todo = self.plan()
        cached = [p for p in self.pending.values() if p.left == 0]
        self.bar.update(sum(len(p.unit.requests) for p in cached))
        try:
            await self._flush(cached)
            records = await self.submit(todo) if todo else []
            await asyncio.gather(*(self.drive(rec) for rec in records))
            while self._online:  # online retries may still be running
                tasks, self._online = self._online, []
                await asyncio.gather(*tasks)
            self.on_change(self.state.summary())
        finally:
            await close_clients(self.units)
        self.outcome.batches = self.state.summary()
        return self.outcome


async def execute(units: list[Unit], replayer: Replayer, raw: Path, *, run_dir: Path, run_id: str,
                  positions: Mapping[str, int], policy: BatchPolicy,
                  on_change: Callable[[list[dict[str, Any]]], None], bar: Any) -> BatchOutcome:
    """Replay ``units`` through the batch APIs: rows appended to ``raw`` as their batches end."""
    return await _BatchRun(units, replayer, raw, run_dir, run_id, positions, policy, on_change, bar).execute()


def progress_bar(units: list[Unit], run_id: str, enabled: bool) -> Any:
    """A tqdm bar on stderr counting requests answered (by the cache or a batch)."""
    from .._progress import bar_class

    return bar_class()(total=sum(len(u.requests) for u in units), desc=f"batch {run_id}", unit="request",
                file=sys.stderr, disable=not enabled, dynamic_ncols=True, leave=True)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- what other parts show --------------------------------------------------------------------


def report_note(manifest: Mapping[str, Any]) -> str | None:
    """The report header's note for a run replayed through the batch APIs."""
    return REPORT_NOTE if manifest.get("replay") == "batch" else None


def status(base: str | Path, run_id: str, providers: Mapping[str, Mapping[str, Any]] | None = None,
           *, refresh: bool = True) -> dict[str, Any]:
    """A run's progress: rows written, and each batch's state (asked of the provider when it has
    not ended and ``refresh``; the stored state when the provider cannot be reached)."""
    run_dir = existing_run_dir(base, run_id)
    manifest = load_manifest(run_dir)
    raw = run_dir / RAW_FILE
    rows = sum(1 for _ in iter_jsonl(raw, what="Call row")) if raw.exists() else 0
    repeats = manifest.source_repeats or 1
    state = BatchState(run_dir)
    batches = []

    async def ask(rec: dict[str, Any]) -> dict[str, Any]:
        out = {k: rec.get(k) for k in ("name", "provider", "model", "id", "status", "requests", "succeeded",
                                        "failed", "submitted", "ended")}
        if not refresh or rec.get("ended") or not rec.get("id"):
            return out
        client = make_client(rec["provider"], settings_for(route(rec["model"]), providers)[1])
        try:
            poll = await _ADAPTERS[rec["provider"]]().poll(client, dict(rec))
        except Exception as exc:  # noqa: BLE001 - status shows what is stored and why it is stale
            out["stale"] = str(classify_error(exc))
        else:
            out.update(status=poll.status, succeeded=poll.completed - poll.failed, failed=poll.failed)
        finally:
            await client.aclose()
        return out

    async def ask_all() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(ask(rec) for rec in state.batches)))

    if state.batches:
        batches = run_sync(ask_all())
    return {"run_id": run_id, "status": manifest.status, "replay": manifest.replay or "online",
            "rows": rows, "planned_rows": manifest.examples * (repeats + 1), "batches": batches}


def status_lines(info: Mapping[str, Any]) -> list[str]:
    lines = [f"run {info['run_id']}: {info.get('status')} ({info.get('replay')} replay), "
             f"{info['rows']} of {info['planned_rows']} rows written"]
    for b in info.get("batches") or []:
        answered = int(b.get("succeeded") or 0) + int(b.get("failed") or 0)
        failed = f", {b['failed']} failed" if b.get("failed") else ""
        lines.append(f"  {b.get('model')}  {b.get('id')}  {b.get('status')}  {answered}/{b.get('requests')} "
                     f"requests{failed}  submitted {b.get('submitted')}")
        if b.get("stale"):
            lines.append(f"    (stored state; the provider could not be asked: {b['stale']})")
    return lines
