"""Choosing the headline monitor without the test: nested cross-validation over the training recordings, repeated
over outer-fold seeds fixed in advance.

Every learned monitor tunes itself inside ``fit`` by cross-validation on the training recordings
(:mod:`ego_adr.online_mistakes.cv`) and records what its tuning reached under one key, ``selection.cv_score``
(``objective``: the mean of macro F1 and F1b at the chosen setting). Those numbers cannot be compared across
monitors: each is the best of its own grid on the very episodes it was chosen on, and the grids differ by orders of
magnitude (about 2,000 settings for ``egoadr-graph``, 57 for ``stacked``, 2 for an n-gram's score), so the larger
grid wins by its optimism. The comparison is therefore made one level up, on recordings no monitor tuned on:

- **outer folds**: :data:`OUTER_FOLDS` folds over the training recordings (:func:`cv.folds`; leave-one-out when
  there are fewer recordings), drawn once for each seed of :data:`OUTER_SEEDS`;
- for each seed and outer fold, every candidate is built and fitted by :func:`ego_adr.online_mistakes.fitting.fitted`
  (the one builder: the run's training set as :func:`~ego_adr.online_mistakes.fitting.configured` for its stream,
  reduced to the fold's fit recordings, so ``dtgl-do`` trains DTGL's config of the run's steps) -- its whole tuning,
  inner cross-validation included, sees nothing else; its ``--monitor-option``s are those of its test row -- then
  streamed over validation episodes built from the fold's held-out recordings (:func:`cv.construct` with the
  benchmark's plan: the same kinds of constructed mistake as every inner validation, through the same
  recogniser-noise channel on a recogniser's stream);
- per seed, each monitor's rows of that seed's outer folds are pooled and scored as the test is: macro F1 at its
  macro-F1 operating point, F1b at its F1b point (:func:`ego_adr.monitoring.step_metrics.scored`); ``objective``
  is their mean;
- **the rule**: the chosen monitor is the candidate of highest *mean* objective over the seeds (ties: registry
  order). Each seed's own choice (its highest objective) is recorded beside it (``seeds``), with ``agreement``, the
  share of seeds whose own choice is the chosen monitor. Candidates are the monitors that read only the task input,
  are neither blind baselines nor reference rules (:data:`~ego_adr.online_mistakes.registry.BLIND`,
  :data:`~ego_adr.online_mistakes.registry.REFERENCE`) and need no model (an LLM's replies on every validation step
  are not part of a CPU run). The blind baselines and reference rules are scored the same way and shown, never
  chosen. Whether a verdict on the test survives the seeds' choices is :mod:`.goal`'s (``tie``).

**The seeds** are 1 (the outer seed of the single selection before issue 42, not the inner folds' 0) and the next
four: fixed in this file before the repeated selection was first run, never chosen by looking at its results.
``--selection-seeds`` runs others (recorded in ``summary.json`` and the folder's identity).

Nothing here reads a test file: :func:`record` takes the training set alone, so the choice is the same whatever the
test labels are (``tests/online_mistakes/test_selection.py`` shuffles them under a fresh cache). **Each fold is kept**
under the cache root (``online_mistakes/selection-folds/<key>.json``: the rows scoring needs, per monitor), the key
digesting what the rows depend on -- the fold's fit recordings and its validation episodes, the steps and recogniser
noise of the run, the monitor and its options, the code of ``online_mistakes/`` (but the modules that only read
results, :data:`READERS`) and of ``monitoring/``, the library versions -- so a rerun, another stream of the same kind (``oracle`` and ``oracle-merged``) and the complete trials
on the same training set read the folds back, and a new monitor costs only its own folds. Missing folds run as
:mod:`.workers` tasks, one per (monitor group, seed, outer fold), beside the command's own fits.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import statistics
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ego_adr.models.compat import runtime_versions
from ego_adr.monitoring.step_metrics import scored
from ego_adr.monitoring.workers import run_tasks
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.data.cut import Recording, Stream
from ego_adr.online_mistakes.fitting import feed, fitted
from ego_adr.online_mistakes.registry import BLIND, REFERENCE, REGISTRY
from ego_adr.online_mistakes.types import TrainingSet
from ego_adr.online_mistakes.workers import groups
from ego_adr.store import cache_root, write_json

OUTER_FOLDS = 5
#: The outer-fold seeds, fixed in advance (module docstring); ``--selection-seeds`` replaces them.
OUTER_SEEDS = (1, 2, 3, 4, 5)
KEPT = ("episode", "index", "label", "p_error", "flagged", "flagged_for")  # what scoring a fold's rows reads
RULE = ("the candidate (reads only the task input, neither a blind baseline nor a reference rule, needs no model) "
        f"of highest mean nested cross-validated objective over the outer-fold seeds: per seed, {OUTER_FOLDS} "
        "outer folds over the training recordings, each monitor fitted (its own tuning included) on the outer fit "
        "recordings only and scored on constructed mistakes of the held-out ones; objective = mean of macro F1 (at "
        "its macro-F1 operating point) and F1b (at its F1b point)")

Key = tuple[int, int, str]  # (seed, outer fold, monitor)


def check_seeds(seeds: Sequence) -> tuple[int, ...]:
    """The outer-fold seeds as integers; ValueError for none, a repeated one or one that is not a whole number."""
    try:
        out = tuple(int(s) for s in seeds)
    except (TypeError, ValueError):
        raise ValueError(f"{list(seeds)} is not a list of whole numbers") from None
    if not out:
        raise ValueError("no seed given")
    twice = next((s for s in out if out.count(s) > 1), None)
    if twice is not None:
        raise ValueError(f"seed {twice} is given twice")
    return out


def options_of(names: Sequence[str], options: dict | None) -> dict[str, dict]:
    """Each monitor's options with its defaults filled in, as the command resolves them: one fold has one key,
    whoever asks for it."""
    return {n: {k: o.default for k, o in REGISTRY.options(n).items()} | dict((options or {}).get(n, {}))
            for n in names}


def candidates(names: Sequence[str]) -> list[str]:
    """The monitors of ``names`` the rule may choose (module docstring)."""
    return [n for n in names if n in REGISTRY and not REGISTRY.privileged(REGISTRY.get(n)) and n not in BLIND
            and n not in REFERENCE and not REGISTRY.get(n).needs_model]


def outer_streams(train: TrainingSet, seed: int) -> list[tuple[TrainingSet, Stream]]:
    """Seed ``seed``'s outer folds: (the fold's fit recordings, as ``train`` gives them, every other field kept;
    the validation episodes of its held-out recordings as a stream)."""
    seqs = [tuple(int(x) for x in s) for s in train.sequences]
    plan = cv.plan(train.benchmark, [s for s in seqs if s], sorted(train.taxonomy), OUTER_FOLDS, seed, train.noise)
    out = []
    for j, (fit, held) in enumerate(cv.folds(len(seqs), OUTER_FOLDS, seed)):
        held = [i for i in held if seqs[i]]
        eps = cv.construct(seqs, held, plan, seed * 1000 + j)
        name = (lambda i: train.videos[i]) if train.videos else (lambda i: f"training-{i}")
        recs = tuple(Recording(f"{name(e.source)}#outer{seed}.{j}-{n}", e.steps) for n, e in enumerate(eps))
        sub = dataclasses.replace(train, sequences=tuple(train.sequences[i] for i in fit),
                                  videos=tuple(train.videos[i] for i in fit) if train.videos else ())
        out.append((sub, Stream(train.benchmark, f"outer fold {j} (seed {seed})", "training recordings", "-", recs)))
    return out


#: The step-stream modules that only read results (reports, goal rows, the commands around the selection, the
#: published rows, the complete trials' labels, the download): no fold's rows depend on them, so a change to them
#: (a report's wording) keeps the kept folds. Every other module of ``online_mistakes/`` and ``monitoring/`` is in
#: the key, a new one included; ``tests/online_mistakes/test_selection.py`` checks that no module in the key imports one
#: of these. Paths are relative to ``online_mistakes/``: keep them right when a module moves or is renamed.
READERS = ("benchmarks.py", "driver.py", "goal.py", "report.py", "evaluate.py", "complete_eval.py", "complete_metrics.py",
           "complete_report.py", "published.py", "data/complete.py", "data/sources.py", "data/download.py",
           "data/convert.py")


def code_files() -> list[Path]:
    """The files whose code a fold's rows follow: the step-stream benchmarks' but :data:`READERS`, and the monitoring
    layer's but its command line (``monitoring/__main__.py``, which nothing imports)."""
    pkg = Path(__file__).resolve().parents[1]
    room = pkg / "online_mistakes"
    own = [f for f in room.rglob("*.py") if f.relative_to(room).as_posix() not in READERS]
    return sorted([*own, *(f for f in (pkg / "monitoring").rglob("*.py") if f.name != "__main__.py")])


@lru_cache(maxsize=1)
def _code() -> str:
    """The digest of :func:`code_files`."""
    h = hashlib.sha256()
    for f in code_files():
        h.update(f.read_bytes())
    return h.hexdigest()


def fold_key(sub: TrainingSet, stream: Stream, name: str, options: dict) -> str:
    """What one monitor's rows on one outer fold depend on (module docstring)."""
    doc = [sub.benchmark, [list(s) for s in sub.sequences], list(sub.videos),
           sorted([int(k), v] for k, v in sub.taxonomy.items()), [list(x) for x in sub.noise], sub.steps,
           [[r.video, list(r.steps)] for r in stream.recordings], name, options.get(name, {}), runtime_versions(),
           _code()]
    return hashlib.sha256(json.dumps(doc, default=str, sort_keys=True).encode()).hexdigest()[:32]


def _folder() -> Path:
    return cache_root() / "online_mistakes" / "selection-folds"


def _path(key: str) -> Path:
    return _folder() / f"{key}.json"


def _read(key: str) -> list[dict] | None:
    try:
        return json.loads(_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not there yet, or damaged: recomputed, never trusted
        return None


def fold_rows(train: TrainingSet, seed: int, j: int, names: Sequence[str], options: dict) -> dict[str, list[dict]]:
    """One task of the nested selection: each monitor of ``names`` (one group: they share their fits in this
    process) fitted on seed ``seed``'s outer fold ``j`` (:func:`ego_adr.online_mistakes.fitting.fitted`, with its
    ``options``) and streamed over the fold's validation episodes; the rows scoring reads."""
    sub, stream = outer_streams(train, seed)[j]
    return {n: [{k: r[k] for k in KEPT if k in r} for r in feed(fitted(n, sub, **options.get(n, {})), sub, stream)]
            for n in names}


def plan(train: TrainingSet, names: Sequence[str], options: dict, seeds: Sequence[int]
         ) -> tuple[dict[Key, list[dict]], dict[Key, str], list[tuple[tuple[str, ...], tuple[int, int], tuple]]]:
    """The folds already kept ({(seed, fold, monitor): rows}), every fold's key, and the :mod:`.workers` tasks
    that compute the others: (group, (seed, fold), task), one per group, seed and fold with a monitor missing,
    for that group's missing monitors, costly groups first."""
    keys: dict[Key, str] = {}
    for seed in seeds:
        for j, (sub, stream) in enumerate(outer_streams(train, seed)):
            keys.update({(seed, j, n): fold_key(sub, stream, n, options) for n in names})
    have = {k: rows for k in keys if (rows := _read(keys[k])) is not None}
    todo = []
    for g in groups(list(names)):
        for seed, j in dict.fromkeys((s, j) for s, j, _ in keys):
            missing = tuple(n for n in g if (seed, j, n) not in have)
            if missing:
                todo.append((tuple(g), (seed, j), (fold_rows, (train, seed, j, missing, options))))
    return have, keys, todo


def _scores(rows: list[dict]) -> dict:
    m = scored(rows)
    return {"macro_f1": round(m["macro_f1"], 4), "balanced_f1": round(m["balanced_f1"], 4),
            "objective": round((m["macro_f1"] + m["balanced_f1"]) / 2, 4),
            "auroc": None if m["auroc"] is None else round(m["auroc"], 4),
            "steps": len(rows), "mistakes": sum(r["label"] for r in rows)}


def scores_of(names: Sequence[str], seeds: Sequence[int], rows: dict[Key, list[dict]]) -> dict[str, dict]:
    """{monitor: {objective, macro_f1, balanced_f1 (means over the seeds), by_seed: {seed: the seed's scores}}}:
    per seed, the monitor's rows of that seed's outer folds pooled and scored (module docstring)."""
    out = {}
    for n in names:
        by = {}
        for seed in seeds:
            pooled = [r for (s, _, m), rs in sorted(rows.items(), key=lambda kv: kv[0][:2]) if s == seed and m == n
                      for r in rs]
            if pooled:
                by[str(seed)] = _scores(pooled)
        if by:
            mean = {k: round(statistics.fmean(v[k] for v in by.values()), 4)
                    for k in ("objective", "macro_f1", "balanced_f1")}
            out[n] = mean | {"by_seed": by}
    return out


def choose(scores: dict[str, dict], seed: int | None = None) -> str | None:
    """The rule: the candidate of highest mean objective (or, with ``seed``, of highest objective under that seed);
    ties go to the earlier in registry order."""
    order = {n: i for i, n in enumerate(REGISTRY.names())}

    def objective(n: str) -> float:
        return scores[n]["objective"] if seed is None else scores[n]["by_seed"][str(seed)]["objective"]

    return max(candidates(list(scores)), key=lambda n: (objective(n), -order[n]), default=None)


def record(train: TrainingSet, names: Sequence[str], options: dict | None = None,
           seeds: Sequence[int] = OUTER_SEEDS, jobs: int = 1, found: tuple | None = None) -> dict:
    """``summary.json``'s ``selection``: the rule, the seeds, every monitor's nested scores (means and per seed),
    each seed's choice, the agreement and the choice. The folds come from the cache root where kept, else are
    computed (on ``jobs`` processes, or passed in ``found`` = (kept rows, keys, computed rows) by the
    benchmark's harness run, :meth:`~ego_adr.online_mistakes.benchmarks.StepStreams.selection`) and kept; ``fold_cache`` says how many of each."""
    names = [n for n in names if not REGISTRY.get(n).needs_model]
    opts = options_of(names, options)
    seeds = check_seeds(seeds)
    if found is None:
        have, keys, todo = plan(train, names, opts, seeds)
        done = run_tasks([t for *_, t in todo], jobs)
        new = {(s, j, n): rows for (_, (s, j), _), res in zip(todo, done) for n, rows in res.items()}
    else:
        have, keys, new = found
    for k, rows in new.items():
        path = _path(keys[k])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, rows)
    scores = scores_of(names, seeds, have | new)
    chosen = choose(scores)
    per_seed = [{"seed": s, "chosen": choose(scores, s)} for s in seeds]
    sel = {"rule": RULE, "outer_folds": OUTER_FOLDS, "outer_seeds": list(seeds), "steps": train.steps,
           "recogniser_noise": dict(train.noise), "options": {n: opts.get(n, {}) for n in scores},
           "candidates": candidates(list(scores)), "scores": scores, "seeds": per_seed,
           "agreement": round(sum(p["chosen"] == chosen for p in per_seed) / len(per_seed), 4) if chosen else None,
           "chosen": chosen,
           "fold_cache": {"folder": str(_folder()), "read": len(have), "computed": len(new)}}
    return json.loads(json.dumps(sel, default=str))  # as a reader gets it back (an option's tuple is a list)
