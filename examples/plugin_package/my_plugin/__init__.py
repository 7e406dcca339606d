"""An example plugin for ckam-bench: a target (:class:`Banana3`) and two samplers (:class:`Barker`,
and :class:`AdaptiveBarker`, the worked example of an adaptive sampler)."""

from my_plugin.samplers import AdaptiveBarker, Barker
from my_plugin.targets import Banana3

__all__ = ["AdaptiveBarker", "Barker", "Banana3"]
