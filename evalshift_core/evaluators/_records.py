"""What evaluators produce: the rows of ``scores.jsonl`` and the severities a regression carries."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

Severity = Literal["low", "medium", "high", "critical"]
"""How bad a regression is, lowest first."""
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
"""Every severity, lowest first: the one list the analysis, the policy and the report read."""

class ScoredPair(BaseModel):
    """The fields every per-example row shares: which example, which evaluator, both sides' scores."""

    example_id: str
    """The example scored."""
    evaluator: str
    """Evaluator type name (``tool_selection``, ...)."""
    name: str
    """The configured instance's name."""
    side: str | None = None
    """``conformance`` or ``divergence`` where the evaluator has two sides."""
    source_score: float
    """Score of the source model in [0, 1]."""
    target_score: float
    """Score of the target model in [0, 1]."""


class ScoreRecord(ScoredPair):
    """One row of ``scores.jsonl``: one example, one evaluator (one side where it has two)."""

    skipped: bool = False
    """True when the pair could not be measured; it then leaves every rate."""
    labels: list[str] = Field(default_factory=list)
    """Regression labels (TOOL_SELECTION_DRIFT, ...)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Evaluator-specific detail; ``rounds`` on multi-round pairs."""
