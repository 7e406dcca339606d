"""A run's config snapshot resolved from its folder alone (:func:`ckam_bench.report.aggregate.
_load_hydra` uses it): Hydra stores ``.hydra/config.yaml`` unresolved, and some resolvers would
build something to resolve (``${pymc_dim:MODEL}`` imports the model). Their values come from
what the run recorded instead, so a report needs nothing but the run folders."""

from __future__ import annotations

import re

STORED_RESOLVERS = {
    # ${pymc_dim:MODEL} (conf/target/pymc.yaml) imports the model; the run recorded the number
    "pymc_dim": lambda status: status.get("dim"),
}
"""Resolvers whose value a run folder records (resolver name -> value from ``status.json``):
the snapshot is resolved with these values, never by importing or building anything."""


class _Config(dict):
    """A resolved config snapshot; ``unresolved``: dotted key -> (its text, why it failed)."""

    unresolved: dict


def _stored_values(cfg, status: dict) -> None:
    """Replace, in place, every value of ``cfg`` that is exactly ``${R:...}`` for a resolver R
    of :data:`STORED_RESOLVERS` by the value the run recorded (when it recorded one)."""
    from omegaconf import DictConfig, ListConfig

    def walk(node):
        keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
        for key in keys:
            child = node._get_node(key)
            if isinstance(child, (DictConfig, ListConfig)):
                walk(child)
                continue
            raw = child._value() if child is not None else None
            found = re.fullmatch(r"\$\{(\w+):.*\}", raw.strip()) if isinstance(raw, str) else None
            if found and found.group(1) in STORED_RESOLVERS:
                value = STORED_RESOLVERS[found.group(1)](status or {})
                if value is not None:
                    node[key] = value

    walk(cfg)


def _resolved(cfg, key, unresolved: dict | None = None, path: str = ""):
    """``cfg[key]`` with every interpolation that resolves resolved, the others left as text
    (and recorded in ``unresolved``: dotted path -> (text, first line of the error))."""
    from omegaconf import DictConfig, ListConfig, OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    node = cfg._get_node(key)
    if isinstance(node, DictConfig):
        return {k: _resolved(node, k, unresolved, f"{path}.{k}") for k in node}
    if isinstance(node, ListConfig):
        return [_resolved(node, i, unresolved, f"{path}[{i}]") for i in range(len(node))]
    try:
        value = cfg[key]
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except OmegaConfBaseException as exc:
        if unresolved is not None:
            unresolved[path] = (str(node._value()), _first_line(exc))
        return node._value()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
