"""Choosing the headline monitor without the test: nested cross-validation over the training recordings.

Every learned monitor tunes itself inside ``fit`` by cross-validation on the training recordings
(:mod:`ego_adr.online_mistakes.cv`) and records what its tuning reached under one key, ``selection.cv_score``
(``objective``: the mean of macro F1 and F1b at the chosen setting). Those numbers cannot be compared across
monitors: each is the best of its own grid on the very episodes it was chosen on, and the grids differ by orders of
magnitude (about 2,000 settings for ``egoadr-graph``, 57 for ``stacked``, 2 for an n-gram's score), so the larger
grid wins by its optimism. The comparison is therefore made one level up, on recordings no monitor tuned on:

- **outer folds**: :data:`OUTER_FOLDS` folds over the training recordings (:func:`cv.folds`, seed
  :data:`OUTER_SEED`; leave-one-out when there are fewer recordings);
- for each outer fold, every candidate is built fresh and fitted on that fold's fit recordings only -- its whole
  tuning, inner cross-validation included, sees nothing else; its ``--monitor-option``s are those of its test
  row -- then streamed over validation episodes built from
  the fold's held-out recordings (:func:`cv.construct` with the benchmark's plan: the same kinds of constructed
  mistake as every inner validation, through the same recogniser-noise channel on a recogniser's stream);
- each monitor's rows of all outer folds are pooled and scored as the test is: macro F1 at its macro-F1 operating
  point, F1b at its F1b point (:func:`ego_adr.monitoring.step_metrics.scored`); ``objective`` is their mean;
- **the rule**: the chosen monitor is the candidate of highest outer ``objective`` (ties: registry order).
  Candidates are the monitors that read only the task input, are not blind baselines
  (:data:`~ego_adr.online_mistakes.registry.BLIND`) and need no model (an LLM's replies on every validation step
  are not part of a CPU run). The blind baselines are scored the same way and shown, never chosen.

Nothing here reads a test file: :func:`nested_scores` takes the training set alone, so the choice is the same
whatever the test labels are (``tests/monitoring/test_selection.py``). The selection of one training set, its monitors and
their options is kept under the cache root (:func:`record`); its fits run as :mod:`.workers` tasks, one per
(monitor group, outer fold), beside the command's own fits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from ego_adr.models.compat import runtime_versions
from ego_adr.monitoring.step_metrics import scored
from ego_adr.online_mistakes import cv, workers
from ego_adr.online_mistakes.data import Recording, Stream
from ego_adr.online_mistakes.harness import feed
from ego_adr.online_mistakes.registry import BLIND, REGISTRY
from ego_adr.online_mistakes.types import TrainingSet
from ego_adr.online_mistakes.workers import groups
from ego_adr.store import cache_root, write_json

OUTER_FOLDS = 5
OUTER_SEED = 1  # not the inner folds' seed 0: the outer split is not one of the splits the monitors tune on
RULE = ("the candidate (reads only the task input, not a blind baseline, needs no model) of highest nested "
        f"cross-validated objective: {OUTER_FOLDS} outer folds over the training recordings, each monitor fitted "
        "(its own tuning included) on the outer fit recordings only and scored on constructed mistakes of the "
        "held-out ones; objective = mean of macro F1 (at its macro-F1 operating point) and F1b (at its F1b point)")


def candidates(names: Sequence[str]) -> list[str]:
    """The monitors of ``names`` the rule may choose (module docstring)."""
    return [n for n in names if n in REGISTRY and not REGISTRY.privileged(REGISTRY.get(n)) and n not in BLIND
            and not REGISTRY.get(n).needs_model]


def _subset(train: TrainingSet, idx: Sequence[int]) -> TrainingSet:
    return TrainingSet(train.benchmark, tuple(train.sequences[i] for i in idx), train.taxonomy,
                       tuple(train.videos[i] for i in idx) if train.videos else (), train.noise)


def _outer_streams(train: TrainingSet) -> list[tuple[TrainingSet, Stream]]:
    seqs = [tuple(int(x) for x in s) for s in train.sequences]
    plan = cv.plan(train.benchmark, [s for s in seqs if s], sorted(train.taxonomy), OUTER_FOLDS, OUTER_SEED,
                   train.noise)
    out = []
    for j, (fit, held) in enumerate(cv.folds(len(seqs), OUTER_FOLDS, OUTER_SEED)):
        held = [i for i in held if seqs[i]]
        eps = cv.construct(seqs, held, plan, OUTER_SEED * 1000 + j)
        name = (lambda i: train.videos[i]) if train.videos else (lambda i: f"training-{i}")
        recs = tuple(Recording(f"{name(e.source)}#outer{j}-{n}", e.steps) for n, e in enumerate(eps))
        out.append((_subset(train, fit), Stream(train.benchmark, f"outer fold {j}", "training recordings", "-",
                                                recs)))
    return out


def _key(train: TrainingSet, names: Sequence[str], options: dict) -> str:
    """What the nested scores depend on: the training set (its recogniser noise included), the monitors and their
    options, the code of the step-stream benchmarks and the monitoring layer, the library versions (a learned
    monitor's weights follow torch)."""
    h = hashlib.sha256(json.dumps([train.benchmark, [list(x) for x in train.sequences], list(train.videos),
                                   sorted(train.taxonomy.items()), sorted(dict(train.noise).items()), list(names),
                                   {n: options.get(n, {}) for n in names}, runtime_versions()],
                                  default=str).encode())
    pkg = Path(__file__).resolve().parents[1]
    for f in sorted([*(pkg / "online_mistakes").rglob("*.py"), *(pkg / "monitoring").rglob("*.py")]):
        h.update(f.read_bytes())
    return h.hexdigest()[:32]


def fold_rows(train: TrainingSet, j: int, group: Sequence[str], options: dict) -> dict[str, list[dict]]:
    """One task of the nested selection: each monitor of ``group`` built fresh (with its ``options``), fitted on
    outer fold ``j``'s fit recordings and streamed over its validation episodes (a :mod:`.workers` task: the
    monitors of one group share their fits in this process)."""
    sub, stream = _outer_streams(train)[j]
    out = {}
    for name in group:
        monitor = REGISTRY.build(name, **options.get(name, {}))
        monitor.fit(sub)
        out[name] = feed(monitor, sub, stream)
    return out


def tasks(train: TrainingSet, names: Sequence[str], options: dict | None = None) -> list[tuple]:
    """The nested selection as :mod:`.workers` tasks, one per (monitor group, outer fold), costly groups first;
    :func:`from_tasks` turns their results into :func:`nested_scores`."""
    names = [n for n in names if not REGISTRY.get(n).needs_model]
    opts = {n: dict((options or {}).get(n, {})) for n in names}
    return [(fold_rows, (train, j, g, opts)) for g in groups(names) for j in range(OUTER_FOLDS)]


def from_tasks(names: Sequence[str], results: Sequence[dict[str, list[dict]]]) -> dict[str, dict]:
    """{monitor: {macro_f1, balanced_f1, objective, auroc, steps, mistakes}}: each monitor's rows of every outer
    fold pooled and scored (module docstring)."""
    pooled: dict[str, list[dict]] = {}
    for res in results:
        for name, rows in res.items():
            pooled.setdefault(name, []).extend(rows)
    out = {}
    for name in [n for n in names if n in pooled]:
        rows = pooled[name]
        m = scored(rows)
        out[name] = {"macro_f1": round(m["macro_f1"], 4), "balanced_f1": round(m["balanced_f1"], 4),
                     "objective": round((m["macro_f1"] + m["balanced_f1"]) / 2, 4),
                     "auroc": None if m["auroc"] is None else round(m["auroc"], 4),
                     "steps": len(rows), "mistakes": sum(r["label"] for r in rows)}
    return out


def nested_scores(train: TrainingSet, names: Sequence[str], options: dict | None = None, jobs: int = 1
                  ) -> dict[str, dict]:
    """:func:`from_tasks` of :func:`tasks`, run on ``jobs`` processes (the same numbers for any ``jobs``);
    monitors that need a model are left out."""
    return from_tasks(names, workers.run(tasks(train, names, options), jobs))


def choose(scores: dict[str, dict]) -> str | None:
    """The rule: the candidate of highest outer objective; ties go to the earlier in registry order."""
    cands = candidates(list(scores))
    order = {n: i for i, n in enumerate(REGISTRY.names())}
    return max(cands, key=lambda n: (scores[n]["objective"], -order[n]), default=None)


def cached(train: TrainingSet, names: Sequence[str], options: dict | None = None) -> tuple[Path, dict | None]:
    """Where the selection of this training set, these monitors and options is kept under the cache root, and
    what is there (None: nothing yet)."""
    path = cache_root() / "online_mistakes" / "selection" / f"{_key(train, names, options or {})}.json"
    if path.is_file():
        try:
            return path, json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a damaged cache file is recomputed, never trusted
            return path, None
    return path, None


def record(train: TrainingSet, names: Sequence[str], options: dict | None = None, scores: dict | None = None
           ) -> dict:
    """``summary.json``'s ``selection``: the rule, the outer folds, every monitor's nested scores, the choice.
    ``scores`` computed by the caller (:func:`tasks` run beside its own work) or, without them, read from the
    cache or computed here; either way kept under the cache root (:func:`cached`), so the nested fits are paid
    once per training set, monitors and code, not once per run. ``cached`` names the file when it was read."""
    path, sel = cached(train, names, options)
    if sel is not None and scores is None:
        return sel | {"cached": str(path)}
    if scores is None:
        scores = nested_scores(train, names, options)
    sel = {"rule": RULE, "outer_folds": OUTER_FOLDS, "outer_seed": OUTER_SEED,
           "recogniser_noise": dict(train.noise), "options": {n: (options or {}).get(n, {}) for n in scores},
           "candidates": candidates(list(scores)), "scores": scores, "chosen": choose(scores)}
    sel = json.loads(json.dumps(sel, default=str))  # as the cache gives it back (an option's tuple is a list)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, sel)
    return sel


def run_beside(train: TrainingSet, names: Sequence[str], options: dict, jobs: int, here: Callable[[str], dict],
               group_task: Callable[[list[str]], tuple]) -> tuple[dict[str, dict], dict]:
    """``--monitor all``'s work: each monitor's own run and the nested selection (unless cached) together. The
    monitors that need a model run here (``here(name)``: their model is in this process); the others, one
    :mod:`.workers` task per group (``group_task(group)``: a task returning the group's results), and the
    selection's fits are spread over ``jobs`` processes. ({monitor: result}, :func:`record`)."""
    own = [n for n in names if REGISTRY.get(n).needs_model]
    by = {n: here(n) for n in own}
    _, sel = cached(train, names, options)
    folds = 0 if sel is not None else OUTER_FOLDS
    opts = {n: dict(options.get(n, {})) for n in names if n not in own}
    # group by group, the group's own run then its outer folds: the costly groups first (workers.groups), so
    # the tasks left for the end are the cheap ones and neither process waits long for the other
    work = [t for g in groups(list(opts)) for t in
            [("own", group_task(g)), *(("fold", (fold_rows, (train, j, g, opts))) for j in range(folds))]]
    done = workers.run([t for _, t in work], jobs)
    by |= {res["monitor"]: res for (kind, _), rs in zip(work, done) if kind == "own" for res in rs}
    scores = from_tasks(names, [r for (kind, _), r in zip(work, done) if kind == "fold"]) if folds else None
    return by, record(train, names, options, scores)
