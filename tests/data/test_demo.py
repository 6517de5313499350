"""The embedded demo set: builds offline, valid annotations, windows inside the videos, idempotent build."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ego_adr.taxonomy import OPTIONS
from ego_adr.video.demo import VERSION, demo_paths, ensure_demo, load_procedures
from ego_adr.video.sampler import FrameSampler


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return ensure_demo(tmp_path_factory.mktemp("cache"))


def _load(root):
    ann = root / "annotations"
    return (json.loads((ann / "procedure.json").read_text()), json.loads((ann / "demo_answer.json").read_text()),
            json.loads((ann / "demo_qa_pairs.json").read_text()))


def test_layout_and_records(demo):
    assert demo.name == f"demo-v{VERSION}"
    procs, mc, oe = _load(demo)
    assert set(procs) == set(load_procedures()) and len(procs) >= 2
    assert 12 <= len(mc) <= 16 and len(oe) == len(mc)
    for r in mc:
        assert r["task_id"] in procs
        assert isinstance(r["close_end_answer"], list) and all(o in OPTIONS for o in r["close_end_answer"])
        assert r["is_error"] == (r["close_end_answer"] != ["correct"])
        assert (r["error_description"] is None) == (not r["is_error"])
        steps = [s["text"] for s in load_procedures()[r["task_id"]]["steps"]]
        assert r["action_annotation"] in steps
        if r["close_end_answer"] == ["Omission"]:
            assert r["start_time"] == r["end_time"] == -1
    for r in oe:
        assert "close_end_answer" not in r and 1 <= len(r["qa_pairs"]) <= 2
        assert all(q["question"].strip() and q["answer"].strip() for q in r["qa_pairs"])
    labels = Counter(r["close_end_answer"][0] for r in mc)
    assert {"correct", "Wrong order", "Omission", "Wrong object"} <= set(labels)
    per_video = Counter(r["video_id"] for r in mc)
    assert max(per_video.values()) >= 3  # several samples share one task video, as in the real data


def test_every_video_exists_and_windows_are_inside(demo):
    _, mc, _ = _load(demo)
    with FrameSampler() as fs:
        longest = 0.0
        for r in mc:
            path = demo / "videos" / "demo" / f"{r['video_id']}.mp4"
            assert path.is_file()
            frames, info = fs.sample_with_info(path, r["start_time"], r["end_time"], 8)
            assert frames.shape == (8, 240, 320, 3)
            assert not info.clamped and not info.duplicated
            duration = info.video_frames / info.video_fps
            longest = max(longest, duration)
            if r["start_time"] >= 0:
                assert 0 <= r["start_time"] < r["end_time"] <= duration
            else:
                assert info.whole_video
    assert 25 <= longest <= 45  # a task video of ~30-40 s with per-step windows


def test_clips_change_inside_the_windows(demo):
    """The hand moves during an annotated step: frames at the window's ends differ."""
    _, mc, _ = _load(demo)
    with FrameSampler() as fs:
        for r in mc:
            if r["start_time"] < 0:
                continue
            a = fs.sample(demo / "videos" / "demo" / f"{r['video_id']}.mp4", r["start_time"], r["end_time"], 4)
            assert (abs(a[0].astype(int) - a[-1].astype(int)).sum(axis=2) > 60).mean() > 0.002


def test_idempotent_and_rebuilds_on_stale_stamp(tmp_path):
    root = ensure_demo(tmp_path)
    video = root / "videos" / "demo" / "tea_01.mp4"
    before = video.stat().st_mtime_ns
    assert ensure_demo(tmp_path) == root and video.stat().st_mtime_ns == before
    (root / "STAMP").write_text("stale\n")
    assert ensure_demo(tmp_path) == root
    assert (root / "STAMP").read_text().strip() != "stale"
    assert [p.name for p in tmp_path.iterdir()] == [root.name]  # no temporary folders left behind


def test_default_root_and_paths_from_env(demo, monkeypatch):
    monkeypatch.setenv("EGO_ADR_CACHE", str(demo.parent))  # the module's build: found, not rebuilt
    stamp = (demo / "STAMP").stat().st_mtime_ns
    data_root, video_root = demo_paths()
    assert data_root == demo / "annotations" and (data_root / "procedure.json").is_file()
    assert (video_root / "demo").is_dir() and (demo / "STAMP").stat().st_mtime_ns == stamp


def test_loader_reads_the_demo(demo):
    from ego_adr.data import egoerrorvqa

    samples = egoerrorvqa.load_samples(demo / "annotations", sources=["demo"], video_root=demo / "videos")
    assert len(samples) == len(_load(demo)[1])
    assert all(s.video_path and (s.start is None) == (s.ground_truth == ["Omission"]) for s in samples)
