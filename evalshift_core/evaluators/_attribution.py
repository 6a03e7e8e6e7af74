"""Which tools and argument fields a score record's labels point at.

Reads the evaluators' agreed metadata: ``label_tools`` (each label on the tools that earned it),
tool name lists (per round under ``rounds``), ``missing_calls``, and ``fields`` entries
``{"tool", "field", "source", "target", "score", "label"}`` for arguments. A label is attributed
only to the tools that earned it, never to every tool a record involves.

:func:`attribute` reads a record once for all its labels; :func:`tools_of` and
:func:`attribution` answer one question each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

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


def _excess(a: list[str], b: list[str]) -> list[str]:
    """Names ``a`` holds more often than ``b``, in first-seen order (``Counter(a) - Counter(b)``)."""
    if not a or not b:
        return list(dict.fromkeys(a))
    counts: dict[str, int] = {}
    for name in a:
        counts[name] = counts.get(name, 0) + 1
    for name in b:
        if name in counts:
            counts[name] -= 1
    return [name for name, n in counts.items() if n > 0]


def round_differs(entry: dict[str, Any]) -> bool:
    """True when this round's target scored below its source (no scores: assume it did)."""
    if entry.get("skipped"):
        return False
    s, t = entry.get("source_score"), entry.get("target_score")
    if isinstance(s, (int, float)) and isinstance(t, (int, float)):
        return t < s
    return True


def _selection_tools(rounds: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for entry in rounds:
        if not round_differs(entry):
            continue
        ref = _names(entry["expected"]) if "expected" in entry else _names(entry.get("source"))
        tgt = _names(entry.get("target"))
        if ref == tgt:
            continue  # nothing missing, extra or reordered
        names = _excess(ref, tgt) + _excess(tgt, ref)
        if not names:
            names = [a for a, b in zip(ref, tgt) if a != b]
        for n in names:
            if n not in out:
                out.append(n)
    return out


def selection_tools(record: ScoreRecord) -> list[str]:
    """Tools a selection difference involves: missing and extra calls, else reordered ones."""
    return _selection_tools(_rounds(record.metadata))


def _missing_calls(rounds: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for entry in rounds:
        for n in _names(entry.get("missing_calls")):
            if n not in out:
                out.append(n)
    return out


def missing_calls(record: ScoreRecord) -> list[str]:
    """Expected or source calls the target never made (``tool_arguments``), across rounds."""
    return _missing_calls(_rounds(record.metadata))


def _field_entries(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in rounds:
        fields = entry.get("fields")
        if not isinstance(fields, list):
            continue
        for f in fields:
            if not isinstance(f, dict) or f.get("tool") is None:
                continue
            score = f.get("score")
            if f.get("label") or (isinstance(score, (int, float)) and score < 1.0):
                out.append(f)
    return out


def field_entries(record: ScoreRecord) -> Iterator[dict[str, Any]]:
    """Argument fields that drifted (``score`` below 1 or a ``label`` set), across rounds."""
    return iter(_field_entries(_rounds(record.metadata)))


class Attribution(NamedTuple):
    """What one record's difference involves: every tool, and what each of its labels points at."""

    tools: list[str]
    """Every tool the difference involves, in first-seen order (:func:`tools_of`)."""
    labels: dict[str, tuple[list[str], list[str]]]
    """Each label asked for -> its tools and ``tool.field`` names (:func:`attribution`)."""


class _Reading:
    """One record's metadata read once: its rounds, drifted fields and selection difference."""

    __slots__ = ("_selection", "fields", "record", "rounds")

    def __init__(self, record: ScoreRecord) -> None:
        self.record = record
        self.rounds = _rounds(record.metadata)
        self.fields = _field_entries(self.rounds)
        self._selection: list[str] | None = None

    def selection(self) -> list[str]:
        if self._selection is None:
            self._selection = _selection_tools(self.rounds)
        return list(self._selection)

    def tools(self) -> list[str]:
        out = self.selection()
        for f in self.fields:
            if str(f["tool"]) not in out:
                out.append(str(f["tool"]))
        for name in _names(self.record.metadata.get("tools")):
            if name not in out:
                out.append(name)
        return out

    def label(self, label: str) -> tuple[list[str], list[str]]:
        labelled: list[dict[str, Any]] = []
        keys: list[str] = []
        if self.fields:  # most records drifted on no argument field
            labelled = [f for f in self.fields if f.get("label") == label]
            if not labelled and len(self.record.labels) == 1:
                labelled = [f for f in self.fields if not f.get("label")]
            keys = list(dict.fromkeys(f"{f['tool']}.{f.get('field')}" for f in labelled if f.get("field") is not None))
        by_label = self.record.metadata.get("label_tools")
        if isinstance(by_label, dict) and label in by_label:
            return _names(by_label[label]), keys
        if labelled:
            return list(dict.fromkeys(str(f["tool"]) for f in labelled)), keys
        if label == "TOOL_SELECTION_DRIFT":
            missing = _missing_calls(self.rounds)
            if missing:
                return missing, []
        if label in SELECTION_LABELS:
            return self.selection(), []
        return [], []


def tools_of(record: ScoreRecord) -> list[str]:
    """Every tool a record's difference involves, in first-seen order."""
    return _Reading(record).tools()


def attribution(record: ScoreRecord, label: str) -> tuple[list[str], list[str]]:
    """The tools and ``tool.field`` names one label of a record points at.

    In order: the evaluator's own ``label_tools``; argument fields carrying the label (a field
    entry without a label of its own inherits the row's only label); the calls ``tool_arguments``
    found missing; the name lists of a selection difference. Anything else points at no tool.
    """
    return _Reading(record).label(label)


def attribute(record: ScoreRecord, labels: Iterable[str]) -> Attribution:
    """:func:`tools_of` the record and :func:`attribution` of each of ``labels``, reading it once."""
    reading = _Reading(record)
    return Attribution(reading.tools(), {label: reading.label(label) for label in labels})
