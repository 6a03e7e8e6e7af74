"""`evalshift run/compare --dry-run`: the planned calls, tokens and cost per model, nothing sent;
and a model without a price (a local server's) is a warning, or under --max-cost an unknown cost.

Real provider SDKs are set up against the loopback simulator, which counts every request it gets:
a dry run must leave that count at zero and write no run folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_cli

from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {
    "base": [{"when": {}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}}],
    "cand": [{"when": {}, "reply": {"text": "sure"}}],
    "local": [{"when": {}, "reply": {"text": "sure"}}],  # a local server's model: no price anywhere
}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]
# Input free and output at $1 a token: each call is estimated at exactly $256 online, $128 through batch APIs.
PRICES = {"openai:base": {"input": 0, "output": 1_000_000}, "openai:cand": {"input": 0, "output": 1_000_000},
          "batch_discount": {"openai": 0.5}}


def _project(tmp_path: Path, sim: Simulator, n: int = 2) -> None:
    (tmp_path / "suite.jsonl").write_text("".join(
        json.dumps({"id": f"t{i}", "inputs": {"input": f"please refund order {i}"}, "tools": TOOLS}) + "\n"
        for i in range(n)))
    (tmp_path / "evalshift.yaml").write_text(f'providers:\n  openai: {{base_url: "{sim.openai_base_url}", api_key: k}}\n')
    (tmp_path / ".evalshift").mkdir()
    (tmp_path / ".evalshift" / "prices.json").write_text(json.dumps(PRICES))


@pytest.mark.parametrize("command", ["run", "compare"])
def test_dry_run_prints_calls_tokens_and_cost_per_model_and_sends_nothing(tmp_path, command):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        out = run_cli(command, "--suite", "suite.jsonl", "--from", "openai:base", "--to", "openai:cand", "--dry-run",
                      cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert sim.requests == []
    assert not (tmp_path / ".evalshift" / "runs").exists() and not (tmp_path / ".evalshift" / "cache").exists()
    lines = out.stdout.splitlines()
    assert lines[0] == "2 examples of suite: openai:base -> openai:cand"
    assert lines[1] == "dry run: nothing was sent and nothing written"
    assert lines[2].startswith("  source openai:base: 2 calls, about ")
    assert lines[2].endswith(" + 512 output tokens, about $512.00 online ($256.00 through batch APIs); "
                             "0 from the cache")
    assert lines[3].startswith("  target openai:cand: 2 calls, about ")
    assert lines[4] == "pre-flight: 4 model calls, about $1024.00 online ($512.00 through batch APIs with --batch)"


def test_dry_run_json_and_batch_mode_and_the_calls_the_cache_would_serve(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        first = run_cli("run", "--suite", "suite.jsonl", "--from", "openai:base", "--to", "openai:cand",
                        "--run-id", "r1", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        sent = len(sim.requests)
        assert sent == 4
        # one more example: its two calls are to send, the first two examples' four come from the cache
        _project_more = tmp_path / "suite.jsonl"
        _project_more.write_text(_project_more.read_text() + json.dumps(
            {"id": "t9", "inputs": {"input": "please refund order 9"}, "tools": TOOLS}) + "\n")
        out = run_cli("compare", "--suite", "suite.jsonl", "--from", "openai:base", "--to", "openai:cand",
                      "--dry-run", "--batch", "--json", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert len(sim.requests) == sent
    payload = json.loads(out.stdout)
    assert payload["dry_run"] is True and payload["replay"] == "batch"
    assert (payload["calls"], payload["cached_calls"]) == (2, 4)
    assert payload["online_usd"] == 512 and payload["batch_usd"] == 256
    assert [(m["role"], m["model"], m["calls"], m["cached_calls"], m["output_tokens"], m["online_usd"], m["batch_usd"])
            for m in payload["models"]] == [("source", "openai:base", 1, 2, 256, 256, 128),
                                            ("target", "openai:cand", 1, 2, 256, 256, 128)]
    assert all(m["input_tokens"] > 0 for m in payload["models"])
    assert sorted(p.name for p in (tmp_path / ".evalshift" / "runs").iterdir()) == ["r1"]


def test_dry_run_says_when_max_cost_would_refuse_and_still_exits_0(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        out = run_cli("run", "--suite", "suite.jsonl", "--from", "openai:base", "--to", "openai:cand",
                      "--dry-run", "--max-cost", "1000", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert sim.requests == []
    assert out.stdout.splitlines()[-1] == ("--max-cost would refuse to start: estimated cost $1024.00 for 4 model "
                                           "calls is above --max-cost $1000.00; nothing was sent")


HINT = ('add {"openai:local": {"input": USD, "output": USD}} (USD per 1M tokens; 0 for a local server) to '
        '.evalshift/prices.json or to a file named by $EVALSHIFT_PRICES')


def _run(tmp_path: Path, *args: str):
    return run_cli("run", "--suite", "suite.jsonl", "--from", "openai:base", "--to", "openai:local", "--no-cache",
                   *args, cwd=tmp_path)


def test_an_unpriced_model_is_a_warning_with_the_override_hint_not_an_error(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        dry = _run(tmp_path, "--dry-run")
        assert sim.requests == []
        out = _run(tmp_path)
        assert out.returncode == 0, out.stderr
        assert len(sim.requests) == 4
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[3:] == [
        "  target openai:local: 2 calls, about 110 input + 512 output tokens, cost unknown (no price); 0 from the cache",
        "pre-flight: 4 model calls, about $512.00 online ($256.00 through batch APIs with --batch); "
        "no price for openai:local",
        f"warning: no price for openai:local: its cost is unknown and left out of the estimate; {HINT}",
    ]
    assert f"warning: no price for openai:local: its cost is unknown and left out of the estimate; {HINT}" \
        in out.stderr.splitlines()


def test_max_cost_refuses_an_unknown_cost_and_names_the_flag_that_allows_it(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        out = _run(tmp_path, "--max-cost", "5000")
        assert sim.requests == []
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.splitlines()[-1] == (
        "error: cannot check --max-cost: the cost of openai:local is unknown (no price); pass --allow-unpriced to "
        f"start anyway with only the priced calls held to the cap, or {HINT}; nothing was sent")
    assert not (tmp_path / ".evalshift" / "runs").exists()


def test_max_cost_with_allow_unpriced_holds_the_priced_calls_to_the_cap_and_proceeds(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        out = _run(tmp_path, "--max-cost", "512", "--allow-unpriced")  # the priced side: exactly $512.00
        assert out.returncode == 0, out.stderr
        assert len(sim.requests) == 4
    run_json = json.loads(next((tmp_path / ".evalshift" / "runs").glob("*/run.json")).read_text())
    assert run_json["unpriced_models"] == ["openai:local"] and run_json["estimated_cost_usd"] == 512


@pytest.mark.parametrize("extra", [(), ("--allow-unpriced",)])
def test_max_cost_exceeded_is_still_refused(tmp_path, extra):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        _project(tmp_path, sim)
        out = run_cli("run", "--suite", "suite.jsonl", "--from", "openai:base", "--to",
                      "openai:local" if extra else "openai:cand", "--max-cost", "511.99", *extra, cwd=tmp_path)
        assert sim.requests == []
    assert out.returncode == 1
    unknown = " (not counting openai:local, whose cost is unknown)" if extra else ""
    calls = 4
    cost = "$512.00" if extra else "$1024.00"
    assert out.stderr.splitlines()[-1] == (f"error: estimated cost {cost} for {calls} model calls{unknown} is above "
                                           "--max-cost $511.99; nothing was sent")
