"""The online monitor's progress tracking and alerts, the synthetic recordings and the episodes built from them.

Narrations here are text (the reference-narration diagnostic, or written in the test), so the step localisation,
progress rules and classifier are exercised on meaningful input; the video path is covered by test_stream_run.
"""

import pytest

from ego_adr.reasoning import online as S
from ego_adr.reasoning.online import OnlineMonitor, belief_from_classification
from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
from ego_adr.stream.episodes import build_episodes, demo_episodes
from ego_adr.stream.runner import StreamSettings, reference_narrator, stream_recording
from ego_adr.video.synth_recording import labels_for

TEA = ("First, fill the kettle with water at the tap, then put the kettle on its base and switch it on. Next, put "
       "a tea bag into the cup, then pour the hot water from the kettle into the cup. Finally, add a spoonful of "
       "sugar to the cup, then stir the tea with the spoon.")


@pytest.fixture()
def monitor():
    m = OnlineMonitor(EgoADR(None, PipelineConfig(mode="shallow")))
    m.reset("demo_make_tea", TEA, "test")
    return m


def _tick(m, t, text):
    return m.update(t, (max(0.0, t - 8), t), m.observe_text(text))


def test_progress_rules_jump_late_step_and_repeat(monitor):
    assert len(monitor.bank.steps) == 6
    t = _tick(monitor, 4, "The person fills the kettle with water at the tap.")
    assert (t.step_index, t.prob, t.alerts) == (0, 0.0, [])
    t = _tick(monitor, 8, "The person puts a tea bag into the cup.")  # step 3, step 2 unseen
    assert (t.step_index, t.error_type) == (2, "Wrong order") and t.prob == pytest.approx(S.JUMP_P)
    assert t.alerts == []  # a jump alone stays below the threshold
    t = _tick(monitor, 12, "The person puts the kettle on its base and switches it on.")  # step 2 after step 3
    assert t.error_type == "Wrong order" and t.prob == pytest.approx(S.LATE_STEP_P)
    assert [(a.step_index, a.error_type) for a in t.alerts] == [(2, "Wrong order")]  # step 3 was done too early
    t = _tick(monitor, 16, "The person puts the kettle on its base and switches it on.")  # same step: no news
    assert t.prob == 0.0
    t = _tick(monitor, 20, "The person fills the kettle with water at the tap.")  # step 1 again
    assert t.error_type == "Unintended and unnecessary action" and t.prob == pytest.approx(S.REPEAT_P)
    end = monitor.finish(24.0)
    assert [(a.step_index, a.error_type, a.kind) for a in end.alerts] == [
        (3, "Omission", "end"), (4, "Omission", "end"), (5, "Omission", "end")]


def test_end_check_separates_bracketed_from_trailing_steps(monitor):
    for t, text in [(4, "fill the kettle with water at the tap"), (8, "put a tea bag into the cup"),
                    (12, "pour the hot water from the kettle into the cup")]:
        _tick(monitor, t, text)
    end = monitor.finish(14.0)
    probs = {a.step_index: a.prob for a in end.alerts}
    assert probs[1] == S.OMITTED_P  # step 2 lies between steps that were seen
    assert probs[4] == probs[5] == S.TRAILING_P


def test_keyword_evidence_and_belief_mapping(monitor):
    t = _tick(monitor, 4, "Object/Tool: salt\nAction: adds salt to the cup\nAnomaly: salt instead of sugar")
    assert t.error_type == "Wrong object" and t.alerts and t.alerts[0].evidence["classifier"]
    assert belief_from_classification({"option": "correct", "method": "llm"}) == (S.LLM_CORRECT_P, None)
    assert belief_from_classification({"option": "Omission", "method": "llm"}) == (S.LLM_ERROR_P, "Omission")
    assert belief_from_classification({"option": None, "method": "unparseable"}) == (S.UNPARSEABLE_P, None)
    assert belief_from_classification({"option": "correct", "method": "no-error-keywords"}) == (0.0, None)


def test_failed_window_is_a_tick_without_evidence(monitor):
    t = monitor.update(4.0, (0.0, 4.0), {"failure": "video: cannot decode"})
    assert t.failure and t.prob == 0.0 and monitor.current is None


def test_recording_labels_follow_from_how_it_was_made():
    plain = ((1, {}), (3, {}), (2, {}), (4, {}))
    assert labels_for(plain, 4) == (["correct", "Wrong order", "correct", "correct"], {})
    got, omitted = labels_for(tuple((i, {}) for i in range(1, 5)) + ((5, {"swap": {"sugar": "salt"}}),), 6)
    assert got[4] == "Wrong object" and omitted == {6: "Omission"} and got[0] == "correct"
    twice = ((1, {}), (2, {}), (2, {}), (3, {"kind": "move"}), (4, {"no_effect": True}), (5, {"redo": {"a": "b"}}))
    assert labels_for(twice, 6)[0] == ["correct", "correct", "Unintended and unnecessary action", "Wrong action",
                                       "Equipment failure", "Correct wrong action"]


@pytest.fixture(scope="module")
def demo_eps():
    return {e["video_id"]: e for e in demo_episodes()}


def test_demo_episodes_in_the_public_schema(demo_eps):
    from ego_adr.video.synth_recording import RECORDINGS

    assert set(demo_eps) == {r[0] for r in RECORDINGS}
    ep = demo_eps["stream_tea_errors"]
    assert [s["labels"] for s in ep["segments"]] == [["correct"]] * 4 + [["Wrong object"]]
    assert ep["end_labels"] == ["Omission"] and ep["categories"] == ["Omission", "Wrong object"]
    assert ep["first_error_start"] == ep["segments"][4]["start"]
    assert demo_eps["stream_tea_correct"]["correct"]


def test_synthetic_recordings_cover_every_drawable_error_fully_annotated(demo_eps):
    from ego_adr.taxonomy import ERROR_OPTIONS

    eps = list(demo_eps.values())
    assert all(e["annotation"] == "full" for e in eps)
    assert {c for e in eps for c in e["categories"]} == set(ERROR_OPTIONS) - {"Others"}
    assert sum(e["correct"] for e in eps) >= 2
    # an omission at the end (due when the recording ends) and one in the middle (due when the next step starts)
    tail = demo_eps["stream_tea_errors"]["omissions"][0]
    assert tail["expected_start"] == demo_eps["stream_tea_errors"]["segments"][-1]["end"]
    assert tail["due"] == pytest.approx(30.25)  # 28.5 s end of step 5 + 0.75 s pause + 1 s back to rest
    mid = demo_eps["stream_tea_skip"]
    assert mid["omissions"] == [{"action": "Put a tea bag into the cup", "labels": ["Omission"],
                                 "expected_start": mid["segments"][1]["end"], "due": mid["segments"][2]["start"]}]


@pytest.mark.parametrize("video_id,expected", [
    ("stream_tea_errors", [("window", 4, "Wrong object"), ("end", 5, "Omission")]),
    ("stream_tea_correct", []),
    ("stream_cereal_order", [("window", 2, "Wrong order")]),
])
def test_reference_narration_finds_the_injected_errors(demo_eps, video_id, expected):
    from ego_adr.video.sampler import FrameSampler

    ep = demo_eps[video_id]
    mon = OnlineMonitor(EgoADR(None, PipelineConfig(mode="shallow")))
    with FrameSampler() as sampler:
        res = stream_recording(mon, ep["video_path"], ep["task_id"], ep["procedure"], StreamSettings(), sampler,
                               ep["id"], narrate_from=reference_narrator(ep["segments"]))
    assert [(a["kind"], a["step_index"], a["error_type"]) for a in res["alerts"]] == expected


def test_no_look_ahead_with_alerts(demo_eps, tmp_path):
    from ego_adr.video.sampler import FrameSampler
    from ego_adr.video.synth_recording import truncate_video

    ep = demo_eps["stream_tea_errors"]
    cut = truncate_video(ep["video_path"], tmp_path / "cut.mp4", 22.0)
    runs = []
    for path in (ep["video_path"], str(cut)):
        mon = OnlineMonitor(EgoADR(None, PipelineConfig(mode="shallow")))
        with FrameSampler() as sampler:
            runs.append(stream_recording(mon, path, ep["task_id"], ep["procedure"], StreamSettings(), sampler,
                                         ep["id"], narrate_from=reference_narrator(ep["segments"])))
    full, part = runs
    # the cut ends off the 4-s grid: 5 grid ticks, then a last one at 22 s watches the tail [14, 22)
    assert [t["t"] for t in part["ticks"]] == [4.0, 8.0, 12.0, 16.0, 20.0, 22.0]
    k = 5
    assert [t["prob"] for t in part["ticks"][:k]] == [t["prob"] for t in full["ticks"][:k]]
    assert [a for a in part["alerts"] if a["kind"] == "window" and a["t"] <= 20.0] == [
        a for a in full["alerts"] if a["t"] <= 20.0]
    assert full["ticks"][-1]["t"] == pytest.approx(full["duration"])  # the full recording's tail is watched too
    assert part["alerts"][0]["error_type"] == "Wrong object"


def test_episodes_from_real_annotations(shared_data):
    from ego_adr.data.egoerrorvqa import load_samples

    eps = build_episodes(load_samples(shared_data, sources=["captaincook4d", "epic_tent", "assembly101", "egooops"]))
    by_source = {}
    for e in eps:
        by_source[e["source"]] = by_source.get(e["source"], 0) + 1
        starts = [s["start"] for s in e["segments"]]
        assert starts == sorted(starts)
        for s in e["segments"]:  # merged contradictory records are erroneous, never "correct" + an error
            assert s["labels"] == ["correct"] or "correct" not in s["labels"]
        assert e["correct"] == (not e["categories"])
    assert set(by_source) == {"captaincook4d", "epic_tent", "assembly101", "egooops"}
    assert len({e["id"] for e in eps}) == len(eps)


def test_deep_route_asks_the_model_to_match_and_classify():
    """Deep decoupling online, with a scripted model double (the test is about the monitor around the model):
    narration, the model's step choice and the text-only classification each cost one call per window."""
    import numpy as np

    from ego_adr.models.base import Frames
    from ego_adr.models.doubles import ScriptedModelDouble

    double = ScriptedModelDouble(answer="Answer: Wrong order")
    mon = OnlineMonitor(EgoADR(double, PipelineConfig(mode="deep")))
    mon.reset("demo_make_tea", TEA, "deep")
    assert mon.bank.builder.startswith("model:") and len(mon.bank.steps) == 2  # the double's numbered bank
    frames = Frames(np.zeros((4, 32, 32, 3), np.uint8), fps=1.0)
    t = mon.step(4.0, (0.0, 4.0), frames)
    stages = [s for s, _, _ in double.asked]
    assert stages == ["bank", "narrate", "match", "classify"]
    assert t.step_index == 1 and t.evidence["match"]["method"] == "model"  # the double picked step 2
    assert t.evidence["classification"]["option"] == "Wrong order"
    # step 2 first, step 1 unseen: the classifier's belief and the jump combine by noisy-or
    assert t.prob == pytest.approx(1 - (1 - S.LLM_ERROR_P) * (1 - S.JUMP_P))
    assert [(a.step_index, a.error_type) for a in t.alerts] == [(1, "Wrong order")]


def test_direct_baseline_has_the_same_end_check():
    """The one-pass baseline (a scripted model double: the test is about the monitor around the model) tracks the
    steps its replies name, so the shared end check can catch an omission; its window probability stays the
    answer's alone."""
    import numpy as np

    from ego_adr.models.base import Frames
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.stream.baselines import DirectStreamMonitor

    double = ScriptedModelDouble(answer="The person fills the kettle with water at the tap.\nAnswer: correct")
    mon = DirectStreamMonitor(EgoADR(double, PipelineConfig(mode="shallow")))
    mon.reset("demo_make_tea", TEA, "direct")
    t = mon.step(4.0, (0.0, 4.0), Frames(np.zeros((4, 32, 32, 3), np.uint8), fps=1.0))
    assert t.prob == belief_from_classification(t.evidence["classification"])[0]  # the answer's alone
    assert t.reached and t.match_method == "tfidf" and t.evidence["match"]["index"] == 0 and not t.alerts
    end = mon.finish(8.0)
    assert end.evidence["reached_steps"] == [t.evidence["match"]["index"]] and end.evidence["unseen_steps"] == list(range(1, len(mon.bank.steps)))
    assert end.alerts and {a.error_type for a in end.alerts} == {"Omission"}
    assert all(a.kind == "end" for a in end.alerts)
