r"""Bayesian logistic regression: seed 002's (gradient-based adaptive MCMC) seven datasets.

Data: a design matrix :math:`X \in \mathbb{R}^{n\times d}` (features, then a column of ones,
the intercept LAST) and labels :math:`y \in \{0, 1\}^n`; prior :math:`w \sim N(0, I_d)`:

.. math::
    \log\pi(w) = y^\top X w - \sum_i \operatorname{softplus}(x_i^\top w) - \tfrac12\|w\|^2,
    \qquad \operatorname{softplus}(s) = \log(1 + e^s) = \max(s, 0) + \log(1 + e^{-|s|}),

    \nabla\log\pi(w) = X^\top(y - \sigma(Xw)) - w,
    \qquad \nabla^2\log\pi(w) = -X^\top \operatorname{diag}(\sigma(Xw)(1-\sigma(Xw))) X - I,

with :math:`\sigma(s) = 1/(1 + e^{-s})` (the normalising constant of the prior is dropped).
The Hessian is negative definite, so the posterior is log-concave with one mode.
``hessian_vector_product(w, v)`` = :math:`-X^\top(\sigma(1-\sigma) \odot Xv) - v` costs two
matrix-vector products, never the d×d matrix. A non-finite w gives −‖w‖² (−∞, or NaN for NaN),
as the other targets do.

Preprocessing (``ckam_bench/data/SOURCES.md``, the paper's; every dataset ships with the package):

====================  ==========================  ======  ====  ==================================
dataset               file                         rows    d     label (1 =)
====================  ==========================  ======  ====  ==================================
``australian``        australian.tsv.gz            690     15    column ``target`` (already 0/1)
``heart``             heart_statlog.tsv.gz         270     14    column ``target`` (0/1; {1,2}: 2)
``pima``              pima-indians-diabetes.data   532     8     last column (0/1)
``ripley``            ripley_synth.tr.csv          250     3     column ``yc`` (0/1)
``german``            statlog-german-credit.dat    1000    25    last column, 2 (bad credit)
``caravan``           Caravan.csv                  5822    86    ``Purchase`` = Yes
``mnist56``           mnist56_train.npz            11339   785   digit 5 (digit 6 = 0)
====================  ==========================  ======  ====  ==================================

* Labels coded {1, 2} map to {0, 1} (2 → 1); labels already {0, 1} are kept.
* Pima: only rows whose glucose, blood pressure, skin thickness and BMI (columns 2, 3, 4, 6)
  are all > 0, and the insulin column (5) dropped: 532 rows × 7 features.
* Every feature column standardised: minus its mean, divided by its standard deviation with
  the n − 1 denominator; then a column of ones appended LAST (the intercept).
* MNIST: pixels / 255, not standardised (145 pixels are 0 in every image: their weights keep
  the prior N(0, 1)), intercept appended.

Parameter counts against the paper (Titsias & Dellaportas 2019, Tables 1–7): all agree except
Caravan, which the paper gives as n = 87; the data (85 features + intercept) give 86, as
SOURCES.md says.

Each dataset's file can be replaced: the config key ``data_file`` (null = the shipped copy) or
the environment variable ``CKAM_BENCH_LOGISTIC_<DATASET>`` (e.g. ``CKAM_BENCH_LOGISTIC_GERMAN``)
points at another file of the same format. A missing or malformed file raises
:class:`~ckam_bench.data.DataFileError` (a ValueError naming ``data_file`` and the file), which
the CLI reports as a configuration error (exit 2).

Compiled versions (:mod:`ckam_bench.jit`): ``jit_log_density()`` → ``f(w) -> float``,
``jit_log_density_and_grad()`` → ``f(w, grad_out) -> float`` (writes ∇log π into ``grad_out``)
and ``jit_hessian_log_density()`` → ``h(w, hess_out)`` (writes ∇²log π, for gadMALA exact).
They read X and Xᵀy through their addresses instead of freezing them into the compiled code as
constants (numba copies frozen arrays into the machine code, which for MNIST's 71 MB design
would take minutes); the arrays are kept alive in a module-level table for the process's life.
"""

from __future__ import annotations

import gzip
import math
import os
from pathlib import Path

import numpy as np

from ckam_bench import jit
from ckam_bench.data import DataFileError, array_sha256, content_sha256, data_file
from ckam_bench.targets.base import Target

MAX_DESIGN_ENTRIES = 50_000_000
"""Largest design matrix (rows × columns, 400 MB as float64) a data file may give."""

# dataset -> (shipped file name, parameter count with the intercept)
DATASETS: dict[str, tuple[str, int]] = {
    "australian": ("australian.tsv.gz", 15),
    "heart": ("heart_statlog.tsv.gz", 14),
    "pima": ("pima-indians-diabetes.data", 8),
    "ripley": ("ripley_synth.tr.csv", 3),
    "german": ("statlog-german-credit.dat", 25),
    "caravan": ("Caravan.csv", 86),
    "mnist56": ("mnist56_train.npz", 785),
}


def env_var(dataset: str) -> str:
    """Environment variable that points ``dataset`` at another file."""
    return f"CKAM_BENCH_LOGISTIC_{dataset.upper()}"


# ---------------------------------------------------------------------------- loaders
def _binary_labels(y: np.ndarray) -> np.ndarray:
    """{0, 1} kept, {1, 2} mapped 2 → 1; anything else is malformed."""
    values = set(np.unique(y).tolist())
    if values <= {0, 1}:
        return y.astype(float)
    if values <= {1, 2}:
        return (y == 2).astype(float)
    raise ValueError(f"labels must be coded 0/1 or 1/2, found {sorted(values)[:10]}")


def _numeric(table, what: str) -> np.ndarray:
    a = np.asarray(table, dtype=float)
    if a.ndim != 2 or a.shape[0] < 2:
        raise ValueError(f"{what} must be a table of at least 2 rows, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} has missing or non-finite values")
    return a


def _read_table(path: Path, sep: str | None, header: bool) -> np.ndarray:
    """Numeric table of a text file (gzip when named .gz); ``sep`` None = whitespace."""
    import pandas as pd

    kwargs = {"sep": r"\s+"} if sep is None else {"sep": sep}
    return pd.read_csv(path, header=0 if header else None, **kwargs)


def _tabular(path: Path, label: str | int, drop: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of a table with a header; ``label`` the label column's name."""
    sep = "\t" if ".tsv" in path.name else ","
    frame = _read_table(path, sep, header=True)
    if label not in frame.columns:
        raise ValueError(f"has no label column {label!r} (columns: {list(frame.columns)[:20]})")
    features = frame.drop(columns=[label, *drop])
    return _numeric(features, "the feature table"), frame[label].to_numpy()


def _load_australian(path):
    X, y = _tabular(path, "target")
    return X, _binary_labels(y)


def _load_heart(path):
    X, y = _tabular(path, "target")
    return X, _binary_labels(y)


def _load_ripley(path):
    frame = _read_table(path, ",", header=True)
    if list(frame.columns[-3:]) != ["xs", "ys", "yc"]:
        raise ValueError(f"needs the columns xs, ys, yc last, found {list(frame.columns)}")
    X = _numeric(frame[["xs", "ys"]], "the feature table")
    return X, _binary_labels(frame["yc"].to_numpy())


def _load_german(path):
    a = _numeric(_read_table(path, None, header=False), "the table")
    if a.shape[1] != 25:
        raise ValueError(f"needs 25 columns (24 features, label), found {a.shape[1]}")
    return a[:, :-1], _binary_labels(a[:, -1])


def _load_pima(path):
    a = _numeric(_read_table(path, ",", header=False), "the table")
    if a.shape[1] != 9:
        raise ValueError(f"needs 9 columns (8 features, label), found {a.shape[1]}")
    # glucose, blood pressure, skin thickness, BMI all > 0; insulin (column 4) dropped.
    keep = np.all(a[:, [1, 2, 3, 5]] > 0, axis=1)
    a = a[keep]
    return a[:, [0, 1, 2, 3, 5, 6, 7]], _binary_labels(a[:, -1])


def _load_caravan(path):
    frame = _read_table(path, ",", header=True)
    if "Purchase" not in frame.columns:
        raise ValueError("has no label column 'Purchase'")
    labels = frame["Purchase"].astype(str).str.strip()
    if not labels.isin(["Yes", "No"]).all():
        raise ValueError("column 'Purchase' must hold Yes/No")
    X = _numeric(frame.drop(columns=["Purchase"]), "the feature table")
    return X, (labels == "Yes").to_numpy(dtype=float)


def _load_mnist56(path):
    with np.load(path, allow_pickle=False) as archive:
        if "X" not in archive or "y" not in archive:
            raise ValueError(f"needs arrays X and y, found {sorted(archive.files)}")
        pixels, digits = archive["X"], archive["y"]
    if pixels.ndim != 2 or digits.shape != (pixels.shape[0],):
        raise ValueError(f"X must be (n, pixels) and y (n,), got {pixels.shape} and {digits.shape}")
    if not set(np.unique(digits).tolist()) <= {5, 6}:
        raise ValueError("y must hold the digits 5 and 6")
    return pixels.astype(float) / 255.0, (digits == 5).astype(float)


_LOADERS = {
    "australian": _load_australian,
    "heart": _load_heart,
    "pima": _load_pima,
    "ripley": _load_ripley,
    "german": _load_german,
    "caravan": _load_caravan,
    "mnist56": _load_mnist56,
}


def standardise(features: np.ndarray) -> np.ndarray:
    """Each column minus its mean over its standard deviation (n − 1 denominator)."""
    sd = features.std(axis=0, ddof=1)
    constant = np.flatnonzero(sd == 0)
    if constant.size:
        raise ValueError(f"feature column {int(constant[0])} is constant and cannot be standardised")
    return (features - features.mean(axis=0)) / sd


def load_dataset(dataset: str, data_file_override=None, key: str = "data_file") -> tuple[np.ndarray, np.ndarray, Path]:
    """(design X with the intercept last, labels y ∈ {0, 1}, path) of ``dataset``.

    Raises :class:`DataFileError` naming ``key`` and the file when it is missing or malformed.
    """
    name, _ = DATASETS[dataset]
    path = data_file(name, data_file_override, env=env_var(dataset), key=key)
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as fh:  # a corrupt archive fails here, not in pandas
                fh.read(1)
        features, y = _LOADERS[dataset](path)
        if features.shape[0] * (features.shape[1] + 1) > MAX_DESIGN_ENTRIES:
            raise ValueError(f"the design has {features.shape[0]} x {features.shape[1] + 1} entries, "
                             f"more than the limit of {MAX_DESIGN_ENTRIES}")
        if dataset != "mnist56":
            features = standardise(features)
    except DataFileError:
        raise
    except Exception as exc:  # any parse failure is a malformed file: a config error
        raise DataFileError(f"{key}: data file {str(path)!r} is malformed for dataset "
                            f"{dataset!r}: {exc}") from None
    X = np.ascontiguousarray(np.column_stack([features, np.ones(features.shape[0])]))
    return X, y, path


# ---------------------------------------------------------------------------- compiled
_FASTMATH = {"contract", "reassoc"}
"""numba fastmath flags of the compiled density: fused multiply-adds and reassociated sums (so
the row products vectorise); no flag that assumes finite values, so NaN and ±inf propagate."""
_BLOCK = 64
"""Rows per block of the compiled density's pass (their products, then their exp/log1p)."""

if jit.AVAILABLE:
    import numba
    from numba import carray

    from ckam_bench.targets.vecmath import exp_neg, log1p_unit

    @numba.njit(fastmath=_FASTMATH, error_model="numpy", inline="always")
    def _block_products(X, w, start, m, scale, out):
        """out[k] = scale·x_{start+k}ᵀw for the m rows of a block (inlined where it is called)."""
        for k in range(m):
            row = X[start + k]
            t = 0.0
            for j in range(w.shape[0]):
                t += row[j] * w[j]
            out[k] = scale * t

    @numba.njit(fastmath=_FASTMATH, error_model="numpy")
    def _logistic_density(w, X, scale, c, grad, want_grad):
        """log π(w) (and its gradient into ``grad`` when ``want_grad``) in one pass over the rows
        of the design scale·X (X float64, or uint8 codes) with c = Xᵀy (of the scaled design);
        −‖w‖² when that is not finite.

        Rows go in blocks of :data:`_BLOCK`: s_i = scale·x_iᵀw for the block; then, in a loop
        that vectorises (:mod:`~ckam_bench.targets.vecmath`), e_i = exp(−|s_i|), which gives both
        softplus(s_i) = max(s_i, 0) + log1p(e_i) and σ(s_i) = 1/(1 + e_i) or e_i/(1 + e_i);
        then acc += scale·σ(s_i)·x_i while the block's rows are in cache. X is read once per
        gradient, not twice (the second product Xᵀσ reuses the rows)."""
        n, d = X.shape
        norm2 = 0.0
        for j in range(d):
            norm2 += w[j] * w[j]
        if not math.isfinite(norm2):
            if want_grad:
                for j in range(d):
                    grad[j] = math.nan
            return -norm2
        logp = -0.5 * norm2
        for j in range(d):
            logp += c[j] * w[j]
        acc = np.zeros(d)
        s = np.empty(_BLOCK)
        for start in range(0, n, _BLOCK):
            m = min(_BLOCK, n - start)
            _block_products(X, w, start, m, scale, s)
            softplus = 0.0
            for k in range(m):
                e = exp_neg(abs(s[k]))
                softplus += max(s[k], 0.0) + log1p_unit(e)
                s[k] = scale * (1.0 / (1.0 + e) if s[k] >= 0.0 else e / (1.0 + e))
            logp -= softplus
            if want_grad:
                for k in range(m):
                    row = X[start + k]
                    p = s[k]
                    for j in range(d):
                        acc[j] += p * row[j]
        if want_grad:
            for j in range(d):
                grad[j] = c[j] - acc[j] - w[j]
        return logp

    @numba.njit(fastmath=_FASTMATH, error_model="numpy")
    def _logistic_hessian(w, X, scale, hess):
        """∇²log π(w) = −Σ_i q_i x_i x_iᵀ − I into ``hess`` for the design scale·X, with
        q_i = σ(s_i)(1 − σ(s_i)) = e_i/(1 + e_i)² (e_i = exp(−|s_i|), s_i = scale·x_iᵀw); NaN
        everywhere when w is not finite.

        Rows go in blocks of :data:`_BLOCK`, copied transposed (columns x_·j and q·x_·j of the
        block contiguous), so each lower-triangle entry adds one dot product of block length,
        which vectorises; the upper triangle is the mirror."""
        n, d = X.shape
        norm2 = 0.0
        for j in range(d):
            norm2 += w[j] * w[j]
        if not math.isfinite(norm2):
            hess[:, :] = math.nan
            return 0.0
        hess[:, :] = 0.0
        cols = np.zeros((d, _BLOCK))
        weighted = np.zeros((d, _BLOCK))
        q = np.empty(_BLOCK)
        for start in range(0, n, _BLOCK):
            m = min(_BLOCK, n - start)
            _block_products(X, w, start, m, scale, q)
            for k in range(m):
                e = exp_neg(abs(q[k]))
                q[k] = scale * scale * (e / ((1.0 + e) * (1.0 + e)))
            for k in range(m):
                row = X[start + k]
                for j in range(d):
                    cols[j, k] = row[j]
                    weighted[j, k] = q[k] * row[j]
            for j in range(d):
                qj = weighted[j]
                for i in range(j + 1):
                    ci = cols[i]
                    acc = 0.0
                    for k in range(m):
                        acc += qj[k] * ci[k]
                    hess[j, i] -= acc
        for j in range(d):
            hess[j, j] -= 1.0
            for i in range(j):
                hess[i, j] = hess[j, i]
        return 0.0

_KEEP: dict = {}  # content digest -> (design, c, density, density-and-gradient, Hessian), compiled

BYTE_SCALE = 1.0 / 255.0
"""A design whose every entry is k/255 for an integer k in 0..255 (8-bit images: MNIST's pixels
/ 255, its intercept 255/255) is stored for the compiled functions as the uint8 codes k and this
scale: exact, and 8x less memory read per pass (the pass over 11 339 x 785 pixels is bound by
memory bandwidth)."""


def compact_design(X: np.ndarray) -> tuple[np.ndarray, float]:
    """(codes, scale) with codes·scale == X exactly: uint8 codes and 1/255 when every entry of X
    is k/255 for an integer k in 0..255, else X itself (C-contiguous float64) and 1."""
    X = np.ascontiguousarray(X, dtype=float)
    codes = np.rint(X * 255.0)
    if np.all((codes >= 0) & (codes <= 255)) and np.array_equal(codes / 255.0, X):
        return codes.astype(np.uint8), BYTE_SCALE
    return X, 1.0


def _compiled(digest: str, X: np.ndarray, c: np.ndarray):
    """The three compiled functions for a design: density, density-and-gradient, Hessian (built
    once per process and content)."""
    entry = _KEEP.get(digest)
    if entry is None:
        design, scale = compact_design(X)
        c = np.ascontiguousarray(c, dtype=float)
        x_addr, c_addr, dtype = design.ctypes.data, c.ctypes.data, design.dtype
        shape, d = design.shape, design.shape[1]

        def log_density(w):
            Xv = carray(jit.as_pointer(x_addr), shape, dtype)
            cv = carray(jit.as_pointer(c_addr), (d,), np.float64)
            return _logistic_density(w, Xv, scale, cv, w, False)

        def log_density_and_grad(w, grad_out):
            Xv = carray(jit.as_pointer(x_addr), shape, dtype)
            cv = carray(jit.as_pointer(c_addr), (d,), np.float64)
            return _logistic_density(w, Xv, scale, cv, grad_out, True)

        def hessian(w, hess_out):
            Xv = carray(jit.as_pointer(x_addr), shape, dtype)
            return _logistic_hessian(w, Xv, scale, hess_out)

        entry = _KEEP[digest] = (design, c, numba.njit(log_density), numba.njit(log_density_and_grad),
                                 numba.njit(hessian))
    return entry[2:]


# ---------------------------------------------------------------------------- target
def _sigmoid(s: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(s))
    return np.where(s >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class LogisticRegression(Target):
    """Posterior of a Bayesian logistic regression with N(0, I) prior on one of seed 002's datasets.

    Parameters
    ----------
    dataset : one of australian, heart, pima, ripley, german, caravan, mnist56.
    data_file : path of another copy of the dataset's file (same format); None uses
        ``$CKAM_BENCH_LOGISTIC_<DATASET>`` if set, else the shipped copy.
    dim : the parameter count (features + intercept); must match the data (it is a config key
        so samplers' configs can read ``${target.dim}``).
    start : start point (d,); None gives 0.
    """

    def jax_log_density(self):
        """This density in JAX for the peer samplers (:func:`.jax_densities.logistic`)."""
        from ckam_bench.targets import jax_densities

        return jax_densities.logistic(self)

    def __init__(self, dataset: str, data_file: str | os.PathLike | None = None, dim: int | None = None,
                 start=None):
        dataset = str(dataset)
        if dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {dataset!r}")
        X, y, path = load_dataset(dataset, data_file)
        if dim is not None and int(dim) != X.shape[1]:
            raise ValueError(f"dim must be {X.shape[1]} for dataset {dataset!r} "
                             f"(from {str(path)!r}), got {dim}")
        if start is not None:
            start = np.asarray(start, float)
            if start.shape != (X.shape[1],) or not np.all(np.isfinite(start)):
                raise ValueError(f"start must be a finite array of shape ({X.shape[1]},)")
        super().__init__(X.shape[1], start)
        self.name = f"logistic_{dataset}"
        self.dataset = dataset
        self.path = path
        self.X = X
        self.y = y
        self._c = X.T @ y
        self._digest = array_sha256([("X", X), ("y", y)])  # this process's compiled-code key
        self._data_sha256 = content_sha256(path)  # the identity: the file's bytes, not the standardised design

    @property
    def n_obs(self) -> int:
        return int(self.X.shape[0])

    # ------------------------------------------------------------------ primitives
    def _log_density(self, x: np.ndarray) -> float:
        w = np.asarray(x, float)
        norm2 = float(w @ w)
        if not math.isfinite(norm2):
            return -norm2
        s = self.X @ w
        return float(self._c @ w - np.sum(np.logaddexp(0.0, s)) - 0.5 * norm2)

    def _log_density_batch(self, X: np.ndarray) -> np.ndarray:
        W = np.asarray(X, float)
        norm2 = np.einsum("ij,ij->i", W, W)
        finite = np.isfinite(norm2)
        out = -norm2
        if finite.any():
            Wf = W[finite]
            S = Wf @ self.X.T
            out[finite] = Wf @ self._c - np.logaddexp(0.0, S).sum(axis=1) - 0.5 * norm2[finite]
        return out

    def _grad_log_density(self, x: np.ndarray) -> np.ndarray:
        w = np.asarray(x, float)
        return self._c - self.X.T @ _sigmoid(self.X @ w) - w

    def log_density_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """(log π(w), ∇ log π(w)) sharing one product Xw; counts one of each."""
        self.n_density += 1
        self.n_grad += 1
        w = np.asarray(x, float)
        norm2 = float(w @ w)
        if not math.isfinite(norm2):
            return -norm2, np.full(self.dim, np.nan)
        s = self.X @ w
        logp = float(self._c @ w - np.sum(np.logaddexp(0.0, s)) - 0.5 * norm2)
        return logp, self._c - self.X.T @ _sigmoid(s) - w

    def _hessian_log_density(self, x: np.ndarray) -> np.ndarray:
        p = _sigmoid(self.X @ np.asarray(x, float))
        weights = p * (1.0 - p)
        return -(self.X.T * weights) @ self.X - np.eye(self.dim)

    def hessian_vector_product(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """∇² log π(w) v without forming the Hessian: −Xᵀ(σ(1−σ) ⊙ Xv) − v."""
        p = _sigmoid(self.X @ np.asarray(x, float))
        v = np.asarray(v, float)
        return -(self.X.T @ (p * (1.0 - p) * (self.X @ v))) - v

    def jit_log_density(self):
        """The compiled ``_log_density`` (uncounted; see :mod:`ckam_bench.jit`)."""
        if not jit.AVAILABLE:
            return None
        return _compiled(self._digest, self.X, self._c)[0]

    def jit_log_density_and_grad(self):
        """Compiled ``f(w, grad_out) -> log π(w)`` writing ∇log π(w) into ``grad_out``."""
        if not jit.AVAILABLE:
            return None
        return _compiled(self._digest, self.X, self._c)[1]

    def jit_hessian_log_density(self):
        """Compiled ``h(w, hess_out) -> 0.0`` writing ∇²log π(w) into ``hess_out`` (d × d)."""
        if not jit.AVAILABLE:
            return None
        return _compiled(self._digest, self.X, self._c)[2]

    def describe(self) -> dict:
        return {**super().describe(), "dataset": self.dataset, "n_obs": self.n_obs,
                "data_sha256": self._data_sha256[:16]}
