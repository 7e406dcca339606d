"""Divergences after the warm-up are flagged, for every Hamiltonian sampler the harness runs:
ours (the Block's ``divergent``), the JAX peers (their libraries' ``is_divergent``) and nutpie
(its own ``diverging`` statistic, read from its trace off the sampler clock). The flag is a
warning: the status, the end-of-run line and the reports show it, and the run's values stand."""

import numpy as np
import pytest

from ckam_bench.commands.cli import summary
from ckam_bench.engine.runner import sampler_divergences
from ckam_bench.engine.tally import Tally
from ckam_bench.report import aggregate, ranking
from ckam_bench.samplers.base import Block
from ckam_bench.samplers.nuts import NUTS
from ckam_bench.samplers.random_walk import RandomWalk
from ckam_bench.targets.base import PluginError
from ckam_bench.targets.gaussians import gauss2d_corr
from tests.test_flags import run_one


def _block(n, phase, divergent):
    return Block(samples=np.zeros((int(np.sum(phase)), 2)), accepted=np.ones(n, bool), accept_prob=np.ones(n),
                 phase=np.asarray(phase, np.int8), step_size=np.full(n, 0.1), noise=np.full(n, np.nan),
                 divergent=divergent)


def test_tally_flags_divergences_of_the_collected_phase_only():
    tally = Tally(("burn_in", "sampling"), 2, 10, 10, 10)
    tally.record(_block(4, [0, 0, 0, 0], np.array([True, True, False, True])), None, False)
    assert "divergent" not in tally.flags()  # warm-up divergences are the adaptation's business
    assert tally.divergences() == {"n_divergent": 3.0, "divergent_burn_in": 3.0, "divergent_sampling": 0.0}
    tally.record(_block(5, [0, 1, 1, 1, 1], np.array([1, 0, 1, 0, 0])), None, False)
    assert tally.divergences()["divergent_sampling"] == 1.0
    assert tally.flags()["divergent"] == "1 of the 4 transitions after the warm-up diverged (25.00%)"
    arrays, meta = tally.state()  # a resumed run keeps the counts
    again = Tally(("burn_in", "sampling"), 2, 10, 10, 10)
    again.load(arrays, meta)
    assert again.divergences() == tally.divergences() and again.flags() == tally.flags()
    silent = Tally(("sampling",), 2, 10, 10, 10)  # a sampler without the notion: no columns
    silent.record(_block(3, [0, 0, 0], None), None, False)
    assert silent.divergences() == {} and silent.flags() == {}
    with pytest.raises(PluginError, match=r"Block.divergent must be 3 booleans .* got shape \(2,\)"):
        silent.record(_block(3, [0, 0, 0], np.zeros(2, bool)), None, False)


class _Hooked(RandomWalk):
    """A sampler whose library keeps divergences elsewhere: the off-clock hook gives them."""

    name = "hooked"

    def __init__(self, answer, step_size=0.5):
        super().__init__(step_size=step_size)
        self.answer = answer

    def ckam_divergent(self, state, n):
        return self.answer(n) if state is None else self.answer(np.arange(state.t - n, state.t))


@pytest.mark.parametrize("answer, message", [
    (lambda n: np.zeros(n + 1, bool), r"must return 5 booleans .* got shape \(6,\)"),
    (lambda n: np.full(n, 0.5), "must return 5 booleans"),
    (lambda n: "no", "must return 5 booleans"),
])
def test_a_divergence_hooks_result_is_checked(answer, message):
    block = _block(5, [0] * 5, None)
    with pytest.raises(PluginError, match="_Hooked.ckam_divergent " + message):
        sampler_divergences(_Hooked(answer), None, block)


def test_the_hook_fills_a_block_without_divergences_and_none_means_unknown():
    block = _block(3, [0] * 3, None)
    filled = sampler_divergences(_Hooked(lambda n: [0, 1, 0]), None, block)
    assert filled.divergent.dtype == bool and filled.divergent.tolist() == [False, True, False]
    assert sampler_divergences(_Hooked(lambda n: None), None, block).divergent is None
    own = _block(3, [0] * 3, np.zeros(3, bool))  # the block's own answer wins
    assert sampler_divergences(_Hooked(lambda n: [1, 1, 1]), None, own) is own


def test_blocks_grow_with_the_hooks_cost():
    """A hook that costs more than a twentieth of a block lengthens the blocks (nutpie's copies its
    whole trace: fixed blocks would make the harness's time quadratic in the chain's length)."""
    from ckam_bench.engine.runner import HOOK_SHARE, MAX_BLOCK_SECONDS, block_length

    assert block_length(0.02, 0.0) == 0.02 and block_length(0.25, 0.01) == 0.25
    assert block_length(0.02, 0.01) == pytest.approx(0.01 / HOOK_SHARE) == pytest.approx(0.2)
    assert block_length(0.02, 1e3) == MAX_BLOCK_SECONDS


def test_a_hooked_sampler_is_flagged_end_to_end(tmp_path):
    status, _ = run_one(tmp_path, 0, _Hooked(lambda t: t % 7 == 0, step_size=0.5),
                        target=gauss2d_corr(), iterations=700)
    assert status["flags"] == ["divergent"] and status["totals"]["n_divergent"] == 100


@pytest.fixture(scope="module")
def nuts_runs(tmp_path_factory):
    """NUTS with no warm-up and a step ~3 times too long for the Gaussian's narrow direction
    (a third of its trajectories diverge), and NUTS with its warm-up (none after it)."""
    root = tmp_path_factory.mktemp("divergent")
    target = gauss2d_corr()
    bad = [run_one(root, seed, NUTS(step_size=0.3, burn_in=0), target=target, iterations=600) for seed in (0, 1)]
    good = [run_one(root, seed, type("nuts_adapted", (NUTS,), {"name": "nuts_adapted"})(burn_in=200),
                    target=target, iterations=600) for seed in (0, 1)]
    return root, bad, good


def test_nuts_divergences_reach_the_status_trace_and_end_line(nuts_runs):
    root, bad, good = nuts_runs
    status, folder = bad[0]
    assert status["flags"] == ["divergent"]
    note = status["flag_notes"]["divergent"]
    hits = status["totals"]["divergent_sampling"]
    assert 100 < hits < 400 and note.startswith(f"{hits} of the 600 transitions after the warm-up diverged")
    line = summary(status, str(folder), {})
    assert "FLAGGED divergent" in line.splitlines()[0] and "\n  FLAGGED divergent: " in line
    for status, _ in good:
        assert status["flags"] == [] and status["totals"]["divergent_sampling"] == 0
        assert status["totals"]["divergent_burn_in"] == status["totals"]["n_divergent"]


def test_reports_mark_divergent_runs_and_keep_their_values(nuts_runs):
    root, _, _ = nuts_runs
    results = aggregate.load_results(root)
    bad = next(g for g in results.groups() if g.label.startswith("nuts ") or g.label == "nuts")
    assert not bad.flagged and all("divergent" in r.warnings for r in bad.runs)  # no voided values
    found = ranking.report_flags(bad)
    assert found["divergent"].startswith("divergent after the warm-up: ")
    assert "(seed 0)" in found["divergent"] and "(seed 1)" in found["divergent"]
    assert "divergent (2/2 seeds)" in ranking.report_flag_text(bad)
    table = ranking.ranking_table(results, "gauss2d_corr")
    rows = {row[1].split(" ")[0]: dict(zip(table.header, row)) for row in table.rows}
    assert rows["nuts_adapted"]["rank"] == "1" and rows["nuts"]["rank"] == "2"
    assert "divergent (2/2 seeds)" in rows["nuts"]["sampler"] and "⚠" in rows["nuts"]["sampler"]
    assert rows["nuts"]["min ESS/s"] not in ("0", "N/A")  # measured, not voided


def test_nutpies_divergences_are_its_own_statistic(tmp_path):
    """nutpie tuned for 5 draws towards an acceptance of 0.01 on the correlated Gaussian (a step
    far too long) diverges on almost every draw after it (tuned for 200 towards 0.8: on none);
    the flag and the counts per phase are those of nutpie's own ``diverging`` statistic in its
    trace. (Tuned for 5 draws towards 0.8, nutpie 0.16.8 diverged on 395 of 395 draws after
    tuning, 0.16.11 on none: its short warm-up ends on a shorter step.)"""
    pytest.importorskip("nutpie")  # the peers extra; CI installs it
    from ckam_bench.samplers.peers import Nutpie

    for burn_in, target_accept, flagged in ((5, 0.01, True), (200, 0.8, False)):
        sampler = Nutpie(burn_in=burn_in, target_accept=target_accept)
        status, _ = run_one(tmp_path, burn_in, sampler, target=gauss2d_corr(), iterations=400)
        stats = sampler._background._sampler.inspect().get_arrow_trace()[1][0]
        diverging = np.asarray(stats.column("diverging"), dtype=bool)[:400]
        totals = status["totals"]
        assert totals["divergent_burn_in"] == diverging[:burn_in].sum()
        assert totals["divergent_sampling"] == diverging[burn_in:].sum()
        assert ("divergent" in status["flags"]) == flagged


@pytest.mark.parametrize("name", ["numpyro_nuts", "blackjax_nuts"])
def test_jax_peers_divergences_are_their_libraries(name, tmp_path):
    """The JAX peers pass their libraries' ``is_divergent`` on: with no warm-up and a step ~3
    times too long for the Gaussian's narrow direction, many transitions diverge."""
    pytest.importorskip("jax")  # the peers extra; CI installs it
    from ckam_bench.samplers import peers

    sampler = {"numpyro_nuts": peers.NumPyroNUTS, "blackjax_nuts": peers.BlackJAXNUTS}[name](step_size=0.3, burn_in=0)
    status, _ = run_one(tmp_path, 0, sampler, target=gauss2d_corr(), iterations=300)
    assert "divergent" in status["flags"] and 30 < status["totals"]["divergent_sampling"] <= 300
