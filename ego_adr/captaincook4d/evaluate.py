"""Running every monitor on a CaptainCook4D benchmark: fitted on the training split, its operating points (and a
procedure monitor's checks) chosen on the validation split, then scored once on the test split.

**No cross-validation here**: the authors' split has a validation split of 62 recordings with real labelled
mistakes (214 positive observations on ``captaincook4d-complete``), so nothing needs to be chosen on constructed
mistakes or on folds of the training recordings. For each monitor:

1. it is built from :data:`.registry.REGISTRY` (the step streams' monitors and ours) and fitted on
   :class:`.benchmark.Training` (the registered ones still run their own internal selection on the correct
   training sequences, as they do everywhere);
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
printed after it, named so. A monitor that needs a model (``prego``, ``prego-lm``) runs with ``--model`` (the
driver loads it once and gives it here as ``model``), built with ``folds=0`` (``prego-lm`` then skips its own
cross-validation on constructed mistakes: its threshold is chosen on the validation split like every other
monitor's) and never kept in the fit cache (it holds the model; the stage cache keeps its answers); without
``--model`` it is listed as not run. How stable that
choice is, and when it is a tie, is :mod:`.choice`'s. The command (:mod:`.driver`) runs one monitor per call of
:func:`run_one`, each in its folder.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import monitors as CM
from ego_adr.captaincook4d import registry as CR
from ego_adr.monitoring.monitor import stepped
from ego_adr.monitoring.numerics import stable
from ego_adr.monitoring.per_step import step_row
from ego_adr.online_mistakes import complete_metrics as CMX
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.types import StepContext
from ego_adr.store import build_once, cache_root

FIXED = ("flag-all", "never-alarm", *CR.REFERENCE)


def group(name: str) -> str:
    """How a row is read: blind, reference, supervised, official graph, learned graph, language model (a monitor
    that needs a model: never the headline), or no graph given (the registered step-stream monitors: given no
    graph, some learn their own from the training sequences)."""
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
    if CR.REGISTRY.get(name).needs_model:
        return CR.MODEL_GROUP
    return "no graph given"


def truth(rec: B.Recording) -> dict:
    first = next((i for i, y in enumerate(rec.labels) if y), None)
    kinds = sorted({k for ks, y in zip(rec.kinds, rec.labels) if y for k in ks})
    return {"errorful": first is not None, "error_onset": first, "error_types": kinds}


def feed(monitor, train: B.Training, stream: B.Stream, progress: bool = False, label: str = "") -> list[dict]:
    """Every recording through the fitted ``monitor``, one observation at a time; the per-step rows. ``progress``:
    a bar over the steps on stderr (a monitor that asks a model takes minutes)."""
    rows = []
    for rec, outs in stepped(monitor, stream.recordings, lambda r: StepContext(stream.benchmark, r.video,
                                                                               train.taxonomy),
                             progress=progress, desc=f"{label or 'monitor'} {stream.split}"):
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


def _fitted(name: str, train: B.Training, options: dict, key: str | None = None, model=None):
    """``name`` built with ``options`` and fitted on ``train``, and the CPU seconds it took; with ``key``, kept under
    the cache root (``captaincook4d-fits/<key>/monitor.pkl``) and read back from there by the next run of the same
    key (:func:`fit_key`: the other CaptainCook4D benchmark fits the same monitors on the same training split). A
    monitor that cannot be pickled is fitted each time; one given a ``model`` is never kept (module docstring)."""
    t0 = time.process_time()
    folder = cache_root() / "captaincook4d-fits" / key if key else None
    if folder is not None and (folder / "monitor.pkl").is_file():
        try:
            return pickle.loads((folder / "monitor.pkl").read_bytes()), time.process_time() - t0
        except Exception:  # noqa: BLE001 - a damaged or stale cache file is refitted, never trusted
            pass
    given = {"model": model, "folds": 0} if model is not None else {}
    mon = CR.REGISTRY.build(name, stream="oracle", **options, **given)
    mon.fit(train)
    if folder is not None:
        try:
            blob = _pickled(mon)
        except Exception:  # noqa: BLE001 - whatever pickle refuses (a lambda, a handle): no cache for this one
            blob = None
        if blob is not None:
            def write(tmp: Path) -> None:
                tmp.mkdir(parents=True)
                (tmp / "monitor.pkl").write_bytes(blob)

            build_once(folder, write, lambda f: (f / "monitor.pkl").is_file())
    return mon, time.process_time() - t0


def _pickled(mon) -> bytes:
    """``mon`` pickled; a fitted next-step network (whose torch module is a class local to its builder, which pickle
    cannot name) as what its public ``state()`` holds, rebuilt by ``NextStepModel.from_state``."""
    import io

    from ego_adr.monitoring.next_step_model import NextStepModel

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj):
            if isinstance(obj, NextStepModel) and obj.net is not None:
                return NextStepModel.from_state, (obj.state(),)
            return NotImplemented

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(mon)
    return buf.getvalue()


def fit_key(name: str, options: dict, data_sha256: str, rule: str) -> str:
    """What a fit depends on: the monitor, its options, the files read, the omission rule (the supervised labels),
    and the code and numerical libraries (any change to ``ego_adr`` refits)."""
    import json

    doc = {"monitor": name, "options": options, "data": data_sha256, "rule": rule, "code": code_digest(),
           "numpy": np.__version__, "torch": _version("torch")}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:32]


@functools.cache
def code_digest() -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _scored(name: str, mon, data: B.Data, points, val: list[dict], obj: float, tried: dict,
            progress: bool = False) -> dict:
    """The monitor's result on the test rows; what the monitor says of itself where it says it: its deviations from
    the published method, what it reads off its own rows (``summarise``: prego-lm's top-1 next step) and its files
    (``files``: prego-lm's prompts.json), as the step streams write them."""
    test = apply(feed(mon, data.train, data.test, progress, name), points)
    own = {"deviations": list(mon.deviations)} if getattr(mon, "deviations", None) else {}
    if hasattr(mon, "summarise"):
        own |= mon.summarise(test)
    return {"monitor": name, "group": group(name), "reads": list(CR.REGISTRY.get(name).reads),
            "validation": {"objective": round(obj, 4), "choices": tried,
                           "points": {k: {"threshold": round(v[0], 6), **v[1]} for k, v in (points or {}).items()},
                           "macro_f1": round(CMX.step_block(val)["macro_f1"], 4)},
            "test": CMX.complete_metrics(test), "selection": getattr(mon, "selection", None),
            "stats": mon.stats() if hasattr(mon, "stats") else {}, **own, "rows": test, "validation_rows": val,
            "files": dict(getattr(mon, "files", None) or {})}


def candidates(name: str, options: dict | None) -> tuple[list[dict], bool]:
    """The option sets ``name`` is run with (the validation split picks one) and whether that is a choice: a
    procedure monitor's ``checks=validation`` (its default) tries every set of :data:`.monitors.CHOICES`; any other
    option is given, not chosen."""
    options = dict(options or {})
    if options.get("checks") == CM.CHOSEN:
        return [options | {"checks": c} for c in CM.CHOICES["checks"]], True
    return [options], False


def run_one(name: str, datas: Sequence[B.Data], options: dict | None = None, data_sha256: str | None = None,
            rule: str = "graph", model=None, progress: bool = False) -> list[dict]:
    """One monitor through the three steps of the module docstring on each of ``datas`` (benchmarks that share
    one training split: it is fitted once per option set); a result per benchmark, with its test and validation
    rows. ``options``: its ``--monitor-option``s, resolved (default: the registry's defaults); ``data_sha256``: the
    digest of the files read, to keep the fits in the cache (:func:`_fitted`; None: not kept); ``model``: the loaded
    model of a monitor that needs one; ``progress``: a bar over the validation and test steps on stderr."""
    given = CR.REGISTRY.resolve_options(name, {}) if options is None else options
    options, chosen = candidates(name, given)
    keep = data_sha256 and model is None
    fitted = [_fitted(name, datas[0].train, opt, fit_key(name, opt, data_sha256, rule) if keep else None, model)
              for opt in options]
    out = []
    for data in datas:
        tried = []
        for i, (opt, (mon, _)) in enumerate(zip(options, fitted)):
            val = feed(mon, data.train, data.val, progress, name)
            points = None if name in FIXED else choose(val)
            val = apply(val, points)
            tried.append((_objective(val), -i, opt, mon, points, val))
        obj, _, opt, mon, points, val = max(tried, key=lambda x: (x[0], x[1]))
        shown = {k: v for k, v in opt.items() if chosen and k in CM.CHOICES}
        if not chosen and isinstance(getattr(mon, "selection", None), dict) and "checks" in opt:
            mon.selection = mon.selection | {"chosen_by": f"given: --monitor-option checks={opt['checks']}"}
        res = _scored(name, mon, data, points, val, obj,
                      {",".join(str(t[2][k]) for k in shown) or "-": round(t[0], 4) for t in tried}, progress)
        out.append(res | {"options": shown, "given_options": given,
                          "fit_cpu_seconds": round(sum(f for _, f in fitted), 2)})
    return out


def headline(results: Sequence[dict], groups: Sequence[str] | None = None) -> str | None:
    """The candidate of best validation objective (module docstring; ``groups``: only those); ties: run order."""
    cands = [r for r in results if r["group"] not in CR.NOT_CANDIDATES and (not groups or r["group"] in groups)]
    return max(cands, key=lambda r: r["validation"]["objective"])["monitor"] if cands else None


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
