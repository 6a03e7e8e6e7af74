"""examples/compare.ipynb runs top to bottom offline: the verdict, the per-tool chart, a link to the
report, the regressions and scores as tables, and a one-line text repr."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[3] / "examples" / "compare.ipynb"


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return nb


def _output(nb: nbformat.NotebookNode, source_ends: str) -> dict:
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.rstrip().endswith(source_ends))
    results = [o for o in cell.outputs if o.get("output_type") == "execute_result"]
    return results[0] if results else next(o for o in cell.outputs if o.get("name") == "stdout")


def test_the_notebook_uses_only_the_public_api():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(re.search(r"evalshift_core\._|from \._", c.source) for c in nb.cells if c.cell_type == "code")


def test_the_rich_display_shows_the_verdict_the_per_tool_chart_and_a_link_to_the_report(executed):
    html = _output(executed, "\ncomparison")["data"]["text/html"]
    assert "EvalShift verdict: FAIL" in html
    assert "FAIL — the candidate stopped calling notify_security_team on 6 of 24 examples (all tagged security)" in html
    chart = html[html.index("<svg"):html.index("</svg>")]
    assert "notify_security_team: 25% → 0%" in chart  # 6 of the 24 tickets are security tickets
    link = re.search(r"<a href='([^']+)'[^>]*>Open the full report \(report.html\)</a>", html)
    assert link and link.group(1).startswith("file://") and link.group(1).endswith("/report.html")
    assert Path(link.group(1).removeprefix("file://")).is_file()


def test_the_text_repr_is_one_short_line(executed):
    text = _output(executed, "print(repr(comparison))")["text"].strip()
    assert "\n" not in text and len(text) < 400
    assert text.startswith("<Comparison FAIL — the candidate stopped calling notify_security_team on 6 of 24 examples")
    assert "(openai:sim-baseline -> openai:sim-candidate, " in text


def test_regressions_and_scores_come_as_pandas_tables(executed):
    regressions = _output(executed, "comparison.regressions_frame()")["data"]
    assert "text/html" in regressions and "notify_security_team" in regressions["text/plain"]
    means = _output(executed, '[["source_score", "target_score"]].mean()')["data"]["text/plain"]
    assert "security" in means and "routing" in means
