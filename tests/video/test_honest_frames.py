"""Honest frames on a truncated MP4 made here (index at the front, second half of the bytes missing), the one
window rule, sampling policies and recorded decoder switches. Frames carry their index (read_frame_index), so
every assertion about *which* frames a model would get is checked on the pictures themselves."""

from __future__ import annotations

import numpy as np
import pytest

from ego_adr.data.window import END_TOLERANCE_S, WindowError, normalise_window
from ego_adr.video.policies import Plan, policy_names, register_policy
from ego_adr.video.sampler import AUTO_ORDER, FrameSampler, VideoError, available_backends
from ego_adr.video.synth import make_test_video, make_truncated_video, read_frame_index

FPS = 10
pytest.importorskip("av")


@pytest.fixture(scope="module")
def cut(tmp_path_factory):
    """60 s at 10 fps (600 frames declared); about the first 30 s decodable."""
    path = make_truncated_video(tmp_path_factory.mktemp("trunc") / "cut.mp4", 60, fps=FPS)
    with FrameSampler("pyav") as fs:
        r = fs.reader(path)
        present, declared = r.num_frames, r.declared_frames
    assert declared == 600 and 200 < present < 400, (present, declared)
    return path, present


def shown(arr: np.ndarray) -> list[int]:
    return [read_frame_index(f) for f in arr]


def test_window_in_the_missing_half_fails_with_a_reason(cut):
    path, present = cut
    with FrameSampler() as fs:
        with pytest.raises(VideoError) as e:
            fs.sample_with_info(path, 45.0, 50.0, 8)
    assert e.value.kind == "missing-frames"
    assert "8 of 8 requested frames not decodable" in e.value.reason
    assert "600 frames its header declares" in e.value.reason  # the cut is named, not hidden


@pytest.mark.parametrize("substitute", ["none", "nearest"])
def test_window_across_the_cut_is_not_scored_as_if_whole(cut, substitute):
    path, present = cut
    with FrameSampler(substitute=substitute) as fs, pytest.raises(VideoError, match="not decodable") as e:
        fs.sample_with_info(path, 20.0, 40.0, 8)  # half of it after the cut: never clamped to what is left
    assert e.value.kind == "missing-frames"


def test_whole_video_of_a_truncated_file_fails(cut):
    with FrameSampler() as fs, pytest.raises(VideoError, match="not decodable"):
        fs.sample_with_info(cut[0], -1, -1, 8)


def test_frames_before_the_cut_are_exact(cut):
    path, present = cut
    with FrameSampler() as fs:
        arr, info = fs.sample_with_info(path, 5.0, 12.0, 8)
    assert shown(arr) == info.indices and not info.substitutions and info.declared_frames == 600
    assert info.policy == "bin-centre" and info.notes == []


def test_substitution_only_when_allowed_and_recorded(cut):
    path, present = cut
    first = present - 75  # 80 frames in 8 segments: the last centre is first + 75, the first frame not in the file
    start, end = first / FPS, (first + 80) / FPS
    with FrameSampler(substitute="none") as fs, pytest.raises(VideoError, match="1 of 8 requested frames not decodable"):
        fs.sample_with_info(path, start, end, 8)
    with FrameSampler(substitute="nearest") as fs:
        arr, info = fs.sample_with_info(path, start, end, 8)
    assert info.substitutions, "the missing frame must be recorded"
    for s in info.substitutions:
        assert s["requested"] >= present - 1 and s["used"] < s["requested"] and abs(s["seconds_off"]) <= 0.5
        assert s["used"] in info.indices and any(f"replaced by frame {s['used']}" in n for n in info.notes)
    assert shown(arr) == info.indices  # the pictures are the frames the record says


@pytest.mark.parametrize("start,end,reason", [
    (None, 4.0, "one end is missing"), (3.0, -1, "one end is missing"), (5.0, 2.0, "before start"),
    (12.0, 14.0, "starts at or after the video's end"), (6.0, 9.0, "after the video's end"),
])
def test_window_rule_refuses_with_the_reason(tmp_path, start, end, reason):
    path = make_test_video(tmp_path / "v.mp4", 6, fps=8)
    with FrameSampler() as fs, pytest.raises(VideoError, match=reason) as e:
        fs.sample_with_info(path, start, end, 4)
    assert e.value.kind == "window"


def test_window_rule_notes():
    w = normalise_window(-1, -1, 30.0, 10.0)
    assert w.whole_video and (w.start, w.end) == (0.0, 30.0) and "no segment" in w.notes[0]
    w = normalise_window(10.0, 30.0 + END_TOLERANCE_S, 30.0, 10.0)
    assert w.clamped and w.end == 30.0 and "past the video's end" in w.notes[0]
    w = normalise_window(4.0, 4.0, 30.0, 10.0)
    assert (w.start, w.end) == (4.0, 4.1) and "zero-length" in w.notes[0]
    with pytest.raises(WindowError):
        normalise_window(float("nan"), 3.0, 30.0, 10.0)


def test_policy_is_recorded_and_pluggable(tmp_path):
    path = make_test_video(tmp_path / "v.mp4", 4, fps=8)
    assert set(policy_names()) == {"bin-centre", "public-linspace"}  # one name per rule
    register_policy("first-frames-test", lambda total, fps, s, e, n: Plan(list(range(n)), (0.0, n / fps)))
    with FrameSampler(policy="first-frames-test") as fs:
        arr, info = fs.sample_with_info(path, 1.0, 2.0, 3)
    assert info.policy == "first-frames-test" and shown(arr) == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown sampling policy"):
        FrameSampler(policy="linspace")

    def last_frames_rule(total, fps, s, e, n):  # plan_indices' signature: (indices, window, flags)
        return list(range(total - n, total)), ((total - n) / fps, total / fps), {"notes": ["test rule"]}

    with FrameSampler(index_rule=last_frames_rule) as fs:
        arr, info = fs.sample_with_info(path, 1.0, 2.0, 3)
    assert info.policy == "last_frames_rule" and shown(arr) == [29, 30, 31] and info.notes == ["test rule"]
    with FrameSampler(index_rule=lambda total, fps, s, e, n: list(range(n))) as fs:  # no window said: refused
        with pytest.raises(VideoError, match="index rule returns a Plan or"):
            fs.sample_with_info(path, 1.0, 2.0, 3)


@pytest.mark.skipif(len(available_backends()) < 2, reason="needs two video backends")
def test_decoder_switch_is_recorded_on_every_later_sample(tmp_path, monkeypatch):
    from ego_adr.video import readers

    path = make_test_video(tmp_path / "v.mp4", 6, fps=8)
    first = next(b for b in AUTO_ORDER if b in available_backends())

    def loses_frames(self, indices, transform):  # a decoder that returns nothing where asked (test double)
        return [readers.Decoded(None, problem=f"frame {i} could not be decoded (simulated)") for i in indices]

    monkeypatch.setattr(readers._READERS[first], "read", loses_frames)
    with FrameSampler("auto") as fs:
        _, a = fs.sample_with_info(path, 1.0, 3.0, 4)
        arr, b = fs.sample_with_info(path, 3.0, 5.0, 4)
    for info in (a, b):
        assert info.backend != first and info.decoder_switches[0]["from"] == first
        assert "simulated" in info.decoder_switches[0]["reason"] and "decoded by" in info.notes[-1]
    assert shown(arr) == b.indices
    with FrameSampler(first) as fs, pytest.raises(VideoError, match="simulated"):
        fs.sample_with_info(path, 1.0, 3.0, 4)


def test_a_run_records_the_cut_as_the_samples_failure(cut):
    """Through the runner's decode step: the sample carries the reason, and no frames reach a model."""
    from ego_adr.data.sample import MULTIPLE_CHOICE, Sample
    from ego_adr.reasoning.clips import decode_item

    path, _ = cut
    with FrameSampler() as fs:
        for (s, e), ok in (((5.0, 12.0), True), ((45.0, 50.0), False), ((20.0, 40.0), False)):
            sample = Sample("demo", MULTIPLE_CHOICE, f"demo/cut/{s}", "t", "p", "cut", str(path), s, e, "a",
                            "action_annotation", ["correct"])
            item = decode_item(fs, sample, 8)
            assert (item.frames is not None) == ok and (item.frames_error is None) == ok
            if not ok:
                assert "not decodable" in item.frames_error and "header declares" in item.frames_error
