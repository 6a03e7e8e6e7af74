"""run() under pressure: 429 storms, 5xx, the response cache, the cost pre-flight, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from evalshift_core import Example, ReplayError, run
from evalshift_core.replay._execute import RetryPolicy
from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {
    "base": [{"when": {"user_matches": "refund"}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}},
             {"when": {}, "reply": {"text": "ok"}}],
    "cand": [{"when": {}, "reply": {"text": "sure"}}],
}
SCRIPTS |= {f"gemini-{k}": v for k, v in SCRIPTS.items()}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]
FAST_RETRY = RetryPolicy(max_retries=8, base_s=0.005, max_s=0.05)


def examples(n: int) -> list[Example]:
    return [Example(id=f"ex{i:03d}", inputs={"input": f"please refund order {i}"}, tools=TOOLS) for i in range(n)]


def all_providers(sim: Simulator) -> dict:
    return {"openai": {"base_url": sim.openai_base_url, "api_key": "k"},
            "anthropic": {"base_url": sim.anthropic_base_url, "api_key": "k"},
            "gemini": {"base_url": sim.gemini_base_url, "api_key": "k"}}


@pytest.mark.parametrize(("source", "target"), [("openai:base", "anthropic:cand"), ("gemini:gemini-base", "openai:cand")])
def test_a_429_storm_completes_with_every_row_measured(tmp_path, source, target):
    """The first 12 requests are refused with retry-after; every example still completes."""
    with Simulator(load_scripts(SCRIPTS), rate_limit_first=12, retry_after=0.02) as sim:
        result = run(examples(6), source=source, target=target, base=tmp_path, providers=all_providers(sim),
                     concurrency=4, progress=False, retry=FAST_RETRY)
        statuses = Counter(r["status"] for r in sim.requests)
    assert statuses == {429: 12, 200: 12}
    assert len(result.calls) == 12 and all(c.error is None and c.trace is not None for c in result.calls)
    assert result.requests == 24


def test_retry_after_is_honoured(tmp_path):
    """A 429 with retry-after: 0.3 holds the provider back at least that long."""
    with Simulator(load_scripts(SCRIPTS), rate_limit_first=1, retry_after=0.3) as sim:
        t0 = time.perf_counter()
        run(examples(1), source="openai:base", target="openai:cand", base=tmp_path, providers=all_providers(sim),
            concurrency=1, progress=False, retry=FAST_RETRY)
        assert time.perf_counter() - t0 >= 0.3


def test_5xx_is_retried_with_backoff_then_gives_up_as_a_round_error(tmp_path):
    with Simulator(load_scripts(SCRIPTS), rate_limit_every=1, error_status=503) as sim:
        result = run(examples(1), source="anthropic:base", target="anthropic:cand", base=tmp_path,
                     providers=all_providers(sim), progress=False, retry=RetryPolicy(max_retries=2, base_s=0.001))
        assert len(sim.requests) == 6  # 1 try + 2 retries, per model
    assert all(c.error is not None and c.error.startswith("round 1/1: ") and "503" in c.error for c in result.calls)


def test_a_cached_rerun_makes_zero_requests(tmp_path):
    """A repeated run of the same model on the same example is free; use_cache=False bypasses it."""
    with Simulator(load_scripts(SCRIPTS)) as sim:
        first = run(examples(5), source="gemini:gemini-base", target="anthropic:cand", base=tmp_path,
                    providers=all_providers(sim), progress=False)
        sent = len(sim.requests)
        assert sent == 10
        second = run(examples(5), source="gemini:gemini-base", target="anthropic:cand", base=tmp_path,
                     providers=all_providers(sim), progress=False)
        assert len(sim.requests) == sent
        assert second.requests == 0 and second.cache_hits == 10 and second.estimated_cost_usd == 0
        assert all(c.cached for c in second.calls) and not any(c.cached for c in first.calls)
        assert [c.trace for c in second.calls] == [c.trace for c in first.calls]
        run(examples(5), source="gemini:gemini-base", target="anthropic:cand", base=tmp_path,
            providers=all_providers(sim), progress=False, use_cache=False)
        assert len(sim.requests) == sent + 10


def test_cost_preflight_counts_one_call_per_replayed_round_and_refuses_above_max_cost(tmp_path):
    """seed 001: 'The cost pre-flight counts one call per replayed round.'"""
    # Output priced at $1 per token and input free: each call is estimated at exactly $256.
    prices = {"openai:base": {"input": 0, "output": 1_000_000}, "openai:cand": {"input": 0, "output": 1_000_000}}
    three_rounds = Example(
        id="mr", inputs={"input": "refund"}, tools=TOOLS,
        expected_tool_rounds=[[{"tool_name": "lookup_order"}], [{"tool_name": "lookup_order"}]],
        tool_result_fixtures=[[{"tool_name": "lookup_order", "result": "ok"}],
                              [{"tool_name": "lookup_order", "result": "ok"}]],
    )
    with Simulator(load_scripts(SCRIPTS)) as sim:
        with pytest.raises(ReplayError, match=r"\$1536.00 for 6 model calls is above --max-cost"):
            run([three_rounds], source="openai:base", target="openai:cand", base=tmp_path,
                providers=all_providers(sim), prices=prices, max_cost=1535.99, progress=False)
        assert sim.requests == [] and not (tmp_path / "runs").exists()
        result = run([three_rounds], source="openai:base", target="openai:cand", base=tmp_path,
                     providers=all_providers(sim), prices=prices, max_cost=1536, progress=False)
        assert result.estimated_cost_usd == pytest.approx(1536) and len(sim.requests) == 6


def test_max_cost_needs_a_price_for_every_model_unless_allow_unpriced(tmp_path):
    with pytest.raises(ReplayError, match=r"the cost of openai:base is unknown \(no price\); pass --allow-unpriced"):
        run(examples(1), source="openai:base", target="openai:gpt-4o", base=tmp_path, max_cost=1.0, progress=False)
    assert not (tmp_path / "runs").exists()


def test_price_table_file_under_base_overrides_the_shipped_one(tmp_path):
    from evalshift_core.replay._pricing import load_prices

    assert load_prices(tmp_path).lookup("openai:gpt-4o-2024-08-06").input == 2.5
    assert load_prices(tmp_path).lookup("openai:gpt-4o-mini-2024-07-18").input == 0.15
    (tmp_path / "prices.json").write_text(json.dumps({"openai:gpt-4o": {"input": 9, "output": 9}}))
    assert load_prices(tmp_path).lookup("openai:gpt-4o-2024-08-06").input == 9


_CHILD = textwrap.dedent(
    """
    import sys
    from evalshift_core import Example, run
    url, base, run_id = sys.argv[1:4]
    tools = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
    examples = [Example(id=f"ex{i:03d}", inputs={"input": f"please refund order {i}"}, tools=tools) for i in range(40)]
    run(examples, source="openai:base", target="openai:cand", base=base, run_id=run_id, concurrency=2,
        providers={"openai": {"base_url": url, "api_key": "k"}}, progress=False)
    """
)


def test_a_run_killed_with_sigkill_resumes_without_duplicates(tmp_path):
    """An interrupted run resumes where it stopped: no duplicate rows, no finished row redone."""
    raw = tmp_path / "runs" / "r1" / "raw.jsonl"
    with Simulator(load_scripts(SCRIPTS), latency_s=0.05) as sim:
        child = subprocess.Popen([sys.executable, "-c", _CHILD, sim.openai_base_url, str(tmp_path), "r1"],
                                 env=os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[3])})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if raw.exists() and raw.read_bytes().count(b"\n") >= 10:
                break
            time.sleep(0.01)
        assert child.poll() is None, "the child finished before it could be killed"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        before = [json.loads(line) for line in raw.read_bytes().splitlines()]
        assert 10 <= len(before) < 80
        # simulate a torn write as well: half a line with no newline
        with open(raw, "ab") as fh:
            fh.write(b'{"example_id": "ex039", "role": "sou')
        served_before = len(sim.served())
        result = run(examples_40(), source="openai:base", target="openai:cand", base=tmp_path, run_id="r1",
                     providers=all_providers(sim), progress=False)
        resent = len(sim.served()) - served_before
    rows = [json.loads(line) for line in raw.read_bytes().splitlines()]
    keys = [(r["example_id"], r["role"]) for r in rows]
    assert len(keys) == len(set(keys)) == 80
    assert result.resumed_rows == len(before)
    # only the missing rows were replayed (a request the child finished but never wrote may be cached)
    assert resent + result.cache_hits == 80 - len(before)
    manifest = json.loads((tmp_path / "runs" / "r1" / "run.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumed"]) == 1


def examples_40() -> list[Example]:
    tools = [{"name": "lookup_order", "input_schema": {"type": "object"}}]
    return [Example(id=f"ex{i:03d}", inputs={"input": f"please refund order {i}"}, tools=tools) for i in range(40)]


def test_resume_refuses_other_models(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        run(examples(1), source="openai:base", target="openai:cand", base=tmp_path, run_id="r",
            providers=all_providers(sim), progress=False)
        with pytest.raises(ReplayError, match="cannot resume"):
            run(examples(1), source="openai:base", target="openai:base", base=tmp_path, run_id="r",
                providers=all_providers(sim), progress=False)


def test_concurrency_bounds_requests_in_flight(tmp_path):
    """Default 8 in flight; the simulator sees exactly the configured concurrency, never more."""
    with Simulator(load_scripts(SCRIPTS), latency_s=0.4) as sim:
        run(examples(8), source="openai:base", target="anthropic:cand", base=tmp_path,
            providers=all_providers(sim), progress=False)
        assert sim.max_in_flight == 8
    with Simulator(load_scripts(SCRIPTS), latency_s=0.4) as sim:
        run(examples(3), source="openai:base", target="anthropic:cand", base=tmp_path / "b",
            providers=all_providers(sim), progress=False, concurrency=3)
        assert sim.max_in_flight == 3


def test_per_provider_rate_limit_spaces_requests(tmp_path):
    """rate_limits: 600 requests a minute is one request every 100 ms for that provider."""
    with Simulator(load_scripts(SCRIPTS)) as sim:
        start = time.monotonic()
        run(examples(3), source="openai:base", target="openai:cand", base=tmp_path, providers=all_providers(sim),
            progress=False, rate_limits={"openai": 600})
    stamps = sorted(r["received"] for r in sim.requests)
    # The i-th request is admitted no earlier than start + 100 ms x i, and arrives after it is
    # admitted, so the i-th earliest arrival cannot beat that however late any request runs.
    assert len(stamps) == 6
    assert all(stamp - start >= 0.1 * i - 0.005 for i, stamp in enumerate(stamps))


def test_keys_and_base_urls_come_from_the_sdks_environment_variables(tmp_path, monkeypatch):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        monkeypatch.setenv("OPENAI_BASE_URL", sim.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", sim.gemini_base_url)
        monkeypatch.setenv("GEMINI_API_KEY", "g-env")
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        a = run(examples(1), source="openai:base", target="anthropic:cand", base=tmp_path, progress=False)
        b = run(examples(1), source="gemini:gemini-base", target="gemini:gemini-cand", base=tmp_path, progress=False)
        assert all(c.error is None for c in a.calls + b.calls)
        assert sorted(r["provider"] for r in sim.served()) == ["anthropic", "gemini", "gemini", "openai"]


def test_a_provider_model_entry_points_one_model_at_its_own_server(tmp_path):
    """Any OpenAI-compatible server is an openai: model with a base URL, per model if need be."""
    with Simulator(load_scripts({"base": SCRIPTS["base"]})) as main, Simulator(load_scripts({"cand": SCRIPTS["cand"]})) as local:
        providers = {"openai": {"base_url": main.openai_base_url, "api_key": "k"},
                     "openai:cand": {"base_url": local.openai_base_url}}
        result = run(examples(2), source="openai:base", target="openai:cand", base=tmp_path, providers=providers,
                     progress=False)
        assert all(c.error is None for c in result.calls)
        assert {r["model"] for r in main.requests} == {"base"} and {r["model"] for r in local.requests} == {"cand"}


def test_price_table_from_env_yaml_and_bad_entries_named(tmp_path, monkeypatch):
    from evalshift_core import ConfigError
    from evalshift_core.replay._pricing import load_prices

    table = tmp_path / "p.yaml"
    table.write_text("anthropic:claude-sonnet-4:\n  input: 1\n  output: 2\n")
    monkeypatch.setenv("EVALSHIFT_PRICES", str(table))
    assert load_prices(tmp_path).cost("anthropic:claude-sonnet-4-5", 1_000_000, 1_000_000) == 3.0
    assert load_prices(tmp_path, {"anthropic:claude-sonnet-4": {"input": 0, "output": 0}}).cost(
        "anthropic:claude-sonnet-4-5", 10, 10) == 0.0
    table.write_text("anthropic:claude-sonnet-4:\n  input: cheap\n")
    with pytest.raises(ConfigError, match=r"p.yaml: anthropic:claude-sonnet-4: needs numeric") as err:
        load_prices(tmp_path)
    assert err.value.file == str(table)


def test_progress_bar_shows_rows_and_cost_on_stderr(tmp_path, capsys):
    prices = {"openai:base": {"input": 1, "output": 1}, "openai:cand": {"input": 1, "output": 1}}
    with Simulator(load_scripts(SCRIPTS)) as sim:
        run(examples(3), source="openai:base", target="openai:cand", base=tmp_path, providers=all_providers(sim),
            prices=prices, progress=True)
    err = capsys.readouterr().err
    assert "replay " in err and "6/6" in err and "spent" in err and "$0.0" in err


def test_resume_keeps_failed_rows_unless_asked_to_retry_them(tmp_path):
    with Simulator(load_scripts(SCRIPTS), rate_limit_first=100) as sim:
        first = run(examples(2), source="openai:base", target="openai:cand", base=tmp_path, run_id="r",
                    providers=all_providers(sim), progress=False, retry=RetryPolicy(max_retries=0))
        assert all(c.error and c.error.startswith("round 1/1: RateLimitError: 429") for c in first.calls)
        sim.rate_limit_first = 0
        kept = run(examples(2), source="openai:base", target="openai:cand", base=tmp_path, run_id="r",
                   providers=all_providers(sim), progress=False)
        assert kept.requests == 0 and all(c.error for c in kept.calls)
        retried = run(examples(2), source="openai:base", target="openai:cand", base=tmp_path, run_id="r",
                      providers=all_providers(sim), progress=False, retry_errors=True)
    assert retried.requests == 4 and not any(c.error for c in retried.calls)
    rows = (tmp_path / "runs" / "r" / "raw.jsonl").read_text().splitlines()
    assert len(rows) == 4 and not any('"error"' in r for r in rows)


def test_run_works_when_called_from_a_running_event_loop(tmp_path):
    """Notebooks call run()/compare() with a loop already running; the replay uses its own."""
    import asyncio

    async def inside() -> list:
        with Simulator(load_scripts(SCRIPTS)) as sim:
            return run(examples(2), source="openai:base", target="openai:cand", base=tmp_path,
                       providers=all_providers(sim), progress=False).calls

    calls = asyncio.run(inside())
    assert len(calls) == 4 and not any(c.error for c in calls)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_timeout_is_retried_then_fails_the_round(tmp_path, provider):
    """Timeouts count as transient: retried, and when they persist the example fails as round 1/1."""
    model = {"openai": "openai:base", "anthropic": "anthropic:base", "gemini": "gemini:gemini-base"}[provider]
    with Simulator(load_scripts(SCRIPTS), latency_s=0.6) as sim:
        providers = {k: v | {"timeout": 0.15} for k, v in all_providers(sim).items()}
        result = run(examples(1), source=model, target=model, base=tmp_path, providers=providers, progress=False,
                     retry=RetryPolicy(max_retries=1, base_s=0.001))
        assert len(sim.requests) == 4  # two attempts per model
    assert all(c.error and c.error.startswith("round 1/1: ") and "imeout" in c.error for c in result.calls)
