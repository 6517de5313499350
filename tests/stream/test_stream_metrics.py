"""The streaming metrics against values computed by hand: on the synthetic recordings (every step annotated,
known error times) and on small hand-made episodes (partial annotation, failures)."""

import math

import pytest

from ego_adr.stream.metrics import compute_stream_metrics, scored_subsets, segment_scores
from ego_adr.stream.runner import tick_times


@pytest.fixture(scope="module")
def synth():
    from ego_adr.stream.episodes import demo_episodes

    return {e["video_id"]: e for e in demo_episodes()}


def _out(ep, duration, alarms=(), hot=(), end_prob=0.1):
    """A monitor output on the 4-s grid (plus the tail tick): every tick 0.1 except ``hot`` {t: prob}."""
    ticks = [{"t": t, "window": [max(0.0, t - 8.0), t], "prob": dict(hot).get(t, 0.1), "error_type": None}
             for t in tick_times(duration, 4.0)]
    alerts = [{"t": t, "kind": kind, "error_type": etype, "prob": 0.9, "step_index": None}
              for t, kind, etype in alarms]
    return {"id": ep["id"], "duration": duration, "processing_s": 1.0, "ticks": ticks, "alerts": alerts,
            "end": {"prob": end_prob}}


# the four recordings used below, with the times the renderer gives them (checked in the first test)
E1, C1, S, W = "stream_tea_errors", "stream_tea_correct", "stream_tea_skip", "stream_sandwich_action"
DUR = {E1: 30.25, C1: 37.0, S: 33.0, W: 31.5}


def test_the_synthetic_recordings_have_the_times_used_here(synth):
    assert synth[E1]["segments"][-1]["start"] == 19.75 and synth[E1]["segments"][-1]["end"] == 28.5
    assert synth[E1]["omissions"][0]["expected_start"] == 28.5 and synth[E1]["omissions"][0]["due"] == DUR[E1]
    assert (synth[S]["omissions"][0]["expected_start"], synth[S]["omissions"][0]["due"]) == (8.25, 9.0)
    assert synth[W]["segments"][-1]["labels"] == ["Wrong action"] and synth[W]["segments"][-1]["start"] == 26.5
    assert [len(synth[k]["segments"]) for k in (E1, C1, S, W)] == [5, 6, 5, 6]
    assert tick_times(DUR[E1], 4.0)[-2:] == [28.0, 30.25]  # the tail after the last grid tick is watched
    assert tick_times(16.0, 4.0) == [4.0, 8.0, 12.0, 16.0]  # on the grid: no extra tick


def test_end_alarms_earn_nothing_unless_the_error_is_an_omission(synth):
    """A monitor that alarms at the end of every recording and never while watching."""
    eps = [synth[k] for k in (E1, C1, S, W)]
    outs = [_out(e, DUR[k], [(DUR[k], "end", "Omission")], end_prob=0.9) for e, k in zip(eps, (E1, C1, S, W))]
    m = compute_stream_metrics(eps, outs, tolerance=8.0)
    m3 = m["M3"]
    # E1 (wrong object first, due 28.5: the end alarm at 30.25 used to be "on target") and W: missed;
    # S (omission of step 3, onset 8.25, due 9.0): credited at the end, late, 33.0 - 8.25 = 24.75 s
    assert m3["n_first_error_before_end"] == 3
    assert (m3["missed"], m3["early"], m3["on_target"], m3["late"]) == (pytest.approx(2 / 3), 0.0, 0.0,
                                                                        pytest.approx(1 / 3))
    assert m3["delay_median_s"] == pytest.approx(24.75) and m3["end_alarm_uncredited"] == pytest.approx(2 / 3)
    assert m3["false_alarm"] == 1.0  # C1 is correct: its end alarm is a false alarm
    assert m3["omission_end"] == 1.0 and m3["omission_before"] == 0.0  # E1 and S, both first alarmed at the end
    # point of error: E1 omission TP (the end alarm), E1 wrong object FN; S omission TP; W wrong action FN and
    # its end alarm claims a missing step (FP); C1's end alarm FP -> P 2/4, R 2/4
    poe = m["PoE"]["all"]
    assert (poe["tp"], poe["fp"], poe["fn"]) == (2, 2, 2) and poe["f1"] == 0.5
    assert poe["delay_median_s"] == pytest.approx((30.25 - 28.5 + 33.0 - 8.25) / 2)
    # PREGO's cut (steps up to the first error): E1 and W lose their end alarm (the first error is no
    # omission) -> FN each; S keeps its omission TP; C1 FP -> P 1/2, R 1/3, F1 2/(2 + 1 + 2)
    pre = m["PoE"]["prego"]
    assert (pre["tp"], pre["fp"], pre["fn"]) == (1, 1, 2) and pre["f1"] == pytest.approx(0.4)
    # M1: every recording scores 0.9 (its task-end step) -> ties -> 0.5; M2 positives: 2 segments + 2 ends of 26
    assert m["M1"] == 0.5 and m["M1_normalisation"] == "per-step"
    assert m["M2"]["positive_rate_all"] == pytest.approx(4 / 26)
    # AP: the four end items tie at 0.9 (2 positives: precision 1/2 up to recall 1/2), then all 22 segments
    assert m["M2"]["all"] == pytest.approx(0.5 * 0.5 + 0.5 * 4 / 26)


def test_an_online_monitor_scored_by_hand(synth):
    eps = [synth[k] for k in (E1, C1, S, W)]
    outs = [
        _out(eps[0], DUR[E1], [(24.0, "window", "Wrong object"), (DUR[E1], "end", "Omission")], {24.0: 0.8}, 0.7),
        _out(eps[1], DUR[C1], [(8.0, "window", "Wrong order")], {8.0: 0.8}),
        _out(eps[2], DUR[S], [(12.0, "window", "Wrong order"), (DUR[S], "end", "Omission")], {12.0: 0.8}, 0.7),
        _out(eps[3], DUR[W]),
    ]
    m = compute_stream_metrics(eps, outs, tolerance=8.0)
    m3 = m["M3"]
    # E1: 24 in [19.75, 28.5 + 8] on target, 4.25 s; S: 12 in [8.25, 9 + 8] on target, 3.75 s; W missed
    assert (m3["missed"], m3["on_target"], m3["late"]) == (pytest.approx(1 / 3), pytest.approx(2 / 3), 0.0)
    assert m3["delay_median_s"] == pytest.approx(4.0) and m3["delay_mean_s"] == pytest.approx(4.0)
    assert m3["false_alarm"] == 1.0 and m3["omission_before"] == 1.0
    # PoE: E1 wrong object (alarm 24) + omission (end) TP; S omission TP (alarm 12: the erroneous unit wins
    # over step 4's segment), its end alarm names the same omission (no FP); W FN; C1's alarm at 8 flags
    # step 2 (begun last) FP
    poe = m["PoE"]["all"]
    assert (poe["tp"], poe["fp"], poe["fn"]) == (3, 1, 1) and poe["precision"] == 0.75 and poe["recall"] == 0.75
    assert poe["delay_median_s"] == pytest.approx(3.75)  # 4.25, 1.75, 3.75
    pre = m["PoE"]["prego"]
    assert (pre["tp"], pre["fp"], pre["fn"]) == (2, 1, 1) and pre["f1"] == pytest.approx(2 / 3)
    # M1 per step: E1 0.8, S 0.8, W 0.1 (errorful) vs C1 0.8: (0.5 + 0.5 + 0) / 3
    assert m["M1"] == pytest.approx(1 / 3)
    # M4: Wrong object 1 (E1), Omission 1 (E1 and S name it at the end), Wrong action 0 (W silent); Wrong order
    # named on S and C1 but present nowhere -> 0, outside the macro over present types
    per = m["M4"]["per_type"]
    assert (per["Wrong object"], per["Omission"], per["Wrong action"], per["Wrong order"]) == (1.0, 1.0, 0.0, 0.0)
    assert m["M4"]["macro"] == pytest.approx(2 / 3)
    assert m["recordings"][synth[S]["id"]]["outcome"] == "on_target"


def _ep(eid, segments, omissions=(), annotation="partial"):
    oms = [{"action": "x", "labels": list(o), "expected_start": None, "due": None} for o in omissions]
    cats = sorted({g for s in segments for g in s["labels"] if g != "correct"} | {g for o in oms for g in o["labels"]})
    return {"id": eid, "segments": [{**s, "error": s["labels"] != ["correct"]} for s in segments],
            "omissions": oms, "end_labels": sorted({g for o in oms for g in o["labels"]}), "correct": not cats,
            "categories": cats, "annotation": annotation}


def _tick(t, prob, window=4.0):
    return {"t": t, "window": [max(0.0, t - window), t], "prob": prob, "error_type": None}


def test_per_step_m1_ignores_unlabelled_time_the_tick_maximum_does_not():
    """A partially annotated correct recording with a long unlabelled stretch where the monitor is noisy: the
    maximum over ticks ranks it above the errorful one, the per-step score does not."""
    a = _ep("A", [{"start": 0, "end": 8, "labels": ["Wrong object"]}])
    oa = {"duration": 8.0, "processing_s": 1.0, "end": {"prob": 0.1}, "alerts": [],
          "ticks": [_tick(4, 0.6), _tick(8, 0.6)]}
    b = _ep("B", [{"start": 0, "end": 8, "labels": ["correct"]}])
    ob = {"duration": 40.0, "processing_s": 1.0, "end": {"prob": 0.1}, "alerts": [],
          "ticks": [_tick(4, 0.2), _tick(8, 0.2)] + [_tick(t, 0.9) for t in range(16, 44, 4)]}
    m = compute_stream_metrics([a, b], [oa, ob])
    assert m["M1"] == 1.0 and m["M1_max_tick"] == 0.0
    assert segment_scores(b, ob) == [(0.2, None)]


def test_unsegmented_omissions_count_at_the_end_and_subsets_are_reported_apart(synth):
    c = _ep("C", [{"start": 1, "end": 5, "labels": ["correct"]}], omissions=[["Omission"]])
    oc = {"id": "C", "duration": 8.0, "processing_s": 4.0, "end": {"prob": 0.8}, "ticks": [_tick(4, 0.3), _tick(8, 0.35)],
          "alerts": [{"t": 8.0, "kind": "end", "error_type": "Omission", "prob": 0.8, "step_index": None}]}
    m = compute_stream_metrics([c], [oc])
    assert m["M3"]["n_first_error_before_end"] == 0 and m["M3"]["omission_end"] == 1.0
    assert (m["PoE"]["all"]["tp"], m["PoE"]["all"]["fp"]) == (1, 0)
    both = scored_subsets([c, synth[C1]], [oc, _out(synth[C1], DUR[C1])])
    assert both["all"]["episodes"] == 2 and both["fully_annotated"]["episodes"] == 1
    assert both["fully_annotated"]["M3"]["false_alarm"] == 0.0
    assert scored_subsets([c], [oc])["fully_annotated"] is None


def test_failed_episodes_are_counted_not_scored(synth):
    eps = [synth[E1], synth[C1]]
    outs = [_out(synth[E1], DUR[E1]), {"id": synth[C1]["id"], "failure": "video: file not found"}]
    m = compute_stream_metrics(eps, outs)
    assert m["episodes"] == 1 and m["failed_episodes"] == 1
    assert math.isnan(m["M1"])  # only errorful recordings left: AUROC undefined


def test_end_alarms_on_stand_in_recordings_earn_nothing(shared_data):
    """The stand-in videos end 2 s after a recording's last annotated segment (make_test_videos' margin): an
    alarm there, at the end check, is never on target or late for a segment error and is a false alarm on every
    correct recording; only recordings with an omission count it (Table 15's omission columns)."""
    from ego_adr.data.egoerrorvqa import load_samples
    from ego_adr.stream.episodes import build_episodes

    eps = build_episodes(load_samples(shared_data, sources=["captaincook4d", "epic_tent"]))
    outs = []
    for e in eps:
        d = e["last_annotated_end"] + 2.0
        outs.append({"id": e["id"], "duration": d, "processing_s": 0.0, "end": {"prob": 0.9},
                     "ticks": [_tick(d, 0.1, window=8.0)],
                     "alerts": [{"t": d, "kind": "end", "error_type": "Omission", "prob": 0.9, "step_index": None}]})
    m3 = compute_stream_metrics(eps, outs, tolerance=8.0)["M3"]
    assert m3["n_first_error_before_end"] > 0 and m3["missed"] == 1.0 and m3["on_target"] == m3["late"] == 0.0
    assert m3["false_alarm"] == 1.0 and math.isnan(m3["delay_median_s"])
    assert m3["n_omission_episodes"] == 0 or m3["omission_end"] == 1.0
