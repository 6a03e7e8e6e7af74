"""The verdict in plain words: the headline, one reason per root cause, and power in the verdict."""

from __future__ import annotations

from evalshift_core import Example, analyze
from evalshift_core._models import Call, ToolCall, ToolTrace
from evalshift_core.analysis._headline import (
    duplicate_comparisons,
    headline,
    one_reason_per_cause,
    sane_count,
)
from evalshift_core.analysis._tool_use import tool_use
from evalshift_core.evaluators import ScoreRecord

SECURITY, URGENT, N = 7, 3, 32


def _row(i: int, side: str, expected: list[str], src: list[str], tgt: list[str], label: bool) -> ScoreRecord:
    score = 1.0 if tgt == (expected if side == "conformance" else src) else 0.0
    md = {"mode": "expected" if side == "conformance" else "set", "source": src, "target": tgt,
          "source_score": 1.0, "target_score": score}
    if side == "conformance":
        md["expected"] = expected
    return ScoreRecord(example_id=f"ex{i}", evaluator="tool_selection", name="routing", side=side, source_score=1.0,
                       target_score=score, labels=["TOOL_SELECTION_DRIFT"] if label and score < 1 else [], metadata=md)


def _demo_like() -> tuple[list[Example], list[Call], list[ScoreRecord]]:
    """The demo's regression: 7 security tickets lose notify_security_team, 3 urgent refunds call
    issue_refund where the source called lookup_order, 22 tickets unchanged."""
    examples, calls, scores = [], [], []
    for i in range(N):
        if i < SECURITY:
            tags, src, tgt = ["security"], ["notify_security_team"], []
        elif i < SECURITY + URGENT:
            tags, src, tgt = ["refund", "urgent"], ["lookup_order"], ["issue_refund"]
        elif i < SECURITY + URGENT + 6:
            tags, src, tgt = ["refund"], ["lookup_order"], ["lookup_order"]
        else:
            tags, src, tgt = ["status"], ["lookup_order"], ["lookup_order"]
        examples.append(Example(id=f"ex{i}", tags=tags))
        for role, names in (("source", src), ("target", tgt)):
            trace = ToolTrace(calls=[ToolCall(tool_name=n, sequence_index=k) for k, n in enumerate(names)])
            calls.append(Call(example_id=f"ex{i}", role=role, model=f"openai:{role}", trace=trace))
        scores += [_row(i, side, src, src, tgt, True) for side in ("conformance", "divergence")]
    return examples, calls, scores


def test_the_demos_failure_reads_as_what_the_candidate_stopped_doing():
    examples, calls, scores = _demo_like()
    a = analyze(scores, examples=examples)
    assert a.verdict == "fail"
    assert headline(a, tool_use(examples, calls)) == (
        "FAIL — the candidate stopped calling notify_security_team on 7 of 32 examples (all tagged security); "
        "on 3 it called issue_refund where the source called lookup_order (all tagged urgent).")


def test_without_tool_counts_the_headline_still_names_the_tools_from_the_labels():
    examples, _, scores = _demo_like()
    assert analyze(scores, examples=examples).headline == (
        "FAIL — the candidate has 7 TOOL_SELECTION_DRIFT on notify_security_team; 3 TOOL_SELECTION_DRIFT on "
        "issue_refund; 3 TOOL_SELECTION_DRIFT on lookup_order.")


def test_two_sides_of_one_root_cause_give_one_reason_while_both_comparisons_stay():
    examples, _, scores = _demo_like()
    a = analyze(scores, examples=examples)
    assert [c.side for c in a.comparisons] == ["conformance", "divergence"]  # analysis.json keeps both
    stats = [r for r in a.reasons if r.startswith("tool_selection.routing")]
    assert len(stats) == 1
    assert stats[0].startswith("tool_selection.routing (conformance): target 0.688 vs source 1.000")
    assert stats[0].endswith("; the divergence side agrees on the same examples and tools")


def test_sides_that_regressed_on_different_examples_keep_their_own_reasons():
    regressions = [
        {"example_id": "a", "evaluator": "tool_selection", "name": "r", "side": "conformance", "tools": ["x"]},
        {"example_id": "a", "evaluator": "tool_selection", "name": "r", "side": "divergence", "tools": ["x"]},
        {"example_id": "b", "evaluator": "tool_selection", "name": "r", "side": "divergence", "tools": ["y"]},
    ]
    assert duplicate_comparisons(regressions) == {}
    same = regressions[:2]
    assert duplicate_comparisons(same) == {"tool_selection.r (divergence)": "tool_selection.r (conformance)"}
    reasons = ["tool_selection.r (conformance): dropped", "tool_selection.r (divergence): dropped", "1 X"]
    assert one_reason_per_cause(reasons, duplicate_comparisons(same)) == [
        "tool_selection.r (conformance): dropped; the divergence side agrees on the same examples and tools", "1 X"]


def test_an_inconclusive_headline_says_why_in_words():
    few = analyze([_row(i, "conformance", ["a"], ["a"], ["a"], False) for i in range(5)])
    assert few.headline == "INCONCLUSIVE — 5 measured examples, fewer than min_examples 10."
    nothing = analyze([])
    assert nothing.headline == "INCONCLUSIVE — nothing was measured: no score records."


def test_a_fail_no_tool_explains_names_the_decisive_comparison_plainly():
    rows = [ScoreRecord(example_id=f"e{i}", evaluator="semantic", name="answer", source_score=0.9,
                        target_score=0.4 if i < 20 else 0.9, labels=[], metadata={}) for i in range(40)]
    a = analyze(rows)
    assert a.verdict == "fail"
    assert a.headline == "FAIL — semantic.answer fell from 0.90 to 0.65; 20 of 40 examples regressed."


def test_counts_stay_sane():
    assert sane_count(697, 100) == "about 697 examples, 597 more than the 100 measured"
    assert sane_count(2_175_849, 100_000) == "more than 10× the 100000 measured"
