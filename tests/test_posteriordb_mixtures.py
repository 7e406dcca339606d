"""The label-switching mixtures of ckam_bench/posteriordb/mixtures.py (registered in hard.py,
proved and certified with the rest of hard.py's posteriors by tests/test_posteriordb_hard.py):
the exact exchange symmetry their certification rests on, and the ordered twin's own
diagnostics.

Each posterior is invariant under exchanging its two components (mu_k, sigma_k and the weight
together; :mod:`ckam_bench.posteriordb.mixture_twins`): π(P_σ x) = π(x) for every permutation σ,
checked here at random points of the unconstrained space, so the modes' weights are exactly 1/2
each. Route 1 samples the ordered twin and maps its draws by T (the ordered transform's inverse,
then the exchange for a hash-chosen half of the draws). The certificate's diagnostics are those of
the mapped draws; the build below also certifies the twin's own draws, the restriction to the
ordered region mu_1 < mu_2 (recovered exactly from a mapped draw by undoing the exchange where
mu_1 > mu_2), and stores their diagnostics in the certificate under ``"ordered_twin"``: a
restriction that were itself multimodal would show there, however well mixed the labels.

A maintainer's command builds a reference (never at test time)::

    nice -n 5 python -m tests.test_posteriordb_mixtures build <posteriordb name> [draws [target_accept]]
"""

from __future__ import annotations

import itertools
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("pymc")

from ckam_bench.posteriordb import mixture_twins, registered  # noqa: E402

NAMES = ["normal_2-normal_mixture", "low_dim_gauss_mix_collapse-low_dim_gauss_mix_collapse"]
K = 2


def _function(name, suffix):
    return getattr(mixture_twins, f"{name.split('-')[1]}_{suffix}")


def ordered_rows(name, x: np.ndarray) -> np.ndarray:
    """The target's unconstrained rows with the components exchanged where mu_1 > mu_2: the
    representative in the ordered region (R(u) of the twin's draw u, exactly)."""
    x = np.atleast_2d(np.asarray(x, float))
    at = {"normal_2-normal_mixture": 1}.get(name, 0)  # the column of mu_1
    out = x.copy()
    flip = x[:, at] > x[:, at + 1]
    out[flip] = _function(name, "permute")(x[flip], (1, 0))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_posterior_is_invariant_under_every_permutation_of_components(name):
    """π(P_σ x) = π(x) to 1e-8 at random points for all K! permutations σ, with the model's own
    log density: the priors are exchangeable (theta's symmetric about 1/2) and so is log_mix."""
    from tests.test_posteriordb_models import _logp_dlogp

    model = registered()[name].build()
    batch = _logp_dlogp(model)
    x = np.random.default_rng(11).normal(0.0, 1.5, (20, registered()[name].dim))
    logp, _ = batch(x)
    assert np.isfinite(logp).all()
    for perm in itertools.permutations(range(K)):
        y = _function(name, "permute")(x, perm)
        assert (perm == (0, 1)) == np.array_equal(y, x)
        np.testing.assert_allclose(batch(y)[0], logp, rtol=0, atol=1e-8)
        np.testing.assert_array_equal(_function(name, "permute")(y, perm), x)  # K = 2: an involution


@pytest.mark.parametrize("name", NAMES)
def test_the_map_labels_half_the_draws_deterministically(name):
    """T exchanges the components of a hash-chosen half of the rows: the same row the same way in
    every call and at every place, about half of many rows, and T(u) recovers R(u) once ordered."""
    d = registered()[name].dim
    u = np.random.default_rng(3).normal(0.0, 1.0, (20000, d))
    to_target = _function(name, "to_target")
    x, swapped = to_target(u), mixture_twins.swapped(u)
    np.testing.assert_array_equal(mixture_twins.swapped(u[::-1]), swapped[::-1])
    np.testing.assert_array_equal(mixture_twins.swapped(u[5:6]), swapped[5:6])
    np.testing.assert_allclose(to_target(u[::-1]), x[::-1], rtol=1e-13, atol=1e-13)  # np.exp's SIMD paths
    assert abs(swapped.mean() - 0.5) < 4 * 0.5 / np.sqrt(len(u))
    np.testing.assert_array_equal(np.diff(ordered_rows(name, x)[:, [0, 1] if d == 5 else [1, 2]], axis=1) > 0,
                                  np.ones((len(u), 1), bool))


def test_shipped_references_record_the_ordered_twin_certified():
    """Each shipped mixture reference: the ordered twin's own draws certified too (R-hat < 1.01,
    bulk and tail ESS >= 10 000), and the stored draws put each mode at mass 1/2 up to noise."""
    from ckam_bench.reference_lookup import read_reference
    from tests.test_posteriordb_hard import SHIPPED_NAMES
    from tests.test_second_route import reference_file

    for name in (n for n in NAMES if n in SHIPPED_NAMES):
        ref = read_reference(reference_file(name))
        o = ref.certificate["ordered_twin"]
        assert o["rhat_max"] < 1.01 and min(o["ess_bulk_min"], o["ess_tail_min"]) >= 1e4, (name, o)
        at = 1 if name.startswith("normal_2") else 0
        share = float(np.mean(ref.samples[:, at] < ref.samples[:, at + 1]))
        assert abs(share - 0.5) < 4 * 0.5 / np.sqrt(len(ref.samples)), (name, share)


def build(name, draws, target_accept=0.8):
    """tests/test_posteriordb_hard.py's build, with the ordered twin's diagnostics added to the
    certificate (and required: R-hat < 1.01, bulk and tail ESS >= 10 000)."""
    from ckam_bench.checks import reference
    from ckam_bench.reference_lookup import diagnose
    from tests import test_posteriordb_hard

    certify_runs = reference.certify_runs

    def certify_with_the_ordered_twin(target, runs, **kwargs):
        ok, why, certificate, arrays = certify_runs(target, runs, **kwargs)
        n = min(len(r.held) for r in runs)
        diag = diagnose(np.stack([ordered_rows(name, r.held[:n]) for r in runs]))
        o = {"rhat_max": float(np.nanmax(diag["rhat"])), "ess_bulk_min": float(np.nanmin(diag["ess_bulk"])),
             "ess_tail_min": float(np.nanmin(diag["ess_tail"])), "rhat": diag["rhat"].tolist(),
             "ess_bulk": diag["ess_bulk"].tolist(), "ess_tail": diag["ess_tail"].tolist(),
             "mean": np.concatenate([ordered_rows(name, r.held[:n]) for r in runs]).mean(0).tolist(),
             "what": "diagnostics of the twin's own draws: the restriction to mu_1 < mu_2, in the "
                     "target's coordinates (tests/test_posteriordb_mixtures.py)"}
        certificate["ordered_twin"] = o
        print(f"  ordered twin: R-hat {o['rhat_max']:.4f} bulk {o['ess_bulk_min']:.0f} "
              f"tail {o['ess_tail_min']:.0f}", file=sys.stderr, flush=True)
        if not (o["rhat_max"] < 1.01 and min(o["ess_bulk_min"], o["ess_tail_min"]) >= 1e4):
            why = f"ordered twin not certified: R-hat {o['rhat_max']:.4f}, bulk {o['ess_bulk_min']:.0f}"
            return False, why, certificate, arrays
        return ok, why, certificate, arrays

    reference.certify_runs = certify_with_the_ordered_twin
    try:
        return test_posteriordb_hard.build(name, draws, target_accept)
    finally:
        reference.certify_runs = certify_runs


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    if sys.argv[1] == "build":
        sys.exit(build(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 3000,
                       float(sys.argv[4]) if len(sys.argv) > 4 else 0.8))
