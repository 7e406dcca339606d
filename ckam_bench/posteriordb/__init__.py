"""The posteriordb suite: eleven posteriors of posteriordb (Magnusson et al., github.com/stan-dev/
posteriordb) written as PyMC models equal to their Stan programs, with posteriordb's data and
reference draws shipped as package data (``data/``, ``reference/``; sources, licences and
transformations in ``SOURCES.md``; nothing is downloaded at run time).

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

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "data"
REFERENCE_DIR = HERE / "reference"
POSTERIORDB_COMMIT = "28f8d3d6e975315f42aa274a8399f21e07a43b30"


@dataclass(frozen=True)
class Posterior:
    """One posteriordb posterior of the suite."""

    name: str
    """posteriordb posterior name, ``<data>-<model>``."""
    function: str
    """name of the model function in :mod:`ckam_bench.posteriordb.models`."""
    character: str
    """what makes it a test."""
    reference_of: str | None = None
    """the posteriordb posterior whose reference draws it shares, when not its own."""

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
        return f"ckam_bench.posteriordb.models:{self.function}"


SUITE: dict[str, Posterior] = {p.name: p for p in (
    Posterior("eight_schools-eight_schools_centered", "eight_schools_centered",
              "hierarchical, centred: Neal's funnel between log tau and theta (10 dims)",
              reference_of="eight_schools-eight_schools_noncentered"),
    Posterior("eight_schools-eight_schools_noncentered", "eight_schools_noncentered",
              "the same posterior non-centred: nearly Gaussian (10 dims)"),
    Posterior("kidiq-kidscore_interaction", "kidscore_interaction",
              "linear regression, uncentred predictors and an interaction: correlations ~0.99 (5 dims)"),
    Posterior("mesquite-mesquite", "mesquite",
              "linear regression with flat priors, uncentred predictors, scales 1 to 100s (8 dims)"),
    Posterior("kilpisjarvi_mod-kilpisjarvi", "kilpisjarvi",
              "linear trend with years ~4000 as predictor: intercept/slope correlation ~ -1 (3 dims)"),
    Posterior("sblrc-blr", "sblrc_blr",
              "linear regression, simulated correlated design (posterior correlation 0.8, 6 dims)"),
    Posterior("arK-arK", "arK", "AR(5) time series (7 dims)"),
    Posterior("garch-garch11", "garch11",
              "GARCH(1,1) volatility time series, a parameter bound depending on another (4 dims)"),
    Posterior("gp_pois_regr-gp_regr", "gp_regr",
              "Gaussian process regression hyperparameters, skewed (3 dims)"),
    Posterior("gp_pois_regr-gp_pois_regr", "gp_pois_regr",
              "latent Gaussian process with a Poisson likelihood, whitened (13 dims)"),
    Posterior("low_dim_gauss_mix-low_dim_gauss_mix", "low_dim_gauss_mix",
              "two-component Gaussian mixture, ordered means (label switching removed, 5 dims)"),
    Posterior("diamonds-diamonds", "diamonds",
              "brms regression with 24 polynomial-contrast predictors: ill-conditioned (26 dims)"),
)}


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


def suite_name(model_spec: str) -> str | None:
    """The posteriordb name of a ``target.model`` string of the suite, else None."""
    return next((p.name for p in SUITE.values() if p.model == model_spec), None)


_REFERENCES: dict = {}


def reference_for(target):
    """posteriordb's reference draws as the certified reference (:class:`ckam_bench.reference.
    Reference`) of a ``target=pymc`` target running a suite model on its shipped data; None for
    any other target (another model, or other data through ``target.data``)."""
    name = suite_name(getattr(target, "spec", None))
    if name is None or getattr(target, "data_file", None) is not None:
        return None
    from ckam_bench.posteriordb.models import harness_reference
    from ckam_bench.reference import Reference

    key = (name, target.reference_id())
    if key not in _REFERENCES:  # the moments and the MMD both ask
        _REFERENCES[key] = harness_reference(name, target)
    certificate, arrays = _REFERENCES[key]
    return Reference(samples=arrays["samples"].astype(float), chain=arrays["chain"], mean=arrays["mean"],
                     second_moment=arrays["second_moment"], variance=arrays["variance"],
                     fourth_moment=arrays["fourth_moment"], mcse_mean=arrays["mcse_mean"],
                     certificate=certificate, path=REFERENCE_DIR / f"{SUITE[name].reference}.npz")
