"""The adaptation rules against their closed forms."""

import math

import numpy as np

from ckam_bench.adaptation import dual_averaging, rmsprop, robbins_monro, welford


def test_dual_averaging_closed_form():
    step0, delta, a, gamma, t0, kappa = 0.3, 0.65, 0.4, 0.05, 10.0, 0.75
    state = dual_averaging.init(step0)
    mu = math.log(10 * step0)
    bar = 0.0
    for t in range(1, 50):
        step = dual_averaging.update(state, a, delta, gamma, t0, kappa)
        hbar = t * (delta - a) / (t + t0)  # (1/(t + t0)) Σ (δ − a_k)
        log_step = mu - math.sqrt(t) / gamma * hbar
        assert math.isclose(state[1], hbar, rel_tol=1e-12)
        assert math.isclose(math.log(step), log_step, rel_tol=1e-12)
        eta = t ** (-kappa)
        bar = eta * log_step + (1 - eta) * bar
        assert math.isclose(state[3], bar, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(dual_averaging.final(state), math.exp(bar), rel_tol=1e-12)


def test_dual_averaging_nan_counts_as_rejection():
    a, b = dual_averaging.init(0.1), dual_averaging.init(0.1)
    assert dual_averaging.update(a, math.nan, 0.8, 0.05, 10, 0.75) == dual_averaging.update(b, 0.0, 0.8, 0.05, 10, 0.75)


def test_robbins_monro_closed_form():
    log_s, alpha, target, scale, kappa = math.log(0.2), 0.9, 0.574, 0.7, 0.6
    for t in range(30):
        log_s = robbins_monro.update(log_s, t, alpha, target, scale, kappa)
    expected = math.log(0.2) + (alpha - target) * sum(scale * (1 + k) ** (-kappa) for k in range(30))
    assert math.isclose(log_s, expected, rel_tol=1e-12)


def test_rmsprop_closed_form():
    theta, moment, g = np.zeros(3), np.zeros(3), np.array([1.0, -2.0, 0.0])
    expected = np.zeros(3)
    for k in range(1, 6):
        rmsprop.step(theta, moment, g, 0.01, 0.9)
        G = (1 - 0.9**k) * g**2  # Σ 0.1·0.9^j g² over j < k
        np.testing.assert_allclose(moment, G, rtol=1e-13)
        expected += 0.01 / (1 + np.sqrt(G)) * g
        np.testing.assert_allclose(theta, expected, rtol=1e-13)


def test_welford_matches_numpy():
    x = np.random.default_rng(0).standard_normal((57, 4)) * [1, 2, 3, 4] + 5
    state = welford.init(4)
    for row in x:
        welford.update(state, row)
    out = np.empty(4)
    welford.variance_into(state, out)
    np.testing.assert_allclose(out, x.var(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(state[1:5], x.mean(axis=0), rtol=1e-12)
    welford.regularised_variance_into(state, out)
    n = 57
    np.testing.assert_allclose(out, n / (n + 5) * x.var(axis=0, ddof=1) + 1e-3 * 5 / (n + 5), rtol=1e-12)
    welford.reset(state)
    assert not state.any()


def test_stan_warmup_windows():
    # Stan's windowed_adaptation: 1000 warm-up → metric updates after iterations 100, 150, 250, 450, 950
    np.testing.assert_array_equal(welford.window_ends(1000), [99, 149, 249, 449, 949])
    np.testing.assert_array_equal(welford.window_ends(500), [99, 149, 249, 449])
    np.testing.assert_array_equal(welford.window_ends(150), [99])
    # too short for 75 + 25 + 50: 15 % / 75 % / 10 % (init 15, base 75, term 10)
    np.testing.assert_array_equal(welford.window_ends(100), [89])
    assert welford.slow_window_start(100) == 15 and welford.slow_window_start(500) == 75
    assert welford.window_ends(10).size == 0


def test_paper_am_rate_schedule():
    """Titsias & Dellaportas's AM rate 0.001/(1 + t/4000) during burn-in, then 0."""
    import pytest

    from ckam_bench.schedules import HyperbolicDecay

    rate = HyperbolicDecay(scale=0.001, horizon=4000.0, until=20000)
    assert rate(0) == 0.001 and math.isclose(rate(4000), 0.0005) and math.isclose(rate(19999), 0.001 / (1 + 19999 / 4000))
    assert rate(20000) == 0.0 and HyperbolicDecay()(10**6) > 0
    assert rate.finite and not HyperbolicDecay().finite and HyperbolicDecay().diminishing
    with pytest.raises(ValueError, match="^horizon must be"):
        HyperbolicDecay(horizon=0)
