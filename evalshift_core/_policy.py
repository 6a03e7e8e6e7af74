"""The migration policy: the budget a target model must stay within to pass."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MigrationPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    alpha: float = 0.05
    """Significance level after Benjamini-Hochberg."""
    min_examples: int = 10
    """Fewer measured examples than this make the verdict inconclusive."""
    max_tool_argument_drift: float | None = None
    """Largest share of examples whose arguments may drift."""
    tool_argument_drift_floor: float | None = None
    """An example counts as drifted when its argument score is below this."""
    max_tool_divergence: float | None = None
    """Largest share of examples whose tool selection may diverge (any round)."""
    thresholds: dict[str, float] = Field(default_factory=dict)
    """Per-evaluator minimum target mean, keyed ``type.name``."""
