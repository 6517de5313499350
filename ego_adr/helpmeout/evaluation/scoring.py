"""HelpMeOut's per-step file: its episodes and a monitor's outputs as the layer's rows, scored by the layer.

The metrics themselves (M1-M4, the bootstrap, Tables 12 and 14's breakdowns) are the monitoring layer's
(:mod:`ego_adr.monitoring.episode_metrics`); what is HelpMeOut's is only what a row says: its nine categories,
the template complexity as the breakdown stratum, and that an episode's last observed step is the ``(task-end)``
step where omissions are confirmed. ``evaluate`` writes the rows as ``steps.jsonl`` beside ``metrics.json``.
"""

from __future__ import annotations

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.helpmeout.world.templates import COMPLEXITIES
from ego_adr.monitoring.episode_metrics import compute_metrics
from ego_adr.monitoring.per_step import step_row


def step_rows(episodes: list[dict], outputs: list[dict], threshold: float) -> list[dict]:
    """One row per observed step of every episode; ``flagged`` = the step's probability reaches ``threshold``."""
    if len(episodes) != len(outputs):
        raise ValueError(f"{len(episodes)} episodes but {len(outputs)} monitor outputs")
    rows = []
    for ep, o in zip(episodes, outputs, strict=True):
        truth = {"errorful": not ep["correct"], "error_onset": ep["first_onset"], "error_types": ep["categories"],
                 "primary_type": ep["primary_category"], "stratum": ep["complexity"],
                 "timed_out": bool(o.get("timed_out"))}
        evidence = {ev["t"]: {k: v for k, v in ev.items() if k != "t"} for ev in o.get("evidence") or []}
        for t, (p, c, on) in enumerate(zip(o["probs"], o["categories"], o["onsets"], strict=True)):
            rows.append(step_row(ep["id"], t, ep["labels"][t], p, truth, flagged=bool(p >= threshold), category=c,
                                 onset=on, evidence=evidence.get(t)))
    return rows


def score_rows(rows: list[dict], threshold: float = 0.5, tolerance: int = 0, bootstrap: int = 1000,
               seed: int = 0) -> dict:
    """HelpMeOut's ``metrics.json`` numbers from its per-step rows (Table 14's breakdown as ``by_complexity``)."""
    return compute_metrics(rows, types=CATEGORIES, threshold=threshold, tolerance=tolerance, bootstrap=bootstrap,
                           seed=seed, strata=COMPLEXITIES, strata_key="by_complexity")


def score_outputs(episodes: list[dict], outputs: list[dict], threshold: float = 0.5, tolerance: int = 0,
                  bootstrap: int = 1000, seed: int = 0) -> dict:
    """:func:`score_rows` of :func:`step_rows`: what a monitor's outputs on these episodes score."""
    return score_rows(step_rows(episodes, outputs, threshold), threshold, tolerance, bootstrap, seed)
