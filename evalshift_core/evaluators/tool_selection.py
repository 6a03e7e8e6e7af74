"""``tool_selection``: did the model call the right tools? (seed 000, "tool_selection").

Conformance modes grade each side against the example's ground truth; divergence modes grade
the target against the source. Configure one ``mode:``, or ``conformance:`` and ``divergence:``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._models import Example, ToolTrace
from ._base import (
    Pair,
    ScoreRecord,
    ToolEvaluator,
    call_names,
    ground_truth_labels,
    new_record,
    replayed_rounds,
    round_calls,
)

MODES = ("expected", "expected_set", "exact", "set", "first")
# Modes whose reference is the ground truth when given as the plain ``mode:``.
GROUND_TRUTH_MODES = frozenset({"expected", "expected_set"})
DIVERGENCE_MODES = frozenset({"exact", "set", "first"})


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two name sequences."""
    # A common prefix or suffix is part of some longest common subsequence: count it and run
    # the quadratic table on what differs only (one dropped, added or moved call, mostly).
    n = min(len(a), len(b))
    lo = 0
    while lo < n and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    a = a[lo:len(a) - hi]
    b = b[lo:len(b) - hi]
    if not a or not b:
        return lo + hi
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        left = 0  # cur[j - 1]
        for j, y in enumerate(b):
            if x == y:
                left = prev[j] + 1
            elif prev[j + 1] > left:
                left = prev[j + 1]
            cur.append(left)
        prev = cur
    return lo + hi + prev[-1]


def in_order_score(actual: list[str], expected: list[str]) -> float:
    """Expected calls matched in order: LCS over the longer of the two sequences."""
    if actual == expected:
        return 1.0
    return lcs_length(actual, expected) / max(len(actual), len(expected))


def multiset_recall(actual: list[str], expected: list[str]) -> float:
    """Share of the expected calls made, counting repeats (order-insensitive)."""
    if not expected:
        return 1.0 if not actual else 0.0
    hits = sum((Counter(actual) & Counter(expected)).values())
    return hits / len(expected)


def jaccard(a: list[str], b: list[str]) -> float:
    """Jaccard similarity of the two tool-name sets (1.0 when both are empty)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def compare_names(mode: str, actual: list[str], reference: list[str]) -> float:
    """Score ``actual`` tool names against ``reference`` under ``mode``, in [0, 1]."""
    if mode == "expected":
        return in_order_score(actual, reference)
    if mode == "expected_set":
        return multiset_recall(actual, reference)
    if mode == "exact":
        return 1.0 if actual == reference else 0.0
    if mode == "set":
        return jaccard(actual, reference)
    if mode == "first":
        return 1.0 if actual[:1] == reference[:1] else 0.0
    raise ValueError(f"unknown tool_selection mode {mode!r}")


def drift_label(actual: list[str], reference: list[str]) -> str:
    """The seed's label for a selection difference."""
    if not reference and actual:
        return "UNNECESSARY_TOOL_CALL"
    if sorted(actual) == sorted(reference):
        return "TOOL_ORDER_DRIFT"
    return "TOOL_SELECTION_DRIFT"


class ToolSelection(ToolEvaluator):
    """Which tools were called, against ground truth (conformance) or the source (divergence)."""

    type_name = "tool_selection"
    options = frozenset({"mode", "conformance", "divergence"})

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        # (side, mode, against_ground_truth)
        sides: list[tuple[str | None, str, bool]] = []
        if config.get("conformance") is not None or config.get("divergence") is not None:
            if "mode" in config:
                raise ValueError("set either mode or conformance/divergence, not both")
            if config.get("conformance") is not None:
                sides.append(("conformance", self._mode(config["conformance"]), True))
            if config.get("divergence") is not None:
                mode = self._mode(config["divergence"])
                if mode not in DIVERGENCE_MODES:
                    raise ValueError(f"divergence compares target to source: use exact, set or first, not {mode!r}")
                sides.append(("divergence", mode, False))
        else:
            mode = self._mode(config.get("mode", "expected"))
            sides.append((None, mode, mode in GROUND_TRUTH_MODES))
        self.sides = sides

    def compares_to_source(self, side: str | None) -> bool:
        return any(not truth for s, _mode, truth in self.sides if s == side)

    def _mode(self, value: Any) -> str:
        mode = str(value)
        if mode not in MODES:
            raise ValueError(f"unknown tool_selection mode {mode!r} (known: {', '.join(MODES)})")
        return mode


    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        if not pair.single_shot:
            return self._score_general(pair)
        # ``_score_side`` of a single-shot pair, on the pair's name tuples (the common case).
        example = pair.example
        src = pair.source_names
        tgt = pair.target_names
        out: list[ScoreRecord] = []
        for side, mode, truth in self.sides:
            if not truth:
                # Divergence: the source is the yardstick, so its own score is 1.0 by construction.
                if tgt == src:
                    t_score, labels = 1.0, []
                else:
                    t_score = compare_names(mode, tgt, src)
                    labels = [drift_label(tgt, src)] if t_score < 1.0 else []
                out.append(new_record(example.id, self.type_name, self.name, side, 1.0, t_score, False, labels,
                                      {"mode": mode, "source": list(src), "target": list(tgt)}))
                continue
            if example.expected_no_tools:
                # Seed 000: expected_no_tools scores 1.0 if and only if zero calls were made.
                ref: tuple[str, ...] = ()
                s_score = 1.0 if not src else 0.0
                t_score = 1.0 if not tgt else 0.0
            else:
                ref = pair.expected_names
                if ref is None:
                    out.append(self.record(
                        example, side=side, source_score=1.0, target_score=1.0, skipped=True,
                        metadata={"mode": mode, "skipped": True, "reason": "no expected_tools on this example"},
                    ))
                    continue
                # Identical name sequences score 1.0 in every mode.
                s_score = 1.0 if src == ref else compare_names(mode, src, ref)
                t_score = 1.0 if tgt == ref else compare_names(mode, tgt, ref)
            labels = ground_truth_labels(s_score, t_score, [drift_label(tgt, ref)] if t_score < s_score else ())
            out.append(new_record(example.id, self.type_name, self.name, side, s_score, t_score, False, labels,
                                  {"mode": mode, "expected": list(ref), "source": list(src), "target": list(tgt)}))
        return out

    def _score_general(self, pair: Pair) -> list[ScoreRecord]:
        """Round by round on the plain traces: what ``score_pair`` shortcuts (tests compare)."""
        rounds = replayed_rounds(pair.source, pair.target)
        return [
            self._score_side(pair.example, pair.source, pair.target, side, mode, truth, rounds)
            for side, mode, truth in self.sides
        ]

    def _grade_round(
        self, example: Example, source: ToolTrace, target: ToolTrace, k: int, mode: str, truth: bool
    ) -> tuple[dict[str, Any], list[str]]:
        src = call_names(round_calls(source, k))
        tgt = call_names(round_calls(target, k))
        labels: list[str] = []
        if truth:
            if example.expected_no_tools:
                # Seed 000: expected_no_tools scores 1.0 if and only if zero calls were made.
                ref: list[str] = []
                s_score = 1.0 if not src else 0.0
                t_score = 1.0 if not tgt else 0.0
            else:
                expected = example.expected_round(k)
                if expected is None:
                    return {"round": k, "skipped": True, "source": src, "target": tgt}, labels
                ref = call_names(expected)
                s_score = compare_names(mode, src, ref)
                t_score = compare_names(mode, tgt, ref)
            if t_score < s_score:
                labels.append(drift_label(tgt, ref))
            return {"round": k, "expected": ref, "source": src, "target": tgt,
                    "source_score": s_score, "target_score": t_score}, labels
        # Divergence: the source is the yardstick, so its own score is 1.0 by construction.
        t_score = compare_names(mode, tgt, src)
        if t_score < 1.0:
            labels.append(drift_label(tgt, src))
        return {"round": k, "source": src, "target": tgt, "source_score": 1.0, "target_score": t_score}, labels

    def _score_side(
        self,
        example: Example,
        source: ToolTrace,
        target: ToolTrace,
        side: str | None,
        mode: str,
        truth: bool,
        rounds: list[int] | None,
    ) -> ScoreRecord:
        if rounds is None:  # single-shot: the reference the tests hold score_pair's own loop equal to
            entry, labels = self._grade_round(example, source, target, 1, mode, truth)
            if entry.get("skipped"):
                return self.record(
                    example, side=side, source_score=1.0, target_score=1.0, skipped=True,
                    metadata={"mode": mode, "skipped": True, "reason": "no expected_tools on this example"},
                )
            metadata = {"mode": mode, "expected": entry["expected"]} if truth else {"mode": mode}
            metadata["source"] = entry["source"]
            metadata["target"] = entry["target"]
            if truth:
                labels = ground_truth_labels(entry["source_score"], entry["target_score"], labels)
            return self.record(example, side=side, source_score=entry["source_score"],
                               target_score=entry["target_score"], labels=labels, metadata=metadata)
        per_round: list[dict[str, Any]] = []
        labels = []
        for k in rounds:
            entry, round_labels = self._grade_round(example, source, target, k, mode, truth)
            per_round.append(entry)
            labels.extend(round_labels)
        scored = [r for r in per_round if not r.get("skipped")]
        if not scored:
            return self.record(
                example, side=side, source_score=1.0, target_score=1.0, skipped=True,
                metadata={"mode": mode, "skipped": True, "reason": "no expected_tools on this example"},
            )
        metadata = {"mode": mode, "rounds": per_round}
        s_score = sum(r["source_score"] for r in scored) / len(scored)
        t_score = sum(r["target_score"] for r in scored) / len(scored)
        return self.record(
            example,
            side=side,
            source_score=s_score,
            target_score=t_score,
            labels=ground_truth_labels(s_score, t_score, labels) if truth else list(dict.fromkeys(labels)),
            metadata=metadata,
        )
