"""Evaluators, registered by their config type name (the key under ``evaluators:``).

A new evaluator is one module and one line in :data:`REGISTRY`.
"""

from __future__ import annotations

from ._base import Evaluator, ScoreRecord
from ._registry import REGISTRY, build_evaluators, evaluate, evaluate_pair, evaluate_run

LABELS = (
    "TOOL_SELECTION_DRIFT",
    "ARGUMENT_VALUE_DRIFT",
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
    "Evaluator",
    "LABELS",
    "REGISTRY",
    "ScoreRecord",
    "build_evaluators",
    "evaluate",
    "evaluate_pair",
    "evaluate_run",
]
