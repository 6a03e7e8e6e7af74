"""run() through the three official SDKs against the simulator: single-shot and teacher-forced.

Assertions read the requests the simulator actually received, so they check the wire, not us.
"""

from __future__ import annotations

import json

import pytest

from evalshift_core import Example, run
from evalshift_core.simulator import Simulator, load_scripts

LOOKUP = {"name": "lookup_order", "arguments": {"order_id": "A1001"}}
REFUND = {"name": "issue_refund", "arguments": {"order_id": "A1001", "amount_usd": 20}}
TOOLS = [
    {"name": "lookup_order", "description": "Look an order up.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
    {"type": "function", "function": {"name": "issue_refund", "description": "Refund an order.",
                                      "parameters": {"type": "object", "properties": {
                                          "order_id": {"type": "string"}, "amount_usd": {"type": "number"}}}}},
]

# The recording: lookup_order, then issue_refund (whose result was an error), then the answer.
RECORDED_RESULT = {"status": "delivered", "total_usd": 20}
RECORDED_ERROR = "refund service unavailable"

SCRIPTS = {
    # The baseline follows the recorded agent.
    "base": [
        {"when": {"after": []}, "reply": {"tool_calls": [LOOKUP]}},
        {"when": {"after": ["lookup_order"]}, "reply": {"tool_calls": [REFUND]}},
        {"when": {"after": ["lookup_order", "issue_refund"]}, "reply": {"text": "Refund failed; try later."}},
        {"when": {}, "reply": {"text": "Returns are free within 30 days."}},
    ],
    # The candidate refunds first; teacher forcing must still show it the recorded lookup_order.
    "cand": [
        {"when": {"after": []}, "reply": {"tool_calls": [REFUND]}},
        {"when": {"after": ["lookup_order"]}, "reply": {"tool_calls": [REFUND, LOOKUP]}},
        {"when": {}, "reply": {"text": "Done."}},
    ],
    "broken-round-2": [
        {"when": {"after": []}, "reply": {"tool_calls": [LOOKUP]}},
        {"when": {}, "reply": {"error": {"status": 400, "message": "context too long"}}},
    ],
}

PROVIDERS = ["openai", "openai-responses", "anthropic", "gemini"]


def _scripts() -> dict:
    # Gemini model names route by their gemini- prefix; same rules under both names.
    data = dict(SCRIPTS)
    data.update({f"gemini-{k}": v for k, v in SCRIPTS.items()})
    return load_scripts(data)


@pytest.fixture
def sim():
    with Simulator(_scripts()) as s:
        yield s


def providers_for(sim: Simulator, flavour: str) -> dict:
    key = {"openai": "k", "api": "chat"}
    if flavour == "openai-responses":
        return {"openai": {"base_url": sim.openai_base_url, "api_key": "k", "api": "responses"}}
    if flavour == "openai":
        return {"openai": {"base_url": sim.openai_base_url, "api_key": key["openai"]}}
    if flavour == "anthropic":
        return {"anthropic": {"base_url": sim.anthropic_base_url, "api_key": "k"}}
    return {"gemini": {"base_url": sim.gemini_base_url, "api_key": "k"}}


def model(flavour: str, name: str) -> str:
    provider = "openai" if flavour.startswith("openai") else flavour
    return f"gemini:gemini-{name}" if provider == "gemini" else f"{provider}:{name}"


def agent_example(**extra) -> Example:
    return Example(id="ex_refund", inputs={"input": "Please refund order A1001, $20"}, tools=TOOLS, **extra)


def multi_round_example() -> Example:
    return agent_example(
        expected_tool_rounds=[
            [{"tool_name": "lookup_order", "arguments": {"order_id": "A1001"}, "call_id": "rec_lookup"}],
            [{"tool_name": "issue_refund", "arguments": {"order_id": "A1001", "amount_usd": 20}}],
        ],
        tool_result_fixtures=[
            [{"tool_name": "lookup_order", "result": RECORDED_RESULT, "call_id": "rec_lookup"}],
            [{"tool_name": "issue_refund", "error": RECORDED_ERROR}],
        ],
    )


def served_bodies(sim: Simulator, name: str) -> list[dict]:
    return [r["body"] for r in sim.served() if name in (r["model"] or "")]


def _wire_tool_results(flavour: str, body: dict) -> list[tuple[str | None, object]]:
    """(call id, result content) of every tool result a request carried, in the provider's shape."""
    out: list[tuple[str | None, object]] = []
    if flavour == "openai":
        out = [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
    elif flavour == "openai-responses":
        out = [(i["call_id"], i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]
    elif flavour == "anthropic":
        out = [(b["tool_use_id"], b["content"]) for m in body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    else:
        out = [(p["functionResponse"].get("id"), p["functionResponse"]["response"]) for c in body["contents"]
               for p in c["parts"] if "functionResponse" in p]
    return out


def _wire_tool_calls(flavour: str, body: dict) -> list[tuple[str | None, str]]:
    if flavour == "openai":
        return [(c["id"], c["function"]["name"]) for m in body["messages"] for c in m.get("tool_calls") or []]
    if flavour == "openai-responses":
        return [(i["call_id"], i["name"]) for i in body["input"] if i.get("type") == "function_call"]
    if flavour == "anthropic":
        return [(b["id"], b["name"]) for m in body["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "tool_use"]
    return [(p["functionCall"].get("id"), p["functionCall"]["name"]) for c in body["contents"]
            for p in c["parts"] if "functionCall" in p]


@pytest.mark.parametrize("flavour", PROVIDERS)
def test_single_shot_replay_makes_one_call_per_example_per_model(sim, tmp_path, flavour):
    """seed 001: '--rounds first: single-shot replay. run issues one model call per example and
    feeds no tool result back'."""
    result = run([agent_example()], source=model(flavour, "base"), target=model(flavour, "cand"),
                 base=tmp_path, providers=providers_for(sim, flavour), progress=False)
    assert len(sim.served()) == 2
    src, tgt = result.calls
    assert (src.role, tgt.role) == ("source", "target")
    assert src.trace.names() == ["lookup_order"] and tgt.trace.names() == ["issue_refund"]
    assert src.trace.round_count is None and all(c.round_index is None for c in src.trace.calls)
    assert src.trace.calls[0].arguments == {"order_id": "A1001"}
    assert src.usage.input_tokens > 0 and src.usage.output_tokens > 0 and src.rounds == 1
    rows = [json.loads(line) for line in (result.run_dir / "raw.jsonl").read_text().splitlines()]
    assert sorted((r["example_id"], r["role"]) for r in rows) == [("ex_refund", "source"), ("ex_refund", "target")]


@pytest.mark.parametrize("flavour", PROVIDERS)
def test_teacher_forced_round_two_carries_the_recorded_call_and_result_not_the_candidates(sim, tmp_path, flavour):
    """seed 001: 'Round k sees ... the recorded rounds 1..k-1 ... The candidate's own calls are
    never fed back' and 'a recorded tool error as {"error": "..."}'."""
    result = run([multi_round_example()], source=model(flavour, "base"), target=model(flavour, "cand"),
                 base=tmp_path, providers=providers_for(sim, flavour), progress=False)
    cand = served_bodies(sim, "cand")
    assert len(cand) == 3, "every fixture round plus the one after it"
    round1, round2, round3 = cand
    # round 1: nothing recorded fed back
    assert _wire_tool_calls(flavour, round1) == [] and _wire_tool_results(flavour, round1) == []
    # round 2: the recorded lookup_order with its recorded id and result, though the candidate refunded
    assert _wire_tool_calls(flavour, round2) == [("rec_lookup", "lookup_order")]
    [(result_id, content)] = _wire_tool_results(flavour, round2)
    assert result_id == "rec_lookup"
    if flavour == "gemini":
        assert content == {"result": RECORDED_RESULT}
    else:
        assert json.loads(content) == RECORDED_RESULT
    # round 3: the recorded error, as {"error": "..."}; the synthesised call id is stable
    calls3 = _wire_tool_calls(flavour, round3)
    assert [name for _, name in calls3] == ["lookup_order", "issue_refund"]
    assert calls3[1][0] == "call_r2_0"
    error = _wire_tool_results(flavour, round3)[1][1]
    expected = {"error": RECORDED_ERROR}
    assert (error if flavour == "gemini" else json.loads(error)) == expected
    if flavour != "gemini":
        assert error == '{"error": "refund service unavailable"}'
    # source, target: identical context in every round
    base = served_bodies(sim, "base")
    for b, c in zip(base, cand):
        assert _wire_tool_results(flavour, b) == _wire_tool_results(flavour, c)

    src, tgt = result.calls
    assert len(result.calls) == 2
    assert tgt.trace.round_count == 3 and tgt.rounds == 3
    assert [(c.tool_name, c.round_index) for c in tgt.trace.calls] == [
        ("issue_refund", 1), ("issue_refund", 2), ("lookup_order", 2)]
    assert [c.sequence_index for c in tgt.trace.calls] == [0, 1, 2]
    assert src.text == "Refund failed; try later." and src.trace.final_text == src.text
    assert [(c.tool_name, c.round_index) for c in src.trace.calls] == [("lookup_order", 1), ("issue_refund", 2)]


def test_round_usage_and_latency_are_summed(sim, tmp_path):
    """seed 001: 'tokens, cost and latency summed over rounds, text the last round's answer'."""
    prices = {"openai:base": {"input": 1.0, "output": 2.0}, "openai:cand": {"input": 1.0, "output": 2.0}}
    result = run([multi_round_example()], source="openai:base", target="openai:cand", base=tmp_path,
                 providers=providers_for(sim, "openai"), progress=False, prices=prices)
    src = result.calls[0]
    # The simulator's own token count is len(json(messages)) // 4 per request.
    expected_in = sum(max(1, len(json.dumps(b["messages"], separators=(",", ":"), ensure_ascii=False)) // 4)
                      for b in served_bodies(sim, "base"))
    assert abs(src.usage.input_tokens - expected_in) <= 3
    assert src.cost_usd == pytest.approx((src.usage.input_tokens * 1.0 + src.usage.output_tokens * 2.0) / 1e6)
    assert src.latency_ms > 0


@pytest.mark.parametrize("flavour", ["openai", "anthropic", "gemini"])
def test_model_error_in_round_k_fails_the_example_unmeasured(sim, tmp_path, flavour):
    """seed 001: 'A model error in round k fails the example as round k/n: …; completed rounds are
    discarded'."""
    result = run([multi_round_example()], source=model(flavour, "base"), target=model(flavour, "broken-round-2"),
                 base=tmp_path, providers=providers_for(sim, flavour), progress=False)
    tgt = result.calls[1]
    assert tgt.error is not None and tgt.error.startswith("round 2/3: ")
    assert "400" in tgt.error and tgt.trace is None and tgt.text is None
    assert result.calls[0].error is None
    # a 400 is not retried
    assert len(served_bodies(sim, "broken")) == 1


def test_text_only_row_sends_no_tools_beside_an_agent_row(sim, tmp_path):
    """seed 001: 'an inline tools list ([] is a real "no tools offered" value) ... one suite freely
    mixes agent and text-only rows under the same prompt'."""
    from evalshift_core._models import Toolset
    from evalshift_core.store._suites import write_toolset

    toolset = Toolset.model_validate(TOOLS)
    write_toolset(tmp_path, toolset.ref, toolset.canonical())
    examples = [
        Example(id="agent", inputs={"input": "refund A1001"}, toolset_ref=toolset.ref),
        Example(id="text", inputs={"input": "what is your policy?"}, tools=[]),
    ]
    run(examples, source="anthropic:base", target="anthropic:base", base=tmp_path,
        providers=providers_for(sim, "anthropic"), progress=False)
    by_text = {r["body"]["messages"][-1]["content"][0]["text"]: r["body"] for r in sim.served("anthropic")}
    assert [t["name"] for t in by_text["refund A1001"]["tools"]] == ["lookup_order", "issue_refund"]
    assert "tools" not in by_text["what is your policy?"]


def test_history_prefix_comes_before_the_rendered_prompt(sim, tmp_path):
    example = Example(id="h", inputs={"q": "refund A1001"}, tools=[],
                      history=[{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                               {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                               {"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}])
    run([example], source="gemini:gemini-base", target="gemini:gemini-base", base=tmp_path,
        providers=providers_for(sim, "gemini"), template="Customer: {q}", progress=False)
    body = sim.served("gemini")[0]["body"]
    assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "hi"), ("model", "hello"), ("user", "Customer: refund A1001")]


def test_gemini_3_recorded_calls_carry_the_documented_signature_bypass(tmp_path):
    """Gemini 3 checks thought signatures on history function calls; a recorded call the model
    never produced carries the documented bypass value."""
    scripts = load_scripts({"gemini-3-base": SCRIPTS["base"]})
    with Simulator(scripts) as sim:
        run([multi_round_example()], source="gemini:gemini-3-base", target="gemini:gemini-3-base", base=tmp_path,
            providers=providers_for(sim, "gemini"), progress=False)
        bodies = [r["body"] for r in sim.served()]
    parts = [p for b in bodies for c in b["contents"] for p in c["parts"] if "functionCall" in p]
    assert len(parts) == 2 * (1 + 2)  # rounds 2 and 3 carry 1 and 2 recorded calls, per model
    assert {p["thoughtSignature"] for p in parts} == {"skip_thought_signature_validator"}


def test_providers_from_evalshift_yaml_reach_the_clients(sim, tmp_path):
    """compare(config=...) passes evalshift.yaml's providers: mapping to run()."""
    from evalshift_core import compare

    config = {"providers": {"anthropic": {"base_url": sim.anthropic_base_url, "api_key": "k"}},
              "evaluators": {"tool_selection": [{"name": "routing"}]}}
    cmp = compare([agent_example()], source="anthropic:base", target="anthropic:cand", config=config,
                  out_dir=tmp_path, run_options={"progress": False, "concurrency": 2})
    assert [r["model"] for r in sim.served("anthropic")] and cmp.run_dir.exists()
    rows = [json.loads(line) for line in (cmp.run_dir / "raw.jsonl").read_text().splitlines()]
    assert {r["role"]: r["trace"]["calls"][0]["tool_name"] for r in rows} == {
        "source": "lookup_order", "target": "issue_refund"}


def test_a_suite_promoted_with_rounds_all_replays_teacher_forced_end_to_end(demo_simulator, tmp_path):
    """seed 001 walkthrough with --rounds all: capture the support agent, sync, replay."""
    import os
    import subprocess
    import sys

    from evalshift_core import load_suite, sync
    from evalshift_core.cli._demo import find_example_agent

    env = dict(os.environ, EVALSHIFT_CAPTURE="1", EVALSHIFT_CAPTURE_DIR=str(tmp_path / "caps"),
               OPENAI_BASE_URL=demo_simulator.openai_base_url, OPENAI_API_KEY="k")
    subprocess.run([sys.executable, str(find_example_agent()), "--quiet"], env=env, check=True)
    examples = load_suite(sync(tmp_path / "caps", base=tmp_path, suite_name="s", rounds="all").suites["s"])
    forced = [e for e in examples if e.tool_result_fixtures]
    assert forced, "the support agent's refund and status turns have several rounds"
    before = len(demo_simulator.served())
    result = run(examples, source="openai:sim-baseline", target="openai:sim-baseline", base=tmp_path,
                 providers={"openai": {"base_url": demo_simulator.openai_base_url, "api_key": "k"}}, progress=False)
    assert len(demo_simulator.served()) - before == 2 * sum(e.replay_rounds for e in examples)
    by_key = {(c.example_id, c.role): c for c in result.calls}
    for example in forced:
        call = by_key[(example.id, "source")]
        assert call.error is None and call.trace.round_count == example.replay_rounds
        # the baseline is the model the suite was captured from: it repeats every recorded round
        for k in range(1, example.replay_rounds):
            assert [c.tool_name for c in call.trace.round(k)] == [c.tool_name for c in example.expected_round(k)]
        assert call.text and call.trace.round(example.replay_rounds) == []
