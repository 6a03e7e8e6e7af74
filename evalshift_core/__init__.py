"""EvalShift core: turn captures into a golden suite, replay it on two models, score and report.

A library first; the ``evalshift`` CLI is a thin layer over these functions.
"""

from ._compare import Comparison, compare, evaluate_and_report
from ._exceptions import (
    ConfigError,
    EvalShiftError,
    InputError,
    ReplayError,
    RunNotFoundError,
    UnknownToolsetError,
)
from ._models import (
    Call,
    Example,
    ExpectedToolCall,
    FixtureResult,
    Tool,
    ToolCall,
    Toolset,
    ToolTrace,
)
from .analysis import Analysis, ComparisonResult, Regression, analyze, load_analysis
from .analysis._policy import MigrationPolicy
from .cli._demo import DEMO_SCRIPTS
from .config._config import Config, load_config
from .evaluators import (
    LABELS,
    ScoreRecord,
    TextEvaluator,
    ToolEvaluator,
    evaluate,
    evaluate_pair,
    evaluate_run,
    evaluator,
)
from .ingest._captures import Capture, load_captures
from .ingest._traces import import_traces
from .promote._examples import Promotion, promote, promote_capture
from .promote._sync import SyncResult, promote_files, sync
from .replay._run import DryRun, RunResult, dry_run, run
from .report._data import build_report
from .report._html import render_html
from .report._report import open_report, render_run_report, write_report
from .simulator import Simulator
from .store._runs import load_run
from .store._suites import load_suite, resolve_tools, save_suite

__all__ = [
    "Analysis",
    "Call",
    "Capture",
    "Comparison",
    "ComparisonResult",
    "Config",
    "ConfigError",
    "DryRun",
    "DEMO_SCRIPTS",
    "EvalShiftError",
    "Example",
    "ExpectedToolCall",
    "FixtureResult",
    "InputError",
    "LABELS",
    "MigrationPolicy",
    "Promotion",
    "Regression",
    "ReplayError",
    "RunNotFoundError",
    "RunResult",
    "ScoreRecord",
    "Simulator",
    "SyncResult",
    "TextEvaluator",
    "Tool",
    "ToolCall",
    "ToolEvaluator",
    "ToolTrace",
    "Toolset",
    "UnknownToolsetError",
    "analyze",
    "build_report",
    "compare",
    "dry_run",
    "evaluate",
    "evaluate_and_report",
    "evaluate_pair",
    "evaluate_run",
    "evaluator",
    "import_traces",
    "load_analysis",
    "load_captures",
    "load_config",
    "load_run",
    "load_suite",
    "open_report",
    "promote",
    "promote_capture",
    "promote_files",
    "render_html",
    "render_run_report",
    "resolve_tools",
    "run",
    "save_suite",
    "sync",
    "write_report",
]
