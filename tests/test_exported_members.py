"""The public surface is explicit: everything in __all__ exists, and nothing leaks in unnoticed."""

from __future__ import annotations

import evalshift_core
import evalshift_sdk

CORE = {
    "DEMO_SCRIPTS", "Analysis", "Call", "Capture", "Comparison", "ComparisonResult", "Config", "ConfigError", "DryRun",
    "EvalShiftError", "Example", "ExpectedToolCall", "FixtureResult", "InputError", "LABELS",
    "MigrationPolicy", "Promotion", "Regression", "ReplayError", "RunNotFoundError", "RunResult",
    "ScoreRecord", "Simulator", "SyncResult", "TextEvaluator", "Tool", "ToolCall", "ToolEvaluator", "ToolTrace",
    "Toolset",
    "UnknownToolsetError", "analyze", "build_report", "compare", "dry_run", "evaluate", "evaluate_and_report",
    "evaluate_pair", "evaluate_run", "evaluator", "import_traces", "load_analysis", "load_captures", "load_config",
    "load_run", "load_suite", "open_report", "promote", "promote_capture", "promote_files",
    "render_html", "render_run_report", "resolve_tools", "run", "save_suite", "sync", "write_report",
}


def test_core_exports_exactly_its_public_surface():
    assert set(evalshift_core.__all__) == CORE
    for name in evalshift_core.__all__:
        assert getattr(evalshift_core, name) is not None


def test_sdk_exports_the_design_surface():
    assert {"init", "shutdown", "turn", "tool", "record_tool"} <= set(evalshift_sdk.__all__)
    for name in evalshift_sdk.__all__:
        assert callable(getattr(evalshift_sdk, name))
