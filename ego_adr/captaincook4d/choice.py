"""How stable the headline's choice on validation is, and when it is a tie (issue 44, second part, item 3).

The headline monitor is the candidate of best validation objective (:func:`.evaluate.headline`: the mean of macro
F1 and F1b, each at the threshold chosen for it on validation). A margin of 0.0003 between two candidates is not a
choice, so the choice is repeated, with everything it chose, on bootstrap resamples of the validation recordings,
by a rule fixed before any result was seen and never reading the test split:

- :data:`SEEDS` (1..200): resample ``k`` draws as many validation recordings as there are, with replacement, from
  ``numpy.random.default_rng(k)`` (one resample for every candidate: paired);
- on each resample, each candidate's thresholds are chosen again (:func:`ego_adr.online_mistakes.cv.
  operating_points`, as on the whole split; a monitor without a threshold keeps its own alarms; a procedure
  monitor keeps the checks the whole split chose) and its objective computed; the resample's choice is the best
  (ties: run order, as on the whole split);
- ``agree``: the share of resamples whose choice is the headline's; ``spread``: each candidate's objective over the
  resamples, its central :data:`LEVEL` interval (2.5th to 97.5th percentile);
- **tie** when another candidate's objective on the whole validation split lies inside the headline's spread (at
  or above its low end), or when another candidate is the choice of at least ``1 - LEVEL`` (5 %) of the resamples:
  ``between`` names the headline and every such candidate, and every table prints their rows. The goal verdict of
  a tie follows :func:`ego_adr.online_mistakes.goal.verdict`: ``reached`` when every monitor of the tie reaches the
  goal on the test, ``not reached`` when none does, ``tie`` when the goal's bar lies between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ego_adr.online_mistakes import cv

RESAMPLES = 200
SEEDS = tuple(range(1, RESAMPLES + 1))
LEVEL = 0.95
RULE = (f"bootstrap of the validation recordings, seeds 1..{RESAMPLES} fixed in advance, thresholds chosen again on "
        f"each resample; tie when another candidate's validation objective lies inside the chosen one's central "
        f"{LEVEL:.0%} interval over the resamples, or when another candidate wins at least {1 - LEVEL:.0%} of them")


def objective(y: np.ndarray, p: np.ndarray, flags: np.ndarray | None) -> float:
    """The validation objective of one candidate on rows (labels ``y``, scores ``p``): the mean of macro F1 and F1b
    at the thresholds chosen for each on these rows, or at the monitor's own alarms (``flags``) if it has no
    threshold. Equal to :func:`.evaluate._objective` on the rows :func:`.evaluate.apply` alarms."""
    if flags is not None:
        m = cv.flags_metrics(y, flags)
        return (m["macro_f1"] + m["balanced_f1"]) / 2
    pts = cv.operating_points(y, p)
    return (pts["macro_f1"][1]["macro_f1"] + pts["balanced_f1"][1]["balanced_f1"]) / 2


def _per_recording(rows: Sequence[dict], fixed: bool) -> dict[str, tuple]:
    out: dict[str, list] = {}
    for r in rows:
        out.setdefault(r["episode"], []).append(r)
    return {e: (np.array([r["label"] for r in rs], bool), np.array([r["p_error"] for r in rs], float),
                np.array([bool(r["flagged"]) for r in rs]) if fixed else None) for e, rs in out.items()}


def _interval(values: np.ndarray) -> list[float]:
    lo, hi = np.quantile(values, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2])
    return [round(float(lo), 4), round(float(hi), 4)]


def stability(rows: Mapping[str, Sequence[dict]], fixed: Sequence[str] = ()) -> dict:
    """The choice among ``rows`` (candidate -> its validation rows, in run order; ``fixed``: candidates without a
    threshold) on the whole split and on each resample (module docstring); ``{}`` without a candidate."""
    names = list(rows)
    if not names:
        return {}
    per = {n: _per_recording(rows[n], n in fixed) for n in names}
    recs = list(per[names[0]])
    if any(list(per[n]) != recs for n in names):
        raise ValueError("every candidate's validation rows must cover the same recordings, in one order")

    def objectives(pick: Sequence[int]) -> np.ndarray:
        out = []
        for n in names:
            parts = [per[n][recs[i]] for i in pick]
            y, p = np.concatenate([a[0] for a in parts]), np.concatenate([a[1] for a in parts])
            out.append(objective(y, p, np.concatenate([a[2] for a in parts]) if n in fixed else None))
        return np.array(out)

    whole = objectives(range(len(recs)))
    top = int(np.argmax(whole))  # first maximum: run order breaks ties, as on the whole split
    sampled = np.array([objectives(np.random.default_rng(k).integers(0, len(recs), len(recs))) for k in SEEDS])
    wins = np.bincount(sampled.argmax(axis=1), minlength=len(names)) / len(SEEDS)
    spread = {n: _interval(sampled[:, i]) for i, n in enumerate(names)}
    chosen = names[top]
    between = [chosen] + [n for i, n in enumerate(names) if i != top and (
        whole[i] >= spread[chosen][0] or wins[i] >= 1 - LEVEL - 1e-12)]
    order = np.argsort(-whole, kind="stable")
    runner = names[int(order[1])] if len(names) > 1 else None
    return {"rule": RULE, "resamples": len(SEEDS), "seeds": [SEEDS[0], SEEDS[-1]], "level": LEVEL,
            "chosen": chosen, "runner_up": runner, "tie": len(between) > 1, "between": between,
            "agree": round(float(wins[top]), 4),
            "candidates": {n: {"objective": round(float(whole[i]), 4), "spread": spread[n],
                               "wins": round(float(wins[i]), 4)} for i, n in enumerate(names)}}


def text(c: Mapping) -> str:
    """The choice in words (``summary.md``)."""
    if not c:
        return "No candidate ran: nothing was chosen."
    cand = c["candidates"]

    def one(n: str) -> str:
        lo, hi = cand[n]["spread"]
        return f"{n} {cand[n]['objective']:.4f} [{lo:.4f}-{hi:.4f}], chosen by {cand[n]['wins']:.0%} of the resamples"

    head = (f"**tie** between {', '.join(c['between'])}" if c["tie"] else f"**{c['chosen']}**")
    runner = f"; runner-up {one(c['runner_up'])}" if c.get("runner_up") and c["runner_up"] not in c["between"] else ""
    return (f"Chosen on validation: {head} (validation objective [{LEVEL:.0%} interval over {c['resamples']} "
            f"resamples]: " + "; ".join(one(n) for n in c["between"]) + runner + f"). Rule: {c['rule']}.")
