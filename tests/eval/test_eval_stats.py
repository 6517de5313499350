"""Bootstrap intervals, McNemar's test and the paired run comparison."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from ego_adr.eval.compare import compare_runs, format_comparison, mcnemar_test
from ego_adr.eval.mc import compute_mc_metrics, outcome
from ego_adr.eval.stats import _draws, bootstrap_ci
from ego_adr.taxonomy import OPTIONS


def run_rows(n, seed, skill, sources=("a", "b")):
    """Rows whose GT is fixed by sample index (same in every run) and whose predictions depend on ``seed``."""
    gt_rng, rng = random.Random(99), random.Random(seed)
    rows = []
    for i in range(n):
        gt = ["correct"] if gt_rng.random() < 0.6 else [gt_rng.choice(OPTIONS[1:6])]
        pred = gt[0] if rng.random() < skill else rng.choice(OPTIONS)
        rows.append({"sample_id": f"s{i}", "source": sources[i % len(sources)], "ground_truth": gt,
                     "prediction": pred, "failure": None})
    return rows


@pytest.mark.parametrize("table", [[[30, 4], [9, 57]], [[200, 40], [15, 100]], [[5, 0], [0, 7]]])
def test_mcnemar_matches_statsmodels(table):
    a, b = [], []
    for (ha, hb), k in zip([(1, 1), (1, 0), (0, 1), (0, 0)], [table[0][0], table[0][1], table[1][0], table[1][1]],
                           strict=True):
        a += [bool(ha)] * k
        b += [bool(hb)] * k
    res = mcnemar_test(a, b)
    assert res["table"] == table
    disc = table[0][1] + table[1][0]
    assert res["exact"] == (disc < 25)
    if disc:
        ref = mcnemar(np.array(table), exact=disc < 25, correction=True)
        assert res["pvalue"] == pytest.approx(ref.pvalue) and res["statistic"] == pytest.approx(ref.statistic)
    else:
        assert res["pvalue"] == 1.0


def test_stratified_draws_keep_stratum_sizes():
    strata = np.array([True] * 13 + [False] * 40)
    d = _draws(strata, 50, np.random.default_rng(0))
    assert d.shape == (50, 53)
    assert (strata[d].sum(axis=1) == 13).all()


def test_accuracy_interval_width_matches_normal_approximation():
    rows = run_rows(1500, seed=1, skill=0.5)
    outs = [outcome(r) for r in rows]
    ci = bootstrap_ci(outs, n_boot=1000, seed=0)
    # stratified: variance = sum over strata of n_s * p_s (1 - p_s) / n^2
    n = len(outs)
    var = 0.0
    for s in (True, False):
        hits = [o["hit"] for o in outs if o["gt_error"] == s]
        p = sum(hits) / len(hits)
        var += len(hits) * p * (1 - p) / n**2
    width = ci["accuracy"][1] - ci["accuracy"][0]
    assert width == pytest.approx(2 * 1.96 * math.sqrt(var), rel=0.2)


def test_compare_runs_differences_and_accounting():
    a = run_rows(400, seed=1, skill=0.35)
    b = run_rows(380, seed=2, skill=0.55)  # s380..s399 only in A
    b.append({"sample_id": "extra", "source": "a", "ground_truth": ["correct"], "prediction": "correct",
              "failure": None})
    res = compare_runs(a, b, n_boot=400, seed=0)
    assert (res["n_common"], res["n_only_a"], res["n_only_b"], res["n_gt_mismatch"]) == (380, 20, 1, 0)
    ma = compute_mc_metrics(a[:380], n_boot=1)["overall"]
    mb = compute_mc_metrics(b[:380], n_boot=1)["overall"]
    for k in ("accuracy", "precision", "recall", "f1"):
        assert res["diff"][k] == pytest.approx(mb[k] - ma[k])
        lo, hi = res["ci95"][k]
        assert lo <= res["diff"][k] <= hi
    # independent McNemar on the hit vectors
    hit = [[r["prediction"] in r["ground_truth"] for r in rows[:380]] for rows in (a, b)]
    t = [[sum(x and y for x, y in zip(*hit, strict=True)), sum(x and not y for x, y in zip(*hit, strict=True))],
         [sum(y and not x for x, y in zip(*hit, strict=True)), sum(not x and not y for x, y in zip(*hit, strict=True))]]
    assert res["mcnemar"]["table"] == t
    assert res["mcnemar"]["pvalue"] == pytest.approx(mcnemar(np.array(t), exact=t[0][1] + t[1][0] < 25).pvalue)
    assert res["diff"]["accuracy"] > 0 and res["mcnemar"]["pvalue"] < 0.05  # a clearly better run is detected
    assert compare_runs(a, b, n_boot=400, seed=0)["ci95"] == res["ci95"]
    text = format_comparison(res)
    assert "common samples: 380" in text and "McNemar" in text


def test_compare_run_with_itself_is_zero():
    a = run_rows(200, seed=3, skill=0.4)
    res = compare_runs(a, a, n_boot=100)
    assert all(v == 0 for v in res["diff"].values())
    assert all(ci == [0.0, 0.0] for ci in res["ci95"].values())
    assert res["mcnemar"]["pvalue"] == 1.0 and res["mcnemar"]["discordant"] == 0


def test_compare_uses_a_ground_truth_on_mismatch():
    a = [{"sample_id": "x", "source": "s", "ground_truth": ["correct"], "prediction": "correct", "failure": None}]
    b = [{"sample_id": "x", "source": "s", "ground_truth": ["Omission"], "prediction": "correct", "failure": None}]
    res = compare_runs(a, b, n_boot=10)
    assert res["n_gt_mismatch"] == 1 and res["b"]["tn"] == 1 and res["diff"]["accuracy"] == 0
