"""OmegaConf resolvers used by the configs (registered on import of ``ckam_bench``).

* ``${optimal_scale:d,f}`` — f · 2.38/√d, the Roberts–Rosenthal optimal random-walk scale
  times a factor (the cKAM tables use f = 1 for AM/GAM and f = 2 for KAM/cKAM).
* ``${ckam_uid:}`` — a short random token, resolved once per run and copied to sweep jobs by
  Hydra's resolver cache, so output folders never collide even when started in the same second.
* ``${ckam_plugins:}`` — ``hydra.searchpath`` entries of the installed plugins
  (:mod:`ckam_bench.plugins`).
"""

from __future__ import annotations

import math
import secrets

from omegaconf import OmegaConf


def optimal_scale(dim, factor=1.0) -> float:
    return float(factor) * 2.38 / math.sqrt(float(dim))


def _uid() -> str:
    return secrets.token_hex(4)


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("optimal_scale"):
        OmegaConf.register_new_resolver("optimal_scale", optimal_scale)
    if not OmegaConf.has_resolver("ckam_uid"):
        OmegaConf.register_new_resolver("ckam_uid", _uid, use_cache=True)
    if not OmegaConf.has_resolver("ckam_plugins"):
        from ckam_bench.plugins import search_path

        OmegaConf.register_new_resolver("ckam_plugins", search_path)
