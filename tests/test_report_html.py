"""The HTML report in a real headless browser (Debian's Chromium driven by Playwright).

Needs ``apt-get install chromium`` (the browser at /usr/bin/chromium, or $CKAM_BENCH_CHROMIUM)
and the Python package ``playwright`` (the test extra; no browser download: Playwright drives
the system Chromium). Nothing here is skipped: a missing browser fails the test.
"""

import os
import re
import shutil
from pathlib import Path

import pytest

from ckam_bench.report.cli import main as figures_main
from tests.test_report import make_run
from tests import clirun

CHROMIUM = os.environ.get("CKAM_BENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT = os.environ.get("CKAM_BENCH_REPORT_SCREENSHOT")  # optional: keep a screenshot


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for seed in (0, 1, 2):
        for sampler in ("rw", "am", "gam"):
            make_run(root, "banana", sampler, seed=seed, n_samples=300, n_diag=600,
                     kl_scale={"rw": 1.0, "am": 3.0, "gam": 0.5}[sampler])
        make_run(root, "bimodal", "rw", seed=seed, n_samples=300, n_diag=600)
    out = tmp_path_factory.mktemp("report")
    assert figures_main([str(root), "--out", str(out), "--figures", "3,10",
                         "--formats", "png"]) == 0
    return out / "report.html"


@pytest.mark.slow
def test_report_opens_in_chromium_with_every_figure_and_sorting_tables(report, tmp_path):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    problems, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        page = context.new_page()
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("request", lambda req: requests.append(req.url))
        page.goto(report.as_uri(), wait_until="load")
        images = page.eval_on_selector_all(
            "img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
        assert len(images) >= 10
        assert all(done and w > 0 and h > 0 for done, w, h in images), images
        # every request stays inside the file: the page itself and its data: URIs
        assert all(u.startswith(("file:", "data:")) for u in requests), requests
        table = "#ranking_banana"
        column = page.eval_on_selector_all(f"{table} thead th",
                                           "ths => ths.map(t => t.textContent)")
        index = column.index("final KL")

        def values():
            return page.eval_on_selector_all(
                f"{table} tbody tr", f"rows => rows.map(r => r.cells[{index}].textContent)")

        def key(text):
            return float(text.split(" [")[0].replace(",", ""))

        page.click(f"{table} thead th:nth-child({index + 1})")
        ascending = [key(v) for v in values()]
        assert ascending == sorted(ascending) and len(ascending) == 3
        page.click(f"{table} thead th:nth-child({index + 1})")
        assert [key(v) for v in values()] == sorted(ascending, reverse=True)
        sampler_col = column.index("sampler") + 1
        page.click(f"{table} thead th:nth-child({sampler_col})")
        names = page.eval_on_selector_all(
            f"{table} tbody tr", f"rows => rows.map(r => r.cells[{sampler_col - 1}].textContent)")
        assert names == sorted(names)
        inventory = page.eval_on_selector_all("#inventory tbody tr", "rows => rows.length")
        assert inventory == 12
        shot = Path(SCREENSHOT) if SCREENSHOT else tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 10_000
        browser.close()
    assert problems == []


@pytest.mark.slow
def test_the_first_screen_holds_the_ranking(report):
    """At 1280 x 900 (a laptop screen) the page opens on the ranking: the first ranking
    table's title and its first row lie inside the first screen, and the ranking comes before
    the figures (issue 30 §3)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(report.as_uri(), wait_until="load")
        box = page.eval_on_selector(
            "table[id^=ranking_]", """t => {
                const r = t.getBoundingClientRect(), row = t.tBodies[0].rows[0];
                const title = t.closest('.scroll').previousElementSibling;
                return {top: r.top, row: row.getBoundingClientRect().bottom,
                        title: title.getBoundingClientRect().top, scroll: window.scrollY};
            }""")
        headings = page.eval_on_selector_all(
            "h2", "hs => hs.map(h => [h.textContent, h.getBoundingClientRect().top])")
        browser.close()
    assert box["scroll"] == 0
    assert 0 <= box["title"] < box["top"] < box["row"] <= 900, box
    names = [name for name, _ in headings]
    assert names[0] == "Ranking" and names[1] == "Accuracy against cost", names
    assert headings[1][1] > box["row"]


USER_TARGET = '''
import numpy as np
from ckam_bench.targets.base import Target


class Banana(Target):
    """x0 ~ N(0, 1), x1 | x0 ~ N(bend (x0^2 - 1), 1), x2 ~ N(0, 1)."""

    def __init__(self, dim: int = 3, bend: float = 0.5):
        super().__init__(dim)
        self.name, self.bend = "banana", float(bend)

    def _log_density(self, x):
        y = x[1] - self.bend * (x[0] ** 2 - 1.0)
        return -0.5 * (x[0] ** 2 + y ** 2 + x[2] ** 2)

    def sample(self, n, rng):
        z = rng.standard_normal((int(n), 3))
        z[:, 1] += self.bend * (z[:, 0] ** 2 - 1.0)
        return z
'''


@pytest.mark.slow
def test_sweep_on_a_user_target_gives_generic_figures_ranking_and_html(tmp_path):
    """A user's own target (one class + one YAML on Hydra's search path), three samplers x
    three seeds: the sweep prints its report and ranking; the figures command alone gives
    the generic figures and an HTML report that Chromium shows completely."""
    import sys

    from playwright.sync_api import sync_playwright

    (tmp_path / "my_targets.py").write_text(USER_TARGET)
    (tmp_path / "conf" / "target").mkdir(parents=True)
    (tmp_path / "conf" / "target" / "banana.yaml").write_text(
        "_target_: my_targets.Banana\ndim: 3\nbend: 0.5\n")
    sweep = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = clirun.run(
        [sys.executable, "-m", "ckam_bench.commands.cli", "-m", "sampler=rw,am,gam", "target=banana",
         "seed=0,1,2", "budget.seconds=0.3", "progress=false",
         f"hydra.searchpath=[file://{tmp_path / 'conf'}]", f"hydra.sweep.dir={sweep}",
         "hydra.callbacks.sweep_report.figures=false"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"sweep report: {sweep / 'report' / 'report.html'}" in proc.stdout
    assert "**Ranking on banana" in proc.stdout and "| 3 |" in proc.stdout
    out = tmp_path / "figs"
    proc = clirun.run([sys.executable, "-m", "ckam_bench.report.cli", str(sweep), "--out",
                           str(out), "--formats", "png"],
                      cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    for stem in ("banana_metric_ess_min", "banana_metric_diagnostics", "banana_marginals",
                 "banana_pairs", "banana_diagnostics"):
        assert (out / f"{stem}.png").exists(), proc.stdout
    ranking = (out / "ranking_banana.md").read_text()
    # a label may carry the report's flags (0.3 s runs: seeds can disagree, R-hat > 1.01)
    assert all(re.search(rf"\| {name}( ⚠[^|]*)? \| 3 \|", ranking) for name in ("rw", "am", "gam"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        errors = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto((out / "report.html").as_uri(), wait_until="load")
        images = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        browser.close()
    figures_written = len(list(out.glob("*.png")))
    assert len(images) == figures_written and all(w > 0 for w in images)
    assert errors == []
