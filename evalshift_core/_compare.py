"""``compare()``: run + evaluate + analyze + report in one call."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._exceptions import EvalShiftError, InputError
from ._io import atomic_write_json, atomic_write_jsonl
from ._models import Call, Example
from ._progress import tracked
from .analysis import Analysis, Regression, analyze
from .analysis._headline import headline
from .analysis._tool_use import tool_use
from .config._config import Config
from .config._tools_file import apply_prompt_tools
from .evaluators import build_evaluators, evaluate_run
from .replay._run import check_sides, run
from .report._report import build_report, write_report
from .store._suites import DEFAULT_BASE, load_suite, suite_path

_SCORE_COLUMNS = ["example_id", "tags", "evaluator", "name", "side", "source_score", "target_score", "difference",
                  "skipped", "labels"]
_REGRESSION_COLUMNS = ["example_id", "tags", "evaluator", "name", "side", "source_score", "target_score",
                       "difference", "labels", "tools", "severity"]


def _pandas() -> Any:
    """pandas, imported on first use: an optional extra (``pip install 'evalshift[pandas]'``)."""
    try:
        import pandas
    except ImportError as exc:
        raise EvalShiftError("this needs pandas: pip install 'evalshift[pandas]'") from exc
    return pandas


@dataclass(repr=False)
class Comparison:
    """The outcome of one source/target comparison."""

    run_id: str
    run_dir: Path
    analysis: Analysis
    report_path: Path
    manifest: dict[str, Any] = field(default_factory=dict)
    """The run's ``run.json``: models, suite, ``cached_calls`` of ``model_calls``."""
    tool_calls: dict[str, Any] | None = None
    """Per tool, the examples in which each side called it (report.json's ``charts.tool_calls``)."""

    @property
    def verdict(self) -> str:
        return self.analysis.verdict

    @property
    def regressions(self) -> list[Regression]:
        return self.analysis.regressions

    def __repr__(self) -> str:
        regressed = len({r.example_id for r in self.analysis.regressions})
        models = ""
        if self.manifest.get("source_model"):
            models = f"{self.manifest['source_model']} -> {self.manifest.get('target_model')}, "
        said = self.analysis.headline or self.verdict.upper()
        return f"<Comparison {said} ({models}{regressed} examples regressed; report {self.report_path})>"

    def _repr_html_(self) -> str:
        from .report._html import render_compact_html

        return render_compact_html(self.analysis, self.report_path, tool_calls=self.tool_calls)

    def _tags(self) -> dict[str, list[str]]:
        from ._io import iter_jsonl

        path = Path(self.run_dir) / "examples.jsonl"
        if not path.exists():
            return {}
        return {str(row.get("id")): list(row.get("tags") or []) for _, row in iter_jsonl(path, what="example")}

    def scores_frame(self) -> Any:
        """Every score record of the run (``scores.jsonl``) as a pandas DataFrame, one row per
        example and comparison, with the example's tags and ``difference = target - source``."""
        from ._io import iter_jsonl

        pd = _pandas()
        tags = self._tags()
        path = Path(self.run_dir) / "scores.jsonl"
        rows = [
            {**{k: r.get(k) for k in _SCORE_COLUMNS}, "tags": tags.get(str(r.get("example_id")), []),
             "difference": r["target_score"] - r["source_score"], "labels": list(r.get("labels") or [])}
            for _, r in iter_jsonl(path, what="score row")
        ] if path.exists() else []
        return pd.DataFrame(rows, columns=_SCORE_COLUMNS)

    def regressions_frame(self) -> Any:
        """The regressions (target below source, or a regression label) as a pandas DataFrame,
        most severe first, with the example's tags."""
        pd = _pandas()
        tags = self._tags()
        rows = [
            {"example_id": r.example_id, "tags": tags.get(r.example_id, []), "evaluator": r.evaluator,
             "name": r.name, "side": r.side, "source_score": r.source_score, "target_score": r.target_score,
             "difference": r.target_score - r.source_score, "labels": list(r.labels), "tools": list(r.tools),
             "severity": r.severity}
            for r in self.analysis.regressions
        ]
        return pd.DataFrame(rows, columns=_REGRESSION_COLUMNS)


def evaluate_and_report(
    run_dir: Path, manifest: dict[str, Any], examples: list[Example], calls: list[Call], config: Config
) -> tuple[Analysis, Path]:
    """Score a finished run, analyse it and write scores, analysis and report files."""
    analysis, report_path, _ = _evaluate_and_report(run_dir, manifest, examples, calls, config)
    return analysis, report_path


def _evaluate_and_report(
    run_dir: Path, manifest: dict[str, Any], examples: list[Example], calls: list[Call], config: Config
) -> tuple[Analysis, Path, dict[str, Any]]:
    """:func:`evaluate_and_report`, also handing back the per-tool counts (counted once per run)."""
    from .ingest._traces import load_traces

    # Timelines attached with `evalshift traces import` feed agent_trace; judges need the providers.
    scores = evaluate_run(examples, calls, config.evaluators, timelines=load_traces(run_dir), providers=config.providers)
    atomic_write_jsonl(run_dir / "scores.jsonl", (s.model_dump(mode="json") for s in
                                                  tracked(scores, len(scores), "write scores")))
    floors = {(ev.type_name, ev.name): ev.severity_floor for ev in build_evaluators(config.evaluators)}
    # Examples carry the clusters (source trace, tags) the standard errors are corrected for.
    tool_calls = tool_use(examples, calls).as_dict()
    analysis = analyze(scores, policy=config.migration_policy, examples=examples, severity_floors=floors,
                       tool_use=tool_calls)
    analysis.headline = headline(analysis, tool_calls)  # the tools each side called, in words
    atomic_write_json(run_dir / "analysis.json", analysis.model_dump(mode="json"))
    report = build_report(analysis, examples, calls, manifest, scores, tool_calls=tool_calls)
    return analysis, write_report(run_dir, report), tool_calls


def compare(
    suite: str | os.PathLike[str] | list[Example],
    *,
    source: str,
    target: str,
    config: Config | Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    providers: Mapping[str, Mapping[str, Any]] | None = None,
    run_options: Mapping[str, Any] | None = None,
    on_bad_line: Callable[[InputError], None] | None = None,
    suite_name: str | None = None,
) -> Comparison:
    """Replay ``suite`` through both models, score, analyse and write the report.

    ``suite`` is a suite name under ``<base>/suites``, a path to a suite file, or examples.
    ``out_dir`` is the base folder (default ``.evalshift``); ``run_options`` go to :func:`run`.
    Examples without a toolset get their prompt's ``tools_path`` tools, read relative to the
    config file's folder (``load_config``) or else the current directory. A run in which every
    call of one side failed raises :class:`ReplayError` with the provider's message.
    ``on_bad_line`` makes a bad suite line one report (an InputError naming file, line and
    field) instead of an error, and so is an example the replay could not start (an input the
    template needs, a toolset sidecar): the rest are compared.
    ``suite_name`` names the suite in run.json when ``suite`` is a list of examples.
    """
    cfg = config if isinstance(config, Config) else Config.model_validate(dict(config or {}))
    base = Path(out_dir or DEFAULT_BASE)
    if isinstance(suite, list):
        examples = suite
    else:
        path = Path(suite)
        if not path.suffix:
            suite_name = str(suite)
            path = suite_path(base, suite_name)
        else:
            suite_name = path.stem
        if on_bad_line is None:
            examples = load_suite(path)
        else:
            from .replay._preflight import replayable_examples

            examples = replayable_examples(path, base=base, config=cfg, on_bad_line=on_bad_line)
    # A prompt's tools_path gives its examples that carry no toolset their tools (seed 000).
    examples = apply_prompt_tools(examples, cfg, config_dir=cfg.tools_dir or ".")
    merged = {k: dict(v) for k, v in cfg.providers.items()}
    for k, v in (providers or {}).items():
        merged.setdefault(k, {}).update(v)
    template = cfg.template_for(examples[0].prompt_id if examples else None)
    options = {"source_repeats": cfg.replay.source_repeats, "batch_policy": cfg.replay.batch_policy(),
               **({"batch": True} if cfg.replay.batch else {}), **dict(run_options or {})}
    result = run(examples, source=source, target=target, base=base, suite_name=suite_name,
                 providers=merged, template=template, **options)
    check_sides(result.run_id, result.calls)  # a side that never answered is an error, not a verdict
    analysis, report_path, tool_calls = _evaluate_and_report(result.run_dir, result.manifest, examples, result.calls,
                                                             cfg)
    return Comparison(run_id=result.run_id, run_dir=result.run_dir, analysis=analysis, report_path=report_path,
                      manifest=result.manifest, tool_calls=tool_calls)
