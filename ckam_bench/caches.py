"""A process's caches of compiled models, bounded.

A sweep's worker process runs hundreds of jobs over dozens of models. Each model's compiled
pieces (its pytensor functions, the C-callables around them, nutpie's own compilation of it,
its reference draws) are worth keeping for the next job of the same model, but not for ever:
kept for every model, a worker grew to 5 GB in 40 minutes of a whole-suite sweep. So each
cache keeps the entries of the last :data:`MODELS_KEPT` models used and drops the least
recently used.

Dropping an entry never pulls code from under a user: whatever calls compiled code by its
address holds a reference to the object that owns it (a target holds its C-callables, nutpie's
density path holds the model nutpie compiled), so an entry dropped here lives on until its last
user is gone.
"""

from __future__ import annotations

from collections import OrderedDict

MODELS_KEPT = 4
"""Entries (models) each bounded cache keeps: a sweep's worker runs the jobs of one posterior
(its samplers and seeds) before the next, so the last few cover every reuse that happens."""


class Recent:
    """The ``size`` entries used last, by key; setting one more drops the least recently used.

    ``cache.get(key)`` (None when absent) and ``cache[key] = value`` mark the entry used."""

    def __init__(self, size: int = MODELS_KEPT):
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size = size
        self._entries: OrderedDict = OrderedDict()

    def get(self, key, default=None):
        if key not in self._entries:
            return default
        self._entries.move_to_end(key)
        return self._entries[key]

    def __getitem__(self, key):
        value = self._entries[key]
        self._entries.move_to_end(key)
        return value

    def __setitem__(self, key, value) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __contains__(self, key) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def pop(self, key, default=None):
        return self._entries.pop(key, default)

    def values(self) -> list:
        return list(self._entries.values())

    def items(self) -> list:
        return list(self._entries.items())

    def clear(self) -> None:
        self._entries.clear()
