"""The OpenAI Agents SDK (``openai-agents``): Agent + Runner with function tools on the simulator,
over the Responses API (its default), captured by the SDK underneath it, synced and replayed.

The Runner calls ``AsyncOpenAI().responses.create``, which the SDK patches; the function tools
are ``@evalshift_sdk.tool`` functions under the framework's ``function_tool``. Tracing export is
turned off so nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from _capture_agent import simulator
from framework_support import (
    REFUND_TICKET,
    SYSTEM,
    assert_refund_loop,
    captured,
    replay_on,
    support_tools,
    synced,
)

import evalshift_sdk

agents = pytest.importorskip("agents")
# The Agents SDK exports its traces to the vendor's endpoint by default: off for this process.
agents.set_tracing_disabled(True)


def _agent(sim: Any, tools: list[Any]) -> Any:
    client = openai.AsyncOpenAI(base_url=sim.openai_base_url, api_key="sk-test", max_retries=0)
    return agents.Agent(name="support", instructions=SYSTEM,
                        model=agents.OpenAIResponsesModel(model="sim-baseline", openai_client=client),
                        tools=[agents.function_tool(fn) for fn in tools])


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_agent_runner_over_responses_is_captured_synced_and_replayed(tmp_path, streamed):
    """``Runner.run`` posts ``responses.create``; ``Runner.run_streamed`` streams through
    ``responses.with_streaming_response`` and stops reading at the final event: both give the
    same suite."""
    with simulator() as sim:
        agent = _agent(sim, list(support_tools().values()))

        async def run() -> str:
            if not streamed:
                return str((await agents.Runner.run(agent, REFUND_TICKET)).final_output)
            result = agents.Runner.run_streamed(agent, REFUND_TICKET)
            async for _ in result.stream_events():
                pass
            return str(result.final_output)

        with captured(tmp_path / "captures"), evalshift_sdk.turn(prompt_id="support", inputs={"ticket": REFUND_TICKET}):
            answer = asyncio.run(run())
        assert "refunded $49.99 on order A1001" in answer
        served = sim.served("openai")
        assert len(served) == 3 and all(s["path"].endswith("/responses") for s in served), served
        assert all(bool(s["body"].get("stream")) is streamed for s in served)

        example = synced(tmp_path / "captures", tmp_path / "base")
        assert_refund_loop(example, tmp_path / "base")
        replay_on(sim, tmp_path / "base")


def test_undecorated_function_tools_still_give_results_as_the_model_saw_them(tmp_path):
    """Without ``@evalshift_sdk.tool`` the executions are still recovered, from the
    ``function_call_output`` items the Runner sends back: the result is the text the model saw
    (the framework's ``str()`` of the returned dict), not the structured value."""

    def lookup_order(order_id: str) -> dict:
        """Look up an order by id."""
        return {"order_id": order_id, "status": "shipped", "amount_usd": 49.99}

    def issue_refund(order_id: str, amount_usd: float) -> dict:
        """Issue a refund on an existing order."""
        return {"success": True, "refund_id": f"rf_{order_id.lower()}"}

    with simulator() as sim:
        agent = _agent(sim, [lookup_order, issue_refund])
        with captured(tmp_path / "captures"), evalshift_sdk.turn(prompt_id="support", inputs={"ticket": REFUND_TICKET}):
            asyncio.run(agents.Runner.run(agent, REFUND_TICKET))
        example = synced(tmp_path / "captures", tmp_path / "base")
        assert example.promotion_source == "requested"
        assert [[c.tool_name for c in r] for r in example.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
        fixtures = [[(f.tool_name, f.result) for f in r] for r in example.tool_result_fixtures]
        assert fixtures == [[("lookup_order", str(lookup_order("A1001")))],
                            [("issue_refund", str(issue_refund("A1001", 49.99)))]]
        replay_on(sim, tmp_path / "base")
