"""Ranking scores against 0/1 labels: AUROC and average precision, with tied scores handled as scikit-learn does.

Every online benchmark on the layer ranks something -- episodes by their highest step probability (HelpMeOut's
M1), steps by their probability (M2) -- and these two functions are what ranks them. Both are order-free: a
list shuffled gives the same number (ties are grouped, never broken by position).
"""

from __future__ import annotations

import numpy as np


def average_precision(y, s) -> float:
    """Step-wise AP with tied scores grouped (scikit-learn's definition); NaN without positives."""
    y = np.asarray(y, dtype=float)
    s = np.asarray(s, dtype=float)
    if y.sum() == 0:
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    y, s = y[order], s[order]
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]
    tps = np.cumsum(y)[last]
    prec = tps / (last + 1)
    rec = np.r_[0.0, tps / tps[-1]]
    return float(np.sum(np.diff(rec) * prec))


def auroc(y, s) -> float:
    """Mann-Whitney AUROC with ties counted half; NaN when one class is absent."""
    from scipy.stats import rankdata

    y = np.asarray(y, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = rankdata(np.asarray(s, dtype=float))
    return float((r[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
