"""Issue 30 §2: the model's variables, by name — to_datatree, the per-variable posterior table,
marginal and pair figures under the model's names, and a report of a PyMC sweep whose model
file is gone."""

import os
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from ckam_bench.engine import rundir, store
from ckam_bench.interop import named_variables, to_datatree
from ckam_bench.report import aggregate as agg
from ckam_bench.report import generic, posterior
from ckam_bench.report.ranking import Order, ranking_table
from ckam_bench.report.drawing import Settings
from tests.test_report import make_run
from tests import clirun

NAMES = ["mu", "theta[0]", "theta[1]", "L[0,0]", "L[0,1]", "L[1,0]", "L[1,1]"]


def _named(path, shift=0.0):
    """Add the model's variables (constrained, named as the PyMC target stores them)."""
    frame = pd.read_parquet(path / store.SAMPLES)
    x = frame[["x0", "x1"]].to_numpy()
    frame["mu"] = x[:, 0] + shift
    frame["theta[0]"], frame["theta[1]"] = np.exp(x[:, 0]), np.exp(x[:, 1])
    for name in NAMES[3:]:
        frame[name] = x[:, 1] * (1 + NAMES.index(name))
    rundir.write_parquet(frame, path / store.SAMPLES)
    return path


def test_named_variables_are_parsed_with_their_shapes():
    frame = pd.DataFrame(columns=["index", "x0", "x1", *NAMES])
    found = named_variables(frame)
    assert list(found) == ["mu", "theta", "L"]
    assert found["mu"] == ((), ["mu"])
    assert found["theta"] == ((2,), ["theta[0]", "theta[1]"])
    assert found["L"] == ((2, 2), ["L[0,0]", "L[0,1]", "L[1,0]", "L[1,1]"])
    assert named_variables(pd.DataFrame(columns=["index", "x0", "x1"])) == {}


def test_to_datatree_has_one_variable_per_model_variable(tmp_path):
    for seed in (0, 1):
        _named(make_run(tmp_path, "gmm2d", "rw", seed=seed))
    dt = to_datatree(tmp_path)
    post = dt.posterior
    assert post["theta"].dims == ("chain", "draw", "theta_dim_0")
    assert post["L"].dims == ("chain", "draw", "L_dim_0", "L_dim_1")
    assert post["mu"].dims == ("chain", "draw")
    np.testing.assert_allclose(post["theta"].values, np.exp(post["x"].values))
    np.testing.assert_allclose(post["L"].values[..., 1, 0], 6 * post["x"].values[..., 1])
    assert post.attrs["model_variables"] == ["mu", "theta", "L"]


def test_posterior_table_per_variable_one_block_per_sampler(tmp_path, monkeypatch):
    for seed in (0, 1, 2):
        _named(make_run(tmp_path, "gmm2d", "rw", seed=seed))
        _named(make_run(tmp_path, "gmm2d", "ckam", seed=seed), shift=5.0)
    results = agg.load_results(tmp_path)
    draws = np.concatenate([r.samples()["mu"].to_numpy() for r in results.select(sampler="rw")])
    monkeypatch.setattr(posterior, "reference_draws", lambda group: {"mu": draws})
    monkeypatch.setattr(posterior, "_suite", lambda group: "model")
    table = posterior.posterior_table(results, "gmm2d")
    assert table.header[:9] == ["sampler", "variable", "mean", "sd", "5 %", "95 %",
                                "ESS bulk", "ESS tail", "R-hat"]
    assert [r[1] for r in table.rows] == NAMES * 2
    first, second = (g.label for g in Order(results.groups("gmm2d")).ordered)  # the ranking's order
    assert [r[0] for r in table.rows] == [first] * 7 + [second] * 7
    rows = {(r[0], r[1]): dict(zip(table.header, r)) for r in table.rows}
    assert float(rows["rw", "mu"]["reference mean"]) == pytest.approx(draws.mean(), rel=1e-2)
    assert abs(float(rows["ckam", "mu"]["z"])) > 10 and abs(float(rows["rw", "mu"]["z"])) < 0.01
    assert rows["rw", "theta[0]"]["z"] == ""  # no reference for it
    assert 0.9 < float(rows["rw", "mu"]["R-hat"]) < 1.1
    assert any("constrained scale" in n for n in table.notes)


def test_posterior_table_without_a_reference_has_no_reference_columns(tmp_path):
    """A user's model (no reference anywhere): no empty reference columns; the blocks in the
    order of the ranking, so the ranking's first row is the first block (rank_by honoured)."""
    for seed in (0, 1):
        _named(make_run(tmp_path, "gmm2d", "rw", seed=seed, kl_scale=3.0))
        _named(make_run(tmp_path, "gmm2d", "ckam", seed=seed, kl_scale=0.5), shift=5.0)
    results = agg.load_results(tmp_path)
    table = posterior.posterior_table(results, "gmm2d")
    assert table.header == ["sampler", "variable", "mean", "sd", "5 %", "95 %", "ESS bulk",
                            "ESS tail", "R-hat"]
    assert all(len(row) == len(table.header) for row in table.rows)
    for rank_by in (None, "ess_per_second"):
        ranked = [row[1] for row in ranking_table(results, "gmm2d", rank_by=rank_by).rows]
        blocks = list(dict.fromkeys(row[0] for row in
                                    posterior.posterior_table(results, "gmm2d", rank_by).rows))
        assert blocks == [r.split(" ")[0] for r in ranked], (rank_by, ranked)


def test_marginal_and_pair_figures_use_the_models_names(tmp_path):
    for seed in (0, 1):
        _named(make_run(tmp_path, "gmm2d", "rw", seed=seed))
    results = agg.load_results(tmp_path)
    drawn = generic.marginal_figures(results, Settings(), "gmm2d")
    labels = [ax.get_xlabel() for ax in drawn[0].figure.axes if ax.get_visible()]
    assert labels == NAMES and "mu–L[1,1]" in drawn[0].title
    assert "constrained scale" in drawn[0].caption
    (pairs,) = generic.pair_figures(results, Settings(), "gmm2d")
    labels = {ax.get_xlabel() for ax in pairs.figure.axes}
    assert "mu" in labels and not any(label.startswith("x") for label in labels)


@pytest.mark.slow
def test_pymc_sweep_report_names_the_models_variables_without_the_model(tmp_path):
    """A PyMC sweep, then its model file removed: ckam-bench-figures renders every run, the
    posterior table and the figures under the model's names."""
    pytest.importorskip("pymc")
    model = tmp_path / "my_models.py"
    model.write_text(textwrap.dedent("""
        import numpy as np
        import pymc as pm

        def hier():
            with pm.Model() as m:
                mu_a = pm.Normal("mu_a", 0.0, 1.0)
                sigma_a = pm.HalfNormal("sigma_a", 1.0)
                a = pm.Normal("a", mu_a, sigma_a, shape=3)
                pm.Normal("y", a, 1.0, observed=np.array([0.5, -0.2, 1.0]))
            return m
    """))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    sweep = tmp_path / "sweep"
    proc = clirun.run([sys.executable, "-m", "ckam_bench.commands.cli", "-m", "sampler=rw,nuts",
                           "target=pymc", f"target.model={model}:hier", "seed=0,1",
                           "budget.seconds=0.5", "progress=false", f"hydra.sweep.dir={sweep}"],
                      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    model.unlink()  # another machine: the model is nowhere
    proc = clirun.run([sys.executable, "-m", "ckam_bench.report.cli", str(sweep), "--out",
                           str(tmp_path / "out"), "--figures", "none",
                           "--generic", "marginals,pairs"],
                      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "skipped" not in proc.stdout, proc.stdout
    table = next((tmp_path / "out").glob("posterior_*.md")).read_text()
    for name in ("mu_a", "sigma_a", "a[2]"):
        assert f"| {name} |" in table
    page = (tmp_path / "out" / "report.html").read_text()
    assert "marginals mu_a" in page and "Posterior on pymc_my_models_hier" in page
    _first_screen_ranks_and_names((tmp_path / "out" / "report.html"), ["mu_a", "sigma_a"])


def _first_screen_ranks_and_names(report, variables):
    """Issue 30's 'done when', in Chromium at 1280 x 900: the first screen holds the targets
    line naming the model's variables, the ranking's title and first row, and the key that
    ranked it, stated and not censored (no '≤')."""
    from playwright.sync_api import sync_playwright

    from tests.test_report_html import CHROMIUM, FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri(), wait_until="load")
        seen = page.evaluate("""() => {
            const inView = e => { const r = e.getBoundingClientRect();
                                  return r.top >= 0 && r.bottom <= window.innerHeight; };
            const t = document.querySelector('table[id^=ranking_]');
            const row = t.tBodies[0].rows[0];
            const heads = [...t.tHead.rows[0].cells].map(c => c.textContent);
            const visible = [...document.querySelectorAll('p, div, li, span')]
                .filter(inView).map(e => e.textContent).join(' ');
            return {row: inView(row), title: inView(t.closest('.scroll').previousElementSibling),
                    decided: row.cells[heads.indexOf('decided by')].textContent,
                    cells: [...row.cells].map(c => c.textContent), visible: visible};
        }""")
        browser.close()
    assert seen["row"] and seen["title"], seen
    assert seen["decided"] and "≤" not in "".join(seen["cells"]), seen["cells"]
    assert "ranked on " in seen["visible"], seen["visible"][:2000]
    for name in variables:
        assert name in seen["visible"], (name, seen["visible"][:2000])
