"""``evalshift run``: replay every example through the source and the target model.

Single-shot by default; teacher-forced round by round when an example carries tool_result_fixtures.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._exceptions import EvalShiftError, InputError, ReplayError
from .._io import atomic_write_json, atomic_write_jsonl, iter_models, read_json_object
from .._models import (
    SCHEMA_VERSION,
    Call,
    Example,
    ExpectedToolCall,
    FixtureResult,
    ToolCall,
    ToolTrace,
    Usage,
)
from ..store._lock import run_lock
from ..store._runs import new_run_id, run_dir_for
from ..store._suites import DEFAULT_BASE, resolve_tools
from ._cache import ResponseCache
from ._pricing import PriceTable, load_prices
from ._routing import ModelRef, route, settings_for
from .clients import BaseClient, ModelCallError, ModelResponse, PreparedRequest, make_client

DEFAULT_TEMPLATE = "{input}"
DEFAULT_CONCURRENCY = 8
ESTIMATED_OUTPUT_TOKENS = 256
"""Output tokens the pre-flight assumes per call (capped by the example's max tokens)."""
ROLES = ("source", "target")


@dataclass
class RunResult:
    """A finished run: its id, its folder and its Call rows."""

    run_id: str
    run_dir: Path
    calls: list[Call]
    manifest: dict[str, Any]
    estimated_cost_usd: float = 0.0
    """The pre-flight estimate for the calls this invocation had to make."""
    spent_usd: float = 0.0
    """Cost of the responses actually fetched (cache hits are free)."""
    requests: int = 0
    """Model requests sent, retries included."""
    cache_hits: int = 0
    resumed_rows: int = 0
    """Rows found already written when resuming."""


@dataclass
class RetryPolicy:
    """Retries on 429, 5xx, timeouts and connection errors: exponential backoff with jitter,
    honouring ``retry-after`` when the provider sends one."""

    max_retries: int = 6
    base_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # at least what the server asked for, spread a little so the herd does not return at once
            return retry_after + random.uniform(0, min(1.0, 0.1 * retry_after + 0.01))
        cap = min(self.max_s, self.base_s * (2**attempt))
        return cap / 2 + random.uniform(0, cap / 2)


# -- messages ------------------------------------------------------------------------------


def render_prompt(example: Example, template: str = DEFAULT_TEMPLATE) -> str:
    """The user message of round 1: the prompt template filled with the example's inputs."""
    try:
        return template.format_map(example.inputs)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise EvalShiftError(f"example {example.id!r}: prompt template needs {exc}", field="inputs") from exc


def initial_messages(example: Example, template: str = DEFAULT_TEMPLATE) -> list[dict[str, Any]]:
    """History prefix, then the rendered prompt as the user message."""
    return [*example.history, {"role": "user", "parts": [{"type": "text", "content": render_prompt(example, template)}]}]


def _result_value(fixture: FixtureResult) -> Any:
    # seed 001: a recorded tool error is replayed as {"error": "..."}
    return {"error": fixture.error} if fixture.error is not None else fixture.result


def recorded_rounds(example: Example) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The recorded rounds 1..n-1 as (assistant message, tool message) pairs, in semconv shape.

    Calls come from ``expected_tool_rounds[k]`` (``expected_tools`` for round 1), results from
    ``tool_result_fixtures[k]``, paired by ``call_id`` when both carry one, else by position.
    Missing call ids get stable synthetic ones (``call_r{k}_{i}``).
    """
    fixtures = example.tool_result_fixtures or []
    out = []
    for k, results in enumerate(fixtures, start=1):
        calls: list[ExpectedToolCall] = list(example.expected_round(k) or [])
        if len(calls) != len(results):
            if calls:
                raise InputError(
                    f"example {example.id!r}: round {k} records {len(calls)} call(s) but "
                    f"{len(results)} tool result(s)", field=f"tool_result_fixtures[{k - 1}]")
            # no recorded calls for the round: the fixtures name the tools themselves
            calls = [ExpectedToolCall(tool_name=r.tool_name, call_id=r.call_id) for r in results]
        by_id = {r.call_id: r for r in results if r.call_id}
        call_parts, result_parts = [], []
        for i, call in enumerate(calls):
            result = by_id.get(call.call_id) if call.call_id else None
            if result is None:
                result = results[i]
            call_id = call.call_id or result.call_id or f"call_r{k}_{i}"
            call_parts.append({"type": "tool_call", "id": call_id, "name": call.tool_name,
                               "arguments": call.arguments if call.arguments is not None else {}})
            result_parts.append({"type": "tool_call_response", "id": call_id, "name": call.tool_name,
                                 "response": _result_value(result)})
        out.append(({"role": "assistant", "parts": call_parts}, {"role": "tool", "parts": result_parts}))
    return out


def round_messages(example: Example, template: str = DEFAULT_TEMPLATE) -> list[list[dict[str, Any]]]:
    """The messages of every replayed round: round k = prefix + recorded rounds 1..k-1.

    The candidate's own calls are never fed back, so every model sees byte-identical context.
    """
    prefix = initial_messages(example, template)
    rounds = [prefix]
    for assistant, tool in recorded_rounds(example):
        rounds.append([*rounds[-1], assistant, tool])
    return rounds


# -- planning ------------------------------------------------------------------------------


@dataclass
class Unit:
    """One model's replay of one example: a request per round, all known before any call."""

    example: Example
    role: str
    model: ModelRef
    client: BaseClient
    gate_key: str
    requests: list[PreparedRequest]
    multi_round: bool
    repeat: int = 0
    """Which replay of the source this is (``source_repeats``); 0 for the target."""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.example.id, self.role, self.repeat)

    @property
    def sample(self) -> str:
        """The response cache's name for this draw: each repeat and each side is a fresh sample."""
        return "" if (self.role, self.repeat) == ("source", 0) else f"{self.role}:{self.repeat}"


def _max_tokens(config: Mapping[str, Any]) -> int | None:
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens"):
        if isinstance(config.get(key), int):
            return int(config[key])
    return None


def estimate_cost(units: list[Unit], prices: PriceTable, cache: ResponseCache | None, *, batch: bool = False
                  ) -> tuple[float, int, set[str]]:
    """Pre-flight: (USD, calls, models without a price), one call per replayed round; requests
    already in the cache are free. ``batch=True`` prices the calls through the batch APIs."""
    total, calls, unpriced = 0.0, 0, set()
    for unit in units:
        cap = _max_tokens(unit.example.generation_config)
        out_tokens = min(ESTIMATED_OUTPUT_TOKENS, cap) if cap else ESTIMATED_OUTPUT_TOKENS
        for request in unit.requests:
            if cache is not None and cache.has(request, unit.sample):
                continue
            calls += 1
            cost = prices.cost(str(unit.model), request.size_chars() // 4, out_tokens, batch=batch)
            if cost is None:
                unpriced.add(str(unit.model))
            else:
                total += cost
    return total, calls, unpriced


# -- resume --------------------------------------------------------------------------------


def _read_rows(raw: Path) -> list[Call]:
    """Rows of raw.jsonl; a torn last line (a crash mid-write) is cut off, nothing else lost."""
    if not raw.exists():
        return []
    data = raw.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(raw, "r+b") as fh:
            fh.truncate(end)
        data = data[:end]
    return [row for _, row in iter_models(raw, Call, what="Call row")]


# -- execution -----------------------------------------------------------------------------


class ProviderGate:
    """Per-provider admission: optional requests-per-minute spacing (one request every 60/rpm s),
    an optional concurrency cap, and a shared pause after a 429/503/529 so a storm is not hit by
    every worker at once."""

    def __init__(self, rpm: float | None = None, max_concurrency: int | None = None) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self.paused_until = 0.0
        self._lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def acquire(self) -> None:
        if self._slots is not None:
            await self._slots.acquire()
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next, self.paused_until)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def pause(self, seconds: float) -> None:
        self.paused_until = max(self.paused_until, time.monotonic() + seconds)


@dataclass
class _Tally:
    spent: float = 0.0
    requests: int = 0
    cache_hits: int = 0
    responses: int = 0
    """Responses received, from the cache or the provider (one per replayed round)."""
    rows: list[Call] = field(default_factory=list)


class _Replayer:
    def __init__(self, *, prices: PriceTable, cache: ResponseCache | None, use_cache: bool,
                 retry: RetryPolicy, gates: dict[str, ProviderGate]) -> None:
        self.prices = prices
        self.cache = cache
        self.use_cache = use_cache
        self.retry = retry
        self.gates = gates
        self.tally = _Tally()

    async def fetch(self, unit: Unit, request: PreparedRequest) -> tuple[ModelResponse, bool]:
        """One round's response: from the cache, or from the provider with retries."""
        if self.use_cache and self.cache is not None:
            hit = self.cache.get(request, unit.sample)
            if hit is not None:
                self.tally.cache_hits += 1
                self.tally.responses += 1
                return hit, True
        gate = self.gates[unit.gate_key]
        attempt = 0
        while True:
            await gate.acquire()
            try:
                self.tally.requests += 1
                response = await unit.client.send(request)
            except ModelCallError as err:
                if not err.retryable or attempt >= self.retry.max_retries:
                    raise
                delay = self.retry.delay(attempt, err.retry_after)
                if err.status in (429, 503, 529):  # the provider says slow down: everyone waits
                    gate.pause(delay)
            else:
                break
            finally:
                gate.release()
            attempt += 1
            await asyncio.sleep(delay)
        cost = self.prices.cost(str(unit.model), response.input_tokens, response.output_tokens) or 0.0
        self.tally.spent += cost
        self.tally.responses += 1
        return response, False

    async def replay(self, unit: Unit) -> tuple[Call, list[tuple[PreparedRequest, ModelResponse, str]]]:
        """Every round of one unit; a model error in round k fails the example as ``round k/n``.

        Also returns the fresh responses, for the writer to put in the cache.
        """
        n = len(unit.requests)
        responses: list[ModelResponse] = []
        fresh: list[tuple[PreparedRequest, ModelResponse, str]] = []
        all_cached = True
        for k, request in enumerate(unit.requests, start=1):
            try:
                response, cached = await self.fetch(unit, request)
            except ModelCallError as err:
                spent = Usage(input_tokens=sum(r.input_tokens for r in responses),
                              output_tokens=sum(r.output_tokens for r in responses))
                row = Call(example_id=unit.example.id, role=unit.role, model=str(unit.model),  # type: ignore[arg-type]
                           error=f"round {k}/{n}: {err}", usage=spent, rounds=k,
                           cost_usd=self._cost(unit, spent), dropped_params=list(request.dropped_params),
                           repeat=unit.repeat or None)
                return row, fresh
            all_cached = all_cached and cached
            responses.append(response)
            if not cached:
                fresh.append((request, response, unit.sample))
        return self._row(unit, responses, all_cached), fresh

    def _cost(self, unit: Unit, usage: Usage) -> float:
        return self.prices.cost(str(unit.model), usage.input_tokens, usage.output_tokens) or 0.0

    def _row(self, unit: Unit, responses: list[ModelResponse], cached: bool) -> Call:
        calls: list[ToolCall] = []
        for k, response in enumerate(responses, start=1):
            for call in response.tool_calls:
                update: dict[str, Any] = {"sequence_index": len(calls)}
                if unit.multi_round:
                    update["round_index"] = k
                calls.append(call.model_copy(update=update))
        last = responses[-1]
        refusal = last.refusal if last.refusal is not None else next(
            (r.refusal for r in responses if r.refusal is not None), None)
        trace = ToolTrace(calls=calls, final_text=last.text, refusal=refusal,
                          round_count=len(responses) if unit.multi_round else None)
        usage = Usage(input_tokens=sum(r.input_tokens for r in responses),
                      output_tokens=sum(r.output_tokens for r in responses))
        dropped = sorted({p for r in responses for p in r.dropped_params})
        return Call(
            example_id=unit.example.id, role=unit.role, model=str(unit.model),  # type: ignore[arg-type]
            trace=trace, text=last.text, usage=usage, cost_usd=self._cost(unit, usage),
            latency_ms=sum(r.latency_ms for r in responses), rounds=len(responses),
            dropped_params=dropped, cached=cached, repeat=unit.repeat or None,
        )


_Finished = tuple[Call, list[tuple[PreparedRequest, ModelResponse, str]]]


async def _write(raw: Path, cache: ResponseCache | None, finished: list[_Finished]) -> None:
    """Cache the fresh responses, then append the rows to raw.jsonl and fsync: one thread hop
    per batch, so the event loop never waits on the disk."""
    data = b"".join(orjson.dumps(row.model_dump(mode="json", exclude_none=True)) + b"\n" for row, _ in finished)

    def write() -> None:
        if cache is not None:
            for _, fresh in finished:
                for request, response, sample in fresh:
                    cache.put(request, response, sample)
        with open(raw, "ab") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    await asyncio.to_thread(write)


async def _execute(units: list[Unit], replayer: _Replayer, raw: Path, concurrency: int, bar: Any) -> None:
    """Bounded workers replay units; a writer appends finished rows (batched, fsynced)."""
    pending: asyncio.Queue[_Finished | None] = asyncio.Queue()
    todo = iter(units)

    async def worker() -> None:
        for unit in todo:  # a shared iterator: each unit is taken by exactly one worker
            pending.put_nowait(await replayer.replay(unit))

    async def writer() -> None:
        done = False
        while not done:
            batch = [await pending.get()]
            while not pending.empty():
                batch.append(pending.get_nowait())
            finished = [f for f in batch if f is not None]
            done = len(finished) < len(batch)
            if finished:
                await _write(raw, replayer.cache, finished)
                rows = [row for row, _ in finished]
                replayer.tally.rows.extend(rows)
                # postfix first: update() redraws (rate-limited) with it
                bar.set_postfix_str(f"${replayer.tally.spent:.4f} spent", refresh=False)
                bar.update(len(rows))

    writing = asyncio.create_task(writer())
    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(units))))))
    finally:
        pending.put_nowait(None)
        await writing
        await asyncio.gather(*(c.aclose() for c in {id(u.client): u.client for u in units}.values()),
                             return_exceptions=True)


def _usd(value: float) -> str:
    """Dollars to the cent, or to 3 significant figures below a cent (so $0.0001 is not $0.00)."""
    return f"${value:.2f}" if value == 0 or value >= 0.01 else f"${value:.3g}"


def _run_sync(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside a running loop (a notebook): use a private loop on a worker thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _progress(total: int, done: int, run_id: str, enabled: bool) -> Any:
    """A tqdm bar on stderr counting (example, model) rows, with the cost so far."""
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc=f"replay {run_id}", unit="row", file=sys.stderr,
                disable=not enabled, dynamic_ncols=True, leave=True)


def run(
    examples: list[Example],
    *,
    source: str,
    target: str,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    suite_name: str | None = None,
    providers: Mapping[str, Mapping[str, Any]] | None = None,
    template: str = DEFAULT_TEMPLATE,
    run_id: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_cost: float | None = None,
    use_cache: bool = True,
    progress: bool = True,
    rate_limits: Mapping[str, float] | None = None,
    prices: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    retry: RetryPolicy | None = None,
    retry_errors: bool = False,
    source_repeats: int = 1,
    batch: bool | None = None,
    batch_policy: Any = None,
) -> RunResult:
    """Replay ``examples`` through ``source`` and ``target``; write ``raw.jsonl`` and ``run.json``.

    ``source_repeats`` replays the source that many times per example (each a fresh sample, never
    a cached copy of another): two or more give the drift comparisons their A/A baseline, at the
    cost of the extra source calls, which the pre-flight counts.

    ``run_id`` of an existing run resumes it: rows already in its raw.jsonl are kept and only the
    missing (example, role, repeat) rows are replayed. ``max_cost`` (USD) refuses to start when the
    pre-flight estimate is above it. ``use_cache=False`` bypasses the response cache for reads.
    ``rate_limits`` maps a provider (or ``provider:NAME``) to requests per minute; a
    ``providers:`` entry may also carry ``rpm`` and ``max_concurrency``. ``retry_errors=True``
    on a resume replays the rows that failed (``round k/n: ...``) instead of keeping them.

    ``batch=True`` sends the requests through the providers' batch APIs at their batch prices
    (see ``_batch.py``; ``batch_policy``, a ``BatchPolicy``, says how often to poll). A resumed
    run keeps the mode it was started in unless ``batch`` says otherwise, and polls its batches
    instead of submitting them again.
    """
    if concurrency < 1:
        raise ReplayError("concurrency must be at least 1")
    if source_repeats < 1:
        raise ReplayError("source_repeats must be at least 1")
    refs = {"source": route(source), "target": route(target)}
    out = run_dir_for(base, run_id) if run_id else None
    resuming = out is not None and (out / "run.json").exists()
    manifest: dict[str, Any]
    if resuming:
        assert out is not None
        manifest = read_json_object(out / "run.json", what="run manifest")
        if (manifest.get("source_model"), manifest.get("target_model")) != (str(refs["source"]), str(refs["target"])):
            raise ReplayError(f"run {run_id} compared {manifest.get('source_model')} -> "
                              f"{manifest.get('target_model')}; cannot resume it with {refs['source']} -> {refs['target']}")
        stored = [e.id for _, e in iter_models(out / "examples.jsonl", Example, what="example")]
        if stored != [e.id for e in examples]:
            raise ReplayError(f"run {run_id} was started on a different set of examples; start a new run instead")
    if batch is None:
        batch = resuming and manifest.get("replay") == "batch"
    done_rows = _read_rows(out / "raw.jsonl") if resuming and out is not None else []
    if retry_errors and any(c.error for c in done_rows):
        assert out is not None
        done_rows = [c for c in done_rows if not c.error]
        # rewritten whole and atomically: a crash here leaves the old file, never half of one
        atomic_write_jsonl(out / "raw.jsonl", (c.model_dump(mode="json", exclude_none=True) for c in done_rows))
    done = {(c.example_id, c.role, c.repeat or 0) for c in done_rows}
    samples = [("source", r) for r in range(source_repeats)] + [("target", 0)]

    # Plan every request before any call: bad input fails here, and the pre-flight can price it.
    clients: dict[str, BaseClient] = {}
    gates: dict[str, ProviderGate] = {}
    units: list[Unit] = []
    tool_cache: dict[str, Any] = {}
    for example in examples:
        rounds = round_messages(example, template)
        ref_key = example.toolset_ref or ""
        if example.tools is None and ref_key in tool_cache:
            tools = tool_cache[ref_key]
        else:
            tools = resolve_tools(example, base)
            if example.tools is None:
                tool_cache[ref_key] = tools
        for role, repeat in samples:
            if (example.id, role, repeat) in done:
                continue
            ref = refs[role]
            key, settings = settings_for(ref, providers)
            if key not in clients:
                clients[key] = make_client(ref.provider, settings)
                rpm = (rate_limits or {}).get(key, (rate_limits or {}).get(ref.provider, settings.get("rpm")))
                gates[key] = ProviderGate(rpm=rpm, max_concurrency=settings.get("max_concurrency"))
            client = clients[key]
            requests = [client.prepare(ref, msgs, tools, example.generation_config) for msgs in rounds]
            units.append(Unit(example, role, ref, client, key, requests, multi_round=len(rounds) > 1, repeat=repeat))

    price_table = load_prices(base, prices)
    cache = ResponseCache(base)
    online_estimate, n_calls, unpriced = estimate_cost(units, price_table, cache if use_cache else None)
    batch_estimate = estimate_cost(units, price_table, cache if use_cache else None, batch=True)[0]
    estimate = batch_estimate if batch else online_estimate
    if progress and units:
        from ._batch import preflight_line

        print(preflight_line(n_calls, online_estimate, batch_estimate, unpriced, batch_mode=bool(batch)),
              file=sys.stderr)
    if max_cost is not None:
        if unpriced:
            raise ReplayError(f"cannot check --max-cost: no price for {', '.join(sorted(unpriced))}; add it to "
                              f"{Path(base) / 'prices.json'} as {{\"provider:model\": {{\"input\": USD/1M, \"output\": USD/1M}}}}")
        if estimate > max_cost:
            how = " through batch APIs" if batch else ""
            raise ReplayError(f"estimated cost {_usd(estimate)}{how} for {n_calls} model calls is above --max-cost "
                              f"{_usd(max_cost)}; nothing was sent")

    run_id = run_id or new_run_id()
    out = run_dir_for(base, run_id)
    raw = out / "raw.jsonl"
    if not resuming:
        out.mkdir(parents=True, exist_ok=True)
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "suite": suite_name,
            "source_model": str(refs["source"]),
            "target_model": str(refs["target"]),
            "examples": len(examples),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        atomic_write_jsonl(out / "examples.jsonl", (e.model_dump(mode="json", exclude_none=True) for e in examples))
        raw.write_bytes(b"")
    manifest.update({"status": "running", "concurrency": concurrency, "estimated_cost_usd": round(estimate, 6),
                     "estimated_online_cost_usd": round(online_estimate, 6),
                     "estimated_batch_cost_usd": round(batch_estimate, 6),
                     "planned_model_calls": n_calls, "unpriced_models": sorted(unpriced)})
    if batch:
        manifest["replay"] = "batch"
    if source_repeats > 1 or "source_repeats" in manifest:
        manifest["source_repeats"] = max(source_repeats, int(manifest.get("source_repeats") or 1))
    if resuming:
        with run_lock(out, run_id):  # refused before touching run.json when another process holds it
            pass
        manifest.setdefault("resumed", []).append(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    atomic_write_json(out / "run.json", manifest)

    replayer = _Replayer(prices=price_table, cache=cache, use_cache=use_cache, retry=retry or RetryPolicy(),
                         gates=gates)
    if batch:
        _replay_in_batches(units, replayer, raw, out, manifest, examples, batch_policy, progress)
    else:
        bar = _progress(len(units) + len(done_rows), len(done_rows), run_id, progress and bool(units))
        try:
            with run_lock(out, run_id):
                _run_sync(_execute(units, replayer, raw, concurrency, bar))
        finally:
            bar.close()

    # Per example: the source's replays in order, then the target (what evaluate_run reads in place).
    position = {e.id: i for i, e in enumerate(examples)}
    calls = sorted([*done_rows, *replayer.tally.rows],
                   key=lambda c: (position.get(c.example_id, 0), c.role == "target", c.repeat or 0))
    manifest.update({
        "status": "complete",
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cost_usd": round(sum(c.cost_usd for c in calls), 6),
        "errors": sum(1 for c in calls if c.error),
        # A stochastic model measured from the cache is one sample replayed: say how many were.
        "cached_calls": int(manifest.get("cached_calls") or 0) + replayer.tally.cache_hits,
        "model_calls": int(manifest.get("model_calls") or 0) + replayer.tally.responses,
    })
    atomic_write_json(out / "run.json", manifest)
    return RunResult(run_id=run_id, run_dir=out, calls=calls, manifest=manifest, estimated_cost_usd=estimate,
                     spent_usd=replayer.tally.spent, requests=replayer.tally.requests,
                     cache_hits=replayer.tally.cache_hits, resumed_rows=len(done_rows))


def _replay_in_batches(units: list[Unit], replayer: _Replayer, raw: Path, out: Path, manifest: dict[str, Any],
                       examples: list[Example], policy: Any, progress: bool) -> None:
    """Replay through the providers' batch APIs; run.json records each batch as it changes."""
    from ._batch import BatchPolicy, execute, progress_bar

    def record(batches: list[dict[str, Any]]) -> None:
        manifest["batches"] = batches
        atomic_write_json(out / "run.json", manifest)

    run_id = str(manifest["run_id"])
    bar = progress_bar(units, run_id, progress and bool(units))
    try:
        with run_lock(out, run_id):
            _run_sync(execute(units, replayer, raw, run_dir=out, run_id=run_id,
                              positions={e.id: i for i, e in enumerate(examples)},
                              policy=policy or BatchPolicy(), on_change=record, bar=bar))
    except KeyboardInterrupt:
        print(f"\nthe batches submitted keep running at the providers; `evalshift run --resume {run_id}` "
              "collects them without submitting again", file=sys.stderr)
        raise
    finally:
        bar.close()


def failed_side(calls: list[Call]) -> tuple[str, list[Call]] | None:
    """The side (source first) on which every call failed, with its rows; None when both measured."""
    for role in ROLES:
        rows = [c for c in calls if c.role == role]
        if rows and all(c.error for c in rows):
            return role, rows
    return None


def check_sides(run_id: str, calls: list[Call]) -> None:
    """A run in which every call of a side failed measured nothing: an error, not a verdict.

    The message carries the provider's own words (model not found, authentication), so a CI gate
    fails on a wrong model name instead of passing on "Nothing measured".
    """
    found = failed_side(calls)
    if found is None:
        return
    role, rows = found
    first = " ".join(str(rows[0].error).split())
    raise ReplayError(f"every {role} call failed ({len(rows)} of {len(rows)} on {rows[0].model}), so nothing was "
                      f"measured: {first[:400]} (run {run_id}; raw.jsonl kept)")


def cache_line(manifest: Mapping[str, Any]) -> str | None:
    """``64 of 64 responses from the cache``: how many responses of a run were replayed samples."""
    total = manifest.get("model_calls")
    if not isinstance(total, int) or total <= 0:
        return None
    return f"{int(manifest.get('cached_calls') or 0)} of {total} responses from the cache"
