"""An out-of-tree sampler and target, packaged and installed as a user would, found through
the ``ckam_bench.plugins`` entry point: ``ckam-bench list``, a single run, a sweep and
``ckam-bench-figures``."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "ckb-demo-plugin"
version = "0.0.1"
dependencies = ["ckam-bench"]

[project.entry-points."ckam_bench.plugins"]
ckb_demo = "ckb_demo.conf"

[tool.setuptools]
packages = ["ckb_demo", "ckb_demo.conf"]

[tool.setuptools.package-data]
"ckb_demo.conf" = ["**/*.yaml"]
"""

MODULE = '''\
"""A demo plugin: an independence sampler and a wide Gaussian target."""

import numpy as np

from ckam_bench.samplers.base import Block, ChainState, Sampler, check_start
from ckam_bench.targets.base import Target


class Independence(Sampler):
    """Independence Metropolis-Hastings with proposal N(0, scale^2 I)."""

    name = "independence"

    def __init__(self, scale: float = 1.0):
        if not scale > 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.scale = float(scale)

    def describe(self):
        return {"adaptation": "none"}

    def init(self, target, x0, rng):
        self.target, self.rng = target, rng
        x, logp = check_start(target, x0)
        return ChainState(x=x, logp=logp, t=0)

    def _log_q(self, x):
        return -0.5 * float(x @ x) / self.scale**2

    def advance(self, state, n):
        d = self.target.dim
        x, logp = state.x, state.logp
        samples = np.empty((n, d))
        log_ratio = np.empty(n)
        props = self.scale * self.rng.standard_normal((n, d))
        log_u = np.log(self.rng.random(n))
        for i in range(n):
            y = props[i]
            logp_y = self.target.log_density(y)
            r = (logp_y - logp) + (self._log_q(x) - self._log_q(y))
            log_ratio[i] = r
            if log_u[i] < r:
                x, logp = y.copy(), logp_y
            samples[i] = x
        block = Block(samples=samples, accepted=log_u < log_ratio,
                      accept_prob=np.exp(np.minimum(log_ratio, 0.0)),
                      phase=np.zeros(n, dtype=np.int8), step_size=np.full(n, self.scale),
                      noise=np.full(n, np.nan), n_nonfinite=0)
        return ChainState(x=x, logp=float(logp), t=state.t + n), block


class WideGauss(Target):
    """N(0, sigma^2 I) in d dimensions, with exact draws and moments."""

    name = "wide_gauss"

    def __init__(self, dim: int = 2, sigma: float = 2.0):
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.sigma = float(sigma)
        super().__init__(dim, start=np.ones(dim), box=[[-6 * sigma, 6 * sigma]] * dim)

    def _log_density(self, x):
        return -0.5 * float(x @ x) / self.sigma**2

    def _grad_log_density(self, x):
        return -np.asarray(x, float) / self.sigma**2

    def sample(self, n, rng):
        return self.sigma * rng.standard_normal((n, self.dim))

    @property
    def mean(self):
        return np.zeros(self.dim)

    @property
    def variance(self):
        return np.full(self.dim, self.sigma**2)
'''

SAMPLER_YAML = """\
# Independence Metropolis-Hastings, proposal N(0, scale^2 I) (demo plugin).
_target_: ckb_demo.Independence
scale: 3.0
"""

TARGET_YAML = """\
# Wide isotropic Gaussian N(0, sigma^2 I) (demo plugin).
_target_: ckb_demo.WideGauss
dim: 2
sigma: 2.0
"""


def build_plugin(tmp_path: Path) -> Path:
    """Write the plugin's sources and pip-install them into a fresh folder; returns it."""
    src = tmp_path / "src"
    (src / "ckb_demo" / "conf" / "sampler").mkdir(parents=True)
    (src / "ckb_demo" / "conf" / "target").mkdir()
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "ckb_demo" / "__init__.py").write_text(MODULE)
    (src / "ckb_demo" / "conf" / "__init__.py").write_text("")
    (src / "ckb_demo" / "conf" / "sampler" / "independence.yaml").write_text(SAMPLER_YAML)
    (src / "ckb_demo" / "conf" / "target" / "wide_gauss.yaml").write_text(TARGET_YAML)
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(site), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return site


def run(args, cwd, site, module="ckam_bench.cli"):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=env)


def test_entry_points_become_search_path_entries(tmp_path, monkeypatch):
    from ckam_bench import plugins

    dist = tmp_path / "ckb_fake-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ckb-fake\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ckam_bench.plugins]\nzz = zz_pkg.conf\naa = aa_pkg.conf\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.search_path()[:2] == ["pkg://aa_pkg.conf", "pkg://zz_pkg.conf"]


@pytest.mark.slow
def test_plugin_sampler_and_target_run_sweep_and_figures(tmp_path):
    site = build_plugin(tmp_path)
    work = tmp_path / "work"
    work.mkdir()

    listing = run(["list"], work, site)
    assert listing.returncode == 0, listing.stderr
    lines = {ln.split()[0]: ln for ln in listing.stdout.splitlines() if ln.startswith("  ")}
    assert "Independence Metropolis-Hastings, proposal N(0, scale^2 I)" in lines["independence"]
    assert "d=2" in lines["wide_gauss"] and "exact draws" in lines["wide_gauss"]

    sweep = work / "sweep"
    args = ["-m", "sampler=independence,rw", "target=wide_gauss", "seed=0,1",
            "budget.max_iterations=3000", "progress=false", f"hydra.sweep.dir={sweep}"]
    proc = run(args, work, site)
    assert proc.returncode == 0, proc.stderr
    # the run folders (the sweep also holds report/, written by the end-of-sweep callback)
    folders = sorted(p for p in sweep.iterdir() if (p / "status.json").is_file())
    assert len(folders) == 4
    assert (sweep / "report" / "report.html").is_file()
    for folder in folders:
        status = json.loads((folder / "status.json").read_text())
        assert status["state"] == "complete", (folder, status["state"])
    assert any("independence" in f.name for f in folders)

    again = run(args, work, site)  # a complete sweep re-run is skipped, not recomputed
    assert again.returncode == 0, again.stderr

    out = tmp_path / "figs"
    figs = run([str(sweep), "--out", str(out)], work, site, module="ckam_bench.report.cli")
    assert figs.returncode == 0, figs.stderr
    report = (out / "report.md").read_text()
    assert "| wide_gauss | independence | none | 2 | 0, 1 | complete 2 |" in report
    results = (out / "results_wide_gauss.md").read_text()
    assert any(row.startswith("| independence |") for row in results.splitlines())

    # A typo in a plugin option is a configuration error naming the option (exit 2).
    bad = run(["sampler=independence", "target=wide_gauss", "sampler.scale=-1",
               "budget.max_iterations=10"], work, site)
    assert bad.returncode == 2 and "sampler.scale" in bad.stderr
