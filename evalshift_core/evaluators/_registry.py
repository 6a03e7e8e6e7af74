"""The evaluator registry and the two ways to run evaluators: one pair, or a whole run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._exceptions import ConfigError
from .._models import Call, Example, ToolTrace
from ._base import Evaluator, ScoreRecord
from .tool_selection import ToolSelection

REGISTRY: dict[str, type[Evaluator]] = {
    ToolSelection.type_name: ToolSelection,
}

DEFAULT_EVALUATORS: dict[str, list[dict[str, Any]]] = {"tool_selection": [{"name": "tool_selection"}]}


def build_evaluators(config: Mapping[str, Any] | None) -> list[Evaluator]:
    """Instantiate the ``evaluators:`` mapping of evalshift.yaml; unknown types are errors."""
    config = DEFAULT_EVALUATORS if config is None else config
    built: list[Evaluator] = []
    for type_name, instances in config.items():
        cls = REGISTRY.get(type_name)
        if cls is None:
            known = ", ".join(sorted(REGISTRY))
            raise ConfigError(f"unknown evaluator type {type_name!r} (known: {known})", field=f"evaluators.{type_name}")
        if isinstance(instances, Mapping):
            instances = [instances]
        for i, inst in enumerate(instances or [{}]):
            try:
                built.append(cls(dict(inst or {})))
            except ValueError as exc:
                raise ConfigError(str(exc), field=f"evaluators.{type_name}[{i}]") from exc
    return built


def _as_example(value: Example | Mapping[str, Any]) -> Example:
    return value if isinstance(value, Example) else Example.model_validate(dict(value))


def _as_trace(value: ToolTrace | Mapping[str, Any] | None) -> ToolTrace:
    if value is None:
        return ToolTrace()
    return value if isinstance(value, ToolTrace) else ToolTrace.model_validate(dict(value))


def evaluate_pair(
    example: Example | Mapping[str, Any],
    source_trace: ToolTrace | Mapping[str, Any] | None,
    target_trace: ToolTrace | Mapping[str, Any] | None,
    evaluators: Mapping[str, Any] | Iterable[Evaluator] | None = None,
) -> list[dict[str, Any]]:
    """Score one pair; returns score records as in ``scores.jsonl``."""
    built = evaluators if isinstance(evaluators, list) and all(isinstance(e, Evaluator) for e in evaluators) else build_evaluators(evaluators)  # type: ignore[arg-type]
    ex, src, tgt = _as_example(example), _as_trace(source_trace), _as_trace(target_trace)
    return [r.model_dump(mode="json") for ev in built for r in ev.score(ex, src, tgt)]


def evaluate_run(
    examples: list[Example], calls: list[Call], evaluators: Mapping[str, Any] | None = None
) -> list[ScoreRecord]:
    """Score every example whose source and target calls both succeeded."""
    built = build_evaluators(evaluators)
    by_key = {(c.example_id, c.role): c for c in calls}
    records: list[ScoreRecord] = []
    for example in examples:
        src, tgt = by_key.get((example.id, "source")), by_key.get((example.id, "target"))
        if src is None or tgt is None or src.error or tgt.error or src.trace is None or tgt.trace is None:
            continue
        for ev in built:
            records.extend(ev.score(example, src.trace, tgt.trace))
    return records
