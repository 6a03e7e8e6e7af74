"""``analyze``: score records in, the migration verdict out, as one typed :class:`Analysis`.

One comparison per evaluator (and side), Benjamini-Hochberg across them, severity, grouped labels,
the ``migration_policy`` budgets and seed 001's troubleshooting rows.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._exceptions import ConfigError
from .._models import Example
from .._policy import MigrationPolicy
from ..evaluators import ScoreRecord
from ._labels import (
    REFUSAL_REGRESSION,
    TOOL_GROUND_TRUTH_MISS,
    UNLABELLED_SCORE_DROP,
    attribution,
    diverged,
    is_ground_truth_miss,
    regression_labels,
    tools_of,
)
from ._records import Analysis, ComparisonResult, LabelSummary, Regression
from ._severity import MATERIAL_DROP, SEVERITIES, at_least, severity_of, severity_rank
from ._stats import (
    benjamini_hochberg,
    bootstrap_ci,
    clustered_standard_error,
    paired_test,
    required_examples,
    standard_error,
)

BROKEN_HARNESS = "broken eval harness"
NOTHING_MEASURED = "Nothing measured"
CONFORMANCE_MODES = ("expected", "expected_set")
POWER = 0.8

GroupKey = tuple[str, str, "str | None"]


@dataclass
class _Group:
    """The rows of one comparison, split the way every rate needs them."""

    result: ComparisonResult
    measured: list[ScoreRecord] = field(default_factory=list)
    ground_truth_misses: list[ScoreRecord] = field(default_factory=list)
    difference_sd: float = 0.0
    design_effect: float = 1.0


def _describe(key: GroupKey) -> str:
    evaluator, name, side = key
    return f"{evaluator}.{name}" + (f" ({side})" if side else "")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cluster_keys(examples: Iterable[Example] | None, cluster_by: str) -> dict[str, str] | None:
    """Example id -> cluster key under ``cluster_by``; None when clustering is off or unknown."""
    if examples is None or cluster_by == "none":
        return None
    out: dict[str, str] = {}
    for ex in examples:
        if cluster_by == "source_trace" and ex.cluster:
            out[ex.id] = f"trace:{ex.cluster}"
        elif cluster_by == "tags" and ex.tags:
            out[ex.id] = f"tag:{ex.tags[0]}"
    return out


def _rng_for(seed: int, key: GroupKey) -> Any:
    """One generator per comparison, so adding an evaluator never moves another's interval."""
    import numpy as np

    return np.random.default_rng([seed, zlib.crc32(repr(key).encode("utf-8"))])


def _min_severity(record: ScoreRecord) -> str | None:
    """The row's own floor: REFUSAL_REGRESSION is at least high; ``metadata.min_severity``."""
    floor: str | None = "high" if REFUSAL_REGRESSION in record.labels else None
    value = record.metadata.get("min_severity")
    if isinstance(value, str) and value in SEVERITIES:
        floor = at_least(value, floor)
    return floor


def _compare(
    key: GroupKey,
    rows: list[ScoreRecord],
    *,
    clusters_of: dict[str, str] | None,
    floor: str | None,
    seed: int,
    n_resamples: int,
) -> _Group:
    import numpy as np

    evaluator, name, side = key
    skipped = [r for r in rows if r.skipped]
    misses = [r for r in rows if not r.skipped and is_ground_truth_miss(r)]
    measured = [r for r in rows if not r.skipped and not is_ground_truth_miss(r)]
    if not measured:
        why = (f"{NOTHING_MEASURED}: every row was skipped" if not misses
               else f"{NOTHING_MEASURED}: every measured row was a {TOOL_GROUND_TRUTH_MISS}")
        result = ComparisonResult(evaluator=evaluator, name=name, side=side, n=0, status="unknown",
                                  test="none", test_reason=why, skipped=len(skipped),
                                  ground_truth_misses=len(misses))
        return _Group(result=result, ground_truth_misses=misses)
    s = np.array([r.source_score for r in measured])
    t = np.array([r.target_score for r in measured])
    d = t - s
    n = d.size
    clusters = None if clusters_of is None else [clusters_of.get(r.example_id, f"example:{r.example_id}") for r in measured]
    n_clusters = len(set(clusters)) if clusters is not None else n
    shared = clusters is not None and 2 <= n_clusters < n
    test = paired_test(s, t, clusters=clusters if shared else None)
    ci = bootstrap_ci(s, t, clusters=clusters if shared else None, n_resamples=n_resamples,
                      rng=_rng_for(seed, key))
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    se = standard_error(d)
    se_cl = clustered_standard_error(d, clusters) if shared and clusters is not None else None
    regressed = [r for r in measured if r.target_score < r.source_score]
    affected = int(np.sum(d <= -MATERIAL_DROP + 1e-12))
    flagged = [r for r in measured if r.target_score < r.source_score or regression_labels(r)]
    difference = float(d.mean())
    severity = None
    if flagged:
        severity = at_least(severity_of(difference, affected / n), floor)
        for r in flagged:
            severity = at_least(severity, _min_severity(r))
    result = ComparisonResult(
        evaluator=evaluator,
        name=name,
        side=side,
        n=n,
        source_mean=float(s.mean()),
        target_mean=float(t.mean()),
        difference=difference,
        ci=None if ci is None else [ci.low, ci.high],
        test=test.test,
        test_reason=test.reason,
        statistic=test.statistic,
        p_value=test.pvalue,
        effect_size=difference / sd if sd > 0 else None,
        se=se,
        se_clustered=se_cl,
        clusters=n_clusters if shared else None,
        severity=severity,
        regressed=len(regressed),
        share_affected=affected / n,
        skipped=len(skipped),
        ground_truth_misses=len(misses),
    )
    design_effect = (se_cl / se) ** 2 if se_cl is not None and se > 0 else 1.0
    return _Group(result=result, measured=measured, ground_truth_misses=misses, difference_sd=sd,
                  design_effect=design_effect)


def _is_conformance(record: ScoreRecord) -> bool:
    if record.side is not None:
        return record.side == "conformance"
    return record.metadata.get("mode", "expected") in CONFORMANCE_MODES


def _label_summaries(groups: list[_Group]) -> tuple[dict[str, LabelSummary], dict[str, int]]:
    """Labels grouped by tool, field and comparison, and the failure categories, in distinct examples."""
    examples: dict[str, set[str]] = {}
    by_tool: dict[str, dict[str, set[str]]] = {}
    by_field: dict[str, dict[str, set[str]]] = {}
    by_evaluator: dict[str, dict[str, set[str]]] = {}
    categories: dict[str, set[str]] = {}
    for g in groups:
        where = g.result.label
        for r in g.measured:
            labels = regression_labels(r)
            if not labels and r.target_score < r.source_score:
                categories.setdefault(UNLABELLED_SCORE_DROP, set()).add(r.example_id)
            for label in labels:
                categories.setdefault(label, set()).add(r.example_id)
                examples.setdefault(label, set()).add(r.example_id)
                by_evaluator.setdefault(label, {}).setdefault(where, set()).add(r.example_id)
                tools, fields = attribution(r, label)
                for tool in tools:
                    by_tool.setdefault(label, {}).setdefault(tool, set()).add(r.example_id)
                for f in fields:
                    by_field.setdefault(label, {}).setdefault(f, set()).add(r.example_id)
        for r in g.ground_truth_misses:
            categories.setdefault(TOOL_GROUND_TRUTH_MISS, set()).add(r.example_id)

    def counts(d: dict[str, set[str]]) -> dict[str, int]:
        return dict(sorted(((k, len(v)) for k, v in d.items()), key=lambda kv: (-kv[1], kv[0])))

    summaries = {
        label: LabelSummary(
            count=len(ids),
            by_tool=counts(by_tool.get(label, {})),
            by_field=counts(by_field.get(label, {})),
            by_evaluator=counts(by_evaluator.get(label, {})),
        )
        for label, ids in sorted(examples.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    }
    return summaries, counts(categories)


def _label_lines(labels: dict[str, LabelSummary]) -> list[str]:
    """``12 ARGUMENT_VALUE_DRIFT on issue_refund.amount_usd``: the category names the bug."""
    lines: list[str] = []
    for label, info in labels.items():
        if info.by_field:
            lines.extend(f"{n} {label} on {f}" for f, n in info.by_field.items())
        elif info.by_tool:
            lines.extend(f"{n} {label} on {tool}" for tool, n in info.by_tool.items())
        else:
            lines.append(f"{info.count} {label}")
    return lines


def _validated_floors(floors: Mapping[tuple[str, str], str | None] | None) -> dict[tuple[str, str], str | None]:
    out: dict[tuple[str, str], str | None] = {}
    for (evaluator, name), floor in (floors or {}).items():
        if floor is not None:
            try:
                severity_rank(floor)
            except ValueError as exc:
                raise ConfigError(str(exc), field=f"evaluators.{evaluator}[{name}].severity_floor") from exc
        out[(evaluator, name)] = floor
    return out


def analyze(
    scores: Iterable[ScoreRecord | Mapping[str, Any]],
    *,
    policy: MigrationPolicy | Mapping[str, Any] | None = None,
    examples: Iterable[Example] | None = None,
    severity_floors: Mapping[tuple[str, str], str | None] | None = None,
    alpha: float | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
) -> Analysis:
    """Compare source and target per evaluator (and side) and decide the verdict.

    ``scores`` are ``scores.jsonl`` rows (records or dicts); ``examples`` supply the clusters;
    ``severity_floors`` maps ``(type, name)`` to an evaluator's ``severity_floor``; ``alpha``
    overrides ``policy.alpha``; ``seed`` fixes the bootstrap intervals.
    """
    pol = policy if isinstance(policy, MigrationPolicy) else MigrationPolicy.model_validate(dict(policy or {}))
    if alpha is not None:
        pol = pol.model_copy(update={"alpha": alpha})
    floors = _validated_floors(severity_floors)
    clusters_of = _cluster_keys(examples, pol.cluster_by)

    by_key: dict[GroupKey, list[ScoreRecord]] = {}
    for raw in scores:
        r = raw if isinstance(raw, ScoreRecord) else ScoreRecord.model_validate(dict(raw))
        by_key.setdefault((r.evaluator, r.name, r.side), []).append(r)
    groups = [
        _compare(key, rows, clusters_of=clusters_of, floor=floors.get((key[0], key[1])), seed=seed,
                 n_resamples=n_resamples)
        for key, rows in by_key.items()
    ]
    comparisons = [g.result for g in groups]
    tested = [c for c in comparisons if c.p_value is not None]
    pvalues = [float(c.p_value) for c in tested if c.p_value is not None]
    for c, p_adj in zip(tested, benjamini_hochberg(pvalues).tolist()):
        c.p_adjusted = float(p_adj)

    labels, failure_categories = _label_summaries(groups)
    fail: list[str] = []
    inconclusive: list[str] = []
    notes: list[str] = []
    banners: list[str] = []
    recommendations: list[str] = []
    a = pol.alpha

    # Troubleshooting row: the source failing its own recorded ground truth (seed 001).
    harness: list[str] = []
    for g in groups:
        c = g.result
        if c.evaluator != "tool_selection":
            continue
        rows = [r for r in g.measured + g.ground_truth_misses if _is_conformance(r)]
        if not rows:
            continue
        failed = sum(r.source_score < 1.0 for r in rows)
        if 2 * failed >= len(rows):
            harness.append(
                f"{BROKEN_HARNESS}: the source model failed the recorded ground truth on {failed} of "
                f"{len(rows)} {c.evaluator}.{c.name} conformance rows ({_pct(failed / len(rows))}); the "
                "suite's expectations were captured from the source model, so the run measured the "
                "harness (wrong toolset attached, wrong prompt, suite promoted from a different agent), "
                "not the migration"
            )
    if harness:
        banners.append(BROKEN_HARNESS)
        recommendations.append(
            "Fix the harness before collecting more examples: check the toolset attached to the "
            "examples, the prompt template, and that the suite was promoted from this agent's captures."
        )

    for c in comparisons:
        if c.status == "unknown":
            if NOTHING_MEASURED not in banners:
                banners.append(NOTHING_MEASURED)
            inconclusive.append(
                f"{c.label}: {NOTHING_MEASURED.lower()} — all {c.skipped + c.ground_truth_misses} rows "
                "were skipped or shared misses; a pass resting on it is not evidence of equivalence"
            )
            continue
        if c.p_adjusted is not None and c.p_adjusted < a and (c.difference or 0.0) < 0:
            ci = f" (95% CI {c.ci[0]:+.3f} to {c.ci[1]:+.3f})" if c.ci else ""
            line = (
                f"{c.label}: target {c.target_mean:.3f} vs source {c.source_mean:.3f}, difference "
                f"{c.difference:+.3f}{ci}, {c.test} adjusted p={c.p_adjusted:.4g} < alpha {a:g}; "
                f"{c.regressed} of {c.n} examples regressed, severity {c.severity}"
            )
            if c.severity is not None and severity_rank(c.severity) >= severity_rank(pol.fail_at_severity):
                fail.append(line)
            else:
                notes.append(f"{line} (below fail_at_severity {pol.fail_at_severity})")
        if c.n < pol.min_examples:
            inconclusive.append(f"{c.label}: {c.n} measured examples, fewer than min_examples {pol.min_examples}")
        elif c.p_value is None:
            inconclusive.append(f"{c.label}: {c.test_reason}")

    # Per-evaluator thresholds, keyed type.name (every side) or type.name.side.
    for key, threshold in pol.thresholds.items():
        matched = [c for c in comparisons if key in (f"{c.evaluator}.{c.name}", f"{c.evaluator}.{c.name}.{c.side}")]
        if not matched:
            inconclusive.append(f"migration_policy.thresholds.{key} names no comparison of this run")
        for c in matched:
            if c.status == "unknown" or c.target_mean is None or c.difference is None:
                continue
            if threshold.min_target_mean is not None:
                line = (f"{c.label}: target mean {c.target_mean:.3f} vs min_target_mean "
                        f"{threshold.min_target_mean:g} (migration_policy.thresholds.{key})")
                (fail if c.target_mean < threshold.min_target_mean else notes).append(line)
            if threshold.max_drop is not None:
                line = (f"{c.label}: drop {-c.difference:+.3f} vs max_drop {threshold.max_drop:g} "
                        f"(migration_policy.thresholds.{key})")
                (fail if -c.difference > threshold.max_drop else notes).append(line)

    # Budgets: shares of examples, never averages (seed 000, "Budget it in the policy").
    by_instance: dict[tuple[str, str], list[_Group]] = {}
    for g in groups:
        by_instance.setdefault((g.result.evaluator, g.result.name), []).append(g)
    if pol.max_tool_argument_drift is not None:
        drift_floor = 1.0 if pol.tool_argument_drift_floor is None else pol.tool_argument_drift_floor
        instances = {k: v for k, v in by_instance.items() if k[0] == "tool_arguments"}
        if not any(g.measured for gs in instances.values() for g in gs):
            inconclusive.append("max_tool_argument_drift is set but no tool_arguments rows were measured")
        for (ev, name), gs in instances.items():
            rows = [r for g in gs for r in g.measured]
            if not rows:
                continue
            eligible = {r.example_id for r in rows}
            drifted = {r.example_id for r in rows if r.target_score < drift_floor and r.target_score < r.source_score}
            rate = len(drifted) / len(eligible)
            line = (f"{ev}.{name}: {len(drifted)} of {len(eligible)} examples ({_pct(rate)}) scored below "
                    f"tool_argument_drift_floor {drift_floor:g}; max_tool_argument_drift is "
                    f"{_pct(pol.max_tool_argument_drift)}")
            (fail if rate > pol.max_tool_argument_drift else notes).append(line)
    if pol.max_tool_divergence is not None:
        instances = {k: v for k, v in by_instance.items() if k[0] == "tool_selection"}
        if not any(g.measured for gs in instances.values() for g in gs):
            inconclusive.append("max_tool_divergence is set but no tool_selection rows were measured")
        for (ev, name), gs in instances.items():
            rows = [r for g in gs for r in g.measured]
            divergence_rows = [r for r in rows if not _is_conformance(r)]
            rows = divergence_rows or rows
            if not rows:
                continue
            eligible = {r.example_id for r in rows}
            moved = {r.example_id for r in rows if diverged(r)}
            rate = len(moved) / len(eligible)
            line = (f"{ev}.{name}: {len(moved)} of {len(eligible)} examples ({_pct(rate)}) diverged in at "
                    f"least one round; max_tool_divergence is {_pct(pol.max_tool_divergence)}")
            (fail if rate > pol.max_tool_divergence else notes).append(line)

    # Recommendations: power, shared misses, nothing measured.
    delta = pol.minimum_detectable_drop
    for g in groups:
        c = g.result
        if c.status != "measured" or c.p_value is None:
            continue
        need = required_examples(drop=delta, difference_sd=g.difference_sd, alpha=a, power=POWER,
                                 design_effect=g.design_effect)
        if need <= c.n:
            recommendations.append(
                f"{c.label}: the {c.n} measured examples are enough to detect a {delta:g} drop at "
                f"{POWER:.0%} power (alpha {a:g}; about {need} would do)"
            )
        else:
            recommendations.append(
                f"{c.label}: detecting a {delta:g} drop at {POWER:.0%} power (alpha {a:g}) needs about "
                f"{need} examples, {need - c.n} more than the {c.n} measured"
            )
    misses = failure_categories.get(TOOL_GROUND_TRUTH_MISS, 0)
    if misses:
        recommendations.append(
            f"{misses} {TOOL_GROUND_TRUTH_MISS}: both models missed the recorded ground truth on "
            f"{misses} example(s); those rows left every policy rate (a shared miss is not "
            "equivalence) — review their expected_tools."
        )
    for c in comparisons:
        if c.status == "unknown":
            recommendations.append(
                f"{c.label}: {NOTHING_MEASURED} — every row was skipped (a turn that ends in tool "
                "calls has no text to score); rely on the tool evaluators for these turns."
            )

    label_lines = _label_lines(labels)
    verdict: Literal["pass", "fail", "inconclusive"]
    if harness:
        verdict = "inconclusive"
        reasons = harness + inconclusive + [f"not trusted while the harness is broken: {x}" for x in fail]
    elif fail:
        verdict = "fail"
        reasons = fail + label_lines
    elif inconclusive or not comparisons:
        verdict = "inconclusive"
        reasons = inconclusive or [f"{NOTHING_MEASURED}: no score records"]
        if not comparisons and NOTHING_MEASURED not in banners:
            banners.append(NOTHING_MEASURED)
    else:
        verdict = "pass"
        reasons = [
            f"no comparison shows a significant drop ({len(tested)} tested at alpha {a:g} after "
            "Benjamini-Hochberg)"
        ] + notes

    # model_construct: every value below comes from validated records; a large suite lists many.
    regressions = [
        Regression.model_construct(
            example_id=r.example_id, evaluator=g.result.evaluator, name=g.result.name,
            side=g.result.side, source_score=r.source_score, target_score=r.target_score,
            labels=list(r.labels), tools=tools_of(r),
            severity=at_least(g.result.severity or "low", _min_severity(r)),
            metadata=r.metadata,
        )
        for g in groups
        for r in g.measured
        if r.target_score < r.source_score or regression_labels(r)
    ]
    regressions.sort(key=lambda x: -severity_rank(x.severity or "low"))
    return Analysis(
        verdict=verdict,
        reasons=reasons,
        banners=banners,
        comparisons=comparisons,
        labels=labels,
        failure_categories=failure_categories,
        recommendations=recommendations,
        regressions=regressions,
        policy=pol.model_dump(mode="json"),
    )
