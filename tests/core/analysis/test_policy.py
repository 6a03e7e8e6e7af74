"""``migration_policy:`` in evalshift.yaml: the seed's fields, defaults and clear errors."""

from __future__ import annotations

import pytest

from evalshift_core import load_config
from evalshift_core._exceptions import ConfigError
from evalshift_core.analysis._policy import EvaluatorThreshold, MigrationPolicy


def test_seed_000_budget_block_parses(tmp_path):
    """Seed 000: migration_policy: max_tool_argument_drift: 0.01, tool_argument_drift_floor: 0.9."""
    path = tmp_path / "evalshift.yaml"
    path.write_text(
        "version: 1\n"
        "migration_policy:\n"
        "  max_tool_argument_drift: 0.01\n"
        "  tool_argument_drift_floor: 0.9\n"
        "  max_tool_divergence: 0.05\n"
        "  thresholds:\n"
        "    tool_selection.routing: 0.95\n"
        "    tool_arguments.args.conformance: {max_drop: 0.02}\n"
    )
    policy = load_config(path).migration_policy
    assert (policy.max_tool_argument_drift, policy.tool_argument_drift_floor, policy.max_tool_divergence) == (0.01, 0.9, 0.05)
    assert policy.thresholds == {
        "tool_selection.routing": EvaluatorThreshold(min_target_mean=0.95),
        "tool_arguments.args.conformance": EvaluatorThreshold(max_drop=0.02),
    }


def test_defaults():
    policy = MigrationPolicy()
    assert (policy.alpha, policy.min_examples, policy.minimum_detectable_drop) == (0.05, 10, 0.05)
    assert (policy.fail_at_severity, policy.cluster_by) == ("low", "source_trace")
    assert policy.max_tool_argument_drift is None and policy.max_tool_divergence is None


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ("  alpha: 1.5\n", "migration_policy.alpha"),
        ("  max_tool_divergence: -0.1\n", "migration_policy.max_tool_divergence"),
        ("  fail_at_severity: severe\n", "migration_policy.fail_at_severity"),
        ("  max_argument_drift: 0.1\n", "migration_policy.max_argument_drift"),
        ("  thresholds: {tool_selection.routing: {min_mean: 0.9}}\n", "migration_policy.thresholds.tool_selection.routing.min_mean"),
    ],
)
def test_bad_policy_names_file_and_field(tmp_path, block, field):
    path = tmp_path / "evalshift.yaml"
    path.write_text("migration_policy:\n" + block)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.file == str(path)
    assert info.value.field == field


def test_readme_analysis_section_policy_block_is_valid():
    """The ``migration_policy:`` example under README's "## analysis.json" parses as written."""
    from pathlib import Path

    from ruamel.yaml import YAML

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## analysis.json", 1)[1].split("\n## ", 1)[0]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    policy = MigrationPolicy.model_validate(YAML(typ="safe").load(block)["migration_policy"])
    assert policy.tool_argument_drift_floor == 0.9
    assert policy.thresholds["tool_arguments.args"].max_drop == 0.02
