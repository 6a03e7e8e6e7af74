"""Evaluators, registered by their config type name (the key under ``evaluators:``).

An evaluator subclasses :class:`ToolEvaluator` or :class:`TextEvaluator` and writes one method,
``score_pair(pair)``. A built-in one is one module and one line in :data:`REGISTRY`; any other
registers with :func:`evaluator` or an ``evalshift.evaluators`` entry point.
"""

from __future__ import annotations

from ._base import Evaluator, Pair, TextEvaluator, ToolEvaluator
from ._records import SEVERITIES, ScoreRecord, Severity
from ._registry import (
    DEFAULT_EVALUATORS,
    ENTRY_POINT_GROUP,
    REGISTRY,
    build_evaluators,
    evaluate,
    evaluate_pair,
    evaluate_run,
    evaluator,
    evaluator_class,
    evaluator_kind,
)

LABELS = (
    "TOOL_SELECTION_DRIFT",
    "ARGUMENT_VALUE_DRIFT",
    "ARGUMENT_SCHEMA_VIOLATION",
    "TOOL_TRACE_STRUCTURE_DRIFT",
    "TOOL_ORDER_DRIFT",
    "DANGEROUS_ACTION_DRIFT",
    "MISSING_VERIFICATION_STEP",
    "UNNECESSARY_TOOL_CALL",
    "REFUSAL_REGRESSION",
    "TOOL_GROUND_TRUTH_MISS",
    "TEXT_DRIFT",
    "EMPTY_RESPONSE",
)
"""Every regression label an evaluator can put on a score record."""

__all__ = [
    "DEFAULT_EVALUATORS",
    "ENTRY_POINT_GROUP",
    "Evaluator",
    "LABELS",
    "Pair",
    "REGISTRY",
    "SEVERITIES",
    "ScoreRecord",
    "Severity",
    "TextEvaluator",
    "ToolEvaluator",
    "build_evaluators",
    "evaluate",
    "evaluate_pair",
    "evaluate_run",
    "evaluator",
    "evaluator_class",
    "evaluator_kind",
]
