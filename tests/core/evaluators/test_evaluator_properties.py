"""Properties every evaluator keeps: scores in [0, 1], identical traces score 1.0, symmetry."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalshift_core import Example, ExpectedToolCall, ToolCall, ToolTrace
from evalshift_core.evaluators import build_evaluators

NAMES = st.sampled_from(["lookup_order", "issue_refund", "search", "notify_security_team", "delete_record"])
VALUES = st.one_of(st.integers(-5, 5), st.floats(-100, 100, allow_nan=False), st.text(max_size=3), st.booleans(),
                   st.none(), st.lists(st.integers(0, 3), max_size=3))
ARGUMENTS = st.dictionaries(st.sampled_from(["order_id", "amount_usd", "q", "note"]), VALUES, max_size=3)


@st.composite
def traces(draw, multi_round=None):
    multi = draw(st.booleans()) if multi_round is None else multi_round
    n_rounds = draw(st.integers(1, 3)) if multi else 1
    calls = []
    for k in range(1, n_rounds + 1):
        for _ in range(draw(st.integers(0, 4))):
            calls.append(ToolCall(tool_name=draw(NAMES), arguments=draw(ARGUMENTS), sequence_index=len(calls),
                                  round_index=k if multi else None))
    return ToolTrace(calls=calls, final_text=draw(st.one_of(st.none(), st.text(max_size=5))),
                     refusal=draw(st.one_of(st.none(), st.just("no"))), round_count=n_rounds if multi else None)


@st.composite
def examples(draw):
    expected_call = st.builds(ExpectedToolCall, tool_name=NAMES, arguments=st.one_of(st.none(), ARGUMENTS),
                              match_strategy=st.sampled_from(["exact", "subset", "contains_per_field"]))
    tools = draw(st.one_of(st.none(), st.lists(expected_call, max_size=3)))
    return Example(id="p", expected_tools=tools, expected_no_tools=draw(st.one_of(st.none(), st.booleans())),
                   expected_tool_count=draw(st.one_of(st.none(), st.integers(0, 3))),
                   expected_parallel=draw(st.one_of(st.none(), st.booleans())))


TOOL_CONFIG = {
    "tool_selection": [{"name": m, "mode": m} for m in ("expected", "expected_set", "exact", "set", "first")],
    "tool_arguments": [{"name": "drift", "fields": {"amount_usd": "numeric", "q": "subset"}},
                       {"name": "optimal", "matching": "optimal", "optional_fields_scored": "strict"},
                       {"name": "expected", "against": "expected"}],
    "tool_trace_structure": [{}],
    "agent_trace": [{"check_missing_verification": True, "verification_tools": ["lookup_order"],
                     "dangerous_tools": ["issue_refund", "delete_record"]}],
    "text_match": [{}],
}
EVALUATORS = build_evaluators(TOOL_CONFIG)
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(examples(), traces(), traces())
def test_scores_stay_in_the_unit_interval(example, source, target):
    for ev in EVALUATORS:
        for rec in ev.score(example, source, target):
            assert 0.0 <= rec.source_score <= 1.0, (ev.type_name, ev.name)
            assert 0.0 <= rec.target_score <= 1.0, (ev.type_name, ev.name)


@FAST
@given(examples(), traces())
def test_identical_traces_never_regress(example, trace):
    """A target repeating the source exactly scores what the source scores, with no drift label."""
    for ev in EVALUATORS:
        for rec in ev.score(example, trace, trace):
            assert rec.target_score == rec.source_score, (ev.type_name, ev.name, rec.metadata)
            assert not [label for label in rec.labels if label not in ("TOOL_GROUND_TRUTH_MISS", "MISSING_VERIFICATION_STEP")]


DRIFT = build_evaluators({
    "tool_selection": [{"name": m, "mode": m} for m in ("exact", "set", "first")],
    "tool_arguments": [{"name": "greedy"}, {"name": "optimal", "matching": "optimal"}],
    "tool_trace_structure": [{}],
    "agent_trace": [{"dangerous_tools": ["delete_record"]}],
})


@FAST
@given(traces())
def test_identical_traces_score_one_against_each_other(trace):
    """Every comparison of target against source (no ground truth involved) scores 1.0 on identical traces."""
    example = Example(id="p")
    for ev in DRIFT:
        for rec in ev.score(example, trace, trace):
            assert (rec.source_score, rec.target_score) == (1.0, 1.0), (ev.type_name, ev.name)


SYMMETRIC = build_evaluators({
    "tool_selection": [{"name": "exact", "mode": "exact"}, {"name": "set", "mode": "set"},
                       {"name": "first", "mode": "first"}],
    "tool_trace_structure": [{"check_refusals": True}],
    "agent_trace": [{}],
})


@FAST
@given(traces(multi_round=False), traces(multi_round=False))
def test_symmetric_modes_do_not_care_which_side_is_the_source(a, b):
    """exact / set / first, call-count and refusal alignment, and LCS order are symmetric relations.

    (Ground-truth checks such as expected_tool_count grade each side on its own, so the example
    carries none here.)
    """
    example = Example(id="p")
    for ev in SYMMETRIC:
        [ab] = ev.score(example, a, b)
        [ba] = ev.score(example, b, a)
        if ev.type_name == "agent_trace":
            assert ab.metadata["order_similarity"] == ba.metadata["order_similarity"]
        else:
            assert ab.target_score == ba.target_score, ev.name


SEMANTIC = build_evaluators({"semantic": [{}]})[0]


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=40)), st.one_of(st.none(), st.text(max_size=40)))
def test_semantic_scores_stay_in_the_unit_interval_and_skip_only_both_empty(a, b):
    [rec] = SEMANTIC.score(Example(id="p"), ToolTrace(final_text=a), ToolTrace(final_text=b))
    assert 0.0 <= rec.target_score <= 1.0
    both_empty = not (a or "").strip() and not (b or "").strip()
    assert rec.skipped is both_empty
    if a == b and not both_empty:
        assert rec.target_score == 1.0
