"""``evaluate``: stream one registered monitor over episodes, choose its M3 threshold on validation, score M1-M4.

**The 60-episode subset** (Table 10: "drawn from the held-out test set"; Table 2's caption: 30 correct episodes,
the rest errorful) is 30 correct and 30 errorful test episodes drawn with a fixed seed, so every monitor is
re-scored on the same episodes (Table 17). Every evaluation of a test file writes a ``subset`` block; the LLM
monitor is evaluated on the subset only.

**The M3 threshold** is one rule for every monitor (not tuned on test): the threshold maximising Youden's J
(alarm rate on errorful minus alarm rate on correct episodes, an episode alarming when its highest step
probability reaches the threshold) on the validation split, candidates being the observed scores and one above the highest (no alarm). Random keeps
0.5: Table 2 defines its M3 as a uniformly random monitor. ``--threshold X`` fixes it instead, and the outputs
say which rule was used.
"""

from __future__ import annotations

import random
import time

import numpy as np

from ego_adr.models.compat import runtime_versions

SUBSET_SIZE = 60
SUBSET_CORRECT = 30


def subset_ids(
    test: list[dict], size: int = SUBSET_SIZE, n_correct: int = SUBSET_CORRECT, seed: int = 0
) -> list[str]:
    """The LLM subset: ``n_correct`` correct and ``size - n_correct`` errorful episodes, seeded and sorted."""
    rng = random.Random(f"helpmeout-subset:{seed}")
    correct = sorted(ep["id"] for ep in test if ep["correct"])
    errorful = sorted(ep["id"] for ep in test if not ep["correct"])
    k = min(n_correct, len(correct))
    pick = rng.sample(correct, k) + rng.sample(errorful, min(size - k, len(errorful)))
    return sorted(pick)


def youden_threshold(episodes: list[dict], outputs: list[dict]) -> float:
    """The validation rule: the observed score maximising TPR - FPR of episode alarms (ties: the higher)."""
    y = np.array([not ep["correct"] for ep in episodes])
    s = np.array([max(o["probs"]) for o in outputs])
    if y.all() or (~y).all():
        return 0.5
    best, best_j = 0.5, -2.0
    # candidates: every observed score, and one just above the highest (no alarm at all), so a monitor whose
    # scores do not separate the classes does not get a threshold that alarms everywhere
    for t in np.r_[np.unique(s), np.nextafter(s.max(), np.inf)]:
        j = float((s[y] >= t).mean() - (s[~y] >= t).mean())
        if j > best_j or (j == best_j and t > best):
            best, best_j = float(t), j
    return best


def _threshold(spec, mon, val: list[dict] | None, threshold: float | None,
               progress: bool = False) -> tuple[float, str]:
    """The M3 threshold and the rule that chose it (one rule for every monitor); ``progress``: a bar over the
    validation episodes for a monitor that asks a model (that pass alone took the LLM monitor minutes, silently)."""
    from ego_adr.helpmeout.monitors.base import run_monitor

    if threshold is not None:
        return threshold, f"fixed {threshold}"
    if spec.name == "random":
        return 0.5, "0.5 (Random: a uniformly random monitor, Table 2)"
    if val:
        return youden_threshold(val, run_monitor(mon, val, progress=progress and spec.needs_model)), (
            f"Youden's J on the validation split ({len(val)} episodes)"
        )
    raise ValueError(
        "no validation episodes for the threshold rule: keep val.jsonl next to the episodes, "
        "pass --val FILE, or fix it with --threshold X"
    )


def evaluate(
    spec,
    episodes: list[dict],
    *,
    build,
    val: list[dict] | None,
    train: list[dict] | None,
    threshold: float | None,
    tolerance: int,
    bootstrap: int,
    seeds: int,
    subset: list[str] | None,
    progress: bool = False,
) -> tuple[dict, list[dict], list[dict]]:
    """Run ``spec``'s monitor; returns (metrics, output rows of the first seed, per-step rows of the first seed).

    The metrics of each seed are computed from its per-step rows alone (:mod:`ego_adr.helpmeout.evaluation.scoring`)."""
    from ego_adr.helpmeout.evaluation.scoring import paper_random_row, score_rows, step_rows
    from ego_adr.helpmeout.monitors.base import run_monitor
    from ego_adr.helpmeout.monitors.registry import extra_reads, privileged
    from ego_adr.monitoring.episode_metrics import mean_metrics
    from ego_adr.monitoring.harness import fit_monitor

    t0 = time.perf_counter()
    seed_list = list(range(seeds)) if spec.seeds else [0]
    runs, first_rows, first_steps, first_sub, rule = [], None, None, [], None
    sub_runs = []
    timing = {"fit_s": 0.0, "val_s": 0.0, "test_s": 0.0}
    for seed in seed_list:
        mon = build(seed)
        t1 = time.perf_counter()
        fit_monitor(mon, spec, train, val)  # the harness's rule: a checkpoint chosen on val (Table 10)
        timing["fit_s"] += time.perf_counter() - t1
        t1 = time.perf_counter()
        thr, rule = _threshold(spec, mon, val, threshold, progress)
        timing["val_s"] += time.perf_counter() - t1
        t1 = time.perf_counter()
        rows = run_monitor(mon, episodes, progress=progress)
        timing["test_s"] += time.perf_counter() - t1
        steps = step_rows(episodes, rows, thr)
        if first_rows is None:
            first_rows, first_steps = rows, steps
        runs.append(score_rows(steps, thr, tolerance, bootstrap if seed == 0 else 0, seed))
        if subset:
            keep = set(subset)
            sub = [r for r in steps if r["episode"] in keep]
            if sub:
                sub_runs.append(score_rows(sub, thr, tolerance, bootstrap if seed == 0 else 0, seed))
                first_sub = first_sub or sub

    def combined(rs: list[dict], steps: list[dict]) -> dict:
        if spec.seeds:  # Random: the paper's row (M1/M2 by definition, M3/M4 the mean of the seeds)
            return paper_random_row(rs, steps, thr, tolerance)
        return rs[0] if len(rs) == 1 else mean_metrics(rs)

    metrics = combined(runs, first_steps)
    if hasattr(mon, "stats"):
        metrics["model_stats"] = mon.stats()
    if getattr(mon, "recipe", None):
        metrics["training_recipe"] = (
            mon.recipe
        )  # epochs run, best epoch, validation losses (learned monitors)
    if sub_runs:
        metrics["subset"] = combined(sub_runs, first_sub)
        metrics["subset"]["ids"] = subset
    metrics.update(
        {
            "monitor": spec.name,
            "description": spec.description,
            "reads": list(spec.reads),
            "privileged": privileged(spec),
            "privileged_reads": list(extra_reads(spec)),
            "seeds": len(seed_list),
            "threshold_rule": rule,
            "seconds": round(time.perf_counter() - t0, 2),
            "timing": {k: round(v, 3) for k, v in timing.items()},
            "versions": runtime_versions(),  # learned monitors train from a seed: torch decides their weights
        }
    )
    return metrics, first_rows or [], first_steps or []
