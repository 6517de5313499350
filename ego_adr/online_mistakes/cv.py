"""Cross-validation for step-stream monitors: folds over the training recordings, validation mistakes built from
held-out correct sequences, and the threshold sweep every monitor chooses its operating point with.

Both benchmarks train on correct sequences only, so a monitor cannot be validated on real mistakes without reading
the test files. We build validation mistakes instead, of the kinds the source datasets' own mistake labels define
and that show in a step stream:

- **Assembly101** (assembly-101/assembly101-mistake-detection, README; Sener et al., CVPR 2022): a segment is a
  mistake when it is in the ``wrong order``, a consequence of one (``previous one is mistake``, never the first),
  a detach that ``shouldn't have happened``, or attached in the ``wrong position`` (the step id is then the
  correct one: invisible in a step stream). So: kinds ``order`` and ``unlisted`` (below): no correct recording
  detaches anything, so the taxonomy's detach steps are exactly the ones no training recording contains.
- **EPIC-Tent** (youngkyoonjang/EPIC_Tent2019, README; Jang et al., ICCVW 2019): error labels motor, misuse,
  order, failure, omit, search, correction, slow, repeat. Those that change the step sequence are ``order``,
  ``omit`` (a step skipped: the next one observed comes too early -- our ``order`` kind) and ``repeat``.
- PREGO (Flaborea et al., CVPR 2024, Sec. 4) and DTGL (Seminara et al., NeurIPS 2024, Sec. 4.3) cut each test
  recording at its first mistake; so a validation *episode* is a held-out correct recording cut at a position
  ``k`` chosen uniformly (its correct prefix ``s[:k]``) followed by one constructed mistake.

The kinds: ``order``: a step of the same recording from later on that has not been done yet (done too early, the
steps in between skipped); ``repeat``: a step the recording already did, again (not the step just done, which the
merged streams fold away, nor the true next step); ``unlisted``: a taxonomy step no training recording contains;
``foreign``: a training step this recording never does (only for a benchmark whose definitions we do not know:
:data:`DEFAULT_KINDS`). Each kind in equal numbers, since neither benchmark publishes a breakdown of its first
mistakes by kind. Constructed mistakes are noisy (a step taken early may be a permitted order): the noise is the
same for every candidate setting, so it moves the chosen threshold less than it moves the scores.

Folds are over recordings (a recording is never both fitted on and validated on). Everything is seeded and uses
sorted containers only, so selections are the same on every run and under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

KINDS = ("order", "repeat", "unlisted", "foreign")
#: The kinds each benchmark's own mistake definitions contain (module docstring).
BENCHMARK_KINDS = {"assembly101-o": ("order", "unlisted"), "epic-tent-o": ("order", "repeat")}
DEFAULT_KINDS = ("order", "repeat", "foreign")
#: Constructed mistakes aimed at per benchmark (at least 2 episodes of each kind per held-out recording).
TARGET_MISTAKES = 400


@dataclass(frozen=True)
class Episode:
    """One validation episode: a correct prefix of held-out recording ``source`` and the constructed mistake."""

    prefix: tuple[int, ...]
    mistake: int
    kind: str
    source: int

    @property
    def steps(self) -> tuple[int, ...]:
        return self.prefix + (self.mistake,)


#: The recogniser-noise channel of the validation episodes when the test stream is a recogniser's output (MiniRoad
#: or a file; issue 34 item 4): each step of an episode's correct prefix is, independently, deleted (missed by the
#: recogniser), else substituted by another step of the training vocabulary (confused), and then followed by a
#: flicker (another step for one detection, then the same step again). The rates are fixed here in advance, round
#: values chosen before any look at a recogniser's output and never fitted to a test stream; the constructed
#: mistake itself is left as it is (the benchmarks label a recording's last recognised step the mistake).
NOISE = (("deletion", 0.10), ("substitution", 0.10), ("flicker", 0.05))


@dataclass(frozen=True)
class Plan:
    """How a benchmark's validation is built: the kinds, the unlisted steps, episodes per kind and recording,
    folds, seed and the recogniser-noise channel (empty: none). Hashable, so fits on the same plan can be
    shared."""

    kinds: tuple[str, ...]
    unlisted: tuple[int, ...] = ()
    per_kind: int = 2
    k: int = 5
    seed: int = 0
    noise: tuple[tuple[str, float], ...] = ()

    def describe(self) -> dict:
        return {"kinds": list(self.kinds), "unlisted_steps": len(self.unlisted), "per_kind": self.per_kind,
                "folds": self.k, "seed": self.seed, "cut": "uniform", "recogniser_noise": dict(self.noise)}


def plan(benchmark: str, sequences: Sequence[Sequence[int]], taxonomy: Sequence[int], k: int = 5,
         seed: int = 0, noise: tuple[tuple[str, float], ...] = ()) -> Plan:
    """The validation plan of a training set: its benchmark's kinds (``unlisted`` only where the taxonomy has
    steps no recording contains), and enough episodes per kind for about :data:`TARGET_MISTAKES` mistakes."""
    used = {int(x) for s in sequences for x in s}
    unlisted = tuple(sorted(int(x) for x in taxonomy if int(x) not in used))
    kinds = tuple(c for c in BENCHMARK_KINDS.get(benchmark, DEFAULT_KINDS) if c != "unlisted" or unlisted)
    per = max(2, round(TARGET_MISTAKES / (max(len(sequences), 1) * max(len(kinds), 1))))
    return Plan(kinds, unlisted, per, k, seed, tuple(noise))


def folds(n: int, k: int = 5, seed: int = 0) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``k`` folds over ``n`` recordings as (fit indices, held-out indices); leave-one-out when ``n <= k``."""
    if n < 2:
        raise ValueError(f"cross-validation needs at least 2 training recordings, got {n}")
    k = min(k, n)
    order = random.Random(seed).sample(range(n), n)
    held = [sorted(order[i::k]) for i in range(k)]
    return [(tuple(i for i in range(n) if i not in set(h)), tuple(h)) for h in held]


def _order(s: tuple[int, ...], rng: random.Random) -> tuple[int, int] | None:
    cuts = [k for k in range(len(s) - 1) if any(x not in s[: k + 1] for x in s[k + 1 :])]
    if not cuts:
        return None
    k = rng.choice(cuts)
    return k, rng.choice(sorted({x for x in s[k + 1 :] if x not in s[: k + 1]}))


def _repeat(s: tuple[int, ...], rng: random.Random) -> tuple[int, int] | None:
    def options(k: int) -> list[int]:
        return sorted(set(s[: k - 1]) - {s[k - 1]} - ({s[k]} if k < len(s) else set()))

    cuts = [k for k in range(2, len(s) + 1) if options(k)]
    if not cuts:
        return None
    k = rng.choice(cuts)
    return k, rng.choice(options(k))


def _other(s: tuple[int, ...], vocab: Sequence[int], rng: random.Random) -> tuple[int, int] | None:
    others = [x for x in vocab if x not in s]
    if not others:
        return None
    return rng.randrange(len(s)), rng.choice(others)


def noisy(prefix: tuple[int, ...], vocab: Sequence[int], noise: tuple[tuple[str, float], ...],
          rng: random.Random) -> tuple[int, ...]:
    """``prefix`` through the recogniser-noise channel :data:`NOISE` (rates ``noise``)."""
    rate = dict(noise)
    out: list[int] = []
    for x in prefix:
        u = rng.random()
        if u < rate.get("deletion", 0.0):
            continue
        if u < rate.get("deletion", 0.0) + rate.get("substitution", 0.0):
            x = rng.choice([v for v in vocab if v != x] or [x])
        out.append(x)
        if rng.random() < rate.get("flicker", 0.0):
            out += [rng.choice([v for v in vocab if v != x] or [x]), x]
    return tuple(out)


def construct(sequences: Sequence[Sequence[int]], held: Sequence[int], plan: Plan, seed: int = 0) -> list[Episode]:
    """``plan.per_kind`` episodes of each of ``plan.kinds`` per held-out recording (module docstring). The foreign
    kind draws from every step of ``sequences`` (a step only held-out recordings use is then unseen by the fold's
    model, as a rare step of another procedure would be). With ``plan.noise`` each correct prefix passes through
    the recogniser-noise channel (:func:`noisy`); without it no random draw is added, so clean episodes are the same
    as ever."""
    rng = random.Random(seed)
    vocab = sorted({int(x) for s in sequences for x in s})
    make = {"order": _order, "repeat": _repeat, "foreign": lambda s, r: _other(s, vocab, r),
            "unlisted": lambda s, r: _other(s, plan.unlisted, r)}
    out = []
    for i in held:
        s = tuple(int(x) for x in sequences[i])
        for kind in plan.kinds:
            for _ in range(plan.per_kind):
                got = make[kind](s, rng)
                if got is not None:
                    prefix = noisy(s[: got[0]], vocab, plan.noise, rng) if plan.noise else s[: got[0]]
                    out.append(Episode(prefix, got[1], kind, i))
    return out


def validation(sequences: Sequence[Sequence[int]], plan: Plan) -> list[tuple[tuple[int, ...], list[Episode]]]:
    """(fit indices, episodes built from that fold's held-out recordings) for every fold."""
    out = []
    for j, (fit, held) in enumerate(folds(len(sequences), plan.k, plan.seed)):
        out.append((fit, construct(sequences, held, plan, plan.seed * 1000 + j)))
    return out


# --- scoring ------------------------------------------------------------------------------------------------
def counts_at(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, ...]:
    """tp, fp, fn, tn when flagging ``score >= t`` for each distinct score ``t`` (ascending), plus ``t``."""
    labels = np.asarray(labels, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    tp_c, fp_c = np.cumsum(y), np.cumsum(1 - y)
    last = np.r_[s[1:] != s[:-1], True]  # the last index of each run of equal scores
    tp, fp = tp_c[last], fp_c[last]
    pos, neg = int(y.sum()), len(y) - int(y.sum())
    return tp, fp, pos - tp, neg - fp, s[last]


def metrics(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Mistake P/R/F1, TI-PREGO's balanced precision Pb = TP / (TP + FP N+/N-) and F1b, DTGL's macro F1 (both
    classes), elementwise over arrays of counts. Written for selection; the reported numbers are the harness's."""
    tp, fp, fn, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    with np.errstate(divide="ignore", invalid="ignore"):
        pos, neg = tp + fn, fp + tn
        p = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        r = np.where(pos > 0, tp / pos, 0.0)
        pb = np.where(tp + fp > 0, tp / (tp + fp * pos / np.maximum(neg, 1)), 0.0)
        p0 = np.where(tn + fn > 0, tn / (tn + fn), 0.0)
        r0 = np.where(neg > 0, tn / neg, 0.0)

        def f1(a, b):
            return np.where(a + b > 0, 2 * a * b / (a + b), 0.0)

        return {"precision": p, "recall": r, "f1": f1(p, r), "balanced_precision": pb, "balanced_f1": f1(pb, r),
                "macro_f1": (f1(p, r) + f1(p0, r0)) / 2}


#: What a threshold is chosen for: the mean of DTGL's macro F1 and TI-PREGO's F1b, the two headline metrics of the
#: two papers (macro F1 alone rewards silence on long sequences, F1b alone rewards alarming at every step).
OBJECTIVE = "mean of macro_f1 and balanced_f1"


def objective(m: dict[str, np.ndarray]) -> np.ndarray:
    return (m["macro_f1"] + m["balanced_f1"]) / 2


#: The metrics a thresholded monitor sets an operating point for, each chosen by cross-validation on its own
#: (issue 34 item 4): DTGL's macro F1 and TI-PREGO's F1b may sit at different thresholds. ``objective`` is the
#: monitor's own alarm (``flagged``), the mean of the two.
OPERATING_METRICS = ("macro_f1", "balanced_f1")


def best_threshold(labels, scores, key: str = "objective") -> tuple[float, dict[str, float]]:
    """The threshold (flag when ``score >= t``) of highest ``key`` (:data:`OBJECTIVE`, or one metric of
    :data:`OPERATING_METRICS`) on pooled validation steps, and its metrics; ties go to the highest threshold (fewest
    alarms). The threshold returned is the midpoint between the chosen score and the next lower one, so a monitor's
    scores on new data are not on a knife's edge."""
    tp, fp, fn, tn, t = counts_at(labels, scores)
    m = metrics(tp, fp, fn, tn)
    obj = objective(m)
    target = obj if key == "objective" else m[key]
    i = int(np.argmax(target))  # first maximum: thresholds are descending in alarm count order -> highest threshold
    thr = float(t[i]) if i + 1 >= len(t) else float((t[i] + t[i + 1]) / 2)
    return thr, {k: round(float(v[i]), 4) for k, v in m.items()} | {"objective": round(float(obj[i]), 4)}


def operating_points(labels, scores) -> dict[str, tuple[float, dict[str, float]]]:
    """:func:`best_threshold` for each metric of :data:`OPERATING_METRICS`: {metric: (threshold, its metrics)}."""
    return {k: best_threshold(labels, scores, k) for k in OPERATING_METRICS}


def describe_points(points: dict[str, tuple[float, dict[str, float]]]) -> dict:
    """The ``selection.operating_points`` record: per metric, the threshold and its cross-validated value."""
    return {k: {"threshold": round(thr, 6), "cv_value": m[k]} for k, (thr, m) in points.items()}


def flags_metrics(labels, flags) -> dict[str, float]:
    y, f = np.asarray(labels, dtype=bool), np.asarray(flags, dtype=bool)
    m = metrics((y & f).sum(), (~y & f).sum(), (y & ~f).sum(), (~y & ~f).sum())
    out = {k: round(float(v), 4) for k, v in m.items()}
    return out | {"objective": round((out["macro_f1"] + out["balanced_f1"]) / 2, 4)}


def episode_labels(episodes: Sequence[Episode]) -> np.ndarray:
    """1 for each episode's last (constructed) step, 0 for its prefix, in episode order."""
    return np.concatenate([np.r_[np.zeros(len(e.prefix), dtype=np.int64), 1] for e in episodes]) if episodes else (
        np.zeros(0, dtype=np.int64))


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 100) -> np.ndarray:
    """Weights (last one the intercept) of L2-regularised logistic regression of ``y`` on the columns of ``x``,
    by Newton steps (deterministic; the intercept is not penalised). ``l2`` is per sample."""
    x = np.asarray(x, dtype=np.float64).reshape(len(y), -1)
    y = np.asarray(y, dtype=np.float64)
    z = np.c_[x, np.ones(len(y))]
    pen = l2 * len(y) * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    w = np.zeros(z.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(z @ w, -30, 30)))
        grad = z.T @ (p - y) + pen @ w
        hess = (z * (p * (1 - p))[:, None]).T @ z + pen + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def cross_fitted(x: np.ndarray, y: np.ndarray, fold: np.ndarray, l2: float) -> np.ndarray:
    """Out-of-fold logit of :func:`logistic` for every row: the regression for fold ``j``'s rows is fitted (on
    columns standardised by the other folds) on the other folds' rows only, so an objective that chooses features
    or a penalty on these scores is never measured on the rows it was fitted on (``stacked``, ``ngram-text``)."""
    out = np.zeros(len(y))
    for j in np.unique(fold):
        tr = fold != j
        mu, sd = x[tr].mean(axis=0), x[tr].std(axis=0) + 1e-9
        w = logistic((x[tr] - mu) / sd, y[tr], l2)
        out[~tr] = np.c_[(x[~tr] - mu) / sd, np.ones((~tr).sum())] @ w
    return out


def calibrate(labels, scores, l2: float = 1e-3) -> tuple[float, float]:
    """(a, b) of ``P(mistake) = sigmoid(a * score + b)`` fitted on the pooled validation steps: the probability a
    monitor reports is calibrated on constructed mistakes, whose rate per step is close to the benchmarks' (one
    per recording)."""
    x = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(x)
    x = np.where(finite, x, x[finite].max() if finite.any() else 0.0)
    mu, sd = float(x.mean()), float(x.std()) or 1.0
    w = logistic((x - mu) / sd, labels, l2)
    return round(float(w[0] / sd), 6), round(float(w[1] - w[0] * mu / sd), 6)


def calibrated(ab: tuple[float, float], score: float) -> float:
    z = ab[0] * float(score) + ab[1]
    return float(1 / (1 + np.exp(-np.clip(z, -30, 30)))) if np.isfinite(z) else float(z > 0)


def describe(plan: Plan, val: list) -> dict:
    """What a validation held: the plan, episodes per kind, steps."""
    eps = [e for _, es in val for e in es]
    return plan.describe() | {"episodes": len(eps), "by_kind": {k: sum(e.kind == k for e in eps) for k in plan.kinds},
                              "steps": sum(len(e.prefix) + 1 for e in eps)}
