"""A second route for every harness-certified reference (issue 45 §2), a maintainer's command::

    nice -n 5 python scripts/second_route.py build NAME [NAME ...]   # run it, write the summary
    python scripts/second_route.py table                            # the docs table (markdown)

Method. For each posterior whose reference the harness certified (nutpie on the suite's PyMC
model, tests/test_posteriordb_highdim.py and tests/test_posteriordb_later.py), the density is
written again from the Stan program as a NumPyro model (scripts/second_route_models.py, and for the families of
ckam_bench/posteriordb/hard.py second_route_radon.py and second_route_bugs.py, for the
label-switching mixtures second_route_mixtures.py, for mcycle_gp-accel_gp second_route_gp.py), reading
posteriordb's own data JSON from a posteriordb git mirror (``POSTERIORDB_GIT_DIR``); NumPyro's
``initialize_model`` gives the potential on the unconstrained space (Stan's transforms and their
log-Jacobians). It is sampled with BlackJAX's adjusted microcanonical Langevin Monte Carlo (MAMS:
``blackjax.adjusted_mclmc_dynamic``, random integration length around ``L / step``, the
isokinetic McLachlan integrator), tuned by ``blackjax.adjusted_mclmc_find_L_and_step_size``
(diagonal preconditioning, target acceptance :data:`TARGET_ACCEPT`, 20 % of the sampling length
as tuning, per chain), :data:`CHAINS` chains from NumPyro's uniform(-2, 2) initialisation on the
unconstrained space, seed :data:`SEED`. Draws are mapped to Stan's constrained parameters by
NumPyro and summarised per coordinate: mean, sd, MCSE of the mean (arviz-stats), MCSE of the sd
(delta method: sd((x - mean)²) / sqrt(ESS((x - mean)²)) / (2 sd)), bulk ESS. The summary is
stored in ``ckam_bench/data/references/second_route.json``; tests/test_second_route.py compares it
with each shipped reference (z per coordinate, mean and sd, Bonferroni bound).

Independence. Nothing is shared with route 1 except the posterior's definition: not the PyMC
model nor the numpy densities of the tests (the NumPyro models are transcribed from the Stan
programs), not the suite's data arrays (posteriordb's data JSON is read from the mirror), not the
sampler (nutpie's NUTS there, MAMS here; JAX, not numba), not the adaptation, starts or seeds.

CPU cost: stated per posterior in the summary (``cpu_seconds``: this process's CPU time for
compiling, tuning and sampling every chain) and in the docs table. Measured on a shared 2-core
machine (load average 5-9, nice 5): 8-54 CPU s for each posterior of 1-4 dimensions except
wells_dist (498 s: MAMS's tuning spent ~2 million integration steps a chain on its coefficient of
scale 0.0004), 18-205 CPU s for each of 87-389 dimensions, and 1017 CPU s for prophet (NumPyro's
NUTS at ~1000 integration steps a draw: its tree depth saturates); about 36 CPU minutes in all.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
OUT = ROOT / "ckam_bench" / "data" / "references" / "second_route.json"
CHAINS = 4
SEED = 45
TARGET_ACCEPT = 0.9
DRAWS = {  # draws per chain after tuning (tuning: 20 % more)
    "radon_mn-radon_variable_intercept_slope_noncentered": 20000,
    "radon_mod-radon_county": 20000,
    "radon_all-radon_county_intercept": 10000,
    "radon_all-radon_variable_intercept_slope_noncentered": 10000,
    "radon_mn-radon_county_intercept": 10000,
    "GLMM_data-GLMM1_model": 20000,
    "rstan_downloads-prophet": 5000,
}
DEFAULT_DRAWS = 10000
ALGORITHM = "MAMS (blackjax.adjusted_mclmc_dynamic, adjusted_mclmc_find_L_and_step_size)"
NUTS_ALGORITHM = "NUTS (numpyro.infer.NUTS, 1000 warm-up draws, target accept {:g})"
NUTS_ACCEPT = {"pilots-pilots": 0.99, "mcycle_gp-accel_gp": 0.99, "election88-election88_full": 0.9}
"""NumPyro NUTS's target acceptance where it is not 0.8 (pilots: route 1 needed 0.999; accel_gp:
route 1 needed 0.995, posteriordb's Stan 0.999)."""
NUTS_WARMUP = 1000
"""one-dimensional posteriors (Rate_1, Rate_3, Rate_5): MAMS's isokinetic velocity is a unit
vector, which in one dimension can only be +1 or -1, and its tuner collapsed there (step size
and inverse mass ~1e-5 and ~1e-15 on Rate_1); NumPyro's NUTS instead."""
NUTS_FALLBACK: dict[str, str] = {
    "rstan_downloads-prophet": "MAMS's tuning from NumPyro's uniform(-2, 2) start had not finished chain 0 after "
                               "4.5 CPU minutes (other posteriors of up to 389 dimensions: under 1 CPU minute a "
                               "chain). The likely cause, as on wells_dist (a coefficient of scale 0.0004: about 2 "
                               "million integration steps per chain, almost all in tuning, against 45 000 for the "
                               "same posterior in 100 m units): far from the mode, the tuner's first pass keeps L "
                               "while it shrinks the step, so L / step, the mean number of integration steps, grows. "
                               "NumPyro's NUTS instead",
}
"""posteriors of more than one dimension where MAMS's tuning failed, and how (NUTS instead)."""
NUTS_FALLBACK["election88-election88_full"] = (
    "MAMS left a bulk ESS of 54 on the non-centred transcription (max |z| of the sds 7.60) and of 16 on the "
    "partially non-centred one (5.97), 4 chains of 10 000 draws each: its tuner's one step size and L (step 1.8-2.3, "
    "L 3.6-4.6) do not reach the scales' long upper tails. NumPyro's NUTS instead, at target accept 0.9")
NUTS_FALLBACK["mcycle_gp-accel_gp"] = (
    "MAMS's tuner collapsed (L 0.26-0.40, step 0.13-0.20 in 4 chains of 10 000 draws: bulk ESS 5), as on pilots: "
    "each intercept and its GP's first basis function, nearly constant over the data, trade off along a curved "
    "ridge. NumPyro's NUTS instead, at target accept 0.99")
NUTS_FALLBACK["radon_all-radon_variable_intercept_slope_noncentered"] = (
    "MAMS's tuner settled on steps of 6.3-7.4 and L 12.7-14.8 (about two integration steps a draw): 4 chains of "
    "10 000 draws agreed with the reference (max |z| 3.13 / 2.90) but left beta_raw[202]'s bulk ESS at 184 and "
    "mu_alpha's at 242, far below MIN_ESS. NumPyro's NUTS instead")
NUTS_FALLBACK["pilots-pilots"] = (
    "MAMS's tuner collapsed on the ridge a + k, b - k (step 0.024-0.030, L 0.05-0.06 in 4 chains of 10 000 "
    "draws: bulk ESS 5). NumPyro's NUTS instead, at target accept 0.99")


def _round(x, digits=6):
    return [float(f"{v:.{digits}g}") for v in np.asarray(x, float).ravel()]


def _ess_mcse(draws):
    """Bulk ESS, MCSE of the mean and of the sd per column of ``draws`` (chains, n, k)."""
    from arviz_stats.base import array_stats

    ary = np.moveaxis(np.asarray(draws, float), -1, 0)
    ess_bulk = np.asarray(array_stats.ess(ary, chain_axis=-2, draw_axis=-1, method="bulk"))
    mcse_mean = np.asarray(array_stats.mcse(ary, chain_axis=-2, draw_axis=-1, method="mean"))
    dev2 = (ary - ary.mean(axis=(-2, -1), keepdims=True)) ** 2
    ess2 = np.asarray(array_stats.ess(dev2, chain_axis=-2, draw_axis=-1, method="mean"))
    sd = ary.std(axis=(-2, -1))
    mcse_sd = dev2.reshape(len(ary), -1).std(axis=-1) / np.sqrt(ess2) / (2 * sd)
    return ess_bulk, mcse_mean, mcse_sd


def models() -> dict:
    """posteriordb name -> (NumPyro model, data name, Stan parameters) of every family:
    scripts/second_route_models.py, second_route_radon.py, second_route_bugs.py,
    second_route_mixtures.py, second_route_gp.py."""
    import second_route_bugs
    import second_route_gp
    import second_route_mixtures
    import second_route_models
    import second_route_radon

    return {**second_route_models.MODELS, **second_route_radon.MODELS, **second_route_bugs.MODELS,
            **second_route_mixtures.MODELS, **second_route_gp.MODELS}


def run(name: str, draws: int | None = None, chains: int = CHAINS, seed: int = SEED) -> dict:
    """The second route of posterior ``name``: returns its summary (names, mean, sd, MCSEs, ESS)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import blackjax
    import jax.numpy as jnp
    import numpyro
    from blackjax.mcmc.adjusted_mclmc import rescale
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.initialization import init_to_uniform
    from numpyro.infer.util import initialize_model

    import second_route_models as srm
    from tests.test_second_route import interval, reference_summary

    draws = draws or DRAWS.get(name, DEFAULT_DRAWS)
    model, data_name, params = models()[name]
    data = srm.load_posteriordb_data(data_name)
    t0 = time.process_time()
    keys = jax.random.split(jax.random.PRNGKey(seed), chains)
    infos = [initialize_model(k, model, model_args=(data,), init_strategy=init_to_uniform(radius=2.0))
             for k in jax.random.split(jax.random.PRNGKey(seed + 1), chains)]
    potential, postprocess = infos[0].potential_fn, infos[0].postprocess_fn
    x0s = [ravel_pytree(i.param_info.z)[0] for i in infos]
    unravel = ravel_pytree(infos[0].param_info.z)[1]

    def logdensity(x):
        return -potential(unravel(x))

    kernel = blackjax.mcmc.adjusted_mclmc_dynamic.build_kernel(
        integration_steps_fn=lambda key, avg: jnp.ceil(jax.random.uniform(key) * rescale(avg)).astype(jnp.int32),
        integrator=blackjax.mcmc.integrators.isokinetic_mclachlan)

    @jax.jit
    def chain(key, x0):
        init_key, tune_key, run_key = jax.random.split(key, 3)
        state = blackjax.mcmc.adjusted_mclmc_dynamic.init(x0, logdensity, init_key)
        state, params_, n_tune = blackjax.adjusted_mclmc_find_L_and_step_size(
            mclmc_kernel=kernel, logdensity_fn=logdensity, num_steps=draws, state=state, rng_key=tune_key,
            target=TARGET_ACCEPT, diagonal_preconditioning=True)
        avg = params_.L / params_.step_size

        def one(st, k):
            st, info = kernel(rng_key=k, state=st, logdensity_fn=logdensity, step_size=params_.step_size,
                              inverse_mass_matrix=params_.inverse_mass_matrix, integration_steps_params=(avg,))
            return st, (st.position, info.acceptance_rate, info.is_divergent, info.num_integration_steps)

        _, (xs, acc, div, steps) = jax.lax.scan(one, state, jax.random.split(run_key, draws))
        return xs, acc.mean(), div.sum(), steps.sum() + n_tune, params_.step_size, params_.L

    held, stats = [], []
    dim = int(x0s[0].size)
    nuts = dim == 1 or name in NUTS_FALLBACK
    accept = NUTS_ACCEPT.get(name, 0.8)
    algorithm = NUTS_ALGORITHM.format(accept) if nuts else ALGORITHM
    if nuts:  # see NUTS_WARMUP and NUTS_FALLBACK
        from numpyro.infer import MCMC, NUTS

        for c in range(chains):
            mcmc = MCMC(NUTS(potential_fn=potential, target_accept_prob=accept), num_warmup=NUTS_WARMUP,
                        num_samples=draws, progress_bar=False)
            mcmc.run(keys[c], init_params=infos[c].param_info.z, extra_fields=("diverging", "num_steps"))
            held.append(np.asarray(jax.vmap(lambda z: ravel_pytree(z)[0])(mcmc.get_samples())))
            extra = mcmc.get_extra_fields()
            stats.append({"divergences": int(np.sum(extra["diverging"])),
                          "integration_steps": int(np.sum(extra["num_steps"]))})
    for c in range(0 if nuts else chains):
        xs, acc, div, steps, eps, L = chain(keys[c], x0s[c])
        held.append(np.asarray(xs))
        stats.append({"acceptance": float(acc), "divergences": int(div), "integration_steps": int(steps),
                      "step_size": float(eps), "L": float(L)})
        print(f"  {name} chain {c}: acceptance {float(acc):.3f}, divergences {int(div)}, step {float(eps):.3g}, "
              f"L {float(L):.3g}, {time.process_time() - t0:.0f} CPU s", file=sys.stderr, flush=True)
    constrain = jax.jit(jax.vmap(lambda x: postprocess(unravel(x))))
    columns, names = [], []
    for p in params:
        vals = np.stack([np.asarray(constrain(jnp.asarray(h))[p]) for h in held])  # (chains, n, ...)
        vals = vals.reshape(chains, draws, -1)
        k = vals.shape[-1]
        scalar = np.ndim(np.asarray(postprocess(infos[0].param_info.z)[p])) == 0
        for i in range(k):
            names.append(p if scalar else f"{p}[{i + 1}]")
            columns.append(vals[..., i])
    # the reference's unconstrained scale for its transformed coordinates (high-dimensional ones)
    ref = reference_summary(name)
    for stan, comp in zip(ref["names"], ref["compared"]):
        if comp != stan and comp not in names:
            x = columns[names.index(stan)]
            if comp.startswith("log("):
                columns.append(np.log(x))
            else:
                lo, hi = interval(stan)
                columns.append(np.log(x - lo) - np.log(hi - x))
            names.append(comp)
    x = np.stack(columns, axis=-1)  # (chains, n, k)
    cpu = time.process_time() - t0
    ess_bulk, mcse_mean, mcse_sd = _ess_mcse(x)
    flat = x.reshape(-1, x.shape[-1])
    import arviz_stats
    import blackjax as bj

    return {
        "algorithm": algorithm, "target_accept": accept if nuts else TARGET_ACCEPT,
        "tuning_steps": NUTS_WARMUP if nuts else int(0.2 * draws),
        "versions": {"numpyro": numpyro.__version__, "blackjax": bj.__version__, "jax": jax.__version__,
                     "arviz-stats": arviz_stats.__version__},
        "seed": seed, "chains": chains, "draws": draws, "cpu_seconds": round(cpu, 1),
        "stan_program": f"posterior_database/models/stan/{name.split('-', 1)[1]}.stan",
        "data": f"posterior_database/data/data/{data_name}.json.zip",
        "posteriordb_commit": srm.mirror_commit(), "reference_file": ref["file"],
        "chain_stats": [{k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in s.items()} for s in stats],
        "names": names, "mean": _round(flat.mean(0)), "sd": _round(flat.std(0)), "mcse_mean": _round(mcse_mean, 4),
        "mcse_sd": _round(mcse_sd, 4), "ess_bulk": _round(ess_bulk, 4)}


def save(name: str, summary: dict) -> None:
    """Add (or replace) one posterior's summary in :data:`OUT` (under a lock: builds may run side by side)."""
    import fcntl

    import tempfile

    with open(Path(tempfile.gettempdir()) / "ckam_bench_second_route.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _save(name, summary)


def _save(name: str, summary: dict) -> None:
    from ckam_bench.files import atomic_write

    doc = json.loads(OUT.read_text()) if OUT.is_file() else {}
    doc.setdefault("about", "second route of the harness-certified references (issue 45 §2): scripts/second_route.py; "
                   "compared in tests/test_second_route.py")
    doc.setdefault("posteriors", {})[name] = summary
    doc["posteriors"] = dict(sorted(doc["posteriors"].items()))
    text = json.dumps(doc, separators=(",", ":")) + "\n"
    atomic_write(OUT, lambda tmp: Path(tmp).write_text(text))


def main(argv) -> int:
    import warnings

    warnings.simplefilter("ignore")
    if argv[0] == "table":
        from tests.test_second_route import summary_table

        print(summary_table())
        return 0
    if argv[0] == "build":
        from tests.test_second_route import compare

        for name in argv[1:]:
            summary = run(name)
            save(name, summary)
            import tests.test_second_route as t

            t.shipped.cache_clear()
            z = compare(name)
            print(f"{name}: max|z| mean {np.max(np.abs(z['z_mean'])):.2f}, sd {np.max(np.abs(z['z_sd'])):.2f}, "
                  f"min bulk ESS {min(summary['ess_bulk']):.0f}, {summary['cpu_seconds']:.0f} CPU s", file=sys.stderr,
                  flush=True)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
