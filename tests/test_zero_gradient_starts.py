"""scripts/zero_gradient_starts.py: a suite posterior whose gradient at the start vanishes in a
coordinate is found, one whose gradient does not is not (brute force: the gradient itself)."""

import importlib.util
from pathlib import Path

from ckam_bench.posteriordb import registered

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "zero_gradient_starts.py"


def _script():
    spec = importlib.util.spec_from_file_location("zero_gradient_starts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_centred_eight_schools_start_has_a_zero_gradient_coordinate_and_earn_height_none():
    script, posteriors = _script(), registered()
    # the support point puts μ = 0 and every θⱼ = μ: ∂/∂μ of μ's prior N(0, 5²) and of the
    # hierarchy Σⱼ(θⱼ − μ)/τ² both vanish, so exactly one coordinate, μ's, is 0
    assert script.zero_coordinates(posteriors["eight_schools-eight_schools_centered"]) == (10, 1)
    assert script.zero_coordinates(posteriors["earnings-earn_height"]) == (3, 0)
