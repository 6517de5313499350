"""The monitoring layer's episode metrics (M1-M4 as HelpMeOut defines them) against values computed by hand on a
small per-step file, and the per-step file itself: what it refuses, and that a run's metrics come back from it.

These test ``ego_adr.monitoring.episode_metrics`` / ``per_step`` (the layer under HelpMeOut and the video stream),
so they live with the layer's tests (``tests/`` mirrors the package); HelpMeOut is the benchmark whose definitions
they are.
"""

import json
import math

import pytest

from ego_adr.monitoring.episode_metrics import (
    compute_metrics,
    detection_delay,
    first_alarm_outcome,
    type_f1,
)
from ego_adr.monitoring.per_step import group_episodes, read_steps, step_row, write_steps

TYPES = ("omission", "sequence", "perseveration")


def _episode(eid, probs, labels, truth, cats=None):
    cats = cats or [None] * len(probs)
    return [step_row(eid, t, y, p, truth, category=c) for t, (p, y, c) in enumerate(zip(probs, labels, cats))]


@pytest.fixture()
def rows():
    """Four episodes of four steps (the last is the task end):

    - A errorful, a sequence error at step 1; alarms (p >= 0.5) at steps 2 and 3, naming sequence;
    - B errorful, an omission (confirmed at the end, step 3); alarms at step 0 (early) naming omission;
    - C correct, never alarms;  D correct, alarms at the end naming omission (a false alarm).
    """
    return (_episode("A", [0.1, 0.2, 0.6, 0.9], [0, 1, 0, 0],
                     {"errorful": True, "error_onset": 1, "error_types": ["sequence"], "primary_type": "sequence",
                      "stratum": "simple"}, [None, None, "sequence", "sequence"])
            + _episode("B", [0.7, 0.1, 0.1, 0.3], [0, 0, 0, 1],
                       {"errorful": True, "error_onset": 3, "error_types": ["omission"], "primary_type": "omission",
                        "stratum": "simple"}, ["omission", None, None, None])
            + _episode("C", [0.0, 0.1, 0.15, 0.4], [0, 0, 0, 0], {"errorful": False, "stratum": "complex"})
            + _episode("D", [0.05, 0.15, 0.25, 0.8], [0, 0, 0, 0], {"errorful": False, "stratum": "complex"},
                       [None, None, None, "omission"]))


def test_metrics_by_hand(rows):
    m = compute_metrics(rows, types=TYPES, threshold=0.5, bootstrap=0, strata=("simple", "complex"),
                        strata_key="by_complexity")
    # M1: scores A 0.9, B 0.7 (errorful) vs C 0.4, D 0.8: pairs won (A>C, A>D, B>C) = 3 of 4
    assert m["M1"] == pytest.approx(0.75)
    # M2 end: end scores A .9 (y0) D .8 (y0) C .4 (y0) B .3 (y1): B ranks last of 4 -> AP = 1/4
    assert m["M2"]["end"] == pytest.approx(0.25)
    # M2 mid: the one positive (A step 1, p 0.2) has three steps above it (0.7, 0.6, 0.25): precision 1/4
    assert m["M2"]["mid"] == pytest.approx(1 / 4)
    assert m["M2"]["positive_rate_all"] == pytest.approx(2 / 16)
    # M3: only A has its first error before the end; its first alarm (step 2) is after onset 1: late
    m3 = m["M3"]
    assert (m3["n_mid_error_episodes"], m3["missed"], m3["early"], m3["on_target"], m3["late"]) == (1, 0, 0, 0, 1)
    assert m3["false_alarm"] == 0.5 and m3["n_correct_episodes"] == 2  # D alarms, C does not
    assert (m3["n_omission_episodes"], m3["omission_end"], m3["omission_before"]) == (1, 0.0, 1.0)  # B at step 0
    # M4: true sets A {seq} B {om} C {} D {}; named A {seq} B {om} C {} D {om}
    # omission tp1 fp1 fn0 -> 2/3; sequence tp1 -> 1; perseveration absent (not in the macro)
    assert m["M4"]["per_class"] == pytest.approx({"omission": 2 / 3, "sequence": 1.0, "perseveration": 0.0})
    assert m["M4"]["macro"] == pytest.approx((2 / 3 + 1) / 2)
    assert m["M4"]["macro_errorful_only"] == pytest.approx(1.0)  # D left out
    assert m["correct_end_prob_ge_half"] == 0.5  # D's end 0.8, C's 0.4
    assert m["by_complexity"]["simple"]["episodes"] == 2 and math.isnan(m["by_complexity"]["simple"]["M1"])
    # Table 12's pooling: B with the correct C and D; B's end step (0.3) has 0.7, 0.4 and 0.8 above it
    assert m["M2"]["per_class"]["omission"] == {"episodes": 1, "AUPRC": pytest.approx(1 / 4)}


def test_on_target_needs_the_onset_and_tolerance_widens_it():
    assert first_alarm_outcome(None, 3) == "missed"
    assert first_alarm_outcome(2, 3) == "early"
    assert first_alarm_outcome(3, 3) == "on_target"
    assert first_alarm_outcome(4, 3) == "late"
    assert first_alarm_outcome(4, 3, tolerance=1) == "on_target"
    assert first_alarm_outcome(12.0, 10.0, due=11.5, tolerance=0.5) == "on_target"  # seconds: due by its end
    assert first_alarm_outcome(12.1, 10.0, due=11.5, tolerance=0.5) == "late"
    assert detection_delay(12.0, 10.0, "on_target") == 2.0 and detection_delay(9.0, 10.0, "early") is None


def test_type_f1_counts_correct_episodes_and_skips_absent_types():
    per, macro, present = type_f1([{"a"}, set(), {"b"}], [{"a"}, {"a"}, set()], ("a", "b", "c"))
    assert per == {"a": pytest.approx(2 / 3), "b": 0.0, "c": 0.0} and present == ["a", "b"]
    assert macro == pytest.approx(1 / 3)


def test_flagged_decides_where_known(rows):
    # the monitor says it alarms at C's step 1 (p 0.1), and not at D's end (p 0.8)
    for r in rows:
        if (r["episode"], r["index"]) == ("C", 1):
            r["flagged"] = True
        if r["episode"] == "D":
            r["flagged"] = False
    m = compute_metrics(rows, types=TYPES, threshold=0.5, bootstrap=0)
    assert m["M3"]["false_alarm"] == 0.5  # C now, D no longer
    assert m["M4"]["per_class"]["omission"] == 1.0  # D no longer names omission at an alarm


def test_the_file_refuses_a_cut_or_mixed_up_episode(rows, tmp_path):
    with pytest.raises(ValueError, match="episode A: step indices"):
        group_episodes([r for r in rows if (r["episode"], r["index"]) != ("A", 1)])
    rows[1]["errorful"] = False
    with pytest.raises(ValueError, match="episode A: its rows disagree"):
        group_episodes(rows)
    bad = tmp_path / "steps.jsonl"
    bad.write_text('{"episode": "A", "index": 0}\n')
    with pytest.raises(ValueError, match=r"steps.jsonl:1 has no label, p_error"):
        read_steps(bad)
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match=r"steps.jsonl:1 is not JSON"):
        read_steps(bad)


def test_the_file_round_trips(rows, tmp_path):
    path = write_steps(tmp_path / "steps.jsonl", rows)
    assert not list(tmp_path.glob("*.tmp"))
    again = read_steps(path)
    assert again == json.loads(json.dumps(rows))
    a = compute_metrics(rows, types=TYPES, bootstrap=20, seed=3)
    b = compute_metrics(again, types=TYPES, bootstrap=20, seed=3)
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_mean_over_seeds_keeps_shared_counts_and_averages_the_rest():
    from ego_adr.monitoring.episode_metrics import mean_metrics

    runs = [{"episodes": 60, "M1": 0.4, "M3": {"n": 26, "missed": 0.5}, "ci": [0.1, 0.3]},
            {"episodes": 60, "M1": 0.6, "M3": {"n": 26, "missed": 0.0}, "ci": [0.3, 0.5]}]
    m = mean_metrics(runs)
    assert m == {"episodes": 60, "M1": pytest.approx(0.5), "M3": {"n": 26, "missed": 0.25}, "ci": [0.2, 0.4]}
    assert type(m["episodes"]) is int and type(m["M3"]["n"]) is int
    assert type(mean_metrics([{"k": 1}, {"k": 2}])["k"]) is float  # counts that differ are averaged
