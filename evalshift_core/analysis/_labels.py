"""Per-example failure categories: the labels that are regressions, and which examples diverged.

Which tools and fields a label points at is the evaluators' metadata contract, read by
:mod:`evalshift_core.evaluators._attribution`.
"""

from __future__ import annotations

from ..evaluators import ScoreRecord
from ..evaluators._attribution import attribution, round_differs, tools_of

__all__ = ["attribution", "diverged", "is_ground_truth_miss", "regression_labels", "round_differs", "tools_of"]

TOOL_GROUND_TRUTH_MISS = "TOOL_GROUND_TRUTH_MISS"
REFUSAL_REGRESSION = "REFUSAL_REGRESSION"
UNLABELLED_SCORE_DROP = "UNLABELLED_SCORE_DROP"
"""Failure category of a regressed example whose evaluator attached no label."""


def diverged(record: ScoreRecord) -> bool:
    """An example diverged when any round diverged (seed 001, max_tool_divergence)."""
    rounds = record.metadata.get("rounds")
    if isinstance(rounds, list) and rounds:
        return any(isinstance(r, dict) and round_differs(r) for r in rounds)
    return record.target_score < record.source_score


def is_ground_truth_miss(record: ScoreRecord) -> bool:
    """A shared miss: TOOL_GROUND_TRUTH_MISS and no regression label on the same row."""
    return TOOL_GROUND_TRUTH_MISS in record.labels and all(
        label == TOOL_GROUND_TRUTH_MISS for label in record.labels
    )


def regression_labels(record: ScoreRecord) -> list[str]:
    """The row's labels minus the non-regression TOOL_GROUND_TRUTH_MISS."""
    return [label for label in record.labels if label != TOOL_GROUND_TRUTH_MISS]
