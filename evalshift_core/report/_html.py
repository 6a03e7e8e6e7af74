"""The report as one self-contained ``report.html`` (no network, opens from file://, strict CSP),
drawn from the ``report.json`` data, and the compact verdict a notebook shows.

The page answers "what broke, where, how badly" on its first screen and shows the evidence one
click down: the per-example rows are drawn by the inline script from the embedded data.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from ..analysis._records import Analysis
from ._data import as_analysis, cap, comparison_name

# Caps that keep a 10k-example report.html within ~15 MB whatever the models wrote: report.html
# shares a budget of model text across its rows (regressed rows keep more).
HTML_TEXT_BUDGET = 8_000_000
_HTML_TEXT_CAP = 2000
_HTML_TEXT_FLOOR = 160
_HTML_REGRESSED_TEXT_CAP = 4000
_HTML_TEXT_FIELDS = ("input", "source_text", "target_text")


@cache
def _asset(name: str) -> str:
    # Next to this module, as package data; importlib.resources trips over editable installs.
    return (Path(__file__).resolve().parent / "templates" / name).read_text(encoding="utf-8")


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def embed_json(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` survives raw.

    So no payload can close the element or open a comment; ``JSON.parse`` reads it back unchanged.
    """
    raw = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _num(value: Any, fmt: str = "{:.3f}") -> str:
    return fmt.format(value) if isinstance(value, (int, float)) and math.isfinite(value) else "—"


def _p(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "—"
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _severity_chip(severity: str | None) -> str:
    if not severity:
        return "<span class='muted'>—</span>"
    return f"<span class='sev sev-{_e(severity)}'>{_e(severity)}</span>"


def _comparisons_table(a: Mapping[str, Any]) -> str:
    rows = []
    for c in a.get("comparisons") or []:
        ci = c.get("ci") or [None, None]
        unknown = c.get("status") == "unknown"
        if unknown:
            diff = "unknown — nothing measured"
        elif c.get("status") == "uncalibrated":
            share = c.get("drift_share")
            diff = (f"<span class='note'>uncalibrated — drifted on "
                    f"{_num(100 * share if isinstance(share, (int, float)) else None, '{:.0f}')}%"
                    " of examples; no A/A baseline, not tested</span>")
        else:
            diff = (f"{_num(c.get('difference'), '{:+.3f}')} <span class='muted'>"
                    f"[{_num(ci[0], '{:+.3f}')}, {_num(ci[1], '{:+.3f}')}]</span>")
        calibration = (f"<br><span class='muted'>source: its own second run ({_e(c.get('baseline'))})</span>"
                       if c.get("baseline") else "")
        worse = isinstance(c.get("difference"), (int, float)) and c["difference"] < 0
        rows.append(
            f"<tr class='{'unknown' if unknown else ('worse' if worse else '')}'>"
            f"<th scope='row'><code>{_e(c.get('evaluator'))}.{_e(c.get('name'))}</code>"
            f"{' <span class=muted>(' + _e(c.get('side')) + ')</span>' if c.get('side') else ''}{calibration}</th>"
            f"<td class='num'>{_e(c.get('n'))}</td><td class='num'>{_num(c.get('source_mean'))}</td>"
            f"<td class='num'>{_num(c.get('target_mean'))}</td><td class='num'>{diff}</td>"
            f"<td class='num'>{_p(c.get('p_value'))}</td><td class='num'>{_p(c.get('p_adjusted'))}</td>"
            f"<td>{_e(c.get('test') or '—')}</td><td>{_severity_chip(c.get('severity'))}</td></tr>"
        )
    if not rows:
        return "<p class='muted'>No comparisons.</p>"
    return (
        "<div class='scroll'><table class='comparisons'><caption class='sr-only'>Source against target per evaluator</caption>"
        "<thead><tr><th scope='col'>Evaluator</th><th scope='col'>n</th><th scope='col'>Source mean</th>"
        "<th scope='col'>Target mean</th><th scope='col'>Difference [95% CI]</th><th scope='col'>p</th>"
        "<th scope='col'>Adjusted p (BH)</th><th scope='col'>Test</th><th scope='col'>Severity</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _counts(mapping: Any) -> str:
    if not isinstance(mapping, Mapping) or not mapping:
        return "<span class='muted'>—</span>"
    items = sorted(mapping.items(), key=lambda kv: (-(kv[1] if isinstance(kv[1], int) else 0), str(kv[0])))
    return " ".join(f"<span class='chip'><code>{_e(k)}</code> × {_e(v)}</span>" for k, v in items)


def _labels_table(a: Mapping[str, Any]) -> str:
    labels = a.get("labels") or {}
    if not labels:
        return "<p class='muted'>No regression labels.</p>"
    rows = []
    for label, info in sorted(labels.items(), key=lambda kv: -int((kv[1] or {}).get("count", 0) or 0)):
        info = info if isinstance(info, Mapping) else {"count": info}
        aa = info.get("baseline_count")
        rows.append(
            f"<tr><th scope='row'><code>{_e(label)}</code></th><td class='num' data-label='Count'>{_e(info.get('count'))}</td>"
            f"<td class='num' data-label='Source&#39;s own runs'>{'—' if aa is None else _e(aa)}</td>"
            f"<td data-label='By tool'>{_counts(info.get('by_tool'))}</td>"
            f"<td data-label='By field'>{_counts(info.get('by_field'))}</td></tr>"
        )
    return (
        "<div class='scroll'><table class='labels'><thead><tr><th scope='col'>Label</th><th scope='col'>Count</th>"
        "<th scope='col' title='Examples where the source model&apos;s own second run carried the label'>"
        "Source's own runs</th><th scope='col'>By tool</th><th scope='col'>By field</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


# The charts are inline SVG drawn here rather than by a charting library: nothing to download or
# vendor, they render from file:// with scripts off, follow the colour scheme through CSS (the fill
# attributes are for a notebook, which has no stylesheet), and together cost a few kilobytes.
_FILLS = {"source": "#4b6cb7", "target": "#d9822b", "label": "#b3261e", "held": "#8d93a3", "lost": "#b3261e",
          "gained": "#1e6b35", "missed": "#d9dbe1", "track": "#eef0f3"}
_MAX_BARS = 12
_LABEL_CAP = 58  # characters of a bar's label that fit the chart's width


def _pct_text(part: int, whole: int) -> str:
    return f"{round(100 * part / whole)}%" if whole else "—"


def _bar(kind: str, x: float, y: float, w: float, h: float, title: str) -> str:
    return (f"<rect class='bar-{kind}' fill='{_FILLS[kind]}' x='{x:.1f}' y='{y:.1f}' width='{max(w, 0):.1f}' "
            f"height='{h:.1f}'><title>{_e(title)}</title></rect>")


def tool_chart_svg(tool_calls: Mapping[str, Any], *, standalone: bool = False) -> str:
    """Per tool, the share of examples in which each side called it: ``notify_security_team: 22% → 0%``.

    The most changed tools first; a figure with id ``tool-chart``, or "" when no tool was called.
    ``standalone`` (a notebook, which has no report stylesheet) colours the legend inline.
    """
    n = int(tool_calls.get("examples") or 0)
    tools = list(tool_calls.get("tools") or [])[:_MAX_BARS]
    if not n or not tools:
        return ""
    width, row_h, bar_h, top = 420, 44, 8, 4
    plot_w = width - 8
    height = top + row_h * len(tools)
    parts = [f"<svg class='chart tools' viewBox='0 0 {width} {height}' width='{width}' role='img' "
             "aria-label='Share of examples in which each side called each tool, source then target'>"]
    for i, t in enumerate(tools):
        y = top + i * row_h
        s_share, t_share = t["source"] / n, t["target"] / n
        changed = " changed" if t["source"] != t["target"] else ""
        shares = f"{_pct_text(t['source'], n)} → {_pct_text(t['target'], n)}"
        name = t["tool"] if len(t["tool"]) + len(shares) + 2 <= _LABEL_CAP else t["tool"][:_LABEL_CAP - len(shares) - 3] + "…"
        parts.append(
            f"<text class='tool-name{changed}' fill='currentColor' font-family='monospace' font-size='12' "
            f"x='0' y='{y + 13}'><title>{_e(t['tool'])}</title>{_e(name)}: {shares}</text>"
            f"<rect class='bar-track' fill='{_FILLS['track']}' x='0' y='{y + 18}' width='{plot_w}' height='{2 * bar_h + 2}'/>"
            + _bar("source", 0, y + 18, plot_w * s_share, bar_h, f"source called {t['tool']} on {t['source']} of {n} examples")
            + _bar("target", 0, y + 20 + bar_h, plot_w * t_share, bar_h,
                   f"target called {t['tool']} on {t['target']} of {n} examples")
        )
    parts.append("</svg>")
    more = len(tool_calls.get("tools") or []) - len(tools)
    if standalone:
        def key(side: str) -> str:
            return (f"<span style='display:inline-block;width:.75em;height:.75em;margin:0 .25em 0 .5em;"
                    f"background:{_FILLS[side]}'></span>{side}")
    else:
        def key(side: str) -> str:
            return f"<span class='key key-{side}'></span>{side}"
    return (
        "<figure id='tool-chart'><figcaption>Tools called: share of the "
        f"{n} examples, source → target</figcaption>{''.join(parts)}"
        f"<p class='legend'>{key('source')} {key('target')}"
        f"{f' · {more} more tools in report.json' if more > 0 else ''}</p></figure>"
    )


def _rows_svg(rows: list[tuple[str, list[tuple[str, int, str]]]], total: int, label: str, cls: str = "") -> str:
    """Labelled rows of bars: ``(text, [(kind, value, title), ...])``, each bar against ``total``."""
    width, bar_h, top = 420, 10, 4
    plot_w = width - 50
    row_h = 22 + (bar_h + 2) * max((len(bars) for _, bars in rows), default=1)
    height = top + row_h * len(rows)
    parts = [f"<svg class='chart {cls}' viewBox='0 0 {width} {height}' width='{width}' role='img' aria-label='{_e(label)}'>"]
    for i, (text, bars) in enumerate(rows):
        y = top + i * row_h
        shown = text if len(text) <= _LABEL_CAP else text[:_LABEL_CAP - 1] + "…"  # whole text in the title
        parts.append(f"<text class='tool-name' x='0' y='{y + 13}'><title>{_e(text)}</title>{_e(shown)}</text>")
        for j, (kind, value, title) in enumerate(bars):
            w = plot_w * value / total if total else 0
            by = y + 18 + j * (bar_h + 2)
            parts.append(_bar(kind, 0, by, w, bar_h, title)
                         + f"<text class='tick' x='{w + 4:.1f}' y='{by + bar_h - 1}'>{value}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _label_field_chart(items: list[Mapping[str, Any]]) -> str:
    """Regressions per label and argument field (or tool): which fields drift."""
    items = items[:_MAX_BARS]
    if not items:
        return ""
    top = max(int(i["count"]) for i in items)
    rows = [(f"{i['label']} on {i['where']}" if i.get("where") else str(i["label"]),
             [("label", int(i["count"]), f"{i['count']} examples")]) for i in items]
    return (f"<figure id='label-chart'><figcaption>Regressions by label and field (examples)</figcaption>"
            f"{_rows_svg(rows, top, 'Regressed examples per label and argument field or tool', 'wide')}</figure>")


def _rounds_chart(rounds: list[Mapping[str, Any]], examples: int) -> str:
    """Per round of a multi-round replay: where divergence starts, and how much diverges there."""
    if not rounds:
        return ""
    top = max([int(r["diverged"]) for r in rounds] + [1])
    rows = [(f"Round {r['round']}: {r['first']} start to diverge here, {r['diverged']} diverge in it",
             [("target", int(r["first"]), f"{r['first']} examples diverge first in round {r['round']}"),
              ("label", int(r["diverged"]), f"{r['diverged']} examples diverge in round {r['round']}")])
            for r in rounds]
    return (f"<figure id='round-chart'><figcaption>Where divergence starts, per round ({examples} examples)"
            f"</figcaption>{_rows_svg(rows, top, 'Examples whose tool calls diverge first in each round', 'wide')}"
            "<p class='legend'><span class='key key-target'></span>diverge first here "
            "<span class='key key-label'></span>diverge in this round</p></figure>")


def _outcomes_chart(dists: list[Mapping[str, Any]]) -> str:
    """Comparisons scored 0 or 1: held, lost, gained and missed by both, per example pair."""
    binary = [d for d in dists if d.get("binary") and d.get("pairs")]
    if not binary:
        return ""
    top = max(sum(d["pairs"].values()) for d in binary)
    kinds = (("held", "held"), ("lost", "lost"), ("gained", "gained"), ("missed", "missed by both"))
    rows = []
    for d in binary:
        pairs = d["pairs"]
        summary = " · ".join(f"{pairs.get(k, 0)} {word}" for k, word in kinds if pairs.get(k))
        rows.append((f"{comparison_name(d)}: {summary}",
                     [(k, int(pairs.get(k, 0)), f"{pairs.get(k, 0)} {word}") for k, word in kinds if pairs.get(k)]))
    return ("<figure id='outcome-chart'><figcaption>Paired outcomes of the comparisons scored 0 or 1: held (both 1), "
            f"lost (source 1, target 0), gained, missed by both</figcaption>{_rows_svg(rows, top, 'Paired outcomes', 'wide')}</figure>")


def _histogram_svg(dist: Mapping[str, Any]) -> str:
    bins = int(dist["bins"])
    src, tgt = dist["source"], dist["target"]
    top = max(src + tgt + [1])
    width, height, pad_l, pad_b, pad_t = 340, 160, 62, 34, 10
    plot_w, plot_h = width - pad_l - 6, height - pad_b - pad_t
    slot = plot_w / bins
    bar = (slot - 4) / 2
    name = comparison_name(dist)
    parts = [
        f"<svg class='chart' viewBox='0 0 {width} {height}' role='img' aria-label='Score distribution of {_e(name)}: source against target'>",
        f"<line class='axis' x1='{pad_l}' y1='{pad_t + plot_h}' x2='{width - 6}' y2='{pad_t + plot_h}'/>",
        f"<text class='tick' x='{pad_l - 4}' y='{pad_t + 4}' text-anchor='end'>{top}</text>",
        f"<text class='tick' x='{pad_l - 4}' y='{pad_t + plot_h}' text-anchor='end'>0</text>",
    ]
    for i in range(bins):
        x = pad_l + i * slot + 2
        lo, hi = i / bins, (i + 1) / bins
        for j, (side, counts) in enumerate((("source", src), ("target", tgt))):
            h = plot_h * counts[i] / top
            parts.append(
                f"<rect class='bar-{side}' x='{x + j * bar:.1f}' y='{pad_t + plot_h - h:.1f}' width='{bar:.1f}' height='{h:.1f}'>"
                f"<title>{side} {lo:.1f}–{hi:.1f}: {counts[i]}</title></rect>"
            )
    for v in (0, 0.5, 1):
        parts.append(f"<text class='tick' x='{pad_l + v * plot_w:.1f}' y='{height - 12}' text-anchor='middle'>{v:g}</text>")
    parts.append(f"<text class='tick' x='{pad_l + plot_w / 2:.1f}' y='{height - 1}' text-anchor='middle'>score</text>")
    parts.append(f"<text class='tick' x='{pad_l - 4}' y='{pad_t + plot_h / 2:.1f}' text-anchor='end'>examples</text>")
    parts.append("</svg>")
    return (
        f"<figure><figcaption><code>{_e(name)}</code></figcaption>{''.join(parts)}"
        f"<p class='legend'><span class='key key-source'></span>source <span class='key key-target'></span>target</p></figure>"
    )


def _charts(report: Mapping[str, Any]) -> str:
    """The charts below the tables; the per-tool chart sits in the verdict panel instead."""
    charts = report.get("charts") or {}
    figures = [
        _label_field_chart(charts.get("labels") or []),
        _rounds_chart(charts.get("rounds") or [], int((charts.get("tool_calls") or {}).get("examples") or 0)),
    ]
    dists = charts.get("distributions")
    if dists:
        figures.append(_outcomes_chart(dists))
        # Two bars at 0 and 1 say less than the outcome chart: histograms only for graded scores.
        figures.extend(_histogram_svg(d) for d in dists if not d.get("binary"))
    elif dists is None:
        figures.append("<p class='muted'>Score charts need the run's scores.jsonl.</p>")
    figures = [f for f in figures if f]
    if not figures:
        return ""
    return f"<section aria-labelledby='h-charts'><h2 id='h-charts'>Charts</h2><div class='charts'>{''.join(figures)}</div></section>"


def _cache_note(run: Mapping[str, Any]) -> str:
    """`` · 64 of 64 responses from the cache`` for the header; a replayed sample is not a fresh one."""
    from ..replay._run import cache_line

    line = cache_line(run)
    if not line:
        return ""
    cls = " class='cached'" if run.get("cached_calls") else ""
    return f" · <span id='cache-note'{cls}>{_e(line)}</span>"


def _batch_note(run: Mapping[str, Any]) -> str:
    """`` · replayed through batch APIs`` for a run replayed at batch prices."""
    from ..replay._batch import report_note

    note = report_note(run)
    return f" · <span id='batch-note'>{_e(note)}</span>" if note else ""


def _banner_html(banners: list[Mapping[str, str]]) -> str:
    return "".join(
        f"<div class='banner' role='note'><strong>{_e(b.get('title'))}</strong>"
        f"{' — ' + _e(b.get('detail')) if b.get('detail') else ''}</div>"
        for b in banners
    )


def _list_section(title: str, ident: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"<section aria-labelledby='{ident}'><h2 id='{ident}'>{title}</h2><ul>{''.join(f'<li>{_e(i)}</li>' for i in items)}</ul></section>"


def html_text_cap(n_rows: int) -> int:
    """The characters of model text each of ``n_rows`` rows without a regression may embed."""
    return int(min(_HTML_TEXT_CAP, max(_HTML_TEXT_FLOOR, HTML_TEXT_BUDGET / (len(_HTML_TEXT_FIELDS) * max(1, n_rows)))))


def html_row(row: Mapping[str, Any], text_cap: int) -> dict[str, Any]:
    """A row as report.html embeds it: empty keys dropped, model text within ``text_cap``
    (:func:`html_text_cap`; a row with a regression gets more)."""
    slim = {k: v for k, v in row.items() if v is not None and v != [] and v is not False}
    limit = _HTML_REGRESSED_TEXT_CAP if row.get("regressions") else text_cap
    for key in _HTML_TEXT_FIELDS:
        if isinstance(slim.get(key), str):
            slim[key] = cap(slim[key], limit)
    return slim


def _html_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as report.html embeds them: empty keys dropped, model text within the budget."""
    text_cap = html_text_cap(len(rows))
    return [html_row(row, text_cap) for row in rows]


def render_html(report: Mapping[str, Any]) -> str:
    """The self-contained HTML: first screen drawn here, per-example rows by the inline script."""
    rows = report.get("examples") or []
    before, after = html_around_rows(report, len(rows), sum(1 for r in rows if r.get("regressions")))
    return before + ",".join(embed_json(row) for row in _html_rows(rows)) + after


def html_around_rows(report: Mapping[str, Any], n_rows: int, n_regressed: int) -> tuple[str, str]:
    """report.html but its rows: the text before the first embedded row and after the last.

    The rows go between, each as :func:`embed_json` of its :func:`html_row`, comma-separated, so
    a report can be written row by row.
    """
    a = report.get("analysis") or {}
    run = report.get("run") or {}
    verdict = str(report.get("verdict") or a.get("verdict") or "inconclusive")
    css, js = _asset("report.css"), _asset("report.js")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; "
        "base-uri 'none'; form-action 'none'"
    )
    categories = [f"{k}: {v}" for k, v in (a.get("failure_categories") or {}).items()]
    source, target = run.get("source_model"), run.get("target_model")
    data = {
        "examples": [],
        "filters": report.get("filters") or {},
        "models": {"source": source, "target": target},
    }
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<meta name='color-scheme' content='light dark'>",
        f"<title>EvalShift report {_e(run.get('run_id'))}</title><style>{css}</style></head><body>",
        "<a class='skip' href='#h-examples'>Skip to examples</a>",
        f"<header><p class='brand'>EvalShift</p><p class='muted'><code>{_e(source)}</code> → <code>{_e(target)}</code>"
        f" · suite {_e(run.get('suite') or '—')} · run <code>{_e(run.get('run_id'))}</code>"
        f" · {_e(run.get('created') or '')}{_cache_note(run)}{_batch_note(run)}</p></header><main>",
        f"<section class='verdict verdict-{_e(verdict)}' aria-labelledby='h-verdict'>"
        f"<h1 id='h-verdict'><span class='badge'>{_e(verdict.upper())}</span> Migration verdict</h1>"
        f"<p id='headline' class='headline'>{_e(report.get('headline') or verdict.upper())}</p>"
        "<div class='verdict-body'><div>"
        f"<ul class='reasons'>{''.join(f'<li>{_e(r)}</li>' for r in report.get('reasons') or [])}</ul>"
        f"<p class='muted'>{n_rows} examples · {n_regressed} with a regression · "
        f"{sum(1 for c in a.get('comparisons') or [] if c.get('status') != 'unknown')} comparisons measured</p></div>"
        f"{tool_chart_svg((report.get('charts') or {}).get('tool_calls') or {})}</div></section>",
        _banner_html(report.get("banners") or []),
        f"<section aria-labelledby='h-cmp'><h2 id='h-cmp'>Comparisons</h2>{_comparisons_table(a)}</section>",
        f"<section aria-labelledby='h-labels'><h2 id='h-labels'>Regression labels</h2>{_labels_table(a)}</section>",
        _list_section("Failure categories", "h-cat", categories),
        _list_section("Recommendations", "h-rec", list(a.get("recommendations") or [])),
        _charts(report),
        "<section aria-labelledby='h-examples'><h2 id='h-examples' tabindex='-1'>Examples</h2>",
        "<form id='filters' class='filters' role='search' aria-label='Filter examples'>",
        "<label>Label <select id='f-label'><option value=''>any</option></select></label>",
        "<label>Tag <select id='f-tag'><option value=''>any</option></select></label>",
        "<label>Severity at least <select id='f-severity'><option value=''>any</option></select></label>",
        "<label>Round <select id='f-round'><option value=''>any</option></select></label>",
        "<label>Search <input id='f-q' type='search' placeholder='example id or input'></label>",
        "<label class='check'><input id='f-only' type='checkbox'> only regressions</label>",
        "<button type='reset' id='f-reset'>Reset</button></form>",
        "<p id='count' class='muted' aria-live='polite'></p>",
        "<noscript><p class='banner'>The per-example rows are drawn by this file's inline script; "
        "with scripts off, read them in report.json next to this file.</p></noscript>",
        "<div class='scroll'><table class='examples'><thead><tr><th scope='col'>Example</th><th scope='col'>Tags</th>"
        "<th scope='col'>Tools called (source → target)</th><th scope='col'>Labels</th><th scope='col'>Severity</th>"
        "</tr></thead><tbody id='rows'></tbody></table></div>",
        "<nav class='pager' aria-label='Pages'><button type='button' id='prev'>← Previous</button>"
        "<span id='page'></span><button type='button' id='next'>Next →</button></nav></section></main>",
        "<footer class='muted'>One self-contained file: no network access; charts are inline SVG drawn by the "
        "report itself. The full data is in report.json.</footer>",
        "<script type='application/json' id='evalshift-data'>",
    ]
    opening = '{"examples":['
    embedded = embed_json(data)
    assert embedded.startswith(opening)
    return "".join(parts) + opening, embedded[len(opening):] + f"</script><script>{js}</script></body></html>"


def report_href(report_path: str | os.PathLike[str]) -> str:
    """A link to the report a notebook can follow: relative to the working folder when the report
    is inside it (Jupyter serves and opens such paths), else a ``file://`` URL."""
    path = Path(report_path).resolve()
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_uri()


def render_compact_html(analysis: Analysis | Mapping[str, Any], report_path: str | os.PathLike[str], *,
                        tool_calls: Mapping[str, Any] | None = None,
                        banners: list[Any] | None = None) -> str:
    """The compact verdict a notebook shows for ``Comparison._repr_html_`` (escaped, no script):
    the verdict, the per-tool chart, the reasons and a link to report.html.

    ``tool_calls`` and ``banners`` come from report.json beside the report when not given.
    """
    a = as_analysis(analysis)
    verdict = a.verdict
    colour = {"fail": "#c62828", "pass": "#2e7d32"}.get(verdict, "#b26a00")
    reasons = "".join(f"<li>{_e(r)}</li>" for r in a.reasons[:6])
    more = len(a.reasons) - 6
    if more > 0:
        reasons += f"<li>… {more} more in the report</li>"
    cell = "style='padding:2px 8px;text-align:left'"
    rows = "".join(
        f"<tr><td {cell}><code>{_e(c.label)}</code></td><td {cell}>{_num(c.source_mean)}</td>"
        f"<td {cell}>{_num(c.target_mean)}</td><td {cell}>{_num(c.difference, '{:+.3f}')}</td>"
        f"<td {cell}>{_p(c.p_adjusted)}</td><td {cell}>{_e(c.severity or c.status)}</td></tr>"
        for c in a.comparisons
    )
    table = (
        f"<table style='border-collapse:collapse;margin:4px 0'><thead><tr><th {cell}>Evaluator</th><th {cell}>Source</th>"
        f"<th {cell}>Target</th><th {cell}>Difference</th><th {cell}>Adjusted p</th><th {cell}>Severity</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>" if rows else ""
    )
    label_line = ", ".join(f"<code>{_e(k)}</code> × {_e(v.count)}" for k, v in sorted(a.labels.items()))
    if tool_calls is None or banners is None:
        # report.json beside the report has every banner (dropped_params needs the Call rows).
        sibling: dict[str, Any] = {}
        path = Path(report_path).with_name("report.json")
        if path.is_file():
            try:
                sibling = orjson.loads(path.read_bytes())
            except (orjson.JSONDecodeError, OSError):
                sibling = {}
        if banners is None:
            banners = (sibling.get("banners") if isinstance(sibling, dict) else None) or list(a.banners)
        if tool_calls is None and isinstance(sibling, dict):
            tool_calls = (sibling.get("charts") or {}).get("tool_calls")
    banner_html = "".join(
        f"<div style='border-left:4px solid {colour};padding:2px 8px;margin:4px 0'>"
        f"<strong>{_e(b.get('title') if isinstance(b, Mapping) else b)}</strong></div>"
        for b in banners or []
    )
    chart = tool_chart_svg(tool_calls or {}, standalone=True)
    link = (f"<a href='{_e(report_href(report_path))}' target='_blank' rel='noopener'>Open the full report "
            f"(report.html)</a> <small style='opacity:.75'><code>{_e(report_path)}</code></small>")
    return (
        "<div class='evalshift-compact' style='font-family:system-ui,sans-serif;line-height:1.4'>"
        f"<div><strong style='color:{colour};font-size:1.15em'>EvalShift verdict: {_e(verdict.upper())}</strong></div>"
        f"<p style='font-size:1.1em;margin:4px 0'>{_e(a.headline or '')}</p>"
        f"{banner_html}{chart}<ul style='margin:4px 0'>{reasons}</ul>{table}"
        f"{'<div>Labels: ' + label_line + '</div>' if label_line else ''}"
        f"<div style='margin-top:4px'>{link}</div></div>"
    )
