"""``text_match``: the plain text evaluator, ``mode: exact`` or ``mode: contains``.

``exact`` compares the target's answer to the source's; ``contains`` checks that each side's
answer contains every string in ``values`` (or, without values, the target contains the source).
"""

from __future__ import annotations

from typing import Any

from ._base import Pair, ScoreRecord, TextEvaluator
from ._text import TEXT_DRIFT, answer_text, empty_labels


class TextMatch(TextEvaluator):
    """Exact or substring match of the answers' text."""

    type_name = "text_match"
    options = frozenset({"mode", "values", "case_sensitive"})
    reads_text = True
    skipped_details = ("mode",)

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.mode = str(config.get("mode", "exact"))
        if self.mode not in ("exact", "contains"):
            raise ValueError(f"mode must be exact or contains, not {self.mode!r}")
        values = config.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError("values must be a list of strings")
        if values and self.mode != "contains":
            raise ValueError("values only apply to mode: contains")
        self.case_sensitive = bool(config.get("case_sensitive", False))
        self.values = [self._norm(v) for v in values]

    def compares_to_source(self, side: str | None) -> bool:
        return not self.values  # with values, each side is checked against them on its own

    def _norm(self, text: str) -> str:
        text = " ".join(text.split())  # whitespace layout is formatting, not content
        return text if self.case_sensitive else text.casefold()

    def _contains_values(self, text: str) -> float:
        return sum(1 for v in self.values if v in text) / len(self.values)

    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        src_raw, tgt_raw = answer_text(pair.source), answer_text(pair.target)
        src, tgt = self._norm(src_raw), self._norm(tgt_raw)
        if self.mode == "contains" and self.values:
            s, t = self._contains_values(src), self._contains_values(tgt)
        elif self.mode == "contains":
            s, t = 1.0, 1.0 if src and src in tgt else 0.0
        else:
            s, t = 1.0, 1.0 if src == tgt else 0.0
        labels = empty_labels(src_raw, tgt_raw)
        if not labels and t < s:
            labels.append(TEXT_DRIFT)
        return [self.record(pair.example, source_score=s, target_score=t, labels=labels, metadata={"mode": self.mode})]
