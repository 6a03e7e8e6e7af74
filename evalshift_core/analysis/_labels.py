"""Per-example failure categories: which tools and argument fields a regression label points at.

Reads the evaluators' agreed metadata: tool name lists (per round under ``rounds``), and
``fields`` entries ``{"tool", "field", "source", "target", "score", "label"}`` for arguments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from ..evaluators import ScoreRecord

TOOL_GROUND_TRUTH_MISS = "TOOL_GROUND_TRUTH_MISS"
REFUSAL_REGRESSION = "REFUSAL_REGRESSION"
UNLABELLED_SCORE_DROP = "UNLABELLED_SCORE_DROP"
"""Failure category of a regressed example whose evaluator attached no label."""


def _rounds(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    rounds = metadata.get("rounds")
    if isinstance(rounds, list) and rounds:
        return [r for r in rounds if isinstance(r, dict)]
    return [metadata]


def _names(value: Any) -> list[str]:
    return [str(x) for x in value] if isinstance(value, list) else []


def round_differs(entry: dict[str, Any]) -> bool:
    """True when this round's target scored below its source (no scores: assume it did)."""
    if entry.get("skipped"):
        return False
    s, t = entry.get("source_score"), entry.get("target_score")
    if isinstance(s, (int, float)) and isinstance(t, (int, float)):
        return t < s
    return True


def diverged(record: ScoreRecord) -> bool:
    """An example diverged when any round diverged (seed 001, max_tool_divergence)."""
    rounds = record.metadata.get("rounds")
    if isinstance(rounds, list) and rounds:
        return any(isinstance(r, dict) and round_differs(r) for r in rounds)
    return record.target_score < record.source_score


def selection_tools(record: ScoreRecord) -> list[str]:
    """Tools a selection difference involves: missing and extra calls, else reordered ones."""
    out: list[str] = []
    for entry in _rounds(record.metadata):
        if not round_differs(entry):
            continue
        ref = _names(entry["expected"]) if "expected" in entry else _names(entry.get("source"))
        tgt = _names(entry.get("target"))
        if not ref and not tgt:
            continue
        missing = Counter(ref) - Counter(tgt)
        extra = Counter(tgt) - Counter(ref)
        names = list(missing) + list(extra)
        if not names and ref != tgt:
            names = [a for a, b in zip(ref, tgt) if a != b]
        out.extend(n for n in names if n not in out)
    return out


def field_entries(record: ScoreRecord) -> Iterator[dict[str, Any]]:
    """Argument fields that drifted (``score`` below 1 or a ``label`` set), across rounds."""
    for entry in _rounds(record.metadata):
        fields = entry.get("fields")
        if not isinstance(fields, list):
            continue
        for f in fields:
            if not isinstance(f, dict) or f.get("tool") is None:
                continue
            score = f.get("score")
            if f.get("label") or (isinstance(score, (int, float)) and score < 1.0):
                yield f


def tools_of(record: ScoreRecord) -> list[str]:
    """Every tool a record's difference involves, in first-seen order."""
    out = selection_tools(record)
    for f in field_entries(record):
        if str(f["tool"]) not in out:
            out.append(str(f["tool"]))
    extra = record.metadata.get("tools")
    for name in _names(extra):
        if name not in out:
            out.append(name)
    return out


def attribution(record: ScoreRecord, label: str) -> tuple[list[str], list[str]]:
    """The tools and ``tool.field`` names one label of a record points at."""
    fields = list(field_entries(record))
    labelled = [f for f in fields if f.get("label") == label]
    # A field entry without its own label inherits the row's only label.
    if not labelled and len(record.labels) == 1:
        labelled = [f for f in fields if not f.get("label")]
    if labelled:
        tools = list(dict.fromkeys(str(f["tool"]) for f in labelled))
        keys = list(dict.fromkeys(f"{f['tool']}.{f.get('field')}" for f in labelled if f.get("field") is not None))
        return tools, keys
    return tools_of(record), []


def is_ground_truth_miss(record: ScoreRecord) -> bool:
    """A shared miss: TOOL_GROUND_TRUTH_MISS and no regression label on the same row."""
    return TOOL_GROUND_TRUTH_MISS in record.labels and all(
        label == TOOL_GROUND_TRUTH_MISS for label in record.labels
    )


def regression_labels(record: ScoreRecord) -> list[str]:
    """The row's labels minus the non-regression TOOL_GROUND_TRUTH_MISS."""
    return [label for label in record.labels if label != TOOL_GROUND_TRUTH_MISS]
