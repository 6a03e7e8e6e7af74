"""Paired statistics for one source/target comparison, in scipy's style.

Pure functions over arrays: keyword-only options, validation in one helper, frozen results, an
explicit ``rng``, small samples handled explicitly; numpy and scipy are imported where used.

Test routing (:func:`paired_test`) on the per-example differences ``d = target - source``:

- fewer than 3 pairs: no test (``pvalue`` is None; the comparison cannot be significant);
- every difference zero: no test, ``pvalue`` 1.0 (nothing moved);
- examples share clusters (Miller 2024, "Adding Error Bars to Evals") and the cluster-robust
  standard error is the wider one: a t-test on it with ``G - 1`` degrees of freedom, ``G`` the
  number of clusters (when clustering does not widen it, the routing below, the more conservative);
- constant non-zero differences (the t statistic is undefined), or scores bimodal at exactly 0/1,
  or Shapiro-Wilk rejecting normality of the differences at 0.05: Wilcoxon signed-rank;
- otherwise: the paired t-test.

Zero differences in the Wilcoxon signed-rank test use Pratt's method (``zero_method="pratt"``):
zeros take part in ranking, so a crowd of unchanged examples does not shrink the ranks of the
small differences, and are then dropped from the rank sums. On 0/1 scores every non-zero
difference ties at |1|, and the test reduces to the sign test on the discordant pairs — McNemar's
logic: an example both models scored alike says nothing about which one is better. There (and for
constant differences) scipy gets only the non-zero differences: the statistic's null distribution
is unchanged, and with 13 or fewer discordant pairs scipy then enumerates it exactly instead of
using the normal approximation, which with 5 drops and no gains in 200 examples says p = 0.025
where the exact answer is 0.0625.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

NORMALITY_ALPHA = 0.05
"""Shapiro-Wilk level below which the differences are treated as not normal."""
EXACT_TIED_CUTOFF = 13
"""scipy's ``wilcoxon`` enumerates every sign flip up to this many tied or zero differences."""
TIE_TOLERANCE = 1e-12
"""Scores live in [0, 1]: a difference smaller than this is floating-point residue (a mean of
per-round scores summed in another order), not a change, and counts as a tie."""


@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided interval for the mean difference (target minus source)."""

    low: float
    high: float


@dataclass(frozen=True)
class PairedTestResult:
    """The outcome of :func:`paired_test`."""

    test: str
    """``wilcoxon``, ``t-test``, ``clustered t-test`` or ``none``."""
    statistic: float | None
    """The test statistic (Wilcoxon's smaller rank sum, or t)."""
    pvalue: float | None
    """Two-sided p-value; None when no test could run (fewer than 3 pairs)."""
    reason: str
    """Why this test was chosen, in words for the report."""
    normality_pvalue: float | None = None
    """Shapiro-Wilk p-value on the differences, when it was computed."""


def _paired(source: ArrayLike, target: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validate a pair of score arrays: 1-D, equal length, finite."""
    import numpy as np

    s = np.asarray(source, dtype=float)
    t = np.asarray(target, dtype=float)
    if s.ndim != 1 or t.ndim != 1:
        raise ValueError("source and target must be one-dimensional")
    if s.shape != t.shape:
        raise ValueError(f"source and target must pair up: {s.size} source vs {t.size} target scores")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(t))):
        raise ValueError("scores must be finite")
    return s, t


def _cluster_codes(clusters: Sequence[Any] | None, n: int) -> np.ndarray | None:
    """Integer codes for the cluster labels, or None when no two examples share a cluster."""
    import numpy as np

    if clusters is None:
        return None
    if len(clusters) != n:
        raise ValueError(f"clusters must label every pair: {len(clusters)} labels for {n} pairs")
    _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    n_clusters = int(codes.max()) + 1 if n else 0
    # One cluster holding everything leaves no between-cluster variation to estimate from.
    if n_clusters == n or n_clusters < 2:
        return None
    return codes


def standard_error(differences: ArrayLike) -> float:
    """The usual standard error of the mean difference, ``sd / sqrt(n)`` (0.0 below 2 pairs)."""
    import numpy as np

    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        return 0.0
    return float(d.std(ddof=1) / math.sqrt(d.size))


def clustered_standard_error(differences: ArrayLike, clusters: Sequence[Any]) -> float:
    """Cluster-robust standard error of the mean difference (Miller 2024, eq. 4).

    ``sqrt(G / (G - 1) * sum_c (sum_{i in c} (d_i - mean))**2) / n`` with ``G`` clusters; with
    every example its own cluster this equals :func:`standard_error`.
    """
    import numpy as np

    d = np.asarray(differences, dtype=float)
    _, codes = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    if len(codes) != d.size:
        raise ValueError(f"clusters must label every pair: {len(codes)} labels for {d.size} pairs")
    n_clusters = int(codes.max()) + 1 if d.size else 0
    if n_clusters < 2:
        return 0.0
    residual_sums = np.bincount(codes, weights=d - d.mean())
    return float(math.sqrt(n_clusters / (n_clusters - 1) * np.sum(residual_sums**2)) / d.size)


def _wilcoxon(
    d: np.ndarray, reason: str, normality: float | None = None, *, tied_magnitudes: bool = False
) -> PairedTestResult:
    import numpy as np
    from scipy import stats

    if tied_magnitudes:
        # Every non-zero |d| is equal: zeros carry nothing, and dropping them lets scipy go exact.
        d = d[d != 0]
        m = d.size
        if m <= EXACT_TIED_CUTOFF:
            # scipy would enumerate all 2**m sign flips (seconds at m = 13); with every |d| tied
            # that null distribution is Binomial(m, 1/2), so the same p-value comes directly.
            positive = int(np.sum(d > 0))
            statistic = min(positive, m - positive) * (m + 1) / 2
            pvalue = float(stats.binomtest(positive, m).pvalue)
            return PairedTestResult("wilcoxon", float(statistic), pvalue, reason, normality)
    res = stats.wilcoxon(d, zero_method="pratt")
    return PairedTestResult("wilcoxon", float(res.statistic), float(res.pvalue), reason, normality)


def paired_test(
    source: ArrayLike,
    target: ArrayLike,
    *,
    clusters: Sequence[Any] | None = None,
    normality_alpha: float = NORMALITY_ALPHA,
) -> PairedTestResult:
    """Two-sided paired test of ``target - source``, routed as the module docstring describes."""
    import numpy as np

    s, t = _paired(source, target)
    d = t - s
    d[np.abs(d) < TIE_TOLERANCE] = 0.0
    n = d.size
    if n < 3:
        return PairedTestResult("none", None, None, f"{n} paired example(s): a paired test needs at least 3")
    if np.all(d == 0):
        return PairedTestResult("none", 0.0, 1.0, "every difference is zero")
    codes = _cluster_codes(clusters, n)
    if codes is not None:
        from scipy import stats

        n_clusters = int(codes.max()) + 1
        se = clustered_standard_error(d, codes.tolist())
        # Only when clustering widens the error bars: otherwise the independent-examples test
        # below is the more conservative one, and it keeps the exact small-count p-values.
        if se > standard_error(d):
            statistic = float(d.mean() / se)
            pvalue = float(2 * stats.t.sf(abs(statistic), df=n_clusters - 1))
            return PairedTestResult(
                "clustered t-test", statistic, pvalue,
                f"{n} examples in {n_clusters} clusters: t on the cluster-robust standard error, "
                f"{n_clusters - 1} degrees of freedom",
            )
    if np.all(d == d[0]):
        return _wilcoxon(d, "constant differences (the t statistic is undefined)", tied_magnitudes=True)
    if np.all((s == 0) | (s == 1)) and np.all((t == 0) | (t == 1)):
        return _wilcoxon(d, "scores bimodal at exactly 0/1", tied_magnitudes=True)
    from scipy import stats

    with warnings.catch_warnings():
        # Beyond 5000 pairs scipy warns that the p-value may be inexact; it only routes the test.
        warnings.simplefilter("ignore", UserWarning)
        normality = float(stats.shapiro(d).pvalue)
    if normality < normality_alpha:
        return _wilcoxon(d, f"differences not normal (Shapiro-Wilk p={normality:.3g})", normality)
    res = stats.ttest_rel(t, s)
    return PairedTestResult(
        "t-test", float(res.statistic), float(res.pvalue),
        f"differences consistent with normal (Shapiro-Wilk p={normality:.3g})", normality,
    )


def _exact_small_integers(values: np.ndarray) -> np.ndarray | None:
    """``values`` as int8 or int16 when each is a whole number that fits (0/1 scores, their cluster
    sums), else None.

    Whole numbers add up exactly in float64 in any order (every partial sum stays far below
    2**53), so summing the small integers gives the very totals the float sum would, reading an
    eighth or a quarter of the bytes.
    """
    import numpy as np

    if values.size == 0 or not np.array_equal(values, np.trunc(values)):
        return None
    largest = float(np.abs(values).max())
    for dtype in (np.int8, np.int16):
        if largest <= np.iinfo(dtype).max:
            return values.astype(dtype)
    return None


def bootstrap_ci(
    source: ArrayLike,
    target: ArrayLike,
    *,
    clusters: Sequence[Any] | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    rng: np.random.Generator | int | None = None,
) -> ConfidenceInterval | None:
    """Percentile bootstrap interval for the mean of ``target - source``, resampling pairs.

    With shared clusters whole clusters are resampled (each pair keeps its cluster-mates).
    Returns None below 3 pairs, where a resample of the pairs says nothing.
    """
    import numpy as np

    s, t = _paired(source, target)
    if not 0 < confidence_level < 1:
        raise ValueError("confidence_level must lie strictly between 0 and 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be positive")
    d = t - s
    n = d.size
    if n < 3:
        return None
    if np.all(d == d[0]):
        return ConfidenceInterval(float(d[0]), float(d[0]))
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    codes = _cluster_codes(clusters, n)
    if codes is None:
        sums, counts = d, None
    else:
        sums = np.bincount(codes, weights=d)
        counts = np.bincount(codes)
    units = sums.size
    values = _exact_small_integers(sums)
    # numpy draws bounded integers below 2**32 from the same 32-bit stream whatever the dtype:
    # int32 indices are the very same resamples, gathered with half the memory traffic.
    dtype = np.int32 if units <= np.iinfo(np.int32).max else np.int64
    means = np.empty(n_resamples)
    # Chunk the index matrix: ~250k indices at a time keep the gather in cache on a large suite.
    chunk = max(1, 250_000 // units)
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = gen.integers(0, units, size=(stop - start, units), dtype=dtype)
        totals = sums[idx].sum(axis=1) if values is None else values[idx].sum(axis=1, dtype=np.int64)
        means[start:stop] = totals / (units if counts is None else counts[idx].sum(axis=1))
    tail = (1 - confidence_level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return ConfidenceInterval(float(low), float(high))


def benjamini_hochberg(pvalues: ArrayLike) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1), in input order.

    scipy's ``false_discovery_control`` (scipy >= 1.11) computes them; this wrapper keeps the
    stricter input rule (NaN and infinities are refused, where scipy would pass NaN through) and
    an empty input returning an empty array.
    """
    import numpy as np
    from scipy.stats import false_discovery_control

    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError("p-values must be one-dimensional")
    if p.size and (not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1):
        raise ValueError("p-values must lie in [0, 1]")
    if p.size == 0:
        return p
    return np.asarray(false_discovery_control(p, method="bh"), dtype=float)


def required_examples(
    *,
    drop: float,
    difference_sd: float,
    alpha: float = 0.05,
    power: float = 0.8,
    design_effect: float = 1.0,
) -> int:
    """Pairs a two-sided paired test needs to detect a mean drop of ``drop`` at ``power``.

    ``n = ((z_{1-alpha/2} + z_power) * sd / drop)**2 * design_effect``. The sd is floored at
    ``sqrt(drop * (1 - drop))``, the least spread a drop of that size can have on [0, 1] scores
    (each affected example falling by a whole point), so a suite where nothing moved yet does not
    claim that a handful of examples would do.
    """
    from statistics import NormalDist

    if not 0 < drop <= 1:
        raise ValueError("drop must lie in (0, 1]")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must lie strictly between 0 and 1")
    sd = max(float(difference_sd), math.sqrt(drop * (1 - drop)) if drop < 1 else 0.0, 1e-12)
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return max(3, math.ceil((z * sd / drop) ** 2 * max(design_effect, 1.0)))


def detectable_drop(
    n: int,
    *,
    difference_sd: float,
    alpha: float = 0.05,
    power: float = 0.8,
    design_effect: float = 1.0,
) -> float | None:
    """The smallest mean drop ``n`` pairs detect at ``power``: the inverse of :func:`required_examples`.

    Found by bisection on the same formula (sd floored the same way), to two decimals rounded up;
    None when not even a drop of 1.0 is detectable with ``n`` pairs.
    """
    def enough(drop: float) -> bool:
        return required_examples(drop=drop, difference_sd=difference_sd, alpha=alpha, power=power,
                                 design_effect=design_effect) <= n

    if n < 3 or not enough(1.0):
        return None
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if mid > 0 and enough(mid):
            hi = mid
        else:
            lo = mid
    return min(1.0, math.ceil(hi * 100 - 1e-9) / 100)
