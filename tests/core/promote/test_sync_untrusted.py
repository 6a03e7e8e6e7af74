"""``capture sync`` on untrusted captures: a bad turn is quarantined with file:line:field, the rest
is promoted, nothing is written outside the base, and the next sync does not fail again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _capture_agent import (
    POLICY_TICKET,
    REFUND_TICKET,
    capture_turns,
    flat_spans,
    simulator,
    write_spans,
)

from evalshift_core import load_suite
from evalshift_core.promote._sync import STATE_FILE, sync


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """SDK captures: a refund turn, a policy turn, and a turn whose prompt id is ``../../X``."""
    root = tmp_path_factory.mktemp("untrusted")
    with simulator() as sim:
        capture_turns(root / "good", sim, [("sim-baseline", REFUND_TICKET)])
        capture_turns(root / "other", sim, [("sim-baseline", POLICY_TICKET)])
        capture_turns(root / "evil", sim, [("sim-baseline", POLICY_TICKET)], prompt_id="../../X")
    return {name: root / name for name in ("good", "other", "evil")}


def _captures(tmp_path: Path, recorded: dict[str, Path], **files: list[dict]) -> Path:
    """A capture dir holding one file per keyword (its spans), plus every recorded sidecar."""
    directory = tmp_path / "work" / ".evalshift" / "captures"
    (directory / "toolsets").mkdir(parents=True, exist_ok=True)
    for d in recorded.values():
        for sidecar in (d / "toolsets").glob("*.json"):
            (directory / "toolsets" / sidecar.name).write_bytes(sidecar.read_bytes())
    for name, spans in files.items():
        write_spans(directory / f"{name}.jsonl", spans)
    return directory


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _root(spans: list[dict]) -> dict:
    return next(s for s in spans if "parentSpanId" not in s)


def _set_attr(span: dict, key: str, value: dict) -> None:
    span["attributes"] = [kv for kv in span["attributes"] if kv["key"] != key] + [{"key": key, "value": value}]


def test_a_prompt_id_walking_out_of_the_base_is_quarantined_and_the_rest_syncs(recorded, tmp_path):
    """Issue: a capture with ``evalshift.prompt_id: "../../X"`` made sync write X.jsonl anywhere."""
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]), b=flat_spans(recorded["evil"]))
    base = captures.parent
    before = _files_under(tmp_path)
    result = sync(captures, base=base)
    written = _files_under(tmp_path) - before
    assert all(p.is_relative_to(base) for p in written), written
    assert not list(tmp_path.rglob("X.jsonl"))
    assert result.added == 1 and result.quarantined == 1 and set(result.suites) == {"support"}
    (warning,) = [w for w in result.warnings if "quarantined" in w]
    assert warning.startswith(f"{captures / 'b.jsonl'}:")
    assert "evalshift.prompt_id: prompt id '../../X' contains a path separator" in warning


@pytest.mark.parametrize(("key", "value", "why"), [
    ("gen_ai.agent.name", "/abs/path/X", "contains a path separator"),
    ("gen_ai.agent.name", "..", "starts with '.'"),
    ("evalshift.prompt_id", "sup\x00port", "contains a NUL character"),
])
def test_unsafe_prompt_ids_from_any_attribute_are_quarantined(recorded, tmp_path, key, value, why):
    spans = flat_spans(recorded["other"])
    root = _root(spans)
    root["attributes"] = [kv for kv in root["attributes"]
                          if kv["key"] not in ("evalshift.prompt_id", "gen_ai.agent.name")]
    _set_attr(root, key, {"stringValue": value})
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]))
    # Another instrumentation's spans: its agent span's gen_ai.agent.name is the prompt id.
    write_spans(captures / "b.jsonl", spans, scope="my-agent-framework" if key == "gen_ai.agent.name" else "evalshift_sdk")
    result = sync(captures, base=captures.parent)
    assert result.added == 1 and result.quarantined == 1
    (warning,) = [w for w in result.warnings if "quarantined" in w]
    assert f"{captures / 'b.jsonl'}:" in warning and f"{key}: prompt id" in warning and why in warning


def test_one_bad_span_no_longer_blocks_every_sync(recorded, tmp_path):
    """Issue: a child span whose name is not a string aborted every sync with an internal error,
    naming no file; no state was saved, so the next sync failed the same way."""
    bad = flat_spans(recorded["other"])
    child = next(s for s in bad if "parentSpanId" in s)
    child["name"] = 7
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]), b=bad)
    base = captures.parent
    first = sync(captures, base=base)
    assert first.added == 1 and first.quarantined == 1
    skipped = [w for w in first.warnings if "span skipped" in w]
    assert len(skipped) == 1 and skipped[0].startswith(f"{captures / 'b.jsonl'}:")
    assert ".name: must be a string; span skipped" in skipped[0]
    (quarantined,) = [w for w in first.warnings if "quarantined" in w]
    assert "a span of this turn was damaged" in quarantined
    assert (base / STATE_FILE).exists()
    second = sync(captures, base=base)  # the state advanced: nothing fails again, nothing is redone
    assert second.warnings == [] and second.added == 0 and second.unchanged == 1


def test_a_span_whose_name_is_null_is_read_as_unnamed(recorded, tmp_path):
    spans = flat_spans(recorded["good"])
    for s in spans:
        if "parentSpanId" in s:
            s["name"] = None
    captures = _captures(tmp_path, recorded, a=spans)
    result = sync(captures, base=captures.parent)
    assert result.added == 1 and result.quarantined == 0


@pytest.mark.parametrize("damaged", [0, 1], ids=["first child", "only other child"])
def test_a_damaged_span_quarantines_its_turn_even_when_the_root_comes_a_sync_later(recorded, tmp_path, damaged):
    spans = flat_spans(recorded["good" if damaged == 0 else "other"])
    root = _root(spans)
    children = [s for s in spans if s is not root]
    children[0]["endTimeUnixNano"] = "soon"
    captures = _captures(tmp_path, recorded, b=children)
    first = sync(captures, base=captures.parent)
    assert first.added == 0 and first.held_back == (1 if len(children) > 1 else 0)
    with open(captures / "b.jsonl", "a") as fh:  # the turn ends in a later batch
        fh.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "evalshift_sdk"},
                                                                "spans": [root]}]}]}) + "\n")
    second = sync(captures, base=captures.parent)
    assert second.added == 0 and second.quarantined == 1
    assert any("a span of this turn was damaged" in w and "endTimeUnixNano" not in w for w in second.warnings)


def test_a_damaged_attribute_value_names_its_key(recorded, tmp_path):
    spans = flat_spans(recorded["other"])
    chat = next(s for s in spans if s["name"].startswith("chat"))
    _set_attr(chat, "gen_ai.usage.input_tokens", {"intValue": "9" * 5000})
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]), b=spans)
    result = sync(captures, base=captures.parent)
    assert result.added == 1 and result.quarantined == 1
    (warning,) = [w for w in result.warnings if "quarantined" in w]
    assert "attributes.gen_ai.usage.input_tokens: intValue '9999" in warning and "not a 64-bit integer" in warning


def test_a_value_nested_past_the_limit_is_quarantined_with_its_field(recorded, tmp_path):
    spans = flat_spans(recorded["other"])
    root = _root(spans)
    deep: object = "x"
    for _ in range(100):
        deep = {"a": deep}
    _set_attr(root, "evalshift.inputs", {"stringValue": json.dumps({"ticket": deep})})
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]), b=spans)
    result = sync(captures, base=captures.parent)
    assert result.added == 1 and result.quarantined == 1
    (warning,) = [w for w in result.warnings if "quarantined" in w]
    assert "example.inputs.ticket.a.a.a.a.a.a..." in warning and "nests deeper than 64 levels" in warning
    load_suite(result.suites["support"])  # what was written reads back


def test_a_toolset_ref_walking_out_of_the_captures_is_quarantined(recorded, tmp_path):
    spans = flat_spans(recorded["other"])
    for s in spans:
        if s["name"].startswith("chat"):
            _set_attr(s, "evalshift.toolset_ref", {"stringValue": "sha256:../../outside"})
    (tmp_path / "work" / "outside.json").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "work" / "outside.json").write_text("[]")
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]), b=spans)
    result = sync(captures, base=captures.parent)
    assert result.added == 1 and result.quarantined == 1
    assert any("must be 'sha256:' followed by 64 lowercase hex digits" in w for w in result.warnings)


def test_a_damaged_sync_state_means_reading_every_file_again(recorded, tmp_path):
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]))
    base = captures.parent
    sync(captures, base=base)
    state = json.loads((base / STATE_FILE).read_text())
    state["profiles"][0]["suites"] = ["../../X"]
    (base / STATE_FILE).write_text(json.dumps(state))
    result = sync(captures, base=base)
    assert result.added == 0 and result.unchanged == 1
    assert any(f"{base / STATE_FILE}: profiles[0].suites: not a sync state this EvalShift wrote" in w for w in result.warnings)
    (base / STATE_FILE).write_text("[" * 5000)
    result = sync(captures, base=base)
    assert result.unchanged == 1 and any("sync-state.json:1: not valid sync state" in w for w in result.warnings)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temp_files_of_a_killed_sync_are_removed_by_the_next_write(recorded, tmp_path):
    """Issue: a killed sync left ``.evalshift/suites/.<name>.jsonl.<pid>.tmp`` behind for good."""
    captures = _captures(tmp_path, recorded, a=flat_spans(recorded["good"]))
    suites = captures.parent / "suites"
    suites.mkdir(parents=True)
    dead = suites / f".support.jsonl.{_dead_pid()}.tmp"
    dead.write_bytes(b'{"id": "half')
    alive = suites / f".support.jsonl.{os.getppid()}.tmp"  # a live process, still writing
    alive.write_bytes(b"")
    sync(captures, base=captures.parent)
    assert not dead.exists() and alive.exists()
    # atomic_write_bytes (run.json, reports, sidecars, the state) cleans up after itself the same way
    stale_state = captures.parent / f".sync-state.json.{_dead_pid()}.abc123.tmp"
    stale_state.write_bytes(b"")
    (captures / "a.jsonl").write_bytes((captures / "a.jsonl").read_bytes() + b"\n")
    sync(captures, base=captures.parent)
    assert not stale_state.exists()
