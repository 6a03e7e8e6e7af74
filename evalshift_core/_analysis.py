"""Analysis: paired statistics per comparison, severity, labels and the migration verdict."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from .evaluators import ScoreRecord

ANALYSIS_SCHEMA_VERSION = 1
SEVERITIES = ("low", "medium", "high", "critical")


class ComparisonResult(BaseModel):
    """One evaluator (side) compared across source and target."""

    evaluator: str
    name: str
    side: str | None = None
    n: int
    source_mean: float | None = None
    target_mean: float | None = None
    difference: float | None = None
    ci: list[float] | None = None
    test: str | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    severity: str | None = None
    status: str = "measured"
    regressed: int = 0


class Regression(BaseModel):
    """One example where the target scored below the source."""

    example_id: str
    evaluator: str
    name: str
    side: str | None = None
    source_score: float
    target_score: float
    labels: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Analysis(BaseModel):
    """What ``analysis.json`` holds."""

    schema_version: int = ANALYSIS_SCHEMA_VERSION
    verdict: str
    reasons: list[str] = Field(default_factory=list)
    comparisons: list[ComparisonResult] = Field(default_factory=list)
    labels: dict[str, Any] = Field(default_factory=dict)
    failure_categories: dict[str, int] = Field(default_factory=dict)
    recommendations: list[str] = Field(default_factory=list)
    regressions: list[Regression] = Field(default_factory=list)


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1)."""
    import numpy as np

    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out.tolist()


def paired_test(source: list[float], target: list[float]) -> tuple[str, float]:
    """Wilcoxon signed-rank on the paired differences (zero differences split, ``zsplit``)."""
    from scipy import stats

    diffs = [t - s for s, t in zip(source, target)]
    if all(d == 0 for d in diffs):
        return "none (no differences)", 1.0
    result = stats.wilcoxon(target, source, zero_method="zsplit")
    return "wilcoxon", float(result.pvalue)


def bootstrap_ci(source: list[float], target: list[float], *, seed: int = 0, n: int = 2000) -> list[float]:
    import numpy as np

    rng = np.random.default_rng(seed)
    diffs = np.asarray(target) - np.asarray(source)
    idx = rng.integers(0, len(diffs), size=(n, len(diffs)))
    means = diffs[idx].mean(axis=1)
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def severity_of(difference: float, share: float, floor: str | None = None) -> str:
    """Severity from the effect size and the share of examples affected, raised to ``floor``."""
    size = abs(difference)
    level = 0
    if size >= 0.02 or share >= 0.05:
        level = 1
    if size >= 0.1 or share >= 0.15:
        level = 2
    if size >= 0.25 or share >= 0.35:
        level = 3
    if floor in SEVERITIES:
        level = max(level, SEVERITIES.index(floor))
    return SEVERITIES[level]


def _tools_of(record: ScoreRecord) -> list[str]:
    md = record.metadata
    rounds = md.get("rounds") or [md]
    out: list[str] = []
    for r in rounds:
        ref = r.get("expected", r.get("source")) or []
        tgt = r.get("target") or []
        missing = Counter(ref) - Counter(tgt)
        extra = Counter(tgt) - Counter(ref)
        out.extend(missing.elements())
        out.extend(extra.elements())
        if not missing and not extra:
            out.extend(ref[:1])
    return out


def analyze(
    scores: Iterable[ScoreRecord],
    *,
    alpha: float = 0.05,
    severity_floors: Mapping[tuple[str, str], str | None] | None = None,
    seed: int = 0,
) -> Analysis:
    """Compare source and target per evaluator (side) and decide the verdict."""
    groups: dict[tuple[str, str, str | None], list[ScoreRecord]] = {}
    for r in scores:
        groups.setdefault((r.evaluator, r.name, r.side), []).append(r)
    comparisons: list[ComparisonResult] = []
    regressions: list[Regression] = []
    label_counts: dict[str, Counter[str]] = {}
    for (evaluator, name, side), rows in groups.items():
        measured = [r for r in rows if not r.skipped]
        if not measured:
            comparisons.append(ComparisonResult(evaluator=evaluator, name=name, side=side, n=0, status="unknown"))
            continue
        src = [r.source_score for r in measured]
        tgt = [r.target_score for r in measured]
        test, p = paired_test(src, tgt)
        diff = sum(tgt) / len(tgt) - sum(src) / len(src)
        regressed = [r for r in measured if r.target_score < r.source_score]
        floor = (severity_floors or {}).get((evaluator, name))
        comparisons.append(
            ComparisonResult(
                evaluator=evaluator, name=name, side=side, n=len(measured),
                source_mean=sum(src) / len(src), target_mean=sum(tgt) / len(tgt), difference=diff,
                ci=bootstrap_ci(src, tgt, seed=seed), test=test, p_value=p,
                severity=severity_of(diff, len(regressed) / len(measured), floor if regressed else None),
                regressed=len(regressed),
            )
        )
        for r in regressed:
            tools = _tools_of(r)
            regressions.append(
                Regression(example_id=r.example_id, evaluator=evaluator, name=name, side=side,
                           source_score=r.source_score, target_score=r.target_score, labels=r.labels,
                           tools=tools, metadata=r.metadata)
            )
            for label in r.labels:
                label_counts.setdefault(label, Counter()).update(tools or ["(none)"])
    measured_cmp = [c for c in comparisons if c.status == "measured"]
    for c, p_adj in zip(measured_cmp, benjamini_hochberg([c.p_value or 1.0 for c in measured_cmp])):
        c.p_adjusted = p_adj
    reasons: list[str] = []
    failing = [c for c in measured_cmp if (c.difference or 0) < 0 and (c.p_adjusted or 1) < alpha]
    for c in failing:
        label = f"{c.evaluator}.{c.name}" + (f" ({c.side})" if c.side else "")
        reasons.append(
            f"{label}: target {c.target_mean:.3f} vs source {c.source_mean:.3f} "
            f"(difference {c.difference:+.3f}, adjusted p={c.p_adjusted:.4f} < {alpha}, severity {c.severity})"
        )
    if failing:
        for label, by_tool in sorted(label_counts.items()):
            reasons.extend(f"{count} {label} on {tool}" for tool, count in by_tool.most_common())
        verdict = "fail"
    elif measured_cmp:
        verdict = "pass"
        reasons.append("no comparison shows a significant drop")
    else:
        verdict = "inconclusive"
        reasons.append("Nothing measured")
    return Analysis(
        verdict=verdict,
        reasons=reasons,
        comparisons=comparisons,
        labels={k: {"count": sum(v.values()), "by_tool": dict(v)} for k, v in label_counts.items()},
        regressions=regressions,
    )
