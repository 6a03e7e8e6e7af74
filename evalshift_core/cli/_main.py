"""The ``evalshift`` command line: a thin layer over the library functions.

Exit codes: 0 done (a failing verdict is still 0 unless ``--fail-on-regression``, which exits 2;
an inconclusive one is 0 unless ``--fail-on-inconclusive``, which exits 3), 1 user error with a
one-line message, never a traceback (a run in which every call of a side failed is one). Progress
goes to stderr, results to stdout.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._exceptions import EvalShiftError, InputError
from ..store._suites import DEFAULT_BASE

if TYPE_CHECKING:
    from .._models import Call
    from ..analysis import Analysis
    from ..store._runs import Manifest

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_REGRESSION = 2
EXIT_INCONCLUSIVE = 3

EXIT_CODES_HELP = (
    "\b\nExit codes:\n"
    "  0  done (a FAIL or INCONCLUSIVE verdict is still 0 without the flags below; --dry-run: planned)\n"
    "  1  a user error, one line on stderr; also a run in which every call of a side failed, and a\n"
    "     run --max-cost refuses (estimate above it, or unknown without --allow-unpriced)\n"
    "  2  the verdict is FAIL under --fail-on-regression\n"
    "  3  the verdict is INCONCLUSIVE under --fail-on-inconclusive"
)

MAX_LISTED_REGRESSIONS = 25  # the terminal gets a summary; the report and --json have every row

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# -- shared plumbing ------------------------------------------------------------------------------


def progress(message: str) -> None:
    """Progress for people: always on stderr, so stdout stays parseable."""
    click.echo(message, err=True)


def emit_json(value: Any) -> None:
    import orjson

    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode())


def _config(path: str | None) -> Any:
    from ..config._config import load_config

    return load_config(path)


def _run_options(concurrency: int | None, max_cost: float | None, no_cache: bool,
                 source_repeats: int | None = None, batch: bool = False, run_id: str | None = None,
                 allow_unpriced: bool = False) -> dict[str, Any]:
    """The replay options the user set, as :class:`evalshift_core.replay._run.RunOptions` fields."""
    options: dict[str, Any] = {}
    if batch:
        options["batch"] = True
    if source_repeats is not None:
        options["source_repeats"] = source_repeats
    if concurrency is not None:
        options["concurrency"] = concurrency
    if max_cost is not None:
        options["max_cost"] = max_cost
    if allow_unpriced:
        options["allow_unpriced"] = True
    if no_cache:
        options["use_cache"] = False
    if run_id is not None:
        options["run_id"] = run_id
    return options


def _warn_bad_line(error: EvalShiftError) -> None:
    """A suite line the replay leaves out, said on stderr (file:line: field: why)."""
    progress(f"warning: {_one_line(str(error))} (line skipped)")


def _open(path: Path) -> None:
    from ..report._report import open_report

    if not open_report(path):
        progress(f"could not start a browser; open {Path(path).resolve().as_uri()}")


# The analysis fields a verdict payload (--json, JUnit) carries, in the order it prints them.
_VERDICT_FIELDS = ("verdict", "headline", "reasons", "banners", "comparisons", "labels", "regressions",
                   "failure_categories", "recommendations")


def keep_until_exit() -> None:
    """Everything alive once a comparison is done (its analysis, its regressions) lives until
    this process exits: move it out of the collector's sight, so printing the verdict does not
    set off full collections over a 100k-example run's objects (two, ~0.25 s each)."""
    import gc

    gc.freeze()


def verdict_payload(run_id: str, run_dir: Path, analysis: Analysis, report_path: Path | None,
                    manifest: Manifest | None = None, *, detail: bool = True) -> dict[str, Any]:
    """What the CLI says of a verdict. Without ``detail`` (the printed verdict, no --json and no
    JUnit) a regression is only what the listing shows: its example, labels and tools (dumping
    every regression's metadata cost a 100k-example run ~0.6 s for nothing)."""
    if detail:
        fields = analysis.model_dump(mode="json", include=set(_VERDICT_FIELDS))
    else:
        fields = analysis.model_dump(mode="json", include=set(_VERDICT_FIELDS) - {"regressions"})
        fields["regressions"] = [{"example_id": r.example_id, "labels": list(r.labels), "tools": list(r.tools)}
                                 for r in analysis.regressions]
    manifest = manifest if manifest is not None else _manifest(run_dir)
    return {
        "run_id": run_id,
        "run_dir": str(run_dir),
        **{name: fields[name] for name in _VERDICT_FIELDS},
        "cached_calls": manifest.cached_calls if manifest is not None else None,
        "model_calls": manifest.model_calls if manifest is not None else None,
        "analysis_path": str(Path(run_dir) / "analysis.json"),
        "report_path": str(report_path) if report_path else None,
    }


def _manifest(run_dir: Path) -> Manifest | None:
    from ..store._runs import load_manifest

    try:
        return load_manifest(run_dir)
    except EvalShiftError:
        return None


def _cache_line(manifest: Mapping[str, Any]) -> str | None:
    from ..replay._run import cache_line

    line = cache_line(manifest)
    if line and manifest.get("cached_calls"):
        line += " (--no-cache for fresh samples)"
    return line


def warn_failed_calls(calls: list[Call]) -> None:
    """Say on stderr when model calls failed: an unreachable server reads as "Nothing measured"."""
    failed = [c for c in calls if c.error]
    if failed:
        progress(f"warning: {len(failed)} of {len(calls)} model calls failed; first: "
                 f"{failed[0].model} on {failed[0].example_id}: {_one_line(str(failed[0].error))[:300]}")


def _regressed_examples(regressions: list[Mapping[str, Any]]) -> dict[str, tuple[list[str], list[str]]]:
    """One entry per example: an example regressed on several evaluators or sides is listed once."""
    merged: dict[str, tuple[list[str], list[str]]] = {}
    for r in regressions:
        labels, tools = merged.setdefault(str(r.get("example_id")), ([], []))
        labels.extend(x for x in r.get("labels") or [] if x not in labels)
        tools.extend(x for x in r.get("tools") or [] if x not in tools)
    return merged


def print_verdict(payload: Mapping[str, Any]) -> None:
    verdict = str(payload.get("verdict") or "unknown")
    click.echo("")
    color = {"fail": "red", "pass": "green"}.get(verdict, "yellow")
    # The plain-language headline first; the statistics follow one level down.
    click.secho(f"Verdict: {payload.get('headline') or verdict.upper()}", bold=True, fg=color)
    for reason in payload.get("reasons", []):
        click.echo(f"  - {reason}")
    regressions = _regressed_examples(payload.get("regressions") or [])
    if regressions:
        click.echo(f"\nRegressed examples ({len(regressions)}):")
        for example_id, (labels, tools) in list(regressions.items())[:MAX_LISTED_REGRESSIONS]:
            click.echo(f"  {example_id}: {', '.join(labels) or 'score drop'} [{', '.join(tools)}]")
        if len(regressions) > MAX_LISTED_REGRESSIONS:
            click.echo(f"  ... and {len(regressions) - MAX_LISTED_REGRESSIONS} more in the report (or --json)")
    recommendations = payload.get("recommendations") or []
    if recommendations:
        click.echo("\nRecommendations:")
        for line in recommendations:
            click.echo(f"  - {line}")
    cached = _cache_line(payload)
    if cached:
        click.echo(f"\n{cached[:1].upper()}{cached[1:]}")
    if payload.get("report_path"):
        click.echo(f"{'' if cached else chr(10)}Report: {payload['report_path']}")
    click.echo(f"Run id: {payload['run_id']}")


def finish_verdict(
    payload: dict[str, Any], *, as_json: bool, junit: str | None, fail_on_regression: bool,
    fail_on_inconclusive: bool = False, alpha: float = 0.05
) -> None:
    """Print the verdict, write the JUnit file, and exit 2 on a failing verdict (3 on an
    inconclusive one) when asked to."""
    if junit:
        from ..report._junit import write_junit

        write_junit(junit, payload, alpha=alpha, fail_on_inconclusive=fail_on_inconclusive)
        progress(f"wrote JUnit XML to {junit}")
    if as_json:
        emit_json(payload)
    else:
        print_verdict(payload)
    if fail_on_regression and payload.get("verdict") == "fail":
        sys.exit(EXIT_REGRESSION)
    if fail_on_inconclusive and payload.get("verdict") == "inconclusive":
        sys.exit(EXIT_INCONCLUSIVE)


def json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")(fn)


def base_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--base", default=DEFAULT_BASE, show_default=True, metavar="DIR",
                        help="Where suites, toolsets and runs live.")(fn)


def config_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--config", "config_path", default=None, metavar="FILE",
                        help="evalshift.yaml to read (default: ./evalshift.yaml when present).")(fn)


def gate_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--junit", metavar="FILE", default=None,
                      help="Write JUnit XML: the verdict, one testcase per comparison and per regression; "
                           "failures exactly when the flags above make the exit code non-zero.")(fn)
    fn = click.option("--fail-on-inconclusive", is_flag=True,
                      help="Exit 3 when the verdict is inconclusive (nothing decided is not a pass).")(fn)
    return click.option("--fail-on-regression", is_flag=True,
                        help="Exit 2 when the verdict is fail (for CI gates).")(fn)


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--dry-run", is_flag=True,
                      help="Print the planned calls, estimated tokens and cost per model (online and through "
                           "batch APIs) and how many the cache would serve; send nothing, write nothing.")(fn)
    fn = click.option("--batch", is_flag=True,
                      help="Replay through the providers' batch APIs: about half the price, results within "
                           "their 24-hour window (default: replay.batch).")(fn)
    fn = click.option("--source-repeats", type=click.IntRange(1, 20), default=None, metavar="N",
                      help="Replay the source N times per example: the A/A baseline of the drift "
                           "comparisons where recordings cannot serve (default: replay.source_repeats, 1).")(fn)
    fn = click.option("--no-cache", is_flag=True,
                      help="Send every request for a fresh sample instead of replaying cached responses "
                           "(the cache is still updated).")(fn)
    fn = click.option("--allow-unpriced", is_flag=True,
                      help="With --max-cost: start although a model has no price (its cost is unknown), "
                           "holding only the priced calls to the cap.")(fn)
    fn = click.option("--max-cost", type=float, default=None, metavar="USD",
                      help="Refuse to start when the estimated cost is above this, or unknown (a model "
                           "without a price) unless --allow-unpriced.")(fn)
    fn = click.option("--concurrency", type=click.IntRange(min=1), default=None, metavar="N",
                      help="Model calls in flight at once.")(fn)
    return click.option("--run-id", default=None, callback=_safe_run_id,
                        help="Use this run id (resumes an interrupted run).")(fn)


def _safe_run_id(_ctx: Any, _param: Any, value: str | None) -> str | None:
    """A run id becomes a folder name: refused before anything starts when it is not a safe one."""
    if value is not None:
        from ..store._paths import check_name

        check_name(value, what="run id", field="run_id")
    return value


# -- the commands -----------------------------------------------------------------------------------


@click.group(context_settings=CONTEXT, epilog=EXIT_CODES_HELP)
@click.version_option(package_name="evalshift")
def cli() -> None:
    """Catch tool-call regressions before you swap the model behind an agent.

    \b
    Walkthrough:
      evalshift init                                 # capture-first evalshift.yaml
      EVALSHIFT_CAPTURE=1 python run_agent.py        # capture real traffic
      evalshift capture sync                         # captures -> golden suite
      evalshift compare --suite-name support --to openai:gpt-4.1-mini --open
    """


@cli.command(context_settings=CONTEXT)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.option("--config", "config_path", default="evalshift.yaml", show_default=True, metavar="FILE",
              help="Where to write it.")
@click.option("--source-model", default=None, metavar="MODEL", help="defaults.source_model to write.")
@click.option("--target-model", default=None, metavar="MODEL", help="defaults.target_model to write.")
@json_option
def init(force: bool, config_path: str, source_model: str | None, target_model: str | None, as_json: bool) -> None:
    """Write a capture-first evalshift.yaml, commented block by block.

    \b
    Example:
      evalshift init
      evalshift init --source-model openai:gpt-4o --target-model openai:gpt-4.1-mini
    """
    from ..config._init import DEFAULT_SOURCE_MODEL, DEFAULT_TARGET_MODEL, write_init

    path = write_init(config_path, force=force, source_model=source_model or DEFAULT_SOURCE_MODEL,
                      target_model=target_model or DEFAULT_TARGET_MODEL)
    if as_json:
        emit_json({"config_path": str(path)})
    else:
        click.echo(f"wrote {path}")
        click.echo("next: run your agent with EVALSHIFT_CAPTURE=1, then `evalshift capture sync`")


@cli.group(context_settings=CONTEXT)
def capture() -> None:
    """Turn captured agent turns into a golden suite."""


def _capture_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--verbose", "-v", is_flag=True,
                      help="Also print the per-example lines a summary warning stands for.")(fn)
    fn = click.option("--names-only", is_flag=True, help="Expectations keep tool names, drop arguments.")(fn)
    fn = click.option("--rounds", type=click.Choice(["first", "all"]), default="first", show_default=True,
                      help="first: single-shot replay; all: teacher-forced multi-round replay.")(fn)
    fn = click.option("--suite-name", default=None, metavar="NAME",
                      help="Suite to write (default: one suite per prompt id).")(fn)
    return base_option(fn)


def _sync_payload(result: Any) -> dict[str, Any]:
    return {
        "suites": {k: str(v) for k, v in getattr(result, "suites", {}).items()},
        "added": getattr(result, "added", 0),
        "unchanged": getattr(result, "unchanged", 0),
        "warnings": list(getattr(result, "warnings", [])),
        "unrecognised_spans": getattr(result, "unrecognised", 0),
        "unrecognised_line": result.unrecognised_line() if hasattr(result, "unrecognised_line") else None,
        "details": list(getattr(result, "details", [])),
    }


def _print_sync(payload: Mapping[str, Any], as_json: bool, verbose: bool = False) -> None:
    for warning in payload["warnings"]:
        progress(f"warning: {_one_line(warning)}")
    if verbose:
        for detail in payload["details"]:
            progress(f"  {_one_line(detail)}")
    if payload.get("unrecognised_line"):
        progress(f"warning: {payload['unrecognised_line']}")
    if as_json:
        emit_json(payload)
        return
    click.echo(f"{payload['added']} examples added, {payload['unchanged']} unchanged")
    for name, path in payload["suites"].items():
        click.echo(f"suite {name}: {path}")


@capture.command("sync", context_settings=CONTEXT)
@click.argument("capture_dir", required=False, metavar="[CAPTURE_DIR]")
@_capture_options
@json_option
def capture_sync(capture_dir: str | None, base: str, suite_name: str | None, rounds: str, names_only: bool,
                 verbose: bool, as_json: bool) -> None:
    """Promote every capture into the golden suite (idempotent: a second sync changes nothing).

    CAPTURE_DIR defaults to $EVALSHIFT_CAPTURE_DIR, else .evalshift/captures.

    \b
    Example:
      evalshift capture sync
      evalshift capture sync .evalshift/captures --suite-name support --rounds all
    """
    from ..promote._sync import sync

    directory = Path(capture_dir or os.environ.get("EVALSHIFT_CAPTURE_DIR") or Path(DEFAULT_BASE) / "captures")
    if not directory.is_dir():
        raise InputError(f"no captures at {directory}: run your agent with EVALSHIFT_CAPTURE=1 first")
    progress(f"syncing captures from {directory} ...")
    result = sync(directory, base=base, suite_name=suite_name, rounds=rounds, names_only=names_only)  # type: ignore[arg-type]
    _print_sync(_sync_payload(result), as_json, verbose)


@capture.command("promote", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_capture_options
@json_option
def capture_promote(files: tuple[str, ...], base: str, suite_name: str | None, rounds: str, names_only: bool,
                    verbose: bool, as_json: bool) -> None:
    """Promote the captures in the given capture files only.

    \b
    Example:
      evalshift capture promote .evalshift/captures/spans-0001.jsonl --suite-name support
    """
    from ..promote._sync import promote_files

    for f in files:
        if not Path(f).is_file():
            raise InputError("capture file not found", file=f)
    progress(f"promoting {len(files)} capture file(s) ...")
    result = promote_files([Path(f) for f in files], base=base, suite_name=suite_name, rounds=rounds,  # type: ignore[arg-type]
                           names_only=names_only)
    _print_sync(_sync_payload(result), as_json, verbose)


@cli.command(context_settings=CONTEXT)
@click.option("--suite-name", default=None, metavar="NAME", help="Suite under <base>/suites.")
@click.option("--suite", "suite_file", default=None, metavar="FILE", help="A suite file instead.")
@click.option("--from", "source", default=None, metavar="MODEL", help="Source model (default: defaults.source_model).")
@click.option("--to", "target", default=None, metavar="MODEL", help="Target model (default: defaults.target_model).")
@click.option("--resume", "resume_id", default=None, metavar="RUN",
              help="Finish an interrupted run: its suite and models come from the run folder; batches it "
                   "submitted are polled, not submitted again.")
@click.option("--status", "status_id", default=None, metavar="RUN",
              help="Show a run's progress (rows written, each batch's state) and exit.")
@run_options
@config_option
@base_option
@json_option
def run(suite_name: str | None, suite_file: str | None, source: str | None, target: str | None,
        resume_id: str | None, status_id: str | None, run_id: str | None, concurrency: int | None,
        max_cost: float | None, no_cache: bool, source_repeats: int | None, batch: bool, dry_run: bool,
        allow_unpriced: bool, config_path: str | None, base: str, as_json: bool) -> None:
    """Replay a suite through the source and the target model (writes raw.jsonl).

    \b
    Example:
      evalshift run --suite-name support --from openai:gpt-4o --to openai:gpt-4.1-mini
      evalshift run --suite-name support --to openai:gpt-4.1-mini --batch   # half price, within 24 h
      evalshift run --suite-name support --to openai:gpt-4.1-mini --dry-run # calls and cost, nothing sent
      evalshift run --status <run-id>  # progress of a (batch) run
      evalshift run --resume <run-id>  # finish an interrupted run
      evalshift evaluate <run-id>      # then score it
    """
    from .._compare import prepare_replay
    from ..replay._run import check_sides

    cfg = _config(config_path)
    if status_id is not None:
        _print_status(base, status_id, cfg, as_json)
        return
    replay = prepare_replay(suite_name=suite_name, suite_file=suite_file, resume=resume_id, source=source, target=target,
                            config=cfg, out_dir=base, on_bad_line=_warn_bad_line,
                            run_options=_run_options(concurrency, max_cost, no_cache, source_repeats, batch, run_id,
                                                     allow_unpriced))
    if dry_run:
        _print_dry_run(replay, as_json)
        return
    progress(f"replaying {len(replay.examples)} examples of {replay.suite_name}: {replay.source} -> {replay.target} ...")
    result = replay.run()
    warn_failed_calls(result.calls)
    check_sides(result.run_id, result.calls)
    manifest = result.manifest
    payload: dict[str, Any] = {
        "run_id": result.run_id, "run_dir": str(result.run_dir), "examples": len(replay.examples),
        "calls": len(result.calls), "errors": sum(1 for c in result.calls if c.error),
        "cached_calls": manifest.cached_calls, "model_calls": manifest.model_calls}
    if manifest.replay == "batch":
        payload["batches"] = manifest.batches
    if as_json:
        emit_json(payload)
    else:
        cached = _cache_line(payload)
        how = f" through batch APIs ({len(payload['batches'])} batches)" if "batches" in payload else ""
        click.echo(f"replayed {payload['examples']} examples{how} ({payload['errors']} failed calls"
                   f"{'; ' + cached if cached else ''})")
        click.echo(f"Run id: {result.run_id}")


def _print_dry_run(replay: Any, as_json: bool) -> None:
    """``--dry-run``: the plan and its cost on stdout; nothing sent, nothing written."""
    planned = replay.dry_run()
    if as_json:
        emit_json({"examples": len(replay.examples), "suite": replay.suite_name, "source": replay.source,
                   "target": replay.target, **planned.as_dict()})
        return
    click.echo(f"{len(replay.examples)} examples of {replay.suite_name}: {replay.source} -> {replay.target}")
    for line in planned.lines():
        click.echo(line)


def _print_status(base: str, run_id: str, cfg: Any, as_json: bool) -> None:
    from ..replay._batch import status, status_lines

    info = status(base, run_id, cfg.providers)
    if as_json:
        emit_json(info)
    else:
        for line in status_lines(info):
            click.echo(line)


@cli.command(context_settings=CONTEXT, epilog=EXIT_CODES_HELP)
@click.argument("run_id", metavar="RUN")
@config_option
@base_option
@gate_options
@json_option
def evaluate(run_id: str, config_path: str | None, base: str, fail_on_regression: bool, fail_on_inconclusive: bool,
             junit: str | None, as_json: bool) -> None:
    """Score a finished run with the configured evaluators, analyse it and write the report.

    \b
    Example:
      evalshift evaluate 20260101-120000-ab12cd --fail-on-regression --junit evalshift.xml
    """
    from .._compare import evaluate_saved_run

    cfg = _config(config_path)

    def started(n_examples: int) -> None:
        progress(f"evaluating run {run_id} ({n_examples} examples) ...")

    done = evaluate_saved_run(run_id, config=cfg, base=base, on_loaded=started)
    keep_until_exit()
    finish_verdict(verdict_payload(run_id, done.run_dir, done.analysis, done.report_path, done.manifest,
                                   detail=as_json or junit is not None),
                   as_json=as_json, junit=junit, fail_on_regression=fail_on_regression, fail_on_inconclusive=fail_on_inconclusive,
                   alpha=cfg.migration_policy.alpha)


@cli.command(context_settings=CONTEXT, epilog=EXIT_CODES_HELP)
@click.option("--suite-name", default=None, metavar="NAME", help="Suite under <base>/suites.")
@click.option("--suite", "suite_file", default=None, metavar="FILE", help="A suite file instead.")
@click.option("--to", "target", default=None, metavar="MODEL", help="The candidate (default: defaults.target_model).")
@click.option("--from", "source", default=None, metavar="MODEL", help="Source model (default: defaults.source_model).")
@click.option("--open", "open_report", is_flag=True, help="Open the HTML report in the browser.")
@run_options
@config_option
@base_option
@gate_options
@json_option
def compare(suite_name: str | None, suite_file: str | None, target: str | None, source: str | None,
            open_report: bool, run_id: str | None, concurrency: int | None, max_cost: float | None,
            no_cache: bool, source_repeats: int | None, batch: bool, dry_run: bool, allow_unpriced: bool,
            config_path: str | None, base: str, fail_on_regression: bool, fail_on_inconclusive: bool, junit: str | None, as_json: bool) -> None:
    """Run + evaluate + analyse + report: is the candidate safe to ship?

    \b
    Example:
      evalshift compare --suite-name support --to openai:gpt-4.1-mini --open
      evalshift compare --suite-name support --to claude-sonnet-4-6 --fail-on-regression --junit out.xml
      evalshift compare --suite-name support --to openai:gpt-4.1-mini --no-cache   # fresh samples
      evalshift compare --suite-name support --to openai:gpt-4.1-mini --batch      # at batch prices
      evalshift compare --suite-name support --to openai:gpt-4.1-mini --dry-run    # calls and cost only
    """
    from .._compare import prepare_replay

    cfg = _config(config_path)
    replay = prepare_replay(suite_name=suite_name, suite_file=suite_file, source=source, target=target, config=cfg, out_dir=base,
                            on_bad_line=_warn_bad_line,
                            run_options=_run_options(concurrency, max_cost, no_cache, source_repeats, batch, run_id,
                                                     allow_unpriced))
    if dry_run:
        _print_dry_run(replay, as_json)
        return
    progress(f"comparing {replay.source} -> {replay.target} on {len(replay.examples)} examples of "
             f"{replay.suite_name} ...")
    comparison = replay.compare()
    keep_until_exit()
    warn_failed_calls(comparison.calls)
    payload = verdict_payload(comparison.run_id, comparison.run_dir, comparison.analysis, comparison.report_path,
                              comparison.manifest, detail=as_json or junit is not None)
    if open_report:
        _open(comparison.report_path)
    finish_verdict(payload, as_json=as_json, junit=junit, fail_on_regression=fail_on_regression,
                   fail_on_inconclusive=fail_on_inconclusive, alpha=cfg.migration_policy.alpha)


@cli.group(context_settings=CONTEXT)
def traces() -> None:
    """Attach agent timelines recorded outside EvalShift to a run."""


@traces.command("import", context_settings=CONTEXT)
@click.argument("run_id", metavar="RUN")
@click.option("--source", "source_file", required=True, metavar="FILE", help="Source-model traces (JSON lines).")
@click.option("--target", "target_file", required=True, metavar="FILE", help="Target-model traces (JSON lines).")
@click.option("--baseline", "baseline_file", default=None, metavar="FILE",
              help="A second run of the source agent (JSON lines): agent_trace's A/A baseline.")
@base_option
@json_option
def traces_import(run_id: str, source_file: str, target_file: str, baseline_file: str | None, base: str,
                  as_json: bool) -> None:
    """Import full agent timelines for the agent_trace evaluator.

    Each line is one trace for a (prompt_id, example_id, role) with "events": [...] in the
    capture event schema. Run `evalshift evaluate RUN` afterwards to score them. Without
    --baseline, agent_trace on these timelines is reported as uncalibrated: two runs of one
    agent differ too, and only a second source run says by how much.

    \b
    Example:
      evalshift traces import <run-id> --source source_traces.jsonl --target target_traces.jsonl
      evalshift traces import <run-id> --source s.jsonl --target t.jsonl --baseline s2.jsonl
    """

    for f in (source_file, target_file, baseline_file):
        if f is not None and not Path(f).is_file():
            raise InputError("traces file not found", file=f)
    from ..ingest._traces import import_traces

    path = import_traces(base, run_id, source_file, target_file, baseline_file)
    if as_json:
        emit_json({"run_id": run_id, "traces_path": str(path)})
    else:
        click.echo(f"imported traces into {path}")
        click.echo(f"next: evalshift evaluate {run_id}")


@cli.group(context_settings=CONTEXT)
def tools() -> None:
    """Tool definitions for agent-style prompts."""


@tools.command("sync", context_settings=CONTEXT)
@click.argument("python_file", metavar="FILE.py")
@click.option("--prompt", "prompt_ids", multiple=True, metavar="ID",
              help="Set tools_path on this prompt only (repeatable; default: every prompt).")
@config_option
@base_option
@json_option
def tools_sync(python_file: str, prompt_ids: tuple[str, ...], config_path: str | None, base: str,
               as_json: bool) -> None:
    """Extract tool definitions from Python (never imported), merge them into .evalshift/tools.json
    and set tools_path: on the prompts of evalshift.yaml, keeping its comments and formatting.

    \b
    Example:
      evalshift tools sync app/prompts/tool_definitions.py
    """
    from ..config._tools_sync import tools_sync as sync_tools

    result = sync_tools(python_file, base=base, config_path=config_path, prompt_ids=list(prompt_ids) or None)
    for warning in result.warnings:
        progress(f"warning: {_one_line(warning)}")
    if as_json:
        emit_json(result.as_dict())
        return
    click.echo(f"{len(result.added)} tools added, {len(result.updated)} updated, {len(result.unchanged)} unchanged"
               f" in {result.tools_path} (from {', '.join(result.variables)})")
    if result.prompts_set:
        click.echo(f"set tools_path on prompt(s) {', '.join(result.prompts_set)} in {result.config_path}")


@cli.command(context_settings=CONTEXT)
@click.argument("run_id", metavar="RUN")
@click.option("--open", "open_report", is_flag=True, help="Open the HTML report in the browser.")
@base_option
@json_option
def report(run_id: str, open_report: bool, base: str, as_json: bool) -> None:
    """Render (again) the report of an evaluated run: report.json and a self-contained report.html.

    \b
    Example:
      evalshift report 20260101-120000-ab12cd --open
    """
    from ..report._report import render_run_report

    path = Path(render_run_report(base, run_id))
    if open_report:
        _open(path)
    if as_json:
        emit_json({"run_id": run_id, "report_path": str(path)})
    else:
        click.echo(f"Report: {path}")


@cli.command(context_settings=CONTEXT, epilog=EXIT_CODES_HELP)
@base_option
@gate_options
@json_option
def demo(base: str, fail_on_regression: bool, fail_on_inconclusive: bool, junit: str | None, as_json: bool) -> None:
    """Run the whole pipeline offline on the built-in simulator.

    \b
    Example:
      evalshift demo
    """
    from ._demo import run_demo

    echo = progress if as_json else click.echo
    comparison = run_demo(base, echo=echo)
    keep_until_exit()
    payload = verdict_payload(comparison.run_id, comparison.run_dir, comparison.analysis, comparison.report_path,
                              comparison.manifest, detail=as_json or junit is not None)
    finish_verdict(payload, as_json=as_json, junit=junit, fail_on_regression=fail_on_regression,
                   fail_on_inconclusive=fail_on_inconclusive)


@cli.group(context_settings=CONTEXT)
def cache() -> None:
    """The response cache: a repeated request is answered from <base>/cache, not the provider."""


def _size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB"):
        if size < 1024:
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


@cache.command("info", context_settings=CONTEXT)
@base_option
@json_option
def cache_info(base: str, as_json: bool) -> None:
    """Say how many responses the cache holds and its size on disk.

    \b
    Example:
      evalshift cache info
    """
    from ..replay._cache import cache_info as info_of

    info = info_of(base)
    if as_json:
        emit_json(info.as_dict())
    else:
        click.echo(f"{info.responses} cached responses, {_size(info.bytes)}, in {info.path}")


@cache.command("clear", context_settings=CONTEXT)
@base_option
@json_option
def cache_clear(base: str, as_json: bool) -> None:
    """Empty the cache: every later run sends its requests again (fresh samples).

    \b
    Example:
      evalshift cache clear
    """
    from ..replay._cache import clear_cache

    removed = clear_cache(base)
    if as_json:
        emit_json(removed.as_dict())
    else:
        click.echo(f"removed {removed.responses} cached responses ({_size(removed.bytes)}) from {removed.path}")


@cli.command(context_settings=CONTEXT)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 picks a free one).")
@click.option("--scripts", "scripts_file", default=None, metavar="FILE",
              help="YAML/JSON {model: [rules] | {rules, noise}} (default: the demo's sim-baseline and "
                   "sim-candidate, with the demo's mild noise).")
@click.option("--noise", "noise", default=None, type=click.Choice(["none", "mild", "realistic"]),
              help="Noise preset for every model, over its own profile's tool lists ('none': scripted replies).")
@click.option("--noise-seed", "noise_seed", default=None, type=int, metavar="N",
              help="Seed of every model's noise (the same seed answers the same requests the same way).")
@click.option("--batch-delay", "batch_delay", default=0.0, type=click.FloatRange(min=0), metavar="SECONDS",
              show_default=True, help="How long a batch submitted to the simulated batch APIs takes to end.")
def simulator(host: str, port: int, scripts_file: str | None, noise: str | None, noise_seed: int | None,
              batch_delay: float) -> None:
    """Serve scripted models on the OpenAI wire format until interrupted (Ctrl-C).

    Prints the URL it listens on first, then an OPENAI_BASE_URL=... line to export; with
    --port 0 that is the free port the system picked.

    \b
    Example:
      evalshift simulator --port 0 > simulator.out &
      export "$(grep '^OPENAI_BASE_URL=' simulator.out)" OPENAI_API_KEY=sk-sim
    """
    import signal
    import threading

    from ..simulator import Simulator, load_script_file, load_scripts

    if scripts_file is None:
        from ._demo import DEMO_NOISE, DEMO_SCRIPTS

        scripts = load_scripts(DEMO_SCRIPTS, noise=DEMO_NOISE)
    else:
        scripts = load_script_file(scripts_file)
    try:
        sim = Simulator(scripts, host=host, port=port, noise=noise, noise_seed=noise_seed, batch_delay_s=batch_delay)
    except OSError as exc:
        raise EvalShiftError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with sim:
        click.echo(f"simulator listening on {sim.base_url}")
        click.echo(f"OPENAI_BASE_URL={sim.openai_base_url}")
        click.echo(f"models: {', '.join(sorted(sim.scripts))}", nl=True)
        sys.stdout.flush()
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    progress("simulator stopped")


# -- the entry point --------------------------------------------------------------------------------


_NO_ARGS_IS_HELP: tuple[type[BaseException], ...] = tuple(
    e for e in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if e is not None
)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _fail(message: str, *, as_json: bool, code: int = EXIT_USER_ERROR) -> None:
    """One line on stderr (and, under --json, ``{"error": ...}`` on stdout), then exit."""
    line = _one_line(message)
    click.echo(f"error: {line}", err=True)
    if as_json:
        emit_json({"error": line, "exit_code": code})
    sys.exit(code)


def _error_message(exc: BaseException) -> str | None:
    """The one-line message of an error a user can cause; None for anything else (a bug)."""
    from pydantic import ValidationError

    if isinstance(exc, click.exceptions.UsageError):
        path = exc.ctx.command_path.partition(" ")[2] if exc.ctx else ""
        return f"{exc.format_message()} (see: evalshift {path + ' ' if path else ''}--help)"
    if isinstance(exc, click.exceptions.Abort):
        return "aborted"
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    if isinstance(exc, EvalShiftError):
        return str(exc)
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        return f"{exc.title}: {where + ': ' if where else ''}{err.get('msg', '')}"
    if isinstance(exc, OSError):
        filename = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return f"{exc.strerror or exc}{filename}"
    return None


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every user error becomes one line on stderr and exit code 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    debug = os.environ.get("EVALSHIFT_DEBUG") not in (None, "", "0")
    try:
        code = cli.main(args=args, prog_name="evalshift", standalone_mode=False)
    except _NO_ARGS_IS_HELP as exc:
        # A bare `evalshift` (or `evalshift capture`) asks for the help, not an error.
        click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
        sys.exit(EXIT_OK)
    except KeyboardInterrupt:
        _fail("interrupted", as_json=as_json, code=130)
    except Exception as exc:  # noqa: BLE001 - a bug still gets one line; EVALSHIFT_DEBUG=1 shows it whole
        message = _error_message(exc)
        if debug and (message is None or isinstance(exc, OSError)):
            raise
        if message is None:
            message = (f"internal error: {type(exc).__name__}: {exc} "
                       "(rerun with EVALSHIFT_DEBUG=1 for the traceback)")
        _fail(message, as_json=as_json)
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    main()
