"""Schedules against their closed forms."""

import math

import numpy as np
import pytest

from ckam_bench.schedules import (Constant, CyclicalCosine, NoiseDecay, PowerDecay, RobbinsMonro,
                                  Window)


def test_power_decay_and_constant():
    s = PowerDecay(scale=2.0, exponent=0.5)
    assert s(0) == 2.0 and s(3) == pytest.approx(1.0)
    assert Constant(0.1)(10**9) == 0.1


def test_robbins_monro_rate_is_polynomial_not_geometric():
    rm = RobbinsMonro(epsilon=0.75, target_accept=0.234)
    assert rm(0) == 1.0
    assert rm(10**4 - 1) == pytest.approx(10 ** (-3.0))
    # sum eta_t diverges, sum eta_t^2 converges (eps in (1/2, 1]): partial sums grow
    t = np.arange(10**6)
    assert (1 + t).astype(float).__pow__(-0.75).sum() > 100
    assert rm.update(0.0, 1.0, 0) == pytest.approx(1 - 0.234)
    assert rm.update(0.0, 0.234, 50) == 0.0


def test_noise_decay_hits_start_and_end():
    for start, end, r, T in [(4.0, 1.0, 0.55, 1000), (2.0, 0.2, 1.0, 50), (4.0, 1.0, 0.55, 400)]:
        s = NoiseDecay(start=start, end=end, rate=r, horizon=T)
        a, b = s.coefficients
        assert s(0) == pytest.approx(start)
        assert a * (b + T) ** (-r) == pytest.approx(end)
        assert s(T) == end and s(10 * T) == end
        values = [s(t) for t in range(T)]
        assert np.all(np.diff(values) < 0)
    assert NoiseDecay(start=1.0, end=1.0, horizon=10)(3) == 1.0
    with pytest.raises(ValueError, match="end"):
        NoiseDecay(start=1.0, end=2.0)


def test_window():
    w = Window(until=5)
    assert [w(t) for t in (0, 4, 5, 100)] == [1.0, 1.0, 0.0, 0.0]


def test_cyclical_cosine_phases_and_continuity():
    c = CyclicalCosine(cycle_length=1000, beta=0.4)
    assert c.exploring(0) and c.exploring(400) and not c.exploring(401)
    assert c.exploring(1000) and not c.exploring(1999)
    nu_exp = 1.7
    nu0 = c.initial_step(nu_exp)
    # the cosine curve through nu_exp at u = beta: continuous at the transition
    assert nu0 * 0.5 * (math.cos(math.pi * 0.4) + 1) == pytest.approx(nu_exp)
    assert nu0 * c(401) == pytest.approx(nu_exp, rel=1e-2)
    assert nu0 * c(999) < 1e-4 * nu0 * 10  # -> 0 at the end of the cycle


@pytest.mark.parametrize("bad", [dict(cycle_length=1), dict(beta=0.0), dict(beta=1.0)])
def test_cyclical_validation(bad):
    with pytest.raises(ValueError):
        CyclicalCosine(**bad)


def test_validation_messages_name_the_argument():
    with pytest.raises(ValueError, match="epsilon"):
        RobbinsMonro(epsilon=-1)
    with pytest.raises(ValueError, match="target_accept"):
        RobbinsMonro(target_accept=1.5)


def test_offset_shifts_the_clock_and_keeps_robbins_monro_conditions():
    """η_t = s (1 + t0 + t)^-ε: η_0 < 1 (Σ_0 survives the first update), the same tail as the
    paper's rate shifted by t0, so Σ η_t = ∞ and Σ η_t² < ∞ still hold (ε ∈ (1/2, 1])."""
    rate = PowerDecay(1.0, 0.75, offset=100.0)
    assert rate(0) == pytest.approx(101 ** -0.75) and rate(0) < 0.05
    assert rate(50) == PowerDecay(1.0, 0.75)(150)
    rm = RobbinsMonro(0.75, 0.234, 1.0, offset=100.0)
    assert rm(7) == rate(7)
    assert rm.update(0.0, 1.0, 0) == pytest.approx(rate(0) * (1 - 0.234))
    with pytest.raises(ValueError, match="^offset"):
        PowerDecay(1.0, 0.75, offset=-1.0)
    with pytest.raises(ValueError, match="^offset"):
        RobbinsMonro(offset=math.inf)


def test_diminishing_flags():
    """What describe() reports as the kind of adaptation comes from these flags."""
    from ckam_bench.samplers.adaptive import adaptation_kind

    assert adaptation_kind(PowerDecay(1.0, 0.75, 100.0)) == "diminishing"
    assert adaptation_kind(PowerDecay(0.1, 0.0)) == "non-diminishing"  # the paper's constant η
    assert adaptation_kind(Constant(0.1)) == "non-diminishing"
    assert adaptation_kind(Constant(0.0)) == "diminishing"
    assert adaptation_kind(Window(100)) == "finite"
    assert adaptation_kind(RobbinsMonro()) == "diminishing"
