"""OmegaConf resolvers used by the configs (registered on import of ``ckam_bench``).

* ``${optimal_scale:d,f}`` — f · 2.38/√d, the Roberts–Rosenthal optimal random-walk scale
  times a factor (the cKAM tables use f = 1 for AM/GAM and f = 2 for KAM/cKAM).
* ``${sum:a,b,...}`` — the sum of numbers (e.g. an iteration cap of burn-in plus collected draws:
  ``${sum:${oc.select:sampler.burn_in,20000},20000}``).
* ``${iterations:seconds,per_second[,fraction]}`` — int(fraction · seconds · per_second): a
  schedule the paper states as a fraction of the run ("4 → 1 over the whole run", "40 %
  burn-in") in iterations, from the run's budget and a stated throughput (KAM's paper presets).
* ``${ckam_uid:}`` — a short random token, resolved once per run and copied to sweep jobs by
  Hydra's resolver cache, so output folders never collide even when started in the same second.
* ``${pymc_dim:spec}`` — the number of unconstrained coordinates of a PyMC model
  (``conf/target/pymc.yaml``; :func:`ckam_bench.targets.pymc.model_dim`). A model that cannot
  be loaded is a :class:`~ckam_bench.commands.validate.ConfigError` naming ``target.model``.
* ``${ckam_plugins:}`` — ``hydra.searchpath`` entries of the installed plugins
  (:mod:`ckam_bench.commands.plugins`).
* ``${posteriordb_models:subset}`` — the ``target.model`` values of the posteriordb suite's
  posteriors chosen by ``subset`` (:mod:`ckam_bench.posteriordb.subset`), comma-separated for
  the suite experiment's sweep; a term that selects nothing is a ConfigError.
"""

from __future__ import annotations

import math
import secrets

from omegaconf import OmegaConf


def optimal_scale(dim, factor=1.0) -> float:
    return float(factor) * 2.38 / math.sqrt(float(dim))


def _sum(*values):
    total = sum(values)
    return int(total) if all(float(v).is_integer() for v in values) else float(total)
def iterations(seconds, per_second, fraction=1.0) -> int:
    return max(1, int(float(fraction) * float(seconds) * float(per_second)))


def _uid() -> str:
    return secrets.token_hex(4)


def pymc_dim(spec) -> int:
    from ckam_bench.targets.pymc import ModelError, model_dim
    from ckam_bench.commands.validate import ConfigError

    if spec is None:
        raise ConfigError("target.model: must be set: target.model=PACKAGE.MODULE:FUNCTION or "
                          "target.model=path/to/file.py:FUNCTION")
    try:
        return model_dim(spec)
    except ModelError as exc:
        raise ConfigError(f"target.{exc}") from None


def posteriordb_models(subset) -> str:
    from ckam_bench.posteriordb.subset import SubsetError, model_specs
    from ckam_bench.commands.validate import ConfigError

    try:
        return model_specs(subset)
    except SubsetError as exc:
        raise ConfigError(str(exc)) from None


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("optimal_scale"):
        OmegaConf.register_new_resolver("optimal_scale", optimal_scale)
    if not OmegaConf.has_resolver("sum"):
        OmegaConf.register_new_resolver("sum", _sum)
    if not OmegaConf.has_resolver("iterations"):
        OmegaConf.register_new_resolver("iterations", iterations)
    if not OmegaConf.has_resolver("ckam_uid"):
        OmegaConf.register_new_resolver("ckam_uid", _uid, use_cache=True)
    if not OmegaConf.has_resolver("pymc_dim"):
        OmegaConf.register_new_resolver("pymc_dim", pymc_dim)
    if not OmegaConf.has_resolver("ckam_plugins"):
        from ckam_bench.commands.plugins import search_path

        OmegaConf.register_new_resolver("ckam_plugins", search_path)
    if not OmegaConf.has_resolver("posteriordb_models"):
        OmegaConf.register_new_resolver("posteriordb_models", posteriordb_models)
