"""M1-M4 (paper Section 3.4; Tables 2, 11-15), bootstrap intervals and the complexity breakdown.

Inputs are the episodes (labels, onsets, categories) and one output row per episode from a monitor: the error
probability of every observed step (the last one is the task-end step) and the category it named at each step.

- **M1** episode AUROC: an episode's score is its highest step probability; errorful episodes are positives.
- **M2** step AUPRC over all steps, the task-end steps (``end``: omissions are confirmed there) and the steps
  before it (``mid``). A constant/random monitor scores the positive-step rate (Table 2's Random row).
- **M3** first alarm at ``threshold`` (the paper's value was lost in extraction; 0.5 here, configurable): for
  episodes whose first error is before the task end, missed / early (before the onset) / on target (at the onset,
  up to ``tolerance`` steps after it) / late; false alarm = share of correct episodes with any alarm; omission
  episodes alarmed first at the end step / before it. Timed-out episodes are left out (as for the re-planner).
- **M4** per-class and macro F1 of the set of error types a monitor names at its alarms against the true set,
  over all episodes with correct ones included (their true set is empty, Table 11).

95% intervals come from a trajectory-level bootstrap stratified by errorful/correct episodes (Table 17's caption).
"""

from __future__ import annotations

import numpy as np

from ego_adr.helpmeout.generator import CATEGORIES
from ego_adr.helpmeout.templates import COMPLEXITIES


def average_precision(y: np.ndarray, s: np.ndarray) -> float:
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


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    """Mann-Whitney AUROC with ties counted half; NaN when one class is absent."""
    from scipy.stats import rankdata

    y = np.asarray(y, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    r = rankdata(np.asarray(s, dtype=float))
    return float((r[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _f1(tp: int, fp: int, fn: int) -> float:
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


class Scorer:
    """Precomputes per-episode arrays so bootstrap resamples are cheap."""

    def __init__(self, episodes: list[dict], outputs: list[dict], threshold: float = 0.5, tolerance: int = 0) -> None:
        if len(episodes) != len(outputs):
            raise ValueError(f"{len(episodes)} episodes but {len(outputs)} monitor outputs")
        self.eps, self.outs, self.thr, self.tol = episodes, outputs, threshold, tolerance
        self.errorful = np.array([not e["correct"] for e in episodes])
        self.score = np.array([max(o["probs"]) for o in outputs])
        self.labels = [np.asarray(e["labels"], dtype=float) for e in episodes]
        self.probs = [np.asarray(o["probs"], dtype=float) for o in outputs]
        self.pred_sets = []
        for o in outputs:
            cats = {c for p, c in zip(o["probs"], o["categories"], strict=True) if p >= threshold and c}
            self.pred_sets.append(cats)
        self.true_sets = [set(e["categories"]) for e in episodes]

    def m1(self, idx: np.ndarray) -> float:
        return auroc(self.errorful[idx], self.score[idx])

    def m2(self, idx: np.ndarray) -> dict[str, float]:
        y_all = np.concatenate([self.labels[i] for i in idx])
        s_all = np.concatenate([self.probs[i] for i in idx])
        y_end = np.array([self.labels[i][-1] for i in idx])
        s_end = np.array([self.probs[i][-1] for i in idx])
        y_mid = np.concatenate([self.labels[i][:-1] for i in idx])
        s_mid = np.concatenate([self.probs[i][:-1] for i in idx])
        return {"all": average_precision(y_all, s_all), "end": average_precision(y_end, s_end),
                "mid": average_precision(y_mid, s_mid), "positive_rate_all": float(y_all.mean()),
                "positive_rate_end": float(y_end.mean()), "positive_rate_mid": float(y_mid.mean())}

    def m4(self, idx: np.ndarray, errorful_only: bool = False) -> dict:
        per = {}
        for c in CATEGORIES:
            tp = fp = fn = 0
            for i in idx:
                if errorful_only and not self.errorful[i]:
                    continue
                t, p = c in self.true_sets[i], c in self.pred_sets[i]
                tp += t and p
                fp += p and not t
                fn += t and not p
            per[c] = _f1(tp, fp, fn)
        present = [c for c in CATEGORIES if any(c in self.true_sets[i] for i in idx)]
        macro = float(np.mean([per[c] for c in present])) if present else float("nan")
        return {"per_class": per, "macro": macro}

    def m3(self, idx: np.ndarray) -> dict:
        out = {"missed": 0, "early": 0, "on_target": 0, "late": 0}
        n_mid = n_correct = fa = om_n = om_end = om_before = timed_out = 0
        for i in idx:
            ep, o = self.eps[i], self.outs[i]
            if o.get("timed_out"):
                timed_out += 1
                continue
            p = self.probs[i]
            end = len(p) - 1
            alarms = np.nonzero(p >= self.thr)[0]
            first = int(alarms[0]) if len(alarms) else None
            if ep["correct"]:
                n_correct += 1
                fa += first is not None
                continue
            onset = ep["first_onset"]
            if onset < end:
                n_mid += 1
                if first is None:
                    out["missed"] += 1
                elif first < onset:
                    out["early"] += 1
                elif first <= onset + self.tol:
                    out["on_target"] += 1
                else:
                    out["late"] += 1
            if ep["primary_category"] == "omission":
                om_n += 1
                om_end += first == end
                om_before += first is not None and first < end
        res = {k: v / max(1, n_mid) for k, v in out.items()}
        res.update({"false_alarm": fa / max(1, n_correct), "omission_end": om_end / max(1, om_n),
                    "omission_before": om_before / max(1, om_n), "n_mid_error_episodes": n_mid,
                    "n_correct_episodes": n_correct, "n_omission_episodes": om_n, "timed_out_episodes": timed_out,
                    "threshold": self.thr, "tolerance": self.tol})
        return res


def _ci(vals: list[float]) -> list[float]:
    v = np.array([x for x in vals if not np.isnan(x)])
    if len(v) == 0:
        return [float("nan"), float("nan")]
    return [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))]


def _end_share(outputs: list[dict], correct: np.ndarray) -> float | None:
    """Share of correct episodes whose task-end probability reaches 0.5: how often a monitor's end check (the
    omission check of Figure 1) calls a correct execution incomplete -- the end-of-task false-alarm rate."""
    ends = [o["probs"][-1] >= 0.5 for o, ok in zip(outputs, correct, strict=True) if ok]
    return round(float(np.mean(ends)), 4) if ends else None


def compute_metrics(episodes: list[dict], outputs: list[dict], threshold: float = 0.5, tolerance: int = 0,
                    bootstrap: int = 1000, seed: int = 0) -> dict:
    sc = Scorer(episodes, outputs, threshold, tolerance)
    n = len(episodes)
    idx = np.arange(n)
    m2 = sc.m2(idx)
    m4 = sc.m4(idx)
    result = {
        "M1": sc.m1(idx),
        "M2": m2,
        "M3": sc.m3(idx),
        "M4": {"macro": m4["macro"], "per_class": m4["per_class"],
               "macro_errorful_only": sc.m4(idx, errorful_only=True)["macro"]},
        "episodes": n,
        "errorful_episodes": int(sc.errorful.sum()),
        "correct_end_prob_ge_half": _end_share(outputs, ~sc.errorful),
    }
    # per-class M2 (Table 12): episodes of one primary category pooled with the correct ones
    correct_idx = np.nonzero(~sc.errorful)[0]
    per_class = {}
    for c in CATEGORIES:
        ci = np.array([i for i in range(n) if episodes[i]["primary_category"] == c], dtype=int)
        if len(ci):
            pooled = np.concatenate([ci, correct_idx])
            per_class[c] = {"episodes": int(len(ci)), "AUPRC": sc.m2(pooled)["all"]}
    result["M2"]["per_class"] = per_class
    # complexity breakdown (Table 14)
    by_cx = {}
    for cx in COMPLEXITIES:
        ci = np.array([i for i in range(n) if episodes[i]["complexity"] == cx], dtype=int)
        if len(ci):
            by_cx[cx] = {"episodes": int(len(ci)), "M1": sc.m1(ci), "M2_mid": sc.m2(ci)["mid"]}
    result["by_complexity"] = by_cx
    if bootstrap > 0:
        rng = np.random.default_rng(seed)
        pos, neg = np.nonzero(sc.errorful)[0], correct_idx
        keys = {"M1": [], "M2": [], "M2_end": [], "M2_mid": [], "M4": []}
        for _ in range(bootstrap):
            b = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))]) if len(neg) else \
                rng.choice(pos, len(pos))
            m = sc.m2(b)
            keys["M1"].append(sc.m1(b))
            keys["M2"].append(m["all"])
            keys["M2_end"].append(m["end"])
            keys["M2_mid"].append(m["mid"])
            keys["M4"].append(sc.m4(b)["macro"])
        result["ci95"] = {k: _ci(v) for k, v in keys.items()}
        result["bootstrap"] = bootstrap
    return result


def mean_metrics(runs: list[dict]) -> dict:
    """Average of several runs (Random: mean of 20 seeds, Table 2's caption), leaf by leaf."""

    def avg(vals: list) -> object:
        if isinstance(vals[0], dict):
            return {k: avg([v[k] for v in vals]) for k in vals[0] if all(k in v for v in vals)}
        if isinstance(vals[0], (int, float)) and not isinstance(vals[0], bool):
            return float(np.nanmean(np.array(vals, dtype=float)))
        if isinstance(vals[0], list) and vals[0] and isinstance(vals[0][0], (int, float)):
            return [float(x) for x in np.nanmean(np.array(vals, dtype=float), axis=0)]
        return vals[0]

    return avg(runs)  # type: ignore[return-value]
