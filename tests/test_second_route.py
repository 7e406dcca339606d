"""The second route of every harness-certified reference (issue 45 §2): the shipped summary
``ckam_bench/data/references/second_route.json`` (made by ``scripts/second_route.py build``: the
density written again from the Stan program in NumPyro, posteriordb's own data file, BlackJAX's
adjusted MCLMC) agrees with each shipped reference per coordinate, mean and sd, in MCSE units.

No sampling, no posteriordb mirror, no PyMC: the references are found among the shipped ones by
their certificate's ``target.model`` (each harness-certified posterior's ``model`` string).

Per coordinate, z = (reference - second route) / sqrt(MCSE_ref² + MCSE_2²), for the mean and for
the sd. The scale compared is the reference's:

- the newer posteriordb posteriors (ckam_bench/posteriordb/later.py) have a constrained summary in
  their certificate (``"constrained"``: Stan's parameters over every draw of the ten chains), so
  they are compared on Stan's constrained scale: mean and MCSE as shipped; sd =
  sqrt(mean_sq - mean²); its MCSE sd sqrt((kurtosis - 1) / (4 ESS)) (the delta method), the
  kurtosis from the reference's stored draws mapped to Stan's scale, ESS the smaller of the
  coordinate's bulk and tail ESS in the certificate (both invariant under Stan's monotone
  transforms). The second route's MCSE dominates that sum (its ESS is 5-50 times smaller), so
  the approximation moves z little.
- the high-dimensional ones (highdim.py) carry the moments of their unconstrained draws only
  (``mean``, ``variance``, ``mcse_mean`` arrays; the MCSE of each sd in the certificate's
  ``second_route["reference_mcse_sd"]``): each coordinate whose Stan transform is the identity
  (all but the 1-5 scale parameters) is compared on Stan's scale as it is; a scale parameter is
  compared on the reference's unconstrained scale, ``log(sigma)`` for ``<lower=0>`` and
  ``logit(sigma / U)`` for ``<lower=0, upper=U>``, which the second route also summarises (the
  same map applied to its constrained draws).

The bound: Bonferroni at family-wise level :data:`ALPHA` = 1e-3 over every comparison (mean and
sd of every coordinate of every posterior, :func:`bound`: 2 x 2449 = 4898 comparisons, |z| < 5.20).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm

from ckam_bench.posteriordb import database
from ckam_bench.posteriordb.hard import HARD

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "ckam_bench" / "data" / "references" / "second_route.json"
ALPHA = 1e-3
NO_REFERENCE = {name: f"no certified reference shipped: {why}" for name, why in database.WHY_NOT_CERTIFIED.items()}
"""registered harness posteriors without a shipped reference (the package's own list of them,
:data:`ckam_bench.posteriordb.database.WHY_NOT_CERTIFIED`): nothing to compare; the test checks
that they indeed have none."""
BOUNDS = {"sd_alpha": 5.0, **{f"sigma_{g}": 100.0 for g in "abcde"}, "sigma_y": 100.0, "lambda": (0.5, 1.0),
          "theta": 1.0}
"""the bounds of a ``<lower=L, upper=U>`` parameter of the compared posteriors: U (L = 0), or
(L, U)."""


def interval(stan: str) -> tuple[float, float]:
    """(L, U) of the interval-constrained Stan parameter ``stan`` (``sigma_y`` or ``b[3]``)."""
    b = BOUNDS[stan.split("[")[0]]
    return b if isinstance(b, tuple) else (0.0, b)
MIN_ESS = 1000
"""the least bulk ESS of a second route's coordinates: with a few effective draws its MCSE is so
wide that any reference agrees (MAMS on pilots: bulk ESS 5, max |z| 2.7)."""
_SUFFIX = re.compile(r"_(log|logodds|interval)__$")


def harness_names() -> list[str]:
    """The registered posteriors whose reference the harness certified (registry order)."""
    from ckam_bench.posteriordb import POSTERIORDB, registered

    return [n for n, p in registered().items() if p.reference_source != POSTERIORDB]


@lru_cache(maxsize=None)
def _certificates() -> dict[str, Path]:
    """target.model -> the shipped reference file certified for it (None when several)."""
    out: dict[str, list[Path]] = {}
    for path in sorted((ROOT / "ckam_bench" / "data" / "references").glob("*.json")):
        if path.name == SUMMARY.name or not path.with_suffix(".npz").is_file():
            continue
        model = json.loads(path.read_text()).get("target", {}).get("model")
        out.setdefault(model, []).append(path.with_suffix(".npz"))
    return {m: p[0] if len(p) == 1 else None for m, p in out.items()}


def reference_file(name: str) -> Path | None:
    from ckam_bench.posteriordb import registered

    return _certificates().get(registered()[name].model)


def _stan_name(coordinate: str) -> tuple[str, str]:
    """(Stan's constrained name, transform) of a PyMC value variable's coordinate:
    ``a[0]`` -> ``a[1]``; ``sigma_y_log__`` -> (``sigma_y``, ``log``)."""
    m = re.fullmatch(r"(.+?)(?:\[(\d+)\])?", coordinate)
    base, index = m.group(1), m.group(2)
    s = _SUFFIX.search(base)
    kind = s.group(1) if s else ""
    base = _SUFFIX.sub("", base)
    return (base if index is None else f"{base}[{int(index) + 1}]"), kind


def compared_name(stan: str, kind: str) -> str:
    """The name of a coordinate on the unconstrained scale of the reference."""
    if kind == "log":
        return f"log({stan})"
    if kind == "interval":
        lo, hi = interval(stan)
        return f"logit({stan}/{hi:g})" if lo == 0 else f"logit(({stan}-{lo:g})/{hi - lo:g})"
    if kind == "logodds":
        return f"logit({stan})"
    return stan


def _to_stan(x: np.ndarray, stan: str, kind: str) -> np.ndarray:
    if kind == "log":
        return np.exp(x)
    if kind == "logodds":
        return expit(x)
    if kind == "interval":
        lo, hi = interval(stan)
        return lo + (hi - lo) * expit(x)
    return x


@lru_cache(maxsize=None)
def reference_summary(name: str) -> dict:
    """The reference's side of the comparison: names (Stan's constrained names), compared names
    (the scale compared, see the module docstring), mean, sd, mcse_mean, mcse_sd, file."""
    from ckam_bench.reference_lookup import read_reference

    path = reference_file(name)
    ref = read_reference(path)
    c = ref.certificate
    stan, kinds = zip(*(_stan_name(x) for x in c["target"]["coordinates"]))
    out = {"file": path.name, "reference_id": c["reference_id"], "names": list(stan)}
    if "constrained" in c:
        s = c["constrained"]
        assert s["names"] == list(stan), (name, s["names"], stan)
        mean, mean_sq = np.array(s["mean"]), np.array(s["mean_sq"])
        sd = np.sqrt(mean_sq - mean**2)
        x = np.column_stack([_to_stan(ref.samples[:, j], stan[j], kinds[j]) for j in range(len(stan))])
        xc = x - x.mean(0)
        kurt = (xc**4).mean(0) / (xc**2).mean(0) ** 2
        ess = np.minimum(c["diagnostics"]["ess_bulk"], c["diagnostics"]["ess_tail"])
        out.update(compared=list(stan), mean=mean, sd=sd, mcse_mean=np.array(s["mcse_mean"]),
                   mcse_sd=sd * np.sqrt((kurt - 1) / (4 * ess)), scale="constrained")
    else:
        out.update(compared=[compared_name(a, k) for a, k in zip(stan, kinds)], mean=ref.mean,
                   sd=np.sqrt(ref.variance), mcse_mean=ref.mcse_mean,
                   mcse_sd=np.array(c["second_route"]["reference_mcse_sd"]),
                   scale="constrained where Stan's transform is the identity, else unconstrained")
    return out


@lru_cache(maxsize=None)
def shipped() -> dict:
    return json.loads(SUMMARY.read_text())


def compare(name: str, route: str | None = None) -> dict:
    """z of the means and of the sds per compared coordinate (reference minus second route; the
    second route of posterior ``route``, by default ``name``'s own)."""
    ref, ours = reference_summary(name), shipped()["posteriors"][route or name]
    at = {n: i for i, n in enumerate(ours["names"])}
    idx = [at[n] for n in ref["compared"]]
    col = lambda k: np.array(ours[k], float)[idx]  # noqa: E731
    z_mean = (ref["mean"] - col("mean")) / np.hypot(ref["mcse_mean"], col("mcse_mean"))
    z_sd = (ref["sd"] - col("sd")) / np.hypot(ref["mcse_sd"], col("mcse_sd"))
    return {"names": ref["compared"], "z_mean": z_mean, "z_sd": z_sd}


def n_comparisons() -> int:
    return sum(2 * len(reference_summary(n)["names"]) for n in harness_names() if n not in NO_REFERENCE)


def bound() -> float:
    """Bonferroni: two-sided, family-wise ALPHA over every mean and sd of every posterior."""
    return float(norm.isf(ALPHA / (2 * n_comparisons())))


def summary_table() -> str:
    s = shipped()["posteriors"]
    lines = [f"Bonferroni bound at family-wise {ALPHA:g} over {n_comparisons()} comparisons: |z| < {bound():.2f}.",
             "", "| posterior | d | algorithm | chains × draws | min bulk ESS | CPU s "
             "| max \\|z\\| mean | max \\|z\\| sd |",
             "|---|---|---|---|---|---|---|---|"]
    for name in harness_names():
        if name in NO_REFERENCE:
            lines.append(f"| {name} | — | — | — | — | — | {NO_REFERENCE[name]} | |")
            continue
        if name not in s:
            lines.append(f"| {name} | {len(reference_summary(name)['names'])} | not run | | | | | |")
            continue
        z, p = compare(name), s[name]
        ess = np.array(p["ess_bulk"], float)[[p["names"].index(n) for n in z["names"]]]
        lines.append(f"| {name} | {len(z['names'])} | {p['algorithm'].split(' (')[0]} | {p['chains']} × {p['draws']} | "
                     f"{ess.min():.0f} | {p['cpu_seconds']:.0f} | {np.max(np.abs(z['z_mean'])):.2f} | "
                     f"{np.max(np.abs(z['z_sd'])):.2f} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- the tests
def test_the_set_is_the_registrys():
    """Every harness-certified posterior with a shipped reference has its second route, no
    other has one; those without a shipped reference indeed have none."""
    names = harness_names()
    with_ref = [n for n in names if reference_file(n) is not None]
    assert sorted(set(names) - set(with_ref)) == sorted(NO_REFERENCE)
    assert sorted(shipped()["posteriors"]) == sorted(with_ref)
    assert len(with_ref) == 17 + 9 + len(HARD) - len(NO_REFERENCE)  # LATER's, HIGHDIM's, HARD's, less those without


@pytest.mark.parametrize("name", [n for n in harness_names() if n not in NO_REFERENCE])
def test_second_route_agrees(name):
    """The summary covers every constrained coordinate of the reference (and the compared
    scale), records how it was made, and agrees with the reference below the Bonferroni bound."""
    p, ref = shipped()["posteriors"][name], reference_summary(name)
    assert set(ref["names"]) <= set(p["names"]) and set(ref["compared"]) <= set(p["names"])
    assert p["reference_file"] == ref["file"]
    assert p["algorithm"] and p["chains"] >= 4 and p["draws"] > 0 and p["cpu_seconds"] > 0
    assert {"numpyro", "blackjax", "jax"} <= set(p["versions"])
    for k in ("mean", "sd", "mcse_mean", "mcse_sd", "ess_bulk"):
        assert len(p[k]) == len(p["names"]) and np.isfinite(p[k]).all()
    assert min(p["ess_bulk"]) >= MIN_ESS, (name, "a route that barely moved agrees with anything")
    z, crit = compare(name), bound()
    assert np.max(np.abs(z["z_mean"])) < crit, (name, "mean", z)
    assert np.max(np.abs(z["z_sd"])) < crit, (name, "sd", z)


def test_another_posteriors_route_fails():
    """The comparison has teeth: the same Stan program on other data (radon_pooled on Minnesota's
    919 homes against the reference of all 12 573) is far outside the bound."""
    z = compare("radon_all-radon_pooled", route="radon_mn-radon_pooled")
    assert np.max(np.abs(z["z_mean"])) > 10 * bound() and np.max(np.abs(z["z_sd"])) > 10 * bound()


if __name__ == "__main__":
    print(summary_table())
