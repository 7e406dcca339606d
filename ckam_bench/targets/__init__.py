"""Benchmark targets: the Target interface and one module per family (``divergence``: the
banana mixtures and basis4 of the divergence-minimisation paper; ``horseshoe``: its regression)."""

from ckam_bench.targets.base import CapabilityError, Target
from ckam_bench.targets.gaussians import Gaussian, gauss2d_corr, gp51, neal100
from ckam_bench.targets.mixtures import GaussianMixture, ProductMixture, bimodal, gmm2d, gmm32

__all__ = [
    "CapabilityError",
    "Target",
    "Gaussian",
    "GaussianMixture",
    "ProductMixture",
    "bimodal",
    "gauss2d_corr",
    "gmm2d",
    "gmm32",
    "gp51",
    "neal100",
]
