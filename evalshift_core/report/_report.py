"""The report a reviewer opens to decide a migration: ``report.json`` and one ``report.html``
written into the run folder, from the data :mod:`._data` builds and :mod:`._html` draws.
"""

from __future__ import annotations

import os
import webbrowser
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from .._exceptions import InputError
from .._io import LineSpool, atomic_write_bytes, atomic_write_json, atomic_writer, iter_models
from .._progress import count_lines, progress_bar, tracked
from ._data import (
    RowTally,
    as_analysis,
    distributions,
    example_row,
    regressions_by_example,
    report_header,
    row_order,
    severities,
)
from ._html import embed_json, html_around_rows, html_row, html_text_cap, render_html


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


Entry = tuple[bool, int, int, int, int, int, int]
"""Where a spooled row goes and where it is: its report order, its index, and the offset and
length of its report.json form and of its report.html form in their spools."""

# Each row is spooled with the separator that goes before it in its file, so a stretch of rows
# that follow one another in the spool is copied in one read; the very first row drops it.
_JSON_SEPARATOR, _HTML_SEPARATOR = b",\n", b","


class RowSpool:
    """Report rows serialized as they come (their report.json and report.html forms) to files
    of their own, with where each one went. One process writes a spool; another may read it."""

    def __init__(self, text_cap: int) -> None:
        self.json = LineSpool()
        self.html = LineSpool()
        self.text_cap = text_cap
        self.tally = RowTally()
        self.entries: list[Entry] = []

    def close(self) -> None:
        self.json.close()
        self.html.close()

    def add(self, index: int, row: Mapping[str, Any]) -> None:
        """One example's row (:func:`~._data.example_row`); ``index`` is its place in the suite."""
        self.tally.add(row)
        # report.json indents a row two levels deep: orjson's own lines, four spaces further in
        # (a newline inside a string is escaped, so every raw newline is indentation).
        as_json = _JSON_SEPARATOR + b"    " + orjson.dumps(row, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
        as_html = _HTML_SEPARATOR + embed_json(html_row(row, self.text_cap)).encode("utf-8")
        self.entries.append((*row_order(row), index, self.json.size, len(as_json), self.html.size, len(as_html)))
        self.json.write(as_json)
        self.html.write(as_html)

    def state(self) -> tuple[list[Entry], RowTally, int, int]:
        """What another process needs to read this spool or write on in it."""
        return self.entries, self.tally, self.json.state(), self.html.state()

    def adopt(self, state: tuple[list[Entry], RowTally, int, int]) -> None:
        """Take over the :meth:`state` of this spool as written by another process."""
        self.entries, self.tally, json_size, html_size = state
        self.json.adopt(json_size)
        self.html.adopt(html_size)


class ReportWriter:
    """report.json and report.html written row by row, in any order, with memory bounded by
    one row: rows go to spools (one per process writing them), then both files are written in
    report order (:func:`~._data.row_order`, then the index each row was given: its example's
    place in the suite).

    The bytes are those of :func:`write_report` on the same rows (a test pins them).
    """

    def __init__(self, run_dir: str | os.PathLike[str], n_rows: int, *, spools: int = 1) -> None:
        self.run_dir = Path(run_dir)
        self.n_rows = n_rows
        self.spools = [RowSpool(html_text_cap(n_rows)) for _ in range(spools)]

    def __enter__(self) -> ReportWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        for spool in self.spools:
            spool.close()

    @property
    def tally(self) -> RowTally:
        """What the rows spooled so far say as a whole."""
        tally = RowTally()
        for spool in self.spools:
            tally.merge(spool.tally)
        return tally

    def _copy_rows(self, fh: Any, html: bool) -> int:
        """Write every row's form, in report order, into ``fh`` (stretches that lie one after
        another in a spool in one read each); returns how many rows."""
        order = sorted((*entry[:3], k, *entry[3:]) for k, spool in enumerate(self.spools) for entry in spool.entries)
        files = [spool.html if html else spool.json for spool in self.spools]
        skip = len(_HTML_SEPARATOR if html else _JSON_SEPARATOR)  # the first row has nothing before it
        run: list[int] | None = None  # [spool, start, end] of the stretch being gathered
        for *_, k, json_at, json_len, html_at, html_len in order:
            at, length = (html_at, html_len) if html else (json_at, json_len)
            if run is not None and run[0] == k and run[2] == at:
                run[2] += length
                continue
            if run is not None:
                files[run[0]].copy_to(fh, run[1], run[2])
            run = [k, at + skip, at + length]
            skip = 0
        if run is not None:
            files[run[0]].copy_to(fh, run[1], run[2])
        return len(order)

    def write(self, header: Mapping[str, Any]) -> Path:
        """Write both files around ``header`` (:func:`~._data.report_header`); returns the HTML path."""
        head = orjson.dumps(header, option=orjson.OPT_INDENT_2)
        path = self.run_dir / "report.html"
        with progress_bar(2, "write report", unit="file") as bar:
            with atomic_writer(self.run_dir / "report.json") as fh:
                # "examples" is the header's last key, written empty: the rows go inside its "[]"
                fh.write(head[:-3] + b"\n")
                if self._copy_rows(fh, html=False):
                    fh.write(b"\n  ]\n}\n")
                else:
                    fh.seek(-1, os.SEEK_CUR)
                    fh.write(b"]\n}\n")
            bar.update()
            before, after = html_around_rows(header, self.n_rows, self.tally.regressed)
            with atomic_writer(path) as fh:
                fh.write(before.encode("utf-8"))
                self._copy_rows(fh, html=True)
                fh.write(after.encode("utf-8"))
            bar.update()
        return path


def render_run_report(base: str | os.PathLike[str], run_id: str) -> Path:
    """Rebuild ``report.json`` and ``report.html`` of a finished run from its files on disk,
    one example at a time."""
    from .._parallel import half, in_halves
    from ..analysis import load_analysis
    from ..analysis._tool_use import ToolUseTally
    from ..evaluators import ScoreRecord
    from ..store._rows import SCORES_FILE, open_lines, run_rows, written_intact

    manifest, run_dir, rows = run_rows(base, run_id)
    analysis_path = run_dir / "analysis.json"
    if not analysis_path.exists():
        raise InputError(f"run {run_id!r} has no analysis yet; run `evalshift evaluate {run_id}` first",
                         file=str(analysis_path))
    analysis = as_analysis(load_analysis(analysis_path))  # a malformed or newer file is an InputError naming its field
    scores_path = run_dir / "scores.jsonl"
    charted = None
    if scores_path.exists():
        # rows evaluate wrote are read as they are; any others validated, each bad one named
        scores: Iterable[Any] = (
            (orjson.loads(line) for line in open_lines(scores_path)) if written_intact(run_dir, [SCORES_FILE])
            else (row for _, row in iter_models(scores_path, ScoreRecord, what="score row")))
        charted = distributions(tracked(scores, count_lines(scores_path), "load scores"))
    severity_of, regressed = severities(analysis), regressions_by_example(analysis)
    with ReportWriter(run_dir, len(rows), spools=2) as writer:

        def rows_of(part: range) -> tuple[Any, ToolUseTally]:
            spool, use = writer.spools[half(part)], ToolUseTally()
            items = rows.part(part)
            if half(part) == 0:
                items = tracked(items, len(part), "build report", unit="example")
            for index, ((ex, src, tgt, _), _) in zip(part, items):
                spool.add(index, example_row(ex, src, tgt, regressed.get(ex.id, ()), severity_of))
                use.add(ex, src, tgt)
            return spool.state(), use

        use = ToolUseTally()
        for k, (spooled, counted) in enumerate(in_halves(rows_of, len(rows))):
            writer.spools[k].adopt(spooled)
            use.merge(counted)
        header = report_header(analysis, manifest, use.result().as_dict(), rows.dropped_params(), charted,
                               writer.tally)
        return writer.write(header)


def open_report(path: str | os.PathLike[str]) -> bool:
    """Open a report in the default browser; False when no browser could be started."""
    return webbrowser.open(Path(path).resolve().as_uri())
