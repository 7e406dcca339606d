"""ESJD and coefficient-distance metrics against brute force, across blocks and a resume."""

import math

import numpy as np
import pytest

from ckam_bench.metrics.esjd import ESJD, CoefficientDistance
from ckam_bench.targets.base import CapabilityError
from ckam_bench.targets.divergence import banana_dm
from ckam_bench.targets.horseshoe import Horseshoe


def test_esjd_is_the_mean_squared_jump_across_blocks_and_resume():
    target = banana_dm()
    x = np.random.default_rng(0).standard_normal((1000, 2))
    metric = ESJD(target)
    assert math.isnan(metric.compute()["esjd"])
    metric.update(x[:1])
    metric.update(x[1:1])  # an empty block changes nothing
    metric.update(x[1:400])
    resumed = ESJD(target)
    resumed.load_state_dict(metric.state_dict())
    resumed.update(x[400:])
    brute = np.mean(np.sum(np.diff(x, axis=0) ** 2, axis=1))
    assert resumed.compute()["esjd"] == pytest.approx(brute, rel=1e-12)


def test_coefficient_distance():
    target = Horseshoe()
    x = np.random.default_rng(1).standard_normal((500, 42))
    metric = CoefficientDistance(target)
    metric.update(x[:200])
    resumed = CoefficientDistance(target)
    resumed.load_state_dict(metric.state_dict())
    resumed.update(x[200:])
    brute = np.linalg.norm(x[:, :20].mean(axis=0) - target.true_coefficients)
    assert resumed.compute()["coefficient_error"] == pytest.approx(brute, rel=1e-12)
    with pytest.raises(CapabilityError):
        CoefficientDistance(banana_dm())
