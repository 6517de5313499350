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


# The cells of Table 2 whose single-seed spread a random monitor's row shows (name -> path in metrics.json).
SPREAD = {"M1": ("M1",), "M2": ("M2", "all"), "M2_end": ("M2", "end"), "M2_mid": ("M2", "mid"),
          "missed": ("M3", "missed"), "early": ("M3", "early"), "on_target": ("M3", "on_target"),
          "late": ("M3", "late"), "false_alarm": ("M3", "false_alarm"), "M4": ("M4", "macro")}
RANDOM_ROW = ("Table 2's caption: Random is the positive-step rate for M1 and M2 (M1 0.500 and M2 the positive-step "
              "rate: what a monitor without information scores, here a constant one) and a uniformly random monitor "
              "for M3 and M4 (the mean of {n} seeds); single_seed holds what one seed of that monitor scores")


def seed_spread(runs: list[dict]) -> dict:
    """Per Table 2 cell: mean, standard deviation (n - 1), minimum and maximum over the seeds' own metrics."""
    import numpy as np

    out = {}
    for key, path in SPREAD.items():
        vals = []
        for r in runs:
            v = r
            for k in path:
                v = v[k]
            vals.append(float(v))
        a = np.array(vals, dtype=float)
        out[key] = {"mean": float(np.nanmean(a)), "sd": float(np.nanstd(a, ddof=1)) if len(a) > 1 else 0.0,
                    "min": float(np.nanmin(a)), "max": float(np.nanmax(a)), "seeds": len(a)}
    return out


def paper_random_row(runs: list[dict], rows: list[dict], threshold: float, tolerance: int = 0) -> dict:
    """The Random row as the paper defines it (Table 2's caption, Table 13's "Random: M1 0.500, M2 0.036 ..."):
    M1, M2 and their breakdowns (Tables 12, 14) are what a monitor without information scores -- computed as
    the metrics of a constant score on ``rows`` (a tie everywhere: AUROC 0.5, AP the positive-step rate) --,
    M3 and M4 are the mean over the seeds' ``runs``; ``single_seed`` is their spread, beside it."""
    from ego_adr.monitoring.episode_metrics import mean_metrics

    metrics = mean_metrics(runs) if len(runs) > 1 else dict(runs[0])
    chance = score_rows([{**r, "p_error": 0.5} for r in rows], threshold, tolerance, bootstrap=0)
    metrics.update({"M1": chance["M1"], "M2": chance["M2"], "by_complexity": chance["by_complexity"],
                    "single_seed": seed_spread(runs), "random_row": RANDOM_ROW.format(n=len(runs))})
    metrics.pop("ci95", None)  # a value by definition has no interval
    metrics.pop("bootstrap", None)
    return metrics
