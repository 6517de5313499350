"""M1-M4, detection delay and the real-time factor on three small episodes, against values computed by hand."""

import math

import pytest

from ego_adr.stream.metrics import compute_stream_metrics, segment_scores


def _ep(eid, segments, end_labels=()):
    cats = sorted({g for s in segments for g in s["labels"] if g != "correct"} | set(end_labels))
    err = [s["start"] for s in segments if s["labels"] != ["correct"]]
    return {"id": eid, "segments": [{**s, "error": s["labels"] != ["correct"]} for s in segments],
            "end_labels": list(end_labels), "correct": not cats, "categories": cats,
            "first_error_start": min(err) if err else None}


def _tick(t, prob, etype=None, window=4.0):
    return {"t": t, "window": [max(0.0, t - window), t], "prob": prob, "error_type": etype}


def _alert(t, etype, kind="window"):
    return {"t": t, "error_type": etype, "kind": kind, "prob": 0.9, "step_index": None}


@pytest.fixture()
def case():
    # A: a wrong object in [10, 20]; the monitor alarms at t=16 (on target, 6 s after the onset).
    a = _ep("A", [{"start": 0, "end": 8, "labels": ["correct"]}, {"start": 10, "end": 20, "labels": ["Wrong object"]}])
    oa = {"duration": 24.0, "processing_s": 6.0, "end": {"prob": 0.1},
          "ticks": [_tick(4, 0.2), _tick(8, 0.3), _tick(12, 0.4), _tick(16, 0.9, "Wrong object"), _tick(20, 0.6),
                    _tick(24, 0.1)],
          "alerts": [_alert(16, "Wrong object")]}
    # B: correct recording; one false alarm of type Wrong order at t=8.
    b = _ep("B", [{"start": 2, "end": 6, "labels": ["correct"]}, {"start": 9, "end": 14, "labels": ["correct"]}])
    ob = {"duration": 16.0, "processing_s": 2.0, "end": {"prob": 0.2},
          "ticks": [_tick(4, 0.5), _tick(8, 0.7, "Wrong order"), _tick(12, 0.2), _tick(16, 0.1)],
          "alerts": [_alert(8, "Wrong order")]}
    # C: only an unsegmented omission; alarmed at the end check.
    c = _ep("C", [{"start": 1, "end": 5, "labels": ["correct"]}], end_labels=["Omission"])
    oc = {"duration": 8.0, "processing_s": 4.0, "end": {"prob": 0.8},
          "ticks": [_tick(4, 0.3), _tick(8, 0.35)],
          "alerts": [_alert(8, "Omission", "end")]}
    return [a, b, c], [oa, ob, oc]


def test_segment_scores_take_overlapping_ticks(case):
    eps, outs = case
    # A's [10, 20]: windows (8,12], (12,16], (16,20], (20,24] overlap -> max(0.4, 0.9, 0.6) ((20,24] starts at 20)
    assert segment_scores(eps[0], outs[0]) == [(0.3, None), (0.9, "Wrong object")]


def test_metrics_match_hand_computation(case):
    eps, outs = case
    m = compute_stream_metrics(eps, outs, tolerance=4.0)
    # M1: episode scores A 0.9 (errorful), B 0.7 (correct), C 0.8 (errorful): both positives above the negative
    assert m["M1"] == 1.0
    # M2 items (label, score): A segments (0, 0.3) (1, 0.9), A end (0, 0.1); B segments (0, 0.7) (0, 0.2), end
    # (0, 0.2); C segment (0, 0.35), end (1, 0.8). Ranked: 0.9+ 0.8+ 0.7- ... -> AP = (1 + 1) / 2 = 1.0
    assert m["M2"]["all"] == 1.0
    assert m["M2"]["positive_rate_all"] == pytest.approx(2 / 8)
    # segments only: A[1] 0.9 is the top score -> AP 1; end items: C 0.8 top -> AP 1
    assert m["M2"]["segments"] == 1.0 and m["M2"]["end"] == 1.0
    # M3: A is the only recording with an erroneous segment: alarm at 16 in [10, 20 + 4] -> on target, delay 6 s
    assert (m["M3"]["missed"], m["M3"]["early"], m["M3"]["on_target"], m["M3"]["late"]) == (0, 0, 1.0, 0)
    assert m["M3"]["delay_mean_s"] == 6.0 and m["M3"]["delay_median_s"] == 6.0
    assert m["M3"]["false_alarm"] == 1.0  # B alarmed
    assert m["M3"]["omission_end"] == 1.0 and m["M3"]["omission_before"] == 0.0
    # M4: types present Wrong object (A: tp) and Omission (C: tp); Wrong order is a false positive of a type not
    # present, so the macro over present types is (1 + 1) / 2
    assert m["M4"]["per_type"]["Wrong object"] == 1.0 and m["M4"]["per_type"]["Omission"] == 1.0
    assert m["M4"]["per_type"]["Wrong order"] == 0.0
    assert m["M4"]["macro"] == 1.0
    # real-time factor: (6 + 2 + 4) / (24 + 16 + 8)
    assert m["real_time_factor"] == pytest.approx(12 / 48)


def test_early_late_missed_and_a_worse_ranking(case):
    eps, outs = case
    outs[0]["alerts"] = [_alert(4, "Wrong action")]  # before the onset at 10
    outs[0]["ticks"][3]["prob"] = 0.5  # A's erroneous segment now scores 0.6 (the tick at 20), below B's 0.7
    m = compute_stream_metrics(eps, outs, tolerance=4.0)
    assert m["M3"]["early"] == 1.0 and math.isnan(m["M3"]["delay_mean_s"])
    # segments ranked: B[0] 0.7-, A[1] 0.6+, C 0.35-, A[0] 0.3-, B[1] 0.2- -> precision at the positive 1/2
    assert m["M2"]["segments"] == pytest.approx(1 / 2)
    assert m["M4"]["per_type"]["Wrong object"] == 0.0  # named Wrong action instead
    outs[0]["alerts"] = [_alert(30, "Wrong object")]
    assert compute_stream_metrics(eps, outs, tolerance=4.0)["M3"]["late"] == 1.0
    outs[0]["alerts"] = []
    assert compute_stream_metrics(eps, outs, tolerance=4.0)["M3"]["missed"] == 1.0


def test_failed_episodes_are_counted_not_scored(case):
    eps, outs = case
    outs[1] = {"id": "B", "failure": "video: file not found"}
    m = compute_stream_metrics(eps, outs)
    assert m["episodes"] == 2 and m["failed_episodes"] == 1
    assert math.isnan(m["M1"])  # only errorful recordings left: AUROC undefined
