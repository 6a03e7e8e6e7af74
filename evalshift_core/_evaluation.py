"""Score, analyse and report a replayed run, one example at a time, on both cores.

The work splits by example: the first pass scores each example, counts its tool use and, for an
example no record can make a regression (no score dropped, no label), spools its report row
then; after the analysis, a second pass reads the other examples again and spools their rows
with their regressions. Each pass runs its second half in a forked process when the run is large
enough for that to pay and forking is safe (:func:`~._parallel.in_halves`); both halves spool
their own rows and the parent gathers the rest, in example order, so the outputs are the same
bytes either way.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from ._io import LineSpool, atomic_write_json, atomic_writer
from ._parallel import half, in_halves
from ._progress import progress_bar, tracked
from .analysis import Analysis, analyze
from .analysis._headline import headline
from .analysis._tool_use import ToolUseTally
from .config._config import Config
from .evaluators import ScoreRecord
from .evaluators._registry import resolve_evaluators, row_scorer, scoring_progress, sidecars
from .evaluators._speed import cyclic_gc_paused, pack_records, unpack_records
from .report._data import (
    ScoreBins,
    example_row,
    regressions_by_example,
    report_header,
    severities,
)
from .report._report import ReportWriter, RowSpool
from .store._rows import SCORES_FILE, MemoryRows, SavedRows, record_written
from .store._runs import Manifest


class ExampleFacts(NamedTuple):
    """What the analysis reads of an example: its clusters, whether it was promoted."""

    id: str
    cluster: str | None
    tags: list[str]
    promotion_source: str | None


@dataclass
class _Scored:
    """What the first pass learnt of a range of examples."""

    records: list[ScoreRecord] = field(default_factory=list)
    facts: list[ExampleFacts] = field(default_factory=list)
    use: ToolUseTally = field(default_factory=ToolUseTally)
    bins: ScoreBins = field(default_factory=ScoreBins)
    """The score charts' counts of this range's records."""
    lines: Any = None
    """The state of the spool this range's scores.jsonl lines went to."""
    later: list[tuple[int, Any]] = field(default_factory=list)
    """(index, handle) of the examples whose rows wait for the analysis."""
    spooled: Any = None
    """The state of the spool this range's rows went to."""


def evaluate_rows(
    run_dir: Path, manifest: Manifest, rows: MemoryRows | SavedRows, config: Config
) -> tuple[Analysis, Path, dict[str, Any]]:
    """Score a run's rows with the configured evaluators, analyse them and write scores.jsonl,
    analysis.json, report.json and report.html; returns the analysis, the report's path and the
    per-tool counts."""
    from .ingest._traces import load_traces

    evaluators = resolve_evaluators(config.evaluators, providers=config.providers)
    # Timelines attached with `evalshift traces import` feed agent_trace; judges need the providers.
    # A run folder is <base>/runs/<id>: its examples' toolset_ref sidecars live in <base>/toolsets.
    score = row_scorer(evaluators, load_traces(run_dir), sidecars(run_dir.parent.parent))
    n = len(rows)
    # Nothing here makes a reference cycle: the collector would only re-traverse the records kept.
    with ReportWriter(run_dir, n, spools=2) as writer, LineSpool() as first, LineSpool() as second, \
            cyclic_gc_paused():
        score_lines = (first, second)  # scores.jsonl, each half's lines in a spool of its own

        def first_pass(part: range) -> _Scored:
            spool, lines, out = writer.spools[half(part)], score_lines[half(part)], _Scored()
            with scoring_progress(len(part), None if half(part) == 0 else False) as bar:
                for index, ((example, src, tgt, extra), handle) in zip(part, rows.part(part)):
                    bar.update(1)
                    scored = score(example, src, tgt, extra)
                    out.records += scored
                    for record in scored:
                        lines.write(orjson.dumps(record.model_dump(mode="json")) + b"\n")
                        out.bins.add(record)
                    out.facts.append(ExampleFacts(example.id, example.cluster, example.tags, example.promotion_source))
                    out.use.add(example, src, tgt)
                    if any(r.target_score < r.source_score or r.labels for r in scored):
                        out.later.append((index, handle))
                    else:
                        spool.add(index, example_row(example, src, tgt))
            out.spooled = spool.state()
            out.lines = lines.state()
            if half(part):  # the forked half: its records travel as tuples
                out.records = pack_records(out.records)
            return out

        # The parent imports the statistics (~0.6 s) while the forked half sends its records over
        # (~0.2 s); 47% of the examples to the parent even the two out (measured on 100k).
        scored = in_halves(first_pass, n, meanwhile=lambda: importlib.import_module("scipy.stats"), share=0.47)
        records = [r for k, part in enumerate(scored) for r in (unpack_records(part.records) if k else part.records)]
        facts = [f for part in scored for f in part.facts]
        later = [item for part in scored for item in part.later]
        use, bins = ToolUseTally(), ScoreBins()
        for k, part in enumerate(scored):
            use.merge(part.use)
            bins.merge(part.bins)
            writer.spools[k].adopt(part.spooled)
            score_lines[k].adopt(part.lines)

        with progress_bar(len(score_lines), "write scores", unit="part") as bar, \
                atomic_writer(run_dir / SCORES_FILE) as fh:
            for spooled_lines in score_lines:
                spooled_lines.copy_to(fh)
                bar.update()
        record_written(run_dir, [SCORES_FILE])  # `evalshift report` then reads its rows as they are
        floors = {(ev.type_name, ev.name): ev.severity_floor for ev in evaluators}
        tool_calls = use.result().as_dict()
        # Examples carry the clusters (source trace, tags) the standard errors are corrected for.
        analysis = analyze(records, policy=config.migration_policy, examples=facts, severity_floors=floors,
                           tool_use=tool_calls)
        analysis.headline = headline(analysis, tool_calls)  # the tools each side called, in words
        atomic_write_json(run_dir / "analysis.json", analysis.model_dump(mode="json"))

        severity_of, regressed = severities(analysis), regressions_by_example(analysis)

        def second_pass(part: range) -> Any:
            spool: RowSpool = writer.spools[half(part)]
            waiting = [later[i] for i in part]
            for index, handle in tracked(waiting, len(waiting), "build report", unit="example") if half(part) == 0 else waiting:
                example, src, tgt, _ = rows.again(handle)
                spool.add(index, example_row(example, src, tgt, regressed.get(example.id, ()), severity_of))
            return spool.state()

        for k, spooled in enumerate(in_halves(second_pass, len(later))):
            writer.spools[k].adopt(spooled)
        header = report_header(analysis, manifest, tool_calls, rows.dropped_params(), bins.result(),
                               writer.tally)
        return analysis, writer.write(header), tool_calls
