"""The blind baselines and the headline chosen without the test (issue 34 items 1 and 2): never-alarm's and
position's numbers recomputed by hand from their steps.jsonl, position's k chosen on the training recordings alone,
its ceiling brute-forced over every k, the goal rows' keys, and a choice that does not move when the test labels do.
"""

from __future__ import annotations

import json
import os

import pytest


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _by_hand(labels, flags) -> dict:
    """Macro F1 and F1b from the confusion counts, the formulas written out."""
    tp = sum(1 for y, f in zip(labels, flags) if y and f)
    fp = sum(1 for y, f in zip(labels, flags) if not y and f)
    fn = sum(1 for y, f in zip(labels, flags) if y and not f)
    tn = len(labels) - tp - fp - fn

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r else 0.0

    p1, r1 = (tp / (tp + fp) if tp + fp else 0.0), tp / (tp + fn)
    p0, r0 = (tn / (tn + fn) if tn + fn else 0.0), tn / (tn + fp)
    pb = tp / (tp + fp * (tp + fn) / (tn + fp)) if tp + fp else 0.0
    return {"macro_f1": (f1(p1, r1) + f1(p0, r0)) / 2, "balanced_f1": f1(pb, r1)}


def test_never_alarm_is_half_the_correct_class_f1_by_hand(tent_all):
    rows = _rows(tent_all / "never-alarm" / "steps.jsonl")
    m = json.loads((tent_all / "never-alarm" / "metrics.json").read_text())
    assert not any(r["flagged"] or any(r["flagged_for"].values()) for r in rows)
    n, pos = len(rows), sum(r["label"] for r in rows)
    assert (n, pos) == (168, 15)
    # correct class: precision 153/168, recall 1 -> F1 = 2 * 153 / (168 + 153); the mistake class's F1 is 0
    assert m["macro_f1"] == pytest.approx((2 * (n - pos) / (n + n - pos)) / 2)
    assert round(100 * m["macro_f1"], 1) == 47.7 and m["balanced_f1"] == 0.0  # issue 34's number


def test_position_alarms_from_its_k_chosen_on_training_alone(tent_all, online_root):
    from ego_adr.online_mistakes.data import load_training
    from ego_adr.online_mistakes.registry import REGISTRY

    m = json.loads((tent_all / "position" / "metrics.json").read_text())
    ks = {k: v["k"] for k, v in m["selection"]["operating_points"].items()}
    fresh = REGISTRY.build("position")
    fresh.fit(load_training(online_root, "epic-tent-o"))  # the training file only: the same k
    assert ks == {k: fresh.k[k] for k in ks}
    rows = _rows(tent_all / "position" / "steps.jsonl")
    labels = [r["label"] for r in rows]
    for metric, k in ks.items():
        flags = [r["index"] + 1 >= k for r in rows]
        assert [r["flagged_for"][metric] for r in rows] == flags
        assert m[metric] == pytest.approx(_by_hand(labels, flags)[metric])


def test_position_ceiling_is_the_best_k_on_the_test(tent_all):
    summary = json.loads((tent_all / "summary.json").read_text())
    rows = _rows(tent_all / "flag-all" / "steps.jsonl")  # any monitor's rows hold the labels and positions
    labels = [r["label"] for r in rows]
    for metric, c in summary["position_ceiling"].items():
        best = max(range(1, 40), key=lambda k: (_by_hand(labels, [r["index"] + 1 >= k for r in rows])[metric], k))
        assert c["value"] == pytest.approx(_by_hand(labels, [r["index"] + 1 >= best for r in rows])[metric])
        assert c["value"] >= summary["rows"][[r["monitor"] for r in summary["rows"]].index("position")][metric]
    assert round(100 * summary["position_ceiling"]["balanced_f1"]["value"], 1) == 74.6  # issue 34's ceiling


def test_goal_rows_carry_the_chosen_monitor_and_the_best_blind_baseline(tent_all):
    summary = json.loads((tent_all / "summary.json").read_text())
    chosen = summary["chosen_on_validation"]
    assert chosen == summary["selection"]["chosen"] and chosen in summary["selection"]["candidates"]
    assert chosen not in ("flag-all", "never-alarm", "position")
    rows = {r["monitor"]: r for r in summary["rows"]}
    assert {g["metric"] for g in summary["goal"]} == {"macro_f1", "balanced_f1"}
    for g in summary["goal"]:
        metric = g["metric"]
        assert g["chosen_on_validation"] == chosen and g["chosen_value"] == rows[chosen][metric]
        blind = max(("flag-all", "never-alarm", "position"), key=lambda b: rows[b][metric])
        assert g["blind"] == {"monitor": blind, "value": rows[blind][metric]}
        assert g["reached"] == (g["chosen_margin"] > 0 and g["blind_margin"] > 0)
    md = (tent_all / "summary.md").read_text().splitlines()
    assert md[2].startswith(f"**Chosen without the test: {chosen}**")
    assert md[3].startswith("Best on the test (not a selection)")


def test_the_choice_reads_no_test_number():
    """goal() takes the chosen monitor from the selection: shuffling the test values among the monitors moves the
    best on the test and never the chosen one."""
    from ego_adr.online_mistakes.goal import goal

    def row(name, macro, f1b):
        return {"monitor": name, "privileged": False, "macro_f1": macro, "balanced_f1": f1b}

    names = ["egoadr-graph", "ngram-oneclass", "stacked", "flag-all", "never-alarm", "position"]
    values = [(0.70, 0.60), (0.74, 0.55), (0.60, 0.50), (0.2, 0.667), (0.47, 0.0), (0.56, 0.71)]
    for shift in range(3):
        vals = values[shift:3] + values[:shift] + values[3:]
        goals = goal([row(n, *v) for n, v in zip(names, vals)], "epic-tent-o", "oracle", "stacked")
        assert {g["chosen_on_validation"] for g in goals} == {"stacked"}
        assert goals[0]["chosen_value"] == vals[2][0]


def test_the_selection_is_the_same_when_the_test_labels_are_permuted(tent_all, online_root, cli, tmp_path):
    """A data root whose EPIC-Tent-O test recordings are reversed (the mistake is now another step): the same
    training file, the same choice and nested scores; the test rows move."""
    root = tmp_path / "root"
    (root / "dtgl").mkdir(parents=True)
    os.symlink(online_root / "prego", root / "prego")
    (root / "dtgl" / "epic-tent").mkdir()
    for f in (online_root / "dtgl" / "epic-tent").iterdir():
        if f.name != "test.json":
            os.symlink(f, root / "dtgl" / "epic-tent" / f.name)
    doc = json.loads((online_root / "dtgl" / "epic-tent" / "test.json").read_text())
    for ann in doc["annotations"].values():
        segs = ann["segments"][::-1]
        ann["segments"] = [s | {"has_errors": i == len(segs) - 1} for i, s in enumerate(segs)]
    (root / "dtgl" / "epic-tent" / "test.json").write_text(json.dumps(doc))
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", "all",
                       "--data-root", root, "--out", tmp_path / "out", "--quiet")
    assert code == 0, err
    a = json.loads((tent_all / "summary.json").read_text())
    b = json.loads((tmp_path / "out" / "summary.json").read_text())
    # the selection is kept per training set (and read back here): nothing of the test is in what it depends on
    assert {k: v for k, v in b["selection"].items() if k != "cached"} == \
        {k: v for k, v in a["selection"].items() if k != "cached"}
    assert [g["chosen_on_validation"] for g in b["goal"]] == [g["chosen_on_validation"] for g in a["goal"]]
    assert [r["macro_f1"] for r in b["rows"]] != [r["macro_f1"] for r in a["rows"]]
