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
  tuning, inner cross-validation included, sees nothing else -- then streamed over validation episodes built from
  the fold's held-out recordings (:func:`cv.construct` with the benchmark's plan: the same kinds of constructed
  mistake as every inner validation, through the same recogniser-noise channel on a recogniser's stream);
- each monitor's rows of all outer folds are pooled and scored as the test is: macro F1 at its macro-F1 operating
  point, F1b at its F1b point (:func:`ego_adr.monitoring.step_metrics.scored`); ``objective`` is their mean;
- **the rule**: the chosen monitor is the candidate of highest outer ``objective`` (ties: registry order).
  Candidates are the monitors that read only the task input, are not blind baselines
  (:data:`~ego_adr.online_mistakes.registry.BLIND`) and need no model (an LLM's replies on every validation step
  are not part of a CPU run). The blind baselines are scored the same way and shown, never chosen.

Nothing here reads a test file: :func:`nested_scores` takes the training set alone, so the choice is the same
whatever the test labels are (``tests/monitoring/test_selection.py``). The scores of one training set are memoised
in the process (every stream of a benchmark shares them).
"""

from __future__ import annotations

from collections.abc import Sequence

from ego_adr.monitoring.step_metrics import scored
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.data import Recording, Stream
from ego_adr.online_mistakes.harness import feed
from ego_adr.online_mistakes.registry import BLIND, REGISTRY
from ego_adr.online_mistakes.types import TrainingSet

OUTER_FOLDS = 5
OUTER_SEED = 1  # not the inner folds' seed 0: the outer split is not one of the splits the monitors tune on
RULE = ("the candidate (reads only the task input, not a blind baseline, needs no model) of highest nested "
        f"cross-validated objective: {OUTER_FOLDS} outer folds over the training recordings, each monitor fitted "
        "(its own tuning included) on the outer fit recordings only and scored on constructed mistakes of the "
        "held-out ones; objective = mean of macro F1 (at its macro-F1 operating point) and F1b (at its F1b point)")

_MEMO: dict[tuple, dict[str, dict]] = {}


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


def nested_scores(train: TrainingSet, names: Sequence[str]) -> dict[str, dict]:
    """{monitor: {macro_f1, balanced_f1, objective, auroc, steps, mistakes}} on the pooled outer validation of
    ``train`` (module docstring); monitors that need a model are left out."""
    names = [n for n in names if not REGISTRY.get(n).needs_model]
    key = (train.benchmark, tuple(map(tuple, train.sequences)), tuple(train.videos),
           tuple(sorted(train.taxonomy.items())), train.noise, tuple(names))
    if key in _MEMO:
        return _MEMO[key]
    folds = _outer_streams(train)
    out = {}
    for name in names:
        rows = []
        for sub, stream in folds:
            monitor = REGISTRY.build(name)
            monitor.fit(sub)
            rows += feed(monitor, sub, stream)
        m = scored(rows)
        out[name] = {"macro_f1": round(m["macro_f1"], 4), "balanced_f1": round(m["balanced_f1"], 4),
                     "objective": round((m["macro_f1"] + m["balanced_f1"]) / 2, 4),
                     "auroc": None if m["auroc"] is None else round(m["auroc"], 4),
                     "steps": len(rows), "mistakes": sum(r["label"] for r in rows)}
    _MEMO[key] = out
    return out


def choose(scores: dict[str, dict]) -> str | None:
    """The rule: the candidate of highest outer objective; ties go to the earlier in registry order."""
    cands = candidates(list(scores))
    order = {n: i for i, n in enumerate(REGISTRY.names())}
    return max(cands, key=lambda n: (scores[n]["objective"], -order[n]), default=None)


def record(train: TrainingSet, names: Sequence[str]) -> dict:
    """``summary.json``'s ``selection``: the rule, the outer folds, every monitor's nested scores, the choice."""
    scores = nested_scores(train, names)
    return {"rule": RULE, "outer_folds": OUTER_FOLDS, "outer_seed": OUTER_SEED, "recogniser_noise": dict(train.noise),
            "candidates": candidates(list(scores)), "scores": scores, "chosen": choose(scores)}
