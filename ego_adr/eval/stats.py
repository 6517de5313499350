"""Uncertainty for the multiple-choice metrics: bootstrap intervals, McNemar's test, paired run comparison.

The paper (Table 4, Section 6.3) reports point estimates only and claims gains of a few points of precision on
~1,857 samples; at that size a difference of 1-2 points can be noise, so every score here comes with a 95%
percentile-bootstrap interval and every A/B comparison with a paired test.

* Resampling is stratified by ground truth (correct vs error samples): the benchmark is dominated by correct
  samples (paper, Limitations), and a plain resample would let the error share -- and hence precision/recall --
  wander for reasons unrelated to the model.
* Paired comparisons draw the *same* samples for both runs, so the interval is on the per-sample difference.
* McNemar's test uses per-sample correctness (hit or not); it is exact (binomial) when fewer than 25 samples
  are discordant, where the chi-square approximation is poor, and otherwise chi-square with continuity
  correction.
"""

from __future__ import annotations

import numpy as np

RATES = ("accuracy", "precision", "recall", "f1")


def _cell_arrays(outcomes: list[dict]) -> np.ndarray:
    """(4, n) 0/1 matrix of tp, fp, tn, fn per sample."""
    cells = [o["cell"] for o in outcomes]
    return np.array([[c == k for c in cells] for k in ("tp", "fp", "tn", "fn")], dtype=np.int64).reshape(4, -1)


def _rates_vec(tp, fp, tn, fn, n) -> dict[str, np.ndarray]:
    """Vectorised :func:`ego_adr.eval.mc.rates` (same zero-denominator convention)."""
    tp, fp, tn, fn = (np.asarray(x, dtype=float) for x in (tp, fp, tn, fn))
    with np.errstate(divide="ignore", invalid="ignore"):
        acc = np.where(n > 0, (tp + tn) / max(n, 1), 0.0)
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
    sums = [cells[k][draws].sum(axis=1) for k in range(4)]
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
