"""The report: ``report.json`` and a self-contained ``report.html`` (no network, opens from file://)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from ._analysis import Analysis
from ._io import atomic_write_bytes, atomic_write_json
from ._models import Call, Example

REPORT_SCHEMA_VERSION = 1


def _tools_line(call: Call | None) -> list[str]:
    if call is None or call.trace is None:
        return ["(error)" if call is not None and call.error else "—"]
    trace = call.trace
    if trace.round_count:
        return [", ".join(c.tool_name for c in trace.round(k)) or "(none)" for k in range(1, trace.round_count + 1)]
    return [", ".join(trace.names()) or "(none)"]


def build_report(analysis: Analysis, examples: list[Example], calls: list[Call], manifest: dict[str, Any]) -> dict[str, Any]:
    by_key = {(c.example_id, c.role): c for c in calls}
    regressed: dict[str, list[dict[str, Any]]] = {}
    for r in analysis.regressions:
        regressed.setdefault(r.example_id, []).append(r.model_dump(mode="json"))
    rows = []
    for ex in examples:
        src, tgt = by_key.get((ex.id, "source")), by_key.get((ex.id, "target"))
        s_lines, t_lines = _tools_line(src), _tools_line(tgt)
        n = max(len(s_lines), len(t_lines))
        s_lines += [""] * (n - len(s_lines))
        t_lines += [""] * (n - len(t_lines))
        rows.append(
            {
                "example_id": ex.id,
                "tags": ex.tags,
                "input": ex.inputs.get("input"),
                "tools_called": [f"{s} → {t}" for s, t in zip(s_lines, t_lines)],
                "source_text": src.text if src else None,
                "target_text": tgt.text if tgt else None,
                "errors": [c.error for c in (src, tgt) if c is not None and c.error],
                "regressions": regressed.get(ex.id, []),
            }
        )
    dropped = sorted({p for c in calls for p in c.dropped_params})
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "run": manifest,
        "analysis": analysis.model_dump(mode="json"),
        "dropped_params": dropped,
        "examples": rows,
    }


_CSS = """
:root { color-scheme: light dark; --bg:#fff; --fg:#1b1b1f; --muted:#666; --bad:#b3261e; --ok:#1e6b35; --line:#ddd; }
@media (prefers-color-scheme: dark) { :root { --bg:#16161a; --fg:#e6e6ea; --muted:#a0a0a8; --bad:#ff8a80; --ok:#81c995; --line:#333; } }
body { background:var(--bg); color:var(--fg); font:14px/1.45 system-ui, sans-serif; margin:2rem; }
table { border-collapse:collapse; width:100%; margin:1rem 0; } td, th { border-bottom:1px solid var(--line); padding:.35rem .5rem; text-align:left; vertical-align:top; }
.verdict-fail { color:var(--bad); } .verdict-pass { color:var(--ok); } .muted { color:var(--muted); }
.banner { border:1px solid var(--bad); padding:.5rem 1rem; border-radius:6px; margin:.5rem 0; }
code, pre { font-family: ui-monospace, monospace; white-space: pre-wrap; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def render_html(report: dict[str, Any]) -> str:
    a = report["analysis"]
    run = report["run"]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        f"<title>EvalShift report {_e(run.get('run_id'))}</title><style>{_CSS}</style></head><body>",
        f"<h1 class='verdict-{_e(a['verdict'])}'>Verdict: {_e(a['verdict'].upper())}</h1>",
        f"<p class='muted'>{_e(run.get('source_model'))} → {_e(run.get('target_model'))} · suite {_e(run.get('suite'))} · run {_e(run.get('run_id'))}</p>",
    ]
    if report.get("dropped_params"):
        parts.append(f"<div class='banner'><strong>Constraints not honoured</strong>: {_e(', '.join(report['dropped_params']))}</div>")
    parts.append("<h2>Reasons</h2><ul>" + "".join(f"<li>{_e(r)}</li>" for r in a["reasons"]) + "</ul>")
    parts.append("<h2>Comparisons</h2><table><tr><th>Evaluator</th><th>Side</th><th>n</th><th>Source</th><th>Target</th><th>Difference (95% CI)</th><th>p</th><th>Adjusted p</th><th>Test</th><th>Severity</th></tr>")
    for c in a["comparisons"]:
        def num(v: Any, fmt: str = "{:.3f}") -> str:
            return fmt.format(v) if isinstance(v, (int, float)) else "—"
        ci = c.get("ci") or [None, None]
        parts.append(
            f"<tr><td>{_e(c['evaluator'])}.{_e(c['name'])}</td><td>{_e(c.get('side') or '')}</td><td>{c['n']}</td>"
            f"<td>{num(c.get('source_mean'))}</td><td>{num(c.get('target_mean'))}</td>"
            f"<td>{num(c.get('difference'), '{:+.3f}')} ({num(ci[0], '{:+.3f}')}, {num(ci[1], '{:+.3f}')})</td>"
            f"<td>{num(c.get('p_value'), '{:.4f}')}</td><td>{num(c.get('p_adjusted'), '{:.4f}')}</td>"
            f"<td>{_e(c.get('test') or c.get('status'))}</td><td>{_e(c.get('severity') or '')}</td></tr>"
        )
    parts.append("</table>")
    if a.get("labels"):
        parts.append("<h2>Labels</h2><ul>")
        for label, info in sorted(a["labels"].items()):
            by_tool = ", ".join(f"{n} on {t}" for t, n in info["by_tool"].items())
            parts.append(f"<li><code>{_e(label)}</code> × {info['count']}: {_e(by_tool)}</li>")
        parts.append("</ul>")
    parts.append("<h2>Examples</h2><table><tr><th>Example</th><th>Tags</th><th>Tools called (source → target)</th><th>Labels</th><th>Input</th></tr>")
    for row in report["examples"]:
        labels = sorted({lab for r in row["regressions"] for lab in r["labels"]})
        parts.append(
            f"<tr><td><code>{_e(row['example_id'])}</code></td><td>{_e(', '.join(row['tags']))}</td>"
            f"<td>{'<br>'.join(_e(x) for x in row['tools_called'])}</td><td>{_e(', '.join(labels))}</td>"
            f"<td>{_e(row.get('input'))}</td></tr>"
        )
    parts.append("</table></body></html>")
    return "".join(parts)


def write_report(run_dir: str | os.PathLike[str], report: dict[str, Any]) -> Path:
    out = Path(run_dir)
    atomic_write_json(out / "report.json", report)
    path = out / "report.html"
    atomic_write_bytes(path, render_html(report).encode("utf-8"))
    return path


def render_compact_html(analysis: Analysis, report_path: str | os.PathLike[str]) -> str:
    """The compact verdict a notebook shows for ``Comparison._repr_html_``."""
    items = "".join(f"<li>{_e(r)}</li>" for r in analysis.reasons[:8])
    return (
        f"<div><strong>EvalShift verdict: {_e(analysis.verdict.upper())}</strong>"
        f"<ul>{items}</ul><small>{_e(report_path)}</small></div>"
    )
