"""``source_repeats``: the source replayed N times, each a fresh sample, priced and cached apart."""

from __future__ import annotations

import json

import pytest

from evalshift_core import Example, run
from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {"base": [{"when": {}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}}]}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


@pytest.fixture
def sim():
    with Simulator(load_scripts(SCRIPTS)) as s:
        yield s


def _examples(n=3):
    return [Example(id=f"e{i}", inputs={"input": f"where is order A{i}?"}, tools=TOOLS) for i in range(n)]


def _run(sim, base, **kwargs):
    return run(_examples(), source="openai:base", target="openai:base", base=base, progress=False,
               providers={"openai": {"base_url": sim.openai_base_url, "api_key": "k"}}, **kwargs)


def test_each_repeat_is_its_own_request_and_row(sim, tmp_path):
    result = _run(sim, tmp_path, source_repeats=3)
    rows = [json.loads(line) for line in (result.run_dir / "raw.jsonl").read_text().splitlines()]
    assert sorted((r["example_id"], r["role"], r.get("repeat", 0)) for r in rows) == sorted(
        (f"e{i}", role, k) for i in range(3) for role, k in [("source", 0), ("source", 1), ("source", 2), ("target", 0)])
    # the same model on both sides and three source repeats: 4 fresh samples per example
    assert len(sim.served()) == 12 and result.requests == 12
    assert result.manifest["source_repeats"] == 3
    assert result.manifest["planned_model_calls"] == 12  # the pre-flight counts the repeats
    # run() returns each example's source runs in order, then its target
    assert [(c.example_id, c.role, c.repeat) for c in result.calls[:4]] == [
        ("e0", "source", None), ("e0", "source", 1), ("e0", "source", 2), ("e0", "target", None)]


def test_the_cache_keeps_every_sample_apart_and_serves_each_again(sim, tmp_path):
    _run(sim, tmp_path, source_repeats=2)
    served = len(sim.served())
    again = _run(sim, tmp_path, source_repeats=2)
    assert len(sim.served()) == served  # every sample came from the cache
    assert again.cache_hits == 9 and again.requests == 0
    more = _run(sim, tmp_path, source_repeats=3)
    assert more.requests == 3  # only the new third repeat is a fresh sample


def test_a_resumed_run_adds_missing_repeats_only(sim, tmp_path):
    first = _run(sim, tmp_path)
    served = len(sim.served())
    resumed = _run(sim, tmp_path, source_repeats=2, run_id=first.run_id, use_cache=False)
    assert len(sim.served()) == served + 3  # one more source run per example, nothing else
    assert resumed.manifest["source_repeats"] == 2
    assert len(resumed.calls) == 9
