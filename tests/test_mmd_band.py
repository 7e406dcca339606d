"""MMD² made informative (issue 43 §6.5): a kernel scaled to the target, the estimator equal to
a brute-force O(n²) sum, a noise band that holds exact draws at its stated rate and leaves a
wrong distribution far outside, and the band drawn on the report's MMD² figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from ckam_bench.metrics import mmd as mmd_module
from ckam_bench.metrics.buffer import ThinningBuffer
from ckam_bench.metrics.mmd import MMD, evenly_spaced
from ckam_bench.reference_lookup import Reference
from ckam_bench.report import aggregate as agg
from ckam_bench.report import generic, mmd_band
from ckam_bench.report.drawing import Settings
from ckam_bench.targets.gaussians import gauss2d_corr
from ckam_bench.targets.mixtures import bimodal
from tests.test_report import make_run


def _brute_force(x, y, k) -> float:
    n, m = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    yy = sum(k(y[i], y[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    xy = sum(k(a, b) for a in x for b in y) / (n * m)
    return xx + yy - 2 * xy


@pytest.mark.parametrize("kernel", ["gaussian", "polynomial"])
@pytest.mark.parametrize("block", [mmd_module.BLOCK, 7])  # one block, and many small ones
def test_the_metric_equals_a_brute_force_sum(monkeypatch, kernel, block):
    monkeypatch.setattr(mmd_module, "BLOCK", block)
    target = gauss2d_corr()
    metric = MMD(target, kernel=kernel, max_points=30, reference_points=25, seed=3)
    buffer = ThinningBuffer(100, target.dim)
    buffer.extend(target.sample(80, np.random.default_rng(1)) + 0.3)
    x = evenly_spaced(buffer.data, 30)
    ell = metric.bandwidth
    k = {"gaussian": lambda a, b: math.exp(-float(np.sum((a - b) ** 2)) / (2 * ell * ell)),
         "polynomial": lambda a, b: (1.0 + float(a @ b)) ** 3}[kernel]
    expected = _brute_force(x, metric.reference, k)
    assert metric.compute(buffer)["mmd2"] == pytest.approx(expected, rel=1e-10, abs=1e-13)
    assert mmd_module.mmd2_unbiased(x, metric.reference, kernel, ell) == pytest.approx(
        expected, rel=1e-10, abs=1e-13)
    if kernel == "gaussian":  # the median heuristic on the reference points
        ref = metric.reference
        dist = [np.linalg.norm(a - b) for i, a in enumerate(ref) for b in ref[i + 1:]]
        assert ell == pytest.approx(np.median(dist))


def test_exact_draws_fall_inside_the_band_at_its_stated_rate():
    """Over 400 independent references and bands (and fresh exact draws each time), n exact
    draws fall inside the band's range of 39 sets with probability 38/40 = 95 %: the observed
    rate is within 3.5 binomial standard errors."""
    target = gauss2d_corr()
    inside, trials = 0, 400
    for trial in range(trials):
        metric = MMD(target, max_points=20, reference_points=40, seed=1000 + trial)
        band = metric.noise_band(20)
        assert band.level == pytest.approx(0.95) and len(band.values) == 39
        x = target.sample(20, np.random.default_rng([7, trial]))
        inside += band.lo <= metric.estimate(x) <= band.hi
    se = math.sqrt(0.95 * 0.05 / trials)
    assert abs(inside / trials - 0.95) < 3.5 * se, inside


def test_a_wrong_distribution_is_far_outside_the_band():
    target = bimodal()
    metric = MMD(target, max_points=300, reference_points=600)
    band = metric.noise_band(300)
    width = band.hi - band.lo
    rng = np.random.default_rng(4)
    x = target.sample(4000, rng)
    one_mode = x[x[:, 0] > 0][:300]  # half the mass missing
    too_narrow = target.sample(300, rng) * 0.7  # the spread shrunk by 30 %
    assert metric.estimate(one_mode) > band.hi + 20 * width
    assert metric.estimate(too_narrow) > band.hi + width
    assert band.lo <= metric.estimate(target.sample(300, rng)) <= band.hi + width


def test_without_exact_draws_the_band_uses_held_out_reference_rows(monkeypatch):
    target = gauss2d_corr()
    rows = target.sample(1000, np.random.default_rng(5))
    reference = Reference(samples=rows, chain=np.zeros(1000, int), mean=np.zeros(2),
                          second_moment=np.ones(2), variance=np.ones(2), fourth_moment=3 * np.ones(2),
                          mcse_mean=np.zeros(2), certificate={}, path=None)
    monkeypatch.setattr(type(target), "has_exact_sampler", property(lambda self: False))
    monkeypatch.setattr("ckam_bench.reference_lookup.load_reference", lambda t: reference)
    monkeypatch.setattr(Reference, "describe", lambda self: {"reference_id": "test"})
    metric = MMD(target, max_points=200, reference_points=800)
    assert len(metric.reference) == 500 and len(metric.held_out) == 500  # at most half
    together = np.concatenate([metric.reference, metric.held_out])
    assert len(np.unique(together, axis=0)) == 1000  # disjoint, every row used
    band = metric.noise_band(200)
    assert band.source.startswith("held-out reference rows") and band.lo < band.hi
    with pytest.raises(ValueError, match="fewer than 2 × 251"):
        MMD(target, max_points=251, reference_points=800).noise_band(251)


# ---------------------------------------------------------------------------- the figure
SETTINGS = {"_target_": "ckam_bench.metrics.mmd.MMD", "kernel": "gaussian", "max_points": 200,
            "reference_points": 400}


def _mmd_run(root, sampler, seed, samples, settings=SETTINGS):
    """A stored bimodal run whose trace's MMD² is measured as the runner would measure it."""
    metric = MMD(bimodal(), **{k: v for k, v in settings.items() if k != "_target_"})
    value = metric.estimate(evenly_spaced(samples, metric.max_points))
    info = json.loads(json.dumps(metric.describe()))
    path = make_run(root, "bimodal", sampler, seed=seed, samples=samples,
                    columns={"mmd2": np.full(10, value)},
                    status_extra={"metrics_info": {"mmd": info}})
    config = OmegaConf.load(path / ".hydra" / "config.yaml")
    config.metrics = {"mmd": dict(settings)}
    OmegaConf.save(config, path / ".hydra" / "config.yaml")
    return value


def _mmd_figure(results):
    (drawn,) = [d for d in generic.metric_figures(results, Settings(), "bimodal")
                if d.stem == "bimodal_metric_mmd2"]
    return drawn


def test_the_report_draws_the_noise_band_of_the_runs_reference(tmp_path):
    target = bimodal()
    rng = np.random.default_rng(8)
    good = [_mmd_run(tmp_path, "rw", s, target.sample(500, rng)) for s in (0, 1)]
    draws = target.sample(3000, rng)
    bad = [_mmd_run(tmp_path, "am", s, draws[draws[:, 0] > 0][s * 500:(s + 1) * 500]) for s in (0, 1)]
    results = agg.load_results(tmp_path)
    band, why = mmd_band.noise_band(results.runs, "mmd2")
    assert why == "" and band.n == 200
    assert band.lo == MMD(target, kernel="gaussian", max_points=200, reference_points=400).noise_band(200).lo
    assert all(band.lo - (band.hi - band.lo) <= v <= band.hi + (band.hi - band.lo) for v in good)
    assert all(v > band.hi + 10 * (band.hi - band.lo) for v in bad)
    drawn = _mmd_figure(results)
    assert f"The grey band is the noise band, MMD² from {band.lo:.2g} to {band.hi:.2g}:" in drawn.caption
    assert "39 sets of 200 exact draws" in drawn.caption and "95%" in drawn.caption
    for ax in drawn.figure.axes:  # the band, a span behind the curves, on every panel
        assert any(p.get_zorder() == 0 for p in ax.patches)


def test_no_band_when_the_runs_disagree_and_the_caption_says_why(tmp_path):
    target = bimodal()
    rng = np.random.default_rng(9)
    _mmd_run(tmp_path, "rw", 0, target.sample(300, rng))
    _mmd_run(tmp_path, "rw", 1, target.sample(300, rng), {**SETTINGS, "reference_points": 300})
    drawn = _mmd_figure(agg.load_results(tmp_path))
    assert "No noise band: the runs measured MMD² with different settings." in drawn.caption
    for ax in drawn.figure.axes:
        assert not any(p.get_zorder() == 0 for p in ax.patches)


def test_the_default_config_uses_the_scaled_kernel():
    cfg = OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "metrics" / "default.yaml")
    assert cfg.mmd.kernel == "gaussian" and cfg.mmd.reference_points >= 2 * cfg.mmd.max_points
