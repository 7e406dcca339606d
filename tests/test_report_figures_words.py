"""The generic metric figures as a reader needs them (issue 30 §3): accuracy against cost
first (b², KL, ESS against seconds, density and gradient evaluations), the diagnostics after
them in one figure; titles, captions and labels in words, never raw column names; a panel with
no data is left out; a figure's title is never clipped."""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib.figure import Figure

from ckam_bench.report import aggregate as agg
from ckam_bench.report import drawing, generic, sections, words
from tests.test_report import make_run

NUTS = {"_target_": "ckam_bench.samplers.nuts.NUTS", "target_accept": 0.8}
OWN = {  # columns as the runner and metrics write them, and a sampler's own ones
    "bias2": np.geomspace(1.0, 0.001, 10), "ess_min_stored": np.linspace(10, 90, 10),
    "moments_discarded": np.arange(10) * 100.0, "acceptance_warmup": np.full(10, 0.5),
    "swap_rate_mean": np.full(10, 0.2), "n_restarts": np.arange(10.0),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("words")
    for seed in (0, 1):
        for sampler in ("rw", "am"):
            make_run(root, "banana", sampler, seed=seed, n_samples=100, n_diag=100,
                     columns=OWN)
    return agg.load_results(root)


@pytest.fixture(scope="module")
def with_gradients(tmp_path_factory):
    """rw (no gradients) and nuts (gradients): only nuts has ESS per gradient."""
    root = tmp_path_factory.mktemp("gradients")
    for seed in (0, 1):
        make_run(root, "banana", "rw", seed=seed, n_samples=100, n_diag=100,
                 columns={"ess_per_grad": np.full(10, np.nan)})
        grads = (1000 * np.geomspace(0.05, 2.0, 10) * 5).astype(int)
        make_run(root, "banana", "nuts", seed=seed, n_samples=100, n_diag=100,
                 sampler_node=NUTS, columns={"n_grad": grads,
                                             "ess_per_grad": np.full(10, 0.01)})
    return agg.load_results(root)


def _texts(drawn) -> list[str]:
    """Every text a reader sees of a drawn figure: title, caption, figure and axes titles,
    axis labels."""
    fig = drawn.figure
    out = [drawn.title, drawn.caption]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
    return out


def test_accuracy_first_in_words_then_one_diagnostics_figure(results):
    drawn = generic.metric_figures(results, drawing.Settings(), "banana")
    stems = [d.stem for d in drawn]
    assert stems[:3] == ["banana_metric_bias2", "banana_metric_kl", "banana_metric_ess_min"]
    assert stems[-1] == "banana_metric_diagnostics"
    assert {d.section for d in drawn[:-1]} == {sections.ACCURACY}
    assert drawn[-1].section == sections.DIAGNOSTICS
    # accuracy against what it cost: seconds and density evaluations (rw and am use no
    # gradients: that panel would be empty and is left out)
    assert [ax.get_xlabel() for ax in drawn[0].figure.axes] == [
        "sampler time (s)", "density evaluations"]
    raw = set(generic.metric_columns(results.groups("banana")[0].trace()))
    assert {"ess_min_stored", "moments_discarded", "swap_rate_mean"} <= raw
    raw = {name for name in raw if "_" in name or any(c.isdigit() for c in name)}  # not words
    pattern = re.compile(r"\b(" + "|".join(sorted(raw, key=len, reverse=True)) + r")\b")
    for item in drawn:
        for text in _texts(item):
            assert not pattern.search(text), (item.stem, text)
    panel_titles = [ax.get_title() for ax in drawn[-1].figure.axes if ax.get_visible()]
    for column in ("acceptance", "ess_min_stored", "moments_discarded", "acceptance_warmup",
                   "swap_rate_mean", "n_restarts"):
        assert words.title(column) in panel_titles, column
    assert "acceptance rate, warmup phase" in panel_titles
    assert "restarts so far" in panel_titles
    assert drawn[0].figure._suptitle.get_text().startswith("b², ")  # a symbol stays as is
    assert drawn[1].figure._suptitle.get_text() == "Symmetric KL divergence to the target on banana"


def test_every_drawn_panel_holds_data(results, with_gradients):
    for res in (results, with_gradients):
        for item in generic.metric_figures(res, drawing.Settings(), "banana"):
            for ax in item.figure.axes:
                if ax.get_visible():
                    assert ax.get_lines(), (item.stem, ax.get_title(), ax.get_xlabel())


def test_a_group_missing_from_a_panel_is_named(with_gradients):
    drawn = {d.stem: d for d in generic.metric_figures(with_gradients, drawing.Settings(),
                                                       "banana")}
    per_grad = drawn["banana_metric_ess_per_grad"]
    labels = {line.get_label() for ax in per_grad.figure.axes for line in ax.get_lines()}
    assert labels == {"nuts (n=2)"}
    assert "rw: no min ESS / gradient in the traces" in per_grad.caption
    kl = drawn["banana_metric_kl"]
    assert [ax.get_xlabel() for ax in kl.figure.axes] == [
        "sampler time (s)", "density evaluations", "gradient evaluations"]
    assert "rw against gradient evaluations: no gradient evaluations" in kl.caption


@pytest.mark.parametrize("layout", ["constrained", None])
def test_a_long_title_is_wrapped_inside_the_figure(tmp_path, layout):
    fig = Figure(figsize=(3.0, 2.5), layout=layout)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    long = ("a title far longer than the narrow figure it belongs to, as the log-target "
            "trace of one method had")
    fig.suptitle(long)
    ax.set_title("an axes title that is also much wider than its axes are")
    rendered = drawing.Drawn("long", fig, "caption", "Samples", "long").save(tmp_path)
    assert rendered.paths[0].stat().st_size > 1000
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    for text in (fig._suptitle, ax.title):
        box = text.get_window_extent(renderer)
        assert "\n" in text.get_text()
        assert box.x0 >= 0 and box.x1 <= width, (text.get_text(), box, width)
    assert fig._suptitle.get_text().replace("\n", " ") == long


def test_a_figure_legends_title_is_wrapped_too(tmp_path):
    fig = Figure(figsize=(3.0, 2.5), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="rw (n=2)")
    legend = fig.legend(loc="outside upper center", title="Sampler diagnostics on "
                        "posteriordb_eight_schools-eight_schools_noncentered model")
    drawing.Drawn("legend", fig, "caption", "Diagnostics", "legend").save(tmp_path)
    box = legend.get_title().get_window_extent(fig.canvas.get_renderer())
    assert "\n" in legend.get_title().get_text() and 0 <= box.x0 and box.x1 <= fig.bbox.width


def test_per_iteration_diagnostics_leave_out_what_a_sampler_did_not_record(results, tmp_path):
    """make_run's diagnostics have no log π and an all-NaN noise: the log π row is left out
    altogether; a group whose diagnostics lack the step size gets no step-size panel."""
    import pandas as pd

    from ckam_bench.engine import rundir, store

    (drawn,) = generic.diagnostics_figure(results, drawing.Settings(), "banana")
    visible = [ax for ax in drawn.figure.axes if ax.get_visible()]
    assert all(ax.get_lines() for ax in visible)
    assert "log π" not in [ax.get_ylabel() for ax in drawn.figure.axes]
    root = tmp_path / "runs"
    for seed in (0, 1):
        make_run(root, "banana", "rw", seed=seed, n_samples=50, n_diag=100)
        run = make_run(root, "banana", "am", seed=seed, n_samples=50, n_diag=100)
        diag = pd.read_parquet(run / store.DIAGNOSTICS).assign(step_size=float("nan"),
                                                                  logp=-1.0)
        rundir.write_parquet(diag, run / store.DIAGNOSTICS)
    res = agg.load_results(root)
    (drawn,) = generic.diagnostics_figure(res, drawing.Settings(), "banana")
    axes = np.asarray(drawn.figure.axes).reshape(4, 2)  # step size, acceptance, phase, log π
    assert [ax.get_visible() for ax in axes[:, 0]] == [True, True, True, False]  # rw
    assert [ax.get_visible() for ax in axes[:, 1]] == [False, True, True, True]  # am
    assert axes[1, 1].get_title(loc="left").startswith("am, seed 0")
    assert axes[3, 1].get_ylabel() == "log π" and axes[3, 1].get_xlabel() == "iteration"
