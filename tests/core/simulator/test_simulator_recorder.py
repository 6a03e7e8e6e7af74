"""``record_example``: a scripted model's agent loop promoted into an example, replayable as recorded."""

from __future__ import annotations

from evalshift_core import evaluate_run, run
from evalshift_core.cli._demo import DEMO_SCRIPTS
from evalshift_core.simulator import Simulator, load_scripts
from evalshift_core.simulator._recorder import record_example

TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
         {"name": "issue_refund", "input_schema": {"type": "object", "properties": {"amount_usd": {"type": "number"}}}},
         {"name": "notify_security_team", "input_schema": {"type": "object"}}]
TICKET = "Order A1001 arrived broken. Please refund the $49.99 I paid."


def _results(name, arguments):
    return {"order_id": arguments.get("order_id"), "ok": True}


def test_a_recorded_refund_has_its_rounds_fixtures_and_recording():
    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        ex = record_example(sim, "sim-baseline", TICKET, example_id="t1", tools=TOOLS, run_tool=_results,
                            tags=["refund"])
        single = record_example(sim, "sim-baseline", TICKET, example_id="t2", tools=TOOLS, run_tool=_results,
                                rounds="first")
    assert [[c.tool_name for c in r] for r in ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}
    assert [[f.tool_name for f in r] for r in ex.tool_result_fixtures] == [["lookup_order"], ["issue_refund"]]
    assert ex.replay_rounds == 3 and ex.promotion_source == "requested"
    assert ex.recording.model == "sim-baseline" and ex.recording.text.startswith("I've refunded $49.99")
    assert single.tool_result_fixtures is None and single.recording.text == ""


def test_a_replay_of_the_recorded_model_matches_its_recording(tmp_path):
    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        ex = record_example(sim, "sim-baseline", TICKET, example_id="t1", tools=TOOLS, run_tool=_results)
        result = run([ex], source="openai:sim-baseline", target="openai:sim-candidate", base=tmp_path,
                     providers={"openai": {"base_url": sim.openai_base_url, "api_key": "k"}}, progress=False)
    records = evaluate_run([ex], result.calls, {"tool_selection": [{"name": "r", "mode": "set"}]}, progress=False)
    [record] = records
    assert record.metadata["baseline"]["kind"] == "recording"
    assert record.source_score == 1.0  # the teacher-forced source replay made the recorded calls
