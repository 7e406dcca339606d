"""The high-dimensional posteriordb posteriors in the suite (issue 31 §3): whose reference each
posterior has (``Posterior.reference_source``), membership decided by the files (a certified
reference found for the target), selection by ``posteriordb.subset``, ``ckam-bench list
posteriordb``, and every reader of a posterior's reference — the run's b², the suite report's
moments and pass/fail, the per-variable posterior table's reference and z — on
radon_mn (d = 175, the cheapest), and on a posterior without a reference: "no reference",
never a pass."""

from __future__ import annotations

import io
import shutil
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pymc")

from ckam_bench.posteriordb import HARNESS, POSTERIORDB, SUITE, registered  # noqa: E402
from ckam_bench.posteriordb.highdim import HIGHDIM  # noqa: E402
from ckam_bench.posteriordb.later import LATER  # noqa: E402
from ckam_bench.posteriordb.subset import SubsetError, reference_status, select, suite  # noqa: E402
from ckam_bench.posteriordb.hard import HARD  # noqa: E402
from tests import test_posteriordb_hard as hard  # noqa: E402
from tests.test_posteriordb_highdim import NO_REFERENCE_YET as HIGHDIM_NO_REFERENCE_YET  # noqa: E402
from tests.test_posteriordb_highdim import SHIPPED_NAMES  # noqa: E402

NO_REFERENCE_YET = {**HIGHDIM_NO_REFERENCE_YET, **hard.NO_REFERENCE_YET}
"""every registered posterior without a shipped reference, each with its reason."""

RADON = "radon_mn-radon_variable_intercept_slope_noncentered"
NONE = "election88-election88_full"
"""a registered posterior made one without a certified reference by :func:`without_none`."""


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    """No user-cached reference counts: only what the package ships."""
    monkeypatch.setenv("CKAM_BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def without_none(tmp_path, monkeypatch):
    """The package's shipped references less NONE's: NONE is then a registered posterior without
    a certified reference (every registered posterior has one shipped)."""
    from ckam_bench import reference_lookup

    shown = tmp_path / "shipped less one"
    shown.mkdir()
    for path in reference_lookup.SHIPPED.iterdir():
        if not path.name.startswith("pymc_election88_election88_full-"):  # NONE's reference id
            (shown / path.name).symlink_to(path)
    monkeypatch.setattr(reference_lookup, "SHIPPED", shown)
    assert not reference_status(NONE).found


def _target(name):
    from ckam_bench.targets.pymc import PyMCModel

    return PyMCModel(registered()[name].model)


def test_every_posterior_says_whose_reference_it_has():
    assert all(p.reference_source == POSTERIORDB for p in SUITE.values())
    assert all(p.reference_source == HARNESS for p in [*HIGHDIM.values(), *LATER.values(), *HARD.values()])
    assert list(registered()) == [*SUITE, *HIGHDIM, *LATER, *HARD]  # SUITE's order, then HIGHDIM's, LATER's, HARD's


def test_the_suite_is_what_the_files_certify_and_the_rest_is_listed():
    """The suite: every posteriordb-draws posterior and exactly the high-dimensional ones with a
    certified reference shipped (SHIPPED_NAMES); the others (NO_REFERENCE_YET) are out, each
    with a reason — none drops out unlisted."""
    names = [p.name for p in suite()]
    assert names == [*SUITE, *[n for n in HIGHDIM if n in SHIPPED_NAMES], *LATER,
                     *[n for n in HARD if n in hard.SHIPPED_NAMES]]
    unreferenced = [n for n in registered() if not reference_status(n).found]
    assert sorted(unreferenced) == sorted(NO_REFERENCE_YET)
    for name in unreferenced:
        assert "no certified" in reference_status(name).reason
        assert reference_status(name).describe().startswith("no reference (")
    assert reference_status(RADON).path.name == f"{_target(RADON).reference_id()}.npz"


def test_membership_follows_the_reference_file(tmp_path, monkeypatch, empty_cache):
    """Without its shipped file radon_mn leaves the suite ("no reference", not selected by
    `all`); a certified copy in the user's cache brings it back."""
    from ckam_bench import reference_lookup

    shipped = reference_status(RADON).path
    monkeypatch.setattr(reference_lookup, "SHIPPED", tmp_path / "nothing shipped")
    assert not reference_status(RADON).found
    assert RADON not in [p.name for p in select("all")]
    assert "no certified" in reference_status(RADON).reason
    empty_cache.mkdir()
    shutil.copy(shipped, empty_cache / shipped.name)
    assert reference_status(RADON).path == empty_cache / shipped.name
    assert RADON in [p.name for p in select("all")]
    assert reference_status(RADON).describe().startswith("a reference the harness certified, cached ")


def test_subset_selects_the_high_dimensional_ones_by_name_character_and_dimension(without_none):
    from ckam_bench.commands.config import posteriordb_models

    high = [n for n in HIGHDIM if n in SHIPPED_NAMES and n != NONE] + [n for n in LATER if LATER[n].dim >= 50] + [
        n for n in hard.SHIPPED_NAMES if HARD[n].dim >= 50]  # the suite's order; LATER's accel_gp has 66
    assert [p.name for p in select(["dim:50.."])] == high
    assert RADON in [p.name for p in select(["hierarchical"])]
    assert [p.name for p in select(["radon_variable_intercept_slope_noncentered"])] == [RADON]
    assert registered()[RADON].model in posteriordb_models("all").split(",")
    # without a reference: never by all, a wildcard, a character or a range; by its exact name
    for terms in (["all"], ["hierarchical"], ["dim:50.."], ["election88*"]):
        try:
            assert NONE not in [p.name for p in select(terms)]
        except SubsetError as exc:  # ["election88*"]: nothing with a reference matches
            assert "matches no posterior" in str(exc)
    assert [p.name for p in select([NONE])] == [NONE]


def test_list_shows_each_reference_and_the_posteriors_without_one(without_none):
    from ckam_bench.commands.discovery import print_list

    out = io.StringIO()
    print_list(["posteriordb"], out=out)
    text = out.getvalue()
    head, _, tail = text.partition("posteriordb without a reference, not run by default")
    lines = {line.split()[0]: line for line in head.splitlines() if line.startswith("  ")}
    assert list(lines) == [p.name for p in suite()]
    assert "d=175, hierarchical, a reference the harness certified, shipped pymc_models_" in lines[RADON]
    assert "posteriordb's reference draws" in lines["mesquite-mesquite"]
    missing = {line.split()[0]: line for line in tail.splitlines() if line.startswith("  ")}
    assert sorted(missing) == sorted({*NO_REFERENCE_YET, NONE})
    assert "no reference (no certified pymc_election88_election88_full-" in missing[NONE]


def test_the_posteriordb_draw_readers_refuse_a_harness_posterior():
    """posteriordb's draws are never taken for a harness posterior: the target's own-reference
    hook declines, and harness_reference refuses in one line."""
    from ckam_bench.posteriordb import models, reference_for

    target = _target(RADON)
    assert reference_for(target) is None
    with pytest.raises(ValueError, match="no posteriordb draws"):
        models.harness_reference(RADON, target)


def test_the_runs_b2_is_against_the_certified_reference(monkeypatch):
    from ckam_bench.metrics.moments import MomentErrors
    from ckam_bench.reference_lookup import read_reference

    monkeypatch.setenv("CKAM_BENCH_JIT", "0")  # the probe check without a numba compilation
    reference = read_reference(reference_status(RADON).path)
    errors = MomentErrors(_target(RADON), discard=0)
    assert errors.info["truth"] == "reference" and errors.info["path"] == str(reference_status(RADON).path)
    np.testing.assert_array_equal(errors.mean, reference.mean)  # E[X], E[X²] of every draw of
    np.testing.assert_array_equal(errors.second, reference.second_moment)  # the certified chains
    errors.update(reference.samples)
    out = errors.compute()
    assert out["mean_error"] == pytest.approx(np.linalg.norm(reference.samples.mean(axis=0) - reference.mean))


def _suite_run(path, x):
    from ckam_bench.engine import rundir, store
    from ckam_bench.report.aggregate import StoredRun

    path.mkdir()
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(x.shape[1])])
    frame.insert(0, "index", np.arange(len(x)))
    rundir.write_parquet(frame, path / store.SAMPLES)
    trace = pd.DataFrame({"checkpoint": [0], "n_collected": [len(x)], "bias2": [0.001],
                          "n_grad": [10.0], "n_density": [10.0]})
    return StoredRun(path, {"flags": []}, {"metrics": {"moments": {"discard": 0}}}, {}, trace)


def test_suite_report_passes_and_fails_against_the_certified_reference(tmp_path):
    from ckam_bench.reference_lookup import read_reference
    from ckam_bench.report import posteriordb_suite as report

    reference = read_reference(reference_status(RADON).path)
    mean, sd = report._reference_moments(RADON)
    np.testing.assert_array_equal(mean, reference.mean)  # every draw of the certified chains
    np.testing.assert_allclose(sd, np.sqrt(reference.variance))
    u = reference.samples  # its stored draws, moved onto the certified moments exactly
    exact = (u - u.mean(axis=0)) / u.std(axis=0) * sd + mean
    assert report.run_passes(_suite_run(tmp_path / "a", exact), RADON) is True
    for coordinate, shift in ((174, 0.11 * sd[174]), (0, 0.0)):
        moved = exact.copy()
        moved[:, coordinate] += shift if shift else 0.12 * (moved[:, 0] - mean[0])  # sd 12 % off
        assert report.run_passes(_suite_run(tmp_path / f"b{coordinate}", moved), RADON) is False


def test_a_posterior_without_a_reference_is_reported_no_reference_never_a_pass(tmp_path, monkeypatch, without_none):
    """run_passes has nothing to compare with; the tables say 'no reference' and count no pass
    even where a run would otherwise pass (run_passes forced True)."""
    from ckam_bench.report import aggregate as agg
    from ckam_bench.report import posteriordb_suite as report
    from tests.test_report import make_run

    run = _suite_run(tmp_path / "a", np.zeros((50, HIGHDIM[NONE].dim)))
    assert report.run_passes(run, NONE) is None
    assert report.reference_missing(NONE) and report.reference_missing(RADON) is None
    make_run(tmp_path / "runs", "bimodal", "rw")
    monkeypatch.setattr(report, "_posterior", lambda run: NONE)
    monkeypatch.setattr(report, "run_passes", lambda run, name: True)
    per_posterior, overall = report.tables(agg.load_results(tmp_path / "runs"))
    row = dict(zip(per_posterior.header, per_posterior.rows[0]))
    assert row["vs reference"] == "no reference"
    assert any(note.startswith(f"no reference for {NONE}") for note in per_posterior.notes)
    assert dict(zip(overall.header, overall.rows[0]))["posteriors passed"] == "0"
    assert not any("fails the reference" in r[1] for r in per_posterior.rows)


def test_posterior_table_takes_the_certified_reference_on_the_models_scale(without_none):
    """The reference of the model's variables: the certified draws mapped to the constrained
    scale (sigma_y = exp of its log coordinate), with the source named; none for a posterior
    without a reference, and a note says why."""
    from ckam_bench.reference_lookup import read_reference
    from ckam_bench.report import posterior

    group = SimpleNamespace(runs=[SimpleNamespace(config={"target": {"model": registered()[RADON].model}})])
    reference, source = posterior.reference_of(group)
    u = read_reference(reference_status(RADON).path).samples
    assert reference["sigma_y"][0] == pytest.approx(np.exp(u[:, 0]).mean(), rel=1e-12)
    assert reference["alpha_raw[0]"][0] == pytest.approx(u[:, 3].mean(), rel=1e-12)
    assert reference["mu_beta"][2] == len(u)
    assert source.startswith(f"the reference the harness certified for {RADON} (pymc_models_")
    none = SimpleNamespace(runs=[SimpleNamespace(config={"target": {"model": registered()[NONE].model}})])
    assert posterior.reference_of(none) == ({}, "")
    assert posterior._missing(none).startswith(f"no reference for {NONE} (no certified")


def test_posterior_table_z_against_the_certified_reference(tmp_path, monkeypatch):
    """z of a run drawn from the reference is small; one shifted by a reference sd is large."""
    from ckam_bench.engine import rundir, store
    from ckam_bench.report import aggregate as agg
    from ckam_bench.report import posterior
    from tests.test_report import make_run

    draws = posterior.reference_draws(SimpleNamespace(runs=[SimpleNamespace(
        config={"target": {"model": registered()[RADON].model}})]))
    sigma = draws["sigma_y"]
    for sampler, shift in (("rw", 0.0), ("am", sigma.std())):
        for seed in (0, 1):
            path = make_run(tmp_path, "gmm2d", sampler, seed=seed)
            frame = pd.read_parquet(path / store.SAMPLES)
            frame["sigma_y"] = np.resize(sigma[seed::2], len(frame)) + shift
            rundir.write_parquet(frame, path / store.SAMPLES)
    monkeypatch.setattr(posterior, "_suite", lambda group: RADON)
    table = posterior.posterior_table(agg.load_results(tmp_path), "gmm2d")
    rows = {(r[0], r[1]): dict(zip(table.header, r)) for r in table.rows}
    assert abs(float(rows["rw", "sigma_y"]["z"])) < 3 < abs(float(rows["am", "sigma_y"]["z"]))
    assert any("the reference the harness certified" in note for note in table.notes)
