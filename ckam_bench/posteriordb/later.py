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
    _P("wells_data-wells_dist", "wells_dist", "regression", 2,
       "logistic regression on distance in metres, flat priors (3020 households): scales 0.08 and "
       "0.0004, correlation -0.8", reference_source=HARNESS),
    _P("wells_data-wells_dist100_model", "wells_dist100", "regression", 2,
       "the same logistic regression on distance in 100 m (bernoulli_logit_glm), flat priors",
       reference_source=HARNESS),
    _P("wells_data-wells_dist100ars_model", "wells_dist100ars", "regression", 3,
       "logistic regression on distance and arsenic, flat priors", reference_source=HARNESS),
    _P("wells_data-wells_interaction_c_model", "wells_interaction_c", "regression", 4,
       "centred distance, arsenic and their interaction, flat priors: nearly uncorrelated",
       reference_source=HARNESS),
    _P("nes_logit_data-nes_logit_model", "nes_logit", "regression", 2,
       "1992 vote on income (1179 respondents), logistic, flat priors: correlation -0.9",
       reference_source=HARNESS),
    _P("radon_mn-radon_pooled", "radon_mn_pooled", "regression", 3,
       "complete pooling: log radon on floor, 919 Minnesota homes, a half-normal sd",
       reference_source=HARNESS),
    _P("radon_all-radon_pooled", "radon_all_pooled", "regression", 3,
       "complete pooling on 12573 homes of all states: a narrow posterior (sds ~0.01)",
       reference_source=HARNESS),
    _P("sesame_data-sesame_one_pred_a", "sesame_one_pred_a", "regression", 3,
       "watching on encouragement (240 children), flat priors, flat positive sd",
       reference_source=HARNESS),
    _P("dogs-dogs", "dogs", "regression", 3,
       "avoidance learning of 30 dogs x 25 trials: logistic on counts of previous avoidances and "
       "shocks, normal(0, 100) priors", reference_source=HARNESS),
    _P("dogs-dogs_hierarchical", "dogs_hierarchical", "regression", 2,
       "the same dogs, multiplicative: p = a^shocks b^avoidances, flat (0, 1) priors",
       reference_source=HARNESS),
    _P("M0_data-M0_model", "m0", "mixture", 2,
       "capture-recapture M0 (BPA ch. 6): 237 rows of an augmented data set, a two-component "
       "mixture per never-seen row (present but missed, or absent), flat (0, 1) priors",
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
    "wells_data": ("N", "switched", "dist", "arsenic"),
    "nes_logit_data": ("N", "income", "vote"),
    "sesame_data": ("N", "encouraged", "watched"),
    "dogs": ("n_dogs", "n_trials", "y"),
    "M0_data": ("M", "T", "y"),
}
"""The keys of each posteriordb data set that its Stan programs' data blocks declare (radon_mn and
radon_all are shipped already, for the high-dimensional radon posteriors, with the keys
radon_pooled reads)."""

EXACT_BETA: dict[str, dict[str, tuple[int, int]]] = {
    "Rate_1_data-Rate_1_model": {"theta": (6, 6)},
    "Rate_3_data-Rate_3_model": {"theta": (13, 9)},
    "Rate_5_data-Rate_5_model": {"theta": (11, 11)},
    "Rate_2_data-Rate_2_model": {"theta1": (6, 6), "theta2": (8, 4)},
    "Rate_4_data-Rate_4_model": {"theta": (2, 15), "thetaprior": (1, 1)},
}
"""The exact posterior of each rate model (only these: the others have none in closed form) (conjugate: beta(1, 1) prior, k of n observed gives
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
    "wells_data-wells_dist": {
        "names": ["beta[1]", "beta[2]"], "mean": [0.60604155150000005, -0.0062119718709999997],
        "mcse_mean": [0.00061708983992325077, 9.8559039674883387e-06],
        "mean_sq": [0.37090660634087569, 3.9538178279387651e-05],
        "mcse_mean_sq": [0.00074990668573524425, 1.2336413454500601e-07],
        "files": {_M: "6769d183c3232f81d928f7f95b54ac751f360c07", _S: "6769d183c3232f81d928f7f95b54ac751f360c07"}},
    "wells_data-wells_dist100_model": {
        "names": ["alpha", "beta[1]"], "mean": [0.60671024790000005, -0.62214344399999999],
        "mcse_mean": [0.00059559889769124905, 0.00097753701292564808],
        "mean_sq": [0.37171330619497389, 0.39653118099639101],
        "mcse_mean_sq": [0.00072396433059776597, 0.0012246163865923703],
        "files": {_M: "6769d183c3232f81d928f7f95b54ac751f360c07", _S: "6769d183c3232f81d928f7f95b54ac751f360c07"}},
    "wells_data-wells_dist100ars_model": {
        "names": ["alpha", "beta[1]", "beta[2]"],
        "mean": [0.0031888914225370203, -0.90004462184, 0.46164337178999998],
        "mcse_mean": [0.00079526253129230012, 0.0010554877727038407, 0.00041284125601596494],
        "mean_sq": [0.0062366523979085486, 0.82097789759019391, 0.21480477951497651],
        "mcse_mean_sq": [8.7010012297128805e-05, 0.0019167906479888369, 0.00038139103854801674],
        "files": {_M: "31f650665813620cc7dc4438966541f5bc9edaea", _S: "31f650665813620cc7dc4438966541f5bc9edaea"}},
    "wells_data-wells_interaction_c_model": {
        "names": ["alpha", "beta[1]", "beta[2]", "beta[3]"],
        "mean": [0.35207338497599999, -0.87730505821799998, 0.47035081646299998, -0.179868209142759],
        "mcse_mean": [0.00039282827207914617, 0.001061889550673995, 0.0004187235858159503, 0.0010276124000535994],
        "mean_sq": [0.12553075887693094, 0.78077909374021726, 0.22301370061792253, 0.042863620903657543],
        "mcse_mean_sq": [0.00027706501561767523, 0.0018725238502618348, 0.00039541502513412577,
                         0.0004023908244811526],
        "files": {_M: "153ad5cbfdb9e401acd2d8645b0853082d0b93fb", _S: "36e086dfaeb535cb3cac4dce668ab07515e00a54"}},
    "nes_logit_data-nes_logit_model": {
        "names": ["alpha", "beta[1]"], "mean": [-1.4078557532, 0.3277644569],
        "mcse_mean": [0.0019191235938921616, 0.00057357708544462959],
        "mean_sq": [2.0181230712052045, 0.11065946163891689],
        "mcse_mean_sq": [0.0054368241074216192, 0.00037879301933992993],
        "files": {_M: "5545a1dd07ae297c36edecbcd82aa49097b4c385", _S: "c2a4eb596861c29a9285970d28ad2475a299e0cf"}},
    "radon_mn-radon_pooled": {
        "names": ["alpha", "beta", "sigma_y"], "mean": [1.362768223, -0.58703520109999996, 0.79098294629999999],
        "mcse_mean": [0.00029094984196310035, 0.00070790305356654645, 0.00018810801678683677],
        "mean_sq": [1.85794848766571, 0.3495510534741863, 0.6260002046514459],
        "mcse_mean_sq": [0.00079261068381397573, 0.00083274210565672374, 0.00029809465837828884],
        "files": {_M: "6769d183c3232f81d928f7f95b54ac751f360c07", _S: "33ae738c4b8653369105d56c03b862ca023abf96"}},
    "radon_all-radon_pooled": {
        "names": ["alpha", "beta", "sigma_y"], "mean": [0.96124152559999998, -0.1519636617, 1.0588122440000001],
        "mcse_mean": [9.8984479217974805e-05, 6.8903778103832466e-05, 6.6199901579426778e-05],
        "mean_sq": [0.92408823641191085, 0.023141148373526099, 1.1211273801425601],
        "mcse_mean_sq": [0.00019034470996032391, 2.0930344060343754e-05, 0.00014021484127695386],
        "files": {_M: "ffcdda1cb6aa270bbf0d4747fb30dbc6b398f01a", _S: "ffcdda1cb6aa270bbf0d4747fb30dbc6b398f01a"}},
    "sesame_data-sesame_one_pred_a": {
        "names": ["beta[1]", "beta[2]", "sigma"], "mean": [0.54537033758700004, 0.36256023563099998, 0.382865695457],
        "mcse_mean": [0.00041045396375834274, 0.00051181709044225809, 0.00018586923144909296],
        "mean_sq": [0.29907396405286962, 0.13405153632931388, 0.14690431988731928],
        "mcse_mean_sq": [0.00044829992609203665, 0.00037273216672803689, 0.00014341426509320517],
        "files": {_M: "36e086dfaeb535cb3cac4dce668ab07515e00a54", _S: "31f650665813620cc7dc4438966541f5bc9edaea"}},
    "dogs-dogs": {
        "names": ["beta[1]", "beta[2]", "beta[3]"], "mean": [1.8031251989999999, -0.35826526790000002, -0.21062098018],
        "mcse_mean": [0.002383706313994015, 0.00038433158560247544, 0.0004530240322139082],
        "mean_sq": [3.3045545470825699, 0.1297553366733965, 0.046247131640342533],
        "mcse_mean_sq": [0.0086939882492026235, 0.00027980148585755058, 0.00019402944377747258],
        "files": {_M: "8500e4c9bf96ed142c6de9dab8b1da9aff1a8c48", _S: "6769d183c3232f81d928f7f95b54ac751f360c07"}},
    "dogs-dogs_hierarchical": {
        "names": ["a", "b"], "mean": [0.92333672889999996, 0.7856361463],
        "mcse_mean": [0.00010749296278312973, 0.00019051059129944326],
        "mean_sq": [0.8526705092531689, 0.61758873820514693],
        "mcse_mean_sq": [0.00019825413286753786, 0.00029928644012964199],
        "files": {_M: "9653aeae64cb85b42df9f564f680bb33340c82f5", _S: "57e3f7d338aa1eb2deae7000132faf761e9dabda"}},
    "M0_data-M0_model": {
        "names": ["omega", "p"], "mean": [0.42384058238700001, 0.49642901163800002],
        "mcse_mean": [0.0003765801116059401, 0.00037479499756586635],
        "mean_sq": [0.18111337641748457, 0.24789137882187676],
        "mcse_mean_sq": [0.0003217653135981017, 0.00037277449725359017],
        "files": {_M: "31f650665813620cc7dc4438966541f5bc9edaea", _S: "31f650665813620cc7dc4438966541f5bc9edaea"}},
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
