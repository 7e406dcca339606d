"""Moment metrics: brute force on blocks, closed forms (b² of exact draws falls like 1/n),
truth from exact moments or a certified reference, resume state, and a CLI run recording
which truth it used."""

import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from ckam_bench.metrics.moments import MomentErrors
from ckam_bench.targets.base import CapabilityError, Target
from ckam_bench.targets.gaussians import Gaussian, gauss2d_corr
from ckam_bench.targets.logistic import LogisticRegression
from tests import clirun

COLUMNS = {"mean_error", "second_moment_error", "mean_norm", "mean_estimate", "bias2", "moments_discarded"}


def shifted_gaussian():
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
    return Gaussian(np.array([1.0, -2.0, 0.5]), cov, 3, name="shifted")


def test_brute_force_over_blocks():
    target = shifted_gaussian()
    metric = MomentErrors(target, discard=0)
    x = np.random.default_rng(0).normal(0.3, 1.7, (1000, 3))
    for block in np.array_split(x, [0, 10, 11, 500, 999]):  # includes empty blocks
        metric.update(block)
    out = metric.compute()
    assert set(out) == COLUMNS
    m, s = target.mean, target.variance + target.mean**2
    mh, sh = x.mean(0), (x**2).mean(0)
    assert out["mean_error"] == pytest.approx(np.sqrt(np.sum((mh - m) ** 2)), rel=1e-12)
    assert out["second_moment_error"] == pytest.approx(np.sqrt(np.sum((sh - s) ** 2)), rel=1e-12)
    assert out["mean_norm"] == pytest.approx(np.sqrt(np.sum(mh**2)), rel=1e-12)
    np.testing.assert_allclose(out["mean_estimate"], mh, rtol=1e-12)
    var, mu = target.variance, target.mean
    var2 = 2 * var**2 + 4 * mu**2 * var  # Var[X²] of a normal, closed form
    brute = max(max((mh[j] - m[j]) ** 2 / var[j], (sh[j] - s[j]) ** 2 / var2[j]) for j in range(3))
    assert out["bias2"] == pytest.approx(brute, rel=1e-8)  # E[X⁴] by quadrature of the marginals
    np.testing.assert_allclose(metric.var2, var2, rtol=1e-8)


def test_bias2_of_exact_draws_falls_like_one_over_n():
    target, rng, reps = shifted_gaussian(), np.random.default_rng(1), 200
    means = {}
    for n in (250, 4000):
        values = []
        for _ in range(reps):
            metric = MomentErrors(target, discard=0)
            metric.update(target.sample(n, rng))
            values.append(metric.compute()["bias2"])
        means[n] = np.mean(values)
    # n·E[b²] is the same for both n (a max of six χ²₁/n-like ratios: E ≈ 3/n here)
    assert means[250] / means[4000] == pytest.approx(16.0, rel=0.25)
    assert 1.0 < 4000 * means[4000] < 6.0


def test_state_dict_resumes_exactly():
    target = gauss2d_corr()
    x = target.sample(3000, np.random.default_rng(2))
    whole = MomentErrors(target)
    whole.update(x)
    first = MomentErrors(target)
    first.update(x[:1200])
    resumed = MomentErrors(target)  # the default discard: the grid sums resume too
    resumed.load_state_dict({k: np.array(v) for k, v in first.state_dict().items()})
    resumed.update(x[1200:])
    a, b = whole.compute(), resumed.compute()
    for key in COLUMNS - {"mean_estimate"}:
        assert a[key] == pytest.approx(b[key], rel=1e-12)


class DrawsOnly(Target):
    """Exact draws and moments, no marginals: E[X⁴] from exact draws."""
    name = "draws_only"

    def _log_density(self, x):
        return -0.5 * float(x @ x)

    def sample(self, n, rng):
        return rng.standard_normal((n, self.dim))

    mean = property(lambda self: np.zeros(self.dim))
    variance = property(lambda self: np.ones(self.dim))


def test_fourth_moment_from_exact_draws():
    metric = MomentErrors(DrawsOnly(3), exact_draws=100_000)
    assert metric.describe()["fourth_moment"] == "100000 exact draws"
    np.testing.assert_allclose(metric.var2, 2.0, rtol=0.05)  # Var[X²] = 2 for N(0, 1)


def test_empty_gives_nan():
    out = MomentErrors(gauss2d_corr()).compute()
    assert np.isnan(out["bias2"]) and np.all(np.isnan(out["mean_estimate"]))


class Unknown(Target):
    name = "unknown"

    def _log_density(self, x):
        return -0.5 * float(x @ x)


def test_no_truth_is_a_capability_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CKAM_BENCH_CACHE", str(tmp_path))
    with pytest.raises(CapabilityError, match="ckam-bench-reference"):
        MomentErrors(Unknown(2))


def test_truth_from_the_shipped_reference():
    target = LogisticRegression("ripley")
    metric = MomentErrors(target)
    info = metric.describe()
    assert info["discard"] == 0.1
    assert info["truth"] == "reference" and info["reference_id"] == target.reference_id()
    assert info["path"].endswith(".npz")
    metric.update(np.tile(metric.mean, (10, 1)))
    out = metric.compute()
    assert out["mean_error"] == pytest.approx(0.0, abs=1e-12) and out["bias2"] > 0
    assert MomentErrors(gauss2d_corr()).describe()["truth"] == "exact"


def test_run_records_the_reference_it_used(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "ckam_bench.commands.cli", "target=logistic_ripley", "sampler=rw",
           "sampler.step_size=0.3", "budget.seconds=0.5", f"hydra.run.dir={out}"]
    proc = clirun.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                      env={**os.environ, "HYDRA_FULL_ERROR": "0"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    status = json.loads((out / "status.json").read_text())
    used = status["metrics_info"]["moments"]
    assert used["truth"] == "reference" and used["reference_id"].startswith("logistic_ripley-")
    trace = pd.read_parquet(out / "trace.parquet")
    assert COLUMNS <= set(trace.columns)
    assert len(trace.mean_estimate.iloc[-1]) == 3 and trace.bias2.iloc[-1] < 1.0


@pytest.mark.parametrize("discard", [0.1, 0.25, 0.5, 37])
def test_discarded_warm_up_is_left_out_exactly(discard):
    """Brute force: the errors equal those of the samples after the first moments_discarded,
    which is the requested count, or for a fraction f the largest grid count ≤ f·n (between
    f/1.05 and f of the samples)."""
    target = shifted_gaussian()
    x = np.random.default_rng(3).normal(0.3, 1.7, (5000, 3))
    x[:300] += 40.0  # a transient far from the target
    metric = MomentErrors(target, discard=discard)
    for n_seen, block in zip(np.cumsum([7, 93, 1, 900, 1999, 2000]), np.split(x, [7, 100, 101, 1001, 3000])):
        metric.update(block)
        out = metric.compute()
        cut = int(out["moments_discarded"])
        limit = discard if isinstance(discard, int) else int(discard * n_seen)
        if isinstance(discard, int) and n_seen <= discard:  # nothing kept yet
            assert cut == n_seen and np.isnan(out["mean_error"])
            continue
        assert cut == limit if isinstance(discard, int) or limit < 21 else limit / 1.05 <= cut <= limit
        kept = x[cut:n_seen]
        mh = kept.mean(0)
        assert out["mean_error"] == pytest.approx(np.linalg.norm(mh - target.mean), rel=1e-10)
    plain = MomentErrors(target, discard=0)
    plain.update(x)
    assert plain.compute()["moments_discarded"] == 0
    if discard != 37:  # the transient (300 samples) is left out, and it mattered
        assert out["mean_error"] < 2.5 < 4.0 < plain.compute()["mean_error"]


def test_too_few_samples_for_a_count_gives_nan():
    metric = MomentErrors(gauss2d_corr(), discard=100)
    metric.update(np.zeros((60, 2)))
    out = metric.compute()
    assert np.isnan(out["mean_error"]) and out["moments_discarded"] == 60


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, True, "half"])
def test_bad_discard_is_rejected(bad):
    with pytest.raises(ValueError, match="discard"):
        MomentErrors(gauss2d_corr(), discard=bad)
