"""posteriordb's other posteriors that stress samplers (ckam_bench/posteriordb/hard.py; models in
radon_family.py and bugs.py): each model equals its Stan program, its shipped reference is
certified, found by the target, and agrees with a second route.

The proofs, the build and its route 2 are those of tests/test_posteriordb_highdim.py (read its
docstring), with this module's tables: the numpy densities, written statement by statement from
the Stan programs (tests/hard_radon_stan.py, tests/hard_bugs_stan.py, tests/hard_mixtures_stan.py),
and the twins, for the centred hierarchies whose funnels leave divergences after tuning: route 1 and route 2 sample the
non-centred twin (posteriordb's own non-centred sibling where it has one) and map every draw back
to the centred target's coordinates, exactly (the map and its log-Jacobian in
:mod:`ckam_bench.posteriordb.reparam` and :mod:`ckam_bench.posteriordb.bugs_twins`; checked by
:func:`test_a_twin_is_the_same_posterior`); and for the label-switching mixtures: route 1 and
route 2 sample the ordered twin (mu_1 < mu_2) and map every draw to the full posterior by the
ordered transform's inverse and a hash-chosen exchange of the components, exact because the
posterior is exchangeable (:mod:`ckam_bench.posteriordb.mixture_twins`; the symmetry and the
ordered twin's own certificate: tests/test_posteriordb_mixtures.py, whose ``build`` wraps this one).

A maintainer's command builds a reference (never at test time)::

    nice -n 5 python -m tests.test_posteriordb_hard build <posteriordb name> [draws [target_accept]]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

pytest.importorskip("pymc")

from ckam_bench.posteriordb import database  # noqa: E402
from ckam_bench.posteriordb.hard import HARD  # noqa: E402
from tests import hard_bugs_stan, hard_mixtures_stan, hard_radon_stan  # noqa: E402
from tests.test_posteriordb_highdim import ALPHA, FAST_DRAWS, _prove, build, twin_is_the_same_posterior  # noqa: E402

STAN_NUMPY = {**hard_radon_stan.STAN_NUMPY, **hard_bugs_stan.STAN_NUMPY, **hard_mixtures_stan.STAN_NUMPY}
BOUNDS = {**hard_radon_stan.BOUNDS, **hard_bugs_stan.BOUNDS, **hard_mixtures_stan.BOUNDS}
_RE, _BT, _MT = ("ckam_bench.posteriordb.reparam:", "ckam_bench.posteriordb.bugs_twins:",
                 "ckam_bench.posteriordb.mixture_twins:")
TWINS: dict[str, tuple[str, str, str]] = {
    **{f"radon_mn-radon_{m}_centered": (f"{_RE}radon_{m}_twin", f"{_RE}radon_{m}_to_centred",
                                        f"{_RE}radon_{m}_log_jacobian")
       for m in ("hierarchical_intercept", "variable_slope", "variable_intercept_slope")},
    "surgical_data-surgical_model": (f"{_BT}surgical_noncentered", f"{_BT}surgical_to_centred",
                                     f"{_BT}surgical_log_jacobian"),
    "seeds_data-seeds_model": (f"{_BT}seeds_noncentered", f"{_BT}seeds_to_centred", f"{_BT}seeds_log_jacobian"),
    "seeds_data-seeds_centered_model": (f"{_BT}seeds_centered_noncentered", f"{_BT}seeds_centered_to_centred",
                                        f"{_BT}seeds_centered_log_jacobian"),
    "seeds_data-seeds_stanified_model": (f"{_BT}seeds_stanified_noncentered", f"{_BT}seeds_stanified_to_centred",
                                         f"{_BT}seeds_stanified_log_jacobian"),
    "pilots-pilots": (f"{_BT}pilots_noncentered", f"{_BT}pilots_to_centred", f"{_BT}pilots_log_jacobian"),
    **{f"{data}-{m}": (f"{_MT}{m}_ordered", f"{_MT}{m}_to_target", f"{_MT}{m}_log_jacobian")
       for data, m in (("normal_2", "normal_mixture"),
                       ("low_dim_gauss_mix_collapse", "low_dim_gauss_mix_collapse"))},
}
"""the posteriors certified through a twin, non-centred or (the mixtures) ordered and symmetrised
(:mod:`ckam_bench.posteriordb.mixture_twins`): (twin model, map to the target's coordinates, its
log-Jacobian), each ``module:function``."""
SHIPPED_NAMES = [*(f"radon_mn-radon_{m}" for m in (
    "partially_pooled_centered", "partially_pooled_noncentered", "variable_intercept_centered",
    "variable_intercept_noncentered", "variable_slope_centered", "variable_slope_noncentered",
    "variable_intercept_slope_centered", "hierarchical_intercept_centered", "hierarchical_intercept_noncentered")),
    "dugongs_data-dugongs_model", "surgical_data-surgical_model", "seeds_data-seeds_model",
    "seeds_data-seeds_centered_model", "seeds_data-seeds_stanified_model", "pilots-pilots",
    "normal_2-normal_mixture", "low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse"]
"""the posteriors whose references are shipped."""
NO_REFERENCE_YET: dict[str, str] = {n: database.WHY_NOT_CERTIFIED[n] for n in HARD if n in database.WHY_NOT_CERTIFIED}
"""registered posteriors still without a shipped reference, and why."""
ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- hard posteriors: begin (python -m tests.test_posteriordb_hard table) -->"
END = "<!-- hard posteriors: end -->"
FAST = ["dugongs_data-dugongs_model", "radon_mn-radon_variable_slope_centered"]
"""proved on a few stored draws in the default run; ``-m slow`` proves every shipped one on all."""
FAST_TWINS = ["radon_mn-radon_variable_slope_centered", "seeds_data-seeds_centered_model", "normal_2-normal_mixture"]
"""the twins checked in the default run; ``-m slow`` checks all."""


@pytest.mark.parametrize("name", FAST)
def test_equal_to_the_stan_program(name):
    _prove(name, FAST_DRAWS // 10)


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_equal_to_the_stan_program_on_all_stored_draws(name):
    _prove(name, None)


@pytest.mark.parametrize("name", [n if n in FAST_TWINS else pytest.param(n, marks=pytest.mark.slow) for n in TWINS])
def test_a_twin_is_the_same_posterior(name):
    twin_is_the_same_posterior(name)


def test_every_posterior_is_registered_with_its_model_data_density_and_reference():
    """Nothing drops out silently: every registered posterior has its model function (in its
    family's module, which is its target.model path), its data, its numpy density, and either a
    shipped reference or a line saying why not."""
    from ckam_bench.posteriordb import CHARACTERS, DATA_DIR
    from tests.test_second_route import reference_file  # the shipped file certified for p.model

    assert sorted(HARD) == sorted(STAN_NUMPY) == sorted([*SHIPPED_NAMES, *NO_REFERENCE_YET])
    for name, p in HARD.items():
        assert p.character in CHARACTERS and p.note and (DATA_DIR / f"{p.data}.npz").is_file()
        assert p.model.startswith(p.module + ":") and p.module != "ckam_bench.posteriordb.models"
        assert (reference_file(name) is not None) == (name in SHIPPED_NAMES), name  # found by its target:
        # tests/test_reference_ids.py (every shipped reference, by the target's reference id)


def test_references_are_certified_and_agree_with_route_2():
    """Each shipped reference: certified with posteriordb's criteria, >= 10 chains, no divergence
    after tuning, its cost stated; route 2 (the harness's nuts_fisher, other seed and starts)
    agrees per coordinate within MCSE (Bonferroni at family-wise 1e-3 over 2d coordinates)."""
    from ckam_bench.reference_lookup import is_certified, read_reference
    from tests.test_second_route import reference_file

    for name in SHIPPED_NAMES:
        ref = read_reference(reference_file(name))
        c = ref.certificate
        assert is_certified(c) and c["chains"] >= 10, name
        assert c["diagnostics"]["rhat_max"] < 1.01 and min(c["diagnostics"]["ess_bulk_min"],
                                                           c["diagnostics"]["ess_tail_min"]) >= 1e4, name
        assert c["cost"]["divergences_after_tuning"] == 0 and c["cost"]["cpu_seconds"] > 0, name
        s, d = c["second_route"], HARD[name].dim
        crit = norm.isf(ALPHA / (2 * 2 * d))
        assert s["sampler"] == "nuts_fisher" and s["max_abs_z_mean"] < crit and s["max_abs_z_sd"] < crit, (name, s)
        assert ("twin" in s) == (name in TWINS)
        z = (ref.mean - np.array(s["mean"])) / np.sqrt(ref.mcse_mean**2 + np.array(s["mcse_mean"]) ** 2)
        assert np.max(np.abs(z)) == pytest.approx(s["max_abs_z_mean"], rel=1e-6)


def summary_table() -> str:
    """The docs table of the shipped references: how each was made, its diagnostics, its cost,
    and route 2's agreement."""
    lines = [BEGIN, "| posterior | d | route 1 sampled | target accept | chains × draws | R-hat | min bulk / tail ESS "
             "| divergences (tuning) | CPU s (compile) | route 2 max \\|z\\| mean / sd | file |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    from ckam_bench.reference_lookup import read_reference
    from tests.test_second_route import reference_file

    for name in SHIPPED_NAMES:
        ref = read_reference(reference_file(name))
        c = ref.certificate
        d, cost, s = c["diagnostics"], c["cost"], c["second_route"]
        sampled = f"twin `{TWINS[name][0].split(':')[1]}`" if name in TWINS else "the model"
        lines.append(f"| {name} | {HARD[name].dim} | {sampled} | {c['settings']['sampler']['target_accept']} | "
                     f"{c['chains']} × {c['iterations']} | {d['rhat_max']:.4f} | {d['ess_bulk_min']:.0f} / "
                     f"{d['ess_tail_min']:.0f} | {cost['divergences_after_tuning']} "
                     f"({cost['divergences_during_tuning']}) | {cost['cpu_seconds']:.1f} "
                     f"({cost['compile_cpu_seconds']:.0f}) | {s['max_abs_z_mean']:.2f} / {s['max_abs_z_sd']:.2f} | "
                     f"`{ref.path.name}` |")
    return "\n".join([*lines, END])


def test_the_docs_table_is_recomputed_from_the_shipped_files():
    text = (ROOT / "docs" / "posteriordb.md").read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    assert text[start:stop] == summary_table(), "docs/posteriordb.md: python -m tests.test_posteriordb_hard table"


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    if sys.argv[1] == "table":
        print(summary_table())
    elif sys.argv[1] == "build":
        sys.exit(build(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3000,
                       float(sys.argv[4]) if len(sys.argv) > 4 else 0.8))
