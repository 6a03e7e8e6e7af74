"""The OpenAI Agents SDK (``openai-agents``): Agent + Runner with function tools on the simulator,
over the Responses API (its default), captured by the SDK underneath it, synced and replayed.

The Runner calls ``AsyncOpenAI().responses.create``, which the SDK patches; the function tools
are ``@evalshift_sdk.tool`` functions under the framework's ``function_tool``. Tracing export is
turned off so nothing leaves the machine.
"""

from __future__ import annotations

import asyncio

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


def test_agent_runner_over_responses_is_captured_synced_and_replayed(tmp_path):
    with simulator() as sim:
        client = openai.AsyncOpenAI(base_url=sim.openai_base_url, api_key="sk-test", max_retries=0)
        agent = agents.Agent(
            name="support", instructions=SYSTEM,
            model=agents.OpenAIResponsesModel(model="sim-baseline", openai_client=client),
            tools=[agents.function_tool(fn) for fn in support_tools().values()],
        )
        with captured(tmp_path / "captures"), evalshift_sdk.turn(prompt_id="support", inputs={"ticket": REFUND_TICKET}):
            result = asyncio.run(agents.Runner.run(agent, REFUND_TICKET))
        assert "refunded $49.99 on order A1001" in result.final_output
        served = sim.served("openai")
        assert len(served) == 3 and all(s["path"].endswith("/responses") for s in served), served

        example = synced(tmp_path / "captures", tmp_path / "base")
        assert_refund_loop(example, tmp_path / "base")
        replay_on(sim, tmp_path / "base")
