"""``semantic``: does the target's answer mean what the source's meant? (embedding cosine).

Runs offline on CPU (see :mod:`._embeddings`). Both-empty pairs are skipped at 1.0/1.0 with
``metadata.skipped``; a target that went silent where the source answered is still scored.
"""

from __future__ import annotations

from typing import Any

from ._base import Pair, ScoreRecord, TextEvaluator, is_number
from ._embeddings import DEFAULT_MODEL, Embedder, get_embedder
from ._text import TEXT_DRIFT, answer_text, empty_labels

DEFAULT_THRESHOLD = 0.8
"""Similarity below which a pair is labelled TEXT_DRIFT."""


class Semantic(TextEvaluator):
    """Cosine similarity of the two answers' sentence embeddings; the source is the reference."""

    type_name = "semantic"
    options = frozenset({"model", "threshold"})
    reads_text = True
    # Seed 000: a both-empty pair is skipped at 1.0/1.0 rather than erroring on an empty embedding input.
    skipped_details = ("model",)

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.model = str(config.get("model", DEFAULT_MODEL))
        if self.model != DEFAULT_MODEL:
            raise ValueError(f"unknown embedding model {self.model!r} (available: {DEFAULT_MODEL})")
        threshold = config.get("threshold", DEFAULT_THRESHOLD)
        if not is_number(threshold) or not 0 <= threshold <= 1:
            raise ValueError(f"threshold must be a number in [0, 1], not {threshold!r}")
        self.threshold = float(threshold)

    def compares_to_source(self, side: str | None) -> bool:
        return True

    @property
    def embedder(self) -> Embedder:
        return get_embedder(self.model)

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity in [0, 1]; also what ``tool_arguments``' semantic fields borrow."""
        return self.embedder.similarity(a, b)

    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        src, tgt = answer_text(pair.source), answer_text(pair.target)
        sim = self.similarity(src, tgt)
        labels = empty_labels(src, tgt)
        if not labels and sim < self.threshold:
            labels.append(TEXT_DRIFT)
        return [self.record(pair.example, source_score=1.0, target_score=sim, labels=labels,
                            metadata={"model": self.model, "similarity": sim})]
