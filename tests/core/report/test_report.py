"""report.json and report.html: what each row, banner and chart carries, and how the file is built."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core._exceptions import InputError
from evalshift_core._io import atomic_write_json, atomic_write_jsonl
from evalshift_core._models import Call, Example, FixtureResult, ToolCall, ToolTrace
from evalshift_core.report._data import build_report, field_explanations, text_diff, trace_diff
from evalshift_core.report._html import embed_json, render_compact_html, render_html
from evalshift_core.report._report import render_run_report, write_report

MANIFEST = {"run_id": "run-1", "suite": "s", "source_model": "openai:a", "target_model": "openai:b"}


def _trace(calls: list[tuple], *, text: str | None = None, rounds: int | None = None) -> ToolTrace:
    """calls: (name, args) on single-shot, (round, name, args) on multi-round."""
    out = []
    for i, c in enumerate(calls):
        k, name, args = c if rounds else (None, *c)
        out.append(ToolCall(tool_name=name, arguments=args, sequence_index=i, round_index=k))
    return ToolTrace(calls=out, final_text=text, round_count=rounds)


def _call(example_id: str, role: str, trace: ToolTrace | None, **kw: Any) -> Call:
    return Call(example_id=example_id, role=role, model=f"openai:{role}", trace=trace,
                text=trace.final_text if trace else None, **kw)


def _regression(example_id: str, evaluator: str = "tool_selection", **kw: Any) -> dict[str, Any]:
    row = {"example_id": example_id, "evaluator": evaluator, "name": kw.pop("name", "routing"),
           "side": kw.pop("side", "conformance"), "source_score": 1.0, "target_score": 0.0,
           "labels": ["TOOL_SELECTION_DRIFT"], "tools": [], "metadata": {}}
    row.update(kw)
    return row


def _analysis(regressions: list[dict[str, Any]], comparisons: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    comparisons = comparisons if comparisons is not None else [
        {"evaluator": "tool_selection", "name": "routing", "side": "conformance", "n": 10, "source_mean": 1.0,
         "target_mean": 0.8, "difference": -0.2, "ci": [-0.4, -0.05], "test": "wilcoxon", "p_value": 0.01,
         "p_adjusted": 0.02, "severity": "high", "status": "measured"},
    ]
    return {"verdict": "fail", "reasons": ["tool_selection.routing dropped"], "comparisons": comparisons,
            "labels": {}, "regressions": regressions, **kw}


def test_single_shot_row_has_one_tools_line_and_no_rounds_key():
    """Seed 001: "Single-shot pairs render exactly as before and carry no rounds key." """
    ex = Example(id="e1", inputs={"input": "hi"})
    calls = [_call("e1", "source", _trace([("lookup_order", {"order_id": "A1"})])),
             _call("e1", "target", _trace([]))]
    row = build_report(_analysis([]), [ex], calls, MANIFEST)["examples"][0]
    assert row["tools_called"] == ["lookup_order → (none)"]
    assert "rounds" not in row


def test_multi_round_row_has_one_tools_line_per_round_and_round_prefixed_diff_items():
    """Seed 001: one line per round in the "Tools called (source → target)" column, and each
    trace-diff item prefixed with Round k:."""
    ex = Example(id="e1", inputs={"input": "refund A1 $12"})
    src = _trace([(1, "lookup_order", {"order_id": "A1"}), (2, "issue_refund", {"order_id": "A1"})], rounds=3, text="done")
    tgt = _trace([(1, "issue_refund", {"order_id": "A1"}), (2, "lookup_order", {"order_id": "A1"})], rounds=3, text="done")
    reg = _regression("e1", metadata={"rounds": [
        {"round": 1, "expected": ["lookup_order"], "source": ["lookup_order"], "target": ["issue_refund"],
         "source_score": 1.0, "target_score": 0.0},
        {"round": 2, "expected": ["issue_refund"], "source": ["issue_refund"], "target": ["lookup_order"],
         "source_score": 1.0, "target_score": 0.0},
        {"round": 3, "expected": [], "source": [], "target": [], "source_score": 1.0, "target_score": 1.0},
    ]})
    row = build_report(_analysis([reg]), [ex], [_call("e1", "source", src), _call("e1", "target", tgt)], MANIFEST)["examples"][0]
    assert row["tools_called"] == [
        "Round 1: lookup_order → issue_refund",
        "Round 2: issue_refund → lookup_order",
        "Round 3: (none) → (none)",
    ]
    assert row["rounds"] == 3
    assert row["diverged_rounds"] == [1, 2]
    assert all(item["text"].startswith(f"Round {item['round']}: ") for item in row["trace_diff"])
    assert {item["round"] for item in row["trace_diff"]} == {1, 2, 3}
    assert row["regressions"][0]["expected"] == ["Round 1: lookup_order", "Round 2: issue_refund", "Round 3: (no tools)"]


def test_a_round_whose_arguments_regressed_is_the_round_the_row_diverged_in():
    """Same tools every round, the refund's amount wrong in round 3: the round filter finds the
    row under round 3 (the record's per-round scores), not round 1."""
    ex = Example(id="e1", inputs={"input": "refund A1 $12"})
    calls = [(1, "lookup_order", {"order_id": "A1"}), (2, "lookup_order", {"order_id": "A1"}),
             (3, "issue_refund", {"order_id": "A1", "amount_usd": 12.0})]
    src = _trace(calls, rounds=3, text="done")
    tgt = _trace([*calls[:2], (3, "issue_refund", {"order_id": "A1", "amount_usd": 120.0})], rounds=3, text="done")
    reg = _regression("e1", evaluator="tool_arguments", name="arguments", labels=["ARGUMENT_DRIFT"], metadata={
        "rounds": [{"round": k, "source_score": 1.0, "target_score": 1.0 if k < 3 else 0.5} for k in (1, 2, 3)]})
    row = build_report(_analysis([reg]), [ex], [_call("e1", "source", src), _call("e1", "target", tgt)], MANIFEST)["examples"][0]
    assert row["diverged_rounds"] == [3]


def test_trace_diff_aligns_calls_and_marks_changed_arguments():
    src = _trace([("lookup_order", {"order_id": "A1"}), ("issue_refund", {"amount_usd": 12.0})])
    tgt = _trace([("issue_refund", {"amount_usd": "12"}), ("notify_security_team", {})])
    ops = [(i["op"], i["source"], i["target"]) for i in trace_diff(src, tgt)]
    assert ops == [
        ("removed", 'lookup_order({"order_id":"A1"})', None),
        ("changed", 'issue_refund({"amount_usd":12.0})', 'issue_refund({"amount_usd":"12"})'),
        ("added", None, "notify_security_team({})"),
    ]
    assert all("round" not in i and not i["text"].startswith("Round") for i in trace_diff(src, tgt))


def test_field_explanations_json_render_values_so_type_changes_show():
    """Issue: per-field explanations (`amount_usd: 12.0 → "12"`), in tool_arguments' metadata shape."""
    md = {"against": "source", "fields": [
        {"tool": "issue_refund", "field": "amount_usd", "source": 12.0, "target": "12", "score": 0.0,
         "label": "ARGUMENT_VALUE_DRIFT"},
        {"tool": "issue_refund", "field": "order_id", "source": "A1", "target": "A1", "score": 1.0},
        {"tool": "issue_refund", "field": "reason", "source": "late", "target": None, "score": 0.5,
         "missing": "target", "label": "ARGUMENT_VALUE_DRIFT"},
        {"tool": "issue_refund", "field": "note", "source": None, "target": None, "score": 0.0},
    ]}
    assert field_explanations(md) == [
        'issue_refund.amount_usd: 12.0 → "12" [ARGUMENT_VALUE_DRIFT]',
        'issue_refund.reason: "late" → (absent) [ARGUMENT_VALUE_DRIFT]',
        "issue_refund.note: null → null",
    ]


def test_field_explanations_against_expected_show_the_expected_value_and_the_round():
    md = {"against": "expected", "rounds": [{"round": 2, "source_score": 1.0, "target_score": 0.0}], "fields": [
        {"tool": "t", "field": "f", "expected": 1, "source": 1, "target": 2, "score": 0.0, "round": 2,
         "source_field_score": 1.0},
    ]}
    assert field_explanations(md) == ["Round 2: t.f: 1 → 2 (expected 1)"]


def test_evaluator_reasons_and_missing_calls_become_notes():
    ex = Example(id="e1")
    md = {"against": "source", "fields": [], "reason": "no matched calls between source and target",
          "missing_calls": ["lookup_order"]}
    reg = _regression("e1", evaluator="tool_arguments", name="args", side=None, metadata=md)
    row = build_report(_analysis([reg]), [ex], [], MANIFEST)["examples"][0]
    assert row["regressions"][0]["notes"] == ["no matched calls between source and target", "missing calls: lookup_order"]


def test_text_evaluator_regression_gets_a_text_diff_and_tool_regression_a_trace_diff():
    ex = [Example(id="t", inputs={"input": "policy?"}), Example(id="u", inputs={"input": "hacked"})]
    calls = [
        _call("t", "source", _trace([], text="Returns are free within 30 days.")),
        _call("t", "target", _trace([], text="Returns cost $5 within 30 days.")),
        _call("u", "source", _trace([("notify_security_team", {"signal": "hacked"})])),
        _call("u", "target", _trace([], text="Reset your password.")),
    ]
    regs = [_regression("t", evaluator="semantic", name="quality", side=None, labels=[]), _regression("u")]
    rows = {r["example_id"]: r for r in build_report(_analysis(regs), ex, calls, MANIFEST)["examples"]}
    assert "trace_diff" not in rows["t"] and rows["t"]["regressions"][0]["kind"] == "text"
    assert ["-", "are free "] in rows["t"]["text_diff"] and ["+", "cost $5 "] in rows["t"]["text_diff"]
    assert "text_diff" not in rows["u"] and rows["u"]["trace_diff"][0]["op"] == "removed"


@given(st.text(max_size=300), st.text(max_size=300))
def test_text_diff_segments_rebuild_both_texts(source, target):
    segments = text_diff(source, target)
    assert "".join(t for op, t in segments if op != "+") == source
    assert "".join(t for op, t in segments if op != "-") == target
    assert all(t for _, t in segments)


def test_banners_constraints_not_honoured_broken_harness_and_nothing_measured():
    """Seed 001: a Gemini arm records tools.strict under dropped_params and the report shows a
    Constraints not honoured banner; "broken eval harness" and "Nothing measured" rows."""
    ex = Example(id="e1", inputs={"input": "x"})
    calls = [_call("e1", "source", _trace([])), _call("e1", "target", _trace([]), dropped_params=["tools.strict"])]
    comparisons = [{"evaluator": "semantic", "name": "quality", "side": None, "n": 0, "status": "unknown"}]
    report = build_report(_analysis([], comparisons, banners=["broken eval harness"]), [ex], calls, MANIFEST)
    titles = [b["title"] for b in report["banners"]]
    assert titles == ["Constraints not honoured", "broken eval harness", "Nothing measured"]
    assert "openai:target dropped tools.strict on 1 call" in report["banners"][0]["detail"]
    assert "measured the harness" in report["banners"][1]["detail"]
    assert report["banners"][2]["detail"].startswith("semantic.quality: ")
    html = render_html(report)
    assert html.index("Constraints not honoured") < html.index("<h2 id='h-cmp'>Comparisons")


def test_no_banner_when_nothing_applies():
    ex = Example(id="e1", inputs={"input": "x"})
    report = build_report(_analysis([]), [ex], [_call("e1", "source", _trace([])), _call("e1", "target", _trace([]))], MANIFEST)
    assert report["banners"] == []
    assert "class='banner'" not in render_html(report).split("<noscript>")[0]


def test_rows_put_regressions_first_by_severity():
    ex = [Example(id=i) for i in ("ok", "low", "crit")]
    comparisons = [
        {"evaluator": "tool_selection", "name": "a", "side": None, "n": 3, "severity": "low", "status": "measured"},
        {"evaluator": "tool_selection", "name": "b", "side": None, "n": 3, "severity": "critical", "status": "measured"},
    ]
    regs = [_regression("low", name="a", side=None), _regression("crit", name="b", side=None)]
    rows = build_report(_analysis(regs, comparisons), ex, [], MANIFEST)["examples"]
    assert [r["example_id"] for r in rows] == ["crit", "low", "ok"]
    assert [r["severity"] for r in rows] == ["critical", "low", None]


def test_score_distributions_bin_source_and_target_and_skip_skipped_rows():
    scores = [
        {"example_id": "a", "evaluator": "tool_selection", "name": "r", "side": None, "source_score": 1.0, "target_score": 0.0},
        {"example_id": "b", "evaluator": "tool_selection", "name": "r", "side": None, "source_score": 0.55, "target_score": 1.0},
        {"example_id": "c", "evaluator": "tool_selection", "name": "r", "side": None, "source_score": 0.0,
         "target_score": 0.0, "skipped": True},
    ]
    dist = build_report(_analysis([]), [], [], MANIFEST, scores)["charts"]["distributions"]
    assert dist == [{"evaluator": "tool_selection", "name": "r", "side": None, "bins": 10,
                     "source": [0, 0, 0, 0, 0, 1, 0, 0, 0, 1], "target": [1, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                     "binary": False, "pairs": None}]
    # graded scores (0.55) keep their histogram
    assert render_html(build_report(_analysis([]), [], [], MANIFEST, scores)).count("class='bar-source'") == 10


def test_scores_of_only_0_and_1_get_paired_outcomes_instead_of_a_two_bar_histogram():
    outcomes = [(1.0, 1.0)] * 22 + [(1.0, 0.0)] * 10 + [(0.0, 1.0)] + [(0.0, 0.0)] * 2
    scores = [{"example_id": f"e{i}", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
               "source_score": s, "target_score": t} for i, (s, t) in enumerate(outcomes)]
    report = build_report(_analysis([]), [], [], MANIFEST, scores)
    dist = report["charts"]["distributions"][0]
    assert dist["binary"] is True
    assert dist["pairs"] == {"held": 22, "lost": 10, "gained": 1, "missed": 2}
    page = render_html(report)
    assert "tool_selection.routing (conformance): 22 held · 10 lost · 1 gained · 2 missed by both" in page
    assert "Score distribution of" not in page  # no histogram of two bars


def test_the_label_chart_counts_regressions_per_label_and_argument_field():
    labels = {"ARGUMENT_VALUE_DRIFT": {"count": 12, "by_tool": {"issue_refund": 12},
                                       "by_field": {"issue_refund.amount_usd": 12, "issue_refund.order_id": 2}},
              "TOOL_SELECTION_DRIFT": {"count": 7, "by_tool": {"notify_security_team": 7}, "by_field": {}},
              "REFUSAL_REGRESSION": {"count": 1}}
    report = build_report(_analysis([], labels=labels), [], [], MANIFEST)
    assert report["charts"]["labels"] == [
        {"label": "ARGUMENT_VALUE_DRIFT", "where": "issue_refund.amount_usd", "count": 12},
        {"label": "TOOL_SELECTION_DRIFT", "where": "notify_security_team", "count": 7},
        {"label": "ARGUMENT_VALUE_DRIFT", "where": "issue_refund.order_id", "count": 2},
        {"label": "REFUSAL_REGRESSION", "where": None, "count": 1},
    ]
    page = render_html(report)
    assert "ARGUMENT_VALUE_DRIFT on issue_refund.amount_usd" in page and "id='label-chart'" in page


def test_the_tool_chart_shows_each_tools_share_of_examples_on_both_sides():
    """32 tickets, 7 security: "notify_security_team: 22% → 0%"."""
    examples = [Example(id=f"s{i}", tags=["security"]) for i in range(7)] + [
        Example(id=f"r{i}", tags=["refund"]) for i in range(25)]
    calls = []
    for ex in examples:
        src = [("notify_security_team", {})] if ex.id.startswith("s") else [("lookup_order", {})]
        tgt = [] if ex.id.startswith("s") else [("lookup_order", {})]
        calls += [_call(ex.id, "source", _trace(src)), _call(ex.id, "target", _trace(tgt, text="reset your password"))]
    report = build_report(_analysis([]), examples, calls, MANIFEST)
    tools = {t["tool"]: t for t in report["charts"]["tool_calls"]["tools"]}
    assert (tools["notify_security_team"]["source"], tools["notify_security_team"]["target"]) == (7, 0)
    assert tools["notify_security_team"]["dropped_tags"] == {"security": 7}
    page = render_html(report)
    assert "notify_security_team: 22% → 0%" in page and "lookup_order: 78% → 78%" in page
    # the most changed tool comes first, inside the verdict panel
    verdict = page[page.index("class='verdict "):page.index("</section>", page.index("class='verdict "))]
    assert verdict.index("notify_security_team") < verdict.index("lookup_order") and "id='tool-chart'" in verdict


def test_multi_round_runs_chart_where_divergence_starts():
    examples = [Example(id=f"e{i}") for i in range(4)]
    calls = []
    for i, ex in enumerate(examples):
        src = [(1, "lookup_order", {}), (2, "issue_refund", {})]
        tgt = {0: src, 1: [(1, "lookup_order", {}), (2, "escalate", {})], 2: [(1, "issue_refund", {}), (2, "lookup_order", {})],
               3: [(1, "lookup_order", {}), (2, "lookup_order", {})]}[i]
        calls += [_call(ex.id, "source", _trace(src, rounds=3)), _call(ex.id, "target", _trace(tgt, rounds=3))]
    report = build_report(_analysis([]), examples, calls, MANIFEST)
    assert report["charts"]["rounds"] == [{"round": 1, "first": 1, "diverged": 1}, {"round": 2, "first": 2, "diverged": 3},
                                          {"round": 3, "first": 0, "diverged": 0}]
    assert "Round 2: 2 start to diverge here, 3 diverge in it" in render_html(report)
    single = build_report(_analysis([]), examples[:1], [_call("e0", "source", _trace([("a", {})])),
                                                         _call("e0", "target", _trace([("b", {})]))], MANIFEST)
    assert single["charts"]["rounds"] == [] and "id='round-chart'" not in render_html(single)


def test_fixture_results_are_listed_per_round():
    ex = Example(id="e1", expected_tool_rounds=[[{"tool_name": "lookup_order"}]],
                 tool_result_fixtures=[[FixtureResult(tool_name="lookup_order", result={"paid": 12.0})]])
    row = build_report(_analysis([]), [ex], [], MANIFEST)["examples"][0]
    assert row["tool_results"] == ['Round 1: lookup_order → {"paid":12.0}']


def _inline(tag: str, page: str) -> str:
    return re.search(rf"<{tag}>(.*?)</{tag}>", page, re.S).group(1)


def test_html_is_self_contained_and_its_csp_allows_only_its_own_script_and_style():
    ex = Example(id="e1", inputs={"input": "x"})
    page = render_html(build_report(_analysis([]), [ex], [], MANIFEST))
    csp = re.search(r'http-equiv=\'Content-Security-Policy\' content="([^"]+)"', page).group(1)

    def digest(s: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"

    assert f"script-src {digest(_inline('script', page))};" in csp
    assert f"style-src {digest(_inline('style', page))};" in csp
    assert csp.startswith("default-src 'none';") and "unsafe" not in csp
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in _inline("style", page)


@given(st.text())
def test_embedded_json_never_closes_its_script_element_and_reads_back(text):
    embedded = embed_json({"x": text, "k": [text]})
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded
    assert json.loads(embedded) == {"x": text, "k": [text]}


def test_write_report_writes_json_and_html(tmp_path):
    ex = Example(id="e1", inputs={"input": "x"})
    report = build_report(_analysis([_regression("e1")]), [ex], [], MANIFEST)
    path = write_report(tmp_path, report)
    assert path == tmp_path / "report.html" and path.read_text().startswith("<!doctype html>")
    assert orjson.loads((tmp_path / "report.json").read_bytes())["examples"][0]["labels"] == ["TOOL_SELECTION_DRIFT"]


def test_render_run_report_without_analysis_names_the_missing_file(tmp_path):
    run_dir = tmp_path / "runs" / "run-1"
    atomic_write_json(run_dir / "run.json", MANIFEST)
    atomic_write_jsonl(run_dir / "examples.jsonl", [])
    atomic_write_jsonl(run_dir / "raw.jsonl", [])
    with pytest.raises(InputError, match="analysis.json: run 'run-1' has no analysis yet"):
        render_run_report(tmp_path, "run-1")


def test_render_run_report_rebuilds_both_files_from_the_run_directory(tmp_path):
    run_dir = tmp_path / "runs" / "run-1"
    ex = Example(id="e1", inputs={"input": "x"})
    calls = [_call("e1", "source", _trace([("a", {})])), _call("e1", "target", _trace([("b", {})]))]
    analysis = _analysis([_regression("e1")])
    scores = [{"example_id": "e1", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
               "source_score": 1.0, "target_score": 0.0, "skipped": False, "labels": [], "metadata": {}}]
    atomic_write_json(run_dir / "run.json", MANIFEST)
    atomic_write_jsonl(run_dir / "examples.jsonl", [ex.model_dump(mode="json", exclude_none=True)])
    atomic_write_jsonl(run_dir / "raw.jsonl", [c.model_dump(mode="json", exclude_none=True) for c in calls])
    atomic_write_json(run_dir / "analysis.json", {"schema_version": 2, **analysis})
    atomic_write_jsonl(run_dir / "scores.jsonl", scores)
    path = render_run_report(tmp_path, "run-1")
    assert path == run_dir / "report.html"
    expected = orjson.loads(orjson.dumps(build_report({"schema_version": 2, **analysis}, [ex], calls, MANIFEST, scores)))
    assert orjson.loads((run_dir / "report.json").read_bytes()) == expected
    assert "a → b" in expected["examples"][0]["tools_called"]


def test_compact_html_names_the_verdict_and_escapes_everything():
    analysis = _analysis([], reasons=["<script>alert(1)</script>"], labels={"TOOL_SELECTION_DRIFT": {"count": 3}})
    out = render_compact_html(analysis, "/tmp/<b>/report.html")
    assert "EvalShift verdict: FAIL" in out
    assert "<script>" not in out and "&lt;script&gt;" in out and "&lt;b&gt;" in out
    assert "<code>TOOL_SELECTION_DRIFT</code> × 3" in out


def test_write_report_reads_distributions_from_the_run_scores_when_built_without_them(tmp_path):
    """compare() builds the report without scores; the run's scores.jsonl is already on disk."""
    atomic_write_jsonl(tmp_path / "scores.jsonl", [
        {"example_id": "e1", "evaluator": "tool_selection", "name": "r", "side": None, "source_score": 1.0,
         "target_score": 0.0, "skipped": False, "labels": [], "metadata": {}},
    ])
    report = build_report(_analysis([]), [Example(id="e1")], [], MANIFEST)
    assert report["charts"]["distributions"] is None
    write_report(tmp_path, report)
    dist = orjson.loads((tmp_path / "report.json").read_bytes())["charts"]["distributions"]
    assert dist[0]["source"][9] == 1 and dist[0]["target"][0] == 1


def test_html_shares_a_text_budget_so_long_answers_cannot_blow_up_the_file():
    """Issue 8: report.html stays usable at 10k examples (at most about 15 MB)."""
    long = "word " * 10_000
    ex = [Example(id=f"e{i}", inputs={"input": long}) for i in range(400)]
    calls = [_call(e.id, role, _trace([], text=long)) for e in ex for role in ("source", "target")]
    report = build_report(_analysis([_regression("e0")]), ex, calls, MANIFEST)
    page = render_html(report)
    assert len(page) < 3_000_000  # the untrimmed text alone is 400 x 3 x 50,000 characters
    assert "more characters]" in page
    assert report["examples"][0]["source_text"] == long  # report.json keeps the whole text


def test_open_report_hands_the_file_url_to_the_users_browser(tmp_path):
    """`--open`: the report opens from file:// in whatever browser $BROWSER names."""
    seen = tmp_path / "seen.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {seen}\n')
    browser.chmod(0o755)
    page = tmp_path / "my report.html"
    page.write_text("<!doctype html>")
    env = {**os.environ, "BROWSER": str(browser), "DISPLAY": ""}
    code = f"from evalshift_core.report._report import open_report; print(open_report({str(page)!r}))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "True"
    assert seen.read_text().strip() == page.as_uri()


def test_multi_round_replay_on_the_simulator_reports_one_line_per_round(demo_simulator, tmp_path):
    """Seed 001: on a teacher-forced multi-round replay the report shows one line per round and
    prefixes each trace-diff item with Round k:; single-shot pairs carry no rounds key."""
    from evalshift_core import compare

    urgent = Example(
        id="urgent", inputs={"input": "URGENT: refund order D4004 ($89.90) immediately, wrong size."},
        tools=[{"name": "lookup_order"}, {"name": "issue_refund"}],
        expected_tool_rounds=[[{"tool_name": "lookup_order", "arguments": {"order_id": "D4004"}}],
                              [{"tool_name": "issue_refund", "arguments": {"order_id": "D4004", "amount_usd": 89.9}}]],
        tool_result_fixtures=[[{"tool_name": "lookup_order", "result": {"paid": 89.9}}],
                              [{"tool_name": "issue_refund", "result": "ok"}]],
    )
    urgent = urgent.model_copy(update={"expected_tools": urgent.expected_tool_rounds[0]})
    single = Example(id="single", inputs={"input": "Has order N1313 shipped?"}, tools=[{"name": "lookup_order"}],
                     expected_tools=[{"tool_name": "lookup_order"}])
    cmp = compare([urgent, single], source="openai:sim-baseline", target="openai:sim-candidate",
                  config={"evaluators": {"tool_selection": [{"name": "routing"}]}}, out_dir=tmp_path,
                  providers={"openai": {"base_url": demo_simulator.openai_base_url, "api_key": "k"}})
    rows = {r["example_id"]: r for r in orjson.loads((cmp.run_dir / "report.json").read_bytes())["examples"]}
    assert len(rows["urgent"]["tools_called"]) == rows["urgent"]["rounds"] == 3
    assert rows["urgent"]["tools_called"][0] == "Round 1: lookup_order → issue_refund"
    assert rows["urgent"]["tools_called"][2] == "Round 3: (none) → (none)"
    assert rows["urgent"]["trace_diff"] and all(i["text"].startswith(f"Round {i['round']}: ") for i in rows["urgent"]["trace_diff"])
    assert rows["single"]["tools_called"] == ["lookup_order → lookup_order"] and "rounds" not in rows["single"]


def test_compact_html_shows_the_banners_of_the_report_beside_it(tmp_path):
    ex = Example(id="e1")
    calls = [_call("e1", "source", _trace([])), _call("e1", "target", _trace([]), dropped_params=["tools.strict"])]
    path = write_report(tmp_path, build_report(_analysis([]), [ex], calls, MANIFEST))
    assert "<strong>Constraints not honoured</strong>" in render_compact_html(_analysis([]), path)


def test_the_header_says_how_many_responses_came_from_the_cache():
    ex = Example(id="e1", inputs={"input": "x"})
    cached = render_html(build_report(_analysis([]), [ex], [], {**MANIFEST, "cached_calls": 64, "model_calls": 64}))
    assert "<span id='cache-note' class='cached'>64 of 64 responses from the cache</span>" in cached
    fresh = render_html(build_report(_analysis([]), [ex], [], {**MANIFEST, "cached_calls": 0, "model_calls": 64}))
    assert "<span id='cache-note'>0 of 64 responses from the cache</span>" in fresh
    assert "<span id='cache-note'" not in render_html(build_report(_analysis([]), [ex], [], MANIFEST))  # an older run
