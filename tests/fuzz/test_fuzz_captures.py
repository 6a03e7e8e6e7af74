"""Fuzz: capture lines. A real SDK capture with one span (or its line, or an attribute) mutated,
beside an intact one: ``capture sync`` exits 0, promotes the intact turn, reports what it left
out with file:line, writes nothing outside its base, and the next sync does not fail again."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from _capture_agent import POLICY_TICKET, REFUND_TICKET, capture_turns, flat_spans, simulator
from fuzz_support import (
    FUZZ,
    HOSTILE_STRINGS,
    JSON,
    VALUES,
    assert_written_only_under,
    cli,
    files_under,
    mutate,
    mutate_text,
    to_json,
    user_outcome,
)
from hypothesis import given
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[list[dict], list[dict], Path]:
    """Spans of a refund turn (kept intact) and a policy turn (mutated), and their sidecars."""
    root = tmp_path_factory.mktemp("fuzz-captures")
    with simulator() as sim:
        capture_turns(root / "good", sim, [("sim-baseline", REFUND_TICKET)])
        capture_turns(root / "other", sim, [("sim-baseline", POLICY_TICKET)])
    return flat_spans(root / "good"), flat_spans(root / "other"), root / "good" / "toolsets"


def _line(spans: list[dict]) -> str:
    return to_json({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [
        {"scope": {"name": "evalshift_sdk"}, "spans": spans}]}]})


ANY_VALUE = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=10)),
    st.builds(lambda v: {"stringValue": to_json(v)}, VALUES),
    st.builds(lambda v: {"intValue": v}, st.integers().map(str) | st.sampled_from(["9" * 30, "9" * 5000, "x", ""])),
    st.builds(lambda v: {"arrayValue": v}, JSON), st.builds(lambda v: {"kvlistValue": v}, JSON),
    st.builds(lambda v: {"doubleValue": v}, JSON), JSON,
)


@FUZZ
@given(data=st.data())
def test_capture_sync_on_mutated_captures(recorded, data):
    good, other, toolsets = recorded
    spans = [dict(s) for s in other]
    i = data.draw(st.integers(0, len(spans) - 1), label="span")
    how = data.draw(st.sampled_from(["span", "attribute", "prompt id", "line text", "extra line"]), label="how")
    extra: list[str] = []
    if how == "span":
        spans[i] = mutate(data, spans[i])
    elif how == "attribute":
        attrs = list(spans[i].get("attributes") or [])
        key = data.draw(st.sampled_from([kv["key"] for kv in attrs] + ["evalshift.toolset_ref", "gen_ai.agent.name"]))
        attrs = [kv for kv in attrs if kv["key"] != key] + [{"key": key, "value": data.draw(ANY_VALUE)}]
        spans[i] = {**spans[i], "attributes": attrs}
    elif how == "prompt id":
        root = next(k for k, s in enumerate(spans) if "parentSpanId" not in s)
        attrs = [kv for kv in spans[root]["attributes"] if kv["key"] != "evalshift.prompt_id"]
        value = data.draw(st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=140))
        spans[root] = {**spans[root], "attributes": attrs + [{"key": "evalshift.prompt_id",
                                                              "value": {"stringValue": value}}]}
    lines = [_line([s]) for s in spans]
    if how == "line text":
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[j] = mutate_text(data, lines[j]).replace("\n", " ")
    elif how == "extra line":
        extra.append(to_json(data.draw(VALUES)))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        captures = work / "captures"
        shutil.copytree(toolsets, captures / "toolsets")
        (captures / "a.jsonl").write_text("".join(_line([s]) + "\n" for s in good))
        (captures / "b.jsonl").write_text("".join(line + "\n" for line in lines + extra))
        base = work / "base"
        before = files_under(work)
        first = cli("capture", "sync", str(captures), "--base", str(base), "--json", cwd=work)
        user_outcome(first, "capture lines", str(captures / "b.jsonl"))
        assert first.code == 0, first.err  # a bad capture is reported, never fatal
        assert_written_only_under(work, before, base)
        # Nothing valid is lost: the intact turn is in the suite.
        suite = (base / "suites" / "support.jsonl").read_text()
        assert sum(1 for line in suite.split("\n") if line) >= 1
        assert any(json.loads(line)["inputs"].get("ticket") == REFUND_TICKET for line in suite.split("\n") if line)
        second = cli("capture", "sync", str(captures), "--base", str(base), "--json", cwd=work)
        assert second.code == 0 and json.loads(second.out)["added"] == 0, second.err
