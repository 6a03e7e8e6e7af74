"""The report a reviewer opens to decide a migration: ``report.json`` and one ``report.html``
written into the run folder, from the data :mod:`._data` builds and :mod:`._html` draws.
"""

from __future__ import annotations

import os
import webbrowser
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import InputError
from .._io import atomic_write_bytes, atomic_write_json, iter_models
from .._progress import count_lines, progress_bar, tracked
from ._data import build_report, distributions
from ._html import render_html


def write_report(run_dir: str | os.PathLike[str], report: Mapping[str, Any]) -> Path:
    """Write ``report.json`` and ``report.html`` into ``run_dir``; returns the HTML path.

    A report built without scores gets its score distributions from ``run_dir/scores.jsonl``.
    """
    from ..evaluators import ScoreRecord

    out = Path(run_dir)
    charts = report.get("charts") or {}
    if charts.get("distributions") is None and (out / "scores.jsonl").exists():
        # compare() writes scores.jsonl just before the report, so the distributions are on disk.
        scores = (row for _, row in iter_models(out / "scores.jsonl", ScoreRecord, what="score row"))
        report = {**report, "charts": {**charts, "distributions": distributions(scores)}}
    path = out / "report.html"
    with progress_bar(2, "write report", unit="file") as bar:
        atomic_write_json(out / "report.json", report)
        bar.update()
        atomic_write_bytes(path, render_html(report).encode("utf-8"))
        bar.update()
    return path


def render_run_report(base: str | os.PathLike[str], run_id: str) -> Path:
    """Rebuild ``report.json`` and ``report.html`` of a finished run from its files on disk."""
    from ..analysis import load_analysis
    from ..evaluators import ScoreRecord
    from ..store._runs import load_run, run_dir_for

    manifest, examples, calls = load_run(base, run_id)
    run_dir = run_dir_for(base, run_id)
    analysis_path = run_dir / "analysis.json"
    if not analysis_path.exists():
        raise InputError(f"run {run_id!r} has no analysis yet; run `evalshift evaluate {run_id}` first",
                         file=str(analysis_path))
    analysis = load_analysis(analysis_path)  # a malformed or newer file is an InputError naming its field
    scores_path = run_dir / "scores.jsonl"
    scores = None
    if scores_path.exists():
        rows = iter_models(scores_path, ScoreRecord, what="score row")
        scores = [row for _, row in tracked(rows, count_lines(scores_path), "load scores")]
    return write_report(run_dir, build_report(analysis, examples, calls, manifest, scores))


def open_report(path: str | os.PathLike[str]) -> bool:
    """Open a report in the default browser; False when no browser could be started."""
    return webbrowser.open(Path(path).resolve().as_uri())
