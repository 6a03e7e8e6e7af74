"""``evaluate_run``'s shared per-pair data and shortcut paths change no score, label or detail.

The tool evaluators score a :class:`Pair` whose derived data (names, greedy matching, argument
equality) is computed once for all of them, take shortcuts when the target repeats the source,
and build records without validation. Each shortcut keeps a general path beside it; these tests
hold the two equal, pin the output of seeded pairs to what the evaluators gave before any
shortcut existed, and check the records and the garbage collector are left as pydantic and the
host expect.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import json
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seeded_pairs import CONFIG, seeded_run
from test_evaluator_properties import ARGUMENTS, NAMES, examples, traces

from evalshift_core import Call, Example, ToolCall, ToolTrace
from evalshift_core.evaluators import ScoreRecord, build_evaluators, evaluate_run
from evalshift_core.evaluators._base import (
    Pair,
    match_names_greedy,
    new_record,
    surplus,
)
from evalshift_core.evaluators._calibration import Samples, calibrate
from evalshift_core.evaluators.tool_selection import lcs_length

EVALUATORS = build_evaluators(CONFIG)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEEDED_DIGEST = "52067fa07ca8cc9e41298a1c1e8323bf029bb055d4c4f4c8d6825396bf7104d0"
"""sha256 of the scores of ``seeded_run(300)`` under ``CONFIG`` (one ``json.dumps`` line per record).

First pinned before ``Pair`` and the shortcut paths existed; pinned again when the calls of one
response came to be matched optimally by default, labels came to name only the tools that earned
them (``label_tools``), drift records gained their A/A ``baseline`` and a shared ground-truth
miss came to be decided by both sides' scores alone. Those were the only changes to the output;
the shortcut-equals-general-path tests below held across them."""


def _dump(records: list[ScoreRecord]) -> list[tuple[str, str]]:
    """Each record as JSON and as its Python-mode repr: float vs int and list vs tuple must match too."""
    return [(json.dumps(r.model_dump(mode="json")), repr(r.model_dump())) for r in records]


def test_seeded_pairs_score_exactly_as_before_the_shortcuts():
    examples_, calls, timelines = seeded_run(300)
    records = evaluate_run(examples_, calls, CONFIG, timelines=timelines, progress=False)
    digest = hashlib.sha256()
    for r in records:
        digest.update(json.dumps(r.model_dump(mode="json")).encode() + b"\n")
    assert len(records) == 6000
    assert digest.hexdigest() == SEEDED_DIGEST


def _reordered(calls: list[Call], how: str) -> list[Call]:
    calls = list(calls)
    if how == "shuffled":
        random.Random(5).shuffle(calls)
    elif how == "one pair swapped midway":  # the in-order reading starts over after scoring half the run
        k = len(calls) // 2 & ~1
        calls[k], calls[k + 1] = calls[k + 1], calls[k]
    elif how == "one row missing, one extra":  # as many rows as an in-order run, not one per example
        calls[len(calls) // 2] = calls[0]
    return calls


@pytest.mark.parametrize("how", ["shuffled", "one pair swapped midway", "one row missing, one extra"])
def test_row_order_changes_no_record(how):
    """Rows in ``run``'s order are read in place, any other order through a lookup: the records agree."""
    examples_, calls, timelines = seeded_run(120, seed=3)
    in_order = evaluate_run(examples_, calls, EVALUATORS, timelines=timelines, progress=False)
    reordered = _reordered(calls, how)
    by_lookup = {}
    for c in reordered:
        by_lookup[(c.example_id, c.role)] = c
    expected = evaluate_run(examples_, [by_lookup[k] for e in examples_ for k in ((e.id, "source"), (e.id, "target"))
                                        if k in by_lookup], EVALUATORS, timelines=timelines, progress=False)
    assert _dump(evaluate_run(examples_, reordered, EVALUATORS, timelines=timelines, progress=False)) == _dump(expected)
    if how == "shuffled":
        assert _dump(expected) == _dump(in_order)


def test_a_later_row_for_the_same_example_and_role_wins():
    """A resumed run may hold a retried row after the failed one; the later row is the one scored."""
    examples_ = [Example(id="ex1", expected_tools=[{"tool_name": "a"}])]
    failed = Call(example_id="ex1", role="target", model="m", error="APIError: boom")
    source = Call(example_id="ex1", role="source", model="m", trace=ToolTrace(calls=[ToolCall(tool_name="a")]))
    retried = Call(example_id="ex1", role="target", model="m", trace=ToolTrace(calls=[ToolCall(tool_name="b")]))
    [record] = evaluate_run(examples_, [source, failed, retried], {"tool_selection": [{}]}, progress=False)
    assert (record.source_score, record.target_score, record.metadata["target"]) == (1.0, 0.0, ["b"])
    assert evaluate_run(examples_, [source, retried, failed], {"tool_selection": [{}]}, progress=False) == []


def test_sharing_one_pair_across_evaluators_equals_scoring_each_alone():
    """evaluate_run hands every evaluator one Pair; nothing one computes may leak into another's record."""
    examples_, calls, timelines = seeded_run(200, seed=11)
    shared = evaluate_run(examples_, calls, EVALUATORS, timelines=timelines, progress=False)
    by_key = {(c.example_id, c.role): c for c in calls}
    alone = []
    for ex in examples_:
        src, tgt = by_key[(ex.id, "source")].trace, by_key[(ex.id, "target")].trace
        pair_timelines = None
        if (ex.id, "source") in timelines:
            pair_timelines = (timelines[(ex.id, "source")], timelines[(ex.id, "target")])
        pair = Pair(ex, src, tgt, pair_timelines)
        samples = Samples(source_model=by_key[(ex.id, "source")].model, repeats=[src], timelines=pair_timelines)
        for ev in EVALUATORS:
            alone.extend(calibrate(ev, ev.score(ex, src, tgt, timelines=pair_timelines), pair, samples))
    assert _dump(shared) == _dump(alone)


@st.composite
def similar_traces(draw):
    """A source and a target that often repeats it, or differs in one argument or one call."""
    source = draw(traces(multi_round=False))
    how = draw(st.sampled_from(["same", "same", "argument", "order", "drop", "other"]))
    calls = [c.model_copy(update={"arguments": copy.deepcopy(c.arguments)}) for c in source.calls]
    if how == "argument" and calls:
        i = draw(st.integers(0, len(calls) - 1))
        calls[i] = calls[i].model_copy(update={"arguments": draw(ARGUMENTS)})
    elif how == "order":
        calls = draw(st.permutations(calls))
    elif how == "drop" and calls:
        calls.pop(draw(st.integers(0, len(calls) - 1)))
    elif how == "other":
        return source, draw(traces(multi_round=False))
    calls = [c.model_copy(update={"sequence_index": i}) for i, c in enumerate(calls)]
    refusal = draw(st.sampled_from([source.refusal, None, "no"]))
    return source, ToolTrace(calls=calls, final_text=source.final_text, refusal=refusal)


@FAST
@given(examples(), similar_traces())
def test_every_shortcut_equals_its_general_path(example, pair_traces):
    """Single-shot shortcuts (target repeats source, no structural ground truth, greedy drift) vs the general code."""
    source, target = pair_traces
    for ev in EVALUATORS:
        fast = ev.score_pair(Pair(example, source, target))
        general = ev._score_general(Pair(example, source, target))
        assert _dump(fast) == _dump(general), (ev.type_name, ev.name)


@FAST
@given(examples(), traces(), traces())
def test_shortcuts_equal_general_paths_on_unrelated_and_multi_round_traces(example, source, target):
    for ev in EVALUATORS:
        assert _dump(ev.score_pair(Pair(example, source, target))) == _dump(ev._score_general(Pair(example, source, target)))


@FAST
@given(st.lists(NAMES, max_size=7), st.lists(NAMES, max_size=7))
def test_lcs_length_equals_the_plain_dynamic_programme(a, b):
    """lcs_length trims the common prefix and suffix before its table; the full table must agree."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    assert lcs_length(a, b) == lcs_length(tuple(a), tuple(b)) == table[-1][-1]


@FAST
@given(st.lists(NAMES, max_size=40), st.lists(NAMES, max_size=40))
def test_surplus_equals_counter_difference(a, b):
    """Short sequences take list scans, long ones (over 64 names together) a count: both agree."""
    assert surplus(a, b) == surplus(tuple(a), tuple(b)) == list((Counter(a) - Counter(b)).elements())


@FAST
@given(st.lists(NAMES, max_size=9), st.lists(NAMES, max_size=9))
def test_greedy_matching_takes_the_nearest_unmatched_call_of_the_same_name(reference, actual):
    """Seed 001's rule, plainly: in reference order, the same-named actual call nearest in sequence
    (the earlier one on a tie) that no earlier reference call took."""
    free = list(range(len(actual)))
    expected = []
    for i, name in enumerate(reference):
        candidates = [j for j in free if actual[j] == name]
        best = min(candidates, key=lambda j: (abs(j - i), j), default=None)
        if best is not None:
            free.remove(best)
        expected.append(best)
    assert match_names_greedy(reference, actual) == match_names_greedy(tuple(reference), tuple(actual)) == expected


# -- records built without validation --------------------------------------------------------

RECORD_VALUES = {"example_id": "ex1", "evaluator": "tool_selection", "name": "routing", "side": "divergence",
                 "source_score": 1.0, "target_score": 0.5, "skipped": False, "labels": ["TOOL_ORDER_DRIFT"],
                 "metadata": {"mode": "set", "source": ["a", "b"], "target": ["b", "a"]}}


def test_unvalidated_records_equal_validated_ones():
    record = new_record(*copy.deepcopy(list(RECORD_VALUES.values())))
    validated = ScoreRecord.model_validate(RECORD_VALUES)
    assert record == validated == ScoreRecord.model_construct(**copy.deepcopy(RECORD_VALUES))
    assert record.model_dump() == validated.model_dump() == RECORD_VALUES
    assert record.model_dump_json() == validated.model_dump_json()
    assert record.model_fields_set == validated.model_fields_set == set(ScoreRecord.model_fields)
    assert ScoreRecord.model_validate_json(record.model_dump_json()) == record
    assert repr(record) == repr(validated)


def test_records_sharing_their_fields_set_stay_independent():
    """Unvalidated records share one fields-set and their dicts' key table; assigning to one changes no other."""
    a, b = (new_record(*copy.deepcopy(list(RECORD_VALUES.values()))) for _ in range(2))
    a.labels = []
    a.target_score = 1.0
    assert (a.labels, a.target_score) == ([], 1.0)
    assert (b.labels, b.target_score) == (["TOOL_ORDER_DRIFT"], 0.5)
    assert a.model_fields_set == b.model_fields_set == set(ScoreRecord.model_fields)
    c = b.model_copy(update={"side": None})
    assert (c.side, b.side) == (None, "divergence")
    assert c.model_fields_set == set(ScoreRecord.model_fields)


def test_records_from_a_run_round_trip_through_json():
    examples_, calls, timelines = seeded_run(40, seed=3)
    for record in evaluate_run(examples_, calls, CONFIG, timelines=timelines, progress=False):
        assert ScoreRecord.model_validate_json(record.model_dump_json()) == record


# -- the garbage collector --------------------------------------------------------------------

def _tiny_run() -> list[ScoreRecord]:
    ex = Example(id="ex1", expected_tools=[{"tool_name": "a"}])
    from evalshift_core import Call

    calls = [Call(example_id="ex1", role=role, model="m", trace=ToolTrace(calls=[ToolCall(tool_name="a")]))
             for role in ("source", "target")]
    return evaluate_run([ex], calls, CONFIG, progress=False)


def test_evaluate_run_leaves_the_collector_as_it_found_it():
    assert gc.isenabled()
    assert len(_tiny_run()) > 0
    assert gc.isenabled()
    gc.disable()
    try:
        _tiny_run()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_evaluate_run_keeps_a_hosts_frozen_objects_frozen():
    """A host that froze its heap (gc.freeze before forking) keeps it frozen: unfreeze would undo that."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        _tiny_run()
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
