"""Episode metrics M1-M4 and detection delay (HelpMeOut, Section 3.4; Tables 2, 11-15), bootstrap intervals and the
breakdowns, as pure functions of a per-step file (:mod:`ego_adr.monitoring.per_step`).

- **M1** episode AUROC: an episode's score is its highest step probability; errorful episodes are positives.
- **M2** step AUPRC over all steps, the task-end steps (``end``: omissions are confirmed there) and the steps
  before it (``mid``). A constant/random monitor scores the positive-step rate (Table 2's Random row).
- **M3** first alarm: for episodes whose first error is before the task end, missed / early (before the onset) /
  on target (at the onset, up to ``tolerance`` steps after it) / late (:func:`first_alarm_outcome`, whose
  detection delay is the alarm minus the onset); false alarm = share of correct episodes with any alarm;
  episodes whose first error is of the ``end_type`` (HelpMeOut: omission) alarmed first at the end step / before
  it. Timed-out episodes are left out (as for the re-planner).
- **M4** per-type and macro F1 of the set of error types a monitor names at its alarms against the true set,
  over all episodes with correct ones included (their true set is empty, Table 11); macro over the types present
  (:func:`type_f1`).

95% intervals come from an episode-level bootstrap stratified by errorful/correct episodes (Table 17's caption).
The video stream (:mod:`ego_adr.stream.metrics`) scores its annotated segments with the same M1, M2 and M4 and
its time-based first alarms with :func:`first_alarm_outcome`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ego_adr.monitoring.per_step import EpisodeSteps, group_episodes
from ego_adr.monitoring.ranking import auroc, average_precision

M3_OUTCOMES = ("missed", "early", "on_target", "late")


def _f1(tp: int, fp: int, fn: int) -> float:
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if len(x) else float("nan")


def first_alarm_outcome(first: float | None, onset: float, due: float | None = None, tolerance: float = 0,
                        eps: float = 0.0) -> str:
    """M3's verdict on an episode's first counted alarm against its first error: ``missed`` (no alarm),
    ``early`` (before the onset), ``on_target`` (from the onset until ``due + tolerance``; ``due`` defaults to the
    onset: a symbolic step is due at itself, a video segment by its end) or ``late``. ``eps`` absorbs float
    error in times."""
    if first is None:
        return "missed"
    due = onset if due is None else due
    if first < onset - eps:
        return "early"
    return "on_target" if first <= due + tolerance + eps else "late"


def detection_delay(first: float | None, onset: float, outcome: str) -> float | None:
    """How long after the onset the first alarm came (on target and late alarms only; steps or seconds)."""
    return None if outcome in ("missed", "early") or first is None else first - onset


def type_f1(true_sets: Sequence[set], pred_sets: Sequence[set], types: Iterable[str]) -> tuple[dict, float, list]:
    """Per-type F1 of predicted against true type sets (one pair per episode), the macro F1 over the types that
    occur in some true set, and those types (NaN macro when none does)."""
    types = list(types)
    per = {}
    for c in types:
        tp = fp = fn = 0
        for t_set, p_set in zip(true_sets, pred_sets, strict=True):
            t, p = c in t_set, c in p_set
            tp += t and p
            fp += p and not t
            fn += t and not p
        per[c] = _f1(tp, fp, fn)
    present = [c for c in types if any(c in t for t in true_sets)]
    macro = float(np.mean([per[c] for c in present])) if present else float("nan")
    return per, macro, present


def m1(eps: Sequence[EpisodeSteps]) -> float:
    return auroc([e.errorful for e in eps], [max(e.probs) for e in eps])


def m2(eps: Sequence[EpisodeSteps]) -> dict[str, float]:
    y_all = np.concatenate([e.labels for e in eps])
    s_all = np.concatenate([e.probs for e in eps])
    y_end = np.array([e.labels[-1] for e in eps])
    s_end = np.array([e.probs[-1] for e in eps])
    y_mid = np.concatenate([e.labels[:-1] for e in eps])
    s_mid = np.concatenate([e.probs[:-1] for e in eps])
    return {"all": average_precision(y_all, s_all), "end": average_precision(y_end, s_end),
            "mid": average_precision(y_mid, s_mid), "positive_rate_all": _mean(y_all),
            "positive_rate_end": _mean(y_end), "positive_rate_mid": _mean(y_mid)}


def m3(eps: Sequence[EpisodeSteps], threshold: float, tolerance: int = 0, end_type: str = "omission") -> dict:
    """First alarms on the steps each episode flags (``threshold`` is reported, the rows' ``flagged`` decide)."""
    out = dict.fromkeys(M3_OUTCOMES, 0)
    n_mid = n_correct = fa = om_n = om_end = om_before = timed_out = 0
    for e in eps:
        if e.timed_out:
            timed_out += 1
            continue
        end = len(e.probs) - 1
        alarms = np.nonzero(e.flagged)[0]
        first = int(alarms[0]) if len(alarms) else None
        if not e.errorful:
            n_correct += 1
            fa += first is not None
            continue
        if e.error_onset < end:
            n_mid += 1
            out[first_alarm_outcome(first, e.error_onset, tolerance=tolerance)] += 1
        if e.primary_type == end_type:
            om_n += 1
            om_end += first == end
            om_before += first is not None and first < end
    res = {k: v / max(1, n_mid) for k, v in out.items()}
    res.update({"false_alarm": fa / max(1, n_correct), "omission_end": om_end / max(1, om_n),
                "omission_before": om_before / max(1, om_n), "n_mid_error_episodes": n_mid,
                "n_correct_episodes": n_correct, "n_omission_episodes": om_n, "timed_out_episodes": timed_out,
                "threshold": threshold, "tolerance": tolerance})
    return res


def m4(eps: Sequence[EpisodeSteps], types: Sequence[str], errorful_only: bool = False) -> dict:
    keep = [e for e in eps if e.errorful or not errorful_only]
    per, _, _ = type_f1([set(e.error_types) for e in keep], [e.named_types for e in keep], types)
    present = [c for c in types if any(c in e.error_types for e in eps)]
    macro = float(np.mean([per[c] for c in present])) if present else float("nan")
    return {"per_class": per, "macro": macro}


def end_false_alarm_share(eps: Sequence[EpisodeSteps]) -> float | None:
    """Share of correct episodes whose task-end probability reaches 0.5: how often a monitor's end check (the
    omission check of Figure 1) calls a correct execution incomplete -- the end-of-task false-alarm rate."""
    ends = [e.probs[-1] >= 0.5 for e in eps if not e.errorful]
    return round(float(np.mean(ends)), 4) if ends else None


def per_type_m2(eps: Sequence[EpisodeSteps], types: Sequence[str]) -> dict:
    """Table 12: step AUPRC of the episodes of one primary type pooled with the correct ones."""
    correct = [e for e in eps if not e.errorful]
    out = {}
    for c in types:
        of = [e for e in eps if e.primary_type == c]
        if of:
            out[c] = {"episodes": len(of), "AUPRC": m2(of + correct)["all"]}
    return out


def by_stratum(eps: Sequence[EpisodeSteps], strata: Sequence[str]) -> dict:
    """Table 14: M1 and M2-mid of each stratum's episodes (HelpMeOut: template complexity)."""
    out = {}
    for s in strata:
        of = [e for e in eps if e.stratum == s]
        if of:
            out[s] = {"episodes": len(of), "M1": m1(of), "M2_mid": m2(of)["mid"]}
    return out


def _ci(vals: list[float]) -> list[float]:
    v = np.array([x for x in vals if not np.isnan(x)])
    if len(v) == 0:
        return [float("nan"), float("nan")]
    return [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))]


def bootstrap_ci(eps: Sequence[EpisodeSteps], types: Sequence[str], resamples: int, seed: int = 0) -> dict:
    """95% percentile intervals of M1, M2 (all, end, mid) and M4 over episode resamples stratified by
    errorful/correct."""
    rng = np.random.default_rng(seed)
    errorful = np.array([e.errorful for e in eps])
    pos, neg = np.nonzero(errorful)[0], np.nonzero(~errorful)[0]
    keys: dict[str, list[float]] = {"M1": [], "M2": [], "M2_end": [], "M2_mid": [], "M4": []}
    for _ in range(resamples):
        b = np.concatenate([rng.choice(pos, len(pos)), rng.choice(neg, len(neg))]) if len(neg) else \
            rng.choice(pos, len(pos))
        sample = [eps[i] for i in b]
        m = m2(sample)
        keys["M1"].append(m1(sample))
        keys["M2"].append(m["all"])
        keys["M2_end"].append(m["end"])
        keys["M2_mid"].append(m["mid"])
        keys["M4"].append(m4(sample, types)["macro"])
    return {k: _ci(v) for k, v in keys.items()}


def compute_metrics(rows: Iterable[dict], *, types: Sequence[str], threshold: float = 0.5, tolerance: int = 0,
                    bootstrap: int = 1000, seed: int = 0, strata: Sequence[str] = (),
                    strata_key: str = "by_stratum", end_type: str = "omission") -> dict:
    """Every metric of one monitor's per-step rows (HelpMeOut's ``metrics.json`` layout)."""
    eps = group_episodes(rows, threshold)
    mm2 = m2(eps)
    result = {
        "M1": m1(eps),
        "M2": mm2,
        "M3": m3(eps, threshold, tolerance, end_type),
        "M4": {**m4(eps, types), "macro_errorful_only": m4(eps, types, errorful_only=True)["macro"]},
        "episodes": len(eps),
        "errorful_episodes": sum(e.errorful for e in eps),
        "correct_end_prob_ge_half": end_false_alarm_share(eps),
    }
    result["M2"]["per_class"] = per_type_m2(eps, types)
    result[strata_key] = by_stratum(eps, strata)
    if bootstrap > 0:
        result["ci95"] = bootstrap_ci(eps, types, bootstrap, seed)
        result["bootstrap"] = bootstrap
    return result


def mean_metrics(runs: list[dict]) -> dict:
    """Average of several runs (a random monitor over seeds, Table 2's caption), leaf by leaf."""

    def avg(vals: list) -> object:
        if isinstance(vals[0], dict):
            return {k: avg([v[k] for v in vals]) for k in vals[0] if all(k in v for v in vals)}
        if all(type(v) is int for v in vals) and len(set(vals)) == 1:
            return vals[0]  # a count every run shares (episodes, errorful episodes) stays a count
        if isinstance(vals[0], (int, float)) and not isinstance(vals[0], bool):
            return float(np.nanmean(np.array(vals, dtype=float)))
        if isinstance(vals[0], list) and vals[0] and isinstance(vals[0][0], (int, float)):
            return [float(x) for x in np.nanmean(np.array(vals, dtype=float), axis=0)]
        return vals[0]

    return avg(runs)  # type: ignore[return-value]
