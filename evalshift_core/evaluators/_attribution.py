"""Which tools and argument fields a score record's labels point at.

Reads the evaluators' agreed metadata: ``label_tools`` (each label on the tools that earned it),
tool name lists (per round under ``rounds``), ``missing_calls``, and ``fields`` entries
``{"tool", "field", "source", "target", "score", "label"}`` for arguments. A label is attributed
only to the tools that earned it, never to every tool a record involves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from ._records import ScoreRecord

SELECTION_LABELS = frozenset({"TOOL_SELECTION_DRIFT", "TOOL_ORDER_DRIFT", "UNNECESSARY_TOOL_CALL"})
"""Labels about which tools were called: read off the name lists when a record has no ``label_tools``."""


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


def missing_calls(record: ScoreRecord) -> list[str]:
    """Expected or source calls the target never made (``tool_arguments``), across rounds."""
    out: list[str] = []
    for entry in _rounds(record.metadata):
        out.extend(n for n in _names(entry.get("missing_calls")) if n not in out)
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
    for name in _names(record.metadata.get("tools")):
        if name not in out:
            out.append(name)
    return out


def attribution(record: ScoreRecord, label: str) -> tuple[list[str], list[str]]:
    """The tools and ``tool.field`` names one label of a record points at.

    In order: the evaluator's own ``label_tools``; argument fields carrying the label (a field
    entry without a label of its own inherits the row's only label); the calls ``tool_arguments``
    found missing; the name lists of a selection difference. Anything else points at no tool.
    """
    fields = list(field_entries(record))
    labelled = [f for f in fields if f.get("label") == label]
    if not labelled and len(record.labels) == 1:
        labelled = [f for f in fields if not f.get("label")]
    keys = list(dict.fromkeys(f"{f['tool']}.{f.get('field')}" for f in labelled if f.get("field") is not None))
    by_label = record.metadata.get("label_tools")
    if isinstance(by_label, dict) and label in by_label:
        return _names(by_label[label]), keys
    if labelled:
        return list(dict.fromkeys(str(f["tool"]) for f in labelled)), keys
    if label == "TOOL_SELECTION_DRIFT":
        missing = missing_calls(record)
        if missing:
            return missing, []
    if label in SELECTION_LABELS:
        return selection_tools(record), []
    return [], []
