"""`evalshift cache info` and `cache clear`: what the response cache holds, and emptying it."""

from __future__ import annotations

import json

from evalshift_core.cli._demo import DEMO_SCRIPTS
from evalshift_core.simulator import Simulator, load_scripts

TOOLS = [{"name": "lookup_order", "description": "Look up an order.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


def test_info_counts_the_cached_responses_and_clear_removes_only_them(cli, tmp_path):
    (tmp_path / "suite.jsonl").write_text("".join(
        json.dumps({"id": f"t{i}", "inputs": {"input": f"Where is my order L{1100 + i}?"}, "tools": TOOLS,
                    "expected_tools": [{"tool_name": "lookup_order"}]}) + "\n" for i in range(2)))
    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        env = {"OPENAI_BASE_URL": sim.openai_base_url, "OPENAI_API_KEY": "sk-sim"}
        args = ("run", "--suite", "suite.jsonl", "--from", "openai:sim-baseline", "--to", "openai:sim-candidate")
        first = cli(*args, env=env)
        assert first.returncode == 0, first.stderr
        assert "0 of 4 responses from the cache" in first.stdout
        info = cli("cache", "info", "--json")
        assert info.returncode == 0, info.stderr
        held = json.loads(info.stdout)
        assert held["responses"] == 4 and held["bytes"] > 0
        assert cli("cache", "info").stdout.startswith("4 cached responses, ")
        foreign = tmp_path / ".evalshift" / "cache" / "notes.txt"
        foreign.write_text("not a cached response")
        cleared = cli("cache", "clear")
        assert cleared.returncode == 0, cleared.stderr
        assert cleared.stdout.startswith("removed 4 cached responses (")
        assert foreign.read_text() == "not a cached response"
        assert json.loads(cli("cache", "info", "--json").stdout)["responses"] == 0
        sent = len(sim.requests)
        again = cli(*args, env=env)
        assert again.returncode == 0, again.stderr
        assert len(sim.requests) - sent == 4  # an empty cache: every request goes out again
