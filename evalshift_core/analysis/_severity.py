"""Severity of a regression: low, medium, high or critical.

From the effect size (the mean drop on [0, 1] scores) and the share of examples affected, raised
by an evaluator's ``severity_floor`` and by ``REFUSAL_REGRESSION`` (always at least high).
"""

from __future__ import annotations

from ..evaluators._records import SEVERITIES

MATERIAL_DROP = 0.1
"""An example counts as affected when its score fell by at least this much; smaller per-example
wiggles are the long tail that the policy's floors budget, not a share of the suite that broke."""

# (mean drop, share of examples regressed) at which each level starts; either one reaches it.
# A 10-point accuracy drop is high; a quarter of the suite regressing is critical.
_LEVELS = (
    ("medium", 0.02, 0.05),
    ("high", 0.10, 0.15),
    ("critical", 0.25, 0.35),
)


def severity_rank(severity: str) -> int:
    """Position of ``severity`` in :data:`SEVERITIES` (ValueError names the allowed values)."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ValueError(f"unknown severity {severity!r} (one of {', '.join(SEVERITIES)})") from None


def at_least(severity: str, floor: str | None) -> str:
    """``severity`` raised to ``floor`` (no floor leaves it as it is)."""
    if floor is None:
        return severity
    return SEVERITIES[max(severity_rank(severity), severity_rank(floor))]


def severity_of(difference: float, share: float, floor: str | None = None) -> str:
    """Severity of a drop of ``difference`` (target minus source) affecting ``share`` of examples."""
    size = max(0.0, -difference)
    level = "low"
    for name, min_drop, min_share in _LEVELS:
        if size >= min_drop or share >= min_share:
            level = name
    return at_least(level, floor)
