"""Validity of the verdict by simulation (seeded): A/A false fails and the power against a real drop.

Run with ``pytest -s`` to see both rates; ``benchmarks/analysis_validity.py`` prints them too.
"""

from __future__ import annotations

import numpy as np
from _validity import (
    failing_verdicts,
    simulate_argument_scores,
    simulate_tool_selection,
)

SUITES = 500
EXAMPLES = 200


def test_a_a_suites_fail_in_at_most_5_percent_at_alpha_0_05():
    """Issue: an A/A setup (target drawn from the source's distribution) gives a failing verdict
    in at most 5% of 500 simulated suites at alpha 0.05 — here on two comparisons at once, a 0/1
    tool_selection one and a continuous tool_arguments one, so Benjamini-Hochberg is exercised."""
    rng = np.random.default_rng(20261130)
    selection = simulate_tool_selection(n_suites=SUITES, n_examples=EXAMPLES, rng=rng)
    arguments = simulate_argument_scores(n_suites=SUITES, n_examples=EXAMPLES, rng=rng)
    result = failing_verdicts({
        ("tool_selection", "routing", "conformance"): selection,
        ("tool_arguments", "args", None): arguments,
    }, policy={"alpha": 0.05})
    print(f"\nA/A: {result.failing} of {result.suites} suites failed ({result.failing_rate:.1%}; must be <= 5%)")
    assert result.failing_rate <= 0.05


def test_a_10_point_drop_in_tool_selection_accuracy_is_caught_in_at_least_80_percent():
    """Issue: a seeded 10-point drop in tool-selection accuracy on 200 examples is caught in at
    least 80% of 500 simulated suites (source accuracy 0.85, target 0.75 in expectation; example
    difficulty shared by both models, two runs of one model disagreeing on ~13% of examples)."""
    rng = np.random.default_rng(20261201)
    source, target = simulate_tool_selection(n_suites=SUITES, n_examples=EXAMPLES, drop=0.10, rng=rng)
    assert abs((source.mean() - target.mean()) - 0.10) < 0.01
    result = failing_verdicts({("tool_selection", "routing", "conformance"): (source, target)},
                              policy={"alpha": 0.05})
    print(f"\n10-point drop: caught in {result.failing} of {result.suites} suites "
          f"({result.failing_rate:.1%}; must be >= 80%)")
    assert result.failing_rate >= 0.80


def test_clustered_standard_errors_hold_the_level_where_the_naive_test_does_not():
    """Miller 2024: when examples come in clusters whose differences move together, a test that
    treats them as independent rejects far too often; the clustered t-test keeps its level.
    500 seeded null datasets (20 clusters of 10, zero mean difference); the bound leaves room for
    the simulation's own error (about 1 point at 500 draws) around the nominal 5%."""
    from evalshift_core.analysis import paired_test

    rng = np.random.default_rng(20261202)
    clusters = np.repeat(np.arange(20), 10).tolist()
    source = np.full(200, 0.5)
    clustered = naive = 0
    for _ in range(500):
        target = source + np.repeat(rng.normal(0, 0.05, 20), 10) + rng.normal(0, 0.1, 200)
        clustered += paired_test(source, target, clusters=clusters).pvalue < 0.05
        naive += paired_test(source, target).pvalue < 0.05
    print(f"\nclustered null: clustered t-test rejects {clustered / 500:.1%}, naive test {naive / 500:.1%}")
    assert clustered / 500 <= 0.075
    assert naive / 500 >= 0.15
