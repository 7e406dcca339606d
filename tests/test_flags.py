"""A sampler that goes wrong says so: the audit's stuck gadMALA run, end to end.

The audit ran the samplers on a regression nobody here wrote, with uncentred predictors
(coefficients correlated at -0.99), from the origin: gadmala_fast proposed a non-finite point at
every iteration, accepted none, the run ended "complete (budget)" and the ranking showed it with
MCSE 0. :class:`PoissonRegression` rebuilds that situation: a log-link Poisson regression on an
uncentred predictor (x ~ 50 ± 7), whose gradient at the origin sends every MALA proposal to a
linear predictor of thousands, where exp overflows and log π = -inf. It is a plain Python target
with no compiled density (a plugin's target), so it also checks that the provenance says which
loops ran. Checked: the runner's flags in status.json, the end-of-run line, ckam-bench-figures'
output, the HTML report and the ranking (no MCSE or ESS that looks good)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from ckam_bench import jit
from ckam_bench.engine import store
from ckam_bench.commands.cli import summary
from ckam_bench.metrics.ess import BulkESS
from ckam_bench.metrics.moments import MomentErrors
from ckam_bench.report import aggregate, ranking
from ckam_bench.report.cli import main as figures_main
from ckam_bench.engine.runner import Budget, Runner, checkpoint_times
from ckam_bench.samplers.gradient_adaptive import GadMALAFast
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.targets.base import Target
from ckam_bench.targets.gaussians import gauss2d_corr


class PoissonRegression(Target):
    """y_i ~ Poisson(exp(a + b x_i)), x_i ~ N(50, 7²) (uncentred), flat prior on (a, b)."""

    name = "poisson_uncentred"

    def __init__(self, n: int = 200, seed: int = 0):
        super().__init__(2)
        rng = np.random.default_rng(seed)
        self.x = rng.normal(50.0, 7.0, n)
        self.y = rng.poisson(np.exp(-1.0 + 0.04 * self.x)).astype(float)

    def _eta(self, theta):
        return theta[0] + theta[1] * self.x

    def _log_density(self, theta):
        with np.errstate(over="ignore", invalid="ignore"):
            eta = self._eta(theta)
            return float(np.sum(self.y * eta - np.exp(eta)))

    def _grad_log_density(self, theta):
        with np.errstate(over="ignore", invalid="ignore"):
            r = self.y - np.exp(self._eta(theta))
            return np.array([r.sum(), r @ self.x])


def test_the_regression_is_the_audits():
    target = PoissonRegression()
    lam = np.exp(target._eta(np.array([-1.0, 0.04])))
    X = np.column_stack([np.ones_like(target.x), target.x])
    hess = X.T @ (lam[:, None] * X)
    cov = np.linalg.inv(hess)
    assert cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1]) < -0.98
    g = target._grad_log_density(np.zeros(2))
    step = GadMALAFast().init_scale ** 2 / 2 / 2 * g  # ½ L Lᵀ ∇log π(0) with L₀ = 0.1/√2 I
    assert not math.isfinite(target._log_density(step))


def run_one(root, seed, sampler, target=None, iterations=3000, metrics=None):
    target = target or PoissonRegression()
    labels = {"run_id": f"{sampler.name}{seed}", "target": target.name, "sampler": sampler.name,
              "kernel": "none", "seed": seed}
    folder = root / f"{sampler.name}_{seed}"
    budget = Budget(600.0, max_iterations=iterations)
    metrics = {"ess": BulkESS(target), **(metrics or {})}
    runner = Runner(sampler, target, metrics, budget, folder,
                    np.random.default_rng(seed), labels, progress=False,
                    checkpoints=checkpoint_times(iterations, first=100, per_decade=4,
                                                 unit="iterations"),
                    checkpoint_unit="iterations")
    status = runner.run()
    status["metrics_info"] = {name: m.describe() for name, m in metrics.items() if hasattr(m, "describe")}
    (folder / store.STATUS).write_text(json.dumps(status, default=str))  # as the CLI stores it
    return status, folder


@pytest.fixture(scope="module")
def stuck_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("flags")
    out = {}
    for seed in (0, 1):  # burn-in too short for L to shrink enough: stuck afterwards
        out[("gadmala_fast", seed)] = run_one(root, seed, GadMALAFast(burn_in=20))
        out[("rw", seed)] = run_one(root, seed, RandomWalk(step_size=0.002))
    return root, out


def test_status_and_end_line_flag_the_stuck_run(stuck_runs):
    root, runs = stuck_runs
    status, folder = runs[("gadmala_fast", 0)]
    assert status["state"] == "complete" and status["reason"] == "max_iterations"
    assert status["flags"] == ["stuck", "nonfinite_proposals"]
    assert "no move accepted in the last 3000 of 3000 iterations" in status["flag_notes"]["stuck"]
    stored = json.loads((folder / store.STATUS).read_text())
    assert stored["flags"] == status["flags"] and stored["flag_notes"] == status["flag_notes"]
    line = summary(status, str(folder), {})
    first = line.splitlines()[0]
    assert first.startswith("complete (max_iterations) FLAGGED stuck, nonfinite_proposals: gadmala_fast")
    assert "\n  FLAGGED stuck: no move accepted" in line
    assert "\n  FLAGGED nonfinite_proposals: every proposal of the last 3000 iterations" in line
    healthy, _ = runs[("rw", 0)]
    assert healthy["flags"] == [] and healthy["flag_notes"] == {}
    assert "FLAGGED" not in summary(healthy, "x", {})


def test_python_loops_are_what_the_provenance_says(stuck_runs, tmp_path):
    _, runs = stuck_runs
    status, _ = runs[("gadmala_fast", 0)]
    assert status["provenance"]["loops"] == "python"  # the target has no compiled density
    assert "target 'poisson_uncentred' has no compiled density" in status["provenance"]["loops_note"]
    compiled, _ = run_one(tmp_path, 0, GadMALAFast(burn_in=20), target=gauss2d_corr(), iterations=200)
    assert compiled["provenance"]["loops"] == ("compiled" if jit.enabled() else "python")


def test_ranking_html_and_figures_show_the_flag(stuck_runs, tmp_path, capsys):
    root, runs = stuck_runs
    results = aggregate.load_results(root)
    table = ranking.ranking_table(results, "poisson_uncentred")
    rows = {row[1].split(" ")[0]: dict(zip(table.header, row)) for row in table.rows}
    gad = rows["gadmala_fast"]
    assert "⚠ stuck, nonfinite_proposals (2/2 seeds)" in gad["sampler"]
    assert gad["MCSE"] == "∞" and gad["min ESS/s"] == "0"
    assert gad["rank"] == "2" and rows["rw"]["rank"] == "1"
    assert any("flagged by the runner" in note and "gadmala_fast seed 0: stuck" in note
               for note in table.notes)
    out = tmp_path / "out"
    assert figures_main([str(root), "--out", str(out), "--figures", "none", "--generic", "none"]) == 0
    printed = capsys.readouterr().out
    assert f"FLAGGED {runs[('gadmala_fast', 0)][1]}: stuck: no move accepted" in printed
    page = (out / "report.html").read_text()
    assert "These runs went wrong" in page and "⚠ stuck: no move accepted" in page
    assert "⚠ stuck, nonfinite_proposals (2/2 seeds)" in page
    assert "⚠ stuck" in (out / "ranking_poisson_uncentred.md").read_text()
    results_md = (out / "results_poisson_uncentred.md").read_text()
    assert "| gadmala_fast ⚠ stuck, nonfinite_proposals (2/2 seeds) | N/A | 0 ± 0 |" in results_md


def test_report_states_the_discarded_warm_up(tmp_path):
    """The moment errors leave out metrics.moments.discard of the samples; the ranking says so."""
    target = gauss2d_corr()
    for seed in (0, 1):
        status, folder = run_one(tmp_path, seed, RandomWalk(step_size=0.5), target=target,
                                 iterations=4000, metrics={"moments": MomentErrors(target)})
        assert status["metrics_info"]["moments"]["discard"] == 0.1
    trace = pd.read_parquet(folder / store.TRACE)
    last = trace.iloc[-1]
    assert 0.1 * 4000 / 1.05 <= last["moments_discarded"] <= 0.1 * 4000
    table = ranking.ranking_table(aggregate.load_results(tmp_path), target.name)
    note = next(n for n in table.notes if "leave out the warm-up" in n)
    assert "metrics.moments.discard: 0.1 of the collected samples" in note
    assert f"{last['moments_discarded']:.0f}" in note.replace(",", "")


class _Drifting(RandomWalk):
    """A broken sampler: from iteration 500 its state's log density is NaN."""

    name = "drifting"

    def advance(self, state, n):
        state, block = super().advance(state, n)
        if state.t >= 500:
            state.logp = math.nan
        return state, block


def test_a_nonfinite_state_is_flagged(tmp_path):
    status, _ = run_one(tmp_path, 0, _Drifting(step_size=0.5), target=gauss2d_corr(), iterations=2000)
    assert status["flags"] == ["stuck", "nonfinite_state"]  # log r = NaN rejects every move
    assert "not finite after iteration" in status["flag_notes"]["nonfinite_state"]
    assert "FLAGGED nonfinite_state" in summary(status, "x", {})
