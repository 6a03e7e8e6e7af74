"""``analyze``: score records in, the migration verdict out, as one typed :class:`Analysis`.

One comparison per evaluator (and side), Benjamini-Hochberg across them, severity, grouped labels,
the ``migration_policy`` budgets and seed 001's troubleshooting rows.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Literal

from .._exceptions import ConfigError
from .._models import Example
from .._progress import counted, progress_bar
from ..evaluators import ScoreRecord
from ..evaluators._attribution import Attribution, attribute
from ..evaluators._base import MISSED_BELOW
from ..evaluators._calibration import UNCALIBRATED
from ._headline import (
    BROKEN_HARNESS,
    NOTHING_MEASURED,
    duplicate_comparisons,
    headline,
    one_reason_per_cause,
    power_caveat,
    sane_count,
    underpowered,
)
from ._labels import (
    REFUSAL_REGRESSION,
    TOOL_GROUND_TRUTH_MISS,
    UNLABELLED_SCORE_DROP,
    diverged,
    is_ground_truth_miss,
    regression_labels,
)
from ._policy import MigrationPolicy
from ._records import Analysis, ComparisonResult, LabelSummary, Regression
from ._severity import MATERIAL_DROP, SEVERITIES, at_least, severity_of, severity_rank
from ._stats import (
    TIE_TOLERANCE,
    benjamini_hochberg,
    bootstrap_ci,
    clustered_standard_error,
    detectable_drop,
    paired_test,
    required_examples,
    standard_error,
)
from ._tool_use import TOOL_CALLS, ToolShare, ToolUse, call_rate_comparisons

CONFORMANCE_MODES = ("expected", "expected_set")
POWER = 0.8

GroupKey = tuple[str, str, "str | None"]


@dataclass
class _Group:
    """The rows of one comparison, split the way every rate needs them."""

    result: ComparisonResult
    measured: list[ScoreRecord] = field(default_factory=list)
    """Rows the test ran on (for an uncalibrated comparison: the rows shown, never tested)."""
    ground_truth_misses: list[ScoreRecord] = field(default_factory=list)
    uncalibrated: list[ScoreRecord] = field(default_factory=list)
    """Drift rows without an A/A baseline: left out of the test and of every rate."""
    difference_sd: float = 0.0
    design_effect: float = 1.0
    attributed: list[Attribution | None] = field(init=False)
    """Per measured row: what it and each of its regression labels point at, read once for the
    labels and the regressions alike; None for a row that neither regressed nor carries a label."""

    def __post_init__(self) -> None:
        self.attributed = []
        for r in self.measured:
            labels = regression_labels(r) if r.labels else []
            regressed = labels or r.target_score < r.source_score
            self.attributed.append(attribute(r, labels) if regressed else None)

    @property
    def calibrated(self) -> bool:
        """The rows the test ran on compare like with like (a baseline, or ground truth)."""
        return self.result.status == "measured"


def _baseline_kind(record: ScoreRecord) -> str | None:
    """The row's A/A baseline (``none`` when it has none); None for a row against ground truth."""
    baseline = record.metadata.get("baseline")
    if isinstance(baseline, dict):
        kind = baseline.get("kind")
        return str(kind) if kind is not None else UNCALIBRATED
    return None


def _drifted(score: Any) -> Any:
    """A drift score below 1.0: this side differed from the reference (elementwise on an array)."""
    return score < 1.0 - TIE_TOLERANCE


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


def _baselines(rows: list[ScoreRecord]) -> str | None:
    """What calibrated the rows: one baseline's name, or each with its count."""
    kinds: dict[str, int] = {}
    for r in rows:
        kind = _baseline_kind(r)
        if kind is not None and kind != UNCALIBRATED:
            kinds[kind] = kinds.get(kind, 0) + 1
    if not kinds:
        return None
    if len(kinds) == 1:
        return next(iter(kinds))
    return ", ".join(f"{k} ({n})" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))


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
    skipped: list[ScoreRecord] = []
    misses: list[ScoreRecord] = []
    measured: list[ScoreRecord] = []
    for r in rows:
        (skipped if r.skipped else misses if is_ground_truth_miss(r) else measured).append(r)
    if not measured:
        why = (f"{NOTHING_MEASURED}: every row was skipped" if not misses
               else f"{NOTHING_MEASURED}: every measured row was a {TOOL_GROUND_TRUTH_MISS}")
        result = ComparisonResult(evaluator=evaluator, name=name, side=side, n=0, status="unknown",
                                  test="none", test_reason=why, skipped=len(skipped),
                                  ground_truth_misses=len(misses))
        return _Group(result=result, ground_truth_misses=misses)
    kinds = [_baseline_kind(r) for r in measured]
    drift = any(k is not None for k in kinds)
    uncalibrated = [r for r, k in zip(measured, kinds) if k == UNCALIBRATED] if drift else []
    if drift and len(uncalibrated) == len(measured):
        return _uncalibrated(key, measured, skipped, misses)
    if uncalibrated:
        measured = [r for r, k in zip(measured, kinds) if k != UNCALIBRATED]
    s = np.array([r.source_score for r in measured])
    t = np.array([r.target_score for r in measured])
    d = t - s
    n = d.size
    clusters = None if clusters_of is None else [
        clusters_of.get(r.example_id) or f"example:{r.example_id}" for r in measured]
    n_clusters = len(set(clusters)) if clusters is not None else n
    shared = clusters is not None and 2 <= n_clusters < n
    test = paired_test(s, t, clusters=clusters if shared else None)
    ci = bootstrap_ci(s, t, clusters=clusters if shared else None, n_resamples=n_resamples,
                      rng=_rng_for(seed, key))
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    se = standard_error(d)
    se_cl = clustered_standard_error(d, clusters) if shared and clusters is not None else None
    dropped = t < s
    affected = int(np.sum(d <= -MATERIAL_DROP + 1e-12))
    # A calibrated drift row regressed when the target drifted further than the source's own
    # second run; its labels alone are the same noise the baseline shows.
    flagged = [r for r, drop in zip(measured, dropped.tolist()) if drop or (not drift and regression_labels(r))]
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
        regressed=int(np.count_nonzero(dropped)),
        share_affected=affected / n,
        skipped=len(skipped),
        ground_truth_misses=len(misses),
        baseline=_baselines(measured) if drift else None,
        uncalibrated=len(uncalibrated),
        drift_share=float(np.mean(_drifted(t))) if drift else None,
        baseline_drift_share=float(np.mean(_drifted(s))) if drift else None,
    )
    design_effect = (se_cl / se) ** 2 if se_cl is not None and se > 0 else 1.0
    return _Group(result=result, measured=measured, ground_truth_misses=misses, uncalibrated=uncalibrated,
                  difference_sd=sd, design_effect=design_effect)


def _uncalibrated(key: GroupKey, measured: list[ScoreRecord], skipped: list[ScoreRecord],
                  misses: list[ScoreRecord]) -> _Group:
    """A drift comparison with no A/A baseline anywhere: described, never tested."""
    evaluator, name, side = key
    n = len(measured)
    source_mean = sum(r.source_score for r in measured) / n
    target_mean = sum(r.target_score for r in measured) / n
    result = ComparisonResult(
        evaluator=evaluator, name=name, side=side, n=n, status="uncalibrated",
        source_mean=source_mean, target_mean=target_mean, difference=target_mean - source_mean,
        test="none",
        test_reason=("uncalibrated: no A/A baseline (no recording of the source model, no source "
                     "repeats), so the source's own run-to-run drift is unknown"),
        regressed=sum(r.target_score < r.source_score for r in measured),
        skipped=len(skipped), ground_truth_misses=len(misses), uncalibrated=n,
        drift_share=sum(_drifted(r.target_score) for r in measured) / n,
    )
    return _Group(result=result, measured=measured, ground_truth_misses=misses, uncalibrated=measured)


def _is_conformance(record: ScoreRecord) -> bool:
    if record.side is not None:
        return record.side == "conformance"
    return record.metadata.get("mode", "expected") in CONFORMANCE_MODES


def _label_summaries(groups: list[_Group]) -> tuple[dict[str, LabelSummary], dict[str, int]]:
    """Labels grouped by tool, field and comparison, and the failure categories, in distinct examples.

    On calibrated drift comparisons each label also gets its A/A count: the examples where the
    source's own second run carried it against the same reference.
    """
    examples: dict[str, set[str]] = {}
    by_tool: dict[str, dict[str, set[str]]] = {}
    by_field: dict[str, dict[str, set[str]]] = {}
    by_evaluator: dict[str, dict[str, set[str]]] = {}
    categories: dict[str, set[str]] = {}
    baseline: dict[str, set[str]] = {}
    baseline_tool: dict[str, dict[str, set[str]]] = {}
    baseline_field: dict[str, dict[str, set[str]]] = {}
    with_baseline: set[str] = set()
    for g in groups:
        where = g.result.label
        calibrated_drift = g.calibrated and g.result.baseline is not None
        for r, attributed in zip(g.measured, g.attributed):
            labels = attributed.labels if attributed is not None else {}
            if attributed is not None and not labels and g.calibrated:  # regressed, with no label
                categories.setdefault(UNLABELLED_SCORE_DROP, set()).add(r.example_id)
            for label, (tools, fields) in labels.items():
                categories.setdefault(label, set()).add(r.example_id)
                examples.setdefault(label, set()).add(r.example_id)
                by_evaluator.setdefault(label, {}).setdefault(where, set()).add(r.example_id)
                for tool in tools:
                    by_tool.setdefault(label, {}).setdefault(tool, set()).add(r.example_id)
                for f in fields:
                    by_field.setdefault(label, {}).setdefault(f, set()).add(r.example_id)
            if not calibrated_drift:
                continue
            with_baseline.update(labels)
            twin = r.metadata.get("baseline") or {}
            for label in twin.get("labels") or ():
                if label == TOOL_GROUND_TRUTH_MISS:
                    continue
                with_baseline.add(label)
                baseline.setdefault(label, set()).add(r.example_id)
                for tool in (twin.get("tools") or {}).get(label) or ():
                    baseline_tool.setdefault(label, {}).setdefault(tool, set()).add(r.example_id)
                for f in (twin.get("fields") or {}).get(label) or ():
                    baseline_field.setdefault(label, {}).setdefault(f, set()).add(r.example_id)
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
            baseline_count=len(baseline.get(label, ())) if label in with_baseline else None,
            baseline_by_tool=counts(baseline_tool.get(label, {})),
            baseline_by_field=counts(baseline_field.get(label, {})),
        )
        for label, ids in sorted(examples.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    }
    return summaries, counts(categories)


def _label_lines(labels: dict[str, LabelSummary]) -> list[str]:
    """``12 ARGUMENT_VALUE_DRIFT on issue_refund.amount_usd``: the category names the bug.

    Where the label has an A/A count, only tools and fields the target drifted on more often than
    the source's own second run did are listed, with that count beside them.
    """
    lines: list[str] = []
    for label, info in labels.items():
        if info.by_field:
            entries, base = info.by_field, info.baseline_by_field
        elif info.by_tool:
            entries, base = info.by_tool, info.baseline_by_tool
        else:
            entries, base = {"": info.count}, {"": info.baseline_count or 0}
        for where, n in entries.items():
            aa = base.get(where, 0) if info.baseline_count is not None else None
            if aa is not None and n <= aa:
                continue  # no more often than the source's own runs: run-to-run noise
            line = f"{n} {label}" + (f" on {where}" if where else "")
            lines.append(line + (f" ({aa} in the source's own runs)" if aa else ""))
    return lines


def _budget(
    instance: str,
    groups: list[_Group],
    *,
    budget: float,
    what: str,
    moved: Callable[[float], bool],
    conformance_moved: Callable[[ScoreRecord], bool],
    describe: str,
    alpha: float,
    rng: Any,
    n_resamples: int,
) -> tuple[bool, str | None]:
    """One policy budget on one evaluator instance: (broken, the line that says so).

    A drift comparison with an A/A baseline counts drift in excess of the source's own rate, and
    breaks the budget only when that excess is above it with ``1 - alpha`` confidence (one-sided
    bootstrap bound): two runs of one model differ, so a point estimate above a small budget is
    what a no-op migration shows half the time. Without a baseline the raw rate counts, and the
    line says so; against ground truth, an example moved when the target fell below the source.
    """
    calibrated = [r for g in groups if g.calibrated and g.result.baseline is not None for r in g.measured]
    if calibrated:
        t = [moved(r.target_score) for r in calibrated]
        s = [moved(r.source_score) for r in calibrated]
        n = len(calibrated)
        rate_t, rate_s = sum(t) / n, sum(s) / n
        ci = bootstrap_ci(s, t, confidence_level=1 - 2 * alpha, n_resamples=n_resamples, rng=rng)
        low = (rate_t - rate_s) if ci is None else ci.low
        left_out = sum(len(g.uncalibrated) for g in groups)
        line = (f"{instance}: {sum(t)} of {n} examples ({_pct(rate_t)}) {describe}, against {sum(s)} "
                f"({_pct(rate_s)}) in the source's own runs ({_baselines(calibrated)}): "
                f"{_pct(rate_t - rate_s)} in excess, {1 - alpha:.0%} lower bound {_pct(low)}; {what} is "
                f"{_pct(budget)}" + (f" ({left_out} examples without a baseline left out)" if left_out else ""))
        return low > budget, line
    rows = [r for g in groups for r in g.measured]
    if not rows:
        return False, None
    drift_rows = [r for r in rows if _baseline_kind(r) is not None]
    if drift_rows:
        hit = {r.example_id for r in drift_rows if moved(r.target_score)}
        eligible = {r.example_id for r in drift_rows}
        note = " (uncalibrated: the raw rate, with no A/A baseline to subtract)"
    else:
        hit = {r.example_id for r in rows if conformance_moved(r)}
        eligible = {r.example_id for r in rows}
        note = ""
    rate = len(hit) / len(eligible)
    line = (f"{instance}: {len(hit)} of {len(eligible)} examples ({_pct(rate)}) {describe}{note}; "
            f"{what} is {_pct(budget)}")
    return rate > budget, line


def _calibration_advice(c: ComparisonResult, *, imported: bool) -> str:
    """How to give a drift comparison its A/A baseline."""
    which = (f"{c.uncalibrated} of {c.n + (0 if c.status == 'uncalibrated' else c.uncalibrated)} examples had "
             "no A/A baseline and were left out of the test" if c.status == "measured"
             else "uncalibrated, so it cannot fail the verdict")
    if imported:
        how = ("import a second run of the source agent with `evalshift traces import RUN --source F "
               "--target F --baseline F`")
    else:
        how = ("set `replay: {source_repeats: 2}` in evalshift.yaml (or `--source-repeats 2`: one more "
               "source call per example), or promote the suite from captures of the source model, whose "
               "recordings are the baseline at no cost")
    return f"{c.label}: {which}; to calibrate it, {how}"


def _call_rate_line(c: ComparisonResult, share: ToolShare, alpha: float) -> str:
    """A tool the target calls significantly more or less often, in words first."""
    changes = []
    if share.dropped:
        changes.append(f"stopped calling it on {share.dropped}")
    if share.added:
        changes.append(f"started calling it on {share.added}")
    return (f"{c.label}: the target {' and '.join(changes)} of {c.n} examples (called on {share.target}, the "
            f"source on {share.source}); exact McNemar adjusted p={c.p_adjusted:.4g} < alpha {alpha:g}, "
            f"severity {c.severity}")


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


@dataclass
class _Findings:
    """What the checks after the comparisons find, in the order the analysis lists them."""

    fail: list[str] = field(default_factory=list)
    """Reasons the verdict fails."""
    inconclusive: list[str] = field(default_factory=list)
    """Reasons nothing can be concluded."""
    notes: list[str] = field(default_factory=list)
    """Findings that decide nothing (below fail_at_severity, within a budget, untested)."""
    banners: list[str] = field(default_factory=list)
    recommendations: list[str] = field(default_factory=list)


def _check_harness(groups: list[_Group], promoted: set[str] | None, found: _Findings) -> list[str]:
    """Troubleshooting row: the source failing its own recorded ground truth (seed 001).

    Returns the broken-harness reasons (none when the harness looks sound).
    """
    recommendations, banners = found.recommendations, found.banners
    harness: list[str] = []
    for g in groups:
        c = g.result
        if c.evaluator != "tool_selection":
            continue
        # Conformance rows, counted apart when their example was not promoted from captures;
        # "failed" is missed (most of the recorded calls wrong), not imperfect: a non-deterministic
        # source rarely repeats a multi-round recording exactly, and a working harness is no broken one.
        rows = failed = written = missed = 0
        for r in chain(g.measured, g.ground_truth_misses):
            if not _is_conformance(r):
                continue
            if promoted is not None and r.example_id not in promoted:
                written += 1
                missed += r.source_score < MISSED_BELOW
            else:
                rows += 1
                failed += r.source_score < MISSED_BELOW
        if missed:
            # Hand-written or imported ground truth: a weak source missing it is a finding
            # about the source, not a sign the harness is broken.
            recommendations.append(
                f"{c.label}: the source model missed the ground truth on {missed} of {written} "
                f"examples not promoted from captures ({_pct(missed / written)}); the target is "
                "compared with the source on them as on every other example — review those "
                "expectations if the source is known to be right"
            )
        if not rows:
            continue
        if 2 * failed >= rows:
            harness.append(
                f"{BROKEN_HARNESS}: the source model failed the recorded ground truth on {failed} of "
                f"{rows} {c.evaluator}.{c.name} conformance rows ({_pct(failed / rows)}); the "
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

    return harness


def _judge_comparisons(
    comparisons: list[ComparisonResult], shares: Mapping[str, ToolShare], pol: MigrationPolicy, found: _Findings
) -> None:
    """Each comparison's test against alpha, fail_at_severity and min_examples."""
    fail, inconclusive, notes, banners = found.fail, found.inconclusive, found.notes, found.banners
    a = pol.alpha
    for c in comparisons:
        if c.status == "unknown":
            if NOTHING_MEASURED not in banners:
                banners.append(NOTHING_MEASURED)
            inconclusive.append(
                f"{c.label}: {NOTHING_MEASURED.lower()} — all {c.skipped + c.ground_truth_misses} rows "
                "were skipped or shared misses; a pass resting on it is not evidence of equivalence"
            )
            continue
        if c.status == "uncalibrated":
            notes.append(
                f"{c.label}: uncalibrated, not tested — the target differed from the source on "
                f"{_pct(c.drift_share or 0.0)} of {c.n} examples, but with no A/A baseline the source's "
                "own run-to-run drift is unknown"
            )
            continue
        # A score that dropped significantly fails; a tool's call rate fails on a change either way.
        rate = c.evaluator == TOOL_CALLS
        if c.p_adjusted is not None and c.p_adjusted < a and (c.difference if rate else (c.difference or 0.0) < 0):
            if rate:
                line = _call_rate_line(c, shares[c.name], a)
            else:
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



def _apply_thresholds(comparisons: list[ComparisonResult], pol: MigrationPolicy, found: _Findings) -> None:
    """Per-evaluator thresholds, keyed type.name (every side) or type.name.side."""
    fail, inconclusive, notes = found.fail, found.inconclusive, found.notes
    for key, threshold in pol.thresholds.items():
        matched = [c for c in comparisons if key in (f"{c.evaluator}.{c.name}", f"{c.evaluator}.{c.name}.{c.side}")]
        if not matched:
            inconclusive.append(f"migration_policy.thresholds.{key} names no comparison of this run")
        for c in matched:
            if c.status == "uncalibrated":
                notes.append(f"{c.label}: migration_policy.thresholds.{key} not applied: the comparison is "
                             "uncalibrated (its source is pinned at 1.0)")
                continue
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



def _apply_budgets(groups: list[_Group], pol: MigrationPolicy, *, seed: int, n_resamples: int,
                   found: _Findings) -> None:
    """Budgets: shares of examples, never averages (seed 000, "Budget it in the policy")."""
    fail, inconclusive, notes = found.fail, found.inconclusive, found.notes
    a = pol.alpha
    by_instance: dict[tuple[str, str], list[_Group]] = {}
    for g in groups:
        by_instance.setdefault((g.result.evaluator, g.result.name), []).append(g)
    if pol.max_tool_argument_drift is not None:
        drift_floor = 1.0 if pol.tool_argument_drift_floor is None else pol.tool_argument_drift_floor
        instances = {k: v for k, v in by_instance.items() if k[0] == "tool_arguments"}
        if not any(g.measured for gs in instances.values() for g in gs):
            inconclusive.append("max_tool_argument_drift is set but no tool_arguments rows were measured")
        for (ev, name), gs in instances.items():
            failed, line = _budget(
                f"{ev}.{name}", gs, budget=pol.max_tool_argument_drift, what="max_tool_argument_drift",
                moved=lambda score, _floor=drift_floor: score < _floor,
                conformance_moved=lambda r, _floor=drift_floor: r.target_score < _floor and r.target_score < r.source_score,
                describe=f"scored below tool_argument_drift_floor {drift_floor:g}",
                alpha=a, rng=_rng_for(seed, (ev, name, "max_tool_argument_drift")), n_resamples=n_resamples,
            )
            if line:
                (fail if failed else notes).append(line)
    if pol.max_tool_divergence is not None:
        instances = {k: v for k, v in by_instance.items() if k[0] == "tool_selection"}
        if not any(g.measured for gs in instances.values() for g in gs):
            inconclusive.append("max_tool_divergence is set but no tool_selection rows were measured")
        for (ev, name), gs in instances.items():
            divergence = [g for g in gs if any(not _is_conformance(r) for r in g.measured + g.uncalibrated)]
            failed, line = _budget(
                f"{ev}.{name}", divergence or gs, budget=pol.max_tool_divergence, what="max_tool_divergence",
                moved=_drifted, conformance_moved=diverged, describe="diverged in at least one round",
                alpha=a, rng=_rng_for(seed, (ev, name, "max_tool_divergence")), n_resamples=n_resamples,
            )
            if line:
                (fail if failed else notes).append(line)



def _recommend(groups: list[_Group], comparisons: list[ComparisonResult], failure_categories: Mapping[str, int],
               pol: MigrationPolicy, found: _Findings) -> None:
    """Recommendations: power, shared misses, nothing measured, calibration."""
    recommendations = found.recommendations
    a = pol.alpha
    delta = pol.minimum_detectable_drop
    for g in groups:
        c = g.result
        if c.status != "measured" or c.p_value is None:
            continue
        c.detectable_drop = detectable_drop(c.n, difference_sd=g.difference_sd, alpha=a, power=POWER,
                                            design_effect=g.design_effect)
        if c.p_adjusted is not None and c.p_adjusted < a and (c.difference or 0.0) < 0:
            continue  # a significant drop is seen already: more examples would not change that
        need = required_examples(drop=delta, difference_sd=g.difference_sd, alpha=a, power=POWER,
                                 design_effect=g.design_effect)
        if need <= c.n:
            recommendations.append(
                f"{c.label}: the {c.n} measured examples are enough to detect a {delta:g} drop at "
                f"{POWER:.0%} power (alpha {a:g}; about {need} would do)"
            )
        else:
            recommendations.append(
                f"{c.label}: detecting a {delta:g} drop at {POWER:.0%} power (alpha {a:g}) needs "
                f"{sane_count(need, c.n)}; {power_caveat(c.n, c.detectable_drop or 1.0)}"
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
    for g in groups:
        c = g.result
        if c.uncalibrated:
            recommendations.append(_calibration_advice(c, imported=any(
                (r.metadata.get("timeline") == "imported") for r in g.uncalibrated)))
        unfit: dict[str, int] = {}
        for r in g.measured if c.status == "uncalibrated" else g.measured + g.uncalibrated:
            why = (r.metadata.get("baseline") or {}).get("recording")
            if why:
                unfit[str(why)] = unfit.get(str(why), 0) + 1
        if unfit:
            whys = "; ".join(f"{why} on {n}" for why, n in sorted(unfit.items(), key=lambda kv: -kv[1]))
            recommendations.append(
                f"{c.label}: {sum(unfit.values())} examples' recordings could not be the A/A baseline "
                f"({whys}), so " + ("the source's repeats or an imported baseline were used instead"
                                   if c.baseline else "they are uncalibrated"))



def _decide(
    groups: list[_Group],
    comparisons: list[ComparisonResult],
    tested: list[ComparisonResult],
    harness: list[str],
    labels: dict[str, LabelSummary],
    pol: MigrationPolicy,
    found: _Findings,
) -> tuple[Literal["pass", "fail", "inconclusive"], list[str]]:
    """The verdict and its reasons, decisive ones first.

    The reasons name labels only where the verdict rests on them: calibrated comparisons.
    ``labels`` are every comparison's, summed again here only when some are not calibrated.
    """
    fail, inconclusive, notes, banners = found.fail, found.inconclusive, found.notes, found.banners
    a = pol.alpha
    delta = pol.minimum_detectable_drop
    calibrated = [g for g in groups if g.calibrated]
    label_lines = _label_lines(labels if len(calibrated) == len(groups) else _label_summaries(calibrated)[0])
    tested_any = any(c.status == "measured" for c in comparisons)
    verdict: Literal["pass", "fail", "inconclusive"]
    if harness:
        verdict = "inconclusive"
        reasons = harness + inconclusive + [f"not trusted while the harness is broken: {x}" for x in fail]
    elif fail:
        verdict = "fail"
        # A tool whose call rate failed is said once, by that line, not again as a label count.
        rate_failed = {c.name for c in comparisons if c.evaluator == TOOL_CALLS and any(
            line.startswith(f"{c.label}: ") for line in fail)}
        reasons = fail + [line for line in label_lines if not any(
            line.endswith(f" on {tool}") and ("TOOL_SELECTION_DRIFT" in line or "UNNECESSARY_TOOL_CALL" in line)
            for tool in rate_failed)]
    elif inconclusive or not tested_any:
        verdict = "inconclusive"
        if not comparisons:
            inconclusive.append(f"{NOTHING_MEASURED}: no score records")
        elif not tested_any and not inconclusive:
            inconclusive.append("no comparison could be tested: every drift comparison is uncalibrated")
        reasons = inconclusive + notes
        if not comparisons and NOTHING_MEASURED not in banners:
            banners.append(NOTHING_MEASURED)
    else:
        verdict = "pass"
        reasons = [
            f"no comparison shows a significant drop ({len(tested)} tested at alpha {a:g} after "
            "Benjamini-Hochberg)"
        ] + notes
    weak = underpowered(comparisons, delta) if verdict != "fail" else None
    if weak is not None and weak[0] >= pol.min_examples:  # a pass or an inconclusive that could not
        # have seen a small drop says so (fewer than min_examples says it already)
        line = (f"{power_caveat(*weak)} at {POWER:.0%} power, above minimum_detectable_drop {delta:g}: "
                "a smaller drop would pass unseen")
        reasons.insert(1, f"but {line}") if verdict == "pass" else reasons.append(line)

    return verdict, reasons


def _regressions(groups: list[_Group]) -> list[Regression]:
    """Per example and comparison, most severe first (calibrated comparisons only)."""
    # model_construct: every value below comes from validated records; a large suite lists many.
    regressions = [
        Regression.model_construct(
            example_id=r.example_id, evaluator=g.result.evaluator, name=g.result.name,
            side=g.result.side, source_score=r.source_score, target_score=r.target_score,
            labels=list(r.labels), tools=attributed.tools,
            severity=at_least(g.result.severity or "low", _min_severity(r)),
            metadata=r.metadata,
        )
        for g in groups
        if g.calibrated
        for r, attributed in zip(g.measured, g.attributed)
        # a row with neither a drop nor a regression label was not attributed
        if attributed is not None and (r.target_score < r.source_score or (g.result.baseline is None and attributed.labels))
    ]
    regressions.sort(key=lambda x: -severity_rank(x.severity or "low"))
    return regressions


def analyze(
    scores: Iterable[ScoreRecord | Mapping[str, Any]],
    *,
    policy: MigrationPolicy | Mapping[str, Any] | None = None,
    examples: Iterable[Example] | None = None,
    severity_floors: Mapping[tuple[str, str], str | None] | None = None,
    alpha: float | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    tool_use: ToolUse | Mapping[str, Any] | None = None,
) -> Analysis:
    """Compare source and target per evaluator (and side) and decide the verdict.

    ``scores`` are ``scores.jsonl`` rows (records or dicts); ``examples`` supply the clusters;
    ``severity_floors`` maps ``(type, name)`` to an evaluator's ``severity_floor``; ``alpha``
    overrides ``policy.alpha``; ``seed`` fixes the bootstrap intervals. ``tool_use`` is the run's
    per-tool call counts (:func:`~evalshift_core.analysis._tool_use.tool_use`): with it, each tool's
    call rate is tested too (``tool_calls.<tool>``, unless ``policy.tool_call_rates`` is off).
    """
    pol = policy if isinstance(policy, MigrationPolicy) else MigrationPolicy.model_validate(dict(policy or {}))
    if alpha is not None:
        pol = pol.model_copy(update={"alpha": alpha})
    floors = _validated_floors(severity_floors)
    examples = list(examples) if examples is not None else None
    clusters_of = _cluster_keys(examples, pol.cluster_by)
    # The harness check's premise, "the expectations were captured from the source model", holds
    # for examples promoted from captures only (all of them when the examples are not given).
    promoted = None if examples is None else {e.id for e in examples if e.promotion_source is not None}

    by_key: dict[GroupKey, list[ScoreRecord]] = {}
    for raw in scores:
        r = raw if isinstance(raw, ScoreRecord) else ScoreRecord.model_validate(dict(raw))
        by_key.setdefault((r.evaluator, r.name, r.side), []).append(r)
    # A 100k-example run spends seconds here: a bar (after 2 s, on a terminal) per comparison,
    # then one step for the labels and one for the regressions.
    bar = progress_bar(len(by_key) + 2, "analyse", unit="step")
    groups = [
        _compare(key, rows, clusters_of=clusters_of, floor=floors.get((key[0], key[1])), seed=seed,
                 n_resamples=n_resamples)
        for key, rows in counted(by_key.items(), bar)
    ]
    comparisons = [g.result for g in groups]
    use = ToolUse.from_dict(tool_use) if isinstance(tool_use, Mapping) else tool_use
    shares = {t.tool: t for t in use.tools} if use is not None else {}
    if use is not None and pol.tool_call_rates:
        comparisons += call_rate_comparisons(use)
    tested = [c for c in comparisons if c.p_value is not None]
    pvalues = [float(c.p_value) for c in tested if c.p_value is not None]
    for c, p_adj in zip(tested, benjamini_hochberg(pvalues).tolist()):
        c.p_adjusted = float(p_adj)

    labels, failure_categories = _label_summaries(groups)
    bar.update()
    found = _Findings()
    harness = _check_harness(groups, promoted, found)
    _judge_comparisons(comparisons, shares, pol, found)
    _apply_thresholds(comparisons, pol, found)
    _apply_budgets(groups, pol, seed=seed, n_resamples=n_resamples, found=found)
    _recommend(groups, comparisons, failure_categories, pol, found)
    verdict, reasons = _decide(groups, comparisons, tested, harness, labels, pol, found)
    regressions = _regressions(groups)
    bar.update()
    bar.close()
    analysis = Analysis(
        verdict=verdict,
        reasons=one_reason_per_cause(reasons, duplicate_comparisons(regressions)),
        banners=found.banners,
        comparisons=comparisons,
        labels=labels,
        failure_categories=failure_categories,
        recommendations=found.recommendations,
        regressions=regressions,
        policy=pol.model_dump(mode="json"),
    )
    analysis.headline = headline(analysis)  # compare() tells it again with the run's per-tool counts
    return analysis
