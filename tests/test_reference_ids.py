"""Reference ids are computed from bytes (data files, settings), never from floating-point
results: the same on every CPU, whatever BLAS or SIMD kernel it selects (issue 29 §1)."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from ckam_bench.checks.reference import SHIPPED, check_probes, density_probes, load_reference
from tests import clirun

SHIPPED_IDS = sorted(p.stem for p in Path(SHIPPED).glob("*.npz"))


def _target(name: str):
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    conf = Path(__file__).resolve().parents[1] / "conf"
    overrides = [f"target={name}"]
    shipped = list(Path(SHIPPED).glob(f"{name}-*.json"))
    if name.startswith("pymc_models_") and not shipped:  # a suite model without a shipped reference
        overrides = ["target=pymc", f"target.model=ckam_bench.posteriordb.models:{name.removeprefix('pymc_models_')}"]
    elif name.startswith("pymc_"):  # a posteriordb model certified by the harness: its certificate's target.model
        overrides = ["target=pymc", f"target.model={json.loads(shipped[0].read_text())['target']['model']}"]
    with initialize_config_dir(config_dir=str(conf), version_base=None):
        return instantiate(compose(config_name="config", overrides=overrides).target)


def _name(reference_id: str) -> str:
    return reference_id.rsplit("-", 1)[0]


def test_the_shipped_set_is_listed():
    """Nothing drops out silently: these are the shipped references (update when one is added)."""
    assert [_name(r) for r in SHIPPED_IDS] == [
        "gp_glass", "horseshoe", "logistic_australian", "logistic_german", "logistic_heart",
        "logistic_pima", "logistic_ripley", "pymc_bugs_dugongs", "pymc_bugs_pilots", "pymc_bugs_seeds", "pymc_bugs_seeds_centered",
        "pymc_bugs_seeds_stanified", "pymc_bugs_surgical", "pymc_election88_election88_full", "pymc_mcycle_accel_gp",
        "pymc_mixtures_low_dim_gauss_mix_collapse",
        "pymc_mixtures_normal_mixture", "pymc_models_dogs", "pymc_models_dogs_hierarchical",
        "pymc_models_glmm1", "pymc_models_irt_2pl", "pymc_models_m0", "pymc_models_nes_logit", "pymc_models_prophet",
        "pymc_models_radon_all_county_intercept", "pymc_models_radon_all_pooled", "pymc_models_radon_county",
        "pymc_models_radon_county_intercept", "pymc_models_radon_mn_pooled",
        "pymc_models_radon_variable_intercept_slope_noncentered",
        "pymc_models_rate_1", "pymc_models_rate_2", "pymc_models_rate_3", "pymc_models_rate_4", "pymc_models_rate_5",
        "pymc_models_sesame_one_pred_a", "pymc_models_wells_dist", "pymc_models_wells_dist100",
        "pymc_models_wells_dist100ars", "pymc_models_wells_interaction_c",
        "pymc_radon_all_slopes_radon_all_variable_intercept_slope_noncentered",
        *(f"pymc_radon_family_radon_{m}" for m in (
            "hierarchical_intercept_centered", "hierarchical_intercept_noncentered", "partially_pooled_centered",
            "partially_pooled_noncentered", "variable_intercept_centered", "variable_intercept_noncentered",
            "variable_intercept_slope_centered", "variable_slope_centered", "variable_slope_noncentered"))]


PROBED = ("gp_glass", "logistic_german", "pymc_bugs_seeds", "pymc_models_rate_2",
          "pymc_models_wells_dist", "pymc_radon_family_radon_variable_slope_centered")
"""The references whose density probes the default run checks, one of each kind of target
(a built-in GP and logistic regression, a BUGS hierarchy, a one-line rate, a 3 020-row GLM, a
radon hierarchy): evaluating a probe compiles the model's density, ~2-5 CPU-s each on a machine
whose caches are empty. ``-m slow`` checks every shipped reference's probes; every reference's
id and certificate are checked in both runs."""


@pytest.mark.parametrize("reference_id", SHIPPED_IDS)
def test_every_shipped_reference_is_found_under_its_id(reference_id):
    """The target's id (from bytes) is the shipped file's; the certificate names the target
    and keeps log π at two points (checked against the density in the test below)."""
    from ckam_bench.reference_lookup import find_reference

    target = _target(_name(reference_id))
    assert target.reference_id() == reference_id
    assert find_reference(target) == Path(SHIPPED) / f"{reference_id}.npz"
    cert = json.loads((Path(SHIPPED) / f"{reference_id}.json").read_text())
    assert cert["reference_id"] == reference_id and cert["target"] == target.describe()
    if not target.noisy:  # the certificate keeps log π at two points, checked at load
        assert len(cert["log_density_probes"]) == 2


@pytest.mark.parametrize("reference_id", [r if _name(r) in PROBED else pytest.param(r, marks=pytest.mark.slow)
                                          for r in SHIPPED_IDS])
def test_every_shipped_reference_matches_its_density(reference_id):
    target = _target(_name(reference_id))
    reference = load_reference(target)  # refuses a certificate whose probes are not log π here
    assert reference is not None and reference.reference_id == reference_id


def test_the_probed_references_are_shipped():
    assert set(PROBED) <= {_name(r) for r in SHIPPED_IDS}


def _one_ulp(a):
    return np.nextafter(a, np.inf)


def test_gp_glass_id_survives_a_one_ulp_change_of_the_whitening(monkeypatch):
    """The whitened features come from a Cholesky factor and a triangular solve, whose last bits
    depend on the CPU's BLAS kernel: the id must not see them."""
    from ckam_bench.targets import gp_classification

    before = _target("gp_glass").reference_id()
    real = gp_classification.solve_triangular
    monkeypatch.setattr(gp_classification, "solve_triangular", lambda *a, **k: _one_ulp(real(*a, **k)))
    target = _target("gp_glass")
    assert target.reference_id() == before


@pytest.mark.parametrize("dataset", ["australian", "pima"])
def test_logistic_id_survives_a_one_ulp_change_of_the_standardised_design(monkeypatch, dataset):
    from ckam_bench.targets import logistic

    before = _target(f"logistic_{dataset}").reference_id()
    real = logistic.standardise
    monkeypatch.setattr(logistic, "standardise", lambda f: _one_ulp(real(f)))
    logistic._KEEP.clear()
    target = _target(f"logistic_{dataset}")
    assert target.reference_id() == before
    logistic._KEEP.clear()


def test_a_changed_data_file_changes_the_id(tmp_path):
    from ckam_bench.targets.gp_classification import gp_glass
    from ckam_bench.data import data_file

    lines = data_file("glass.data").read_text().splitlines()
    (tmp_path / "g.data").write_text("\n".join(lines[:-1]) + "\n")
    assert gp_glass(data_file=str(tmp_path / "g.data")).reference_id() != _target("gp_glass").reference_id()


def test_a_reference_made_for_another_density_is_refused():
    """Same id (data and settings by their bytes) but another log π at the probe points: the
    reference is refused with a message, not used; last-bit differences pass."""
    target = _target("logistic_pima")
    cert = density_probes(target)
    check_probes(target, {"log_density_probes": [_one_ulp(v) for v in cert["log_density_probes"]]}, "x")
    with pytest.raises(ValueError, match="another density"):
        check_probes(target, {"log_density_probes": [v + 1e-3 for v in cert["log_density_probes"]]}, "x")


def _kernel_names() -> list:
    """The kernels to force: the oldest of the machine's family in the default run, the others
    in the slow tier (a new interpreter computing every shipped id: 6 s each)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return ["Prescott", pytest.param("Haswell", marks=pytest.mark.slow)]  # SSE3 (every x86-64), AVX2
    if machine in ("aarch64", "arm64"):
        return ["ARMV8"]
    return []


@pytest.mark.slow  # a new process under another OpenBLAS kernel imports and builds every model (~15 CPU-s)
@pytest.mark.parametrize("kernel", _kernel_names())
def test_ids_are_equal_under_another_blas_kernel(kernel):
    """In a subprocess whose OpenBLAS is forced to another kernel, every shipped reference is
    found under the same id."""
    code = ("import json\nfrom tests.test_reference_ids import _target, SHIPPED_IDS, _name\n"
            "print(json.dumps([_target(_name(r)).reference_id() for r in SHIPPED_IDS]))\n")
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    env.pop("OPENBLAS_L2_SIZE", None)
    root = Path(__file__).resolve().parents[1]
    out = clirun.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                     text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == SHIPPED_IDS


def test_pymc_id_is_computed_from_bytes(monkeypatch):
    """A PyMC target's id: its model source's bytes and its data's bytes; log π at some points
    (the old fingerprint) no longer enters it."""
    pytest.importorskip("pymc")
    from ckam_bench.targets.pymc import PyMCModel

    target = PyMCModel("ckam_bench.posteriordb.models:arK")
    before = target.reference_id()
    described = target.describe()
    assert "logp_sha256" not in described and len(described["source_sha256"]) == 16
    real = target._log_density
    monkeypatch.setattr(target, "_log_density", lambda x: _one_ulp(real(x)))
    assert target.reference_id() == before


# ---------------------------------------------------------------------------- issue 43 §2
# An id covers every input it identifies: every array a density reads (observed data, pm.Data,
# the constants of a model's graph such as an index array), its settings, its model's source.

def test_array_sha256_covers_labels_dtypes_shapes_bytes_and_order():
    from ckam_bench.data import array_sha256

    a, b = np.arange(6.0), np.array([1, 2], dtype=np.int64)
    base = array_sha256([("a", a), ("b", b)])
    assert array_sha256([("a", a.copy()), ("b", b.copy())]) == base
    assert array_sha256([("a", a.astype(">f8")), ("b", b)]) == base  # byte order is not content
    others = [[("a", a), ("c", b)], [("a", a.reshape(2, 3)), ("b", b)], [("a", a.astype(np.float32)), ("b", b)],
              [("b", b), ("a", a)], [("a", np.r_[a, 1.0]), ("b", b[1:])],  # a byte shifted between arrays
              [("a", np.nextafter(a, 7.0)), ("b", b)]]
    assert len({array_sha256(o) for o in others} | {base}) == len(others) + 1
    with pytest.raises(TypeError, match="object array"):
        array_sha256([("o", np.array([None]))])


SMALL_MODEL = '''
from pathlib import Path

import numpy as np
import pymc as pm


def model():
    d = np.load(Path(__file__).with_name("data.npz"))
    with pm.Model() as m:
        x = pm.Data("x", d["x"])
        a = pm.Normal("a", 0.0, 1.0, shape=3)
        b = pm.Normal("b", 0.0, 1.0)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", a[d["group"]] + b * x + d["w"], s, observed=d["y"])
        pm.Normal("z", b, 1.0, observed=d["z"])
    return m
'''
"""Each kind of array a PyMC density reads: observed ``y`` and ``z``, ``pm.Data`` ``x`` (all in
the target's data buffer), and constants of the graph: the index array ``group`` (as radon's
county numbers) and the covariate ``w``."""


def _small_arrays() -> dict:
    rng = np.random.default_rng(0)
    return {"x": rng.normal(size=6), "group": np.array([0, 1, 2, 0, 1, 2]), "w": rng.normal(size=6),
            "y": rng.normal(size=6), "z": rng.normal(size=2)}


def _small_target(folder: Path, arrays: dict, **kwargs):
    """The small model on ``arrays``, built afresh from ``folder`` (the same spec, so the same
    id but for the arrays)."""
    from ckam_bench.targets import pymc as pymc_target

    (folder / "model.py").write_text(SMALL_MODEL)
    np.savez(folder / "data.npz", **arrays)
    spec = f"{folder / 'model.py'}:model"
    pymc_target._MODELS.pop(spec, None)
    return pymc_target.PyMCModel(spec, **kwargs)


def _changed(arrays: dict, name: str) -> dict:
    """``arrays`` with one change to ``name``: two index entries swapped (the same counts of
    each index, as radon's two numberings of one set of counties), else one element moved."""
    out = {k: v.copy() for k, v in arrays.items()}
    if name == "group":
        out[name][[0, 1]] = out[name][[1, 0]]
    else:
        out[name][0] += 0.5
    return out


@pytest.mark.parametrize("name", ["y", "z", "x", "group", "w"])
def test_changing_any_one_input_array_of_a_pymc_model_changes_its_id(tmp_path, name):
    pytest.importorskip("pymc")
    arrays = _small_arrays()
    base = _small_target(tmp_path, arrays)
    before, data_before = base.reference_id(), base.describe()["data_sha256"]
    assert _small_target(tmp_path, arrays).reference_id() == before  # rebuilt: the same id
    other = _small_target(tmp_path, _changed(arrays, name))
    assert other.describe()["data_sha256"] != data_before
    assert other.reference_id() != before
    assert other.describe()["source_sha256"] == base.describe()["source_sha256"]


def test_a_pymc_id_hashes_the_data_the_target_holds(tmp_path):
    """Data set by ``set_data`` or ``target.data`` are the ones hashed: other values, another
    id; the model's own values (from a file or set back), the model's id."""
    pytest.importorskip("pymc")
    from ckam_bench.targets.pymc import model_arrays

    arrays = _small_arrays()
    target = _small_target(tmp_path, arrays)
    before = target.reference_id()
    labels = [label for label, _ in model_arrays(target)]
    assert labels[:3] == ["data y", "data z", "data x"]
    assert any(label.startswith("y #") for label in labels)  # group and w: constants under y
    target.set_data({"y": arrays["y"] + 1.0})
    assert target.reference_id() != before
    target.set_data({"y": arrays["y"]})
    assert target.reference_id() == before
    np.savez(tmp_path / "other.npz", x=arrays["x"] * 2.0)
    assert _small_target(tmp_path, arrays, data=str(tmp_path / "other.npz")).reference_id() != before
    np.savez(tmp_path / "same.npz", x=arrays["x"])
    assert _small_target(tmp_path, arrays, data=str(tmp_path / "same.npz")).reference_id() == before


def test_the_two_radon_models_no_longer_share_a_data_hash():
    """radon_mod-radon_county and radon_all-radon_county_intercept observe the same 12 573
    measurements (hence the same buffer: the old data_sha256 hashed it alone) but number the
    386 counties differently; the county index is a constant of each graph, now hashed."""
    pytest.importorskip("pymc")
    import hashlib

    from ckam_bench.targets.pymc import model_arrays

    mod, all_ = _target("pymc_models_radon_county"), _target("pymc_models_radon_all_county_intercept")
    assert hashlib.sha256(mod.buffer.tobytes()).digest() == hashlib.sha256(all_.buffer.tobytes()).digest()
    assert mod.describe()["data_sha256"] != all_.describe()["data_sha256"]

    def county(target):
        (index,) = [a for _, a in model_arrays(target) if a.dtype == np.int64 and a.shape == (12573,)]
        return index

    a, b = county(mod), county(all_)
    assert np.array_equal(np.unique(a), np.arange(386)) and np.array_equal(np.unique(b), np.arange(386))
    assert not np.array_equal(a, b)


def test_an_ode_ops_arrays_are_in_its_key_and_so_in_the_id():
    """ODESolution holds its data, grid and observation indices as properties, not graph inputs:
    its key hashes each (dtype, shape, bytes), and the target's id reads the Op's properties."""
    pytest.importorskip("pymc")
    from ckam_bench.posteriordb.ode import ODESolution

    data, grid, keep = np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 5), np.array([2, 4])
    key = ODESolution("one_comp_mm_elim_abs", data, grid, keep, 1).key
    assert ODESolution("one_comp_mm_elim_abs", data.copy(), grid.copy(), keep.copy(), 1).key == key
    others = [(data + [0.0, 1.0], grid, keep), (data, grid * 2.0, keep), (data, grid, keep - 1),
              (data[:1], np.r_[data[1:], grid], keep)]  # an element shifted from data to grid
    assert key not in {ODESolution("one_comp_mm_elim_abs", *o, 1).key for o in others}
    from ckam_bench.targets.pymc import model_arrays

    target = _target("pymc_models_one_comp_mm_elim_abs")
    assert any(" op ckam_bench.posteriordb.ode.ODESolution.key" in label for label, _ in model_arrays(target))


def test_horseshoe_id_covers_each_data_array(tmp_path):
    from ckam_bench.data import data_file
    from ckam_bench.targets.horseshoe import DATA_NAME, Horseshoe

    with np.load(data_file(DATA_NAME)) as f:
        arrays = {k: f[k] for k in f.files}
    base = Horseshoe().reference_id()

    def with_(**changes):
        path = tmp_path / f"h{len(list(tmp_path.iterdir()))}.npz"
        np.savez(path, **{**arrays, **changes})
        return Horseshoe(data_file=str(path)).reference_id()

    assert with_() == base  # the same arrays in another file: the same id
    X, y = arrays["X"].copy(), arrays["y"].copy()
    X[3, 1] += 1.0
    y[5] += 1.0
    assert with_(X=X) != base and with_(y=y) != base
    if "beta_true" in arrays:  # not read by the density: not in the id
        assert with_(beta_true=arrays["beta_true"] + 1.0) == base


def test_logistic_id_covers_one_changed_value_of_its_file(tmp_path):
    from ckam_bench.targets.logistic import DATASETS, LogisticRegression

    source = Path(_target("logistic_pima").path)
    lines = source.read_text().splitlines()
    first = lines[0].split(",")
    first[1] = str(float(first[1]) + 1.0)
    changed = tmp_path / source.name
    changed.write_text("\n".join([",".join(first)] + lines[1:]) + "\n")
    assert DATASETS["pima"][0] == source.name
    assert LogisticRegression("pima", data_file=changed).reference_id() != _target("logistic_pima").reference_id()


def test_gp_classification_id_covers_its_arrays():
    from ckam_bench.targets.gp_classification import GPClassification

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(20, 3)), np.where(rng.normal(size=20) > 0, 1.0, -1.0)
    base = GPClassification(X, y).reference_id()
    X2, y2 = X.copy(), y.copy()
    X2[4, 2] += 1e-3
    y2[7] = -y2[7]
    assert GPClassification(X.copy(), y.copy()).reference_id() == base
    assert GPClassification(X2, y).reference_id() != base
    assert GPClassification(X, y2).reference_id() != base
    assert GPClassification(X, y, n_importance=50).reference_id() != base


def test_exact_targets_ids_cover_their_parameters():
    """The exact targets never look a reference up, but ``ckam-bench-reference`` runs any
    target, and its id must name the distribution: every parameter changes it."""
    from ckam_bench.targets.divergence import BananaMixture, banana_dm
    from ckam_bench.targets.gaussians import Gaussian, gauss2d_corr
    from ckam_bench.targets.mixtures import GaussianMixture, ProductMixture, bimodal, gmm32

    assert gauss2d_corr(0.9).reference_id() != gauss2d_corr(0.99).reference_id()
    assert bimodal((1, 3)).reference_id() != bimodal().reference_id()
    assert gmm32(means=(-30.0, 0.0, 30.0)).reference_id() != gmm32().reference_id()
    g = Gaussian([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], 2)
    assert Gaussian([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], 2).reference_id() == g.reference_id()
    assert Gaussian([0.0, 0.0], [[1.0, 0.4], [0.4, 1.0]], 2).reference_id() != g.reference_id()
    assert Gaussian([0.0, 1.0], [[1.0, 0.5], [0.5, 1.0]], 2).reference_id() != g.reference_id()
    mix = dict(weights=[1.0, 1.0], means=[[0.0, 0.0], [4.0, 0.0]], variances=[1.0, 2.0], dim=2)
    base = GaussianMixture(**mix).reference_id()
    for key, value in (("weights", [1.0, 2.0]), ("means", [[0.0, 0.0], [4.0, 1.0]]), ("variances", [1.0, 3.0])):
        assert GaussianMixture(**{**mix, key: value}).reference_id() != base
    prod = ProductMixture([1.0, 1.0], [-2.0, 2.0], 1.0, 3).reference_id()
    assert ProductMixture([1.0, 1.0], [-2.0, 2.0], 2.0, 3).reference_id() != prod
    banana = dict(means=[[0.0, 0.0]], variances=[[9.0, 4.0]], axis=[1], bend=[0], curvature=[1.0], dim=2)
    assert BananaMixture(**banana).describe()["parameters_sha256"] == banana_dm().describe()["parameters_sha256"]
    assert BananaMixture(**{**banana, "curvature": [0.5]}).reference_id() != BananaMixture(**banana).reference_id()


def test_reference_id_writes_arrays_in_full():
    """numpy abbreviates a long array's text ("..."), which would hide a change in the middle."""
    from ckam_bench.targets.base import Target

    class WithArray(Target):
        def __init__(self, values):
            super().__init__(2)
            self.name, self.values = "with_array", values

        def describe(self):
            return {**super().describe(), "values": self.values}

    a = np.zeros(5000)
    b = a.copy()
    b[2500] = 1.0
    assert WithArray(a).reference_id() != WithArray(b).reference_id()
    assert WithArray(np.float64(0.5)).reference_id() == WithArray(0.5).reference_id()


# ---------------------------------------------------------------------------- re-keying
PIMA = "logistic_pima-efa18ed4e2"


def _stale_copy(folder: Path, rid: str = PIMA, **target_changes) -> tuple[Path, dict]:
    """A copy of a shipped reference as an older id would have named it: another id, another
    ``data_sha256`` in its certificate (and ``target_changes``), the same draws."""
    with np.load(Path(SHIPPED) / f"{rid}.npz") as f:
        arrays = {k: f[k] for k in f.files}
    certificate = json.loads(str(arrays.pop("certificate")))
    stale = f"{_name(rid)}-0123456789"
    certificate["reference_id"] = stale
    certificate["target"] = {**certificate["target"], "data_sha256": "0" * 16, **target_changes}
    text = json.dumps(certificate, indent=1)
    np.savez_compressed(folder / f"{stale}.npz", certificate=np.array(text), **arrays)
    (folder / f"{stale}.json").write_text(text + "\n")
    return folder / f"{stale}.npz", arrays


def test_rekeying_renames_a_reference_and_keeps_its_draws(tmp_path):
    from ckam_bench.checks.reference import read_reference, rekey_reference

    path, arrays = _stale_copy(tmp_path)
    target = _target("logistic_pima")
    new = rekey_reference(path, target, "test note")
    assert new == tmp_path / f"{PIMA}.npz" and not path.exists() and not path.with_suffix(".json").exists()
    with np.load(new) as f:
        assert all(f[k].tobytes() == a.tobytes() and f[k].dtype == a.dtype for k, a in arrays.items())
    cert = read_reference(new, target.dim).certificate
    assert cert["reference_id"] == PIMA and cert["previous_reference_id"] == "logistic_pima-0123456789"
    assert cert["earlier_reference_ids"] == ["logistic_pima-89ea51020e"] and cert["rekeyed"] == "test note"
    assert cert["target"] == target.describe()
    assert json.loads(new.with_suffix(".json").read_text()) == cert
    assert rekey_reference(new, target, "again") == new  # the id is current: nothing to do


@pytest.mark.parametrize("damage", ["another target", "another density", "taken"])
def test_rekeying_refuses_what_is_not_the_same_distribution(tmp_path, damage):
    from ckam_bench.checks.reference import rekey_reference

    target = _target("logistic_pima")
    if damage == "another target":
        path, _ = _stale_copy(tmp_path, n_obs=531)
        match = "another target: its certificate's n_obs"
    elif damage == "another density":
        path, arrays = _stale_copy(tmp_path)
        cert = json.loads(path.with_suffix(".json").read_text())
        cert["log_density_probes"] = [v + 1.0 for v in cert["log_density_probes"]]
        np.savez_compressed(path, certificate=np.array(json.dumps(cert)), **arrays)
        match = "another density"
    else:
        path, _ = _stale_copy(tmp_path)
        (tmp_path / f"{PIMA}.json").write_text("{}")
        match = "already exists"
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError, match=match):
        rekey_reference(path, target, "note")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing changed


def test_the_rekeying_script_renames_a_folder_and_is_idempotent(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "rekey_references", Path(__file__).resolve().parents[1] / "scripts" / "rekey_references.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    _stale_copy(tmp_path)
    assert script.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{PIMA}.json", f"{PIMA}.npz"]
    assert "logistic_pima-0123456789 -> logistic_pima-efa18ed4e2" in capsys.readouterr().out
    assert script.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"{PIMA}.npz: unchanged"


# ---------------------------------------------------------------------------- cache keys
_PLUGIN_HELPER = "from ckam_bench import jit\n\n\n@jit.helper\ndef value():\n    return {}\n"
_PLUGIN_KERNEL = ("from ckam_bench import jit\nfrom plugin_pkg.sub import helpers\n\n\n@jit.helper\n"
                  "def kernel():\n    return helpers.value() + 0.0\n")
_PLUGIN_RUN = """
import sys
sys.path.insert(0, sys.argv[1])
from plugin_pkg import kernels
print(kernels.kernel())
"""


def test_a_plugins_cached_kernel_is_keyed_by_its_packages_source(tmp_path):
    """A plugin's kernel, cached on disk, calls a helper of another module of the plugin; the
    helper changes and the kernel's file does not: the kernel's cache key covers the plugin
    package's source, so it recompiles (numba's own key, the kernel file's mtime and size, and
    ckam-bench's source would keep the stale code)."""
    from ckam_bench import jit

    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    package = tmp_path / "plugin_pkg"
    (package / "sub").mkdir(parents=True)
    for init in (package / "__init__.py", package / "sub" / "__init__.py"):
        init.write_text("")
    (package / "sub" / "helpers.py").write_text(_PLUGIN_HELPER.format("1.0"))
    (package / "kernels.py").write_text(_PLUGIN_KERNEL)
    script = tmp_path / "run.py"
    script.write_text(_PLUGIN_RUN)

    def value():
        done = clirun.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, check=True, cwd=tmp_path, env=env)
        return float(done.stdout.split()[-1])

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # numba's cache beside the source
    assert value() == 1.0
    assert list((package / "__pycache__").glob("kernels.kernel-*.nbi"))  # cached on disk
    (package / "sub" / "helpers.py").write_text(_PLUGIN_HELPER.format("22.0"))
    assert value() == 22.0
    assert jit._plugin_root(package / "sub" / "helpers.py") == package
    assert jit._plugin_root(tmp_path / "run.py") is None and jit._plugin_root(jit.__file__) is None


def test_posteriordbs_draws_are_handed_out_only_on_the_shipped_data(tmp_path, monkeypatch):
    """``posteriordb.reference_for`` compares the target's data (by ``data_sha256``, however
    they were set: ``target.data`` or ``set_data`` in process) with the suite model's on its
    shipped data, built once per posterior and process."""
    pytest.importorskip("pymc")
    from ckam_bench import posteriordb
    from ckam_bench.targets import pymc as pymc_target
    from ckam_bench.targets.pymc import model_arrays

    built = []

    class Counted(pymc_target.PyMCModel):
        def __init__(self, *args, **kwargs):
            built.append(args)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(posteriordb, "_SHIPPED_DATA", {})
    monkeypatch.setattr(pymc_target, "PyMCModel", Counted)
    name = "eight_schools-eight_schools_noncentered"
    target = pymc_target.PyMCModel(posteriordb.SUITE[name].model)
    y = dict(model_arrays(target))["data y"].copy()
    built.clear()
    assert posteriordb.reference_for(target) is not None
    target.set_data({"y": y + 1.0})
    assert posteriordb.reference_for(target) is None
    assert target.ckam_reference() is None  # what the metrics ask: nothing for other data
    target.set_data({"y": y})
    assert posteriordb.reference_for(target) is not None
    assert len(built) == 1 and list(posteriordb._SHIPPED_DATA) == [name]
    np.savez(tmp_path / "same.npz", y=y)  # target.data of the very same values: the same posterior
    same = pymc_target.PyMCModel(posteriordb.SUITE[name].model, data=str(tmp_path / "same.npz"))
    assert posteriordb.reference_for(same) is not None
    np.savez(tmp_path / "other.npz", y=y * 2.0)
    other = pymc_target.PyMCModel(posteriordb.SUITE[name].model, data=str(tmp_path / "other.npz"))
    assert posteriordb.reference_for(other) is None
    assert len(built) == 3  # the two targets above; the shipped digest was not rebuilt
