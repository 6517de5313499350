"""Cross-validation of the step-stream monitors: folds, the constructed validation mistakes, the threshold sweep
and the metrics it optimises, each against what is known by hand."""

from __future__ import annotations

import numpy as np
import pytest

from ego_adr.online_mistakes import cv

SEQS = [(1, 2, 3, 4, 5), (1, 3, 2, 4, 5), (1, 2, 3, 5, 4), (2, 1, 3, 4, 5), (1, 2, 4, 3, 5), (1, 2, 3, 4, 6)]


def test_folds_partition_the_recordings_and_are_seeded():
    fs = cv.folds(13, 5, seed=3)
    held = [i for _, h in fs for i in h]
    assert sorted(held) == list(range(13))  # every recording held out exactly once
    for fit, h in fs:
        assert not set(fit) & set(h) and sorted(fit + h) == list(range(13))
    assert fs == cv.folds(13, 5, seed=3) and fs != cv.folds(13, 5, seed=4)
    assert len(cv.folds(3, 5)) == 3  # leave-one-out when there are fewer recordings than folds
    with pytest.raises(ValueError, match="at least 2"):
        cv.folds(1)


def test_plan_takes_the_kinds_of_each_benchmark_definitions():
    taxonomy = list(range(1, 10))  # 7, 8, 9 are in no recording: the "unlisted" steps
    a101 = cv.plan("assembly101-o", SEQS, taxonomy)
    assert a101.kinds == ("order", "unlisted") and a101.unlisted == (7, 8, 9)
    assert cv.plan("assembly101-o", SEQS, range(1, 7)).kinds == ("order",)  # nothing unlisted: no such kind
    assert cv.plan("epic-tent-o", SEQS, taxonomy).kinds == ("order", "repeat")
    assert cv.plan("some-other", SEQS, taxonomy).kinds == cv.DEFAULT_KINDS
    # about TARGET_MISTAKES constructed mistakes in all, however few recordings there are
    n = sum(len(eps) for _, eps in cv.validation(SEQS, a101))
    assert 0.8 * cv.TARGET_MISTAKES <= n <= cv.TARGET_MISTAKES


@pytest.mark.parametrize("kind", cv.KINDS)
def test_each_constructed_mistake_is_of_its_kind(kind):
    plan = cv.Plan((kind,), unlisted=(7, 8), per_kind=20)
    eps = cv.construct(SEQS, range(len(SEQS)), plan, seed=1)
    assert eps and all(e.kind == kind for e in eps)
    for e in eps:
        s = SEQS[e.source]
        assert s[: len(e.prefix)] == e.prefix  # the prefix is the recording's own correct prefix
        k, m = len(e.prefix), e.mistake
        if kind == "order":  # a later step of the recording, not done yet, not the true next one
            assert m in s[k + 1 :] and m not in s[: k + 1]
        elif kind == "repeat":  # done before, but not the step just done, and not the true next step
            assert m in e.prefix[:-1] and m != e.prefix[-1] and (k == len(s) or m != s[k])
        elif kind == "unlisted":
            assert m in (7, 8)
        else:  # foreign: a training step this recording never does
            assert m not in s and any(m in t for t in SEQS)


def test_validation_episodes_come_from_held_out_recordings_only():
    plan = cv.plan("epic-tent-o", SEQS, range(1, 7), k=3, seed=0)
    for fit, eps in cv.validation(SEQS, plan):
        assert eps and all(e.source not in fit for e in eps)
    assert cv.validation(SEQS, plan) == cv.validation(SEQS, plan)
    labels = cv.episode_labels(cv.validation(SEQS, plan)[0][1])
    eps = cv.validation(SEQS, plan)[0][1]
    assert labels.sum() == len(eps) and len(labels) == sum(len(e.steps) for e in eps)


def test_metrics_of_flag_all_and_of_a_perfect_monitor():
    # 2 mistakes among 8 steps; flag-all: P 0.25, R 1, F1 0.4, Pb 0.5, F1b 2/3, macro F1 (0.4 + 0) / 2
    y = np.array([0, 0, 0, 1, 0, 0, 0, 1])
    m = cv.flags_metrics(y, np.ones(8, bool))
    assert m["precision"] == 0.25 and m["recall"] == 1.0 and m["balanced_precision"] == 0.5
    assert m["balanced_f1"] == pytest.approx(2 / 3, abs=1e-4) and m["macro_f1"] == 0.2
    perfect = cv.flags_metrics(y, y.astype(bool))
    assert perfect["macro_f1"] == perfect["balanced_f1"] == perfect["objective"] == 1.0
    # one false alarm among 6 correct steps: Pb = 2 / (2 + 1 * 2/6)
    one_fp = cv.flags_metrics(y, np.array([1, 0, 0, 1, 0, 0, 0, 1], bool))
    assert one_fp["balanced_precision"] == pytest.approx(2 / (2 + 2 / 6), abs=1e-4)


def test_best_threshold_separates_when_the_scores_do():
    y = np.array([0, 0, 1, 0, 1])
    thr, m = cv.best_threshold(y, np.array([0.1, 0.2, 0.8, 0.3, 0.9]))
    assert 0.3 < thr < 0.8 and m["objective"] == 1.0  # midpoint between the lowest mistake and the next score
    # a score that cannot separate: the sweep still returns a valid operating point (flag-all or nothing)
    thr2, m2 = cv.best_threshold(y, np.zeros(5))
    assert m2["recall"] in (0.0, 1.0)


def test_counts_at_every_threshold_match_a_direct_count():
    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, 50), rng.integers(0, 6, 50).astype(float)
    tp, fp, fn, tn, t = cv.counts_at(y, s)
    for i, thr in enumerate(t):
        f = s >= thr
        assert (tp[i], fp[i], fn[i], tn[i]) == ((f & (y == 1)).sum(), (f & (y == 0)).sum(),
                                                (~f & (y == 1)).sum(), (~f & (y == 0)).sum())


def test_logistic_calibration_is_monotone_and_fits_the_rate():
    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    y = (rng.random(400) < 1 / (1 + np.exp(-(2 * x - 1)))).astype(int)
    a, b = cv.calibrate(y, x)
    assert 1.4 < a < 2.8 and -1.6 < b < -0.4  # close to the generating (2, -1)
    assert cv.calibrated((a, b), 2.0) > cv.calibrated((a, b), 0.0) > cv.calibrated((a, b), -2.0)
    assert cv.calibrated((a, b), float("inf")) == 1.0


def test_the_recogniser_noise_channel_deletes_substitutes_and_flickers_at_its_rates():
    import random

    prefix = tuple(range(10)) * 100
    vocab = list(range(12))
    assert cv.noisy(prefix, vocab, (("deletion", 1.0),), random.Random(0)) == ()
    subs = cv.noisy(prefix, vocab, (("substitution", 1.0),), random.Random(0))
    assert len(subs) == len(prefix) and all(a != b for a, b in zip(prefix, subs))
    flick = cv.noisy(prefix, vocab, (("flicker", 1.0),), random.Random(0))
    assert len(flick) == 3 * len(prefix) and flick[::3] == prefix and flick[2::3] == prefix  # x, other, x
    mixed = cv.noisy(prefix, vocab, cv.NOISE, random.Random(0))
    kept = len(mixed) / len(prefix)
    assert 0.9 < kept < 1.2  # 10 % deleted, 5 % flickered (2 steps each): about 1.0 per step


def test_a_clean_plan_builds_the_same_episodes_as_before_and_a_noisy_one_keeps_each_mistake():
    seqs = [tuple(range(i, i + 8)) for i in range(6)]
    clean = cv.plan("assembly101-o", seqs, range(20))
    noisy = cv.plan("assembly101-o", seqs, range(20), noise=cv.NOISE)
    a = cv.construct(seqs, [0, 1], clean, 3)
    b = cv.construct(seqs, [0, 1], noisy, 3)
    assert clean.noise == () and noisy.describe()["recogniser_noise"] == dict(cv.NOISE)
    assert [(e.kind, e.source) for e in a][:2] == [(e.kind, e.source) for e in b][:2]
    assert a[0].mistake == b[0].mistake  # the first draw is the same: the channel only touches the prefix
    assert any(x.prefix != y.prefix for x, y in zip(a, b))
