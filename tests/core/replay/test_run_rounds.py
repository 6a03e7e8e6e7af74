"""Teacher-forced round construction and raw.jsonl resume parsing, without a server."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core import Call, Example, InputError
from evalshift_core.replay._messages import recorded_rounds, round_messages
from evalshift_core.replay._resume import read_rows as _read_rows
from evalshift_core.replay.clients import to_openai_messages


def _example(results: list[list[dict]], calls: list[list[dict]] | None = None, **extra) -> Example:
    return Example(id="e", inputs={"input": "go"}, tools=[], tool_result_fixtures=results,
                   expected_tool_rounds=calls, **extra)


def test_results_replay_as_the_seed_says():
    """seed 001: 'A string result is sent verbatim, anything else as JSON, and a recorded tool error
    as {"error": "..."}'."""
    example = _example(
        [[{"tool_name": "a", "result": "plain text, not JSON"}, {"tool_name": "b", "result": {"n": 1}},
          {"tool_name": "c", "result": [1, 2]}, {"tool_name": "d", "result": "ignored", "error": "boom"}]],
        [[{"tool_name": "a"}, {"tool_name": "b"}, {"tool_name": "c"}, {"tool_name": "d"}]],
    )
    last = to_openai_messages(round_messages(example)[-1])
    contents = [m["content"] for m in last if m["role"] == "tool"]
    assert contents == ["plain text, not JSON", '{"n": 1}', "[1, 2]", '{"error": "boom"}']


def test_replay_covers_every_fixture_round_plus_the_one_after():
    example = _example([[{"tool_name": "a", "result": 1}], [{"tool_name": "b", "result": 2}]],
                       [[{"tool_name": "a"}], [{"tool_name": "b"}], [{"tool_name": "c"}]])
    rounds = round_messages(example)
    assert len(rounds) == 3 == example.replay_rounds
    assert [len(r) for r in rounds] == [1, 3, 5]
    assert rounds[1] == rounds[2][:3], "each round extends the previous one: byte-identical prefixes"


def test_results_pair_with_calls_by_call_id_before_position():
    example = _example(
        [[{"tool_name": "b", "result": "B", "call_id": "id_b"}, {"tool_name": "a", "result": "A", "call_id": "id_a"}]],
        [[{"tool_name": "a", "call_id": "id_a", "arguments": {"x": 1}}, {"tool_name": "b", "call_id": "id_b"}]],
    )
    [(assistant, tool)] = recorded_rounds(example)
    assert [(p["id"], p["name"], p["arguments"]) for p in assistant["parts"]] == [("id_a", "a", {"x": 1}), ("id_b", "b", {})]
    assert [(p["id"], p["response"]) for p in tool["parts"]] == [("id_a", "A"), ("id_b", "B")]


def test_expected_tools_stands_in_for_round_one():
    example = _example([[{"tool_name": "a", "result": 1}]], None, expected_tools=[{"tool_name": "a", "call_id": "r1"}])
    [(assistant, _)] = recorded_rounds(example)
    assert assistant["parts"][0]["id"] == "r1"


def test_mismatched_fixture_round_is_a_clear_input_error():
    example = _example([[{"tool_name": "a", "result": 1}]], [[{"tool_name": "a"}, {"tool_name": "b"}]])
    with pytest.raises(InputError, match=r"round 1 records 2 call\(s\) but 1 tool result") as err:
        round_messages(example)
    assert err.value.field == "tool_result_fixtures[0]"


_names = st.sampled_from(["lookup_order", "issue_refund", "notify_security_team"])
_result = st.none() | st.text(max_size=20) | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)
_round = st.lists(st.tuples(_names, _result, st.none() | st.text(min_size=1, max_size=10)), min_size=1, max_size=3)


@settings(max_examples=60, deadline=None)
@given(rounds=st.lists(_round, min_size=1, max_size=4), ids=st.booleans())
def test_every_recorded_call_is_answered_by_its_own_result(rounds, ids):
    """Any fixture shape: round k holds k-1 recorded assistant turns, each call answered by one
    result with the same id, ids unique, and errors replayed as {"error": ...}."""
    calls = [[{"tool_name": n, "call_id": f"id{k}_{i}" if ids else None} for i, (n, _, _) in enumerate(r)]
             for k, r in enumerate(rounds)]
    results = [[{"tool_name": n, "result": res, "error": err, "call_id": f"id{k}_{i}" if ids else None}
                for i, (n, res, err) in enumerate(r)] for k, r in enumerate(rounds)]
    example = _example(results, calls)
    messages = round_messages(example)
    assert len(messages) == len(rounds) + 1
    final = messages[-1][1:]
    seen: set[str] = set()
    for k, (assistant, tool) in enumerate(zip(final[::2], final[1::2])):
        call_ids = [p["id"] for p in assistant["parts"]]
        assert call_ids == [p["id"] for p in tool["parts"]]
        assert not seen & set(call_ids) and len(set(call_ids)) == len(call_ids)
        seen |= set(call_ids)
        for part, (_, res, err) in zip(tool["parts"], rounds[k]):
            assert part["response"] == ({"error": err} if err is not None else res)


def _row(i: int) -> dict:
    return Call(example_id=f"ex{i}", role="source", model="openai:m").model_dump(mode="json", exclude_none=True)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=0, max_value=6), cut=st.integers(min_value=0, max_value=10_000))
def test_a_torn_last_line_is_cut_and_every_whole_row_kept(tmp_path_factory, n, cut):
    raw = tmp_path_factory.mktemp("run") / "raw.jsonl"
    data = b"".join(json.dumps(_row(i)).encode() + b"\n" for i in range(n))
    cut = min(cut, len(data))
    raw.write_bytes(data[:cut])
    rows = _read_rows(raw)
    whole = data[:cut].count(b"\n")
    assert [r.example_id for r in rows] == [f"ex{i}" for i in range(whole)]
    assert raw.read_bytes() == data[: data[:cut].rfind(b"\n") + 1]


def test_a_corrupt_middle_line_names_file_and_line(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(json.dumps(_row(0)).encode() + b"\nnot json\n" + json.dumps(_row(1)).encode() + b"\n")
    with pytest.raises(InputError, match=r"raw.jsonl:2"):
        _read_rows(raw)
