"""What a run's end means for its values: the ranking notes on runs stopped early by
``budget.early_stop`` (their cost to accuracy is censored at the stop) and on chains too short
to trust (min ESS below the ESS floor)."""

from __future__ import annotations

import json
import math

import pandas as pd

from ckam_bench.engine.runstatus import ESS_FLOOR


def early_stop_note(groups) -> str | None:
    """The note for runs that ``budget.early_stop`` stopped (None when none did): which values
    are censored and how ties are broken then."""
    stopped = [r for g in groups for r in g.runs if r.status.get("stopped_early")]
    if not stopped:
        return None
    rules = {json.dumps(r.status["budget"]["early_stop"], sort_keys=True) for r in stopped}
    rule = json.loads(sorted(rules)[0])
    total = sum(len(g.runs) for g in groups)
    futile = sum(r.status["stopped_early"].get("kind") == "futile" for r in stopped)
    text = (f"{len(stopped)} of {total} runs stopped early (budget.early_stop: {rule['metric']} < "
            f"{rule['threshold']:g} held from its first crossing at cost c up to "
            f"{rule['multiple']:g}c, min ESS ≥ {rule['min_ess']:g}"
            + ("; several rules" if len(rules) > 1 else "") + "): the cost to b² < 0.01 of a run "
            "stopped once it was known is the one its full-budget run shows unless b² would have "
            "risen above 0.01 again after the stop (right-censored at the stop; the rank agreement "
            "with full budgets is in docs/running.md); its final b², KL and min ESS/s are at the "
            "stop, so runs tied on the cost are compared at their stopping costs, a run that never "
            "met the rule at the end of its budget")
    if futile:
        text += (f"; {futile} stopped as futile (b² · cost / budget ≥ {rule.get('futility')} × "
                 f"{rule['threshold']:g}): counted as never reaching it, as at the full budget "
                 "unless b² would have fallen faster than 1/cost")
    return text


def short_chains(groups: list[Group]) -> list[tuple[str, int, float]]:
    """(group label, seed, min ESS) of each run whose min ESS at its last checkpoint is below
    :data:`ckam_bench.engine.runstatus.ESS_FLOOR` (too short to trust); runs the runner flagged
    are left out (their ESS means nothing)."""
    out = []
    for group in groups:
        for run in group.runs:
            if run.flags or "ess_min" not in run.trace.columns:
                continue
            order = "checkpoint" if "checkpoint" in run.trace.columns else "sampler_seconds"
            last = run.trace.sort_values(order, kind="stable").iloc[-1]
            ess = float(pd.to_numeric(pd.Series([last["ess_min"]]), errors="coerce").iloc[0])
            if math.isfinite(ess) and ess < ESS_FLOOR:
                out.append((group.label, run.seed, ess))
    return out
