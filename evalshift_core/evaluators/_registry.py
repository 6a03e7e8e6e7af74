"""The evaluator registry and the ways to run evaluators: one pair, a run in memory, a run on disk.

A new built-in evaluator is one module and one line in :data:`REGISTRY`. Outside the package, an
evaluator registers with the :func:`evaluator` decorator, or as an entry point in the
``evalshift.evaluators`` group, loaded the first time its name is looked up.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import metadata
from typing import Any, TypeVar, overload

from .._exceptions import ConfigError
from .._models import Call, Example, Tool, ToolTrace
from ..store._rows import pair_rows
from ._base import Evaluator, Pair
from ._calibration import Samples, calibrate
from ._records import ScoreRecord
from ._speed import cyclic_gc_paused
from .agent_trace import AgentTrace
from .llm_judge import LLMJudge
from .semantic import Semantic
from .text_match import TextMatch
from .tool_arguments import ToolArguments
from .tool_selection import ToolSelection
from .tool_trace_structure import ToolTraceStructure

REGISTRY: dict[str, type[Evaluator]] = {
    ToolSelection.type_name: ToolSelection,
    ToolArguments.type_name: ToolArguments,
    ToolTraceStructure.type_name: ToolTraceStructure,
    AgentTrace.type_name: AgentTrace,
    Semantic.type_name: Semantic,
    LLMJudge.type_name: LLMJudge,
    TextMatch.type_name: TextMatch,
}

DEFAULT_EVALUATORS: dict[str, list[dict[str, Any]]] = {"tool_selection": [{"name": "tool_selection"}]}
"""The ``evaluators:`` mapping used when evalshift.yaml has none (treat as read-only; copy to change)."""

ENTRY_POINT_GROUP = "evalshift.evaluators"
"""Entry-point group of evaluators installed by other packages: ``type_name = "module:Class"``."""

E = TypeVar("E", bound=type[Evaluator])


@overload
def evaluator(cls: E, /) -> E: ...
@overload
def evaluator(name: str | None = None, /) -> Callable[[E], E]: ...
def evaluator(name: Any = None, /) -> Any:
    """Class decorator: register an evaluator under its config type name.

    ``@evaluator("my_check")`` registers the class as ``my_check`` (and sets its ``type_name``);
    a bare ``@evaluator`` uses the ``type_name`` the class sets. The class subclasses
    :class:`ToolEvaluator` or :class:`TextEvaluator` and writes ``score_pair(pair)``. A name
    already taken by another class is an error.
    """
    if isinstance(name, type):
        return register(name)

    def decorate(cls: E) -> E:
        return register(cls, name)

    return decorate


def register(cls: E, name: str | None = None) -> E:
    """Add ``cls`` to :data:`REGISTRY` under ``name`` (default: its ``type_name``); returns ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Evaluator)):
        raise TypeError(f"an evaluator must subclass ToolEvaluator or TextEvaluator, not {cls!r}")
    if cls.kind not in ("tool", "text"):
        raise TypeError(f"{cls.__name__} must subclass ToolEvaluator or TextEvaluator (kind 'tool' or 'text')")
    type_name = name if name is not None else cls.type_name
    if not isinstance(type_name, str) or not type_name.isidentifier():
        raise ValueError(f"an evaluator's type name must be an identifier, not {type_name!r}")
    if cls.type_name and cls.type_name != type_name:
        raise ValueError(f"{cls.__name__}'s type_name is {cls.type_name!r}; it cannot register as {type_name!r}")
    taken = REGISTRY.get(type_name)
    if taken is not None and taken is not cls:
        raise ValueError(f"evaluator type {type_name!r} is already registered ({taken.__module__}.{taken.__qualname__})")
    cls.type_name = type_name
    REGISTRY[type_name] = cls
    return cls


def evaluator_kind(type_name: Any) -> str | None:
    """``tool`` or ``text``: the ``kind`` of the evaluator registered as ``type_name``; None when unknown."""
    try:
        return evaluator_class(str(type_name)).kind
    except ValueError:
        return None


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def evaluator_class(type_name: str) -> type[Evaluator]:
    """The evaluator registered as ``type_name``, loading its entry point on first use.

    Raises ValueError naming the nearest known type when there is none, or when an entry point
    cannot be loaded (the callers add the file, line and field).
    """
    cls = REGISTRY.get(type_name)
    if cls is not None:
        return cls
    installed = _entry_points()
    entry_point = installed.get(type_name)
    if entry_point is None:
        known = sorted({*REGISTRY, *installed})
        close = difflib.get_close_matches(str(type_name), known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown evaluator type {type_name!r}{hint} (known: {', '.join(known)})")
    try:
        return register(entry_point.load(), type_name)
    except Exception as exc:  # noqa: BLE001 - any fault of an installed plugin becomes one line
        raise ValueError(f"evaluator type {type_name!r} (entry point {entry_point.value!r} in group "
                         f"{ENTRY_POINT_GROUP}) could not be loaded: {type(exc).__name__}: {exc}") from exc

# Runs at least this big show a progress bar on an interactive terminal.
PROGRESS_MIN_EXAMPLES = 500

Timeline = list[dict[str, Any]]


def build_evaluators(
    config: Mapping[str, Any] | None, *, providers: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Evaluator]:
    """Instantiate the ``evaluators:`` mapping of evalshift.yaml; unknown types are errors.

    ``providers`` is evalshift.yaml's ``providers:`` (client settings the judge model uses).
    """
    config = DEFAULT_EVALUATORS if config is None else config
    built: list[Evaluator] = []
    for type_name, instances in config.items():
        try:
            cls = evaluator_class(type_name)
        except ValueError as exc:
            raise ConfigError(str(exc), field=f"evaluators.{type_name}") from exc
        if isinstance(instances, Mapping):
            instances = [instances]
        if not isinstance(instances, list):
            raise ConfigError("expected a list of evaluator settings", field=f"evaluators.{type_name}")
        for i, inst in enumerate(instances or [{}]):
            if inst is not None and not isinstance(inst, Mapping):
                raise ConfigError("expected a mapping of settings", field=f"evaluators.{type_name}[{i}]")
            try:
                built.append(cls(dict(inst or {})))
            except (ValueError, TypeError) as exc:  # TypeError: a value of the wrong type (dangerous_tools: 1)
                raise ConfigError(str(exc), field=f"evaluators.{type_name}[{i}]") from exc
    seen: set[tuple[str, str]] = set()
    for ev in built:
        key = (ev.type_name, ev.name)
        if key in seen:
            raise ConfigError(f"two {ev.type_name} evaluators are named {ev.name!r}", field=f"evaluators.{ev.type_name}")
        seen.add(key)
        ev.bind(built)
        if providers and isinstance(ev, LLMJudge):
            from ..replay._routing import route, settings_for

            ev.configure_provider(settings_for(route(ev.model), providers)[1])  # model entry over provider
    return built


def _as_example(value: Example | Mapping[str, Any]) -> Example:
    return value if isinstance(value, Example) else Example.model_validate(dict(value))


def _as_trace(value: ToolTrace | Call | Mapping[str, Any] | None) -> tuple[ToolTrace, Timeline | None]:
    """A side as a ToolTrace plus its imported timeline, from any on-disk shape.

    Accepts a ToolTrace, a raw.jsonl Call row, a traces.jsonl line (``{"events": [...]}``) or
    their plain dicts.
    """
    if value is None:
        return ToolTrace(), None
    if isinstance(value, ToolTrace):
        return value, None
    if isinstance(value, Call):
        return value.trace or ToolTrace(final_text=value.text), None
    data = dict(value)
    if "events" in data:
        from ..ingest._traces import trace_from_events

        events = list(data["events"])
        return trace_from_events(events), events
    if "trace" in data or "role" in data:
        call = Call.model_validate(data)
        return call.trace or ToolTrace(final_text=call.text), None
    return ToolTrace.model_validate(data), None


def _resolve(evaluators: Mapping[str, Any] | Iterable[Evaluator] | None) -> list[Evaluator]:
    if evaluators is not None and not isinstance(evaluators, Mapping):
        built = list(evaluators)
        if all(isinstance(e, Evaluator) for e in built):
            return built
        raise ConfigError("evaluators must be the evaluators: mapping of evalshift.yaml or built evaluators")
    return build_evaluators(evaluators)


def evaluate_pair(
    example: Example | Mapping[str, Any],
    source_trace: ToolTrace | Call | Mapping[str, Any] | None,
    target_trace: ToolTrace | Call | Mapping[str, Any] | None,
    evaluators: Mapping[str, Any] | Iterable[Evaluator] | None = None,
    *,
    baseline: ToolTrace | Call | Mapping[str, Any] | None = None,
    source_model: str | None = None,
) -> list[dict[str, Any]]:
    """Score one pair; returns one score record per configured evaluator (side), as in ``scores.jsonl``.

    ``evaluators`` is the ``evaluators:`` mapping of evalshift.yaml (default: ``tool_selection``).
    Example and traces may be models or plain dicts in the on-disk shape.

    Drift comparisons (target relative to source) are calibrated when the pair has an A/A
    baseline: ``baseline``, a second run of the source model on the same example (same shapes
    as the traces; a timeline line for imported timelines), or, with ``source_model`` (the
    configured source, ``provider:name``), the recording of an example promoted from that
    model's captures. Without one their records carry ``metadata.baseline.kind == "none"``.
    """
    built = _resolve(evaluators)
    ex = _as_example(example)
    (src, src_events), (tgt, tgt_events) = _as_trace(source_trace), _as_trace(target_trace)
    timelines = (src_events or [], tgt_events or []) if src_events is not None or tgt_events is not None else None
    repeats = [src]
    baseline_events = None
    if baseline is not None:
        base, baseline_events = _as_trace(baseline)
        repeats.append(base)
    pair = Pair(ex, src, tgt, timelines)
    samples = Samples(source_model=source_model, repeats=repeats, timelines=timelines,
                      baseline_timeline=baseline_events)
    return [r.model_dump(mode="json") for ev in built for r in calibrate(ev, ev.score_pair(pair), pair, samples)]


def scoring_progress(total: int, progress: bool | None = None) -> Any:
    """The scoring's progress bar: on a terminal, from PROGRESS_MIN_EXAMPLES examples up, unless told."""
    from .._progress import bar_class

    if progress is None:
        progress = total >= PROGRESS_MIN_EXAMPLES and sys.stderr.isatty()
    return bar_class()(total=total, desc="evaluate", unit="example", disable=not progress, leave=False)


class _OutOfOrder(Exception):
    """The run's rows are not one source and one target row per example, in example order."""


Rows = Iterator[tuple[Example, Call | None, Call | None, list[Call]]]
"""Each example with its source row, its target row and its extra source repeats (``source_repeats``)."""


def _rows_in_order(examples: list[Example], calls: list[Call]) -> Rows:
    """Each example with its rows, read from ``calls`` as ``run`` returns them without repeats:
    ``[source 1, target 1, source 2, target 2, ...]``.

    Raises :class:`_OutOfOrder` at the first row that breaks that order (the caller starts over
    with :func:`~evalshift_core.store._rows.pair_rows`). Reading each row beside its example keeps it in cache and
    spares two lookups in two run-sized dicts per example.
    """
    if len(calls) != 2 * len(examples):
        raise _OutOfOrder
    rows = iter(calls)
    for example in examples:
        s, t = next(rows), next(rows)
        example_id = example.id
        if (s.role != "source" or t.role != "target" or s.example_id != example_id or t.example_id != example_id
                or s.repeat):
            raise _OutOfOrder
        yield example, s, t, []


def _trace(row: Call | None) -> ToolTrace | None:
    return None if row is None or row.error else row.trace


def evaluate_run(
    examples: list[Example],
    calls: list[Call],
    evaluators: Mapping[str, Any] | Iterable[Evaluator] | None = None,
    *,
    timelines: Mapping[tuple[str, str], Timeline] | None = None,
    providers: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool | None = None,
    base: str | os.PathLike[str] | None = None,
) -> list[ScoreRecord]:
    """Score every example whose source and target calls both succeeded.

    A failed call leaves the example unmeasured (seed 001: "a partially replayed example is
    unmeasured, not half-scored"). ``timelines`` maps ``(example_id, role)`` to imported
    event lists (``evalshift traces import``; role ``baseline`` for a second source timeline),
    which ``agent_trace`` scores. ``calls`` may come in any order; the order ``run`` returns them
    in is read without an index. Drift comparisons are calibrated against the example's A/A
    baseline (:mod:`._calibration`): its recording, the source's repeats, or an imported baseline.
    ``base`` (the folder holding ``toolsets/``) resolves the examples' ``toolset_ref`` sidecars,
    so ``tool_arguments`` can check target calls against the offered schemas; inline ``tools``
    need no base, and an unresolved sidecar only leaves that check out.
    """
    built = resolve_evaluators(evaluators, providers=providers)
    offered = sidecars(base) if base is not None else None
    with scoring_progress(len(examples), progress) as bar, cyclic_gc_paused():
        try:
            return _score_rows(_rows_in_order(examples, calls), built, timelines, bar, offered)
        except _OutOfOrder:
            bar.reset()
            return _score_rows(pair_rows(examples, calls), built, timelines, bar, offered)


def resolve_evaluators(
    evaluators: Mapping[str, Any] | Iterable[Evaluator] | None, *, providers: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Evaluator]:
    """Evaluators as configured (an ``evaluators:`` mapping, or None for the defaults) or as given."""
    if evaluators is None or isinstance(evaluators, Mapping):
        return build_evaluators(evaluators, providers=providers)
    return _resolve(evaluators)


def sidecars(base: str | os.PathLike[str]) -> Callable[[Example], list[Tool] | None]:
    """The toolset an example's ``toolset_ref`` points at under ``base``, read once per ref
    (None when there is no ref or its sidecar is missing or unreadable)."""
    from .._exceptions import EvalShiftError
    from ..store._suites import resolve_tools

    found: dict[str, list[Tool] | None] = {}

    def offered(example: Example) -> list[Tool] | None:
        ref = example.toolset_ref
        if ref is None:
            return None
        if ref not in found:
            try:
                found[ref] = resolve_tools(example, base)
            except (EvalShiftError, OSError):
                found[ref] = None
        return found[ref]

    return offered


def row_scorer(
    evaluators: list[Evaluator],
    timelines: Mapping[tuple[str, str], Timeline] | None = None,
    offered: Callable[[Example], list[Tool] | None] | None = None,
) -> Callable[[Example, Call | None, Call | None, list[Call]], list[ScoreRecord]]:
    """A function scoring one example's rows with ``evaluators``: its records, none when a side
    has no row, a failed call or no trace."""
    scorers = [(ev, ev.score_pair) for ev in evaluators]

    def score(example: Example, source_row: Call | None, target_row: Call | None, extra: list[Call]) -> list[ScoreRecord]:
        src, tgt = _trace(source_row), _trace(target_row)
        if src is None or tgt is None:  # no row, a failed call, or no trace
            return []
        pair_timelines = baseline_timeline = None
        if timelines:
            s_events = timelines.get((example.id, "source"))
            t_events = timelines.get((example.id, "target"))
            if s_events is not None or t_events is not None:
                pair_timelines = (s_events or [], t_events or [])
            baseline_timeline = timelines.get((example.id, "baseline"))
        tools = offered(example) if offered is not None and example.tools is None else None
        pair = Pair(example, src, tgt, pair_timelines, tools)
        repeats = [src]
        for row in extra:
            trace = _trace(row)
            if trace is not None:
                repeats.append(trace)
        samples = Samples(source_model=source_row.model if source_row is not None else None, repeats=repeats,
                          timelines=pair_timelines, baseline_timeline=baseline_timeline)
        records: list[ScoreRecord] = []
        for ev, score_pair in scorers:
            records.extend(calibrate(ev, score_pair(pair), pair, samples))
        return records

    return score


def _score_rows(
    rows: Rows,
    evaluators: list[Evaluator],
    timelines: Mapping[tuple[str, str], Timeline] | None,
    bar: Any,
    offered: Callable[[Example], list[Tool] | None] | None = None,
) -> list[ScoreRecord]:
    records: list[ScoreRecord] = []
    extend = records.extend
    update = None if bar.disable else bar.update
    score = row_scorer(evaluators, timelines, offered)
    for example, source_row, target_row, extra in rows:
        if update is not None:
            update(1)
        extend(score(example, source_row, target_row, extra))
    return records


def evaluate(
    base: str | os.PathLike[str],
    run_id: str,
    config: Any = None,
    *,
    progress: bool | None = None,
) -> list[ScoreRecord]:
    """``evalshift evaluate RUN``: score a finished run and write its ``scores.jsonl``.

    ``config`` is a :class:`~evalshift_core.Config`, an ``evaluators:`` mapping, or None for
    the defaults. Timelines imported with ``evalshift traces import`` feed ``agent_trace``.
    """
    from .._io import atomic_write_jsonl
    from ..ingest._traces import load_traces
    from ..store._runs import load_run, run_dir_for

    evaluators_config = getattr(config, "evaluators", config)
    providers = getattr(config, "providers", None)
    _manifest, examples, calls = load_run(base, run_id)
    run_dir = run_dir_for(base, run_id)
    scores = evaluate_run(examples, calls, evaluators_config, timelines=load_traces(run_dir),
                          providers=providers, progress=progress, base=base)
    atomic_write_jsonl(run_dir / "scores.jsonl", (s.model_dump(mode="json") for s in scores))
    return scores
