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
   of the best mean wins. ``flag-all``, ``never-alarm`` and the reference rules keep their own alarms (a threshold
   on a constant or on a rare rule's 0/1 would make one the other, or make a rule flag-all);
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
from ego_adr.online_mistakes.types import StepContext

FIXED = ("flag-all", "never-alarm", *CR.REFERENCE)


def names() -> tuple[list[str], dict[str, str]]:
    """Every monitor that runs here without a model (:data:`.registry.REGISTRY`: the registered step-stream ones,
    then ours) and those that do not, with why."""
    why = {n: "needs --model" for n in CR.REGISTRY.names() if CR.REGISTRY.get(n).needs_model}
    why |= {n: r for n in CR.REGISTRY.names() if n not in why and (r := CR.unavailable(n))}
    return [n for n in CR.REGISTRY.names() if n not in why], why


def group(name: str) -> str:
    """How a row is read: blind, reference, supervised, official graph, learned graph, or no graph given (the
    registered step-stream monitors: given no graph, some learn their own from the training sequences)."""
    if name in CR.BLIND:
        return "blind"
    if name in CR.REFERENCE:
        return "reference"
    if name in CR.SUPERVISED:
        return "supervised"
    if name == CR.OFFICIAL_GRAPH:
        return "official graph"
    if name in (CR.LEARNED_GRAPH,):
        return "learned graph"
    return "no graph given"


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
                               "source_label": rec.source_labels[t], "kinds": list(rec.kinds[t]), "scored": True,
                               "omitted": [train.taxonomy[s] for s, i in rec.skipped if i == t]})
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
    mon = CR.REGISTRY.build(name, stream="oracle", **options)
    t0 = time.process_time()
    mon.fit(train)
    return mon, time.process_time() - t0


def _scored(name: str, mon, data: B.Data, points, val: list[dict], obj: float, tried: dict) -> dict:
    test = apply(feed(mon, data.train, data.test), points)
    return {"monitor": name, "group": group(name), "reads": list(CR.REGISTRY.get(name).reads),
            "validation": {"objective": round(obj, 4), "choices": tried,
                           "points": {k: {"threshold": round(v[0], 6), **v[1]} for k, v in (points or {}).items()},
                           "macro_f1": round(CMX.step_block(val)["macro_f1"], 4)},
            "test": CMX.complete_metrics(test), "selection": getattr(mon, "selection", None),
            "stats": mon.stats() if hasattr(mon, "stats") else {}, "rows": test, "validation_rows": val}


def candidates(name: str, options: dict | None) -> tuple[list[dict], bool]:
    """The option sets ``name`` is run with (the validation split picks one) and whether that is a choice: a
    procedure monitor's ``checks=validation`` (its default) tries every set of :data:`.monitors.CHOICES`; any other
    option is given, not chosen."""
    options = dict(options or {})
    if options.get("checks") == CM.CHOSEN:
        return [options | {"checks": c} for c in CM.CHOICES["checks"]], True
    return [options], False


def run_one(name: str, datas: Sequence[B.Data], options: dict | None = None) -> list[dict]:
    """One monitor through the three steps of the module docstring on each of ``datas`` (benchmarks that share
    one training split: it is fitted once per option set); a result per benchmark, with its test and validation
    rows. ``options``: its ``--monitor-option``s, resolved (default: the registry's defaults)."""
    given = CR.REGISTRY.resolve_options(name, {}) if options is None else options
    options, chosen = candidates(name, given)
    fitted = [_fitted(name, datas[0].train, opt) for opt in options]
    out = []
    for data in datas:
        tried = []
        for i, (opt, (mon, _)) in enumerate(zip(options, fitted)):
            val = feed(mon, data.train, data.val)
            points = None if name in FIXED else choose(val)
            val = apply(val, points)
            tried.append((_objective(val), -i, opt, mon, points, val))
        obj, _, opt, mon, points, val = max(tried, key=lambda x: (x[0], x[1]))
        shown = {k: v for k, v in opt.items() if chosen and k in CM.CHOICES}
        if not chosen and isinstance(getattr(mon, "selection", None), dict) and "checks" in opt:
            mon.selection = mon.selection | {"chosen_by": f"given: --monitor-option checks={opt['checks']}"}
        res = _scored(name, mon, data, points, val, obj,
                      {",".join(str(t[2][k]) for k in shown) or "-": round(t[0], 4) for t in tried})
        out.append(res | {"options": shown, "given_options": given,
                          "fit_cpu_seconds": round(sum(f for _, f in fitted), 2)})
    return out


def headline(results: Sequence[dict], groups: Sequence[str] | None = None) -> str | None:
    """The candidate of best validation objective (module docstring; ``groups``: only those); ties: run order."""
    cands = [r for r in results if r["group"] not in ("blind", "reference") and (not groups or r["group"] in groups)]
    return max(cands, key=lambda r: r["validation"]["objective"])["monitor"] if cands else None


def _one(args) -> list[dict]:
    """A worker's task: one monitor on the benchmarks of ``root`` (each worker reads the data itself), under the
    caller's cache root (a spawned process does not inherit a :func:`ego_adr.store.cache_scope`)."""
    from ego_adr.store import cache_scope

    name, root, benchmarks, rule, cache = args
    with cache_scope(cache):
        return run_one(name, [B.load(root, b, rule) for b in benchmarks])


def evaluate(root, benchmarks: Sequence[str] = B.BENCHMARKS, only: Sequence[str] | None = None, jobs: int = 1,
             rule: str = "graph") -> dict[str, dict]:
    """Every monitor (or ``only``) on each benchmark, ``jobs`` monitors at a time (spawned processes; every fit
    is deterministic, so the same rows for any ``jobs``): {benchmark: results, headline, not run, counts}."""
    run, skipped = names()
    if only:
        run = [n for n in run if n in only]
    from ego_adr.store import cache_root

    tasks = [(n, str(root), tuple(benchmarks), rule, str(cache_root())) for n in run]
    if jobs > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
            per = list(pool.map(_one, tasks))
    else:
        per = [_one(t) for t in tasks]
    out = {}
    for i, b in enumerate(benchmarks):
        data = B.load(root, b, rule)
        results = [p[i] for p in per]
        out[b] = {"benchmark": b, "missing_target": rule, "results": results, "headline": headline(results),
                  "not_run": skipped, "counts": {"validation": B.counts(data.val), "test": B.counts(data.test)}}
    return out


def relabelled(result: dict, val: B.Stream, test: B.Stream) -> dict:
    """``result`` with its rows labelled by ``val`` and ``test`` (the same observations, other labels: another
    omission rule), its points chosen again on validation and its test scored again."""
    def labels(s: B.Stream) -> dict:
        return {(r.video, i): y for r in s.recordings for i, y in enumerate(r.labels)}

    lv, lt = labels(val), labels(test)
    v = [r | {"label": lv[(r["video"], r["index"])]} for r in result["validation_rows"]]
    t = [r | {"label": lt[(r["video"], r["index"])]} for r in result["rows"]]
    points = None if result["monitor"] in FIXED else choose(v)
    v, t = apply(v, points), apply(t, points)
    return result | {"validation": {**result["validation"], "objective": round(_objective(v), 4)},
                     "test": CMX.complete_metrics(t), "rows": t, "validation_rows": v}
