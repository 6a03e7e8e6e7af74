"""dry_run(): run()'s plan and pre-flight with nothing sent and nothing written, resumed runs too."""

from __future__ import annotations

from evalshift_core import Example, dry_run, run
from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {"base": [{"when": {}, "reply": {"text": "ok"}}], "cand": [{"when": {}, "reply": {"text": "sure"}}]}
PRICES = {"openai:base": {"input": 0, "output": 1_000_000}, "openai:cand": {"input": 0, "output": 1_000_000}}


def examples(n: int) -> list[Example]:
    return [Example(id=f"ex{i}", inputs={"input": f"please refund order {i}"}) for i in range(n)]


def test_dry_run_of_a_started_run_plans_only_the_missing_rows_and_leaves_raw_jsonl_alone(tmp_path):
    with Simulator(load_scripts(SCRIPTS)) as sim:
        providers = {"openai": {"base_url": sim.openai_base_url, "api_key": "k"}}
        run(examples(3), source="openai:base", target="openai:cand", base=tmp_path, run_id="r1",
            providers=providers, progress=False)
        sent = len(sim.requests)
        raw = tmp_path / "runs" / "r1" / "raw.jsonl"
        raw.write_bytes(raw.read_bytes() + b'{"torn')  # a crash mid-write: a real resume would cut it off
        before = raw.read_bytes()
        planned = dry_run(examples(3), source="openai:base", target="openai:cand", base=tmp_path, run_id="r1",
                          providers=providers, prices=PRICES, use_cache=False)
        fresh = dry_run(examples(3), source="openai:base", target="openai:cand", base=tmp_path,
                        providers=providers, prices=PRICES, max_cost=1000, use_cache=False)
        assert len(sim.requests) == sent
    assert raw.read_bytes() == before
    assert (planned.resumed_rows, planned.estimate.calls, planned.estimate.online_usd) == (6, 0, 0)
    assert (fresh.estimate.calls, fresh.estimate.online_usd, fresh.estimate.batch_usd) == (6, 1536, 768)  # the shipped openai batch discount: half
    assert fresh.refused == "estimated cost $1536.00 for 6 model calls is above --max-cost $1000.00; nothing was sent"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["r1"]
