"""run(batch=True) through the official SDKs' batch APIs against the simulator.

The rows must be what online replay writes; failures inside a batch follow the retry policy; the
cache keeps requests out of batches; custom ids are indices, safe for every provider.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_run_replay import (
    PROVIDERS,
    _scripts,
    agent_example,
    model,
    multi_round_example,
    providers_for,
)

from evalshift_core import ConfigError, Example, run
from evalshift_core.replay._batch import BatchPolicy, BatchState, custom_id
from evalshift_core.replay._execute import RetryPolicy
from evalshift_core.replay._pricing import default_prices, load_prices
from evalshift_core.simulator import Simulator

FAST = BatchPolicy(poll_s=0.02, max_poll_s=0.1)
FAST_RETRY = RetryPolicy(max_retries=3, base_s=0.005, max_s=0.02)
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _examples() -> list[Example]:
    # three distinct requests in round 1 (two identical ones would go in once, see below)
    return [agent_example(), multi_round_example().model_copy(
                update={"id": "ex_multi", "inputs": {"input": "Refund A1001 ($20), please"}}),
            Example(id="ex_text", inputs={"input": "what is your return policy?"}, tools=[])]


def _comparable(calls) -> list[dict]:
    """Rows without what differs between any two replays: latency, and the simulator's call ids
    (numbered by request, so they depend on arrival order)."""
    out = []
    for call in calls:
        row = call.model_dump(mode="json", exclude={"latency_ms"}, exclude_none=True)
        for c in (row.get("trace") or {}).get("calls", []):
            c.pop("call_id", None)
        out.append(row)
    return out


def _batched(sim: Simulator) -> list[dict]:
    return [r for r in sim.requests if "batch" in r]


def _online(sim: Simulator) -> list[dict]:
    return [r for r in sim.requests if "batch" not in r]


@pytest.mark.parametrize("flavour", PROVIDERS)
def test_batch_rows_are_the_online_rows(tmp_path, flavour):
    """Single-shot, teacher-forced and text-only rows: the same as online replay writes."""
    with Simulator(_scripts(), batch_delay_s=0.05) as sim:
        args = dict(source=model(flavour, "base"), target=model(flavour, "cand"),
                    providers=providers_for(sim, flavour), progress=False)
        online = run(_examples(), base=tmp_path / "online", **args)
        served = len(sim.requests)
        batched = run(_examples(), base=tmp_path / "batch", batch=True, batch_policy=FAST, **args)
        new = sim.requests[served:]
    assert _comparable(batched.calls) == _comparable(online.calls)
    assert [c.error for c in batched.calls] == [None] * 6
    # 1 + 3 + 1 rounds per model, every one in its model's single batch, none online
    assert len(new) == 10 and all(r.get("batch") for r in new)
    assert sim.batches_created == 2
    assert batched.manifest["replay"] == "batch" and "replay" not in online.manifest
    assert [(b["model"], b["requests"], b["failed"]) for b in batched.manifest["batches"]] == [
        (model(flavour, "base"), 5, 0), (model(flavour, "cand"), 5, 0)]
    assert all(b["id"] and b["ended"] for b in batched.manifest["batches"])
    assert batched.requests == 10 and batched.manifest["model_calls"] == 10
    raw = [json.loads(line) for line in (batched.run_dir / "raw.jsonl").read_text().splitlines()]
    assert sorted((r["example_id"], r["role"]) for r in raw) == sorted((c.example_id, c.role) for c in online.calls)


def test_a_transient_failure_inside_a_batch_is_retried_online(tmp_path):
    with Simulator(_scripts(), batch_fail_first=2, batch_fail_status=500) as sim:
        result = run(_examples(), source="openai:base", target="openai:cand", base=tmp_path, batch=True,
                     batch_policy=FAST, retry=FAST_RETRY, providers=providers_for(sim, "openai"), progress=False)
    assert [c.error for c in result.calls] == [None] * 6
    assert [r["status"] for r in _batched(sim)].count(500) == 2
    assert [r["status"] for r in _online(sim)] == [200, 200]  # the two, once each, online
    assert [b["failed"] for b in result.manifest["batches"]] == [2, 0]
    assert result.requests == 12  # ten batched requests and two online retries


def test_without_retries_a_failure_inside_a_batch_is_reported(tmp_path):
    with Simulator(_scripts(), batch_fail_first=1, batch_fail_status=500) as sim:
        result = run([agent_example()], source="anthropic:base", target="anthropic:cand", base=tmp_path,
                     batch=True, batch_policy=FAST, retry=RetryPolicy(max_retries=0),
                     providers=providers_for(sim, "anthropic"), progress=False)
    assert not _online(sim)
    src, tgt = result.calls
    assert src.error is not None and src.error.startswith("round 1/1: in batch: 500 api_error")
    assert tgt.error is None


@pytest.mark.parametrize("flavour", ["openai", "anthropic", "gemini"])
def test_a_request_the_provider_rejects_fails_its_round_and_is_not_retried(tmp_path, flavour):
    """A 400 inside a batch is final, as online: the example fails as round k/n."""
    with Simulator(_scripts()) as sim:
        result = run([multi_round_example()], source=model(flavour, "base"), target=model(flavour, "broken-round-2"),
                     base=tmp_path, batch=True, batch_policy=FAST, retry=FAST_RETRY,
                     providers=providers_for(sim, flavour), progress=False)
    src, tgt = result.calls
    assert src.error is None and src.rounds == 3
    assert tgt.error is not None and tgt.error.startswith("round 2/3: in batch: 400") and "context too long" in tgt.error
    assert tgt.trace is None and not _online(sim)
    state = BatchState(result.run_dir)
    assert state.batches[1]["errored"] == ["e0-t0-r2", "e0-t0-r3"]


def test_cached_requests_are_not_submitted(tmp_path):
    with Simulator(_scripts()) as sim:
        args = dict(source="gemini:gemini-base", target="gemini:gemini-cand", base=tmp_path, batch=True,
                    batch_policy=FAST, providers=providers_for(sim, "gemini"), progress=False)
        first = run(_examples()[:2], **args)
        assert sim.batches_created == 2
        again = run(_examples()[:2], **args)
        assert sim.batches_created == 2, "everything was in the cache: nothing to submit"
        assert again.cache_hits == 8 and all(c.cached for c in again.calls)
        assert again.manifest["batches"] == [] and again.manifest["estimated_cost_usd"] == 0
        more = run(_examples(), **args)  # one new example: only its requests go in
    assert sim.batches_created == 4
    assert [b["requests"] for b in more.manifest["batches"]] == [1, 1]
    assert _comparable(more.calls[:4]) == [r | {"cached": True} for r in _comparable(first.calls)]


def test_a_request_asked_twice_goes_in_once_and_its_copy_counts_as_cached(tmp_path):
    """As online replay answers the second of two identical requests from the response cache."""
    twins = [agent_example(), agent_example().model_copy(update={"id": "twin"})]
    with Simulator(_scripts()) as sim:
        args = dict(source="openai:base", target="openai:cand", batch=True, batch_policy=FAST,
                    providers=providers_for(sim, "openai"), progress=False)
        result = run(twins, base=tmp_path / "a", **args)
        assert len(_batched(sim)) == 2 and result.cache_hits == 2
        assert [c.cached for c in result.calls] == [False, False, True, True]
        assert _comparable(result.calls[:2]) == [
            {**r, "example_id": "ex_refund", "cached": False} for r in _comparable(result.calls[2:])]
        fresh = run(twins, base=tmp_path / "b", use_cache=False, **args)  # --no-cache: fresh samples each
    assert len(_batched(sim)) == 2 + 4 and fresh.cache_hits == 0


def test_a_batch_too_big_for_one_is_split(tmp_path):
    with Simulator(_scripts()) as sim:
        result = run(_examples(), source="openai:base", target="openai:cand", base=tmp_path, batch=True,
                     batch_policy=BatchPolicy(poll_s=0.02, max_requests=2), providers=providers_for(sim, "openai"),
                     progress=False)
    assert [b["requests"] for b in result.manifest["batches"]] == [2, 2, 1, 2, 2, 1]
    assert [c.error for c in result.calls] == [None] * 6 and sim.batches_created == 6


def test_custom_ids_are_indices_mapped_back_in_the_run_folder(tmp_path):
    """Example ids never reach a provider: Anthropic (which checks its id pattern) takes any."""
    odd = [Example(id=i, inputs={"input": f"refund please ({i})"}, tools=[]) for i in
           ("orders/../A1001", "ticket #7 ü", "x" * 100)]
    with Simulator(_scripts()) as sim:
        result = run(odd, source="anthropic:base", target="anthropic:cand", base=tmp_path, batch=True,
                     batch_policy=FAST, providers=providers_for(sim, "anthropic"), progress=False)
    assert [c.error for c in result.calls] == [None] * 6
    state = json.loads((result.run_dir / "batches.json").read_text())
    assert state["requests"]["e1-t0-r1"] == {"example_id": "ticket #7 ü", "role": "target", "repeat": 0, "round": 1}
    assert {v["example_id"] for v in state["requests"].values()} == {e.id for e in odd}


@given(position=st.integers(0, 10**12), role=st.sampled_from(["source", "target"]), repeat=st.integers(0, 19),
       round_no=st.integers(1, 10**6))
def test_custom_ids_fit_every_providers_pattern(position, role, repeat, round_no):
    cid = custom_id(position, role, repeat, round_no)
    assert ANTHROPIC_ID.fullmatch(cid)
    found = re.fullmatch(r"e(\d+)-([st])(\d+)-r(\d+)", cid)
    assert found is not None  # and it reads back to what made it
    assert (int(found[1]), found[2], int(found[3]), int(found[4])) == (position, role[0], repeat, round_no)


def test_source_repeats_are_separate_requests_in_the_batch(tmp_path):
    with Simulator(_scripts()) as sim:
        result = run([agent_example()], source="openai:base", target="openai:cand", base=tmp_path, batch=True,
                     batch_policy=FAST, source_repeats=3, providers=providers_for(sim, "openai"), progress=False)
    assert [(c.role, c.repeat) for c in result.calls] == [("source", None), ("source", 1), ("source", 2),
                                                         ("target", None)]
    assert sorted(BatchState(result.run_dir).batches[0]["keys"]) == ["e0-s0-r1", "e0-s1-r1", "e0-s2-r1"]


def test_batch_prices_are_the_discounted_ones(tmp_path):
    prices = {"openai:base": {"input": 2.0, "output": 8.0}, "openai:cand": {"input": 2.0, "output": 8.0}}
    with Simulator(_scripts()) as sim:
        args = dict(source="openai:base", target="openai:cand", providers=providers_for(sim, "openai"),
                    progress=False, prices=prices)
        online = run(_examples(), base=tmp_path / "o", **args)
        batched = run(_examples(), base=tmp_path / "b", batch=True, batch_policy=FAST, **args)
    for m in (online.manifest, batched.manifest):
        assert m["estimated_batch_cost_usd"] == pytest.approx(m["estimated_online_cost_usd"] / 2, rel=1e-4)
    assert batched.manifest["estimated_cost_usd"] == batched.manifest["estimated_batch_cost_usd"]
    assert online.manifest["estimated_cost_usd"] == online.manifest["estimated_online_cost_usd"]
    assert [c.cost_usd for c in batched.calls] == pytest.approx([c.cost_usd / 2 for c in online.calls])
    assert batched.manifest["cost_usd"] == pytest.approx(online.manifest["cost_usd"] / 2)
    assert batched.spent_usd == pytest.approx(online.spent_usd / 2)


def test_the_preflight_line_shows_online_and_batch_cost(tmp_path, capsys):
    prices = {"openai:base": {"input": 10.0, "output": 10.0}, "openai:cand": {"input": 10.0, "output": 10.0}}
    with Simulator(_scripts()) as sim:
        run(_examples(), source="openai:base", target="openai:cand", base=tmp_path, prices=prices,
            providers=providers_for(sim, "openai"))
    line = next(x for x in capsys.readouterr().err.splitlines() if x.startswith("pre-flight:"))
    found = re.fullmatch(r"pre-flight: 10 model calls, about \$(\S+) online \(\$(\S+) through batch APIs with "
                         r"--batch\)", line)
    assert found is not None, line
    assert float(found[2]) == pytest.approx(float(found[1]) / 2, rel=0.02)


def test_price_tables_carry_a_batch_discount_per_provider(tmp_path):
    table = default_prices()
    assert table.batch_discounts == {"openai": 0.5, "anthropic": 0.5, "gemini": 0.5}
    online = table.cost("anthropic:claude-sonnet-4-5", 1_000_000, 1_000_000)
    assert table.cost("anthropic:claude-sonnet-4-5", 1_000_000, 1_000_000, batch=True) == online / 2 == 9.0
    (tmp_path / "prices.json").write_text(json.dumps({"batch_discount": {"gemini": 0.25}}))
    table = load_prices(tmp_path)
    assert table.batch_discounts["gemini"] == 0.25 and table.batch_discounts["openai"] == 0.5
    assert table.cost("gemini:gemini-2.5-flash", 1_000_000, 0, batch=True) == pytest.approx(0.3 * 0.75)
    assert table.cost("openai:no-such-model", 1, 1, batch=True) is None


@pytest.mark.parametrize("bad", [{"openai": 1.0}, {"openai": -0.1}, {"openai": "half"}, {"openai": True}, [0.5]])
def test_a_bad_batch_discount_is_named(tmp_path, bad):
    (tmp_path / "prices.json").write_text(json.dumps({"batch_discount": bad}))
    with pytest.raises(ConfigError) as err:
        load_prices(tmp_path)
    assert err.value.file == str(tmp_path / "prices.json")
    assert err.value.field in ("batch_discount", "batch_discount.openai")
