"""The analysis layer's statistics against their oracles (statsmodels, scipy) and known answers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests

from evalshift_core.analysis import (
    benjamini_hochberg,
    bootstrap_ci,
    clustered_standard_error,
    paired_test,
    required_examples,
    standard_error,
)
from evalshift_core.analysis._stats import TIE_TOLERANCE

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(unit, min_size=1, max_size=60))
def test_benjamini_hochberg_equals_statsmodels_fdr_bh(pvalues):
    expected = multipletests(pvalues, method="fdr_bh")[1]
    np.testing.assert_allclose(benjamini_hochberg(pvalues), expected, rtol=1e-12, atol=1e-15)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.01, 0.04, 0.05, 0.5, 1.0]), min_size=1, max_size=30))
def test_benjamini_hochberg_equals_statsmodels_with_ties(pvalues):
    np.testing.assert_allclose(benjamini_hochberg(pvalues), multipletests(pvalues, method="fdr_bh")[1])


def test_benjamini_hochberg_known_answer_and_edges():
    # m=4: p*(4/rank) = 0.04, 0.04, 0.04, 0.8 -> step-up min from the top.
    assert benjamini_hochberg([0.01, 0.02, 0.03, 0.8]).tolist() == pytest.approx([0.04, 0.04, 0.04, 0.8])
    assert benjamini_hochberg([]).tolist() == []
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.1, 1.5])
    # scipy's false_discovery_control passes NaN through; a NaN p-value is a bug upstream here
    for bad in (float("nan"), float("inf"), -0.1):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            benjamini_hochberg([0.1, bad])
    with pytest.raises(ValueError, match="one-dimensional"):
        benjamini_hochberg([[0.1, 0.2]])
    assert benjamini_hochberg([0.3]).tolist() == [0.3]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_wilcoxon_p_value_equals_scipy(data):
    """The routed Wilcoxon p-value is scipy's, with Pratt's zero handling (14+ discordant pairs:
    scipy's normal approximation with its tie correction)."""
    _check_wilcoxon(data, data.draw(st.integers(min_value=0, max_value=66)), discordant=14)


@settings(max_examples=12, deadline=None)
@given(st.data())
def test_wilcoxon_p_value_equals_scipy_on_small_samples(data):
    """Up to 13 discordant pairs scipy enumerates every sign flip (slow, so few draws); the
    analysis computes that same distribution as Binomial(m, 1/2) and must agree exactly."""
    _check_wilcoxon(data, data.draw(st.integers(min_value=3, max_value=11)))


def _check_wilcoxon(data, n, discordant=0):
    signs = data.draw(st.lists(st.booleans(), min_size=discordant, max_size=discordant))
    source = np.array([float(s) for s in signs] + data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)))
    target = np.array([float(not s) for s in signs] + data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)))
    d = target - source
    result = paired_test(source, target)
    if np.all(d == 0):
        assert (result.test, result.pvalue) == ("none", 1.0)
        return
    assert result.test == "wilcoxon"
    # 0/1 scores: every non-zero |d| ties at 1, so scipy is handed the non-zero differences.
    oracle = stats.wilcoxon(d[d != 0], zero_method="pratt")
    assert result.pvalue == pytest.approx(oracle.pvalue, rel=1e-12, abs=1e-300)
    assert result.statistic == pytest.approx(oracle.statistic)


def test_few_discordant_pairs_get_the_exact_sign_test_p_value():
    """5 drops, no gains, 195 unchanged: the exact signed-rank null distribution with all |d|
    tied is the binomial, p = 2 / 2**5; the normal approximation on all 200 would say 0.025."""
    source = np.ones(200)
    target = np.r_[np.zeros(5), np.ones(195)]
    result = paired_test(source, target)
    assert result.pvalue == pytest.approx(stats.binomtest(0, 5).pvalue) == pytest.approx(0.0625)
    assert stats.wilcoxon(target, source, zero_method="pratt").pvalue < 0.03
    many = np.r_[np.zeros(15), np.ones(185)]
    gains = np.r_[np.ones(15), np.zeros(5), np.ones(180)]
    d = gains - many
    assert paired_test(many, gains).pvalue == pytest.approx(stats.wilcoxon(d[d != 0], zero_method="pratt").pvalue)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(unit, unit), min_size=14, max_size=80))
def test_routed_p_value_equals_the_scipy_test_it_names(pairs):
    """14+ pairs; smaller samples with ties run scipy's slow exhaustive permutations, so they
    are pinned by the small-sample tests instead."""
    source = np.array([p[0] for p in pairs])
    target = np.array([p[1] for p in pairs])
    result = paired_test(source, target)
    d = target - source
    d[np.abs(d) < TIE_TOLERANCE] = 0.0  # floating-point residue is a tie, not a change
    if result.test == "none":
        assert np.all(d == 0) and result.pvalue == 1.0
    elif result.test == "wilcoxon":
        if result.reason.startswith(("constant", "scores bimodal")):
            d = d[d != 0]
            if d.size <= 13:
                # scipy's exhaustive sign flips, which the small-sample oracle test pins to this.
                assert result.pvalue == pytest.approx(stats.binomtest(int(np.sum(d > 0)), d.size).pvalue)
                return
        assert result.pvalue == pytest.approx(stats.wilcoxon(d, zero_method="pratt").pvalue, rel=1e-12)
    else:
        assert result.test == "t-test"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # near-constant differences
            normality = stats.shapiro(target - source).pvalue
        assert result.normality_pvalue == pytest.approx(normality)
        assert result.normality_pvalue >= 0.05
        assert result.pvalue == pytest.approx(stats.ttest_rel(target, source).pvalue, rel=1e-12)


def test_floating_point_residue_is_a_tie_not_a_change():
    """A subnormal difference once reached scipy's Wilcoxon and came back as a NaN p-value."""
    source = np.zeros(14)
    target = source.copy()
    target[-1] = 5e-324
    result = paired_test(source, target)
    assert (result.test, result.pvalue) == ("none", 1.0)
    target[-1] = 0.1 + 0.2 - 0.3  # 5.6e-17
    assert paired_test(source, target).pvalue == 1.0


def test_small_continuous_sample_with_ties_equals_scipy():
    source = np.full(8, 0.9)
    target = source + np.array([0.0, 0.0, -0.01, -0.01, -0.01, -0.02, 0.02, -0.8])  # one outlier
    result = paired_test(source, target)
    assert result.test == "wilcoxon"
    assert result.pvalue == pytest.approx(stats.wilcoxon(target, source, zero_method="pratt").pvalue, rel=1e-12)


def test_normal_differences_take_the_paired_t_test():
    rng = np.random.default_rng(7)
    source = rng.uniform(0.3, 0.7, 60)
    target = source + rng.normal(-0.02, 0.05, 60)
    result = paired_test(source, target)
    assert result.test == "t-test" and "Shapiro-Wilk" in result.reason
    assert result.pvalue == pytest.approx(stats.ttest_rel(target, source).pvalue)


def test_skewed_differences_fall_back_to_wilcoxon():
    rng = np.random.default_rng(3)
    source = np.full(50, 0.9)
    target = source - rng.exponential(0.05, 50) ** 3
    result = paired_test(source, target)
    assert result.test == "wilcoxon" and result.reason.startswith("differences not normal")


def test_bimodal_scores_route_through_wilcoxon_without_shapiro():
    """Seed 001: "tool evaluators often produce scores at exactly 0 or 1 ... routes these through
    Wilcoxon signed-rank automatically"."""
    source = [1.0] * 20 + [0.0] * 5
    target = [1.0] * 14 + [0.0] * 11
    result = paired_test(source, target)
    assert (result.test, result.reason) == ("wilcoxon", "scores bimodal at exactly 0/1")
    assert result.normality_pvalue is None


def test_small_n_and_degenerate_differences_are_explicit():
    assert paired_test([1.0, 0.0], [0.0, 0.0]).pvalue is None
    assert "at least 3" in paired_test([1.0], [0.0]).reason
    assert paired_test([], []).test == "none"
    zero = paired_test([0.5, 0.7, 0.9], [0.5, 0.7, 0.9])
    assert (zero.test, zero.pvalue, zero.reason) == ("none", 1.0, "every difference is zero")
    constant = paired_test([0.9] * 8, [0.7] * 8)
    assert constant.test == "wilcoxon" and "constant" in constant.reason
    # Eight drops and nothing else: the exact signed-rank p-value is 2 / 2**8.
    assert constant.pvalue == pytest.approx(2 / 2**8)


def test_mismatched_or_non_finite_input_is_rejected():
    with pytest.raises(ValueError, match="pair up"):
        paired_test([1.0, 0.0, 1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        paired_test([1.0, float("nan"), 1.0], [1.0, 0.0, 1.0])


def test_clustered_standard_error_known_answer_and_singletons():
    d = np.array([1.0, 1.0, -1.0, -1.0])
    # Two clusters whose residual sums are +2 and -2: sqrt(2/1 * (4 + 4)) / 4 = 1.0.
    assert clustered_standard_error(d, ["a", "a", "b", "b"]) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    assert clustered_standard_error(x, list(range(40))) == pytest.approx(standard_error(x))


def test_shared_clusters_use_a_t_test_on_the_clustered_standard_error():
    """Miller 2024: examples drawn in clusters are not independent; the test uses G - 1 df."""
    source = [1.0] * 12
    target = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    clusters = ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"] * 3
    result = paired_test(source, target, clusters=clusters)
    d = np.array(target) - np.array(source)
    se = clustered_standard_error(d, clusters)
    assert result.test == "clustered t-test"
    assert result.pvalue == pytest.approx(2 * stats.t.sf(abs(d.mean() / se), df=3))
    assert paired_test(source, target, clusters=list(range(12))).test == "wilcoxon"


def test_clusters_that_do_not_widen_the_error_bars_keep_the_routed_test():
    """Pairs of examples share a cluster, but each pair holds one drop and one unchanged example:
    the clustered standard error is not wider, so the exact signed-rank p-value stands."""
    source = np.ones(200)
    target = np.ones(200)
    target[[0, 2, 4, 6, 8]] = 0.0
    clusters = [i // 2 for i in range(200)]
    d = target - source
    assert clustered_standard_error(d, clusters) <= standard_error(d)
    result = paired_test(source, target, clusters=clusters)
    assert (result.test, result.pvalue) == ("wilcoxon", pytest.approx(0.0625))


def test_bootstrap_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    source = rng.uniform(size=100)
    target = source - 0.1 + rng.normal(0, 0.1, 100)
    a = bootstrap_ci(source, target, rng=42)
    b = bootstrap_ci(source, target, rng=np.random.default_rng(42))
    assert a == b
    assert a.low < float(np.mean(target - source)) < a.high
    assert bootstrap_ci([1.0, 0.0], [0.0, 0.0], rng=0) is None
    assert bootstrap_ci([1.0] * 5, [0.0] * 5, rng=0).low == -1.0


def test_bootstrap_interval_covers_the_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(200):
        source = rng.uniform(size=80)
        target = source + rng.normal(-0.05, 0.2, 80)
        ci = bootstrap_ci(source, target, rng=rng, n_resamples=500)
        covered += ci.low <= -0.05 <= ci.high
    assert 0.88 <= covered / 200 <= 0.99


def test_cluster_bootstrap_is_wider_when_clusters_move_together():
    rng = np.random.default_rng(5)
    shift = np.repeat(rng.normal(0, 0.3, 10), 10)
    source = np.full(100, 0.8)
    target = source + shift + rng.normal(0, 0.02, 100)
    clusters = np.repeat(np.arange(10), 10).tolist()
    naive = bootstrap_ci(source, target, rng=0)
    clustered = bootstrap_ci(source, target, clusters=clusters, rng=0)
    assert clustered.high - clustered.low > 2 * (naive.high - naive.low)


def _bootstrap_in_one_matrix(source, target, clusters, *, n_resamples, seed):
    """The percentile bootstrap written plainly: every resample's units drawn in one matrix, float sums."""
    d = np.asarray(target, dtype=float) - np.asarray(source, dtype=float)
    if clusters is None:
        sums, counts = d, np.ones(d.size)
    else:
        _, codes = np.unique([str(c) for c in clusters], return_inverse=True)
        sums, counts = np.bincount(codes, weights=d), np.bincount(codes).astype(float)
    gen = np.random.default_rng(seed)
    idx = gen.integers(0, sums.size, size=(n_resamples, sums.size))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    tail = (1 - 0.95) / 2  # not quite 0.025 in floating point, as bootstrap_ci computes it
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


@pytest.mark.parametrize("scores", ["0/1", "continuous", "thirds"])
@pytest.mark.parametrize(("n", "cluster_size"), [(1201, None), (3, None), (1201, 7), (400, 150)])
def test_bootstrap_interval_is_exactly_the_plain_one_matrix_one(scores, n, cluster_size):
    # Chunking the index matrix, int32 indices and the small-integer sums of 0/1 scores are speed
    # only: the interval is the plain algorithm's to the last bit (analysis.json is pinned).
    rng = np.random.default_rng(n)
    if scores == "0/1":
        source, target = rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float)
    elif scores == "thirds":
        source, target = rng.integers(0, 4, n) / 3, rng.integers(0, 4, n) / 3
    else:
        source, target = rng.uniform(size=n), rng.uniform(size=n)
    clusters = None if cluster_size is None else [i // cluster_size for i in range(n)]
    ci = bootstrap_ci(source, target, clusters=clusters, n_resamples=450, rng=[7, n])
    assert (ci.low, ci.high) == _bootstrap_in_one_matrix(source, target, clusters, n_resamples=450,
                                                                  seed=[7, n])


def test_required_examples_known_answer():
    # sd 0.5, drop 0.05, alpha 0.05, 80% power: (2.8016 * 10) ** 2 = 784.9 -> 785.
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert required_examples(drop=0.05, difference_sd=0.5) == math.ceil((z * 0.5 / 0.05) ** 2)
    # Nothing moved (sd 0): the floor sqrt(d(1-d)) keeps the answer honest.
    assert required_examples(drop=0.05, difference_sd=0.0) == math.ceil(z**2 * 0.05 * 0.95 / 0.05**2)
    assert required_examples(drop=0.05, difference_sd=0.5, design_effect=2.0) > required_examples(drop=0.05, difference_sd=0.5)
    with pytest.raises(ValueError):
        required_examples(drop=0.0, difference_sd=0.5)
