"""The migration policy: the budget a target model must stay within to pass.

``migration_policy:`` in evalshift.yaml; :func:`evalshift_core.analyze` reads it to decide the verdict.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..evaluators._records import Severity


class EvaluatorThreshold(BaseModel):
    """A per-evaluator budget; a bare number in the YAML means ``min_target_mean``."""

    model_config = ConfigDict(extra="forbid")

    min_target_mean: float | None = Field(default=None, ge=0.0, le=1.0)
    """The target's mean score on this comparison must be at least this."""
    max_drop: float | None = Field(default=None, ge=0.0, le=1.0)
    """The mean score may drop by at most this much (source mean minus target mean)."""


class MigrationPolicy(BaseModel):
    """What a target model must satisfy to pass, and how the statistics are run."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    """Significance level, applied to Benjamini-Hochberg adjusted p-values across every comparison."""
    min_examples: int = Field(default=10, ge=1)
    """A comparison measured on fewer examples than this cannot support a pass (inconclusive)."""
    max_tool_argument_drift: float | None = Field(default=None, ge=0.0, le=1.0)
    """Largest share of ``tool_arguments`` examples that may drift (score below the floor)."""
    tool_argument_drift_floor: float | None = Field(default=None, ge=0.0, le=1.0)
    """An example counts as drifted when its target argument score is below this (unset: 1.0,
    any difference counts). Counting examples below a floor, instead of averaging, is what keeps
    a long tail of tiny per-field differences from clearing the budget."""
    max_tool_divergence: float | None = Field(default=None, ge=0.0, le=1.0)
    """Largest share of ``tool_selection`` examples that may diverge; an example on a multi-round
    replay counts as diverged when any round diverged."""
    thresholds: dict[str, EvaluatorThreshold] = Field(default_factory=dict)
    """Per-evaluator budgets keyed ``type.name`` (every side) or ``type.name.side``."""
    fail_at_severity: Severity = "low"
    """A significant drop fails the migration only at this severity or above."""
    minimum_detectable_drop: float = Field(default=0.05, gt=0.0, le=1.0)
    """The drop the power line in the recommendations sizes the suite for (80% power)."""
    tool_call_rates: bool = True
    """Test, for every tool, whether the target calls it as often as the source (exact McNemar
    on the examples where only one side called it); a significant change either way fails like
    any comparison. Averaged scores dilute a tool that stops being called on a tenth of the
    examples among the differences every run of a non-deterministic model has."""
    cluster_by: Literal["source_trace", "tags", "none"] = "source_trace"
    """How examples are grouped for clustered standard errors: the source trace an example was
    promoted from, its first tag, or not at all."""

    @field_validator("thresholds", mode="before")
    @classmethod
    def _bare_number_is_min_target_mean(cls, value: object) -> object:
        if isinstance(value, dict):
            return {
                k: {"min_target_mean": v} if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                for k, v in value.items()
            }
        return value
