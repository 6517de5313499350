"""Cross-validation for step-stream monitors: folds over the training recordings, validation mistakes built from
held-out correct sequences, and the threshold sweep every monitor chooses its operating point with.

Both benchmarks train on correct sequences only, so a monitor cannot be validated on real mistakes without reading
the test files. We build validation mistakes instead, from the definitions the benchmarks use:

- Assembly101's mistake labels (Sener et al., CVPR 2022, Sec. 5) mark a coarse segment a mistake when it is done
  in the wrong order (a part attached before the parts it needs), is an action that should not have happened, or
  is done wrongly; PREGO (Flaborea et al., CVPR 2024, Sec. 4) and DTGL (Seminara et al., NeurIPS 2024, Sec. 4.3)
  cut each test recording at its first such segment. EPIC-Tent's mistakes are procedural slips of the same kinds
  (a step too early, a step again, a step the procedure does not need at that point).
- So a validation *episode* is a held-out correct recording cut at a position ``k`` chosen uniformly (its correct
  prefix ``s[:k]``), followed by one constructed mistake of one of three kinds, in equal numbers:
  ``order``: a step of the same recording taken from later on that has not been done yet (done too early, the
  steps in between skipped: wrong order / missing precondition); ``repeat``: a step the recording already did,
  again (not the step just done, which the merged streams fold away, nor the true next step); ``foreign``: a step
  seen in training that this recording never does (an action that should not have happened here).
- The mix is equal because the benchmarks publish no breakdown of their mistakes by kind; the cut is uniform
  because the recordings are cut wherever their first mistake falls. Constructed mistakes are noisy (a step taken
  early may be permitted; a repeat may be harmless): the noise is the same for every candidate setting, so it
  shifts the chosen threshold less than it shifts the scores.

Folds are over recordings (a recording is never both fitted on and validated on). Everything is seeded and uses
sorted containers only, so selections are the same on every run and under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

KINDS = ("order", "repeat", "foreign")


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


def _foreign(s: tuple[int, ...], vocab: Sequence[int], rng: random.Random) -> tuple[int, int] | None:
    others = [x for x in vocab if x not in s]
    if not others:
        return None
    return rng.randrange(len(s)), rng.choice(others)


def construct(
    sequences: Sequence[Sequence[int]], held: Sequence[int], per_kind: int = 2, seed: int = 0
) -> list[Episode]:
    """``per_kind`` episodes of each kind per held-out recording (see the module docstring); ``vocab`` for the
    foreign kind is every step of ``sequences`` (the whole training set: a step only the held-out recordings use
    is then unseen by the fold's model, as a rare step of another procedure would be)."""
    rng = random.Random(seed)
    vocab = sorted({x for s in sequences for x in s})
    out = []
    for i in held:
        s = tuple(sequences[i])
        for kind in KINDS:
            for _ in range(per_kind):
                got = _order(s, rng) if kind == "order" else _repeat(s, rng) if kind == "repeat" else (
                    _foreign(s, vocab, rng))
                if got is not None:
                    out.append(Episode(s[: got[0]], got[1], kind, i))
    return out


def per_kind(n_recordings: int) -> int:
    """Episodes of each kind per held-out recording: 2 for a large training set (Assembly101-O's 135 recordings
    give 810 validation mistakes), 10 for a small one (EPIC-Tent-O's 13 give 390)."""
    return 2 if n_recordings >= 50 else 10


def validation(
    sequences: Sequence[Sequence[int]], k: int = 5, per_kind: int = 2, seed: int = 0
) -> list[tuple[tuple[int, ...], list[Episode]]]:
    """(fit indices, episodes built from that fold's held-out recordings) for every fold."""
    out = []
    for j, (fit, held) in enumerate(folds(len(sequences), k, seed)):
        out.append((fit, construct(sequences, held, per_kind, seed * 1000 + j)))
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


def best_threshold(labels, scores) -> tuple[float, dict[str, float]]:
    """The threshold (flag when ``score >= t``) of highest :data:`OBJECTIVE` on pooled validation steps, and its
    metrics; ties go to the highest threshold (fewest alarms). The threshold returned is the midpoint between the
    chosen score and the next lower one, so a monitor's scores on new data are not on a knife's edge."""
    tp, fp, fn, tn, t = counts_at(labels, scores)
    m = metrics(tp, fp, fn, tn)
    obj = objective(m)
    i = int(np.argmax(obj))  # first maximum: thresholds are descending in alarm count order -> highest threshold
    thr = float(t[i]) if i + 1 >= len(t) else float((t[i] + t[i + 1]) / 2)
    return thr, {key: round(float(v[i]), 4) for key, v in m.items()} | {"objective": round(float(obj[i]), 4)}


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


def describe(episodes: Sequence[Episode]) -> dict:
    """What a validation set held: episodes per kind, steps, constructed mistakes."""
    return {"episodes": len(episodes), "by_kind": {k: sum(e.kind == k for e in episodes) for k in KINDS},
            "steps": sum(len(e.prefix) + 1 for e in episodes), "construction": "cut uniform; kinds " + "/".join(KINDS)}
