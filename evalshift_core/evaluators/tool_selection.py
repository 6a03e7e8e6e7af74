"""``tool_selection``: did the model call the right tools? (seed 000, "tool_selection").

Modes: ``expected`` (default; both sides against ``expected_tools``, in order), ``expected_set``
(multiset recall), ``exact`` and ``set`` (target against source), ``first``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._models import Example, ExpectedToolCall, ToolTrace
from ._base import Evaluator, ScoreRecord

CONFORMANCE_MODES = {"expected", "expected_set"}
DIVERGENCE_MODES = {"exact", "set", "first"}


def lcs_length(a: list[str], b: list[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def in_order_score(actual: list[str], expected: list[str]) -> float:
    """Expected calls matched in order: LCS over the longer of the two sequences."""
    if not expected and not actual:
        return 1.0
    return lcs_length(actual, expected) / max(len(actual), len(expected))


def multiset_recall(actual: list[str], expected: list[str]) -> float:
    if not expected:
        return 1.0 if not actual else 0.0
    hits = sum((Counter(actual) & Counter(expected)).values())
    return hits / len(expected)


def jaccard(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def compare_names(mode: str, actual: list[str], reference: list[str]) -> float:
    if mode == "expected":
        return in_order_score(actual, reference)
    if mode == "expected_set":
        return multiset_recall(actual, reference)
    if mode == "exact":
        return 1.0 if actual == reference else 0.0
    if mode == "set":
        return jaccard(actual, reference)
    if mode == "first":
        if not actual and not reference:
            return 1.0
        return 1.0 if actual[:1] == reference[:1] else 0.0
    raise ValueError(f"unknown tool_selection mode {mode!r}")


def drift_label(actual: list[str], reference: list[str], *, no_tools_expected: bool) -> str:
    """The seed's label for a selection difference."""
    if no_tools_expected and actual:
        return "UNNECESSARY_TOOL_CALL"
    if actual != reference and Counter(actual) == Counter(reference):
        return "TOOL_ORDER_DRIFT"
    return "TOOL_SELECTION_DRIFT"


def _names(calls: list[Any] | None) -> list[str]:
    return [c.tool_name for c in calls or []]


class ToolSelection(Evaluator):
    type_name = "tool_selection"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        sides: list[tuple[str | None, str]] = []
        if "conformance" in config or "divergence" in config:
            if config.get("conformance"):
                sides.append(("conformance", str(config["conformance"])))
            if config.get("divergence"):
                sides.append(("divergence", str(config["divergence"])))
        else:
            sides.append((None, str(config.get("mode", "expected"))))
        for _, mode in sides:
            if mode not in CONFORMANCE_MODES | DIVERGENCE_MODES:
                raise ValueError(f"tool_selection {self.name!r}: unknown mode {mode!r}")
        self.sides = sides

    def _rounds(self, example: Example, source: ToolTrace, target: ToolTrace) -> list[int]:
        n = max(source.round_count or 1, target.round_count or 1)
        return list(range(1, n + 1))

    def score(self, example: Example, source: ToolTrace, target: ToolTrace) -> list[ScoreRecord]:
        return [self._score_side(example, source, target, side, mode) for side, mode in self.sides]

    def _score_side(
        self, example: Example, source: ToolTrace, target: ToolTrace, side: str | None, mode: str
    ) -> ScoreRecord:
        rounds = self._rounds(example, source, target)
        per_round = []
        labels: list[str] = []
        for k in rounds:
            src = _names(source.round(k))
            tgt = _names(target.round(k))
            if mode in CONFORMANCE_MODES:
                expected_calls: list[ExpectedToolCall] | None = example.expected_round(k)
                no_tools = bool(example.expected_no_tools)
                if expected_calls is None and not no_tools:
                    per_round.append({"round": k, "skipped": True, "source": src, "target": tgt})
                    continue
                ref = [] if no_tools else _names(expected_calls)
                s_score = (1.0 if not src else 0.0) if no_tools else compare_names(mode, src, ref)
                t_score = (1.0 if not tgt else 0.0) if no_tools else compare_names(mode, tgt, ref)
                entry = {"round": k, "source": src, "target": tgt, "expected": ref,
                         "source_score": s_score, "target_score": t_score}
                if t_score < s_score:
                    labels.append(drift_label(tgt, ref, no_tools_expected=no_tools or not ref))
                elif s_score < 1.0 and t_score < 1.0:
                    labels.append("TOOL_GROUND_TRUTH_MISS")
            else:
                s_score = 1.0
                t_score = compare_names(mode, tgt, src)
                entry = {"round": k, "source": src, "target": tgt, "source_score": 1.0, "target_score": t_score}
                if t_score < 1.0:
                    labels.append(drift_label(tgt, src, no_tools_expected=not src))
            per_round.append(entry)
        scored = [r for r in per_round if not r.get("skipped")]
        if not scored:
            return self.record(example, side=side, source_score=1.0, target_score=1.0, skipped=True,
                               metadata={"mode": mode, "reason": "no expected_tools on this example"})
        metadata: dict[str, Any] = {"mode": mode}
        if len(rounds) > 1 or (source.round_count or target.round_count):
            metadata["rounds"] = per_round
        else:
            metadata.update({k: v for k, v in per_round[0].items() if k != "round"})
        return self.record(
            example,
            side=side,
            source_score=sum(r["source_score"] for r in scored) / len(scored),
            target_score=sum(r["target_score"] for r in scored) / len(scored),
            labels=sorted(set(labels), key=labels.index),
            metadata=metadata,
        )
