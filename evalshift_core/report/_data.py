"""What the report shows, as data: the ``report.json`` shape built from a typed :class:`Analysis`,
the run's examples and calls, and (optionally) its score rows.

Rendering that data is :mod:`._html`'s job; writing both files is :mod:`._report`'s.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any

import orjson

from .._models import Call, Example, ToolCall, ToolTrace
from .._progress import tracked
from ..analysis._headline import headline
from ..analysis._records import Analysis, LabelSummary, Regression
from ..analysis._severity import SEVERITIES
from ..analysis._tool_use import tool_use
from ..evaluators import evaluator_kind

REPORT_SCHEMA_VERSION = 1


@cache
def _row_kind(evaluator: Any) -> str:
    """``trace`` for the rows of a tool evaluator (its class's ``kind``), else ``text``."""
    return "trace" if evaluator_kind(evaluator) == "tool" else "text"


# Tool arguments and diffed texts are capped everywhere (report.html caps model text further,
# within its own budget); report.json keeps each text whole.
_ARGS_CAP = 400
_DIFF_TEXT_CAP = 4000

# What each banner means, in the seeds' words (001 "Troubleshooting"; "Toolset shape" for strict).
BANNER_DETAILS = {
    "constraints not honoured": (
        "A model could not honour request settings production used, so its results on those "
        "examples were produced without them."
    ),
    "broken eval harness": (
        "The source model failed the recorded ground truth on at least half of the "
        "tool_selection.conformance rows. The suite's expectations were captured from the source "
        "model, so this run measured the harness (wrong toolset attached, wrong prompt, suite "
        "promoted from a different agent), not the migration. Fix the harness before collecting "
        "more examples."
    ),
    "nothing measured": (
        "Every row of a comparison was skipped (a turn that ends in tool calls has no text to "
        "score), so it is reported as unknown; a pass resting on it is not evidence of equivalence."
    ),
}


def _json_text(value: Any) -> str:
    """JSON-render a value so ``12.0`` and ``"12"`` stay visibly different."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, default=str, ensure_ascii=False)


def cap(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def _call_text(call: ToolCall) -> str:
    args = call.arguments if isinstance(call.arguments, str) else _json_text(call.arguments)
    return f"{call.tool_name}({cap(args, _ARGS_CAP)})"


def _is_multi_round(*traces: ToolTrace | None) -> bool:
    return any(t is not None and t.round_count is not None for t in traces)


def _round_numbers(*traces: ToolTrace | None) -> list[int]:
    n = max([t.round_count or 1 for t in traces if t is not None] or [1])
    return list(range(1, n + 1))


def _names_line(call: Call | None, k: int) -> str:
    if call is None:
        return "—"
    if call.trace is None:
        return "(error)" if call.error else "—"
    return ", ".join(c.tool_name for c in call.trace.round(k)) or "(none)"


def tools_called(source: Call | None, target: Call | None) -> list[str]:
    """The "Tools called (source → target)" lines: one per round on a multi-round replay."""
    traces = [c.trace for c in (source, target) if c is not None]
    if not _is_multi_round(*traces):
        return [f"{_names_line(source, 1)} → {_names_line(target, 1)}"]
    return [f"Round {k}: {_names_line(source, k)} → {_names_line(target, k)}" for k in _round_numbers(*traces)]


@lru_cache(maxsize=4096)
def _name_opcodes(source: tuple[str, ...], target: tuple[str, ...]) -> list[tuple[str, int, int, int, int]]:
    """How one round's tool names align; a run repeats few such pairs, so each is diffed once."""
    return difflib.SequenceMatcher(a=source, b=target, autojunk=False).get_opcodes()


def trace_diff(source: ToolTrace | None, target: ToolTrace | None) -> list[dict[str, Any]]:
    """Side-by-side diff of two traces, aligned on tool names per round.

    Each item is ``{op, source, target, text}`` (op: same, changed, replaced, removed, added); on a
    multi-round pair it also has ``round`` and its text starts with ``Round k:``.
    """
    multi = _is_multi_round(source, target)
    items: list[dict[str, Any]] = []
    for k in _round_numbers(source, target):
        src = source.round(k) if source is not None else []
        tgt = target.round(k) if target is not None else []
        pairs: list[tuple[str, ToolCall | None, ToolCall | None]] = []
        for tag, i1, i2, j1, j2 in _name_opcodes(tuple(c.tool_name for c in src), tuple(c.tool_name for c in tgt)):
            if tag == "equal":
                for a, b in zip(src[i1:i2], tgt[j1:j2]):
                    pairs.append(("same" if a.arguments == b.arguments else "changed", a, b))
                continue
            # A replaced stretch is shown pairwise (one slot, two different calls), the rest alone.
            left, right = src[i1:i2], tgt[j1:j2]
            pairs.extend(("replaced", a, b) for a, b in zip(left, right))
            pairs.extend(("removed", a, None) for a in left[len(right):])
            pairs.extend(("added", None, b) for b in right[len(left):])
        if not pairs:
            pairs.append(("same", None, None))
        for op, a, b in pairs:
            s_text = _call_text(a) if a is not None else None
            t_text = _call_text(b) if b is not None else None
            prefix = f"Round {k}: " if multi else ""
            if a is None and b is None:
                text = f"{prefix}(no tool calls) → (no tool calls)"
            else:
                text = f"{prefix}{s_text or '—'} → {t_text or '—'}"
            item: dict[str, Any] = {"op": op, "source": s_text, "target": t_text, "text": text}
            if multi:
                item["round"] = k
            items.append(item)
    return items


def text_diff(source: str | None, target: str | None) -> list[list[str]]:
    """Word-level diff as ``[op, text]`` segments (op: ``=`` kept, ``-`` source only, ``+`` target only)."""
    # A word keeps its trailing space so a changed phrase diffs as one block, not word/space/word.
    a = re.findall(r"\S+\s*|\s+", cap(source or "", _DIFF_TEXT_CAP) or "")
    b = re.findall(r"\S+\s*|\s+", cap(target or "", _DIFF_TEXT_CAP) or "")
    out: list[list[str]] = []

    def push(op: str, text: str) -> None:
        if not text:
            return
        if out and out[-1][0] == op:
            out[-1][1] += text
        else:
            out.append([op, text])

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            push("=", "".join(a[i1:i2]))
        else:
            push("-", "".join(a[i1:i2]))
            push("+", "".join(b[j1:j2]))
    return out


def field_explanations(metadata: Mapping[str, Any]) -> list[str]:
    """``tool.field: source → target`` for every field tool_arguments scored below 1.

    Values are JSON-rendered so a type change (``12.0 → "12"``) is visible; the side named by a
    field's ``missing`` reads ``(absent)``; under ``against: expected`` the expected value follows.
    A field with a ``round`` (multi-round pairs) is prefixed ``Round k:``.
    """
    out: list[str] = []
    entries: list[tuple[Any, Any]] = [(None, f) for f in metadata.get("fields") or []]
    for r in metadata.get("rounds") or []:
        if isinstance(r, Mapping):
            entries.extend((r.get("round"), f) for f in r.get("fields") or [])
    for round_k, f in entries:
        if not isinstance(f, Mapping):
            continue
        score = f.get("score")
        if isinstance(score, (int, float)) and score >= 1.0:
            continue
        k = f.get("round", round_k)
        prefix = f"Round {k}: " if k is not None else ""
        name = f"{f['tool']}.{f.get('field')}" if f.get("tool") else str(f.get("field"))
        missing = f.get("missing")

        def shown(side: str, f: Mapping[str, Any] = f, missing: Any = missing) -> str:
            if missing == side or side not in f:
                return "(absent)"
            return cap(_json_text(f[side]), _ARGS_CAP) or ""

        if f.get("message"):  # a schema violation: what the schema says is wrong, not a diff
            out.append(f"{prefix}{name}: {cap(str(f['message']), _ARGS_CAP)} [{f.get('label')}]")
            continue
        line = f"{prefix}{name}: {shown('source')} → {shown('target')}"
        if "expected" in f:
            line += f" (expected {shown('expected')})"
        if f.get("label"):
            line += f" [{f['label']}]"
        out.append(line)
    return out


def _notes(metadata: Mapping[str, Any]) -> list[str]:
    """An evaluator's own explanation of a score (``reason``, ``missing_calls``), per round too."""
    notes = []
    rounds = [(None, metadata)] + [(r.get("round"), r) for r in metadata.get("rounds") or [] if isinstance(r, Mapping)]
    for k, md in rounds:
        prefix = f"Round {k}: " if k is not None else ""
        if md.get("reason") and not md.get("skipped"):
            notes.append(f"{prefix}{md['reason']}")
        if md.get("missing_calls"):
            notes.append(f"{prefix}missing calls: {', '.join(map(str, md['missing_calls']))}")
    return list(dict.fromkeys(notes))


def _expected_lines(metadata: Mapping[str, Any]) -> list[str]:
    rounds = metadata.get("rounds")
    if rounds:
        return [
            f"Round {r.get('round')}: {', '.join(map(str, r['expected'])) or '(no tools)'}"
            for r in rounds
            if isinstance(r, Mapping) and isinstance(r.get("expected"), list)
        ]
    if isinstance(metadata.get("expected"), list):
        return [", ".join(map(str, metadata["expected"])) or "(no tools)"]
    return []


def _diverged_rounds(source: Call | None, target: Call | None, regressions: list[Mapping[str, Any]]) -> list[int]:
    """Rounds whose tools differ between the sides, and those where a regressed record's
    per-round scores dropped (``regressions``: each one's metadata); a record without
    per-round scores counts as round 1."""
    traces = [c.trace for c in (source, target) if c is not None and c.trace is not None]
    rounds: set[int] = set()
    if source is not None and target is not None and source.trace is not None and target.trace is not None:
        for k in _round_numbers(*traces):
            if [c.tool_name for c in source.trace.round(k)] != [c.tool_name for c in target.trace.round(k)]:
                rounds.add(k)
    for metadata in regressions:
        per_round = metadata.get("rounds")
        for entry in per_round if isinstance(per_round, list) else []:
            if not isinstance(entry, Mapping):
                continue
            s, t = entry.get("source_score"), entry.get("target_score")
            if isinstance(s, (int, float)) and isinstance(t, (int, float)) and t < s:
                rounds.add(int(entry.get("round") or 1))
        if not per_round:
            rounds.add(1)
    return sorted(rounds)


def _tools_differ(source: Call | None, target: Call | None) -> bool:
    if source is None or target is None or source.trace is None or target.trace is None:
        return source is not target
    return source.trace.names() != target.trace.names()


def _fixture_lines(example: Example) -> list[str]:
    lines = []
    for k, results in enumerate(example.tool_result_fixtures or [], start=1):
        for fx in results:
            value = fx.result if isinstance(fx.result, str) else _json_text(fx.result)
            shown = f"error {_json_text(fx.error)}" if fx.error else cap(value, _ARGS_CAP)
            lines.append(f"Round {k}: {fx.tool_name} → {shown}")
    return lines


def _severity_rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else -1


def _banners(analysis: Analysis, dropped: Mapping[str, Counter[str]]) -> list[dict[str, str]]:
    """The banners above the tables; ``dropped`` counts, per model, the request settings it could
    not honour (:func:`~evalshift_core.store._rows.dropped_params`)."""
    banners: list[dict[str, str]] = []
    if dropped:
        what = "; ".join(
            f"{model} dropped " + ", ".join(f"{p} on {n} call{'s' * (n != 1)}" for p, n in sorted(params.items()))
            for model, params in sorted(dropped.items())
        )
        banners.append({"title": "Constraints not honoured", "detail": f"{what}. {BANNER_DETAILS['constraints not honoured']}"})
    for title in analysis.banners:
        key = next((k for k in BANNER_DETAILS if title.lower().startswith(k)), None)
        banners.append({"title": title, "detail": BANNER_DETAILS[key] if key else ""})
    unknown = [c for c in analysis.comparisons if c.status == "unknown"]
    if unknown and not any(b["title"].lower().startswith("nothing measured") for b in banners):
        names = ", ".join(c.label for c in unknown)
        banners.append({"title": "Nothing measured", "detail": f"{names}: {BANNER_DETAILS['nothing measured']}"})
    return banners


def comparison_name(c: Mapping[str, Any]) -> str:
    """``type.name`` plus `` (side)`` of a comparison in its JSON form (a distribution, a table row)."""
    name = f"{c.get('evaluator')}.{c.get('name')}"
    return name + (f" ({c['side']})" if c.get("side") else "")


_OUTCOMES = {(1.0, 1.0): "held", (1.0, 0.0): "lost", (0.0, 1.0): "gained", (0.0, 0.0): "missed"}


class ScoreBins:
    """Per comparison, both sides' scores in ``bins`` bins and the pairs' outcomes, counted score
    by score (:func:`distributions` over a whole run at once)."""

    def __init__(self, bins: int = 10) -> None:
        self.bins = bins
        self.groups: dict[tuple[str, str, str | None], dict[str, Any]] = {}

    def add(self, s: Any) -> None:
        """One ``scores.jsonl`` row or ScoreRecord; a skipped one counts nowhere."""
        if isinstance(s, Mapping):
            if s.get("skipped"):
                return
            key = (s["evaluator"], s["name"], s.get("side"))
            source, target = s.get("source_score"), s.get("target_score")
        else:  # a ScoreRecord, read field by field
            if s.skipped:
                return
            key = (s.evaluator, s.name, s.side)
            source, target = s.source_score, s.target_score
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = {"source": [0] * self.bins, "target": [0] * self.bins, "pairs": Counter()}
        bins = self.bins
        for side, value in (("source", source), ("target", target)):
            if isinstance(value, (int, float)) and math.isfinite(value):
                g[side][min(bins - 1, max(0, int(value * bins)))] += 1
        outcome = _OUTCOMES.get((source, target))  # type: ignore[arg-type]
        g["pairs"][outcome or "graded"] += 1

    def merge(self, other: ScoreBins) -> None:
        """Count ``other``'s scores too, as if they came after this one's."""
        for key, theirs in other.groups.items():
            mine = self.groups.setdefault(key, {"source": [0] * self.bins, "target": [0] * self.bins,
                                                "pairs": Counter()})
            for side in ("source", "target"):
                mine[side] = [a + b for a, b in zip(mine[side], theirs[side])]
            mine["pairs"].update(theirs["pairs"])

    def result(self) -> list[dict[str, Any]]:
        return [
            {"evaluator": e, "name": n, "side": side, "bins": self.bins, "source": g["source"], "target": g["target"],
             "binary": "graded" not in g["pairs"],
             "pairs": {k: g["pairs"][k] for k in ("held", "lost", "gained", "missed")} if "graded" not in g["pairs"] else None}
            for (e, n, side), g in self.groups.items()
        ]


def distributions(scores: Iterable[Any], bins: int = 10) -> list[dict[str, Any]]:
    """Per comparison, both sides' scores in ``bins`` bins; a comparison whose every score is 0 or 1
    is ``binary`` and also counts its pairs as held, lost, gained and missed (by both)."""
    counted = ScoreBins(bins)
    for s in scores:
        counted.add(s)
    return counted.result()


def _label_items(labels: Mapping[str, LabelSummary]) -> list[dict[str, Any]]:
    """``{label, where, count}`` per label and argument field (else tool), most examples first."""
    items = []
    for label, info in labels.items():
        where = info.by_field or info.by_tool
        if where:
            items.extend({"label": label, "where": k, "count": int(v)} for k, v in where.items())
        else:
            items.append({"label": label, "where": None, "count": info.count})
    return sorted(items, key=lambda i: (-i["count"], i["label"], i["where"] or ""))


class RowTally:
    """What the report says of its rows as a whole (filters, per-round counts), row by row."""

    def __init__(self) -> None:
        self.rows = 0
        self.regressed = 0
        self.labels: set[str] = set()
        self.tags: set[str] = set()
        self.severities: set[str | None] = set()
        self.rounds = 1
        self.first: Counter[int] = Counter()
        self.diverged: Counter[int] = Counter()

    def add(self, row: Mapping[str, Any]) -> None:
        self.rows += 1
        self.regressed += bool(row["regressions"])
        self.labels.update(row["labels"])
        self.tags.update(row["tags"])
        self.severities.add(row["severity"])
        self.rounds = max(self.rounds, int(row.get("rounds") or 1))
        diverged = row.get("diverged_rounds") or []
        if diverged:
            self.first[min(diverged)] += 1
            self.diverged.update(diverged)

    def merge(self, other: RowTally) -> None:
        """Count ``other``'s rows too (the rows another process tallied)."""
        self.rows += other.rows
        self.regressed += other.regressed
        self.labels |= other.labels
        self.tags |= other.tags
        self.severities |= other.severities
        self.rounds = max(self.rounds, other.rounds)
        self.first += other.first
        self.diverged += other.diverged

    def round_counts(self) -> list[dict[str, int]]:
        """Multi-round runs: per round, the examples whose divergence starts there and all that diverge there."""
        if self.rounds <= 1:
            return []
        return [{"round": k, "first": self.first[k], "diverged": self.diverged[k]} for k in range(1, self.rounds + 1)]

    def filters(self) -> dict[str, Any]:
        return {
            "labels": sorted(self.labels),
            "tags": sorted(self.tags),
            "severities": [s for s in SEVERITIES if s in self.severities],
            "rounds": self.rounds,
        }


def as_analysis(analysis: Analysis | Mapping[str, Any]) -> Analysis:
    """An :class:`Analysis` as it is; a mapping in ``analysis.json``'s shape validated into one."""
    return analysis if isinstance(analysis, Analysis) else Analysis.model_validate(analysis)


def row_order(row: Mapping[str, Any]) -> tuple[bool, int]:
    """Where a row goes: regressions first, most severe first (then suite order, the sort being stable)."""
    return not row["regressions"], -_severity_rank(row["severity"])


def example_row(
    ex: Example,
    src: Call | None,
    tgt: Call | None,
    regressions: Iterable[Regression] = (),
    severity_of: Mapping[tuple[str, str, str | None], str | None] | None = None,
) -> dict[str, Any]:
    """One example's row of the report: what each side called and said, and its regressions
    (``severity_of`` gives each comparison's severity, by ``(evaluator, name, side)``)."""
    regs, metadata = [], []
    for r in regressions:
        md = r.metadata
        metadata.append(md)
        entry: dict[str, Any] = {
            "evaluator": r.evaluator, "name": r.name, "side": r.side,
            "source_score": r.source_score, "target_score": r.target_score,
            "labels": list(r.labels), "tools": list(r.tools),
            "severity": (severity_of or {}).get((r.evaluator, r.name, r.side)),
            "kind": _row_kind(r.evaluator),
        }
        if expected := _expected_lines(md):
            entry["expected"] = expected
        if fields := field_explanations(md):
            entry["fields"] = fields
        if notes := _notes(md):
            entry["notes"] = notes
        regs.append(entry)
    row: dict[str, Any] = {
        "example_id": ex.id,
        "tags": ex.tags,
        "input": ex.inputs.get("input", ex.inputs or None),
        "tools_called": tools_called(src, tgt),
        "source_text": src.text if src else None,
        "target_text": tgt.text if tgt else None,
        "errors": [f"{c.role}: {c.error}" for c in (src, tgt) if c is not None and c.error],
        "labels": sorted({lab for r in regs for lab in r["labels"]}),
        "severity": max((r["severity"] for r in regs), key=_severity_rank, default=None),
        "changed": bool(regs) or _tools_differ(src, tgt),
        "regressions": regs,
    }
    traces = [c.trace for c in (src, tgt) if c is not None]
    if _is_multi_round(*traces):
        row["rounds"] = len(_round_numbers(*traces))
        row["diverged_rounds"] = _diverged_rounds(src, tgt, metadata)
    if any(r["kind"] == "trace" for r in regs):
        row["trace_diff"] = trace_diff(src.trace if src else None, tgt.trace if tgt else None)
    if any(r["kind"] == "text" for r in regs):
        row["text_diff"] = text_diff(row["source_text"], row["target_text"])
    if fixtures := _fixture_lines(ex):
        row["tool_results"] = fixtures
    return row


def report_header(
    analysis: Analysis,
    manifest: Mapping[str, Any],
    tool_calls: Mapping[str, Any],
    dropped: Mapping[str, Counter[str]],
    score_distributions: list[dict[str, Any]] | None,
    rows: RowTally,
) -> dict[str, Any]:
    """Everything report.json holds but its rows, in its key order (``examples`` last, empty)."""
    a = analysis
    # The chart agrees with the labels table: the analysis's counts when it has them.
    label_counts = Counter({k: v.count for k, v in a.labels.items()}) or Counter(
        lab for r in a.regressions for lab in r.labels)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "run": dict(manifest),
        "verdict": a.verdict,
        # analysis.json from before the headline gets one told from the same counts
        "headline": a.headline or headline(a, tool_calls),
        "reasons": list(a.reasons),
        "banners": _banners(a, dropped),
        "analysis": a.model_dump(mode="json", exclude={"regressions"}),
        "dropped_params": sorted({p for params in dropped.values() for p in params}),
        "charts": {
            "tool_calls": dict(tool_calls),
            "rounds": rows.round_counts(),
            "labels": _label_items(a.labels),
            "distributions": score_distributions,
            "regressions_by_label": dict(label_counts.most_common()),
        },
        "filters": rows.filters(),
        "examples": [],
    }


def severities(analysis: Analysis) -> dict[tuple[str, str, str | None], str | None]:
    """Each comparison's severity by ``(evaluator, name, side)``."""
    return {(c.evaluator, c.name, c.side): c.severity for c in analysis.comparisons}


def regressions_by_example(analysis: Analysis) -> dict[str, list[Regression]]:
    regressed: dict[str, list[Regression]] = {}
    for r in analysis.regressions:
        regressed.setdefault(r.example_id, []).append(r)
    return regressed


def build_report(
    analysis: Analysis | Mapping[str, Any],
    examples: list[Example],
    calls: list[Call],
    manifest: Mapping[str, Any],
    scores: Iterable[Any] | None = None,
    *,
    tool_calls: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Gather everything the report shows into the ``report.json`` shape.

    ``tool_calls`` are the run's per-tool counts when the caller has them (counted here otherwise).

    ``scores`` (``scores.jsonl`` rows or ScoreRecords) is optional; without it the report has no
    score distributions. Single-shot rows carry no ``rounds`` key (seed 001, "Picking an evaluator").
    Rows come regressions first, most severe first, then in suite order. ``analysis`` may also be a
    mapping in ``analysis.json``'s shape, validated into an :class:`Analysis`.
    """
    from ..store._rows import dropped_params, pair_rows

    a = as_analysis(analysis)
    severity_of = severities(a)
    regressed = regressions_by_example(a)
    rows = [
        example_row(ex, src, tgt, regressed.get(ex.id, ()), severity_of)
        for ex, src, tgt, _ in tracked(pair_rows(examples, calls), len(examples), "build report", unit="example")
    ]
    rows.sort(key=row_order)
    tally = RowTally()
    for row in rows:
        tally.add(row)
    tool_calls = dict(tool_calls) if tool_calls is not None else tool_use(examples, calls).as_dict()
    report = report_header(a, manifest, tool_calls, dropped_params(calls),
                           distributions(scores) if scores is not None else None, tally)
    report["examples"] = rows
    return report
