"""posteriordb posteriors whose posteriordb reference was added after v1.0 (issue 45 §1): their
registry. Their Stan programs and data are in the v1.0 mirror (data shipped in ``data/``, built by
:func:`ckam_bench.posteriordb.build.build_later`); posteriordb's reference draws are not (they
came later, as zip files), so their references are ones the harness certified with
``ckam-bench-reference``'s criteria, shipped in ``ckam_bench/data/references/`` and found by the
target's reference id, and each is checked against posteriordb's published summaries
(:data:`POSTERIORDB_SUMMARIES`; docs/posteriordb.md, "posteriordb's newer references"). Models in
:mod:`ckam_bench.posteriordb.rates`, ``glms`` and ``trials``, re-exported by
:mod:`ckam_bench.posteriordb.models`. One v1.0 reference joins them by the same route:
mcycle_gp-accel_gp, whose draws the v1.0 mirror lacks but whose summaries it holds (model in
:mod:`ckam_bench.posteriordb.mcycle`, not re-exported). This module needs no PyMC.
"""

from __future__ import annotations

from ckam_bench.posteriordb import HARNESS, POSTERIORDB_COMMIT, Posterior

_P = Posterior
MCYCLE = "ckam_bench.posteriordb.mcycle"
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
    _P("mcycle_gp-accel_gp", "accel_gp", "GP", 66,
       "two basis-function GPs (40 and 20 functions) for the mean and the log sd of 133 motorcycle "
       "crash accelerations: each intercept trades off with its GP's first, nearly constant, basis "
       "function along a curved ridge; long-tailed length scales",
       reference_source=HARNESS, module=MCYCLE),
)}
"""posteriordb name -> :class:`~ckam_bench.posteriordb.Posterior` (``reference_source`` is
``HARNESS``: the reference is the one the harness certified for the target). The last,
mcycle_gp-accel_gp, has a posteriordb reference of v1.0 whose draws the mirror lacks
(:data:`~ckam_bench.posteriordb.NOT_SHIPPED`) but whose summaries it holds; its model lives in
its own module (``module``)."""

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
    "mcycle_gp": ("N", "Y", "Kgp_1", "Dgp_1", "NBgp_1", "Xgp_1", "slambda_1", "Kgp_sigma_1", "Dgp_sigma_1",
                  "NBgp_sigma_1", "Xgp_sigma_1", "slambda_sigma_1", "prior_only"),
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
    "mcycle_gp-accel_gp": {
        "names": ["Intercept", "sdgp_1", "lscale_1", *(f"zgp_1[{i}]" for i in range(1, 41)), "Intercept_sigma",
                  "sdgp_sigma_1", "lscale_sigma_1", *(f"zgp_sigma_1[{i}]" for i in range(1, 21))],
        "mean": [
            -10.5611108251771, 43.0896028398911, 0.0801464823205872, -0.0333361006137775, -0.292617787641776,
            0.396884779715122, 0.389921666402847, -0.733093241151628, -0.452087283412103, 0.709038896445349,
            0.668501011711109, -0.522964546186194, -0.930133100152705, 0.45341991506677, 1.01492992145126,
            -0.528872206923009, -0.874912284522023, 0.554887700890853, 0.763032779403392, -0.398351172875186,
            -0.851958186155252, 0.206278858602484, 1.04020809032228, -0.115171103063627, -1.06842677998132,
            0.108149246126415, 0.848339616197927, -0.0594703689781013, -0.585573532561439, 0.011047480241625,
            0.405503438154462, 0.0347341074097302, -0.26245381668011, -0.126248969086189, 0.141587827593901,
            0.342066181804888, 0.0215160187516179, -0.562917861207192, -0.148865314141064, 0.646679469581254,
            0.256974041062933, -0.450829410884286, -0.397408422025971, 2.42788734583564, 2.8844004172729,
            0.0296730357867109, 0.0512589601304836, -0.513192435226895, -0.348733663975341, 0.863647281748137,
            0.654118415407414, -0.887761244014251, -0.784966711091486, 0.483812700819995, 0.709367206333859,
            0.0967238713100142, -0.476782934879152, -0.527389823267951, 0.172396270699642, 0.541414511479168,
            0.274297640922978, -0.322040170121165, -0.663456237613703, 0.0258908009143115, 0.673802485293711,
            0.355694743180847],
        "mcse_mean": [
            0.159769473524178, 0.113025019656216, 0.000153225617255014, 0.00939887161311464,
            0.00856309836040681, 0.00901500113052919, 0.00754020670773753, 0.00790450883318156,
            0.00830563707929636, 0.00792592089600752, 0.00803677896419384, 0.0080569328064482,
            0.00796677432633584, 0.00804944230951601, 0.0082131632039049, 0.00798704373332592,
            0.00819568024275883, 0.00810930639577303, 0.00789919402775031, 0.00815130186665207,
            0.00819372336282533, 0.00808206231000419, 0.0083004814113288, 0.0082027008781878,
            0.00839548173290021, 0.00817610769124129, 0.00861115429201102, 0.00802059191796748,
            0.00848903014968385, 0.00844502186782461, 0.00858294576620072, 0.00858968393346383,
            0.00872072239367653, 0.00868531356322977, 0.00867244959175003, 0.00859443465309051,
            0.00853354168775264, 0.00899667533104101, 0.00890134331543114, 0.00881734657845037,
            0.00883021177121979, 0.00898338131956077, 0.00908734047997688, 0.00618680807846173,
            0.0156588575976375, 0.000347590734283619, 0.0101765293996965, 0.00897380076059975,
            0.00952355536979964, 0.0080984827604023, 0.00838329825489922, 0.00832223976331769,
            0.00829148408901854, 0.00813663380737504, 0.00840435989889858, 0.0080908901204812,
            0.00800074702008473, 0.0078998020220162, 0.00803111960067904, 0.00818422280515546,
            0.00784304259501656, 0.00800236907409563, 0.00804382620870962, 0.00816126059252172,
            0.0061077470585248, 0.00623577235646162],
        "mean_sq": [
            365.38849269, 1983.033117215, 0.006658793, 0.869638633, 0.814282038, 0.958255812, 0.719814707,
            1.164016515, 0.865854203, 1.15010117, 1.076528349, 0.920032582, 1.504531683, 0.831358469,
            1.697896127, 0.89901411, 1.433283589, 0.956426856, 1.214267292, 0.812187879, 1.39516944,
            0.684839784, 1.76426038, 0.662705823, 1.821174787, 0.670583971, 1.417800967, 0.657925141,
            1.034324878, 0.674020094, 0.907363812, 0.69873321, 0.820593848, 0.752841283, 0.758171597,
            0.879622691, 0.763977918, 1.129409971, 0.807944183, 1.228586377, 0.895269592, 1.005990436,
            0.989210036, 6.255991458, 10.679654326, 0.002016581, 0.983018958, 1.068199876, 1.026041983,
            1.391210114, 1.132937242, 1.495602644, 1.308875892, 0.896155349, 1.205162915, 0.650261743,
            0.882777773, 0.918206422, 0.669803644, 0.968475446, 0.703534217, 0.728385286, 1.095915374,
            0.620537447, 0.81832809, 0.486065521],
        "mcse_mean_sq": [
            5.23213638458, 11.99182277147, 2.303374e-05, 0.01245222108, 0.01147185497, 0.01351587827,
            0.00995507497, 0.0151282494, 0.01199678611, 0.01435231548, 0.01387471722, 0.01246762395,
            0.01742225407, 0.01228861801, 0.01918252348, 0.0127967737, 0.0176616667, 0.01275733181,
            0.01525830155, 0.01125881367, 0.01729596915, 0.00982673047, 0.01970465128, 0.00964252671,
            0.02054124169, 0.0097706719, 0.01743103963, 0.00938904954, 0.01433383879, 0.00996442863,
            0.01354234354, 0.01006313823, 0.0117642628, 0.01084647416, 0.01074895318, 0.0132210278,
            0.0107747285, 0.0157490575, 0.01171203042, 0.01603037332, 0.01291515975, 0.01390595681,
            0.01427053793, 0.03332849457, 0.14293067818, 4.994844e-05, 0.01395691919, 0.01489411936,
            0.01448759899, 0.01685180161, 0.01489897471, 0.01805251849, 0.0167649959, 0.01233735663,
            0.0156750879, 0.00945855081, 0.01215065569, 0.01251589083, 0.00959214913, 0.01286901796,
            0.01008463182, 0.01017302975, 0.01455143546, 0.00874864359, 0.0106291011, 0.0070660709],
        "files": {_M: POSTERIORDB_COMMIT, _S: POSTERIORDB_COMMIT}},
}
"""posteriordb's published summaries of each reference (Stan, 10 chains x 1000 kept draws), read
from github.com/stan-dev/posteriordb with the search tool's ``read_file``: ``posterior_database/``
+ the folder in ``files``, ``<name>.json``, at the commit given (later than v1.0, not in the
mirror; mcycle_gp-accel_gp's at v1.0, :data:`~ckam_bench.posteriordb.POSTERIORDB_COMMIT`, read from
the mirror with ``git show``: Stan at adapt_delta 0.999, max_treedepth 15). ``mean`` and ``mcse_mean`` are the mean_value file's ``mean_value`` and ``mcse_mean``;
``mean_sq`` and ``mcse_mean_sq`` the mean_squared_value file's value (``mean_squared_value``; in
Rate_1's file the key is ``mean_value``) and its ``mcse_mean`` (the MCSE of the mean of x²).
Only Stan's parameters are summarised here: Rate_2's transformed ``delta`` and the generated
posterior predictive draws of Rate_4 and Rate_5 are not in these files."""


def spec(name: str) -> str:
    """The ``target.model`` string of a posterior of :data:`LATER`."""
    return LATER[name].model
