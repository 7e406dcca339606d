"""The posteriordb suite: posteriors of posteriordb (Magnusson et al., github.com/stan-dev/
posteriordb) that have reference draws, written as PyMC models equal to their Stan programs, with
posteriordb's data and reference draws shipped as package data (``data/``, ``reference/``;
sources, licences and transformations in ``SOURCES.md``; nothing is downloaded at run time).
:data:`SUITE` lists them (with each one's character and dims), :data:`NOT_SHIPPED` the reference
sets of posteriordb left out and why. posteriordb posteriors without posteriordb draws are
registered in :data:`ckam_bench.posteriordb.highdim.HIGHDIM`, their reference one the harness
certified (:attr:`Posterior.reference_source`); :func:`registered` lists both, and the suite that
``experiment=posteriordb`` runs (:func:`ckam_bench.posteriordb.subset.suite`) is every posterior
whose reference is found (:func:`ckam_bench.posteriordb.subset.reference_status`: posteriordb's
draws, or a certified reference file for the target).

Each model is the function ``ckam_bench.posteriordb.models:<function>`` returning a
``pymc.Model`` (``ckam-bench target=pymc target.model=ckam_bench.posteriordb.models:diamonds``).
Its value variables are Stan's parameters under the same unconstrained transforms (log for a
lower bound, scaled logit for an interval, Stan's ordered transform), so the unconstrained
coordinates are Stan's; :func:`ckam_bench.posteriordb.models.reference_values` maps the
reference draws onto them. This module needs no PyMC: it lists the suite and loads the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckam_bench.caches import Recent
from ckam_bench.reference_providers import register_reference_provider

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data"
REFERENCE_DIR = HERE / "reference"
POSTERIORDB_COMMIT = "28f8d3d6e975315f42aa274a8399f21e07a43b30"


CHARACTERS = ("regression", "hierarchical", "time series", "GP", "mixture", "HMM", "ODE")
"""The kinds of posterior in the suite (:attr:`Posterior.character`)."""

PYMC_EXTRA = "ckam-bench[pymc]"
"""The optional extra every posterior of the suite needs: each is a ``target=pymc`` run."""


def pymc_installed() -> bool:
    """Whether PyMC and pytensor are installed, asked without importing them (importing PyMC
    takes seconds; the suite's lists and files need neither)."""
    import importlib.util

    for module in ("pymc", "pytensor"):
        try:
            if importlib.util.find_spec(module) is None:  # also when sys.modules[module] is None
                return False
        except (ImportError, ValueError):  # a broken or half-imported module
            return False
    return True


POSTERIORDB, HARNESS = "posteriordb", "harness"
REFERENCE_SOURCES = {POSTERIORDB: "posteriordb's reference draws",
                     HARNESS: "a reference the harness certified"}
"""Whose reference a posterior has (:attr:`Posterior.reference_source`), and how it is said."""


@dataclass(frozen=True)
class Posterior:
    """One posteriordb posterior of the suite."""

    name: str
    """posteriordb posterior name, ``<data>-<model>``."""
    function: str
    """name of the model function in :mod:`ckam_bench.posteriordb.models`."""
    character: str
    """its kind, one of :data:`CHARACTERS`."""
    dim: int
    """number of unconstrained coordinates (Stan's parameters, the target's ``dim``)."""
    note: str
    """what makes it a test."""
    reference_of: str | None = None
    """the posteriordb posterior whose reference draws it shares, when not its own."""
    reference_source: str = POSTERIORDB
    """whose reference it is (:data:`REFERENCE_SOURCES`): ``"posteriordb"``, posteriordb's draws
    shipped as ``reference/<reference>.npz``; ``"harness"``, a reference the harness certified,
    found under the target's reference id (``ckam_bench/data/references/``, else the user's
    cache) — or none yet, which :func:`ckam_bench.posteriordb.subset.reference_status` tells
    from the files."""
    module: str = "ckam_bench.posteriordb.models"
    """the module defining the model function (the suite's and the first registries' are all
    re-exported by :mod:`ckam_bench.posteriordb.models`; later families keep their own path)."""

    @property
    def data(self) -> str:
        """posteriordb data name (``data/<data>.npz``): the part of the name before ``-``."""
        return self.name.split("-", 1)[0]

    @property
    def reference(self) -> str:
        """posteriordb reference posterior name (``reference/<reference>.npz``)."""
        return self.reference_of or self.name

    @property
    def model(self) -> str:
        """The ``target.model`` string of the pymc target."""
        return f"{self.module}:{self.function}"

    def build(self):
        """The ``pymc.Model`` of this posterior (its model function called)."""
        import importlib

        return getattr(importlib.import_module(self.module), self.function)()


_P = Posterior
SUITE: dict[str, Posterior] = {p.name: p for p in (
    _P("eight_schools-eight_schools_centered", "eight_schools_centered", "hierarchical", 10,
       "centred: Neal's funnel between log tau and theta",
       reference_of="eight_schools-eight_schools_noncentered"),
    _P("eight_schools-eight_schools_noncentered", "eight_schools_noncentered", "hierarchical", 10,
       "the same posterior non-centred: nearly Gaussian"),
    _P("kidiq-kidscore_interaction", "kidscore_interaction", "regression", 5,
       "uncentred predictors and an interaction: correlations ~0.99"),
    _P("mesquite-mesquite", "mesquite", "regression", 8,
       "flat priors, uncentred predictors, scales 1 to 100s"),
    _P("kilpisjarvi_mod-kilpisjarvi", "kilpisjarvi", "regression", 3,
       "linear trend with years ~4000 as predictor: intercept/slope correlation ~ -1"),
    _P("sblrc-blr", "sblrc_blr", "regression", 6,
       "simulated correlated design (posterior correlation 0.8)"),
    _P("arK-arK", "arK", "time series", 7, "AR(5)"),
    _P("garch-garch11", "garch11", "time series", 4,
       "GARCH(1,1) volatility, a parameter bound depending on another"),
    _P("gp_pois_regr-gp_regr", "gp_regr", "GP", 3, "Gaussian process regression hyperparameters, skewed"),
    _P("gp_pois_regr-gp_pois_regr", "gp_pois_regr", "GP",
       13, "latent Gaussian process with a Poisson likelihood, whitened"),
    _P("low_dim_gauss_mix-low_dim_gauss_mix", "low_dim_gauss_mix", "mixture", 5,
       "two-component Gaussian mixture, ordered means (label switching removed)"),
    _P("diamonds-diamonds", "diamonds", "regression", 26,
       "brms regression with 24 polynomial-contrast predictors: ill-conditioned"),
    # ------------------------------------------------------------------ regressions.py
    _P("earnings-earn_height", "earn_height", "regression", 3,
       "earnings in dollars on height: scales 0.02 to 10^4 (conditioning ~5e5), correlation -0.998"),
    _P("earnings-log10earn_height", "log10earn_height", "regression", 3,
       "log10 earnings on uncentred height: correlation -0.998"),
    _P("earnings-logearn_height", "logearn_height", "regression", 3,
       "log earnings on uncentred height: correlation -0.998"),
    _P("earnings-logearn_height_male", "logearn_height_male", "regression", 4,
       "log earnings on uncentred height and sex: correlation -0.998"),
    _P("earnings-logearn_logheight_male", "logearn_logheight_male", "regression", 4,
       "log earnings on log height and sex: correlation -0.9999"),
    _P("earnings-logearn_interaction", "logearn_interaction", "regression", 5,
       "uncentred height and a height x sex interaction: correlation -0.999, scales 0.01 to 1.3"),
    _P("earnings-logearn_interaction_z", "logearn_interaction_z", "regression", 5,
       "the same regression, height standardised: well conditioned (scale ratio ~5)"),
    _P("kidiq-kidscore_momhs", "kidscore_momhs", "regression", 3,
       "one binary predictor: correlation -0.88"),
    _P("kidiq-kidscore_momiq", "kidscore_momiq", "regression", 3,
       "uncentred IQ as predictor: correlation -0.99"),
    _P("kidiq-kidscore_momhsiq", "kidscore_momhsiq", "regression", 4,
       "uncentred IQ and a binary predictor: correlation -0.95"),
    _P("kidiq_with_mom_work-kidscore_interaction_c", "kidscore_interaction_c", "regression", 5,
       "kidscore_interaction with centred predictors: correlations <= 0.42"),
    _P("kidiq_with_mom_work-kidscore_interaction_c2", "kidscore_interaction_c2", "regression", 5,
       "kidscore_interaction centred on reference points (0.5, 100): correlations <= 0.68"),
    _P("kidiq_with_mom_work-kidscore_interaction_z", "kidscore_interaction_z", "regression", 5,
       "kidscore_interaction standardised by 2 sd: correlations <= 0.43"),
    _P("kidiq_with_mom_work-kidscore_mom_work", "kidscore_mom_work", "regression", 5,
       "one four-level factor as indicators: correlations <= 0.85"),
    _P("mesquite-logmesquite", "logmesquite", "regression", 8,
       "log-log regression, flat priors, 46 observations: correlations <= 0.77"),
    _P("mesquite-logmesquite_logvolume", "logmesquite_logvolume", "regression", 3,
       "log weight on log canopy volume: nearly Gaussian"),
    _P("mesquite-logmesquite_logva", "logmesquite_logva", "regression", 5,
       "log canopy volume and area, nearly collinear: correlation -0.96"),
    _P("mesquite-logmesquite_logvash", "logmesquite_logvash", "regression", 7,
       "volume, area, shape and height on the log scale: correlation -0.95"),
    _P("mesquite-logmesquite_logvas", "logmesquite_logvas", "regression", 8,
       "logmesquite_logvash plus log density: correlation -0.95"),
    *(_P(f"nes{year}-nes", f"nes{year}", "regression", 10,
         "party identification on 8 survey predictors (476-1350 respondents): scales 0.02 to 0.7, "
         "correlations <= 0.78") for year in range(1972, 2001, 4)),
    _P("sblri-blr", "sblri_blr", "regression", 6,
       "linear regression, simulated independent design: nearly independent coefficients"),
    # ------------------------------------------------------------------ series.py
    _P("arma-arma11", "arma11", "time series", 4, "ARMA(1,1), the errors a recursion in theta"),
    # ------------------------------------------------------------------ hmm.py
    _P("hmm_example-hmm_example", "hmm_example", "HMM", 4,
       "two-state Gaussian HMM (100 steps), forward algorithm; simplex and positive_ordered parameters"),
    _P("bball_drive_event_0-hmm_drive_0", "hmm_drive_0", "HMM", 6,
       "two-state HMM of basketball drives (416 steps), exponential emissions"),
    _P("bball_drive_event_1-hmm_drive_1", "hmm_drive_1", "HMM", 6,
       "the same drives with normal emissions of fixed scale"),
    # ------------------------------------------------------------------ ode.py
    _P("hudson_lynx_hare-lotka_volterra", "lotka_volterra", "ODE", 8,
       "Lotka-Volterra predator-prey ODE on 20 years of pelts, lognormal errors"),
    _P("one_comp_mm_elim_abs-one_comp_mm_elim_abs", "one_comp_mm_elim_abs", "ODE", 4,
       "one-compartment pharmacokinetics, Michaelis-Menten elimination: stiff near the dose, "
       "K_m spread over six orders of magnitude"),
)}

NOT_SHIPPED: dict[str, str] = {
    "mcycle_gp-accel_gp": "its reference draws (posterior_database/reference_posteriors/draws/draws/"
                          "mcycle_gp-accel_gp.json.zip, blob 91b04de) are missing from the posteriordb "
                          "mirror this suite was built from, so they are not shipped; its published "
                          "summaries are in the mirror, and the suite runs it with a reference the "
                          "harness certified and checked against them (later.LATER)",
}
"""posteriordb's reference draws at :data:`POSTERIORDB_COMMIT` that the suite does not ship,
each with the reason (a posterior here may still be in the suite with a reference the harness
certified: :data:`ckam_bench.posteriordb.later.LATER`)."""


def load_data(data_name: str) -> dict[str, np.ndarray]:
    """posteriordb's data set ``data_name`` (the Stan data block's names as keys)."""
    with np.load(DATA_DIR / f"{data_name}.npz") as archive:
        return {key: archive[key] for key in archive.files}


def load_reference(reference_name: str) -> tuple[list[str], np.ndarray]:
    """posteriordb's reference draws: its column names (``beta[1]``, ...) and the draws,
    an array (chains, draws per chain, columns) on the constrained scale (float64 copy of the
    shipped float32)."""
    with np.load(REFERENCE_DIR / f"{reference_name}.npz") as archive:
        return [str(n) for n in archive["names"]], archive["draws"].astype(np.float64)


def reference_columns(reference_name: str) -> dict[str, np.ndarray]:
    """The reference draws grouped by Stan variable: ``{"beta": (n, 4), "sigma": (n,)}`` with
    the chains concatenated (n = chains x draws); Stan's 1-based ``beta[i]`` become column i-1."""
    names, draws = load_reference(reference_name)
    flat = draws.reshape(-1, draws.shape[-1])
    groups: dict[str, list[tuple[int, int]]] = {}
    for column, name in enumerate(names):
        match = re.fullmatch(r"([^\[]+)(?:\[(\d+)\])?", name)
        groups.setdefault(match[1], []).append((int(match[2] or 0), column))
    out = {}
    for var, entries in groups.items():
        if entries == [(0, entries[0][1])]:
            out[var] = flat[:, entries[0][1]]
        else:
            entries.sort()
            if [i for i, _ in entries] != list(range(1, len(entries) + 1)):
                raise ValueError(f"{reference_name}: the columns of {var} are not {var}[1..n]")
            out[var] = flat[:, [c for _, c in entries]]
    return out


def registered() -> dict[str, Posterior]:
    """Every posterior the suite knows, in its order: :data:`SUITE` (posteriordb's draws), then
    :data:`~ckam_bench.posteriordb.highdim.HIGHDIM` (references the harness certified, or none
    yet), then :data:`~ckam_bench.posteriordb.later.LATER` (posteriordb's references added after
    v1.0: references the harness certified, checked against posteriordb's summaries), then
    :data:`~ckam_bench.posteriordb.hard.HARD` (posteriordb's other posteriors that stress samplers,
    references the harness certified)."""
    from ckam_bench.posteriordb.hard import HARD
    from ckam_bench.posteriordb.highdim import HIGHDIM
    from ckam_bench.posteriordb.later import LATER

    return {**SUITE, **HIGHDIM, **LATER, **HARD}


def suite_name(model_spec: str) -> str | None:
    """The posteriordb name of a ``target.model`` string of a registered posterior, else None."""
    return next((p.name for p in registered().values() if p.model == model_spec), None)


_REFERENCES = Recent()  # (name, reference id) -> (certificate, arrays), the last few
_SHIPPED_DATA: dict = {}  # posterior name -> data_sha256 of its model on the shipped data


def shipped_data_sha256(name: str) -> str:
    """``describe()["data_sha256"]`` of the suite model of posterior ``name`` on its shipped
    data (every array its density reads, by their bytes), built once per process and name."""
    if name not in _SHIPPED_DATA:
        from ckam_bench.targets.pymc import PyMCModel

        _SHIPPED_DATA[name] = PyMCModel(registered()[name].model).describe()["data_sha256"]
    return _SHIPPED_DATA[name]


def reference_for(target):
    """posteriordb's reference draws as the certified reference (:class:`ckam_bench.reference_lookup.
    Reference`) of a ``target=pymc`` target running a model of :data:`SUITE` on its shipped data:
    the target's ``data_sha256`` (the arrays it holds now, however set: ``target.data``,
    ``set_data``) is that of the model on the shipped data (:func:`shipped_data_sha256`). None
    for any other target (another model, other data, or a posterior whose reference the harness
    certified: that one is found by the target's reference id).
    Registered as a reference provider when this package is imported
    (:mod:`ckam_bench.reference_providers`): the pymc target asks there, never here."""
    name = suite_name(getattr(target, "spec", None))
    if name is None or registered()[name].reference_source != POSTERIORDB \
            or target.describe().get("data_sha256") != shipped_data_sha256(name):
        return None
    from ckam_bench.posteriordb.models import harness_reference
    from ckam_bench.reference_lookup import Reference

    key = (name, target.reference_id())
    if key not in _REFERENCES:  # the moments and the MMD both ask, and every job of a worker
        certificate, arrays = harness_reference(name, target)
        _REFERENCES[key] = certificate, {**arrays, "samples": arrays["samples"].astype(float)}
    certificate, arrays = _REFERENCES[key]
    return Reference(samples=arrays["samples"], chain=arrays["chain"], mean=arrays["mean"],
                     second_moment=arrays["second_moment"], variance=arrays["variance"],
                     fourth_moment=arrays["fourth_moment"], mcse_mean=arrays["mcse_mean"],
                     certificate=certificate, path=REFERENCE_DIR / f"{SUITE[name].reference}.npz")


register_reference_provider(reference_for)
