"""The verdict in plain words, and the reasons with one line per root cause.

``headline`` is a pure function of an analysis and the run's per-tool call counts: "FAIL — the
candidate stopped calling notify_security_team on 7 of 32 examples (all tagged security)".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ._tool_use import TOOL_CALLS, ToolUse

BROKEN_HARNESS = "broken eval harness"
"""The banner of a run whose source failed its own recorded ground truth."""
NOTHING_MEASURED = "Nothing measured"
"""The banner (and reason prefix) of a comparison with no measured row."""

MAX_CLAUSES = 3
TOOL_LABELS = frozenset({"TOOL_SELECTION_DRIFT", "UNNECESSARY_TOOL_CALL"})
"""Labels the per-tool clauses already say in words."""


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """A field of a model or of its JSON form (analysis.json, a --json payload)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _label(c: Any) -> str:
    side = _get(c, "side")
    return f"{_get(c, 'evaluator')}.{_get(c, 'name')}" + (f" ({side})" if side else "")


# -- one root cause, one reason ----------------------------------------------------------------


def duplicate_comparisons(regressions: Iterable[Any]) -> dict[str, str]:
    """Sides of one evaluator that regressed on the same examples and tools: one root cause.

    Maps each repeating comparison (``tool_selection.routing (divergence)``) to the one it repeats
    (the conformance side, else the first side seen). analysis.json keeps both comparisons; the
    reasons, the CLI and JUnit say it once.
    """
    found: dict[tuple[str, str], dict[Any, tuple[set[str], set[str]]]] = {}
    for r in regressions:
        sides = found.setdefault((str(_get(r, "evaluator")), str(_get(r, "name"))), {})
        examples, tools = sides.setdefault(_get(r, "side"), (set(), set()))
        examples.add(str(_get(r, "example_id")))
        tools.update(_get(r, "tools") or [])
    out: dict[str, str] = {}
    for (evaluator, name), sides in found.items():
        if len(sides) < 2:
            continue
        order = sorted(sides, key=lambda s: (s != "conformance", str(s)))
        primary = order[0]
        for side in order[1:]:
            if sides[side] == sides[primary]:
                out[_label({"evaluator": evaluator, "name": name, "side": side})] = _label(
                    {"evaluator": evaluator, "name": name, "side": primary})
    return out


def one_reason_per_cause(reasons: list[str], duplicates: Mapping[str, str]) -> list[str]:
    """Drop the reason of a comparison that repeats another's root cause; the reason it repeats
    says the other side agrees."""
    if not duplicates:
        return list(reasons)

    def subject(line: str) -> str | None:
        return next((d for d in duplicates if line.startswith(f"{d}: ") or f": {d}: " in line), None)

    agree: dict[str, list[str]] = {}
    kept = []
    for line in reasons:
        dup = subject(line)
        if dup is None:
            kept.append(line)
        else:
            agree.setdefault(duplicates[dup], []).append(dup.rsplit(" (", 1)[-1].rstrip(")"))
    out = []
    for line in kept:
        primary = next((p for p in agree if line.startswith(f"{p}: ") or f": {p}: " in line), None)
        if primary is not None:
            sides = " and ".join(dict.fromkeys(agree.pop(primary)))
            line += f"; the {sides} side agrees on the same examples and tools"
        out.append(line)
    return out


# -- power -------------------------------------------------------------------------------------


def sane_count(need: int, n: int) -> str:
    """Examples a test needs, said so a person can act on it: no seven-digit counts."""
    if need > 10 * n:
        return f"more than 10× the {n} measured"
    return f"about {need} examples, {need - n} more than the {n} measured"


def underpowered(comparisons: Iterable[Any], minimum_detectable_drop: float) -> tuple[int, float] | None:
    """``(n, drop)`` of the tested comparison that can see the least: the largest detectable drop,
    when it is above ``minimum_detectable_drop``; None when every test can see that drop."""
    weakest: tuple[int, float] | None = None
    for c in comparisons:
        drop = _get(c, "detectable_drop")
        if _get(c, "status") != "measured" or _get(c, "p_value") is None or _get(c, "evaluator") == TOOL_CALLS:
            continue  # a tool's call rate is a count, not a score whose drop a power line sizes
        if drop is None:  # too few examples to detect even a drop of 1.0
            return int(_get(c, "n") or 0), 1.0
        if drop > minimum_detectable_drop + 1e-12 and (weakest is None or drop > weakest[1]):
            weakest = (int(_get(c, "n") or 0), float(drop))
    return weakest


def power_caveat(n: int, drop: float) -> str:
    if drop >= 1.0:
        return f"{n} examples are too few to detect any drop"
    return f"{n} examples can only detect drops of {drop:g} or more"


# -- the headline ------------------------------------------------------------------------------


def _tag_note(n: int, tags: Counter[str], totals: Mapping[str, int]) -> str:
    """`` (all tagged security)`` when a tag covers every example a clause counts; of several, the
    most specific (the fewest examples in the run), so "urgent" wins over "refund"."""
    covering = [tag for tag, k in tags.items() if k == n]
    if not covering:
        return ""
    tag = min(covering, key=lambda t: (int(totals.get(t, n)), t))
    total = int(totals.get(tag, n))
    return f" (all tagged {tag})" if total <= n else f" (all tagged {tag}: {n} of its {total})"


def _tool_clauses(use: ToolUse, implicated: set[str]) -> list[tuple[str, str]]:
    """``(first form, later form)`` per change: stopped calling, called one tool for another, extra calls."""
    n = use.examples
    clauses: list[tuple[str, str]] = []
    swapped_from: Counter[str] = Counter()
    swapped_to: Counter[str] = Counter()
    from_tags: dict[str, Counter[str]] = {}
    to_tags: dict[str, Counter[str]] = {}
    for s in use.swaps:
        swapped_from[s.source_tool] += s.examples
        swapped_to[s.target_tool] += s.examples
        from_tags.setdefault(s.source_tool, Counter()).update(s.tags)
        to_tags.setdefault(s.target_tool, Counter()).update(s.tags)
    for t in use.tools:
        if t.tool not in implicated:
            continue
        lost = t.dropped - swapped_from[t.tool]
        if lost > 0:
            verb = "stopped calling" if t.target == 0 else "did not call"
            note = _tag_note(lost, Counter(t.dropped_tags) - from_tags.get(t.tool, Counter()), use.tags)
            text = f"{verb} {t.tool} on {lost} of {n} examples{note}"
            clauses.append((text, f"it {text}"))
    for s in use.swaps:
        if s.source_tool in implicated or s.target_tool in implicated:
            note = _tag_note(s.examples, Counter(s.tags), use.tags)
            clauses.append((
                f"called {s.target_tool} where the source called {s.source_tool} on {s.examples} of {n} examples{note}",
                f"on {s.examples} it called {s.target_tool} where the source called {s.source_tool}{note}",
            ))
    for t in use.tools:
        if t.tool not in implicated:
            continue
        extra = t.added - swapped_to[t.tool]
        if extra > 0:
            note = _tag_note(extra, Counter(t.added_tags) - to_tags.get(t.tool, Counter()), use.tags)
            text = f"called {t.tool} on {extra} of {n} examples where the source did not{note}"
            clauses.append((text, f"it {text}"))
    return clauses


def _label_clauses(labels: Mapping[str, Any], n: int | None, *, tools_said: bool) -> list[tuple[str, str]]:
    """Argument fields and the labels the tool clauses do not say (all of them when there are no
    tool clauses): "changed issue_refund.amount_usd on 12 examples (ARGUMENT_VALUE_DRIFT)"."""
    out: list[tuple[str, str]] = []
    of = f" of {n}" if n else ""
    for label, info in labels.items():
        if label in TOOL_LABELS and tools_said:
            continue
        count = int(_get(info, "count") or 0)
        baseline = _get(info, "baseline_count")
        if not count or (baseline is not None and count <= baseline):
            continue  # no more often than in the source's own runs
        fields = dict(_get(info, "by_field") or {})
        if fields:
            where, k = next(iter(fields.items()))
            verb = "sent {} against its schema" if label == "ARGUMENT_SCHEMA_VIOLATION" else "changed {}"
            text = f"{verb.format(where)} on {k}{of} examples ({label})"
            out.append((text, f"it {text}"))
        elif _get(info, "by_tool"):
            out.extend((f"has {k} {label} on {tool}", f"{k} {label} on {tool}")
                       for tool, k in dict(_get(info, "by_tool")).items())
        else:
            out.append((f"has {count} {label}", f"{count} {label}"))
    return out


def _significant(comparisons: Iterable[Any], alpha: float) -> Any | None:
    for c in comparisons:
        p, d = _get(c, "p_adjusted"), _get(c, "difference")
        if p is not None and d is not None and p < alpha and d < 0 and _get(c, "status") == "measured":
            return c
    return None


def _failure_in_words(analysis: Any, alpha: float) -> str:
    """A FAIL no tool change explains (a text evaluator, a budget): the decisive comparison, plainly."""
    c = _significant(_get(analysis, "comparisons") or [], alpha)
    if c is not None:
        return (f"{_label(c)} fell from {_get(c, 'source_mean'):.2f} to {_get(c, 'target_mean'):.2f}; "
                f"{_get(c, 'regressed')} of {_get(c, 'n')} examples regressed")
    reasons = _get(analysis, "reasons") or []
    return str(reasons[0]) if reasons else "a budget of the migration policy is broken"


def _inconclusive_in_words(analysis: Any) -> str:

    banners = [str(b) for b in _get(analysis, "banners") or []]
    reasons = [str(r) for r in _get(analysis, "reasons") or []]
    if BROKEN_HARNESS in banners:
        return ("the source model failed its own recorded ground truth, so the run measured the harness, "
                "not the migration")
    few = next((r for r in reasons if "fewer than min_examples" in r), None)
    if few is not None:
        return few.split(": ", 1)[-1]
    if any(r.startswith(f"{NOTHING_MEASURED}: no score records") for r in reasons):
        return "nothing was measured: no score records"
    unknown = [c for c in _get(analysis, "comparisons") or [] if _get(c, "status") == "unknown"]
    if unknown:
        return f"nothing measured on {', '.join(_label(c) for c in unknown[:2])}: every row was skipped"
    if any("uncalibrated" in r for r in reasons):
        return "no comparison could be tested: the drift comparisons have no A/A baseline"
    return reasons[0] if reasons else "nothing decided"


def headline(analysis: Any, tool_calls: ToolUse | Mapping[str, Any] | None = None) -> str:
    """The verdict in one sentence, in the seeds' words; the statistics stay in the reasons.

    ``tool_calls`` are the run's per-tool counts (:func:`~evalshift_core.analysis._tool_use.tool_use`,
    or report.json's ``charts.tool_calls``); without them a FAIL is told from its labels.
    """
    use = ToolUse.from_dict(tool_calls) if isinstance(tool_calls, Mapping) else tool_calls
    verdict = str(_get(analysis, "verdict") or "inconclusive")
    policy = _get(analysis, "policy") or {}
    alpha = float(_get(policy, "alpha", 0.05) or 0.05)
    minimum = float(_get(policy, "minimum_detectable_drop", 0.05) or 0.05)
    comparisons = list(_get(analysis, "comparisons") or [])
    weak = underpowered(comparisons, minimum)
    if verdict == "fail":
        labels = _get(analysis, "labels") or {}
        implicated = {t for info in labels.values() for t in (_get(info, "by_tool") or {})}
        implicated |= {t for r in _get(analysis, "regressions") or [] for t in (_get(r, "tools") or [])}
        clauses = _tool_clauses(use, implicated) if use is not None and use.examples else []
        clauses += _label_clauses(labels, use.examples if use is not None else None, tools_said=bool(clauses))
        if not clauses:
            return f"FAIL — {_failure_in_words(analysis, alpha)}."
        first, *rest = clauses[:MAX_CLAUSES]
        return "FAIL — the candidate " + "; ".join([first[0], *(later for _, later in rest)]) + "."
    if verdict == "pass":
        if weak is not None:
            return f"PASS, but {power_caveat(*weak)}."
        tested = [c for c in comparisons if _get(c, "status") == "measured" and _get(c, "p_value") is not None]
        n = max((int(_get(c, "n") or 0) for c in tested), default=0)
        return (f"PASS — no significant drop on {n} examples ({len(tested)} comparison"
                f"{'s' * (len(tested) != 1)} tested).")
    text = f"INCONCLUSIVE — {_inconclusive_in_words(analysis)}"
    if weak is not None and "fewer than min_examples" not in text:
        text += f"; {power_caveat(*weak)}"
    return text + "."
