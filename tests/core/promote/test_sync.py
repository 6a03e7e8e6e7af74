"""``capture sync`` / ``capture promote``: incremental, idempotent, atomic, locked, sidecars copied."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalshift_core import load_suite
from evalshift_core._exceptions import InputError, UnknownToolsetError
from evalshift_core.promote._sync import LOCK_FILE, STATE_FILE, promote_files, sync
from evalshift_core.store._lock import file_lock
from evalshift_core.store._suites import resolve_tools, toolset_path


@pytest.fixture(scope="module")
def two_turns(tmp_path_factory) -> tuple[Path, Path]:
    """Two capture dirs of one SDK turn each (refund, policy)."""
    root = tmp_path_factory.mktemp("sync")
    with simulator() as sim:
        capture_turns(root / "a", sim, [("sim-baseline", REFUND_TICKET)])
        capture_turns(root / "b", sim, [("sim-baseline", POLICY_TICKET)])
    return root / "a", root / "b"


def _copy_dir(src: Path, dst: Path, prefix: str = "") -> Path:
    """Copy a capture dir; ``prefix`` renames its span files (two runs can share a file name)."""
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "toolsets").mkdir(exist_ok=True)
    for p in src.rglob("*"):
        if p.is_file():
            rel = p.relative_to(src)
            name = rel.name if rel.parent.name == "toolsets" else prefix + rel.name
            (dst / rel.parent / name).write_bytes(p.read_bytes())
    return dst


def _snapshot(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def test_second_sync_changes_nothing_byte_for_byte(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    first = sync(captures, base=base, suite_name="s")
    assert first.added == 1 and first.spans == 6
    before = _snapshot(base)
    mtime = first.suites["s"].stat().st_mtime_ns
    second = sync(captures, base=base, suite_name="s")
    assert second.added == 0 and second.unchanged == 1 and second.spans == 0
    assert _snapshot(base) == before
    assert second.suites["s"].stat().st_mtime_ns == mtime


def test_sync_reads_only_spans_new_since_the_last_sync(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    # The agent appends another turn to the same file.
    (path,) = captures.glob("*.jsonl")
    new = b"".join(p.read_bytes() for p in sorted(two_turns[1].glob("*.jsonl")))
    with open(path, "ab") as fh:
        fh.write(new)
    result = sync(captures, base=base, suite_name="s")
    assert result.added == 1 and result.unchanged == 1
    assert result.spans == len(flat_spans(two_turns[1]))
    ids = [e.id for e in load_suite(result.suites["s"])]
    assert len(ids) == 2 == len(set(ids))


def test_turn_whose_root_has_not_ended_is_held_back_until_it_ends(two_turns, tmp_path):
    spans = flat_spans(two_turns[0])
    root = next(s for s in spans if "parentSpanId" not in s)
    captures = tmp_path / "captures"
    _copy_dir(two_turns[0], captures)
    for p in captures.glob("*.jsonl"):
        p.unlink()
    path = captures / "spans-live.jsonl"
    write_spans(path, [s for s in spans if s is not root])
    base = tmp_path / "base"
    first = sync(captures, base=base, suite_name="s")
    assert first.added == 0 and first.held_back == 1
    state = json.loads((base / STATE_FILE).read_text())
    assert len(state["profiles"][0]["pending"]) == 5
    with open(path, "a") as fh:  # the turn ends: its root span is exported
        fh.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "evalshift_sdk"}, "spans": [root]}]}]}) + "\n")
    second = sync(captures, base=base, suite_name="s")
    assert second.added == 1 and second.held_back == 0 and second.spans == 1
    (ex,) = load_suite(second.suites["s"])
    assert [[c.tool_name for c in r] for r in ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert json.loads((base / STATE_FILE).read_text())["profiles"][0]["pending"] == []


def test_half_written_last_line_is_picked_up_by_the_next_sync(two_turns, tmp_path):
    data = b"".join(p.read_bytes() for p in sorted(two_turns[0].glob("*.jsonl")))
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    for p in captures.glob("*.jsonl"):
        p.unlink()
    path = captures / "spans.jsonl"
    path.write_bytes(data[:-40])  # a writer still appending
    base = tmp_path / "base"
    first = sync(captures, base=base, suite_name="s")
    assert first.added == 0 and first.warnings == []
    with open(path, "ab") as fh:
        fh.write(data[-40:])
    second = sync(captures, base=base, suite_name="s")
    assert second.added == 1
    assert not [w for w in second.warnings if "OTLP/JSON" in w]


def test_corrupt_line_warns_with_file_and_line_and_the_rest_continues(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    (path,) = captures.glob("*.jsonl")
    path.write_bytes(b'{"resourceSpans": [oops\n' + path.read_bytes())
    result = sync(captures, base=tmp_path / "base", suite_name="s")
    assert result.added == 1
    assert any(w.startswith(f"{path}:1: not a valid OTLP/JSON line") for w in result.warnings)


def test_sidecars_are_copied_content_addressed(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    result = sync(captures, base=base, suite_name="s")
    (ex,) = load_suite(result.suites["s"])
    sidecar = toolset_path(base, ex.toolset_ref)
    assert "sha256:" + hashlib.sha256(sidecar.read_bytes()).hexdigest() == ex.toolset_ref
    assert [t.name for t in resolve_tools(ex, base)] == ["lookup_order", "issue_refund", "notify_security_team"]


def test_tampered_or_missing_sidecar_warns_and_run_names_the_example(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    (sidecar,) = (captures / "toolsets").glob("*.json")
    sidecar.write_text("[]")  # no longer the content its name addresses
    base = tmp_path / "base"
    result = sync(captures, base=base, suite_name="s")
    (ex,) = load_suite(result.suites["s"])
    assert any(ex.id in w and "has no sidecar" in w for w in result.warnings)
    assert not toolset_path(base, ex.toolset_ref).exists()
    with pytest.raises(UnknownToolsetError, match=ex.id):
        resolve_tools(ex, base)


def test_two_syncs_at_once_write_each_example_once(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    _copy_dir(two_turns[1], captures, prefix="b-")
    base = tmp_path / "base"
    code = ("import sys; from evalshift_core.promote._sync import sync; "
            f"r = sync({str(captures)!r}, base={str(base)!r}, suite_name='s'); print(r.added)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    added = sorted(int(p.communicate(timeout=120)[0].split()[-1]) for p in procs)
    assert added == [0, 2]
    ids = [e.id for e in load_suite(base / "suites" / "s.jsonl")]
    assert len(ids) == 2 == len(set(ids))


def test_a_sync_waits_for_the_lock(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    done = threading.Event()
    with file_lock(base / LOCK_FILE):
        t = threading.Thread(target=lambda: (sync(captures, base=base, suite_name="s"), done.set()))
        t.start()
        time.sleep(0.3)
        assert not done.is_set()
    t.join(timeout=30)
    assert done.is_set()


def test_a_failure_mid_sync_loses_nothing_already_written(two_turns, tmp_path, monkeypatch):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    before = _snapshot(base)
    extra = _copy_dir(two_turns[1], tmp_path / "more")
    from evalshift_core.promote import _sync

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_sync, "promote_example", boom)
    with pytest.raises(RuntimeError):
        sync(extra, base=base, suite_name="s")
    assert _snapshot(base) == before  # suite, state and sidecars untouched, no temp file left


def test_deleted_suite_is_rebuilt_by_the_next_sync(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    path = sync(captures, base=base, suite_name="s").suites["s"]
    path.unlink()
    assert sync(captures, base=base, suite_name="s").added == 1


def test_file_rotated_by_rename_is_not_read_twice(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    (path,) = captures.glob("*.jsonl")
    path.rename(captures / "traces-2026-11-30T06-00-00.000.jsonl")  # a Collector backup name
    result = sync(captures, base=base, suite_name="s")
    assert result.spans == 0 and result.added == 0


def test_truncated_file_is_read_again_from_the_start(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    (path,) = captures.glob("*.jsonl")
    data = path.read_bytes()
    path.write_bytes(b"")  # truncated in place (same inode, smaller than what was read)
    truncated = sync(captures, base=base, suite_name="s")
    assert any("truncated or rewritten since the last sync" in w for w in truncated.warnings)
    path.write_bytes(data)
    again = sync(captures, base=base, suite_name="s")
    assert again.spans == 6 and again.added == 0 and again.unchanged >= 1


def test_promote_files_joins_given_files_and_reports_held_back(two_turns, tmp_path):
    spans = flat_spans(two_turns[0])
    root = next(s for s in spans if "parentSpanId" not in s)
    write_spans(tmp_path / "part1.jsonl", [s for s in spans if s is not root])
    write_spans(tmp_path / "part2.jsonl", [root])
    base = tmp_path / "base"
    held = promote_files([tmp_path / "part1.jsonl"], base=base, suite_name="s")
    assert held.added == 0 and held.held_back == 1
    assert any("held back" in w for w in held.warnings)
    both = promote_files([tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"], base=base, suite_name="s",
                         rounds="all", names_only=True)
    (ex,) = load_suite(both.suites["s"])
    assert ex.tool_result_fixtures is not None
    assert all(c.arguments is None for r in ex.expected_tool_rounds for c in r)
    again = promote_files([tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"], base=base, suite_name="s")
    assert again.added == 0 and again.unchanged == 1


def test_promote_files_on_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no capture file here"):
        promote_files([tmp_path / "nope.jsonl"], base=tmp_path / "base")


def test_suite_named_after_prompt_id_by_default(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    result = sync(captures, base=tmp_path / "base")
    assert list(result.suites) == ["support"]


def test_progress_goes_to_stderr_and_can_be_turned_off(two_turns, tmp_path, capsys):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    sync(captures, base=tmp_path / "b1", suite_name="s", progress=True)
    assert "capture sync" in capsys.readouterr().err
    sync(captures, base=tmp_path / "b2", suite_name="s", progress=False)
    assert capsys.readouterr().err == ""


def test_missing_capture_dir_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no captures here"):
        sync(tmp_path / "nope", base=tmp_path / "base")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.floats(min_value=0, max_value=1), max_size=6))
def test_any_appending_schedule_gives_the_suite_of_one_sync(two_turns, tmp_path_factory, cuts):
    """A writer appending in arbitrary pieces (half lines, split turns) between syncs ends in the
    byte-identical suite one sync of the whole file writes."""
    spans = [s for d in two_turns for s in flat_spans(d)]
    work = tmp_path_factory.mktemp("sched")
    whole = work / "whole"
    write_spans(whole / "spans.jsonl", spans)
    for d in two_turns:
        _copy_dir(d, whole)
    for p in whole.glob("spans-*.jsonl"):
        p.unlink()
    expected = sync(whole, base=work / "base-whole", suite_name="s").suites["s"].read_bytes()
    data = (whole / "spans.jsonl").read_bytes()
    live = work / "live"
    _copy_dir(whole, live)
    (live / "spans.jsonl").write_bytes(b"")
    base = work / "base-live"
    offsets = sorted({int(c * len(data)) for c in cuts} | {len(data)})
    done = 0
    for end in offsets:
        with open(live / "spans.jsonl", "ab") as fh:
            fh.write(data[done:end])
        done = end
        sync(live, base=base, suite_name="s")
    assert (base / "suites" / "s.jsonl").read_bytes() == expected


def test_rotation_by_rename_then_a_new_file_under_the_old_name(two_turns, tmp_path):
    """The Collector's rotation: the current file becomes a backup, a new one takes its name."""
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    (path,) = captures.glob("*.jsonl")
    path.rename(captures / "spans-backup-2026-11-30.jsonl")
    path.write_bytes(b"".join(p.read_bytes() for p in sorted(two_turns[1].glob("*.jsonl"))))
    result = sync(captures, base=base, suite_name="s")
    assert result.added == 1 and result.spans == len(flat_spans(two_turns[1]))
    assert not [w for w in result.warnings if "since the last sync" in w]


def test_file_rewritten_in_place_is_read_from_the_start(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    (path,) = captures.glob("*.jsonl")
    other = b"".join(p.read_bytes() for p in sorted(two_turns[1].glob("*.jsonl")))
    with open(path, "r+b") as fh:  # same inode, new content at least as long
        fh.write(other + b"\n" * max(0, path.stat().st_size - len(other)))
    result = sync(captures, base=base, suite_name="s")
    assert any("truncated or rewritten" in w for w in result.warnings)
    assert result.added == 1


def test_turn_held_back_long_after_later_turns_is_reported(two_turns, tmp_path):
    spans = flat_spans(two_turns[0])
    orphans = [dict(s) for s in spans if "parentSpanId" in s]
    later = flat_spans(two_turns[1])
    shift = 2 * 3600 * 10**9
    for s in later:
        s["startTimeUnixNano"] = str(int(s["startTimeUnixNano"]) + shift)
        s["endTimeUnixNano"] = str(int(s["endTimeUnixNano"]) + shift)
    captures = tmp_path / "captures"
    _copy_dir(two_turns[0], captures)
    for p in captures.glob("*.jsonl"):
        p.unlink()
    write_spans(captures / "spans.jsonl", orphans + later)
    result = sync(captures, base=tmp_path / "base", suite_name="s")
    assert result.added == 1 and result.held_back == 1
    assert any("held back for over an hour" in w for w in result.warnings)


def test_support_agent_example_syncs_into_known_rounds(demo_simulator, tmp_path):
    """examples/support_agent.py on the demo's baseline model, synced with --rounds all."""
    from evalshift_core.cli._demo import find_example_agent

    env = {"PATH": "/usr/bin:/bin", "EVALSHIFT_CAPTURE": "1", "EVALSHIFT_CAPTURE_DIR": str(tmp_path / "captures"),
           "OPENAI_BASE_URL": demo_simulator.openai_base_url, "OPENAI_API_KEY": "sk-test"}
    subprocess.run([sys.executable, str(find_example_agent()), "--quiet"], env=env, check=True)
    result = sync(tmp_path / "captures", base=tmp_path / "base", rounds="all")
    examples = load_suite(result.suites["support"])
    shapes: dict[str, set] = {}
    for ex in examples:
        rounds = tuple(tuple(c.tool_name for c in r) for r in ex.expected_tool_rounds)
        shapes.setdefault(ex.tags[0], set()).add((rounds, len(ex.tool_result_fixtures or [])))
    assert shapes == {
        "refund": {((("lookup_order",), ("issue_refund",), ()), 2)},
        "status": {((("lookup_order",), ()), 1)},
        "security": {((("notify_security_team",), ()), 1)},
        "policy": {(((),), 0)},
    }
    assert len(examples) == 32 and all(e.promotion_source == "requested" for e in examples)
    assert sum(bool(e.expected_no_tools) for e in examples) == 9
    assert not [w for w in result.warnings if "--rounds all" in w]


def test_unknown_rounds_mode_is_a_clear_error(two_turns, tmp_path):
    with pytest.raises(InputError, match="rounds must be 'first' or 'all'"):
        sync(two_turns[0], base=tmp_path / "base", rounds="some")


def test_new_examples_append_after_a_suite_missing_its_last_newline(two_turns, tmp_path):
    base = tmp_path / "base"
    path = sync(_copy_dir(two_turns[0], tmp_path / "a"), base=base, suite_name="s").suites["s"]
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # hand-edited
    sync(_copy_dir(two_turns[1], tmp_path / "b"), base=base, suite_name="s")
    assert len(load_suite(path)) == 2


_JUNK = st.one_of(st.just("{}"), st.just("[]"), st.just("[1, 2]"), st.just('[{"x": 1}]'), st.just("null"),
                  st.just('"text"'), st.just("{not json"), st.just('[{"tool_name": 3}]'))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_attributes_skip_a_turn_at_worst(two_turns, tmp_path_factory, data):
    """Any recorded attribute replaced by junk JSON: the sync finishes, and the turn is either
    promoted or reported with its file:line; the other turn is untouched."""
    spans = [dict(s) for d in two_turns for s in flat_spans(d)]
    i = data.draw(st.integers(0, len(spans) - 1))
    attrs = [dict(kv) for kv in spans[i]["attributes"]]
    # Any attribute but the operation name, which decides what a span is (a turn without a model
    # call is no capture at all, like any other trace in a Collector's file).
    j = data.draw(st.sampled_from([k for k, kv in enumerate(attrs) if kv["key"] != "gen_ai.operation.name"]))
    attrs[j] = {"key": attrs[j]["key"], "value": {"stringValue": data.draw(_JUNK)}}
    spans[i] = dict(spans[i], attributes=attrs)
    work = tmp_path_factory.mktemp("junk")
    write_spans(work / "c" / "spans.jsonl", spans)
    result = sync(work / "c", base=work / "base", suite_name="s")
    skipped = [w for w in result.warnings if "quarantined (not promoted)" in w]
    assert result.added + len(skipped) == 2 and result.quarantined == len(skipped)
    assert all(str(work / "c" / "spans.jsonl") + ":" in w for w in skipped)
    if result.added:
        load_suite(result.suites["s"])  # whatever was written is a valid suite


def test_sync_with_new_options_repromotes_into_its_suite_idempotently(two_turns, tmp_path):
    """A first default sync, then `--rounds all --suite-name support-all`: every captured turn
    lands in the new suite with the new options; again changes nothing; the first suite stays."""
    captures = _copy_dir(two_turns[0], tmp_path / "captures", prefix="a-")
    _copy_dir(two_turns[1], captures, prefix="b-")
    base = tmp_path / "base"
    first = sync(captures, base=base)
    assert first.added == 2 and list(first.suites) == ["support"]
    support = (base / "suites" / "support.jsonl").read_bytes()
    assert all(not e.tool_result_fixtures for e in load_suite(first.suites["support"]))

    multi = sync(captures, base=base, rounds="all", suite_name="support-all")
    assert (multi.added, multi.unchanged, multi.kept, multi.gone) == (2, 0, 0, 0)
    assert list(multi.suites) == ["support-all"]
    examples = load_suite(multi.suites["support-all"])
    assert sorted(len(e.tool_result_fixtures or []) for e in examples) == [0, 2]  # refund: rounds 1-2
    written = multi.suites["support-all"].read_bytes()
    snapshot = _snapshot(base)

    again = sync(captures, base=base, rounds="all", suite_name="support-all")
    assert (again.added, again.unchanged, again.spans) == (0, 2, 0)
    assert multi.suites["support-all"].read_bytes() == written
    assert _snapshot(base) == snapshot  # the state too: a repeated sync writes nothing
    assert (base / "suites" / "support.jsonl").read_bytes() == support
    # The first options are still remembered: the default sync reads nothing again.
    default = sync(captures, base=base)
    assert (default.added, default.unchanged, default.spans) == (0, 2, 0)
    assert (base / "suites" / "support.jsonl").read_bytes() == support


def test_new_options_into_a_suite_already_fed_say_its_examples_are_kept(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base)
    before = (base / "suites" / "support.jsonl").read_bytes()
    result = sync(captures, base=base, rounds="all")
    assert (result.added, result.unchanged, result.kept) == (0, 1, 1)
    (warning,) = [w for w in result.warnings if "earlier sync with other options" in w]
    assert warning.startswith("1 example(s) already in suite support ") and "--suite-name NAME" in warning
    assert (base / "suites" / "support.jsonl").read_bytes() == before


def test_turns_rotated_away_cannot_be_repromoted_and_a_warning_says_how_many(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures", prefix="a-")
    _copy_dir(two_turns[1], captures, prefix="b-")
    base = tmp_path / "base"
    assert sync(captures, base=base).added == 2
    (gone,) = captures.glob("a-*.jsonl")
    gone.unlink()  # rotated away by the capture's retention
    result = sync(captures, base=base, rounds="all", suite_name="support-all")
    assert (result.added, result.gone) == (1, 1)
    (warning,) = [w for w in result.warnings if "no longer in" in w]
    assert warning.startswith("1 turn(s) an earlier sync promoted came from capture files no longer in ")
    assert "cannot be promoted into suite support-all" in warning
    # Said once: the repeated sync has nothing new to say.
    again = sync(captures, base=base, rounds="all", suite_name="support-all")
    assert again.added == 0 and not again.warnings


def test_a_state_of_the_previous_version_is_read_again_silently(two_turns, tmp_path):
    captures = _copy_dir(two_turns[0], tmp_path / "captures")
    base = tmp_path / "base"
    sync(captures, base=base, suite_name="s")
    (base / STATE_FILE).write_text(json.dumps({"version": 1, "files": {}, "suites": ["s"], "pending": []}))
    result = sync(captures, base=base, suite_name="s")
    assert (result.added, result.unchanged) == (0, 1)
    assert not [w for w in result.warnings if STATE_FILE in w or "sync state" in w]
    assert json.loads((base / STATE_FILE).read_text())["version"] == 2


def test_later_rounds_not_replayed_are_summed_up_in_one_line(two_turns, tmp_path):
    """Seed 001: a multi-round capture promoted with --rounds first warns, naming the later calls
    it will not replay; a sync says it once for all such examples, each one kept as a detail."""
    captures = _copy_dir(two_turns[0], tmp_path / "captures", prefix="a-")
    _copy_dir(two_turns[1], captures, prefix="b-")
    result = sync(captures, base=tmp_path / "base")
    assert (result.added, result.later_rounds) == (2, 1)
    assert result.warnings == [
        "1 example has later rounds that --rounds first does not replay (issue_refund): "
        "run `evalshift capture sync --rounds all --suite-name NAME` to include them"]
    (detail,) = result.details
    refund = next(e for e in load_suite(result.suites["support"]) if e.expected_tool_rounds[1:])
    assert detail == f"{refund.id}: --rounds first replays round 1 only; later calls not replayed: round 2: issue_refund"


def test_later_rounds_summary_counts_every_example_and_names_the_fix_of_its_command(tmp_path):
    with simulator() as sim:
        capture_turns(tmp_path / "captures", sim, [("sim-baseline", REFUND_TICKET)] * 3
                      + [("sim-baseline", POLICY_TICKET)])
    promoted = promote_files([tmp_path / "captures"], base=tmp_path / "base", suite_name="p")
    assert (promoted.added, promoted.later_rounds, len(promoted.details)) == (4, 3, 3)
    (line,) = [w for w in promoted.warnings if "later rounds" in w]
    assert line == ("3 examples have later rounds that --rounds first does not replay (issue_refund): "
                    "run `evalshift capture promote FILE... --rounds all --suite-name NAME` to include them")
    assert not [w for w in promoted.warnings if "replays round 1 only" in w]
    multi = sync(tmp_path / "captures", base=tmp_path / "base", rounds="all", suite_name="all")
    assert (multi.added, multi.later_rounds, multi.details) == (4, 0, [])
    assert not [w for w in multi.warnings if "later rounds" in w]
