"""Which tools and fields a record's labels point at: selection differences by the counting rule,
and one reading of a record answering every label as the one-question functions do."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core.evaluators import ScoreRecord
from evalshift_core.evaluators._attribution import (
    attribute,
    attribution,
    round_differs,
    selection_tools,
    tools_of,
)

names = st.lists(st.sampled_from(["lookup_order", "issue_refund", "notify", "search"]), max_size=5)
LABELS = ["TOOL_SELECTION_DRIFT", "TOOL_ORDER_DRIFT", "UNNECESSARY_TOOL_CALL", "ARGUMENT_VALUE_DRIFT",
          "REFUSAL_REGRESSION"]


@st.composite
def selection_rounds(draw: st.DrawFn) -> dict:
    entry: dict = {"target": draw(names), "source_score": 1.0, "target_score": draw(st.sampled_from([0.0, 1.0]))}
    entry["expected" if draw(st.booleans()) else "source"] = draw(names)
    if draw(st.booleans()):
        entry["missing_calls"] = draw(names)
    if draw(st.booleans()):
        entry["fields"] = draw(st.lists(st.fixed_dictionaries({
            "tool": st.sampled_from(["lookup_order", "issue_refund"]),
            "field": st.sampled_from(["amount_usd", "order_id", None]),
            "score": st.sampled_from([0.0, 0.5, 1.0]),
            "label": st.sampled_from([None, "ARGUMENT_VALUE_DRIFT", "ARGUMENT_MISSING"]),
        }), max_size=3))
    return entry


@st.composite
def records(draw: st.DrawFn) -> ScoreRecord:
    rounds = draw(st.lists(selection_rounds(), min_size=1, max_size=3))
    metadata = rounds[0] if len(rounds) == 1 and draw(st.booleans()) else {"rounds": rounds}
    if draw(st.booleans()):
        metadata = {**metadata, "label_tools": {"TOOL_ORDER_DRIFT": draw(names)}}
    if draw(st.booleans()):
        metadata = {**metadata, "tools": draw(names)}
    return ScoreRecord(example_id="ex", evaluator="tool_selection", name="routing", source_score=1.0,
                       target_score=0.0, labels=draw(st.lists(st.sampled_from(LABELS), max_size=3)),
                       metadata=metadata)


def _counted_selection_tools(record: ScoreRecord) -> list[str]:
    """selection_tools as its docstring says, with Counter doing the counting."""
    out: list[str] = []
    rounds = record.metadata.get("rounds") or [record.metadata]
    for entry in rounds:
        if not round_differs(entry):
            continue
        ref = entry["expected"] if "expected" in entry else entry.get("source", [])
        tgt = entry.get("target", [])
        names = list(Counter(ref) - Counter(tgt)) + list(Counter(tgt) - Counter(ref))
        if not names and ref != tgt:
            names = [a for a, b in zip(ref, tgt) if a != b]
        out.extend(n for n in names if n not in out)
    return out


def test_selection_tools_known_answer():
    record = ScoreRecord(example_id="ex", evaluator="tool_selection", name="routing", source_score=1.0,
                         target_score=0.0, labels=["TOOL_SELECTION_DRIFT"], metadata={
                             "expected": ["lookup_order", "issue_refund", "issue_refund"],
                             "target": ["issue_refund", "notify"]})
    # One issue_refund and the lookup missing, notify extra: missing first, each in first-seen order.
    assert selection_tools(record) == ["lookup_order", "issue_refund", "notify"]
    reordered = record.model_copy(update={"metadata": {"source": ["a", "b", "c"], "target": ["a", "c", "b"]}})
    assert selection_tools(reordered) == ["b", "c"]


@settings(max_examples=300, deadline=None)
@given(records())
def test_selection_tools_counts_calls_as_counter_does(record):
    assert selection_tools(record) == _counted_selection_tools(record)


@settings(max_examples=300, deadline=None)
@given(records(), st.lists(st.sampled_from(LABELS), max_size=4))
def test_one_reading_answers_as_the_one_question_functions(record, labels):
    attributed = attribute(record, labels)
    assert attributed.tools == tools_of(record)
    assert attributed.labels == {label: attribution(record, label) for label in labels}
