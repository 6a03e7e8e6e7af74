"""Validity of the verdict by simulation: how often an A/A suite fails, how often a real drop is caught.

Scores for every simulated suite are drawn at once (seeded, vectorised); each suite then goes
through :func:`analyze` whole, so the rates measure the verdict users get, not a bare test.
Used by ``tests/core/analysis/test_analysis_validity.py`` and ``benchmarks/analysis_validity.py``; it is
not part of the package.

The model: example ``i`` has a difficulty ``p_i ~ Beta(a * k, (1 - a) * k)`` (mean accuracy ``a``,
concentration ``k``; small ``k`` means examples are mostly easy or mostly hard for *both* models,
which is what makes a paired design pay). The source calls the right tools with probability
``p_i``; the target with ``p_i * (1 - drop / a)``, so its expected accuracy is ``a - drop``. An
A/A suite is ``drop = 0``: the target drawn from the source's distribution, independently.

The default ``k = 1`` makes two independent runs of the same model disagree on about 13% of the
examples — more churn than tool routing usually shows, so the power it yields is not flattering.
With no example-level correlation at all (``k`` very large) a paired design has nothing to pair
on; ``benchmarks/analysis_validity.py`` prints the power across ``k``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalshift_core.analysis import analyze
from evalshift_core.evaluators import ScoreRecord

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class ValidityResult:
    """How many of the simulated suites got a failing verdict."""

    suites: int
    examples: int
    failing: int

    @property
    def failing_rate(self) -> float:
        return self.failing / self.suites


def simulate_tool_selection(
    *,
    n_suites: int,
    n_examples: int,
    drop: float = 0.0,
    accuracy: float = 0.85,
    concentration: float = 1.0,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """0/1 tool-selection scores ``(source, target)``, each of shape ``(n_suites, n_examples)``."""
    if not 0 <= drop < accuracy < 1:
        raise ValueError("need 0 <= drop < accuracy < 1")
    p = rng.beta(accuracy * concentration, (1 - accuracy) * concentration, size=(n_suites, n_examples))
    source = (rng.random(p.shape) < p).astype(float)
    target = (rng.random(p.shape) < p * (1 - drop / accuracy)).astype(float)
    return source, target


def simulate_argument_scores(
    *, n_suites: int, n_examples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Continuous argument scores in [0, 1] for an A/A pair: shared per-example quality plus noise."""
    import numpy as np

    quality = rng.beta(8.0, 2.0, size=(n_suites, n_examples))
    noise = rng.normal(0.0, 0.05, size=(2, n_suites, n_examples))
    return np.clip(quality + noise[0], 0, 1), np.clip(quality + noise[1], 0, 1)


def failing_verdicts(
    comparisons: Mapping[tuple[str, str, str | None], tuple[np.ndarray, np.ndarray]],
    *,
    policy: Mapping[str, Any] | None = None,
    n_resamples: int = 200,
) -> ValidityResult:
    """Run :func:`analyze` on every simulated suite and count the failing verdicts.

    ``comparisons`` maps ``(evaluator, name, side)`` to ``(source, target)`` score matrices of
    equal shape ``(n_suites, n_examples)``. The bootstrap interval never enters the verdict, so a
    few hundred resamples keep the simulation quick without changing a single verdict.
    """
    shapes = {s.shape for pair in comparisons.values() for s in pair}
    if len(shapes) != 1:
        raise ValueError("every score matrix must have the same (n_suites, n_examples) shape")
    n_suites, n_examples = shapes.pop()
    failing = 0
    for k in range(n_suites):
        records = [
            ScoreRecord(example_id=f"ex{i}", evaluator=ev, name=name, side=side,
                        source_score=float(src[k, i]), target_score=float(tgt[k, i]))
            for (ev, name, side), (src, tgt) in comparisons.items()
            for i in range(n_examples)
        ]
        if analyze(records, policy=policy, seed=k, n_resamples=n_resamples).verdict == "fail":
            failing += 1
    return ValidityResult(suites=n_suites, examples=n_examples, failing=failing)
