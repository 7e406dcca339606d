"""A run's running totals, fed block by block (used by :class:`ckam_bench.engine.runner.Runner`):
counts, acceptance per phase, the bounded stores of samples and per-iteration diagnostics,
the health flags and which loops ran."""

from __future__ import annotations

import math

import numpy as np

from ckam_bench import jit
from ckam_bench.metrics.buffer import ThinningBuffer
from ckam_bench.targets.base import PluginError, constrained_columns

DIAG_COLUMNS = ("iteration", "phase", "accepted", "accept_prob", "step_size", "noise", "logp")
STUCK_FRACTION = 0.1
STUCK_MIN = 100
"""A run is flagged ``stuck`` when no move was accepted over its last STUCK_FRACTION of the
iterations (at least STUCK_MIN iterations, or the whole run when it is shorter)."""
WARNINGS = ("divergent",)
"""Flags that mark a run's values as suspect without voiding them (the others — a stuck chain,
non-finite proposals or state — void its ESS and cost to accuracy in the reports)."""
_COUNTS = ("iterations", "n_collected", "n_nonfinite", "n_jitter")
_HEALTH = (("since_accept", 0), ("since_finite", 0), ("nonfinite_at", -1), ("blocks", 0),
           ("compiled_blocks", 0))


class Tally:
    """Totals of the blocks a sampler with ``phases`` on a ``dim``-dimensional target ran.

    ``samples`` keeps a thinned subset of the collected states (``samples_capacity`` rows);
    the diagnostics keep the first ``diagnostics_head`` iterations in full and a thinned
    subset of all of them (``diagnostics_capacity`` rows).
    """

    def __init__(self, phases: tuple, dim: int, samples_capacity: int,
                 diagnostics_capacity: int, diagnostics_head: int):
        self.phases = phases
        self.samples = ThinningBuffer(samples_capacity, dim)
        self.diagnostics = ThinningBuffer(diagnostics_capacity, len(DIAG_COLUMNS))
        self.head = np.empty((diagnostics_head, len(DIAG_COLUMNS)))
        self.n_head = 0
        self.iterations = self.n_collected = self.n_nonfinite = self.n_jitter = 0
        self.accepted_by_phase = np.zeros(len(phases), dtype=np.int64)
        self.iters_by_phase = np.zeros(len(phases), dtype=np.int64)
        # divergent transitions per phase; None until a block reports them (Block.divergent)
        self.divergent_by_phase = None
        self.last_step = self.last_noise = math.nan
        # health (see flags()): trailing iterations without an accepted move / in blocks whose
        # every proposal was non-finite; the first iteration after which the chain's state or
        # its log density was not finite (-1: never)
        self.since_accept = self.since_finite = 0
        self.nonfinite_at = -1
        # blocks run, and of them blocks in which a compiled loop ran (provenance.loops)
        self.blocks = self.compiled_blocks = 0

    def record(self, block, chain, compiled: bool) -> None:
        """Add a block (``chain``: the state after it; ``compiled``: a compiled loop ran)."""
        n = block.n
        first = self.iterations
        self.blocks += 1
        self.compiled_blocks += compiled
        self.iterations += n
        self.n_collected += block.samples.shape[0]
        self.n_nonfinite += int(block.n_nonfinite)
        self.n_jitter += int(block.n_jitter)
        k = len(self.phases)
        if k == 1:
            self.iters_by_phase[0] += n
            self.accepted_by_phase[0] += np.count_nonzero(block.accepted)
        else:
            self.iters_by_phase += np.bincount(block.phase, minlength=k)[:k]
            self.accepted_by_phase += np.bincount(block.phase[block.accepted], minlength=k)[:k]
        divergent = getattr(block, "divergent", None)  # a block of an older plugin has none
        if divergent is not None:
            hits = booleans(divergent, n, "Block.divergent must be")
            if self.divergent_by_phase is None:
                self.divergent_by_phase = np.zeros(k, dtype=np.int64)
            self.divergent_by_phase += (np.bincount(block.phase[hits], minlength=k)[:k] if k > 1
                                        else np.array([np.count_nonzero(hits)]))
        if n:
            self.last_step = float(block.step_size[-1])
            self.last_noise = float(block.noise[-1])
            moved = np.flatnonzero(block.accepted)
            self.since_accept = n - 1 - int(moved[-1]) if moved.size else self.since_accept + n
            self.since_finite = self.since_finite + n if block.n_nonfinite >= n else 0
        if self.nonfinite_at < 0 and chain is not None and not (
                np.all(np.isfinite(np.asarray(chain.logp, dtype=float)))
                and np.all(np.isfinite(block.samples))):
            self.nonfinite_at = self.iterations
        logp = block.logp if block.logp is not None else np.full(n, np.nan)
        columns = (np.arange(first, first + n, dtype=float), block.phase, block.accepted,
                   block.accept_prob, block.step_size, block.noise, logp)
        room = self.head.shape[0] - self.n_head
        if room > 0:
            take = min(room, n)
            self.head[self.n_head:self.n_head + take] = np.column_stack([c[:take] for c in columns])
            self.n_head += take
        self.diagnostics.extend_columns(columns)
        if block.samples.shape[0]:
            self.samples.extend(block.samples)

    def acceptance(self) -> dict:
        """``acceptance`` over the run and ``acceptance_<phase>`` per phase."""
        out = {"acceptance": ratio(self.accepted_by_phase.sum(), self.iterations)}
        for i, phase in enumerate(self.phases):
            out[f"acceptance_{phase}"] = ratio(self.accepted_by_phase[i], self.iters_by_phase[i])
        return out

    def divergences(self) -> dict:
        """``n_divergent`` over the run and ``divergent_<phase>`` per phase, for a sampler whose
        blocks report divergences (else empty)."""
        if self.divergent_by_phase is None:
            return {}
        out = {"n_divergent": float(self.divergent_by_phase.sum())}
        out.update({f"divergent_{phase}": float(c) for phase, c in zip(self.phases, self.divergent_by_phase)})
        return out

    def flags(self) -> dict[str, str]:
        """The run's health flags, each with a sentence (empty for a healthy run):

        * ``stuck``: no move accepted over the last :data:`STUCK_FRACTION` of the iterations
          (at least :data:`STUCK_MIN`, or the whole run when shorter);
        * ``nonfinite_proposals``: every proposal of that stretch had a non-finite log density
          (or gradient). The flags are about the collected chain: ``Block.n_nonfinite`` counts
          its proposals only (at most one per iteration; parallel tempering leaves out its
          tempered chains), and a block counts when its count reaches its iterations;
        * ``nonfinite_state``: the chain's state or its log density became NaN or ±inf;
        * ``divergent`` (a warning, :data:`WARNINGS`): transitions of the collected phase (the
          last of ``phases``: after the warm-up) diverged — their trajectories left the
          region where the integrator is accurate, so the chain may under-explore it (Stan's
          warning after any such divergence). Divergences during the warm-up are not flagged.

        A stuck chain's ESS and MCSE are meaningless (a constant chain has no variance): the
        reports show the flag and no ESS or MCSE for such a run."""
        out = {}
        n = self.iterations
        window = min(n, max(STUCK_MIN, math.ceil(STUCK_FRACTION * n)))
        if n and self.since_accept >= window:
            out["stuck"] = (f"no move accepted in the last {self.since_accept} of {n} iterations "
                            f"({self.since_accept / n:.0%} of the run)")
        if n and self.since_finite >= window:
            out["nonfinite_proposals"] = (f"every proposal of the last {self.since_finite} "
                                          "iterations had a non-finite log density")
        if self.nonfinite_at >= 0:
            out["nonfinite_state"] = (f"the chain's state or log density was not finite after "
                                      f"iteration {self.nonfinite_at}")
        if self.divergent_by_phase is not None and self.divergent_by_phase[-1] > 0:
            hits, of = int(self.divergent_by_phase[-1]), int(self.iters_by_phase[-1])
            after = " after the warm-up" if len(self.phases) > 1 else ""
            out["divergent"] = f"{hits} of the {of} transitions{after} diverged ({hits / of:.2%})"
        return out

    def loops(self, target, sampler: str) -> tuple[str, str]:
        """Which loops ran, from the blocks run so far: ``compiled`` (a compiled loop ran in
        every block), ``python`` (in none), ``mixed`` (in some: e.g. cKAM's Python exploration
        and a compiled sampling phase), and a sentence saying why when not compiled: numba
        missing, compiled loops switched off, a target without a compiled density, else the
        sampler's own choice (no compiled loop, or one needing a function the target lacks)."""
        if not self.blocks or self.compiled_blocks == self.blocks:
            ran = "compiled" if self.blocks and self.compiled_blocks else "python"
        else:
            ran = "python" if not self.compiled_blocks else "mixed"
        if ran == "compiled":
            return ran, ""
        if not jit.AVAILABLE:
            why = "numba is not installed"
        elif not jit.enabled():
            why = f"{jit.ENV}=0 switches compiled loops off"
        elif not any(callable(getattr(target, name, None))
                     for name in ("jit_log_density", "jit_log_density_and_grad")):
            why = (f"target {target.name!r} has no compiled density (jit_log_density, "
                   "jit_log_density_and_grad)")
        else:  # any sampler, a plugin's too: say what is known, not why KAM does it
            why = (f"{sampler} ran these iterations in Python: it has no compiled loop for them, "
                   f"or its compiled loop needs a function {target.name!r} does not compile")
        if ran == "mixed":
            why = f"a compiled loop ran in {self.compiled_blocks} of {self.blocks} blocks; {why}"
        return ran, why

    def sample_columns(self, target) -> dict:
        """The samples to store: their iteration index, ``x0…`` and the target's named columns
        (:meth:`~ckam_bench.targets.base.Target.ckam_constrained`, e.g. a PyMC model's
        variables), checked."""
        columns = {"index": self.samples.indices}
        data = self.samples.data
        columns.update({f"x{j}": data[:, j].copy() for j in range(target.dim)})
        columns.update(constrained_columns(target, data))
        return columns

    def diagnostics_columns(self) -> dict:
        """The diagnostics to store: the head in full, then the thinned rows after it."""
        import pyarrow as pa

        head = self.head[: self.n_head]
        tail = self.diagnostics.data
        tail = tail[tail[:, 0] >= self.n_head] if self.n_head else tail
        diag = np.concatenate([head, tail])
        phase = diag[:, 1].astype(np.int8)
        return {
            "iteration": diag[:, 0].astype(np.int64),
            "phase": phase,
            "accepted": diag[:, 2].astype(bool),
            "accept_prob": diag[:, 3],
            "step_size": diag[:, 4],
            "noise": diag[:, 5],
            "logp": diag[:, 6],
            "phase_name": pa.DictionaryArray.from_arrays(pa.array(phase),
                                                         pa.array(list(self.phases))),
        }

    # ------------------------------------------------------------------ resume
    def state(self) -> tuple[dict, dict]:
        """The totals as arrays and plain values, for the resume state."""
        arrays = {}
        for name, buf in (("samples", self.samples), ("diagnostics", self.diagnostics)):
            arrays.update({f"{name}.{k}": v for k, v in buf.state_dict().items()})
        arrays["head"] = self.head[: self.n_head]
        arrays["accepted_by_phase"] = self.accepted_by_phase
        arrays["iters_by_phase"] = self.iters_by_phase
        if self.divergent_by_phase is not None:
            arrays["divergent_by_phase"] = self.divergent_by_phase
        meta = {key: getattr(self, key) for key in _COUNTS}
        meta.update({"last_step": self.last_step, "last_noise": self.last_noise})
        meta.update({key: getattr(self, key) for key, _ in _HEALTH})
        return arrays, meta

    def load(self, arrays: dict, meta: dict) -> None:
        """Continue from :meth:`state`'s arrays and values."""
        def group(prefix):
            return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}

        self.samples = ThinningBuffer.from_state(group("samples."))
        self.diagnostics = ThinningBuffer.from_state(group("diagnostics."))
        head = arrays["head"]
        self.n_head = head.shape[0]
        self.head[: self.n_head] = head
        self.accepted_by_phase = arrays["accepted_by_phase"].astype(np.int64)
        self.iters_by_phase = arrays["iters_by_phase"].astype(np.int64)
        if "divergent_by_phase" in arrays:  # older resume states lack it
            self.divergent_by_phase = arrays["divergent_by_phase"].astype(np.int64)
        for key in _COUNTS:
            setattr(self, key, int(meta[key]))
        for key, default in _HEALTH:
            setattr(self, key, int(meta.get(key, default)))  # older resume states lack them
        self.last_step, self.last_noise = float(meta["last_step"]), float(meta["last_noise"])


def booleans(value, n: int, where: str) -> np.ndarray:
    """``value`` as n booleans (bools, or integers 0 and 1), else one :class:`PluginError`
    line starting with ``where`` (e.g. "Block.divergent must be")."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape != (n,) or a.dtype.kind not in "biu" or (
            a.dtype.kind != "b" and not np.isin(a, (0, 1)).all()):
        got = f"shape {a.shape}, dtype {a.dtype}" if a is not None else type(value).__name__
        raise PluginError(f"{where} {n} booleans (one per iteration of the block), got {got}")
    return a.astype(bool)


def ratio(a, b) -> float:
    return float(a) / float(b) if b else math.nan
