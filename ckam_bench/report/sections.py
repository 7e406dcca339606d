"""The report's sections, in the order a reader needs them, and the papers it knows.

A reader of a benchmark asks first *who wins* and *at what cost*, then *what the posterior
looks like*, and only then *how the samplers behaved*. Both ``report.html`` and ``report.md``
follow :data:`ORDER`:

1. **Ranking** — the ranking table of each target (and the posteriordb suite's);
2. **Accuracy against cost** — b², KL, ESS and the other accuracy columns against sampler
   seconds, density and gradient evaluations (:mod:`ckam_bench.report.generic`);
3. **Posterior** — per variable, under the model's names;
4. **Samples** — marginals and pairwise projections of the stored samples;
5. the **papers' sections** — only for a paper whose targets and samplers are in the runs
   (:data:`PAPERS`, :meth:`Paper.present`), each with its figures and its tables;
6. figure sections added by other sources (plugins), in the order they came;
7. **Diagnostics** — acceptance, step size, iterations per second and the other sampler
   diagnostics, and the per-iteration traces;
8. **Tables** — results and settings as run; then **Validity**, the **Run inventory** and
   what was **Not used**.

A paper is :class:`Paper`: its section title, its targets, its own samplers (the methods it
proposes or compares, without the generic baselines every paper runs: rw, am, nuts, mala,
hmc) and the prefix of its presets (``conf/experiment``). It is *present* in a set of runs
when a run of one of its samplers is on one of its targets, or a run used one of its presets.
"""

from __future__ import annotations

from dataclasses import dataclass

RANKING = "Ranking"
ACCURACY = "Accuracy against cost"
POSTERIOR = "Posterior"
SAMPLES = "Samples"
DIAGNOSTICS = "Diagnostics"
TABLES = "Tables"
VALIDITY = "Validity"
INVENTORY = "Run inventory"
NOT_USED = "Not used"


@dataclass(frozen=True)
class Paper:
    """A paper the report has sections for (see the module docstring)."""

    name: str
    section: str
    targets: frozenset
    samplers: frozenset
    preset_prefix: str

    def uses(self, run) -> bool:
        """Whether a stored run is one of the paper's: one of its samplers on one of its
        targets, or a run of one of its presets."""
        preset = str(run.experiment or "")
        return ((run.target in self.targets and run.sampler in self.samplers)
                or (bool(self.preset_prefix) and preset.startswith(self.preset_prefix)))

    def present(self, results) -> bool:
        """Whether any run of ``results`` is one of the paper's."""
        return any(self.uses(run) for run in results.runs)

    def targets_used(self, results) -> list[str]:
        """The targets (sorted) on which the runs include one of the paper's runs."""
        return sorted({run.target for run in results.runs if self.uses(run)})


CKAM_SAMPLERS = frozenset({"kam", "ckam", "ckam_authors", "ckam_finite", "ckam_dim", "rbam",
                           "gam"})
PAPERS = {
    "ckam": Paper("ckam", "cKAM paper (Li, Zeng & Guo)",
                  frozenset({"bimodal", "gmm2d", "gmm2d_authors", "gmm32"}), CKAM_SAMPLERS,
                  "paper_"),
    "gradient": Paper("gradient", "Gradient-based adaptive MCMC (Titsias & Dellaportas)",
                      frozenset({"neal100", "logistic_caravan", "logistic_australian",
                                 "logistic_ripley", "logistic_pima", "logistic_heart",
                                 "logistic_german", "logistic_mnist56", "gp51"}),
                      frozenset({"gadmala_fast", "gadmala_exact", "gadrwm"}), "gad_"),
    "kamh": Paper("kamh", "Kernel adaptive Metropolis-Hastings (Sejdinovic et al.)",
                  frozenset({"banana", "banana_moderate", "banana_strong", "flower",
                             "gp_glass"}),
                  frozenset({"kamh", "kam", "gam"}), "kamh_"),
    "divergence": Paper("divergence",
                        "Divergence-minimisation paper (Dharamshi, Ngo & Rosenthal)",
                        frozenset({"double_banana", "basis4", "banana_bunch", "horseshoe"}),
                        frozenset({"arwm", "pt", "pt2", "pt10", "dm", "dm_finite", "scout",
                                   "scout_finite", "horseshoe_gibbs"}), "dm_"),
}
"""The papers, by the name their figure and table sources are registered under in
:data:`ckam_bench.report.cli.FIGURE_SOURCES` / ``TABLE_SOURCES``."""

BEFORE_PAPERS = (RANKING, ACCURACY, POSTERIOR, SAMPLES)
AFTER_PAPERS = (DIAGNOSTICS, TABLES)
ORDER = (*BEFORE_PAPERS, *(p.section for p in PAPERS.values()), *AFTER_PAPERS)
"""The known sections in the report's order; another section goes after the papers'."""


def ordered(found) -> list[str]:
    """The sections ``found`` (figure and table sections) in the report's order: the known
    ones in :data:`ORDER`, any other after the papers' sections, in the order given."""
    found = list(dict.fromkeys(found))
    known = [s for s in ORDER if s in found and s not in AFTER_PAPERS]
    others = [s for s in found if s not in ORDER]
    return known + others + [s for s in AFTER_PAPERS if s in found]
