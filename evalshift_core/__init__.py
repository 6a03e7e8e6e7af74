"""EvalShift core: turn captures into a golden suite, replay it on two models, score and report.

A library first; the ``evalshift`` CLI is a thin layer over these functions.
"""

from ._analysis import Analysis, ComparisonResult, Regression, analyze
from ._captures import Capture, load_captures
from ._compare import Comparison, compare, evaluate_and_report
from ._config import Config, load_config
from ._demo import DEMO_SCRIPTS
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
from ._policy import MigrationPolicy
from ._promote import Promotion, promote, promote_capture
from ._report import build_report, open_report, render_html, render_run_report, write_report
from ._run import RunResult, load_run, run
from ._suite import load_suite, resolve_tools, save_suite
from ._sync import SyncResult, promote_files, sync
from ._traces import import_traces
from .analysis import load_analysis
from .evaluators import LABELS, ScoreRecord, evaluate, evaluate_pair, evaluate_run
from .simulator import Simulator

__all__ = [
    "Analysis",
    "Call",
    "Capture",
    "Comparison",
    "ComparisonResult",
    "Config",
    "ConfigError",
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
    "Tool",
    "ToolCall",
    "ToolTrace",
    "Toolset",
    "UnknownToolsetError",
    "analyze",
    "build_report",
    "compare",
    "evaluate",
    "evaluate_and_report",
    "evaluate_pair",
    "evaluate_run",
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
