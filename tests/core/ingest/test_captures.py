"""Ingest: OTLP/JSON lines (ours, a Collector's, gzip, base64 ids) into one capture per agent turn."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
from _capture_agent import REFUND_TICKET, capture_turns, flat_spans, simulator, write_spans
from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core.ingest._captures import iter_captures, load_captures
from evalshift_core.ingest._files import FilePosition, capture_files, read_spans
from evalshift_core.ingest._otlp import spans_of_request
from evalshift_core.ingest._turns import TurnAssembler


@pytest.fixture(scope="module")
def refund_capture(tmp_path_factory) -> Path:
    """One real SDK turn on the simulator: lookup_order -> issue_refund -> answer."""
    directory = tmp_path_factory.mktemp("refund") / "captures"
    with simulator() as sim:
        capture_turns(directory, sim, [("sim-baseline", REFUND_TICKET)])
    return directory


def _kinds(capture) -> list[tuple[str, str | None]]:
    return [(e["type"], e.get("tool_name")) for e in capture.events]


EXPECTED_EVENTS = [
    ("model_call", None), ("tool_call", "lookup_order"), ("tool_result", "lookup_order"),
    ("model_call", None), ("tool_call", "issue_refund"), ("tool_result", "issue_refund"),
    ("model_call", None),
]


def test_sdk_turn_is_one_capture_with_events_in_order(refund_capture):
    (capture,) = load_captures(refund_capture)
    assert _kinds(capture) == EXPECTED_EVENTS
    first = capture.model_calls()[0]
    assert first["toolset_ref"].startswith("sha256:")
    assert first["generation_config"] == {"tool_choice": "auto", "parallel_tool_calls": True}
    assert first["requested_tool_calls"][0]["tool_name"] == "lookup_order"
    assert first["requested_tool_calls"][0]["arguments"] == {"order_id": "A1001"}
    assert first["usage"]["input_tokens"] > 0
    assert capture.model_calls()[-1]["text"].startswith("I've refunded $49.99")
    assert capture.prompt_id == "support" and capture.inputs == {"ticket": REFUND_TICKET}
    result = next(e for e in capture.events if e["type"] == "tool_result")
    assert result["result"] == {"order_id": "A1001", "status": "shipped", "amount_usd": 49.99}
    assert result["call_id"] == first["requested_tool_calls"][0]["call_id"]


def _to_base64_ids(span: dict) -> dict:
    out = dict(span)
    for key in ("traceId", "spanId", "parentSpanId"):
        if out.get(key):
            out[key] = base64.b64encode(bytes.fromhex(out[key])).decode()
    return out


def test_collector_base64_ids_read_like_hex(refund_capture, tmp_path):
    """A protobuf-JSON writer's base64 ids give the same capture as the Collector's hex ids."""
    spans = [_to_base64_ids(s) for s in flat_spans(refund_capture)]
    write_spans(tmp_path / "collector.json", spans, per_line=3)
    (hex_capture,) = load_captures(refund_capture)
    (b64_capture,) = load_captures(tmp_path / "collector.json")
    assert b64_capture.trace_id == hex_capture.trace_id
    assert b64_capture.events == hex_capture.events


def test_gzip_files_are_read(refund_capture, tmp_path):
    raw = b"".join(p.read_bytes() for p in sorted(refund_capture.glob("*.jsonl")))
    (tmp_path / "spans.jsonl.gz").write_bytes(gzip.compress(raw))
    (capture,) = load_captures(tmp_path)
    assert _kinds(capture) == EXPECTED_EVENTS


def test_turn_split_across_rotated_files_is_joined(refund_capture, tmp_path):
    """Children in the first file, the root in its rotation: one turn, not two halves."""
    spans = flat_spans(refund_capture)
    root = next(s for s in spans if "parentSpanId" not in s)
    children = [s for s in spans if s is not root]
    write_spans(tmp_path / "spans-x-1.jsonl", children[:3])
    write_spans(tmp_path / "spans-x-1.1.jsonl", children[3:])
    write_spans(tmp_path / "spans-x-1.2.jsonl", [root])
    assert [p.name for p in capture_files(tmp_path)] == ["spans-x-1.jsonl", "spans-x-1.1.jsonl", "spans-x-1.2.jsonl"]
    (capture,) = load_captures(tmp_path)
    assert _kinds(capture) == EXPECTED_EVENTS


def test_turn_without_its_root_is_held_back(refund_capture, tmp_path):
    spans = flat_spans(refund_capture)
    children = [s for s in spans if "parentSpanId" in s]
    write_spans(tmp_path / "open.jsonl", children)
    assembler = TurnAssembler()
    assert list(iter_captures([tmp_path], assembler=assembler)) == []
    assert assembler.held_back_turns == 1 and len(assembler.held_back()) == len(children)


def test_turn_inside_a_host_trace_takes_only_its_descendants(refund_capture, tmp_path):
    """invoke_agent under a host span (host spans are not in our files): still one turn."""
    spans = flat_spans(refund_capture)
    root = next(s for s in spans if "parentSpanId" not in s)
    hosted = [dict(s) for s in spans]
    for s in hosted:
        if s["spanId"] == root["spanId"]:
            s["parentSpanId"] = "ab" * 8
    stranger = dict(hosted[0], spanId="cd" * 8, parentSpanId="ab" * 8, name="chat other")
    write_spans(tmp_path / "hosted.jsonl", [stranger, *hosted])
    assembler = TurnAssembler()
    (capture,) = iter_captures([tmp_path], assembler=assembler)
    assert _kinds(capture) == EXPECTED_EVENTS
    assert not capture.root_is_trace_root
    assert [s.span_id for s in assembler.held_back()] == ["cd" * 8]


def test_half_written_last_line_is_left_for_later(refund_capture, tmp_path):
    lines = b"".join(p.read_bytes() for p in sorted(refund_capture.glob("*.jsonl"))).splitlines(keepends=True)
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"".join(lines) + b'{"resourceSpans": [{"scopeSp')
    pos = FilePosition()
    batches = list(read_spans(path, pos, warn=pytest.fail))
    assert sum(len(b) for b in batches) == 6
    assert pos.offset == sum(len(x) for x in lines) and pos.line == len(lines)


def test_corrupt_line_is_reported_with_file_and_line_and_skipped(refund_capture, tmp_path):
    good = b"".join(p.read_bytes() for p in sorted(refund_capture.glob("*.jsonl")))
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"{not json\n" + b'["a list"]\n' + good)
    warnings: list[str] = []
    (capture,) = iter_captures([path], warn=warnings.append)
    assert _kinds(capture) == EXPECTED_EVENTS
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{path}:1: not a valid OTLP/JSON line")
    assert warnings[1].startswith(f"{path}:2: not a valid OTLP/JSON line")


def test_other_signals_and_empty_lines_are_ignored(tmp_path):
    path = tmp_path / "otel.json"
    path.write_text('{"resourceLogs": []}\n\n{"resourceSpans": []}\n')
    warnings: list[str] = []
    assert list(iter_captures([path], warn=warnings.append)) == []
    assert warnings == []


_any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(_any_json)
def test_parser_never_raises_outside_its_contract(value):
    """Any JSON line either parses into spans or raises the errors read_spans reports."""
    try:
        spans = spans_of_request(value, "f:1")
        for s in spans:
            s.attrs, s.start, s.end, s.status, s.span_id  # noqa: B018 - decoding must not raise
    except (ValueError, TypeError, AttributeError, KeyError):
        pass


def test_attribute_values_of_every_type_decode(tmp_path):
    span = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "chat m", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": [
                {"key": "s", "value": {"stringValue": "x"}}, {"key": "i", "value": {"intValue": "7"}},
                {"key": "d", "value": {"doubleValue": 0.5}}, {"key": "b", "value": {"boolValue": True}},
                {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "t"}]}}},
                {"key": "k", "value": {"kvlistValue": {"values": [{"key": "z", "value": {"intValue": "1"}}]}}}]}
    (s,) = spans_of_request({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}, "f:1")
    assert s.attrs == {"s": "x", "i": 7, "d": 0.5, "b": True, "a": ["t"], "k": {"z": 1}}


def test_golden_file_reads(tmp_path):
    """The committed OpenLLMetry 0.40 golden file parses without warnings."""
    golden = Path(__file__).parent / "data" / "captures" / "openllmetry_0_40_legacy_attrs.jsonl"
    warnings: list[str] = []
    captures = list(iter_captures([golden], warn=warnings.append))
    assert len(captures) == 1 and warnings == []
    assert json.dumps(captures[0].to_dict())


def test_gzip_still_being_written_yields_its_whole_lines_and_resumes(refund_capture, tmp_path):
    spans = flat_spans(refund_capture)
    write_spans(tmp_path / "plain.jsonl", spans)  # one span a line
    raw = (tmp_path / "plain.jsonl").read_bytes()
    whole = gzip.compress(raw)
    path = tmp_path / "spans.jsonl.gz"
    path.write_bytes(whole[: len(whole) - 30])  # the compressor has not finished
    pos = FilePosition()
    warnings: list[str] = []
    first = [s for batch in read_spans(path, pos, warnings.append) for s in batch]
    assert warnings == [] and len(first) < len(spans)
    assert raw[: pos.offset].count(b"\n") == pos.line == len(first)
    path.write_bytes(whole)
    rest = [s for batch in read_spans(path, pos, warnings.append) for s in batch]
    assert [s.span_id for s in first + rest] == [s["spanId"] for s in spans]


def test_collector_backups_are_read_before_the_current_file(refund_capture, tmp_path):
    """lumberjack rotation: traces.json is current; traces-<timestamp>.json are older backups."""
    spans = flat_spans(refund_capture)
    root = next(s for s in spans if "parentSpanId" not in s)
    children = [s for s in spans if s is not root]
    write_spans(tmp_path / "traces.json", [root])
    write_spans(tmp_path / "traces-2026-11-30T06-00-00.000.json", children[:2])
    write_spans(tmp_path / "traces-2026-11-30T07-00-00.000.json", children[2:])
    assert [p.name for p in capture_files(tmp_path)] == [
        "traces-2026-11-30T06-00-00.000.json", "traces-2026-11-30T07-00-00.000.json", "traces.json"]
    (capture,) = load_captures(tmp_path)
    assert _kinds(capture) == EXPECTED_EVENTS


@pytest.fixture(scope="module")
def three_turns(tmp_path_factory) -> list[list[dict]]:
    """Spans of three SDK turns, each in its export order (children first, root last)."""
    from _capture_agent import POLICY_TICKET

    directory = tmp_path_factory.mktemp("three") / "captures"
    with simulator() as sim:
        capture_turns(directory, sim, [("sim-baseline", REFUND_TICKET), ("sim-baseline", POLICY_TICKET),
                                       ("sim-baseline", "Where is my order L1111?")])
    by_trace: dict[str, list[dict]] = {}
    for s in flat_spans(directory):
        by_trace.setdefault(s["traceId"], []).append(s)
    return [sorted(v, key=lambda s: "parentSpanId" not in s) for v in by_trace.values()]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_interleaved_turns_split_anywhere_group_like_sequential_ones(three_turns, tmp_path_factory, data):
    """Concurrent turns interleave in export order and split across rotations at any point:
    grouping gives each turn's capture exactly as when it is read alone."""
    queues = [list(t) for t in three_turns]
    order: list[dict] = []
    while any(queues):
        i = data.draw(st.sampled_from([k for k, q in enumerate(queues) if q]))
        order.append(queues[i].pop(0))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(order)), max_size=3)))
    work = tmp_path_factory.mktemp("interleaved")
    bounds = [0, *cuts, len(order)]
    for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
        write_spans(work / (f"spans-x.{n}.jsonl" if n else "spans-x.jsonl"), order[a:b], per_line=2)
    got = {c.trace_id: c.events for c in load_captures(work)}
    alone = {}
    for t in three_turns:
        single = tmp_path_factory.mktemp("alone")
        write_spans(single / "s.jsonl", t)
        (c,) = load_captures(single)
        alone[c.trace_id] = c.events
    assert got == alone


def test_collector_file_exporter_shape(refund_capture, tmp_path):
    """What the Collector's pdata JSON writes: empty parentSpanId on roots, span flags, schemaUrl,
    an empty status object; a root whose parent is remote (flags 0x300) still closes the turn."""
    spans = []
    for s in flat_spans(refund_capture):
        c = dict(s, flags=256, status=s.get("status") or {})
        c.setdefault("parentSpanId", "")
        spans.append(c)
    root = next(s for s in spans if s["parentSpanId"] == "")
    root.update(parentSpanId="ab" * 8, flags=0x300)  # called from another service
    line = {"resourceSpans": [{"resource": {"attributes": []}, "schemaUrl": "https://opentelemetry.io/schemas/1.26.0",
                               "scopeSpans": [{"scope": {"name": "relabelled-by-a-processor"}, "spans": spans}]}]}
    (tmp_path / "traces.json").write_text(json.dumps(line, separators=(",", ":")) + "\n")
    (capture,) = load_captures(tmp_path)
    assert _kinds(capture) == EXPECTED_EVENTS


def test_span_ending_after_its_root_is_reported_not_held_forever(refund_capture, tmp_path):
    spans = flat_spans(refund_capture)
    root = next(s for s in spans if "parentSpanId" not in s)
    last_chat = [s for s in spans if s["name"].startswith("chat")][-1]
    order = [s for s in spans if s is not root and s is not last_chat] + [root, last_chat]
    write_spans(tmp_path / "spans.jsonl", order)
    warnings: list[str] = []
    assembler = TurnAssembler()
    (capture,) = iter_captures([tmp_path], warn=warnings.append, assembler=assembler)
    assert len(capture.model_calls()) == 2
    assert assembler.held_back_turns == 0
    assert len(warnings) == 1 and "ended after their turn's root span" in warnings[0]
    assert f"{tmp_path / 'spans.jsonl'}:{len(order)}" in warnings[0]
