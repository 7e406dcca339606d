"""posteriordb posteriors whose posteriordb reference was added after v1.0 (issue 45 §1): their
registry. Their Stan programs and data are in the v1.0 mirror (data shipped in ``data/``, built by
:func:`ckam_bench.posteriordb.build.build_later`); posteriordb's reference draws are not (they
came later, as zip files), so their references are ones the harness certified with
``ckam-bench-reference``'s criteria, shipped in ``ckam_bench/data/references/`` and found by the
target's reference id, and each is checked against posteriordb's published summaries
(:data:`POSTERIORDB_SUMMARIES`; docs/posteriordb.md, "posteriordb's newer references"). Models in
:mod:`ckam_bench.posteriordb.rates`, re-exported by :mod:`ckam_bench.posteriordb.models`. This
module needs no PyMC.
"""

from __future__ import annotations

from ckam_bench.posteriordb import HARNESS, Posterior

_P = Posterior
LATER: dict[str, Posterior] = {p.name: p for p in (
    _P("Rate_1_data-Rate_1_model", "rate_1", "regression", 1,
       "one binomial rate under a uniform prior (5 of 10): a Beta(6, 6) posterior",
       reference_source=HARNESS),
    _P("Rate_3_data-Rate_3_model", "rate_3", "regression", 1,
       "one rate common to two binomial counts (5 and 7 of 10): a Beta(13, 9) posterior",
       reference_source=HARNESS),
    _P("Rate_5_data-Rate_5_model", "rate_5", "regression", 1,
       "one rate common to two binomial counts at the boundaries (0 and 10 of 10): Beta(11, 11)",
       reference_source=HARNESS),
    _P("Rate_2_data-Rate_2_model", "rate_2", "regression", 2,
       "two independent binomial rates (5 and 7 of 10): Beta(6, 6) x Beta(8, 4)",
       reference_source=HARNESS),
    _P("Rate_4_data-Rate_4_model", "rate_4", "regression", 2,
       "a binomial rate near 0 (1 of 15: Beta(2, 15)) beside a rate under its prior alone "
       "(uniform): scales 0.08 and 0.29",
       reference_source=HARNESS),
)}
"""posteriordb name -> :class:`~ckam_bench.posteriordb.Posterior` (``reference_source`` is
``HARNESS``: the reference is the one the harness certified for the target)."""

DATA_KEYS: dict[str, tuple[str, ...]] = {
    "Rate_1_data": ("n", "k"),
    "Rate_2_data": ("n1", "n2", "k1", "k2"),
    "Rate_3_data": ("n1", "n2", "k1", "k2"),
    "Rate_4_data": ("n", "k"),
    "Rate_5_data": ("n1", "n2", "k1", "k2"),
}
"""The keys of each posteriordb data set that its Stan program's data block declares."""

EXACT_BETA: dict[str, dict[str, tuple[int, int]]] = {
    "Rate_1_data-Rate_1_model": {"theta": (6, 6)},
    "Rate_3_data-Rate_3_model": {"theta": (13, 9)},
    "Rate_5_data-Rate_5_model": {"theta": (11, 11)},
    "Rate_2_data-Rate_2_model": {"theta1": (6, 6), "theta2": (8, 4)},
    "Rate_4_data-Rate_4_model": {"theta": (2, 15), "thetaprior": (1, 1)},
}
"""The exact posterior of each rate model (conjugate: beta(1, 1) prior, k of n observed gives
Beta(1 + k, 1 + n - k); a common rate sums the counts), a check sharing nothing with either
sampler."""

_M = "reference_posteriors/summary_statistics/mean_value/mean_value/"
_S = "reference_posteriors/summary_statistics/mean_squared_value/mean_squared_value/"
POSTERIORDB_SUMMARIES: dict[str, dict] = {
    "Rate_1_data-Rate_1_model": {
        "names": ["theta"], "mean": [0.50064589800000003], "mcse_mean": [0.0013927485088148705],
        "mean_sq": [0.26994058370029783], "mcse_mean_sq": [0.0014213989354137165],
        "files": {_M: "350f2d1eed348bef2d9a597618e0c69d5ba20a9d", _S: "5545a1dd07ae297c36edecbcd82aa49097b4c385"}},
    "Rate_3_data-Rate_3_model": {
        "names": ["theta"], "mean": [0.59098086289999996], "mcse_mean": [0.0010193858344279207],
        "mean_sq": [0.35958533268368248], "mcse_mean_sq": [0.0011959179846367462],
        "files": {_M: "6769d183c3232f81d928f7f95b54ac751f360c07", _S: "36e086dfaeb535cb3cac4dce668ab07515e00a54"}},
    "Rate_5_data-Rate_5_model": {
        "names": ["theta"], "mean": [0.49930399260000002], "mcse_mean": [0.0010352352404726531],
        "mean_sq": [0.26008118797115659], "mcse_mean_sq": [0.0010419523301447966],
        "files": {_M: "1a1edf4276995b3f8d517c030e75d1f59d4df677", _S: "e79096ffc2d6da0536817db46784c3dade5aba68"}},
    "Rate_2_data-Rate_2_model": {
        "names": ["theta1", "theta2"], "mean": [0.50204180448000002, 0.66451210490000001],
        "mcse_mean": [0.0013847873874691767, 0.0012903775264437964],
        "mean_sq": [0.27134707424432236, 0.45850956939295667],
        "mcse_mean_sq": [0.0014190306525131828, 0.0016671284516323768],
        "files": {_M: "5545a1dd07ae297c36edecbcd82aa49097b4c385", _S: "5545a1dd07ae297c36edecbcd82aa49097b4c385"}},
    "Rate_4_data-Rate_4_model": {
        "names": ["theta", "thetaprior"], "mean": [0.11803619001450899, 0.49982082648707099],
        "mcse_mean": [0.00074209065469507641, 0.0028817423269973984],
        "mean_sq": [0.01963122905178764, 0.33326508048521652],
        "mcse_mean_sq": [0.00025102230333226203, 0.0029780456215864888],
        "files": {_M: "31f650665813620cc7dc4438966541f5bc9edaea", _S: "1c5bca5358d1d2c64e689edc38ab780663dd4876"}},
}
"""posteriordb's published summaries of each reference (Stan, 10 chains x 1000 kept draws), read
from github.com/stan-dev/posteriordb with the search tool's ``read_file``: ``posterior_database/``
+ the folder in ``files``, ``<name>.json``, at the commit given (later than v1.0, not in the
mirror). ``mean`` and ``mcse_mean`` are the mean_value file's ``mean_value`` and ``mcse_mean``;
``mean_sq`` and ``mcse_mean_sq`` the mean_squared_value file's value (``mean_squared_value``; in
Rate_1's file the key is ``mean_value``) and its ``mcse_mean`` (the MCSE of the mean of x²).
Only Stan's parameters are summarised here: Rate_2's transformed ``delta`` and the generated
posterior predictive draws of Rate_4 and Rate_5 are not in these files."""


def spec(name: str) -> str:
    """The ``target.model`` string of a posterior of :data:`LATER`."""
    return LATER[name].model
