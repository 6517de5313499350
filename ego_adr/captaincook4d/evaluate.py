"""Running every monitor on a CaptainCook4D benchmark: fitted on the training split, its operating points (and a
procedure monitor's checks) chosen on the validation split, then scored once on the test split.

**No cross-validation here**: the authors' split has a validation split of 62 recordings with real labelled
mistakes (214 positive observations on ``captaincook4d-complete``), so nothing needs to be chosen on constructed
mistakes or on folds of the training recordings. For each monitor:

1. it is built from its registry (:data:`ego_adr.online_mistakes.registry.REGISTRY` or :data:`.registry.REGISTRY`)
   and fitted on :class:`.benchmark.Training` (the registered ones still run their own internal selection on the
   correct training sequences, as they do everywhere);
2. it is streamed over the validation recordings; on its ``p_error`` there the thresholds are chosen as the
   step-stream monitors choose theirs on constructed mistakes (:func:`ego_adr.online_mistakes.cv.best_threshold`):
   one for macro F1, one for F1b, and the monitor's own alarm (``flagged``) at the one of the best mean of the
   two. A monitor with a set of checks to choose (:data:`.monitors.CHOICES`) is run once per choice and the choice
   of the best mean wins. ``flag-all`` and ``never-alarm`` keep their own alarms (a threshold would make one the
   other);
3. it is streamed over the test recordings and scored there, each metric at its point (:mod:`ego_adr.monitoring.
   step_metrics`, with :func:`ego_adr.online_mistakes.complete_metrics.complete_metrics`: 95% bootstrap intervals
   over recordings, per-kind and per-label alarm rates, the first mistake's detection).

**The headline** is the candidate of best validation objective (mean of macro F1 and F1b at their points);
candidates are the monitors that are not blind, not a reference rule and need no model. The best on the test is
printed after it, named so. A monitor that needs a model (``prego``) is listed as not run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import monitors as CM
from ego_adr.captaincook4d import registry as CR
from ego_adr.monitoring.monitor import run_episode
from ego_adr.monitoring.numerics import stable
from ego_adr.monitoring.per_step import step_row
from ego_adr.online_mistakes import complete_metrics as CMX
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes import registry as OR
from ego_adr.online_mistakes.types import StepContext

FIXED = ("flag-all", "never-alarm", *CR.REFERENCE)


def names() -> tuple[list[str], dict[str, str]]:
    """Every monitor that runs here (the registered step-stream ones, then ours) and those that do not, with why."""
    reg = [s.name for s in OR.REGISTRY.specs.values()]
    skip = OR.not_runnable("all", reg, has_model=False)
    return [n for n in reg if n not in skip] + list(CR.REGISTRY.names()), skip


def registry_of(name: str):
    return CR.REGISTRY if name in CR.REGISTRY.names() else OR.REGISTRY


def group(name: str) -> str:
    """How a row is read: blind, reference, supervised, official graph, learned graph, or no graph."""
    if name in OR.BLIND:
        return "blind"
    if name in CR.REFERENCE:
        return "reference"
    if name in CR.SUPERVISED:
        return "supervised"
    if name == CR.OFFICIAL_GRAPH:
        return "official graph"
    if name in (CR.LEARNED_GRAPH,):
        return "learned graph"
    return "no graph (registered step-stream monitor)"


def truth(rec: B.Recording) -> dict:
    first = next((i for i, y in enumerate(rec.labels) if y), None)
    kinds = sorted({k for ks, y in zip(rec.kinds, rec.labels) if y for k in ks})
    return {"errorful": first is not None, "error_onset": first, "error_types": kinds}


def feed(monitor, train: B.Training, stream: B.Stream) -> list[dict]:
    """Every recording through the fitted ``monitor``, one observation at a time; the per-step rows."""
    rows = []
    for rec in stream.recordings:
        ctx = StepContext(stream.benchmark, rec.video, train.taxonomy)
        outs = run_episode(monitor, rec.video, ctx, iter(rec.steps))
        tr = truth(rec)
        for t, out in enumerate(outs):
            flagged = bool(out.prob >= 0.5) if out.flagged is None else bool(out.flagged)
            row = step_row(rec.video, t, rec.labels[t], stable(out.prob), tr, flagged=flagged,
                           category=out.category, onset=out.onset, evidence=out.evidence)
            rows.append(row | {"video": rec.video, "step_id": rec.steps[t], "step_name": rec.names[t],
                               "source_label": rec.source_labels[t], "kinds": list(rec.kinds[t]), "scored": True})
    return rows


def choose(rows: Sequence[dict]) -> dict:
    """The thresholds chosen on validation rows: {point: (threshold, validation metrics)} for ``objective``,
    ``macro_f1`` and ``balanced_f1``."""
    y = np.array([r["label"] for r in rows])
    p = np.array([r["p_error"] for r in rows])
    return {"objective": cv.best_threshold(y, p), **cv.operating_points(y, p)}


def apply(rows: Sequence[dict], points: dict | None) -> list[dict]:
    """``rows`` alarmed at ``points`` (None: the monitor's own alarms at every point)."""
    if points is None:
        return [r | {"flagged_for": {k: r["flagged"] for k in cv.OPERATING_METRICS}} for r in rows]
    return [r | {"flagged": r["p_error"] >= points["objective"][0],
                 "flagged_for": {k: r["p_error"] >= points[k][0] for k in cv.OPERATING_METRICS}} for r in rows]


def _objective(rows: Sequence[dict]) -> float:
    m = {k: cv.flags_metrics([r["label"] for r in rows], [r["flagged_for"][k] for r in rows])[k]
         for k in cv.OPERATING_METRICS}
    return (m["macro_f1"] + m["balanced_f1"]) / 2


def _fitted(name: str, train: B.Training, options: dict):
    mon = registry_of(name).build(name, stream="oracle", **options)
    t0 = time.process_time()
    mon.fit(train)
    return mon, time.process_time() - t0


def run_one(name: str, data: B.Data) -> dict:
    """One monitor through the three steps of the module docstring: its result and its test rows."""
    choices = CM.CHOICES if registry_of(name) is CR.REGISTRY and name.startswith("procedure") else {}
    options = [{k: v} for k, vs in choices.items() for v in vs] or [{}]
    tried = []
    for opt in options:
        mon, fit_s = _fitted(name, data.train, opt)
        val = feed(mon, data.train, data.val)
        points = None if name in FIXED else choose(val)
        val = apply(val, points)
        tried.append((_objective(val), -len(tried), opt, mon, points, val, fit_s))
    obj, _, opt, mon, points, val, fit_s = max(tried, key=lambda x: (x[0], x[1]))
    test = apply(feed(mon, data.train, data.test), points)
    spec = registry_of(name).get(name)
    return {"monitor": name, "group": group(name), "reads": list(spec.reads), "options": opt,
            "validation": {"objective": round(obj, 4), "choices": {",".join(map(str, o.values())) or "-": round(t[0], 4)
                                                                  for o, t in zip(options, tried)},
                           "points": {k: {"threshold": round(v[0], 6), **v[1]} for k, v in (points or {}).items()},
                           "macro_f1": round(CMX.step_block(val)["macro_f1"], 4)},
            "test": CMX.complete_metrics(test), "selection": getattr(mon, "selection", None),
            "stats": mon.stats() if hasattr(mon, "stats") else {}, "fit_cpu_seconds": round(fit_s, 2),
            "rows": test}


def headline(results: Sequence[dict]) -> str | None:
    """The candidate of best validation objective (module docstring); ties: registry order."""
    cands = [r for r in results if r["group"] not in ("blind", "reference")]
    return max(cands, key=lambda r: r["validation"]["objective"])["monitor"] if cands else None


def evaluate(data: B.Data, only: Sequence[str] | None = None) -> dict:
    """Every monitor (or ``only``) on ``data``; the results, the headline and what was not run."""
    run, skipped = names()
    if only:
        run = [n for n in run if n in only]
    results = [run_one(n, data) for n in run]
    return {"benchmark": data.benchmark, "results": results, "headline": headline(results), "not_run": skipped,
            "counts": {"validation": B.counts(data.val), "test": B.counts(data.test)}}
