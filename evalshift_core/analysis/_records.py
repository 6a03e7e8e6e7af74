"""The typed shape of ``analysis.json``: comparisons, labels, regressions and the verdict.

:func:`load_analysis` reads the file back and refuses a newer schema version with a clear message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .._exceptions import InputError
from ..evaluators._records import ScoredPair

ANALYSIS_SCHEMA_VERSION = 3
"""Version 2 adds ``banners``, ``policy`` and the per-comparison detail beyond design.md's keys;
version 3 the calibration of drift comparisons (``uncalibrated`` status, ``baseline``,
``drift_share``, labels' ``baseline_count``)."""


class ComparisonResult(BaseModel):
    """One evaluator (one side where it has two) compared across source and target."""

    evaluator: str
    """Evaluator type name (``tool_selection``, ...)."""
    name: str
    """The configured instance's name."""
    side: str | None = None
    """``conformance`` or ``divergence`` where the evaluator has two sides."""
    n: int
    """Paired examples measured (skipped rows and TOOL_GROUND_TRUTH_MISS rows excluded)."""
    source_mean: float | None = None
    """Mean source score over the measured examples."""
    target_mean: float | None = None
    """Mean target score over the measured examples."""
    difference: float | None = None
    """Mean of ``target - source``: negative is a drop."""
    ci: list[float] | None = None
    """95% paired-bootstrap interval for ``difference`` (cluster bootstrap when clustered)."""
    test: str | None = None
    """``wilcoxon``, ``t-test``, ``clustered t-test`` or ``none``."""
    test_reason: str | None = None
    """Why that test was chosen (Shapiro-Wilk outcome, 0/1 scores, n < 3, ...)."""
    statistic: float | None = None
    """The test statistic."""
    p_value: float | None = None
    """Two-sided p-value of the paired test."""
    p_adjusted: float | None = None
    """Benjamini-Hochberg adjusted p-value across every comparison of the run."""
    effect_size: float | None = None
    """Standardised mean difference ``mean(d) / sd(d)`` (Cohen's d_z); None when sd is 0."""
    se: float | None = None
    """Standard error of ``difference`` assuming independent examples."""
    se_clustered: float | None = None
    """Cluster-robust standard error (Miller 2024) when examples share clusters."""
    clusters: int | None = None
    """Number of clusters the measured examples fall into, when some share one."""
    severity: str | None = None
    """``low`` | ``medium`` | ``high`` | ``critical`` when any example regressed, else None."""
    status: Literal["measured", "unknown", "uncalibrated"] = "measured"
    """``unknown`` when nothing was measured (every row skipped); ``uncalibrated`` for a drift
    comparison with no A/A baseline on any example: shown with its labels and drift share, never
    tested, so it cannot fail the verdict on significance."""
    baseline: str | None = None
    """What calibrated a drift comparison: ``recording``, ``source_repeats`` or ``imported`` (a mix
    lists each with its count); None for comparisons against ground truth, calibrated as they are."""
    uncalibrated: int = 0
    """Drift rows with no A/A baseline, left out of the test."""
    drift_share: float | None = None
    """Drift comparisons: share of examples where the target differed from the reference."""
    baseline_drift_share: float | None = None
    """Drift comparisons: share of examples where the source's own second run differed from it
    (the A/A rate the target's drift is tested against)."""
    detectable_drop: float | None = None
    """The smallest mean drop the test detects at 80% power with these ``n`` examples (design
    effect included); None when it was not tested."""
    regressed: int = 0
    """Measured examples where the target scored below the source."""
    share_affected: float | None = None
    """Share of measured examples whose score fell by at least 0.1 (severity's second input)."""
    skipped: int = 0
    """Rows the evaluator skipped (not measurable)."""
    ground_truth_misses: int = 0
    """TOOL_GROUND_TRUTH_MISS rows: both sides missed the ground truth; they leave every rate."""

    @property
    def label(self) -> str:
        """``type.name`` plus `` (side)``: how reasons and recommendations name the comparison."""
        return f"{self.evaluator}.{self.name}" + (f" ({self.side})" if self.side else "")


class LabelSummary(BaseModel):
    """One regression label grouped across the run: distinct examples carrying it."""

    count: int
    """Distinct examples carrying the label."""
    by_tool: dict[str, int] = Field(default_factory=dict)
    """Distinct examples per tool the label was attributed to."""
    by_field: dict[str, int] = Field(default_factory=dict)
    """Distinct examples per ``tool.field`` (argument labels)."""
    by_evaluator: dict[str, int] = Field(default_factory=dict)
    """Distinct examples per comparison (``type.name (side)``)."""
    baseline_count: int | None = None
    """On calibrated drift comparisons: distinct examples where the source's own second run
    carried the label against the same reference (the label's A/A rate); None elsewhere."""
    baseline_by_tool: dict[str, int] = Field(default_factory=dict)
    """``baseline_count`` per tool."""
    baseline_by_field: dict[str, int] = Field(default_factory=dict)
    """``baseline_count`` per ``tool.field``."""


class Regression(ScoredPair):
    """One example where the target scored below the source, or that carries a regression label."""

    labels: list[str] = Field(default_factory=list)
    """The evaluator's regression labels for this example."""
    tools: list[str] = Field(default_factory=list)
    """The tools the difference involves (missing, extra or reordered calls; drifted arguments)."""
    severity: str | None = None
    """The comparison's severity, raised by the floor, REFUSAL_REGRESSION and ``min_severity``."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The evaluator's metadata for the example (``rounds`` on multi-round pairs)."""


class Analysis(BaseModel):
    """What ``analysis.json`` holds; :func:`evalshift_core.analyze` returns it."""

    schema_version: int = ANALYSIS_SCHEMA_VERSION
    verdict: Literal["pass", "fail", "inconclusive"]
    """``pass``, ``fail`` or ``inconclusive``."""
    headline: str | None = None
    """The verdict in one plain sentence, statistics left to the reasons: "FAIL — the candidate
    stopped calling notify_security_team on 7 of 32 examples (all tagged security)"."""
    reasons: list[str] = Field(default_factory=list)
    """Every reason that decided the verdict, decisive ones first."""
    banners: list[str] = Field(default_factory=list)
    """Troubleshooting rows the report shows as banners: ``broken eval harness``, ``Nothing measured``."""
    comparisons: list[ComparisonResult] = Field(default_factory=list)
    labels: dict[str, LabelSummary] = Field(default_factory=dict)
    """Regression labels grouped with counts per tool and per field."""
    failure_categories: dict[str, int] = Field(default_factory=dict)
    """Distinct examples per failure category (each label, UNLABELLED_SCORE_DROP, TOOL_GROUND_TRUTH_MISS)."""
    recommendations: list[str] = Field(default_factory=list)
    """What to do next: power, harness fixes, ground-truth review."""
    regressions: list[Regression] = Field(default_factory=list)
    """Per example and comparison, most severe first."""
    policy: dict[str, Any] = Field(default_factory=dict)
    """The migration_policy the verdict was decided under."""


def load_analysis(path: str | os.PathLike[str]) -> Analysis:
    """Read ``analysis.json``; a newer schema version or a malformed file is an InputError."""
    p = Path(path)
    from .._io import DERIVED_MAX_DEPTH
    from .._limits import load_json

    data = load_json(p.read_bytes(), file=str(p), error=InputError, max_depth=DERIVED_MAX_DEPTH)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", file=str(p))
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise InputError("missing or non-integer schema_version", file=str(p), field="schema_version")
    if version > ANALYSIS_SCHEMA_VERSION:
        raise InputError(
            f"written by a newer EvalShift (schema {version}; this one reads up to "
            f"{ANALYSIS_SCHEMA_VERSION}): upgrade evalshift",
            file=str(p), field="schema_version",
        )
    try:
        return Analysis.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], file=str(p), field=".".join(str(x) for x in err["loc"])) from exc
