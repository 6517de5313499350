"""Uncertainty for the multiple-choice metrics: bootstrap intervals, McNemar's test, paired run comparison.

The paper (Table 4, Section 6.3) reports point estimates only and claims gains of a few points of precision on
~1,857 samples; at that size a difference of 1-2 points can be noise, so every score here comes with a 95%
percentile-bootstrap interval and every A/B comparison with a paired test.

* Resampling is stratified by ground truth (correct vs error samples): the benchmark is dominated by correct
  samples (paper, Limitations), and a plain resample would let the error share -- and hence precision/recall --
  wander for reasons unrelated to the model.
* Paired comparisons draw the *same* samples for both runs, so the interval is on the per-sample difference.
* Small samples: a percentile bootstrap of a handful of samples is no interval at all (with one error sample
  every resample has the same recall, so the interval has zero width). :func:`interval_flags` marks every
  interval computed from fewer than :data:`SMALL_N` samples, or from a stratum of fewer than
  :data:`SMALL_STRATUM`, and every zero-width one; reports print the flag beside the interval. The thresholds are
  a rule of thumb of ours (the paper reports no intervals), not a number from the paper.
* McNemar's test uses per-sample correctness (hit or not); it is exact (binomial) when fewer than 25 samples
  are discordant, where the chi-square approximation is poor, and otherwise chi-square with continuity
  correction.
"""

from __future__ import annotations

import numpy as np

RATES = ("accuracy", "precision", "recall", "f1")
SMALL_N = 30
SMALL_STRATUM = 10


def _cell_arrays(outcomes: list[dict]) -> np.ndarray:
    """(5, n) 0/1 matrix of tp, fp, tn, fn and hit per sample."""
    cells = [o["cell"] for o in outcomes]
    rows = [[c == k for c in cells] for k in ("tp", "fp", "tn", "fn")] + [[bool(o["hit"]) for o in outcomes]]
    return np.array(rows, dtype=np.int64).reshape(5, -1)


def _rates_vec(tp, fp, tn, fn, hits, n) -> dict[str, np.ndarray]:
    """Vectorised :func:`ego_adr.eval.mc.block` rates (accuracy = hits / n; same zero-denominator convention)."""
    tp, fp, tn, fn, hits = (np.asarray(x, dtype=float) for x in (tp, fp, tn, fn, hits))
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(n > 0, hits / max(n, 1), 0.0)
        pre = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        rec = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        f1 = np.where(pre + rec > 0, 2 * pre * rec / (pre + rec), 0.0)
    return {"accuracy": acc, "precision": pre, "recall": rec, "f1": f1}


def _draws(strata: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) resampled indices, each stratum resampled within itself (sizes preserved)."""
    parts = []
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        parts.append(idx[rng.integers(0, len(idx), size=(n_boot, len(idx)))])
    return np.concatenate(parts, axis=1)


def _boot_rates(cells: np.ndarray, draws: np.ndarray) -> dict[str, np.ndarray]:
    sums = [cells[k][draws].sum(axis=1) for k in range(5)]
    return _rates_vec(*sums, n=draws.shape[1])


def _interval(values: np.ndarray) -> list[float]:
    lo, hi = np.percentile(values, [2.5, 97.5])
    return [float(lo), float(hi)]


def bootstrap_ci(outcomes: list[dict], *, n_boot: int = 1000, seed: int = 0) -> dict[str, list[float]]:
    """95% percentile intervals of accuracy/precision/recall/F1 over ``n_boot`` stratified resamples.

    ``outcomes`` are :func:`ego_adr.eval.mc.outcome` dicts. Deterministic for a given ``seed``.
    """
    if not outcomes:
        return {}
    rng = np.random.default_rng(seed)
    strata = np.array([o["gt_error"] for o in outcomes])
    boots = _boot_rates(_cell_arrays(outcomes), _draws(strata, n_boot, rng))
    return {k: _interval(v) for k, v in boots.items()}


def interval_flags(outcomes: list[dict], ci: dict[str, list[float]]) -> dict:
    """Whether the intervals in ``ci`` can be trusted: ``small_n`` (fewer than :data:`SMALL_N` samples or a
    ground-truth stratum under :data:`SMALL_STRATUM`), the ``zero_width`` metrics, the metrics whose denominator
    (precision: TP + FP, recall: TP + FN) is under :data:`SMALL_STRATUM` (``small_denominator``), and a ``note``
    for reports (``None`` when nothing is flagged)."""
    n = len(outcomes)
    n_err = sum(bool(o["gt_error"]) for o in outcomes)
    strata = [k for k in (n_err, n - n_err) if k]
    small = n < SMALL_N or (bool(strata) and min(strata) < SMALL_STRATUM)
    zero = [k for k, (lo, hi) in ci.items() if hi - lo <= 0]
    cells = {c: sum(o["cell"] == c for o in outcomes) for c in ("tp", "fp", "fn")}
    denominators = {"accuracy": n, "precision": cells["tp"] + cells["fp"], "recall": cells["tp"] + cells["fn"]}
    denominators["f1"] = min(denominators["precision"], denominators["recall"])
    thin = [k for k in ci if denominators.get(k, n) < SMALL_STRATUM]
    note = None
    if small or zero or thin:
        parts = []
        if small:
            parts.append(f"n = {n} ({n_err} error, {n - n_err} correct samples): too few for a percentile "
                         f"bootstrap (flagged below {SMALL_N} samples or {SMALL_STRATUM} per stratum)")
        if thin:
            parts.append("fewer than " + str(SMALL_STRATUM) + " samples behind " + ", ".join(
                f"{k} ({denominators[k]})" for k in thin))
        if zero:
            parts.append("zero-width interval for " + ", ".join(zero) + " (every resample gave the same value; "
                         "this is not certainty)")
        note = "; ".join(parts)
    return {"small_n": small, "n": n, "n_error": n_err, "n_correct": n - n_err, "zero_width": zero,
            "small_denominator": thin, "denominators": denominators, "note": note}

