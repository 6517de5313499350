"""The step-stream metrics: the values issue 27 gives by hand for flag-all, every metric of every metrics.json
recomputed from its steps.jsonl by code that shares nothing with ego_adr.monitoring.step_metrics (scikit-learn and
the formulas written out here), and the conventions on hand-made rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, f1_score, precision_score, recall_score


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def recomputed(rows: list[dict]) -> dict:
    """Every metric from scratch: scikit-learn for PREGO's and DTGL's, TI-PREGO's formula by hand."""
    y = np.array([r["label"] for r in rows], dtype=int)
    p = np.array([r["flagged"] for r in rows], dtype=int)
    tn, fp, fn, tp = confusion_matrix(y, p, labels=[0, 1]).ravel()
    prec = precision_score(y, p, zero_division=0)
    rec = recall_score(y, p, zero_division=0)
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    pb = tp / (tp + fp * n_pos / n_neg) if tp + fp else 0.0
    return {"tp": int(tp), "fp": int(fp), "fn": int(fn), "tn": int(tn), "mistake_precision": prec,
            "mistake_recall": rec, "mistake_f1": f1_score(y, p, zero_division=0), "balanced_precision": pb,
            "balanced_f1": 2 * pb * rec / (pb + rec) if pb + rec else 0.0,
            "macro_f1": f1_score(y, p, average="macro", zero_division=0)}


def test_flag_all_on_assembly101_oracle_merged_is_the_hand_computed_row(online_root, cli, tmp_path):
    code, out, err = cli("evaluate", "--benchmark", "assembly101-o", "--stream", "oracle-merged", "--monitor",
                         "flag-all", "--data-root", online_root, "--out", tmp_path / "fa")
    assert code == 0, err
    m = json.loads((tmp_path / "fa" / "metrics.json").read_text())
    assert (m["steps"], m["mistakes"], m["videos"]) == (664, 182, 182)
    got = {k: round(m[k], 3) for k in ("mistake_precision", "mistake_recall", "mistake_f1", "balanced_precision",
                                       "balanced_f1", "macro_f1")}
    # 182/664 = 0.274; F1 = 2*0.274/(1.274) = 0.430; Pb = 182/(182 + 482*182/482) = 0.5; F1b = 2*0.5/1.5 = 0.667;
    # macro F1 = (0.430 + 0) / 2 = 0.215 (the correct class has no true negative)
    assert got == {"mistake_precision": 0.274, "mistake_recall": 1.0, "mistake_f1": 0.430,
                   "balanced_precision": 0.5, "balanced_f1": 0.667, "macro_f1": 0.215}
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (182, 482, 0, 0)
    from importlib import metadata

    assert m["versions"]["torch"] == metadata.version("torch")  # learned monitors' weights depend on it
    report = (tmp_path / "fa" / "report.md").read_text()
    assert "| **flag-all** (ours) | oracle steps (PREGO's gt, merged) | 27.4 | 100.0 | 43.0 | 50.0 | 66.7 | 21.5 |" \
        in report


@pytest.mark.parametrize(("bench", "stream"), [("assembly101-o", "oracle"), ("epic-tent-o", "miniroad")])
def test_every_metric_in_metrics_json_is_recomputed_from_steps_jsonl(online_root, cli, tmp_path, bench, stream):
    out = tmp_path / "all"
    code, _, err = cli("evaluate", "--benchmark", bench, "--stream", stream, "--monitor", "all", "--data-root",
                       online_root, "--out", out, "--quiet")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    folders = sorted(p for p in out.iterdir() if (p / "metrics.json").is_file())
    assert [p.name for p in folders] == sorted(r["monitor"] for r in summary["rows"])
    assert len(folders) >= 3
    for folder in folders:
        m = json.loads((folder / "metrics.json").read_text())
        rows = _rows(folder / "steps.jsonl")
        assert len(rows) == m["steps"]
        assert all(r["label"] == (1 if r["index"] == max(q["index"] for q in rows if q["episode"] == r["episode"]) else 0)
                   for r in rows[:50])
        for k, v in recomputed(rows).items():
            assert m[k] == pytest.approx(v, abs=1e-12), (folder.name, k)
            assert 0.0 <= m[k] <= (1.0 if isinstance(v, float) else len(rows))
        row = next(r for r in summary["rows"] if r["monitor"] == folder.name)
        assert {k: row[k] for k in recomputed(rows)} == {k: m[k] for k in recomputed(rows)}


def test_conventions_on_hand_made_rows():
    from ego_adr.monitoring.step_metrics import metrics

    # 2 mistakes among 10 steps; the monitor alarms at 1 mistake and 2 correct steps
    labels = [1, 1] + [0] * 8
    flags = [True, False, True, True] + [False] * 6
    m = metrics([{"label": y, "flagged": f} for y, f in zip(labels, flags)])
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (1, 2, 1, 6)
    assert m["mistake_precision"] == pytest.approx(1 / 3)
    assert m["mistake_recall"] == pytest.approx(1 / 2)
    assert m["balanced_precision"] == pytest.approx(1 / (1 + 2 * 2 / 8))  # FP scaled by N+/N- = 2/8
    f_ok = 2 * (6 / 7) * (6 / 8) / (6 / 7 + 6 / 8)
    assert m["macro_f1"] == pytest.approx((0.4 + f_ok) / 2)
    never = metrics([{"label": y, "flagged": False} for y in labels])
    assert never["mistake_precision"] == never["balanced_precision"] == never["balanced_f1"] == 0.0


def test_the_goal_names_the_monitor_chosen_on_validation_beside_the_best_on_test():
    """The best row on the test is a choice made by looking at it; the goal line also names the monitor with the
    highest cross-validated objective (no test number involved), and a monitor without one is never that."""
    from ego_adr.online_mistakes.report import goal, validation_choice

    def row(name, macro, f1b, objective=None, privileged=False):
        sel = {"cv_score": {"objective": objective}} if objective is not None else {}
        return {"monitor": name, "privileged": privileged, "macro_f1": macro, "balanced_f1": f1b, "selection": sel}

    rows = [row("flag-all", 0.2, 0.667), row("best-on-test", 0.74, 0.60, objective=0.70),
            row("best-on-validation", 0.70, 0.64, objective=0.76), row("no-cv", 0.73, 0.69),
            row("peeker", 0.99, 0.99, objective=0.99, privileged=True)]
    assert validation_choice([r for r in rows if not r["privileged"]])["monitor"] == "best-on-validation"
    by_metric = {g["metric"]: g for g in goal(rows, "assembly101-o", "oracle")}
    assert by_metric["macro_f1"]["ours"] == "best-on-test"
    assert by_metric["balanced_f1"]["ours"] == "no-cv"
    for g in by_metric.values():
        assert g["chosen_on_validation"] == "best-on-validation"
    assert by_metric["macro_f1"]["chosen_margin"] == pytest.approx(0.70 - 0.759)
