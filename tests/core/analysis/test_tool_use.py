"""Per-tool call counts from a run's Call rows: shares, dropped and added tools, swaps, tags."""

from __future__ import annotations

from evalshift_core._models import Call, Example, ToolCall, ToolTrace
from evalshift_core.analysis._tool_use import ToolUse, first_diverged_round, tool_use


def _call(example_id: str, role: str, names: list[str], *, error: str | None = None,
          rounds: list[int] | None = None) -> Call:
    calls = [ToolCall(tool_name=n, sequence_index=i, round_index=rounds[i] if rounds else None) for i, n in enumerate(names)]
    trace = None if error else ToolTrace(calls=calls, round_count=max(rounds) + 1 if rounds else None)
    return Call(example_id=example_id, role=role, model=f"openai:{role}", trace=trace, error=error)


def test_counts_examples_per_tool_and_side_with_the_tags_of_what_changed():
    examples = [Example(id="sec1", tags=["security"]), Example(id="sec2", tags=["security", "vip"]),
                Example(id="urgent", tags=["refund", "urgent"]), Example(id="status", tags=["status"])]
    calls = [
        _call("sec1", "source", ["notify_security_team"]), _call("sec1", "target", []),
        _call("sec2", "source", ["notify_security_team", "notify_security_team"]), _call("sec2", "target", []),
        _call("urgent", "source", ["lookup_order"]), _call("urgent", "target", ["issue_refund"]),
        _call("status", "source", ["lookup_order"]), _call("status", "target", ["lookup_order"]),
    ]
    use = tool_use(examples, calls)
    assert use.examples == 4
    assert use.tags == {"security": 2, "refund": 1, "status": 1, "urgent": 1, "vip": 1}
    notify = use.tool("notify_security_team")
    assert (notify.source, notify.target, notify.dropped, notify.added) == (2, 0, 2, 0)  # in examples, not calls
    assert notify.dropped_tags == {"security": 2, "vip": 1}
    lookup = use.tool("lookup_order")
    assert (lookup.source, lookup.target, lookup.dropped) == (2, 1, 1)
    assert [(s.source_tool, s.target_tool, s.examples, s.tags) for s in use.swaps] == [
        ("lookup_order", "issue_refund", 1, {"refund": 1, "urgent": 1})]
    assert [t.tool for t in use.tools][0] == "notify_security_team"  # most changed first


def test_an_example_with_a_failed_call_is_not_counted():
    examples = [Example(id="a"), Example(id="b")]
    calls = [_call("a", "source", ["x"]), _call("a", "target", [], error="round 1/1: 404"),
             _call("b", "source", ["x"]), _call("b", "target", ["x"])]
    use = tool_use(examples, calls)
    assert use.examples == 1 and use.tool("x").dropped == 0


def test_round_trips_through_report_json():
    use = tool_use([Example(id="a", tags=["t"])], [_call("a", "source", ["x"]), _call("a", "target", ["y"])])
    assert ToolUse.from_dict(use.as_dict()) == use


def test_first_diverged_round_names_the_round_where_the_names_first_differ():
    same = _call("a", "source", ["lookup_order", "issue_refund"], rounds=[1, 2])
    late = _call("a", "target", ["lookup_order", "escalate"], rounds=[1, 2])
    assert first_diverged_round(same, late) == 2
    assert first_diverged_round(same, same) is None
