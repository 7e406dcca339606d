"""The report in the order a reader needs it (issue 30 §3): the ranking first, then accuracy
against cost, the posterior and the samples, the papers' sections only when their runs are
there, the diagnostics after, then tables, validity, inventory; the same order in report.md."""

from __future__ import annotations

import re

from ckam_bench.report import aggregate as agg
from ckam_bench.report import paper_ckam, paper_gradient, sections, tables
from ckam_bench.report.cli import main as figures_main
from tests.test_report import make_run

NUTS = {"_target_": "ckam_bench.samplers.nuts.NUTS", "target_accept": 0.8}


def _user_runs(root, paper_target: bool = True):
    """What a user runs: generic samplers (NUTS among them) on their own target and (with
    ``paper_target``) on one of the cKAM paper's targets, none of the papers' own samplers."""
    for seed in (0, 1):
        for sampler in ("rw", "am"):
            make_run(root, "banana", sampler, seed=seed, n_samples=100, n_diag=100)
        make_run(root, "banana", "nuts", seed=seed, n_samples=100, n_diag=100,
                 sampler_node=NUTS)
        if paper_target:
            make_run(root, "bimodal", "rw", seed=seed, n_samples=100, n_diag=100)
    return root


def test_sections_in_the_readers_order_and_no_paper_for_a_user(tmp_path, capsys):
    root = _user_runs(tmp_path / "runs", paper_target=False)
    out = tmp_path / "out"
    assert figures_main([str(root), "--out", str(out), "--generic", "metrics",
                         "--formats", "png"]) == 0
    printed = capsys.readouterr().out
    assert not re.search(r"figure \d+: skipped", printed), printed
    page = (out / "report.html").read_text()
    body = page.split("</nav>")[1]
    headings = re.findall(r"<h2 id=\"[^\"]*\">([^<]*)</h2>", body)
    assert headings == [sections.RANKING, sections.ACCURACY, sections.POSTERIOR,
                        sections.DIAGNOSTICS, sections.TABLES, sections.VALIDITY,
                        sections.INVENTORY, sections.NOT_USED]
    for paper in sections.PAPERS.values():
        assert paper.section not in page
    assert "Figure 3" not in page and not list(out.glob("fig*.png"))
    assert not list(out.glob("gad_*")) and not list(out.glob("*hyperparameters*"))
    accuracy = body.split(sections.ACCURACY)[1].split(f">{sections.POSTERIOR}<")[0]
    titles = re.findall(r"<figcaption><b>([^<]*)\.</b>", accuracy)
    assert titles[:2] == ["banana: symmetric KL divergence to the target",  # (no b² here)
                          "banana: effective sample size (min over coordinates)"]
    diagnostics = body.split(f">{sections.DIAGNOSTICS}<")[1].split(f">{sections.TABLES}<")[0]
    assert "banana: sampler diagnostics" in diagnostics
    assert "iterations per second of sampler time" in diagnostics
    md = (out / "report.md").read_text()
    order = [md.index(f"## {name}\n") for name in (
        sections.RANKING, sections.ACCURACY, sections.POSTERIOR, sections.DIAGNOSTICS,
        sections.TABLES, "Runs")]
    assert order == sorted(order)
    assert "ranking_banana.tex" in md.split(f"## {sections.ACCURACY}")[0]
    assert "Figure 9" not in md


def test_a_paper_is_present_only_with_its_samplers_on_its_targets(tmp_path):
    user = agg.load_results(_user_runs(tmp_path / "user"))
    assert not any(paper.present(user) for paper in sections.PAPERS.values())
    assert paper_ckam.supported(user) == []
    assert paper_gradient.tables(user) == [] and paper_gradient.figures(user) == []
    assert sorted(t.stem for t in tables.all_tables(user)) == ["results_banana",
                                                                "results_bimodal"]
    for seed in (0, 1):
        make_run(tmp_path / "paper", "bimodal", "ckam", seed=seed, n_samples=100, n_diag=100)
        make_run(tmp_path / "paper", "bimodal", "rw", seed=seed, n_samples=100, n_diag=100)
        make_run(tmp_path / "paper", "banana", "rw", seed=seed, n_samples=100, n_diag=100)
    paper = agg.load_results(tmp_path / "paper")
    assert sections.PAPERS["ckam"].present(paper)
    assert sections.PAPERS["ckam"].targets_used(paper) == ["bimodal"]
    assert paper_ckam.supported(paper) == [1, 2, 3, 4, 10, 11, 12, 13]  # bimodal's, and Fig. 1
    made = tables.all_tables(paper)
    hyper = [t for t in made if "hyperparameters" in t.stem]
    assert [t.stem for t in hyper] == ["table1_hyperparameters_bimodal"]
    assert hyper[0].section == sections.PAPERS["ckam"].section


def test_sections_order_puts_unknown_sections_after_the_papers():
    found = [sections.DIAGNOSTICS, "A plugin's figures", sections.PAPERS["kamh"].section,
             sections.ACCURACY, sections.TABLES, sections.RANKING]
    assert sections.ordered(found) == [sections.RANKING, sections.ACCURACY,
                                       sections.PAPERS["kamh"].section, "A plugin's figures",
                                       sections.DIAGNOSTICS, sections.TABLES]


def test_the_header_names_each_targets_variables_and_ranges_are_small_print(tmp_path):
    from ckam_bench.report import html
    from tests.test_report_posterior import _named

    for seed in (0, 1):
        _named(make_run(tmp_path, "gmm2d", "rw", seed=seed, n_samples=50, n_diag=50))
        make_run(tmp_path, "banana", "am", seed=seed, n_samples=50, n_diag=50)
    line = html._targets_line(agg.load_results(tmp_path))
    assert "<b>gmm2d</b> (variables mu, theta[0]…theta[1], L[0,0]…L[1,1]; rw)" in line
    assert "<b>banana</b> (3 dimensions; am)" in line
    assert html._cell("0.0012 [0.0011, 0.0014]") == (
        '0.0012 <span class="range">[0.0011, 0.0014]</span>')
    assert html._cell("≤ 0.1 [≤ 0.1, ≤ 0.1]").startswith('≤ 0.1 <span class="range">')
    assert html._cell("am [rate.value=0.01]") == "am [rate.value=0.01]"  # a label, not a range


def test_gad_tables_name_nuts_by_its_adaptation_after_stans():
    """Table 7's NUTS rows: Stan-adapted NUTS as the paper's "NUTS", nutpie's warm-ups as their
    own rows after it, HMC-k by k."""
    from types import SimpleNamespace

    def run(sampler, k=None):
        return SimpleNamespace(sampler=sampler, status={"sampler_info": {"n_leapfrog": k}}, config={})

    labels = [paper_gradient.method(run(s)) for s in ("nuts_lowrank", "nuts", "nuts_fisher", "mala")]
    labels += [paper_gradient.method(run("hmc", k)) for k in (20, 5)]
    assert labels == ["NUTS-lowrank", "NUTS", "NUTS-Fisher", "MALA", "HMC-20", "HMC-5"]
    assert sorted(labels, key=paper_gradient._order_key) == ["MALA", "HMC-5", "HMC-20", "NUTS", "NUTS-Fisher",
                                                             "NUTS-lowrank"]
