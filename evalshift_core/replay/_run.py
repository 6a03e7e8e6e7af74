"""``evalshift run``: replay every example through the source and the target model.

Single-shot by default; teacher-forced round by round when an example carries tool_result_fixtures.
:func:`run` is the orchestration, one named step each: open (or resume) the run, plan every
request, check the pre-flight, start the manifest, replay (online or through the batch APIs),
finish the manifest. The steps live beside it: ``_messages``, ``_plan``, ``_resume``,
``_execute`` and ``_batch``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._exceptions import ReplayError
from .._io import atomic_write_jsonl
from .._models import SCHEMA_VERSION, Call, Example
from ..store._lock import run_lock
from ..store._rows import record_written
from ..store._runs import (
    EXAMPLES_FILE,
    RAW_FILE,
    RUN_FILE,
    Manifest,
    new_run_id,
    run_dir_for,
    write_manifest,
)
from ..store._suites import DEFAULT_BASE
from . import _batch
from ._cache import ResponseCache
from ._execute import ProviderGate, Replayer, RetryPolicy, execute, progress_bar, run_sync
from ._messages import DEFAULT_TEMPLATE
from ._plan import Estimate, Sample, Unit, plan, side_line
from ._pricing import load_prices, unpriced_warning
from ._resume import Resumed, resume
from ._routing import ModelRef, route

DEFAULT_CONCURRENCY = 8
ROLES = ("source", "target")


@dataclass(frozen=True)
class RunOptions:
    """How :func:`run` replays: everything but the examples, the two models and the base folder."""

    concurrency: int = DEFAULT_CONCURRENCY
    """Model calls in flight at once (at least 1)."""
    max_cost: float | None = None
    """Refuse to start when the pre-flight estimate (USD) is above it."""
    allow_unpriced: bool = False
    """With ``max_cost``: start although a model has no price (its cost unknown), holding only the
    priced calls to the cap; without it such a run is refused."""
    use_cache: bool = True
    """False sends every request for a fresh sample (the cache is still written)."""
    progress: bool = True
    """The pre-flight line and a progress bar on stderr."""
    rate_limits: Mapping[str, float] | None = None
    """Requests per minute by provider (or ``provider:NAME``)."""
    prices: Mapping[str, Any] | str | os.PathLike[str] | None = None
    """Prices over the table's (a mapping, or a prices.json/yaml file)."""
    retry: RetryPolicy | None = None
    """How transient errors are retried (default :class:`RetryPolicy`)."""
    retry_errors: bool = False
    """On a resume, replay the rows that failed instead of keeping them."""
    source_repeats: int = 1
    """Replays of the source per example (at least 1), each a fresh sample."""
    batch: bool | None = None
    """Replay through the providers' batch APIs; None keeps a resumed run's mode (else online)."""
    batch_policy: _batch.BatchPolicy | None = None
    """How batches are polled (default :class:`BatchPolicy`)."""
    providers: Mapping[str, Mapping[str, Any]] | None = None
    """``providers:`` settings (base_url, api_key_env, headers, rpm, concurrency, ...) by provider or model."""
    template: str = DEFAULT_TEMPLATE
    """The user-message template, filled with each example's inputs."""
    run_id: str | None = None
    """Use this run id; the id of an existing run resumes it."""
    suite_name: str | None = None
    """The suite's name, recorded in run.json."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ReplayError("concurrency must be at least 1")
        if self.source_repeats < 1:
            raise ReplayError("source_repeats must be at least 1")

    def replace(self, **changes: Any) -> RunOptions:
        """These options with ``changes`` (field names of :class:`RunOptions`)."""
        return dataclasses.replace(self, **changes)

    @property
    def samples(self) -> list[Sample]:
        """Per example: the source's replays in order, then the target."""
        return [("source", r) for r in range(self.source_repeats)] + [("target", 0)]


@dataclass
class RunResult:
    """A finished run: its id, its folder and its Call rows."""

    run_id: str
    run_dir: Path
    calls: list[Call]
    manifest: Manifest
    """The run's ``run.json``."""
    estimated_cost_usd: float = 0.0
    """The pre-flight estimate for the calls this invocation had to make."""
    spent_usd: float = 0.0
    """Cost of the responses actually fetched (cache hits are free)."""
    requests: int = 0
    """Model requests sent, retries included."""
    cache_hits: int = 0
    resumed_rows: int = 0
    """Rows found already written when resuming."""


def run(
    examples: list[Example],
    *,
    source: str,
    target: str,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    options: RunOptions | None = None,
    **option_values: Any,
) -> RunResult:
    """Replay ``examples`` through ``source`` and ``target``; write ``raw.jsonl`` and ``run.json``.

    ``options`` (a :class:`RunOptions`) says how; keyword arguments named like its fields build
    one, or change the given one (``run(examples, source=..., target=..., concurrency=4)``).

    ``source_repeats`` replays the source that many times per example (each a fresh sample, never
    a cached copy of another): two or more give the drift comparisons their A/A baseline, at the
    cost of the extra source calls, which the pre-flight counts.

    ``run_id`` of an existing run resumes it: rows already in its raw.jsonl are kept and only the
    missing (example, role, repeat) rows are replayed. ``max_cost`` (USD) refuses to start when the
    pre-flight estimate is above it. ``use_cache=False`` bypasses the response cache for reads.
    ``rate_limits`` maps a provider (or ``provider:NAME``) to requests per minute; a
    ``providers:`` entry may also carry ``rpm`` and ``concurrency``. ``retry_errors=True``
    on a resume replays the rows that failed (``round k/n: ...``) instead of keeping them.

    ``batch=True`` sends the requests through the providers' batch APIs at their batch prices
    (see ``_batch.py``; ``batch_policy``, a ``BatchPolicy``, says how often to poll). A resumed
    run keeps the mode it was started in unless ``batch`` says otherwise, and polls its batches
    instead of submitting them again.
    """
    opts = (options or RunOptions()).replace(**option_values)
    refs = {"source": route(source), "target": route(target)}
    resumed = _resume_if_started(base, opts, refs, examples)
    batch = opts.batch if opts.batch is not None else (resumed is not None and resumed.manifest.replay == "batch")
    done_rows = resumed.rows if resumed is not None else []

    # Plan every request before any call: bad input fails here, and the pre-flight can price it.
    planned = plan(examples, refs, opts.samples, base=base, template=opts.template, providers=opts.providers,
                   rate_limits=opts.rate_limits, done=resumed.done if resumed is not None else set())
    cache = ResponseCache(base)
    prices = load_prices(base, opts.prices)
    estimate = _preflight(planned.units, prices, cache, opts, batch=batch, base=base)

    run_id = opts.run_id or new_run_id()
    out = run_dir_for(base, run_id)
    manifest = _start(out, run_id, examples, refs, opts, estimate, batch=batch, resumed=resumed)
    replayer = Replayer(prices=prices, cache=cache, use_cache=opts.use_cache, retry=opts.retry or RetryPolicy(),
                        gates={key: ProviderGate(rpm=rpm, max_concurrency=cap)
                               for key, (rpm, cap) in planned.limits.items()})
    if batch:
        _replay_in_batches(planned.units, replayer, out, manifest, examples, opts)
    else:
        _replay_online(planned.units, replayer, out, run_id, opts, resumed_rows=len(done_rows))

    calls = _in_suite_order(examples, [*done_rows, *replayer.tally.rows])
    _finish(out, manifest, calls, replayer)
    return RunResult(run_id=run_id, run_dir=out, calls=calls, manifest=manifest,
                     estimated_cost_usd=estimate.usd(batch=batch), spent_usd=replayer.tally.spent,
                     requests=replayer.tally.requests, cache_hits=replayer.tally.cache_hits,
                     resumed_rows=len(done_rows))


# -- the steps of run() --------------------------------------------------------------------------


@dataclass(frozen=True)
class DryRun:
    """What :func:`run` would do, planned and priced with nothing sent and nothing written."""

    estimate: Estimate
    """The pre-flight: calls, tokens and cost per side, and the cache hits."""
    batch: bool
    """Whether the replay would go through the providers' batch APIs."""
    refused: str | None
    """Why ``max_cost`` would refuse to start, or None."""
    resumed_rows: int = 0
    """Rows a resumed run already holds (not planned again)."""
    base: str = DEFAULT_BASE
    """The base folder (where a prices.json override goes)."""

    def lines(self) -> list[str]:
        """The dry run in words: one line per side, the pre-flight line, and ``max_cost``'s answer."""
        out = ["dry run: nothing was sent and nothing written"]
        if self.resumed_rows:
            out.append(f"  {self.resumed_rows} rows already in the run are kept")
        out += [f"  {side_line(side)}" for side in self.estimate.sides]
        out.append(self.estimate.line(batch=self.batch))
        if self.estimate.unpriced:
            out.append(unpriced_warning(self.estimate.unpriced, self.base))
        if self.refused:
            out.append(f"--max-cost would refuse to start: {self.refused}")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The dry run as ``--json`` prints it."""
        est = self.estimate
        return {"dry_run": True, "replay": "batch" if self.batch else "online", "calls": est.calls,
                "cached_calls": est.cached_calls, "resumed_rows": self.resumed_rows,
                "online_usd": round(est.online_usd, 6), "batch_usd": round(est.batch_usd, 6),
                "unpriced_models": sorted(est.unpriced), "models": [side.as_dict() for side in est.sides],
                "max_cost_refused": self.refused}


def dry_run(
    examples: list[Example],
    *,
    source: str,
    target: str,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    options: RunOptions | None = None,
    **option_values: Any,
) -> DryRun:
    """Plan and price what :func:`run` would send with the same arguments, sending nothing and
    writing nothing: the calls, the estimated tokens and cost per side (online and through the
    batch APIs), the requests the response cache would serve, and whether ``max_cost`` would
    refuse to start. Bad input fails here as it would in :func:`run`."""
    opts = (options or RunOptions()).replace(**option_values)
    refs = {"source": route(source), "target": route(target)}
    resumed = _resume_if_started(base, opts, refs, examples, read_only=True)
    batch = opts.batch if opts.batch is not None else (resumed is not None and resumed.manifest.replay == "batch")
    planned = plan(examples, refs, opts.samples, base=base, template=opts.template, providers=opts.providers,
                   rate_limits=opts.rate_limits, done=resumed.done if resumed is not None else set())
    estimate = Estimate.of(planned.units, load_prices(base, opts.prices),
                           ResponseCache(base) if opts.use_cache else None)
    try:
        estimate.check(opts.max_cost, batch=batch, base=base, allow_unpriced=opts.allow_unpriced)
        refused = None
    except ReplayError as exc:
        refused = exc.message
    return DryRun(estimate, batch, refused, resumed_rows=len(resumed.rows) if resumed is not None else 0,
                  base=str(base))


def _resume_if_started(base: str | os.PathLike[str], opts: RunOptions, refs: dict[str, ModelRef],
          examples: list[Example], *, read_only: bool = False) -> Resumed | None:
    """The run ``opts.run_id`` names, when it was started already (to resume); else None."""
    if not opts.run_id:
        return None
    out = run_dir_for(base, opts.run_id)
    if not (out / RUN_FILE).exists():
        return None
    return resume(out, opts.run_id, refs, examples, retry_errors=opts.retry_errors, read_only=read_only)


def _preflight(units: list[Unit], prices: Any, cache: ResponseCache, opts: RunOptions, *, batch: bool,
               base: str | os.PathLike[str]) -> Estimate:
    """Price the plan (cache hits are free), say so, and refuse above ``max_cost``."""
    estimate = Estimate.of(units, prices, cache if opts.use_cache else None)
    if opts.progress and units:
        print(estimate.line(batch=batch), file=sys.stderr)
        if estimate.unpriced:
            print(unpriced_warning(estimate.unpriced, base), file=sys.stderr)
    estimate.check(opts.max_cost, batch=batch, base=base, allow_unpriced=opts.allow_unpriced)
    return estimate


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _start(out: Path, run_id: str, examples: list[Example], refs: dict[str, ModelRef], opts: RunOptions,
           estimate: Estimate, *, batch: bool, resumed: Resumed | None) -> Manifest:
    """A new run's folder (examples.jsonl, an empty raw.jsonl), or the resumed one's manifest;
    then run.json says ``running`` with the pre-flight."""
    if resumed is None:
        out.mkdir(parents=True, exist_ok=True)
        manifest = Manifest(schema_version=SCHEMA_VERSION, run_id=run_id, suite=opts.suite_name,
                            source_model=str(refs["source"]), target_model=str(refs["target"]),
                            examples=len(examples), created=_now())
        atomic_write_jsonl(out / EXAMPLES_FILE, (e.model_dump(mode="json", exclude_none=True) for e in examples))
        (out / RAW_FILE).write_bytes(b"")
    else:
        manifest = resumed.manifest
    manifest.status = "running"
    manifest.concurrency = opts.concurrency
    manifest.estimated_cost_usd = round(estimate.usd(batch=batch), 6)
    manifest.estimated_online_cost_usd = round(estimate.online_usd, 6)
    manifest.estimated_batch_cost_usd = round(estimate.batch_usd, 6)
    manifest.planned_model_calls = estimate.calls
    manifest.unpriced_models = sorted(estimate.unpriced)
    if batch:
        manifest.replay = "batch"
    if opts.source_repeats > 1 or "source_repeats" in manifest.model_fields_set:
        manifest.source_repeats = max(opts.source_repeats, manifest.source_repeats or 1)
    if resumed is not None:
        with run_lock(out, run_id):  # refused before touching run.json when another process holds it
            pass
        manifest.resumed = [*manifest.resumed, _now()]
    write_manifest(out, manifest)
    return manifest


def _replay_online(units: list[Unit], replayer: Replayer, out: Path, run_id: str, opts: RunOptions, *,
                   resumed_rows: int) -> None:
    """Bounded workers send the requests; the rows are appended to raw.jsonl as they finish."""
    bar = progress_bar(len(units) + resumed_rows, resumed_rows, run_id, opts.progress and bool(units))
    try:
        with run_lock(out, run_id):
            run_sync(execute(units, replayer, out / RAW_FILE, opts.concurrency, bar))
    finally:
        bar.close()


def _replay_in_batches(units: list[Unit], replayer: Replayer, out: Path, manifest: Manifest,
                       examples: list[Example], opts: RunOptions) -> None:
    """Replay through the providers' batch APIs; run.json records each batch as it changes."""

    def record(batches: list[dict[str, Any]]) -> None:
        manifest.batches = batches
        write_manifest(out, manifest)

    run_id = manifest.run_id
    bar = _batch.progress_bar(units, run_id, opts.progress and bool(units))
    try:
        with run_lock(out, run_id):
            run_sync(_batch.execute(units, replayer, out / RAW_FILE, run_dir=out, run_id=run_id,
                                    positions={e.id: i for i, e in enumerate(examples)},
                                    policy=opts.batch_policy or _batch.BatchPolicy(), on_change=record, bar=bar))
    except KeyboardInterrupt:
        print(f"\nthe batches submitted keep running at the providers; `evalshift run --resume {run_id}` "
              "collects them without submitting again", file=sys.stderr)
        raise
    finally:
        bar.close()


def _in_suite_order(examples: list[Example], calls: list[Call]) -> list[Call]:
    """Per example: the source's replays in order, then the target (what evaluate_run reads in place)."""
    position = {e.id: i for i, e in enumerate(examples)}
    return sorted(calls, key=lambda c: (position.get(c.example_id, 0), c.role == "target", c.repeat or 0))


def _finish(out: Path, manifest: Manifest, calls: list[Call], replayer: Replayer) -> None:
    """run.json says ``complete``, with what the rows cost and how many responses were cached."""
    manifest.status = "complete"
    manifest.finished = _now()
    manifest.cost_usd = round(sum(c.cost_usd for c in calls), 6)
    manifest.errors = sum(1 for c in calls if c.error)
    # A stochastic model measured from the cache is one sample replayed: say how many were.
    manifest.cached_calls = (manifest.cached_calls or 0) + replayer.tally.cache_hits
    manifest.model_calls = (manifest.model_calls or 0) + replayer.tally.responses
    record_written(out)  # evaluate reads rows it can vouch for straight from their JSON bytes
    write_manifest(out, manifest)


# -- what other parts show -----------------------------------------------------------------------


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


def cache_line(manifest: Manifest | Mapping[str, Any]) -> str | None:
    """``64 of 64 responses from the cache``: how many responses of a run were replayed samples.

    ``manifest`` is a run's :class:`Manifest`, or what report.json and ``--json`` carry of it.
    """
    if isinstance(manifest, Manifest):
        total, cached = manifest.model_calls, manifest.cached_calls
    else:
        total, cached = manifest.get("model_calls"), manifest.get("cached_calls")
    if not isinstance(total, int) or total <= 0:
        return None
    return f"{int(cached or 0)} of {total} responses from the cache"
