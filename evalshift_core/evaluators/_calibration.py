"""A/A baselines for the drift comparisons: the source model's own variability, per example.

A drift comparison scores the target relative to the source (``tool_selection``'s divergence
side, ``tool_arguments`` against the source, ``tool_trace_structure``, ``agent_trace``,
``semantic``, ``text_match`` without values), so the source scores 1.0 by construction and every
difference a non-deterministic model makes between two runs reads as a drop. Here each such
record is scored again against a baseline that treats the source exactly as the target:

- ``recording``: an example promoted from a capture carries what the source model did in
  production. The source replay and the target are each scored against the recording. It
  applies when the recording's model is the configured source model and it recorded what the
  evaluator reads (arguments, answer text); it costs no extra model call.
- ``source_repeats``: the source was replayed N >= 2 times. Repeats 1..N-1 are the references;
  the last repeat is scored against them exactly as the target is.
- ``imported``: ``traces import --baseline`` attached a second source timeline (``agent_trace``
  on imported timelines).

With the reference ``R`` and the source's own second sample ``S``, the record's
``source_score`` is ``score(R -> S)`` and its ``target_score`` is ``score(R -> T)``: under an A/A
migration ``S`` and ``T`` are draws of one model, so the paired difference is symmetric about zero
and the paired test is valid. Its labels are the target's against ``R``; the baseline's own
labels are kept under ``metadata.baseline`` so the analysis can count labels in excess of them.
A drift record with no baseline carries ``metadata.baseline.kind == "none"``: the analysis shows
it as ``uncalibrated`` and never fails a verdict on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._models import Example, ToolCall, ToolTrace
from ._attribution import attribution
from ._base import Evaluator, Pair, ScoreRecord

RECORDING = "recording"
SOURCE_REPEATS = "source_repeats"
IMPORTED = "imported"
UNCALIBRATED = "none"
BASELINES = (RECORDING, SOURCE_REPEATS, IMPORTED)
"""The A/A baselines, in order of preference."""

Timeline = list[dict[str, Any]]


@dataclass
class Samples:
    """What one example has to calibrate with: the source's replays and imported timelines."""

    source_model: str | None = None
    """The configured source model (``provider:name``), to check a recording against."""
    repeats: list[ToolTrace] = field(default_factory=list)
    """Every successful source replay, first replay first (``source_repeats``)."""
    timelines: tuple[Timeline, Timeline] | None = None
    """Imported ``(source, target)`` timelines, when ``traces import`` attached them."""
    baseline_timeline: Timeline | None = None
    """A second imported source timeline (``traces import --baseline``)."""
    _recording: Any = field(default=None, repr=False)

    def recording(self, example: Example) -> ToolTrace | None:
        """:func:`recording_trace` of the example, built once for all its evaluators."""
        if self._recording is None:
            self._recording = (recording_trace(example),)
        return self._recording[0]


def model_name(model: str | None) -> str:
    """A model name without its ``provider:`` or ``models/`` prefix, case-folded."""
    name = (model or "").strip()
    if ":" in name:
        name = name.split(":", 1)[1]
    return name.removeprefix("models/").casefold()


def recording_trace(example: Example) -> ToolTrace | None:
    """The recorded rounds a replay covers, as a ToolTrace, or None when nothing was recorded.

    Shaped like a replay of the example: single-shot without fixtures (round 1's calls), else one
    round per fixture round plus the one after it, each call carrying its ``round_index``.
    """
    if example.recording is None or (example.expected_tool_rounds is None and example.expected_tools is None):
        return None
    multi = bool(example.tool_result_fixtures)
    rounds = example.replay_rounds if multi else 1
    calls: list[ToolCall] = []
    for k in range(1, rounds + 1):
        for expected in example.expected_round(k) or ():
            calls.append(ToolCall(
                tool_name=expected.tool_name,
                arguments=expected.arguments if expected.arguments is not None else {},
                call_id=expected.call_id, sequence_index=len(calls), round_index=k if multi else None,
            ))
    return ToolTrace(calls=calls, final_text=example.recording.text, refusal=example.recording.refusal,
                     round_count=rounds if multi else None)


def recording_unfit(example: Example, evaluator: Evaluator, source_model: str | None) -> str | None:
    """Why the example's recording cannot be this evaluator's baseline, or None when it can.

    ``""`` when there is no recording at all (nothing to say); a reason the report repeats when a
    recording exists but does not fit.
    """
    recording = example.recording
    if recording is None or source_model is None:
        return ""
    if not recording.model or model_name(recording.model) != model_name(source_model):
        return f"recorded from {recording.model or 'an unnamed model'}, not the source model"
    if example.expected_tool_rounds is None and example.expected_tools is None:
        return "recorded no tool calls"
    if evaluator.reads_text and recording.text is None:
        return "recorded no answer text"
    if evaluator.reads_arguments:
        rounds = example.replay_rounds if example.tool_result_fixtures else 1
        if any(e.arguments is None for k in range(1, rounds + 1) for e in example.expected_round(k) or ()):
            return "recorded tool names only (--names-only)"
    return None


def _side(records: list[ScoreRecord], side: str | None) -> ScoreRecord:
    return next(r for r in records if r.side == side)


def _labels_of(record: ScoreRecord) -> dict[str, Any]:
    """The label detail of a baseline sample: labels, and the tools and fields each points at."""
    out: dict[str, Any] = {"labels": list(record.labels)}
    tools: dict[str, list[str]] = {}
    fields: dict[str, list[str]] = {}
    for label in record.labels:
        t, f = attribution(record, label)
        if t:
            tools[label] = t
        if f:
            fields[label] = f
    if tools:
        out["tools"] = tools
    if fields:
        out["fields"] = fields
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def calibrate(
    evaluator: Evaluator,
    records: list[ScoreRecord],
    pair: Pair,
    samples: Samples,
) -> list[ScoreRecord]:
    """``records`` of one evaluator on one pair, each drift record rescored against its baseline."""
    out: list[ScoreRecord] = []
    for record in records:
        if not evaluator.compares_to_source(record.side):
            out.append(record)
            continue
        out.append(_calibrated(evaluator, record, pair, samples))
    return out


def _calibrated(evaluator: Evaluator, record: ScoreRecord, pair: Pair, samples: Samples) -> ScoreRecord:
    example, side = pair.example, record.side
    kind = UNCALIBRATED
    unfit: str | None = ""
    target_records: list[ScoreRecord] = []
    twin_records: list[ScoreRecord] = []
    if pair.timelines is not None and evaluator.reads_timelines:
        # Imported timelines are external loops, not replays: only an imported baseline fits.
        if samples.baseline_timeline is not None:
            kind = IMPORTED
            target_records = [record]
            twin = Pair(example, pair.source, pair.source, (pair.timelines[0], samples.baseline_timeline), pair.tools)
            twin_records = [_side(evaluator.score_pair(twin), side)]
    elif (unfit := recording_unfit(example, evaluator, samples.source_model)) is None:
        reference = samples.recording(example)
        if reference is not None:
            kind = RECORDING
            target_records = [_side(evaluator.score_pair(Pair(example, reference, pair.target, tools=pair.tools)), side)]
            twin_records = [_side(evaluator.score_pair(Pair(example, reference, pair.source, tools=pair.tools)), side)]
    if kind == UNCALIBRATED and len(samples.repeats) >= 2 and not (pair.timelines and evaluator.reads_timelines):
        kind = SOURCE_REPEATS
        *references, twin_trace = samples.repeats
        # The first reference is the pair's own source: its target record is ``record`` itself.
        target_records = [record] + [_side(evaluator.score_pair(Pair(example, r, pair.target, tools=pair.tools)), side)
                                     for r in references[1:]]
        twin_records = [_side(evaluator.score_pair(Pair(example, r, twin_trace, tools=pair.tools)), side) for r in references]
    if kind == UNCALIBRATED:
        metadata = dict(record.metadata)
        metadata["baseline"] = {"kind": UNCALIBRATED}
        if unfit:
            metadata["baseline"]["recording"] = unfit
        return record.model_copy(update={"metadata": metadata})
    shown = target_records[0]
    metadata = dict(shown.metadata)
    baseline = {"kind": kind, "references": len(twin_records), **_labels_of(twin_records[0])}
    if kind != RECORDING and unfit:
        baseline["recording"] = unfit  # the preferred baseline was there but did not fit: say so
    metadata["baseline"] = baseline
    skipped = all(r.skipped for r in target_records) and all(r.skipped for r in twin_records)
    return record.model_copy(update={
        "source_score": _mean([r.target_score for r in twin_records]),
        "target_score": _mean([r.target_score for r in target_records]),
        "skipped": skipped,
        "labels": list(shown.labels),
        "metadata": metadata,
    })
