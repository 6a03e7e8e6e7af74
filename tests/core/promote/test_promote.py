"""Promotion rules of seed 001 ("Offered, requested, executed", "Agent rounds", Troubleshooting).

Captures come from the real SDK and the real openai client on the simulator's scripted models.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from _capture_agent import (
    POLICY_TICKET,
    REFUND_TICKET,
    SYSTEM,
    capture_turns,
    default_tools,
    simulator,
)

import evalshift_sdk
from evalshift_core._models import Example
from evalshift_core.ingest._captures import load_captures
from evalshift_core.promote._examples import promote_capture, promote_example

SECURITY_TICKET = "Someone logged in from another country. I think I was hacked."


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> dict[str, object]:
    """One capture per scenario, keyed by a short name."""
    root = tmp_path_factory.mktemp("promote")

    attempts = {"n": 0}

    @evalshift_sdk.tool(name="lookup_order")
    def flaky_lookup(order_id: str) -> dict:
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise TimeoutError("order service timed out")
        return {"order_id": order_id, "status": "shipped"}

    @evalshift_sdk.tool(name="issue_refund")
    def refund_declined(order_id: str, amount_usd: float) -> dict:
        return {"success": False, "reason": "refund window closed"}

    scenarios = {
        "refund": ("sim-baseline", REFUND_TICKET, None),
        "policy": ("sim-baseline", POLICY_TICKET, None),
        "security": ("sim-baseline", SECURITY_TICKET, None),
        "parallel": ("sim-parallel", "Order A1001 and my account looks hacked", None),
        "retry": ("sim-retry", "Where is order A1001?", {**default_tools(), "lookup_order": flaky_lookup}),
        "declined": ("sim-baseline", REFUND_TICKET, {**default_tools(), "issue_refund": refund_declined}),
    }
    out = {}
    with simulator() as sim:
        for name, (model, ticket, tools) in scenarios.items():
            directory = root / name
            capture_turns(directory, sim, [(model, ticket)], tools=tools)
            (out[name],) = load_captures(directory)
            out[name + "_dir"] = directory
    return out


def _names(rounds) -> list[list[str]]:
    return [[c.tool_name for c in r] for r in rounds]


def test_rounds_one_per_model_call_and_expected_tools_is_round_one(captured):
    """"Promotion groups those calls into rounds — one per recorded model call — and keeps every
    round on the case as expected_tool_rounds; expected_tools is always round 1.\""""
    ex = promote_capture(captured["refund"]).example
    assert _names(ex.expected_tool_rounds) == [["lookup_order"], ["issue_refund"], []]
    assert ex.expected_tools == ex.expected_tool_rounds[0]
    assert ex.expected_tools[0].arguments == {"order_id": "A1001"}
    assert ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}


def test_requested_calls_are_ground_truth_when_recorded(captured):
    """"Promotion uses the requested calls as ground truth whenever the capture recorded them ...
    stamping the case promotion_source: requested | executed.\""""
    ex = promote_capture(captured["refund"]).example
    assert ex.promotion_source == "requested"
    requested = captured["refund"].model_calls()[0]["requested_tool_calls"][0]
    assert ex.expected_tools[0].call_id == requested["call_id"]


def test_executed_calls_are_ground_truth_when_requested_were_not_recorded(captured):
    capture = captured["refund"]
    stripped = type(capture)(**{**capture.__dict__, "events": [
        {**e, "requested_tool_calls": None} if e["type"] == "model_call" else e for e in capture.events]})
    ex = promote_capture(stripped).example
    assert ex.promotion_source == "executed"
    assert _names(ex.expected_tool_rounds) == [["lookup_order"], ["issue_refund"], []]
    assert ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}


def test_offered_toolset_is_the_examples_toolset_ref(captured):
    ex = promote_capture(captured["refund"]).example
    assert ex.toolset_ref == captured["refund"].model_calls()[0]["toolset_ref"]
    assert ex.tools is None


def test_generation_config_carries_tool_choice_and_parallel_tool_calls(captured):
    ex = promote_capture(captured["refund"]).example
    assert ex.generation_config == {"tool_choice": "auto", "parallel_tool_calls": True}


def test_history_prefix_and_rendered_prompt_inputs(captured):
    """turn() inputs are kept; the last user message of round 1 renders the capture-first prompt."""
    ex = promote_capture(captured["refund"]).example
    assert ex.inputs == {"ticket": REFUND_TICKET, "input": REFUND_TICKET}
    assert ex.history == [{"role": "system", "parts": [{"type": "text", "content": SYSTEM}]}]
    assert ex.prompt_id == "support" and ex.tags == ["sim-baseline"]


def test_rounds_first_warns_naming_later_calls(captured):
    """"A multi-round capture promoted this way warns, naming the later calls it will not replay.\""""
    p = promote_capture(captured["refund"], rounds="first")
    assert p.example.tool_result_fixtures is None
    (warning,) = [w for w in p.warnings if "--rounds first" in w]
    assert "round 2: issue_refund" in warning and p.example.id in warning


def test_rounds_all_writes_fixtures_aligned_with_rounds(captured):
    """"tool_result_fixtures, one inner list per covered round aligned by position with
    expected_tool_rounds, each entry {tool_name, result, error}.\""""
    p = promote_capture(captured["refund"], rounds="all")
    fixtures = p.example.tool_result_fixtures
    assert [[f.tool_name for f in r] for r in fixtures] == [["lookup_order"], ["issue_refund"]]
    assert fixtures[0][0].result == {"order_id": "A1001", "status": "shipped", "amount_usd": 49.99}
    assert fixtures[1][0].result == {"success": True, "refund_id": "rf_a1001"}
    assert fixtures[0][0].error is None
    assert [f.call_id for f in fixtures[0]] == [c.call_id for c in p.example.expected_tool_rounds[0]]
    assert p.example.replay_rounds == 3  # both tool rounds plus the answer round
    assert not [w for w in p.warnings if "--rounds" in w]


def test_the_recording_names_the_model_and_the_covered_rounds_answer(captured):
    """The recording is the drift comparisons' A/A baseline: the model the capture asked for, and
    the text of the last round a replay covers (round 1 single-shot, the answer round otherwise)."""
    first = promote_capture(captured["refund"], rounds="first").example
    assert first.recording.model == "sim-baseline"
    assert first.recording.text == ""  # round 1 said nothing besides its lookup_order call
    every = promote_capture(captured["refund"], rounds="all").example
    assert every.recording.text.startswith("I've refunded $49.99")
    assert every.recording.refusal is None


def test_no_tool_turn_is_expected_no_tools(captured):
    ex = promote_capture(captured["policy"]).example
    assert ex.expected_no_tools is True
    assert ex.expected_tools == [] and ex.expected_tool_rounds == [[]]
    assert ex.expected_tool_count is None and ex.expected_parallel is None


def test_single_call_round_is_not_parallel(captured):
    ex = promote_capture(captured["security"]).example
    assert _names(ex.expected_tool_rounds) == [["notify_security_team"], []]
    assert ex.expected_parallel is False and ex.expected_tool_count == 1


def test_parallel_calls(captured):
    ex = promote_capture(captured["parallel"], rounds="all").example
    assert [c.tool_name for c in ex.expected_tools] == ["lookup_order", "notify_security_team"]
    assert ex.expected_parallel is True and ex.expected_tool_count == 2
    assert [[f.tool_name for f in r] for r in ex.tool_result_fixtures] == [["lookup_order", "notify_security_team"]]


def test_failed_tool_result_warns(captured):
    """"capture sync warns when a promoted turn contains a failed result (error, or
    {"success": false})\" (seed 000)."""
    p = promote_capture(captured["declined"])
    (warning,) = [w for w in p.warnings if "failed result" in w]
    assert "round 2: tool issue_refund" in warning and "success: false" in warning


def test_tool_error_warns_and_retry_leaves_count_unpinned(captured):
    """Seed 000: "Retry loops ... pinning expected_tool_count on it makes an infrastructure flake
    into a permanent model regression."""
    p = promote_capture(captured["retry"], rounds="all")
    ex = p.example
    assert _names(ex.expected_tool_rounds) == [["lookup_order"], ["lookup_order"], []]
    assert ex.expected_tool_count is None
    assert any("expected_tool_count not pinned: lookup_order" in w for w in p.warnings)
    assert any("round 1: tool lookup_order returned a failed result (order service timed out)" in w
               for w in p.warnings)
    assert ex.tool_result_fixtures[0][0].error == "order service timed out"
    assert ex.tool_result_fixtures[1][0].result == {"order_id": "A1001", "status": "shipped"}


def test_names_only_drops_arguments(captured):
    ex = promote_capture(captured["refund"], names_only=True).example
    assert all(c.arguments is None for r in ex.expected_tool_rounds for c in r)
    assert _names(ex.expected_tool_rounds) == [["lookup_order"], ["issue_refund"], []]


def test_on_disk_shape_is_exactly_what_save_suite_writes(captured):
    """promote_example builds the suite line directly (the sync's fast path); it must equal the
    pydantic model's own dump, or suites would differ by writer."""
    for name in ("refund", "policy", "security", "parallel", "retry", "declined"):
        for rounds in ("first", "all"):
            record, _ = promote_example(captured[name], rounds=rounds)
            dumped = Example.model_validate(record).model_dump(mode="json", exclude_none=True)
            assert orjson.dumps(dumped) == orjson.dumps(record), name


# -- Crafted captures for the edge rules -------------------------------------------------------

def _capture(rounds: list[list[tuple[str, dict, object]]], *, results: bool | list[bool] = True, answer: bool = True):
    """A capture of requested rounds; each call (name, args, result); ``results`` per round."""
    from evalshift_core.ingest._captures import Capture

    events: list[dict] = []
    n = 0
    per_round = results if isinstance(results, list) else [results] * len(rounds)
    for k, calls in enumerate(rounds):
        requested = []
        for name, args, _ in calls:
            n += 1
            requested.append({"call_id": f"c{n}", "tool_name": name, "arguments": args})
        events.append({"type": "model_call", "round_index": k + 1, "toolset_ref": None, "generation_config": {},
                       "messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
                       "requested_tool_calls": requested, "text": None})
        for call, (name, args, result) in zip(requested, calls):
            events.append({"type": "tool_call", "call_id": call["call_id"], "tool_name": name, "arguments": args})
            if per_round[k]:
                events.append({"type": "tool_result", "call_id": call["call_id"], "tool_name": name,
                               "result": result, "error": None})
    if answer:
        events.append({"type": "model_call", "round_index": len(rounds) + 1, "toolset_ref": None,
                       "generation_config": {}, "messages": [], "requested_tool_calls": [], "text": "done"})
    return Capture(trace_id="f" * 32, root_span_id="e" * 16, prompt_id="p", events=events)


THREE_ROUNDS = [[("a", {}, 1)], [("b", {}, 2)], [("c", {}, 3)]]


def test_coverage_stops_at_first_call_without_result():
    """"Fixture coverage stops at the first round with a call that has no recorded result;
    promotion warns, naming the rounds the replay will cover.\""""
    p = promote_capture(_capture(THREE_ROUNDS, results=[True, False, True]), rounds="all")
    assert [[f.tool_name for f in r] for r in p.example.tool_result_fixtures] == [["a"]]
    assert _names(p.example.expected_tool_rounds) == [["a"], ["b"], ["c"], []]
    (warning,) = [w for w in p.warnings if "--rounds all" in w]
    assert "round 2 call b has no recorded result" in warning
    assert "replay covers rounds 1-2 of 4" in warning and "not replayed: round 3: c" in warning


def test_round_one_uncovered_stays_single_shot():
    """"If round 1 itself is uncovered, replay stays single-shot.\""""
    p = promote_capture(_capture(THREE_ROUNDS, results=False), rounds="all")
    assert p.example.tool_result_fixtures is None and p.example.replay_rounds == 1
    assert any("replay stays single-shot" in w for w in p.warnings)


def test_fixtures_never_cover_the_last_recorded_round():
    """A turn cut off after tool calls (no answer round): the replay's extra round is still recorded."""
    p = promote_capture(_capture(THREE_ROUNDS, answer=False), rounds="all")
    assert len(p.example.tool_result_fixtures) == 2 and p.example.replay_rounds == 3


def test_fixture_results_fall_back_to_messages_sent_to_the_model():
    """No executed tool_result, but the next model call was sent the tool's response."""
    capture = _capture([[("a", {}, None)]], results=False)
    capture.events[-1]["messages"] = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "a", "arguments": {}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "sunny"}]},
    ]
    p = promote_capture(capture, rounds="all")
    assert p.example.tool_result_fixtures[0][0].result == "sunny"


WRAPPER_TOOLS = [{"name": "issue_refund", "input_schema": {
    "type": "object", "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}}}}]


def _wrapped_capture():
    capture = _capture([[("issue_refund", {"payload": {"order_id": "A1", "amount_usd": 5.0}}, {"success": True})]])
    for e in capture.events:
        if e["type"] == "model_call":
            e["toolset_ref"] = "sha256:" + "0" * 64
            e["requested_tool_calls"] = None  # executed ground truth: the wrapper's parameters
    return capture


def test_wrapper_arguments_unwrapped_when_sidecar_schema_confirms():
    """Troubleshooting: "Promotion unwraps these automatically when the capture's own recorded
    toolset schema confirms the wrapping\""""
    p = promote_capture(_wrapped_capture(), toolsets={"sha256:" + "0" * 64: WRAPPER_TOOLS})
    assert p.example.promotion_source == "executed"
    assert p.example.expected_tools[0].arguments == {"order_id": "A1", "amount_usd": 5.0}
    (warning,) = [w for w in p.warnings if "absent from the tool schema" in w]
    assert "expected_tools arguments use keys absent from the tool schema (issue_refund: payload)" in warning
    assert "unwrapped 'payload'" in warning


def test_wrapper_arguments_untouched_without_a_sidecar():
    """"with no resolvable sidecar the recording is left untouched.\""""
    p = promote_capture(_wrapped_capture(), toolsets={})
    assert p.example.expected_tools[0].arguments == {"payload": {"order_id": "A1", "amount_usd": 5.0}}


def test_unknown_keys_without_wrapper_shape_warn_and_stay():
    capture = _wrapped_capture()
    for e in capture.events:
        if e["type"] in ("tool_call",):
            e["arguments"] = {"order": "A1", "amount_usd": 5.0}
    p = promote_capture(capture, toolsets={"sha256:" + "0" * 64: WRAPPER_TOOLS})
    assert p.example.expected_tools[0].arguments == {"order": "A1", "amount_usd": 5.0}
    assert any("absent from the tool schema (issue_refund: order); kept as recorded" in w for w in p.warnings)


def test_application_retries_of_a_failed_call_collapse_on_executed_truth():
    from evalshift_core.ingest._captures import Capture

    events = [{"type": "model_call", "round_index": 1, "toolset_ref": None, "generation_config": {},
               "messages": [], "requested_tool_calls": None, "text": None}]
    for i, err in enumerate(["timeout", "timeout", None]):
        events.append({"type": "tool_call", "call_id": f"r{i}", "tool_name": "lookup", "arguments": {"id": 1}})
        events.append({"type": "tool_result", "call_id": f"r{i}", "tool_name": "lookup", "result": {"ok": 1} if not err else None,
                       "error": err})
    events.append({"type": "model_call", "round_index": 2, "toolset_ref": None, "generation_config": {},
                   "messages": [], "requested_tool_calls": None, "text": "ok"})
    p = promote_capture(Capture(trace_id="a" * 32, events=events))
    assert _names(p.example.expected_tool_rounds) == [["lookup"], []]
    assert p.example.expected_tool_count is None
    assert any("retried by the application" in w for w in p.warnings)


def test_failed_model_call_is_not_a_round():
    capture = _capture([[("a", {}, 1)]])
    capture.events.insert(0, {"type": "model_call", "round_index": 0, "error": "APIConnectionError",
                              "requested_tool_calls": None, "text": None, "messages": []})
    ex = promote_capture(capture).example
    assert _names(ex.expected_tool_rounds) == [["a"], []]


def test_real_captures_round_trip_through_the_suite_model(captured, tmp_path: Path):
    ex = promote_capture(captured["refund"], rounds="all").example
    again = Example.model_validate_json(ex.model_dump_json(exclude_none=True))
    assert again == ex


def test_incomplete_stream_falls_back_to_executed_calls():
    capture = _capture([[("a", {"x": 1}, 1)]])
    capture.events[0]["stream_incomplete"] = True
    capture.events[0]["requested_tool_calls"] = []  # cut short before the call arrived
    p = promote_capture(capture)
    assert p.example.promotion_source == "executed"
    assert _names(p.example.expected_tool_rounds) == [["a"], []]
    assert any("not read to its end" in w for w in p.warnings)
