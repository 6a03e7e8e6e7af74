"""JSON round trips of the public records, and toolset shapes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalshift_core import Call, Example, Tool, ToolCall, Toolset, ToolTrace

ANTHROPIC = {
    "name": "issue_refund",
    "description": "Issue a refund on an existing order.",
    "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}},
                     "required": ["order_id", "amount_usd"]},
    "strict": True,
}
OPENAI = {"type": "function", "function": {"name": "issue_refund", "description": "Issue a refund on an existing order.",
                                           "parameters": ANTHROPIC["input_schema"], "strict": True}}


def test_both_provider_shapes_normalise_to_the_same_tool_and_ref():
    assert Tool.model_validate(ANTHROPIC) == Tool.model_validate(OPENAI)
    assert Toolset.model_validate([ANTHROPIC]).ref == Toolset.model_validate([OPENAI]).ref


def test_strict_is_part_of_a_tool_only_when_set():
    loose = {k: v for k, v in ANTHROPIC.items() if k != "strict"}
    assert "strict" not in Tool.model_validate(loose).canonical()
    assert Toolset.model_validate([loose]).ref != Toolset.model_validate([ANTHROPIC]).ref


def test_mixed_shapes_in_one_toolset():
    ts = Toolset.model_validate([ANTHROPIC, {"type": "function", "function": {"name": "lookup_order"}}])
    assert [t.name for t in ts.tools] == ["issue_refund", "lookup_order"]


@pytest.mark.parametrize(
    "record",
    [
        ToolCall(tool_name="lookup_order", arguments={"order_id": "A1"}, call_id="c1", sequence_index=0),
        ToolTrace(calls=[ToolCall(tool_name="a", round_index=1)], final_text="hi", refusal=None, round_count=2),
        Example(id="ex1", inputs={"input": "q"}, tags=["t"], toolset_ref="sha256:" + "ab" * 32,
                expected_tools=[{"tool_name": "lookup_order", "arguments": {"order_id": "A1"}}],
                expected_tool_rounds=[[{"tool_name": "lookup_order"}], []],
                tool_result_fixtures=[[{"tool_name": "lookup_order", "result": {"ok": True}}]],
                generation_config={"tool_choice": "auto", "parallel_tool_calls": False},
                promotion_source="requested"),
        Example(id="ex2", tools=[], expected_no_tools=True),
        Call(example_id="ex1", role="target", model="openai:gpt-4o",
             trace=ToolTrace(calls=[ToolCall(tool_name="x")]), text="t", dropped_params=["tools.strict"]),
    ],
)
def test_json_round_trip(record):
    again = type(record).model_validate_json(record.model_dump_json())
    assert again == record


def test_example_refuses_both_toolset_ref_and_tools():
    with pytest.raises(ValidationError, match="exactly one"):
        Example(id="x", toolset_ref="sha256:" + "00" * 32, tools=[])


def test_empty_tools_is_a_real_value():
    ex = Example.model_validate_json('{"id": "t", "tools": []}')
    assert ex.tools == []


def test_shape_checks_are_skipped_only_for_rows_read_back_as_written():
    """Rows of a run file EvalShift wrote (written.json vouches for it) passed the shape checks
    when first read; any other context, even an equal-looking one, runs them."""
    import pytest
    from pydantic import ValidationError

    from evalshift_core._models import AS_WRITTEN, Example

    row = '{"id": "e1", "history": [{"role": "user", "parts": ["a bare string"]}], "generation_config": {"stop": 1.5}}'
    with pytest.raises(ValidationError):
        Example.model_validate_json(row)
    with pytest.raises(ValidationError):
        Example.model_validate_json(row, context=dict(AS_WRITTEN))
    assert Example.model_validate_json(row, context=AS_WRITTEN).generation_config == {"stop": 1.5}
