"""examples/compare.ipynb runs top to bottom offline and shows the compact verdict."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "compare.ipynb"


def test_compare_notebook_runs_offline_and_displays_the_compact_report():
    """Issue 8: `examples/compare.ipynb` runs top to bottom offline on the simulator."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    shown = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "text/html" in o.get("data", {})]
    assert len(shown) == 1
    html = shown[0]["data"]["text/html"]
    assert "EvalShift verdict: FAIL" in html
    assert "TOOL_SELECTION_DRIFT" in html and "report.html" in html
    regressions = next(c for c in nb.cells if "comparison.regressions" in c.source).outputs[0]["data"]["text/plain"]
    assert "notify_security_team" in regressions
