"""The bounded caches of compiled models (ckam_bench.caches): the last few models are kept,
and a cache dropping an entry never frees code a live target still calls."""

import gc

import numpy as np
import pytest

from ckam_bench.caches import MODELS_KEPT, Recent


def test_recent_keeps_the_last_used():
    cache = Recent(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # a used: b is now the oldest
    cache["c"] = 3
    assert "b" not in cache and cache.get("a") == 1 and cache["c"] == 3 and len(cache) == 2
    assert cache.get("b") is None and cache.pop("a") == 1 and cache.items() == [("c", 3)]
    with pytest.raises(ValueError, match="size"):
        Recent(0)


def test_pymc_target_outlives_its_dropped_cache_entries():
    """Targets of more models than the caches keep, built in a row as a sweep's worker builds
    them: every cache stays bounded, and the first target, whose compiled entries were all
    dropped, still evaluates its density through the C-callables it holds."""
    pytest.importorskip("pymc")
    from ckam_bench import jit
    from ckam_bench.targets import pymc as pymc_target
    from ckam_bench.targets import pymc_compiled

    if not jit.enabled():
        pytest.skip("compiled densities are switched off (CKAM_BENCH_JIT=0)")
    specs = [f"ckam_bench.posteriordb.models:{name}" for name in
             ("kidscore_momiq", "kidscore_momhs", "kidscore_interaction", "logmesquite_logva",
              "mesquite", "earn_height")]
    assert len(specs) > MODELS_KEPT
    first = pymc_target.PyMCModel(specs[0])
    f = first.jit_log_density()
    x = np.asarray(first.start, float)
    before = f(x)
    for spec in specs[1:]:
        pymc_target.PyMCModel(spec).jit_log_density()
        gc.collect()
    for cache in (pymc_target._MODELS, pymc_target._COMPILED, pymc_target._WRAPPERS,
                  pymc_compiled._C_FUNCTIONS):
        assert len(cache) <= MODELS_KEPT
    assert all(key[0] != specs[0] for key, _ in pymc_compiled._C_FUNCTIONS.items())
    assert f(x) == before
    assert before == pytest.approx(first.log_density_and_grad_uncounted(x)[0], rel=1e-12)


def test_sweep_workers_are_replaced_when_they_grow():
    """numba keeps the code of every model a process compiled or loaded (pytensor's graphs are
    hundreds of jitted functions each), so a sweep's worker grows with every posterior it runs.
    loky replaces a worker grown 300 MB past its size after its first job, between two jobs, but
    only when psutil is importable: it is a dependency (pyproject.toml)."""
    from joblib.externals.loky import process_executor

    assert process_executor._USE_PSUTIL
