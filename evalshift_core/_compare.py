"""``compare()``: run + evaluate + analyze + report in one call."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._analysis import Analysis, Regression, analyze
from ._config import Config
from ._exceptions import InputError
from ._io import atomic_write_json, atomic_write_jsonl
from ._models import Call, Example
from ._report import build_report, write_report
from ._run import run
from ._suite import DEFAULT_BASE, load_suite, suite_path
from ._tools_file import apply_prompt_tools
from .evaluators import build_evaluators, evaluate_run


@dataclass
class Comparison:
    """The outcome of one source/target comparison."""

    run_id: str
    run_dir: Path
    analysis: Analysis
    report_path: Path

    @property
    def verdict(self) -> str:
        return self.analysis.verdict

    @property
    def regressions(self) -> list[Regression]:
        return self.analysis.regressions

    def _repr_html_(self) -> str:
        from ._report import render_compact_html

        return render_compact_html(self.analysis, self.report_path)


def evaluate_and_report(
    run_dir: Path, manifest: dict[str, Any], examples: list[Example], calls: list[Call], config: Config
) -> tuple[Analysis, Path]:
    """Score a finished run, analyse it and write scores, analysis and report files."""
    from ._traces import load_traces

    # Timelines attached with `evalshift traces import` feed agent_trace; judges need the providers.
    scores = evaluate_run(examples, calls, config.evaluators, timelines=load_traces(run_dir), providers=config.providers)
    atomic_write_jsonl(run_dir / "scores.jsonl", (s.model_dump(mode="json") for s in scores))
    floors = {(ev.type_name, ev.name): ev.severity_floor for ev in build_evaluators(config.evaluators)}
    # Examples carry the clusters (source trace, tags) the standard errors are corrected for.
    analysis = analyze(scores, policy=config.migration_policy, examples=examples, severity_floors=floors)
    atomic_write_json(run_dir / "analysis.json", analysis.model_dump(mode="json"))
    report_path = write_report(run_dir, build_report(analysis, examples, calls, manifest, scores))
    return analysis, report_path


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
    config file's folder (``load_config``) or else the current directory.
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
            from ._preflight import replayable_examples

            examples = replayable_examples(path, base=base, config=cfg, on_bad_line=on_bad_line)
    # A prompt's tools_path gives its examples that carry no toolset their tools (seed 000).
    examples = apply_prompt_tools(examples, cfg, config_dir=cfg.tools_dir or ".")
    merged = {k: dict(v) for k, v in cfg.providers.items()}
    for k, v in (providers or {}).items():
        merged.setdefault(k, {}).update(v)
    template = cfg.template_for(examples[0].prompt_id if examples else None)
    result = run(examples, source=source, target=target, base=base, suite_name=suite_name,
                 providers=merged, template=template, **dict(run_options or {}))
    analysis, report_path = evaluate_and_report(result.run_dir, result.manifest, examples, result.calls, cfg)
    return Comparison(run_id=result.run_id, run_dir=result.run_dir, analysis=analysis, report_path=report_path)
