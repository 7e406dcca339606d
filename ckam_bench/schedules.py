r"""Schedules: functions of the iteration counter that drive adaptation.

Every schedule is a small immutable object; calling it with an iteration ``t`` (0-based,
counted from wherever the sampler restarts it) returns a float. Samplers take schedules as
constructor arguments, so a config swaps one for another without touching sampler code
(``conf/schedule/*.yaml`` mirrors the classes here).

* :class:`Constant` — :math:`c`. A constant AM learning rate, a constant noise γ, or an
  adaptation probability of 1.
* :class:`PowerDecay` — :math:`s\,(1+t_0+t)^{-\epsilon}`. Robbins–Monro learning rates
  (ε ∈ (1/2, 1] gives Σ η_t = ∞, Σ η_t² < ∞) and KAM's subsample-redraw probability
  :math:`p_t = (1+t)^{-1/2}` (p_t → 0, Σ p_t = ∞: diminishing adaptation).
* :class:`RobbinsMonro` — the step-size rule :math:`\log\nu \leftarrow \log\nu + \eta_t(\alpha_t - \alpha^*)`
  with :math:`\eta_t = s\,(1+t_0+t)^{-\epsilon}`.

**Keeping Σ₀ (the offset t₀).** An AM-type covariance update
:math:`\Sigma_{t+1} = \Sigma_t + \eta_t[(\theta_{t+1}-\mu_t)(\theta_{t+1}-\mu_t)^\top - \Sigma_t]`
with :math:`\eta_0 = 1` (t₀ = 0, s = 1) replaces Σ₀ by a rank-one matrix at the first step (rank
0 if the first proposal is rejected), and in high dimension the chain can spend most of its
run re-growing the lost directions (issue 9: on gmm32 GAM kept only 20–23 of 32 eigenvalues
above 1e-3 after 200k steps). With an offset the first rate is :math:`\eta_0 = s(1+t_0)^{-\epsilon}`
and Σ₀ keeps weight :math:`\prod_{i<t}(1-\eta_i) > 0`; for ε = 1, s = 1 the update is (up to
O(1/t) terms) the empirical covariance of the chain with Σ₀ counted as t₀ pseudo-observations. The offset only
shifts the clock: Σ η_t = ∞ and Σ η_t² < ∞ still hold, so the adaptation still diminishes.
The defaults of AM, RBAM and GAM use t₀ = 100 (η₀ ≈ 0.032 for ε = 0.75); cKAM/KAM's step-size
rule keeps t₀ = 0 as the paper prints it. (The cKAM paper's Algorithm 1 prints
  :math:`1/(1+\epsilon)^t`, a geometric rate that stops adaptation almost at once, and its table
  footnote prints :math:`(1+t)^{\epsilon}`; both are typos for this standard rate.)
* :class:`Window` — value ``v`` while ``t < until``, then 0: "adapt during burn-in only".
* :class:`NoiseDecay` — :math:`\gamma_t = a(b+t)^{-r}` from ``start`` at t = 0 to ``end`` at
  t = ``horizon`` (then held at ``end``), with
  :math:`s = (\gamma_{end}/\gamma_{start})^{1/r}`, :math:`b = sT/(1-s)`, :math:`a = \gamma_{start} b^r`.
* :class:`CyclicalCosine` — cKAM's cycles of ``cycle_length`` L iterations; position
  :math:`u = (t \bmod L)/L`; exploration while :math:`u \le \beta`, sampling after, with
  :math:`\nu_t = \tfrac{\nu_0}{2}(\cos \pi u + 1)` and :math:`\nu_0 = 2\nu_{exp}/(\cos\beta\pi + 1)`
  so that the step size is continuous at the transition (Zhang et al. 2020, cSG-MCMC).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _positive(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


@dataclass(frozen=True)
class Constant:
    """The same value at every iteration."""

    value: float

    def __post_init__(self):
        if not math.isfinite(float(self.value)) or float(self.value) < 0:
            raise ValueError(f"value must be a finite number >= 0, got {self.value}")

    def __call__(self, t: int) -> float:
        return float(self.value)

    @property
    def diminishing(self) -> bool:
        """True only for the constant 0 (no adaptation at all)."""
        return float(self.value) == 0.0


def _offset(value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"offset must be a finite number >= 0, got {value}")
    return value


@dataclass(frozen=True)
class PowerDecay:
    """``scale * (1 + offset + t) ** -exponent`` (``offset`` t₀ keeps Σ₀: module docstring)."""

    scale: float = 1.0
    exponent: float = 0.5
    offset: float = 0.0

    def __post_init__(self):
        _positive("scale", self.scale)
        if not (math.isfinite(self.exponent) and self.exponent >= 0):
            raise ValueError(f"exponent must be >= 0, got {self.exponent}")
        _offset(self.offset)

    def __call__(self, t: int) -> float:
        return self.scale * (1.0 + self.offset + t) ** (-self.exponent)

    @property
    def diminishing(self) -> bool:
        """True when the values decay to 0 (exponent > 0)."""
        return self.exponent > 0


@dataclass(frozen=True)
class Window:
    """``value`` for t < until, then 0 (adapt during burn-in only)."""

    until: int
    value: float = 1.0

    def __post_init__(self):
        if int(self.until) < 0:
            raise ValueError(f"until must be >= 0, got {self.until}")

    def __call__(self, t: int) -> float:
        return float(self.value) if t < self.until else 0.0

    diminishing = True  # zero after ``until``: finite adaptation
    finite = True


@dataclass(frozen=True)
class RobbinsMonro:
    """Step-size adaptation towards a target acceptance rate α*.

    ``rate(t) = scale * (1 + offset + t) ** -epsilon``, and 0 from t = ``until`` on when
    ``until`` is set (finite adaptation: the sampler is then a fixed MH kernel);
    ``update(log_nu, alpha, t) = log_nu + rate(t) * (alpha - target_accept)``.
    """

    epsilon: float = 0.75
    target_accept: float = 0.234
    scale: float = 1.0
    offset: float = 0.0
    until: int | None = None

    def __post_init__(self):
        _positive("epsilon", self.epsilon)
        _positive("scale", self.scale)
        _offset(self.offset)
        if not 0.0 < self.target_accept < 1.0:
            raise ValueError(f"target_accept must be in (0, 1), got {self.target_accept}")
        if self.until is not None and int(self.until) < 0:
            raise ValueError(f"until must be >= 0 or null, got {self.until}")

    def __call__(self, t: int) -> float:
        if self.until is not None and t >= self.until:
            return 0.0
        return self.scale * (1.0 + self.offset + t) ** (-self.epsilon)

    diminishing = True

    @property
    def finite(self) -> bool:
        """Adaptation stops at ``until`` (finite adaptation)."""
        return self.until is not None

    rate = __call__

    def update(self, log_nu: float, alpha: float, t: int) -> float:
        return log_nu + self(t) * (alpha - self.target_accept)


@dataclass(frozen=True)
class NoiseDecay:
    """γ_t = a (b + t)^-r, from ``start`` at t = 0 to ``end`` at t = ``horizon``, then ``end``."""

    start: float = 4.0
    end: float = 1.0
    rate: float = 0.55
    horizon: int = 10_000

    def __post_init__(self):
        _positive("start", self.start)
        _positive("end", self.end)
        _positive("rate", self.rate)
        if int(self.horizon) < 1:
            raise ValueError(f"horizon must be >= 1, got {self.horizon}")
        if self.end > self.start:
            raise ValueError(f"end ({self.end}) must not exceed start ({self.start})")

    @property
    def coefficients(self) -> tuple[float, float]:
        """(a, b) of γ_t = a (b + t)^-r."""
        if self.end == self.start:
            return self.start, math.inf
        s = (self.end / self.start) ** (1.0 / self.rate)
        b = s * self.horizon / (1.0 - s)
        return self.start * b**self.rate, b

    def __call__(self, t: int) -> float:
        if t >= self.horizon or self.end == self.start:
            return float(self.end)
        a, b = self.coefficients
        return a * (b + t) ** (-self.rate)


@dataclass(frozen=True)
class CyclicalCosine:
    """cKAM's cycle: ``cycle_length`` iterations, the first fraction ``beta`` explores."""

    cycle_length: int = 1000
    beta: float = 0.4

    def __post_init__(self):
        if int(self.cycle_length) < 2:
            raise ValueError(f"cycle_length must be an integer >= 2, got {self.cycle_length}")
        if not 0.0 < float(self.beta) < 1.0:
            raise ValueError(f"beta must be in (0, 1), got {self.beta}")

    def position(self, t: int) -> float:
        """u = (t mod L) / L ∈ [0, 1)."""
        return (t % self.cycle_length) / self.cycle_length

    def exploring(self, t: int) -> bool:
        """True while u ≤ β (exploration), False in the sampling phase."""
        return self.position(t) <= self.beta

    def __call__(self, t: int) -> float:
        """The cosine factor (cos πu + 1)/2 ∈ (0, 1]."""
        return 0.5 * (math.cos(math.pi * self.position(t)) + 1.0)

    def initial_step(self, nu_exp: float) -> float:
        """ν_0 = 2 ν_exp / (cos βπ + 1): the cosine curve through ν_exp at u = β."""
        return 2.0 * nu_exp / (math.cos(self.beta * math.pi) + 1.0)


@dataclass(frozen=True)
class HyperbolicDecay:
    """``scale / (1 + t / horizon)`` for t < ``until`` (null: always), then 0.

    Titsias & Dellaportas (2019) run AM with 0.001/(1 + t/4000) during a 20 000-iteration
    burn-in and no adaptation afterwards (finite adaptation).
    """

    scale: float = 0.001
    horizon: float = 4000.0
    until: int | None = None

    def __post_init__(self):
        _positive("scale", self.scale)
        _positive("horizon", self.horizon)
        if self.until is not None and int(self.until) < 0:
            raise ValueError(f"until must be >= 0 or null, got {self.until}")

    def __call__(self, t: int) -> float:
        if self.until is not None and t >= self.until:
            return 0.0
        return self.scale / (1.0 + t / self.horizon)

    @property
    def finite(self) -> bool:
        """Adaptation stops at ``until`` (finite adaptation)."""
        return self.until is not None

    @property
    def diminishing(self) -> bool:
        """Decays to 0 like 1/t (Σ rate = ∞, Σ rate² < ∞) when it never stops."""
        return True
