"""Fuzz: suite lines and tool files. Promoted examples (rounds, fixtures, history, a recorded
generation_config) with one line mutated: ``run`` reports the bad line with file:line, plans
every valid example for all three providers' wire formats (``--max-cost 0`` stops it before the
first request), and writes nothing outside its base. A prompt's tool file, mutated, is either
offered or refused naming its file and line."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from _capture_agent import POLICY_TICKET, REFUND_TICKET, capture_turns, simulator
from fuzz_support import (
    FUZZ,
    VALUES,
    assert_written_only_under,
    cli,
    count,
    files_under,
    mutate,
    mutate_text,
    to_json,
    user_outcome,
)
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core.promote._sync import sync

PRICES = {f"{p}:m": {"input": 1.0, "output": 2.0} for p in ("openai", "anthropic", "gemini")}
PAIRS = [("openai:m", "anthropic:m", ""), ("gemini:m", "openai:m", "providers:\n  openai:\n    api: responses\n")]
TOOLS = [{"name": "lookup_order", "description": "Look up an order.",
          "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
         {"type": "function", "function": {"name": "issue_refund", "parameters": {"type": "object"}, "strict": True}}]


@pytest.fixture(scope="module")
def promoted(tmp_path_factory) -> tuple[list[dict], Path]:
    """Suite lines promoted with --rounds all from real captures, and their toolset sidecars."""
    root = tmp_path_factory.mktemp("fuzz-suites")
    with simulator() as sim:
        capture_turns(root / "c", sim, [("sim-baseline", REFUND_TICKET), ("sim-baseline", POLICY_TICKET),
                                        ("sim-parallel", REFUND_TICKET)])
    result = sync(root / "c", base=root / "base", suite_name="s", rounds="all")
    rows = [json.loads(line) for line in result.suites["s"].read_text().split("\n") if line]
    rows.append({"id": "hand-written", "inputs": {"input": "where is A1?"}, "history": [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]}],
        "generation_config": {"temperature": 0.2, "stop": ["END"], "max_tokens": 50, "tool_choice": "required",
                              "parallel_tool_calls": False}, "tools": TOOLS})
    return rows, root / "base" / "toolsets"


def _workspace(tmp: Path, toolsets: Path) -> Path:
    base = tmp / "base"
    shutil.copytree(toolsets, base / "toolsets")
    (base / "prices.json").write_text(json.dumps(PRICES))
    return base


def _plan(work: Path, base: Path, suite: Path, config_extra: str = "", kind: str = "suite lines",
          names: tuple[str, ...] = ()) -> list[str]:
    """``run`` on both provider pairs; counts the input once and returns the outcomes. Exit 1 at
    the cost gate means every valid example was planned for both models."""
    outcomes = []
    reported = False
    for source, target, providers in PAIRS:
        (work / "evalshift.yaml").write_text("version: 1\n" + providers + config_extra)
        before = files_under(work)
        out = cli("run", "--suite", str(suite), "--from", source, "--to", target, "--max-cost", "0",
                  "--base", str(base), cwd=work)
        assert_written_only_under(work, before, base)
        if out.code == 1 and "above --max-cost" in out.error:
            assert "Traceback" not in out.err and "internal error" not in out.err
            bad = [w for w in out.warnings if str(suite) in w]
            assert all(f"{suite}:" in w for w in bad), bad
            reported = reported or bool(bad)
            outcomes.append("planned")
        else:
            outcomes.append(user_outcome(out, None, str(suite), *names))
            reported = True
    count(kind, "user_errors" if reported else "accepted")
    return outcomes


@FUZZ
@given(data=st.data())
def test_run_on_mutated_suite_lines(promoted, data):
    rows, toolsets = promoted
    i = data.draw(st.integers(0, len(rows) - 1), label="line")
    lines = [to_json(r) for r in rows]
    how = data.draw(st.sampled_from(["value", "value", "value", "text", "duplicate", "whole line"]), label="how")
    if how == "value":
        lines[i] = to_json(mutate(data, rows[i]))
    elif how == "text":
        lines[i] = mutate_text(data, lines[i]).replace("\n", " ")
    elif how == "duplicate":
        lines.append(lines[i])
    else:
        lines[i] = to_json(data.draw(VALUES))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = _workspace(work, toolsets)
        suite = work / "s.jsonl"
        suite.write_text("".join(line + "\n" for line in lines))
        outcomes = _plan(work, base, suite)
        # Nothing valid is lost: with one line mutated, the others are always planned.
        assert outcomes == ["planned", "planned"], outcomes


TOOL_FILE = {"tools": TOOLS}


@FUZZ
@given(data=st.data())
def test_run_with_a_mutated_tool_file(promoted, data):
    """A prompt's ``tools_path`` file (YAML or JSON), offered to examples without a toolset."""
    rows, toolsets = promoted
    suffix = data.draw(st.sampled_from([".yaml", ".json"]), label="format")
    text = to_json(mutate(data, TOOL_FILE)) if data.draw(st.booleans(), label="by value") \
        else mutate_text(data, to_json(TOOL_FILE))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = _workspace(work, toolsets)
        tool_file = work / f"tools{suffix}"
        tool_file.write_text(text)
        suite = work / "s.jsonl"
        suite.write_text(json.dumps({"id": "bare", "inputs": {"input": "where is A1?"}}) + "\n")
        prompts = f"prompts:\n  - id: replay\n    tools_path: {tool_file.name}\n"
        for outcome in _plan(work, base, suite, prompts, kind="tool files", names=(str(tool_file), tool_file.name)):
            assert outcome in ("planned", "user_error")
