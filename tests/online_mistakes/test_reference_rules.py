"""The reference rules (issue 42 item 2): their alarms recomputed by hand from the training file, one rule under two
names printed once, their rows and their alarm agreement with the chosen monitor in every summary and report."""

from __future__ import annotations

import json

START = -1


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _training(online_root) -> list[list[int]]:
    doc = json.loads((online_root / "dtgl" / "epic-tent" / "train.json").read_text())
    return [[s["step_id"] for s in a["segments"]] for a in doc["annotations"].values()]


def test_the_rules_alarm_on_what_no_training_recording_contains(tent_all, online_root):
    seqs = _training(online_root)
    steps = {x for s in seqs for x in s}
    pairs = {p for s in seqs for p in zip([START, *s], s)}
    step_rows = _rows(tent_all / "unseen-step" / "steps.jsonl")
    pair_rows = _rows(tent_all / "unseen-transition" / "steps.jsonl")
    assert [r["flagged"] for r in step_rows] == [r["step_id"] not in steps for r in step_rows]
    prev = {}
    for r in pair_rows:
        before = START if r["index"] == 0 else prev[r["episode"]]
        assert r["flagged"] == ((before, r["step_id"]) not in pairs) and r["p_error"] == float(r["flagged"])
        prev[r["episode"]] = r["step_id"]
    # a step never seen is never part of a seen pair: the transition rule raises every alarm of the step rule
    assert all(q["flagged"] for r, q in zip(step_rows, pair_rows) if r["flagged"])
    assert sum(r["flagged"] for r in pair_rows) > 0


def test_one_step_memory_is_the_transition_rule_under_its_old_name(tent_all, online_root, cli, tmp_path):
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "one-step-memory", "--data-root",
                       online_root, "--out", tmp_path / "osm", "--quiet")
    assert code == 0, err
    m = json.loads((tmp_path / "osm" / "metrics.json").read_text())
    assert m["monitor"] == "unseen-transition" and "one-step-memory" in m["note"]
    assert (tmp_path / "osm" / "steps.jsonl").read_bytes() == \
        (tent_all / "unseen-transition" / "steps.jsonl").read_bytes()
    summary = json.loads((tent_all / "summary.json").read_text())
    assert "one-step-memory" not in {r["monitor"] for r in summary["rows"]}  # one rule, one row


def test_summary_and_reports_print_the_rules_and_their_agreement_with_the_chosen_monitor(tent_all):
    summary = json.loads((tent_all / "summary.json").read_text())
    chosen = summary["chosen_on_validation"]
    rows = _rows(tent_all / chosen / "steps.jsonl")
    for rule in ("unseen-step", "unseen-transition"):
        rule_rows = _rows(tent_all / rule / "steps.jsonl")
        for point, got in summary["reference_agreement"][rule].items():
            mine = [r["flagged_for"][point] for r in rows]
            theirs = [q["flagged"] for q in rule_rows]
            assert got == {"alarms": sum(mine), "rule_alarms": sum(theirs),
                           "both": sum(a and b for a, b in zip(mine, theirs)),
                           "same": sum(a == b for a, b in zip(mine, theirs)), "steps": len(rows)}
        assert json.loads((tent_all / chosen / "metrics.json").read_text())["reference_agreement"][rule] == \
            summary["reference_agreement"][rule]
    assert {r["monitor"] for r in summary["rows"] if r["reference"]} == {"unseen-step", "unseen-transition"}
    md = (tent_all / "summary.md").read_text()
    assert "| **unseen-step** (ours, reference) |" in md and "| **unseen-transition** (ours, reference) |" in md
    assert f"Alarms of {chosen} that each reference rule also raises" in md
    report = (tent_all / "count-based" / "report.md").read_text()
    assert "| **unseen-step** (ours, reference) |" in report and "Alarms of count-based that" in report
