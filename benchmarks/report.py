"""Benchmark: a 10k-example report — build/write time, file size, and load time in headless Chromium.

Baselines measured in the same run: writing the same report as plain JSON (orjson) for the build;
for the browser, a plain static HTML page of the same byte size and an empty page (start-up).
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from evalshift_core._models import Call, Example, ToolCall, ToolTrace
from evalshift_core.report._data import build_report
from evalshift_core.report._report import write_report

N = 10_000
REPEAT = 3
TOOLS = ["lookup_order", "issue_refund", "notify_security_team", "search_kb", "escalate"]
WORDS = ["refund", "order", "shipped", "account", "security", "policy", "days", "business", "customer", "please", "thanks"]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def synthetic_run(n: int, seed: int = 0) -> tuple[list[Example], list[Call], dict, list[dict]]:
    """n examples, ~15% regressed (tool selection and argument drift), a tenth of them multi-round."""
    rng = random.Random(seed)
    examples, calls, regressions, scores = [], [], [], []
    for i in range(n):
        ex_id = f"ex-{i:05d}"
        multi = i % 10 == 0
        rounds = 3 if multi else None
        src_calls = [ToolCall(tool_name=rng.choice(TOOLS), arguments={"order_id": f"A{i}", "amount_usd": 12.5},
                              sequence_index=j, round_index=(j + 1) if multi else None) for j in range(2)]
        regressed = rng.random() < 0.15
        tgt_calls = [c.model_copy() for c in src_calls]
        if regressed:
            tgt_calls[0] = tgt_calls[0].model_copy(update={"tool_name": rng.choice(TOOLS),
                                                           "arguments": {"order_id": f"A{i}", "amount_usd": "12.5"}})
        examples.append(Example(id=ex_id, inputs={"input": _text(rng, 25)}, tags=[rng.choice(["refund", "status", "security"])]))
        for role, cs in (("source", src_calls), ("target", tgt_calls)):
            text = _text(rng, 40)
            calls.append(Call(example_id=ex_id, role=role, model=f"openai:{role}", text=text,
                              trace=ToolTrace(calls=cs, final_text=text, round_count=rounds)))
        score = {"example_id": ex_id, "evaluator": "tool_selection", "name": "routing", "side": "conformance",
                 "source_score": 1.0, "target_score": 0.0 if regressed else 1.0}
        scores.append(score)
        if regressed:
            md: dict = {"expected": [c.tool_name for c in src_calls], "source": [c.tool_name for c in src_calls],
                        "target": [c.tool_name for c in tgt_calls]}
            regressions.append({**score, "labels": ["TOOL_SELECTION_DRIFT"], "tools": [src_calls[0].tool_name], "metadata": md})
            regressions.append({"example_id": ex_id, "evaluator": "tool_arguments", "name": "args", "side": None,
                                "source_score": 1.0, "target_score": 0.5, "labels": ["ARGUMENT_VALUE_DRIFT"],
                                "tools": [src_calls[0].tool_name], "metadata": {"fields": [
                                    {"tool": src_calls[0].tool_name, "field": "amount_usd", "source": 12.5,
                                     "target": "12.5", "score": 0.0, "label": "ARGUMENT_VALUE_DRIFT"}]}})
    analysis = {
        "verdict": "fail", "reasons": ["tool_selection.routing dropped"],
        "comparisons": [
            {"evaluator": "tool_selection", "name": "routing", "side": "conformance", "n": n, "source_mean": 1.0,
             "target_mean": 0.85, "difference": -0.15, "ci": [-0.16, -0.14], "test": "wilcoxon", "p_value": 1e-9,
             "p_adjusted": 1e-9, "severity": "high", "status": "measured"},
            {"evaluator": "tool_arguments", "name": "args", "side": None, "n": n, "source_mean": 1.0,
             "target_mean": 0.92, "difference": -0.08, "ci": [-0.09, -0.07], "test": "wilcoxon", "p_value": 1e-9,
             "p_adjusted": 1e-9, "severity": "medium", "status": "measured"},
        ],
        "labels": {"TOOL_SELECTION_DRIFT": {"count": len(regressions) // 2, "by_tool": {}},
                   "ARGUMENT_VALUE_DRIFT": {"count": len(regressions) // 2, "by_tool": {}}},
        "regressions": regressions,
    }
    return examples, calls, analysis, scores


def chromium_load(url: str) -> tuple[float, str]:
    """Wall time of a headless Chromium that loads ``url`` and dumps its DOM after scripts ran."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium is not installed (make test installs Debian's chromium)")
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:  # chromium helpers may still be exiting
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--dump-dom", url]
        start = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
        return time.perf_counter() - start, out


def rendered_ms(dom: str) -> float:
    marker = 'data-rendered-ms="'
    i = dom.index(marker) + len(marker)
    return float(dom[i:dom.index('"', i)])


def main() -> None:
    examples, calls, analysis, scores = synthetic_run(N)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        report = build_report(analysis, examples, calls, {"run_id": "bench"}, scores)
        t1 = time.perf_counter()
        html_path = write_report(out, report)
        t2 = time.perf_counter()
        baseline_json = out / "baseline.json"
        t3 = time.perf_counter()
        baseline_json.write_bytes(orjson.dumps(report))
        t4 = time.perf_counter()

        html_size = html_path.stat().st_size
        json_size = (out / "report.json").stat().st_size
        # Baseline page: static HTML of the same byte size, no script.
        filler = "<p>" + "x" * 96 + "</p>\n"
        static = out / "static.html"
        static.write_text("<!doctype html><html><head><meta charset='utf-8'><title>static</title></head><body>"
                          + filler * (html_size // len(filler)) + "</body></html>")

        empty = out / "empty.html"
        empty.write_text("<!doctype html><title>empty</title>")

        report_times, static_times, empty_times, render_times, filtered = [], [], [], [], []
        for _ in range(REPEAT):
            secs, dom = chromium_load(html_path.as_uri())
            report_times.append(secs)
            render_times.append(rendered_ms(dom))
            static_times.append(chromium_load(static.as_uri())[0])
            empty_times.append(chromium_load(empty.as_uri())[0])
            filtered.append(rendered_ms(chromium_load(html_path.as_uri() + "#label=ARGUMENT_VALUE_DRIFT&q=ex-0")[1]))

    build_s, write_s, json_s = t1 - t0, t2 - t1, t4 - t3
    load, base = statistics.median(report_times), statistics.median(static_times)
    startup = statistics.median(empty_times)
    print(f"report benchmark: {N} examples, {sum(1 for r in report['examples'] if r['regressions'])} regressed")
    print(f"  report.html size      {html_size / 1e6:.2f} MB   (report.json {json_size / 1e6:.2f} MB; budget ~15 MB)")
    print(f"  build_report          {build_s:.2f} s")
    print(f"  write json + html     {write_s:.2f} s   vs orjson dump of the same data {json_s:.3f} s "
          f"(ratio {write_s / json_s:.1f}x)")
    print(f"  chromium load+dump    {load:.2f} s   vs static HTML of the same size {base:.2f} s "
          f"(ratio {load / base:.2f}x; median of {REPEAT})")
    print(f"  chromium, empty page  {startup:.2f} s   (browser start-up; report's own cost {load - startup:.2f} s)")
    print(f"  in-page first render  {statistics.median(render_times):.0f} ms (JSON.parse + first page of 50 rows)")
    print(f"  filtered first render {statistics.median(filtered):.0f} ms (label + search filter over all rows)")


if __name__ == "__main__":
    main()
