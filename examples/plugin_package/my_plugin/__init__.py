"""An example plugin for ckam-bench: a target (:class:`Banana3`) and a sampler (:class:`Barker`)."""

from my_plugin.samplers import Barker
from my_plugin.targets import Banana3

__all__ = ["Barker", "Banana3"]
