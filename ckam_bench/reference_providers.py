"""References handed down to the targets: a package that owns reference samples for some targets
registers a *provider* here, and a target asks here (:func:`provided_reference`) instead of
importing that package.

A provider is a function ``provider(target)`` returning a
:class:`ckam_bench.reference_lookup.Reference` for the targets it knows, else None. The posteriordb
suite registers :func:`ckam_bench.posteriordb.reference_for` when it is imported, and a suite model
cannot be built without importing it (``target.model=ckam_bench.posteriordb.models:<function>``
imports ``ckam_bench.posteriordb`` first), so
:meth:`PyMCModel.ckam_reference <ckam_bench.targets.pymc.PyMCModel.ckam_reference>` finds
posteriordb's draws while :mod:`ckam_bench.targets` never imports the suite built on top of it.

This module imports nothing of the package: it sits on the lowest floor of the house
(docs/layout.md), below the targets that ask it and the suites that register.
"""

from __future__ import annotations

_PROVIDERS: list = []


def register_reference_provider(provider) -> None:
    """Add ``provider`` (a function of the target returning a reference or None) to those
    :func:`provided_reference` asks, after the ones registered before it; registering the same
    function again changes nothing."""
    if not callable(provider):
        raise TypeError(f"a reference provider must be callable, got {type(provider).__name__}")
    if provider not in _PROVIDERS:
        _PROVIDERS.append(provider)


def provided_reference(target):
    """The first reference a registered provider hands for ``target``, in registration order;
    None when no provider knows the target."""
    for provider in _PROVIDERS:
        reference = provider(target)
        if reference is not None:
            return reference
    return None
