"""Execution and retries: bounded workers send each unit's rounds, a writer appends the rows.

Shared by the online replay and the batch replay (which retries online what a batch failed):
the retry policy, the per-provider gate, the replayer that turns responses into Call rows, and
the one writer of raw.jsonl and the response cache.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._models import Call, ToolCall, ToolTrace, Usage
from ._cache import ResponseCache
from ._plan import Unit
from ._pricing import PriceTable
from .clients import ModelCallError, ModelResponse, PreparedRequest


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
class Tally:
    """What a replay spent and received, and the rows it wrote."""

    spent: float = 0.0
    requests: int = 0
    cache_hits: int = 0
    responses: int = 0
    """Responses received, from the cache or the provider (one per replayed round)."""
    rows: list[Call] = field(default_factory=list)


Fresh = list[tuple[PreparedRequest, ModelResponse, str]]
"""Responses fetched from a provider, with their request and sample: what goes in the cache."""
Finished = tuple[Call, Fresh]
"""A unit's row and its fresh responses."""


class Replayer:
    """Fetches a unit's rounds (cache first, then the provider with retries) and builds its row."""

    def __init__(self, *, prices: PriceTable, cache: ResponseCache | None, use_cache: bool,
                 retry: RetryPolicy, gates: dict[str, ProviderGate]) -> None:
        self.prices = prices
        self.cache = cache
        self.use_cache = use_cache
        self.retry = retry
        self.gates = gates
        self.tally = Tally()

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

    async def replay(self, unit: Unit) -> Finished:
        """Every round of one unit; a model error in round k fails the example as ``round k/n``.

        Also returns the fresh responses, for the writer to put in the cache.
        """
        responses: list[ModelResponse] = []
        fresh: Fresh = []
        all_cached = True
        for k, request in enumerate(unit.requests, start=1):
            try:
                response, cached = await self.fetch(unit, request)
            except ModelCallError as err:
                spent = Usage(input_tokens=sum(r.input_tokens for r in responses),
                              output_tokens=sum(r.output_tokens for r in responses))
                return failed_row(unit, k, err, spent, self.cost(unit, spent)), fresh
            all_cached = all_cached and cached
            responses.append(response)
            if not cached:
                fresh.append((request, response, unit.sample))
        return self.row(unit, responses, all_cached), fresh

    def cost(self, unit: Unit, usage: Usage) -> float:
        return self.prices.cost(str(unit.model), usage.input_tokens, usage.output_tokens) or 0.0

    def row(self, unit: Unit, responses: list[ModelResponse], cached: bool) -> Call:
        """The Call row of a unit every round of which was answered."""
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
            trace=trace, text=last.text, usage=usage, cost_usd=self.cost(unit, usage),
            latency_ms=sum(r.latency_ms for r in responses), rounds=len(responses),
            dropped_params=dropped, cached=cached, repeat=unit.repeat or None,
        )


def failed_row(unit: Unit, k: int, err: ModelCallError, usage: Usage, cost: float) -> Call:
    """The row of a unit whose round ``k`` failed: ``round k/n: ...``, with what it spent."""
    return Call(example_id=unit.example.id, role=unit.role, model=str(unit.model),  # type: ignore[arg-type]
                error=f"round {k}/{len(unit.requests)}: {err}", usage=usage, rounds=k, cost_usd=cost,
                dropped_params=list(unit.requests[k - 1].dropped_params), repeat=unit.repeat or None)


async def write_rows(raw: Path, cache: ResponseCache | None, finished: list[Finished]) -> None:
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


async def execute(units: list[Unit], replayer: Replayer, raw: Path, concurrency: int, bar: Any) -> None:
    """Bounded workers replay units; a writer appends finished rows (batched, fsynced)."""
    pending: asyncio.Queue[Finished | None] = asyncio.Queue()
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
                await write_rows(raw, replayer.cache, finished)
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
        await close_clients(units)


async def close_clients(units: list[Unit]) -> None:
    """Close each client the units share, once."""
    await asyncio.gather(*(c.aclose() for c in {id(u.client): u.client for u in units}.values()),
                         return_exceptions=True)


def run_sync(coro: Any) -> Any:
    """Run a coroutine to its end, also from inside a running loop (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside a running loop (a notebook): use a private loop on a worker thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def progress_bar(total: int, done: int, run_id: str, enabled: bool) -> Any:
    """A tqdm bar on stderr counting (example, model) rows, with the cost so far."""
    from .._progress import bar_class

    return bar_class()(total=total, initial=done, desc=f"replay {run_id}", unit="row", file=sys.stderr,
                disable=not enabled, dynamic_ncols=True, leave=True)
