"""``compare()``: run + evaluate + analyze + report in one call, and the one preparation of a replay.

:func:`prepare_replay` decides everything a replay needs (the suite's examples with their prompt's
tools, the models, the template, the providers, the options from evalshift.yaml and the caller)
for ``compare()`` and for the CLI's ``run`` and ``compare`` alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, EvalShiftError, InputError
from ._io import check_schema_version, iter_jsonl
from ._models import SCHEMA_VERSION, Call, Example
from .analysis import Analysis, Regression
from .config._config import Config
from .config._tools_file import apply_prompt_tools
from .replay._routing import route
from .replay._run import ROLES, DryRun, RunOptions, RunResult, check_sides, dry_run, run
from .store._rows import MemoryRows, RunCalls, SavedRows, run_rows
from .store._runs import Manifest, existing_run_dir, iter_run_examples, load_manifest
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
    manifest: Manifest | None = None
    """The run's ``run.json``: models, suite, ``cached_calls`` of ``model_calls``."""
    tool_calls: dict[str, Any] | None = None
    """Per tool, the examples in which each side called it (report.json's ``charts.tool_calls``)."""
    calls: Sequence[Call] = field(default_factory=list)
    """The run's Call rows (``raw.jsonl``), source and target per example (of a saved run, read
    from its raw.jsonl when first used)."""

    def __post_init__(self) -> None:
        if self.manifest is not None and not isinstance(self.manifest, Manifest):
            # run.json's keys as a mapping (what this field held before it was typed)
            self.manifest = Manifest.model_validate({"run_id": self.run_id, **dict(self.manifest)})

    @property
    def verdict(self) -> str:
        return self.analysis.verdict

    @property
    def regressions(self) -> list[Regression]:
        return self.analysis.regressions

    def __repr__(self) -> str:
        regressed = len({r.example_id for r in self.analysis.regressions})
        models = ""
        if self.manifest is not None and self.manifest.source_model:
            models = f"{self.manifest.source_model} -> {self.manifest.target_model}, "
        said = self.analysis.headline or self.verdict.upper()
        return f"<Comparison {said} ({models}{regressed} examples regressed; report {self.report_path})>"

    def _repr_html_(self) -> str:
        from .report._html import render_compact_html

        return render_compact_html(self.analysis, self.report_path, tool_calls=self.tool_calls)

    def _tags(self) -> dict[str, list[str]]:
        path = Path(self.run_dir) / "examples.jsonl"
        if not path.exists():
            return {}
        return {str(row.get("id")): list(row.get("tags") or []) for row in _versioned_rows(path, "example")}

    def scores_frame(self) -> Any:
        """Every score record of the run (``scores.jsonl``) as a pandas DataFrame, one row per
        example and comparison, with the example's tags and ``difference = target - source``."""
        pd = _pandas()
        tags = self._tags()
        path = Path(self.run_dir) / "scores.jsonl"
        rows = [
            {**{k: r.get(k) for k in _SCORE_COLUMNS}, "tags": tags.get(str(r.get("example_id")), []),
             "difference": r["target_score"] - r["source_score"], "labels": list(r.get("labels") or [])}
            for r in _versioned_rows(path, "score row")
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


def _versioned_rows(path: Path, what: str) -> Iterator[dict[str, Any]]:
    """The rows of a run's JSON lines file; a row carrying a newer ``schema_version`` is refused."""
    for lineno, row in iter_jsonl(path, what=what):
        if type(row) is dict and "schema_version" in row:
            check_schema_version(row["schema_version"], SCHEMA_VERSION, file=str(path), line=lineno)
        yield row


def evaluate_and_report(
    run_dir: Path, manifest: Manifest, examples: list[Example], calls: list[Call], config: Config
) -> tuple[Analysis, Path]:
    """Score a finished run, analyse it and write scores, analysis and report files."""
    analysis, report_path, _ = _evaluate_and_report(run_dir, manifest, MemoryRows(examples, calls), config)
    return analysis, report_path


def _evaluate_and_report(
    run_dir: Path, manifest: Manifest, rows: MemoryRows | SavedRows, config: Config
) -> tuple[Analysis, Path, dict[str, Any]]:
    """:func:`evaluate_and_report` over a run's rows, also handing back the per-tool counts."""
    from ._evaluation import evaluate_rows

    return evaluate_rows(run_dir, manifest, rows, config)


def _check_sides(run_id: str, rows: MemoryRows | SavedRows) -> None:
    """A side on which every call failed is a ReplayError naming the provider's error (source first)."""
    for role in ROLES:
        failed = rows.failed_rows(role)
        if failed:
            check_sides(run_id, failed)


def evaluate_saved_run(
    run_id: str,
    *,
    config: Config,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    on_loaded: Callable[[int], None] | None = None,
) -> Comparison:
    """Score, analyse and report a run already replayed (the steps of :func:`compare` after the
    replay); a side on which every call failed is a ReplayError. ``on_loaded`` hears how many
    examples the run has once its files are open, before the scoring starts."""
    manifest, run_dir, rows = run_rows(base, run_id)
    _check_sides(run_id, rows)
    if on_loaded is not None:
        on_loaded(len(rows))
    analysis, report_path, tool_calls = _evaluate_and_report(run_dir, manifest, rows, config)
    calls = rows.calls if isinstance(rows, MemoryRows) else RunCalls(run_dir)
    return Comparison(run_id=run_id, run_dir=run_dir, analysis=analysis, report_path=report_path,
                      manifest=manifest, tool_calls=tool_calls, calls=calls)


@dataclass(frozen=True)
class PreparedReplay:
    """A replay with everything decided: what :func:`prepare_replay` hands to :func:`run`."""

    examples: list[Example]
    """The examples to replay, each with the tools it offers."""
    source: str
    """The source model, as named (``openai:gpt-4o``, ``claude-sonnet-4-6``)."""
    target: str
    """The target model, as named."""
    base: Path
    """The base folder (suites, toolsets, runs, cache)."""
    options: RunOptions
    """How to replay: template, providers, suite name, run id and the rest."""
    config: Config
    """The evalshift.yaml it was prepared from (its evaluators score the run)."""

    @property
    def suite_name(self) -> str | None:
        return self.options.suite_name

    def run(self) -> RunResult:
        """Replay the examples through both models (:func:`evalshift_core.run`)."""
        return run(self.examples, source=self.source, target=self.target, base=self.base, options=self.options)

    def dry_run(self) -> DryRun:
        """What :meth:`run` would send, planned and priced with nothing sent or written
        (:func:`evalshift_core.dry_run`)."""
        return dry_run(self.examples, source=self.source, target=self.target, base=self.base, options=self.options)

    def compare(self) -> Comparison:
        """Replay, then score, analyse and report; a side that never answered is a ReplayError."""
        result = self.run()
        check_sides(result.run_id, result.calls)  # a side that never answered is an error, not a verdict
        analysis, report_path, tool_calls = _evaluate_and_report(result.run_dir, result.manifest,
                                                                 MemoryRows(self.examples, result.calls), self.config)
        return Comparison(run_id=result.run_id, run_dir=result.run_dir, analysis=analysis, report_path=report_path,
                          manifest=result.manifest, tool_calls=tool_calls, calls=result.calls)


def prepare_replay(
    suite: str | os.PathLike[str] | list[Example] | None = None,
    *,
    source: str | None = None,
    target: str | None = None,
    config: Config | Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    providers: Mapping[str, Mapping[str, Any]] | None = None,
    run_options: Mapping[str, Any] | None = None,
    on_bad_line: Callable[[InputError], None] | None = None,
    suite_name: str | None = None,
    suite_file: str | os.PathLike[str] | None = None,
    resume: str | None = None,
) -> PreparedReplay:
    """Decide everything a replay needs, failing before anything is written.

    The examples come from ``suite`` (a suite name under ``<base>/suites``, a path to a suite
    file, or examples), else from ``suite_file`` (a file, whatever its name) or ``suite_name``
    (a name, whatever its dots), or, with ``resume`` (a run id), from that run's folder, with its
    suite name, models and ``source_repeats``. ``suite_name`` names a list of examples in run.json.
    Examples without a toolset get their prompt's ``tools_path`` tools (seed 000). ``source``
    and ``target`` default to evalshift.yaml's ``defaults``; ``providers`` is merged over its
    ``providers:``; ``run_options`` (:class:`RunOptions` fields) go over its ``replay:`` block.
    ``on_bad_line`` makes a bad suite line one report instead of an error (see :func:`compare`).
    """
    cfg = config if isinstance(config, Config) else Config.model_validate(dict(config or {}))
    base = Path(out_dir or DEFAULT_BASE)
    options: dict[str, Any] = {"source_repeats": cfg.replay.source_repeats, "batch_policy": cfg.replay.batch_policy()}
    if cfg.replay.batch:
        options["batch"] = True
    if resume is not None:
        if (run_options or {}).get("run_id") not in (None, resume):
            raise InputError("--resume and --run-id name different runs; pass one")
        run_dir = existing_run_dir(base, resume)
        manifest = load_manifest(run_dir)
        suite_name = manifest.suite or resume
        source, target = _models(cfg, source or manifest.source_model, target or manifest.target_model)
        examples = [e for _, e in iter_run_examples(run_dir)]  # tools already resolved
        options.update(source_repeats=manifest.source_repeats or 1, run_id=resume)
    else:
        source, target = _models(cfg, source, target)
        suite_name, examples = _suite_examples(suite, suite_file, suite_name, base, cfg, on_bad_line)
        # A prompt's tools_path gives its examples that carry no toolset their tools (seed 000).
        examples = apply_prompt_tools(examples, cfg, config_dir=cfg.tools_dir or ".")
    merged = {k: dict(v) for k, v in cfg.providers.items()}
    for k, v in (providers or {}).items():
        merged.setdefault(k, {}).update(v)
    options.update(providers=merged, template=cfg.template_for(examples[0].prompt_id if examples else None),
                   suite_name=suite_name)
    options.update(run_options or {})
    return PreparedReplay(examples=examples, source=source, target=target, base=base,
                          options=RunOptions(**options), config=cfg)


def _models(cfg: Config, source: str | None, target: str | None) -> tuple[str, str]:
    """The two models, named or evalshift.yaml's defaults; an unroutable name fails here."""
    source = source or cfg.defaults.source_model
    target = target or cfg.defaults.target_model
    if not source:
        raise ConfigError("no source model: pass --from MODEL or set defaults.source_model in evalshift.yaml")
    if not target:
        raise ConfigError("no target model: pass --to MODEL or set defaults.target_model in evalshift.yaml")
    route(source), route(target)  # an unroutable name fails before anything is written
    return source, target


def _suite_examples(
    suite: str | os.PathLike[str] | list[Example] | None,
    suite_file: str | os.PathLike[str] | None,
    suite_name: str | None,
    base: Path,
    cfg: Config,
    on_bad_line: Callable[[InputError], None] | None,
) -> tuple[str | None, list[Example]]:
    """The suite's name and its examples: a file, a name under ``<base>/suites``, or a list."""
    if suite_file is not None:
        path = Path(suite_file)
        if not path.exists():
            raise InputError("suite file not found", file=str(path))
        name = path.stem
    elif isinstance(suite, list):
        return suite_name, suite
    elif suite is not None and Path(suite).suffix:
        path = Path(suite)
        name = path.stem
        if not path.exists():
            raise InputError("suite file not found", file=str(path))
    else:
        name = str(suite) if suite is not None else suite_name or ""
        if not name:
            raise InputError("name a suite with --suite-name NAME (or --suite FILE.jsonl)")
        path = suite_path(base, name)
        if not path.exists():
            known = sorted(p.stem for p in (base / "suites").glob("*.jsonl"))
            hint = f" (suites here: {', '.join(known)})" if known else " (run `evalshift capture sync` first)"
            raise InputError(f"no suite {name!r} at {path}{hint}")
    if on_bad_line is None:
        return name, load_suite(path)
    from .replay._preflight import replayable_examples

    return name, replayable_examples(path, base=base, config=cfg, on_bad_line=on_bad_line)


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
    return prepare_replay(suite, source=source, target=target, config=config, out_dir=out_dir, providers=providers,
                          run_options=run_options, on_bad_line=on_bad_line, suite_name=suite_name).compare()
