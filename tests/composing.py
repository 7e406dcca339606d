"""Hydra composition for tests that try many values of one key on one composed config."""

from __future__ import annotations

import copy
import functools

from hydra import compose, initialize_config_module
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser


@functools.lru_cache(maxsize=16)
def _composed(name: str, choices: tuple[str, ...]):
    with initialize_config_module("ckam_bench.conf", version_base="1.3"):
        return compose(name, overrides=list(choices))


def compose_with(name: str, choices: list[str], *values: str):
    """``compose(name, overrides=[*choices, *values])`` for ``values`` that set keys
    (``KEY=VALUE``, no group choice): ``choices`` are composed once per process and the
    ``values`` parsed and applied by Hydra's own code, as compose applies them after composing
    the defaults (``ConfigLoaderImpl._apply_overrides_to_config``, with the config in struct
    mode). 0.1 s less per call than composing again."""
    parsed = OverridesParser.create().parse_overrides(list(values))
    cfg = copy.deepcopy(_composed(name, tuple(choices)))
    ConfigLoaderImpl._apply_overrides_to_config(parsed, cfg)
    return cfg
