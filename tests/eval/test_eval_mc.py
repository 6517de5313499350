"""Multiple-choice metrics checked against a straightforward re-computation written here from the issue text."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ego_adr.eval.mc import compute_mc_metrics, dedup_rows
from ego_adr.taxonomy import OPTIONS

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "egoerrorvqa"
WO, WA, WOR, OM, UA = "Wrong object", "Wrong action", "Wrong order", "Omission", "Unintended and unnecessary action"


def row(sid, source, gt, pred=None, failure=None, raw=None):
    return {"sample_id": sid, "source": source, "task_id": "t", "ground_truth": gt, "prediction": pred,
            "failure": failure, "raw": raw if raw is not None else pred, "route": "deep", "mode": "ego-adr",
            "stages": {}, "timings": {}}


def hand_rows():
    """Every case: TP, FP (wrong type / error on correct), TN, FN, multi-label GT (match on 2nd label, no match),
    case-insensitive prediction, unparseable on error and on correct samples, failed rows, a source where every
    sample is correct and the model never predicts an error (empty precision and recall denominators)."""
    return [
        row("a1", "cook", [WO], WO),                      # TP
        row("a2", "cook", [WO], WA),                      # FP (type mismatch)
        row("a3", "cook", ["correct"], "Correct"),        # TN (case-insensitive)
        row("a4", "cook", ["correct"], OM),               # FP (error on correct)
        row("a5", "cook", [WA], "correct"),               # FN
        row("a6", "cook", [WA, WOR], "wrong order"),      # TP via the second label
        row("a7", "cook", [WA, WOR], UA),                 # FP, multi-label, no match
        row("a8", "cook", [OM], None, "unparseable", "I think something odd happened"),  # FP
        row("a9", "cook", ["correct"], None, "unparseable", "hmm"),                      # FP
        row("a10", "cook", [WO], None, "video_missing"),  # no answer
        row("b1", "tent", ["correct"], "correct"),        # all-correct source
        row("b2", "tent", ["correct"], "correct"),
        row("b3", "tent", ["correct"], None, "timeout"),
        row("c1", "toy", [UA], UA),
        row("c2", "toy", ["correct"], "Others"),
        row("c3", "toy", [UA], "not an option at all"),   # a non-option prediction string = unparseable
    ]


def reference(rows):
    """Plain re-computation: TP/FP/TN/FN, n, rates (0 on empty denominators)."""
    tp = fp = tn = fn = failed = unp = 0
    for r in rows:
        gt = [g.lower() for g in r["ground_truth"]]
        gt_err = "correct" not in gt
        if r["failure"] == "unparseable":
            fp += 1
            unp += 1
            continue
        if r["failure"] or r["prediction"] is None:
            failed += 1
            continue
        p = r["prediction"].lower()
        if p not in [o.lower() for o in OPTIONS]:
            fp += 1
            unp += 1
        elif p == "correct":
            if gt_err:
                fn += 1
            else:
                tn += 1
        elif gt_err and p in gt:
            tp += 1
        else:
            fp += 1
    n = len(rows)
    acc = (tp + tn) / n if n else 0
    pre = tp / (tp + fp) if tp + fp else 0
    rec = tp / (tp + fn) if tp + fn else 0
    f1 = 2 * pre * rec / (pre + rec) if pre + rec else 0
    return dict(tp=tp, fp=fp, tn=tn, fn=fn, n=n, n_failed=failed, n_unparseable=unp,
                accuracy=acc, precision=pre, recall=rec, f1=f1)


def assert_block(got, want):
    for k, v in want.items():
        assert got[k] == pytest.approx(v), k


def test_counts_and_rates_match_reference():
    rows = hand_rows()
    m = compute_mc_metrics(rows, n_boot=200)
    assert_block(m["overall"], reference(rows))
    for src in ("cook", "tent", "toy"):
        assert_block(m["per_source"][src], reference([r for r in rows if r["source"] == src]))
    # hand-checked anchor for the overall counts
    assert (m["overall"]["tp"], m["overall"]["fp"], m["overall"]["tn"], m["overall"]["fn"]) == (3, 7, 3, 1)
    tent = m["per_source"]["tent"]
    assert tent["precision"] == 0 and tent["recall"] == 0 and tent["f1"] == 0
    assert tent["accuracy"] == pytest.approx(2 / 3)  # the failed row counts as wrong


def test_accuracy_equals_share_of_hits():
    rows = hand_rows()
    hits = sum(r["prediction"] is not None and r["prediction"].lower() in [g.lower() for g in r["ground_truth"]]
               for r in rows)
    assert compute_mc_metrics(rows, n_boot=50)["overall"]["accuracy"] == pytest.approx(hits / len(rows))


def test_simple_average_is_unweighted_mean_over_sources():
    rows = hand_rows()
    m = compute_mc_metrics(rows, n_boot=50)
    refs = [reference([r for r in rows if r["source"] == s]) for s in ("cook", "tent", "toy")]
    for k in ("accuracy", "precision", "recall", "f1"):
        assert m["simple_average"][k] == pytest.approx(sum(r[k] for r in refs) / 3)
    assert m["simple_average"]["n"] == len(rows)


def test_per_type_accuracy():
    rows = hand_rows()
    pta = compute_mc_metrics(rows, n_boot=50)["per_type_accuracy"]
    for opt in OPTIONS:
        support = [r for r in rows if opt.lower() in [g.lower() for g in r["ground_truth"]]]
        hits = sum((r["prediction"] or "").lower() == opt.lower() for r in support)
        want = hits / len(support) if support else None
        got = pta["overall"][opt]
        assert got["n"] == len(support) and got["hits"] == hits
        assert got["accuracy"] == (pytest.approx(want) if want is not None else None)
    # multi-label: a6 ([WA, WOR] -> Wrong order) is a hit for Wrong order only
    assert pta["overall"][WOR] == {"accuracy": 0.5, "n": 2, "hits": 1}
    assert pta["overall"][WA] == {"accuracy": 0.0, "n": 3, "hits": 0}
    assert pta["per_source"]["tent"]["correct"]["accuracy"] == pytest.approx(2 / 3)
    assert pta["per_source"]["tent"][WO]["accuracy"] is None


def test_confusion_matrix():
    rows = hand_rows()
    cm = compute_mc_metrics(rows, n_boot=50)["confusion_matrix"]
    counts = cm["counts"]
    assert cm["labels"] == list(OPTIONS) and cm["columns"] == [*OPTIONS, "unparseable", "failed"]
    assert sum(map(sum, counts)) == len(rows)
    r, c = cm["labels"].index, cm["columns"].index
    assert counts[r(WOR)][c(WOR)] == 1      # a6 lands in the row of the matched label
    assert counts[r(WA)][c(UA)] == 1        # a7: no match, first GT label
    assert counts[r("correct")][c("unparseable")] == 1
    assert counts[r(UA)][c("unparseable")] == 1
    assert sum(row[c("failed")] for row in counts) == 2  # a10, b3
    # diagonal of the option block = hits
    hits = sum(counts[i][i] for i in range(len(OPTIONS)))
    m = compute_mc_metrics(rows, n_boot=50)["overall"]
    assert hits == m["tp"] + m["tn"]


def test_duplicates_last_wins_but_answer_beats_failure():
    rows = hand_rows()
    dup = [
        *rows,
        row("a1", "cook", [WO], WA),                   # later answer replaces: a1 becomes FP
        row("a3", "cook", ["correct"], None, "timeout"),  # later failure does not erase a3's answer
    ]
    m = compute_mc_metrics(dup, n_boot=50)
    assert m["n_duplicates_dropped"] == 2 and m["overall"]["n"] == len(rows)
    expected = [r for r in rows if r["sample_id"] not in ("a1",)] + [dup[-2]]
    assert_block(m["overall"], reference(expected))
    assert [r["sample_id"] for r in dedup_rows(dup)] == [r["sample_id"] for r in rows]


def test_bootstrap_deterministic_and_contains_point():
    rng = random.Random(3)
    rows = []
    for i in range(300):
        gt = ["correct"] if rng.random() < 0.65 else [rng.choice([WO, WA, WOR, OM])]
        pred = gt[0] if rng.random() < 0.4 else rng.choice(OPTIONS)
        rows.append(row(f"s{i}", rng.choice(["x", "y"]), gt, pred))
    m1 = compute_mc_metrics(rows, n_boot=300, seed=7)
    m2 = compute_mc_metrics(rows, n_boot=300, seed=7)
    m3 = compute_mc_metrics(rows, n_boot=300, seed=8)
    assert m1["ci95"] == m2["ci95"]
    assert m1["ci95"] != m3["ci95"]
    for k, (lo, hi) in m1["ci95"].items():
        assert lo <= m1["overall"][k] <= hi and lo < hi, k


def test_metrics_json_serialisable_and_bad_rows_are_counted_exclusions():
    m = compute_mc_metrics(hand_rows(), n_boot=20)
    assert json.loads(json.dumps(m))["overall"]["n"] == len(hand_rows())
    assert m["excluded"]["n"] == 0 and m["unscored"]["n"] == 0
    bad = [row("z1", "cook", ["Wrong colour"], "correct"),        # unknown label
           row("z2", "cook", [], "correct"),                       # unlabelled
           row("z3", "cook", None, "Omission"),                    # unlabelled (missing field)
           {"source": "cook", "ground_truth": [WO], "prediction": WO},  # no sample_id
           row("z5", None, [WO], WO),                              # no source
           row("z6", "cook", [7], WO)]                             # a label that is not a string
    m = compute_mc_metrics(hand_rows() + bad, n_boot=20)
    assert_block(m["overall"], reference(hand_rows()))            # the good rows score exactly as alone
    assert m["excluded"]["n"] == 4 and m["unscored"]["n"] == 2
    assert set(m["excluded"]["ids"]) == {"z1", "<row 20>", "z5", "z6"}
    assert set(m["unscored"]["ids"]) == {"z2", "z3"}
    assert m["excluded"]["by_reason"]["no source"] == 1 and m["excluded"]["by_reason"]["no sample_id"] == 1
    # a caller that names its sources gets rows of other sources excluded as foreign
    m = compute_mc_metrics(hand_rows(), n_boot=20, sources=["cook", "tent"])
    assert m["overall"]["n"] == len([r for r in hand_rows() if r["source"] != "toy"])
    assert m["excluded"]["by_reason"] == {"foreign source 'toy'": 3}
    json.dumps(m)


def test_small_n_intervals_are_flagged():
    few = compute_mc_metrics([row("f1", "cook", [WO], WO), row("f2", "cook", ["correct"], "correct")], n_boot=50)
    flags = few["ci95_flags"]
    assert flags["small_n"] and flags["n"] == 2 and "too few" in flags["note"]
    assert set(flags["zero_width"]) == {"accuracy", "precision", "recall", "f1"}  # every resample is the same
    rng = random.Random(5)
    many = [row(f"m{i}", "cook", gt, gt[0] if rng.random() < 0.5 else rng.choice(["correct", OM]))
            for i, gt in enumerate([["correct"]] * 60 + [[WO]] * 40)]
    flags = compute_mc_metrics(many, n_boot=200)["ci95_flags"]
    assert not flags["small_n"] and flags["zero_width"] == [] and flags["note"] is None
    # enough samples, but recall rests on 5 of them (the other error samples got a wrong type)
    thin = [row(f"t{i}", "cook", ["correct"], "correct" if i % 3 else OM) for i in range(60)]
    thin += [row(f"e{i}", "cook", [WO], WO if i < 3 else ("correct" if i < 5 else "Others")) for i in range(40)]
    flags = compute_mc_metrics(thin, n_boot=200)["ci95_flags"]
    assert not flags["small_n"] and flags["denominators"]["recall"] == 5
    assert flags["small_denominator"] == ["recall", "f1"] and "recall (5)" in flags["note"]


def test_real_annotations_ground_truth_never_mixes_correct_and_errors():
    """Our error-sample rule (no ``correct`` in the list) relies on this property of the released data."""
    if not DATA.is_dir():
        pytest.skip(f"EgoErrorVQA annotations not found at {DATA}")
    rows = []
    for f in ("captaincook4d_answer.json", "assembly101_answers.json", "egooops_answer.json",
              "epic_tent_answer_sec.json"):
        for i, s in enumerate(json.loads((DATA / f).read_text())):
            gt = s["close_end_answer"] if isinstance(s["close_end_answer"], list) else [s["close_end_answer"]]
            assert not ("correct" in [g.lower() for g in gt] and len(gt) > 1)
            rows.append(row(f"{f}-{i}", f, gt, gt[-1]))
    m = compute_mc_metrics(rows, n_boot=20)
    assert m["overall"]["accuracy"] == 1.0 and m["overall"]["fp"] == 0 and m["overall"]["fn"] == 0
    assert sum(map(sum, m["confusion_matrix"]["counts"])) == len(rows)
