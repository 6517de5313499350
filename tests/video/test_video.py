"""FrameSampler on generated videos whose frames carry their own index (read back with read_frame_index)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ego_adr.data.window import WindowError
from ego_adr.video.sampler import (
    FrameSampler,
    VideoError,
    available_backends,
    clip_info,
    plan_indices,
    target_size,
)
from ego_adr.video.synth import (
    index_frame,
    make_public_layout_videos,
    make_test_video,
    read_frame_index,
    write_video,
)

BACKENDS = available_backends()
FPS = 8


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    d = tmp_path_factory.mktemp("vids")
    return {
        # 10 s at 8 fps = 80 frames; GOP 30 so some windows need a keyframe seek
        "h264": make_test_video(d / "a.mp4", 10, fps=FPS, codec="h264", gop=30),
        # B-frames (preset medium) make decode order differ from display order
        "h264_bframes": make_test_video(d / "b.mp4", 10, fps=FPS, codec="h264", gop=24, preset="medium"),
        "mp4v": make_test_video(d / "c.mp4", 10, fps=FPS, codec="mp4v", gop=12),
        "opencv_mp4v": make_test_video(d / "d.mp4", 4, fps=FPS, codec="mp4v", writer="opencv"),
        "short": make_test_video(d / "short.mp4", 0.5, fps=FPS),  # 4 frames
    }


def decoded_indices(arr: np.ndarray) -> list[int]:
    return [read_frame_index(f) for f in arr]


def test_index_code_roundtrip_uncompressed():
    for i in (0, 1, 255, 4097, 18000, 65535):
        assert read_frame_index(index_frame(i, (320, 180))) == i


def test_plan_window_centres_no_duplicates():
    idx, window, flags = plan_indices(80, 8.0, 2.0, 5.0, 8)  # frames 16..39 (24 frames) -> 8 segments of 3
    assert idx == [17, 20, 23, 26, 29, 32, 35, 38]
    assert window == (2.0, 5.0) and not flags["duplicated"] and not flags["clamped"]
    idx, _, flags = plan_indices(80, 8.0, 2.0, 5.0, 24)  # exactly as many frames as asked
    assert idx == list(range(16, 40)) and not flags["duplicated"]


@pytest.mark.parametrize("window", [(None, None), (-1, -1), (-1.0, -1.0)])
def test_plan_missing_or_negative_window_is_whole_video(window):
    idx, used, flags = plan_indices(80, 8.0, *window, 8)
    assert flags["whole_video"] and used == (0.0, 10.0)
    assert idx == [5, 15, 25, 35, 45, 55, 65, 75]


def test_plan_cuts_a_small_overrun_and_refuses_a_large_one():
    idx, used, flags = plan_indices(80, 8.0, 8.0, 10.8, 4)  # 0.8 s past the end: cut, with a note
    assert flags["clamped"] and used == (8.0, 10.0) and "past the video's end" in flags["notes"][0]
    assert all(64 <= i < 80 for i in idx) and len(set(idx)) == 4
    with pytest.raises(WindowError, match="ends 20.00 s after the video's end"):
        plan_indices(80, 8.0, 8.0, 30.0, 4)
    with pytest.raises(WindowError, match="after the video's end"):  # never the last frame repeated
        plan_indices(80, 8.0, 50.0, 60.0, 3)


def test_plan_short_window_duplicates_recorded():
    idx, _, flags = plan_indices(80, 8.0, 1.0, 1.5, 8)  # 4 frames in the window
    assert flags["duplicated"]
    assert sorted(set(idx)) == [8, 9, 10, 11] and len(idx) == 8 and idx == sorted(idx)


def test_target_size_keeps_aspect():
    assert target_size(3840, 2160, 640, None) == (640, 360)
    assert target_size(640, 360, None, 640 * 360 // 4) == (320, 180)
    assert target_size(320, 240, 1000, None) == (320, 240)  # never upscales


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["h264", "h264_bframes", "mp4v", "opencv_mp4v"])
def test_backend_decodes_the_planned_frames(videos, backend, kind):
    with FrameSampler(backend) as fs:
        # out-of-order windows force backward seeks, forward skips and keyframe jumps
        for start, end, n in [(2.0, 5.0, 8), (0.0, 1.0, 4), (7.5, 9.9, 5), (None, None, 16), (1.0, 3.5, 3)]:
            if kind == "opencv_mp4v" and start == 7.5:  # a 4-s video: the window is after its end
                with pytest.raises(VideoError, match="after the video's end") as e:
                    fs.sample_with_info(videos[kind], start, end, n)
                assert e.value.kind == "window"
                continue
            arr, info = fs.sample_with_info(videos[kind], start, end, n)
            assert arr.dtype == np.uint8 and arr.shape[0] == n and arr.shape[-1] == 3
            assert info.backend == backend
            assert decoded_indices(arr) == info.indices, (backend, kind, start, end)


def test_short_clip_duplicates(videos):
    with FrameSampler() as fs:
        arr, info = fs.sample_with_info(videos["short"], None, None, 8)
    assert info.duplicated and info.video_frames == 4
    assert decoded_indices(arr) == info.indices and sorted(set(info.indices)) == [0, 1, 2, 3]


def test_sample_clip_fps_and_timestamps(videos):
    with FrameSampler() as fs:
        clip = fs.sample_clip(videos["h264"], 2.0, 6.0, 8)
    info = clip_info(clip)
    assert clip.fps == pytest.approx(8 / 4.0)  # sampled rate = N / window seconds
    assert clip.timestamps == tuple(i / FPS for i in info.indices)
    assert all(2.0 <= t < 6.0 for t in clip.timestamps)


def test_resize_bounds_frames_and_keeps_content(videos):
    with FrameSampler(max_side=80) as fs:
        arr, info = fs.sample_with_info(videos["h264"], 1.0, 4.0, 4)
    assert arr.shape[1:3] == (60, 80) and info.frame_size == (80, 60)
    assert decoded_indices(arr) == info.indices


def test_reader_reused_and_lru_bound(tmp_path, videos):
    paths = [make_test_video(tmp_path / f"v{i}.mp4", 1, fps=4) for i in range(3)]
    with FrameSampler(max_open=2) as fs:
        fs.sample(videos["h264"], 0, 2, 4)
        r = fs.reader(videos["h264"])
        for s in range(5):
            fs.sample(videos["h264"], s, s + 1, 2)
        assert fs.reader(videos["h264"]) is r and fs.stats["opens"] == 1
        for p in paths:
            fs.sample(p, None, None, 2)
        assert len(fs.open_paths()) == 2 and fs.stats["evictions"] == 2
        assert r.closed  # least recently used went first
        assert decoded_indices(fs.sample(videos["h264"], 2.0, 5.0, 8)) == [17, 20, 23, 26, 29, 32, 35, 38]
    assert fs.open_paths() == []


def test_threads_share_readers(videos):
    results, errors = {}, []
    with FrameSampler(max_open=2) as fs:

        def work(k):
            try:
                kind = ("h264", "mp4v", "h264_bframes")[k % 3]
                arr, info = fs.sample_with_info(videos[kind], k % 7, k % 7 + 2.5, 6)
                results[k] = decoded_indices(arr) == info.indices
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors and len(results) == 12 and all(results.values())


def test_missing_and_unreadable_files_raise_video_error(tmp_path):
    with FrameSampler() as fs:
        with pytest.raises(VideoError) as e:
            fs.sample(tmp_path / "nope.mp4", 0, 1, 4)
        assert "nope.mp4" in e.value.path
        bad = tmp_path / "bad.mp4"
        bad.write_bytes(b"this is not a video" * 100)
        with pytest.raises(VideoError) as e:
            fs.sample(bad, 0, 1, 4)
        assert e.value.path.endswith("bad.mp4")


def test_bad_arguments_raise_at_once():
    with pytest.raises(ValueError):
        FrameSampler("ffmpeg-cli")
    with pytest.raises(ValueError):
        write_video("/tmp/x.mp4", [np.zeros((10, 10, 3), np.uint8)], 4, codec="h264", writer="opencv")


def test_public_layout_videos_cover_windows(tmp_path):
    from ego_adr.data.sample import MULTIPLE_CHOICE, Sample

    def s(vid, start, end):
        return Sample("captaincook4d", MULTIPLE_CHOICE, f"{vid}-{start}", "t", "p", vid,
                      f"captaincook4d/{vid}_360p.mp4", start, end, "a", "action_annotation", ["correct"])

    samples = [s("1_2", 3.0, 25.0), s("1_2", 40.0, 55.5), s("9_9", None, None)]
    made = make_public_layout_videos(samples, tmp_path, seconds=5, fps=1)
    assert set(made) == {str(tmp_path / "captaincook4d/1_2_360p.mp4"), str(tmp_path / "captaincook4d/9_9_360p.mp4")}
    with FrameSampler() as fs:
        arr, info = fs.sample_with_info(tmp_path / "captaincook4d/1_2_360p.mp4", 40.0, 55.5, 4)
        assert not info.clamped and decoded_indices(arr) == info.indices
        assert fs.sample(tmp_path / "captaincook4d/9_9_360p.mp4", -1, -1, 2).shape[0] == 2


@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs two video backends")
def test_auto_falls_back_when_first_backend_cannot_decode(videos, monkeypatch):
    from ego_adr.video import sampler as video

    first = next(b for b in video.AUTO_ORDER if b in BACKENDS)

    def broken_read(self, indices, transform):  # stands in for a file a library opens but cannot decode
        raise RuntimeError("simulated decode failure")

    monkeypatch.setattr(video._READERS[first], "read", broken_read)
    with FrameSampler("auto") as fs:
        arr, info = fs.sample_with_info(videos["h264"], 2.0, 5.0, 8)
        assert info.backend != first and decoded_indices(arr) == info.indices
        assert fs.reader(videos["h264"]).backend == info.backend  # the working reader serves later samples
    with FrameSampler(first) as fs, pytest.raises(VideoError, match="simulated decode failure"):
        fs.sample(videos["h264"], 2.0, 5.0, 8)


def test_public_layout_videos_for_real_annotations(tmp_path):
    """The real Epic-Tent annotations (4 long videos, windows up to ~720 s) run on generated videos."""
    from pathlib import Path

    shared = Path(__file__).resolve().parents[2].parent / "shared" / "egoerrorvqa"
    if not shared.is_dir():
        pytest.skip(f"EgoErrorVQA annotations not found at {shared}")
    from ego_adr.data import egoerrorvqa

    samples = egoerrorvqa.load_samples(shared, sources=["epic_tent"], video_root=tmp_path)
    made = make_public_layout_videos(samples, tmp_path, fps=1)
    assert len(made) == len({s.video_path for s in samples}) and all(Path(p).is_file() for p in made)
    with FrameSampler() as fs:
        for s in samples:
            arr, info = fs.sample_with_info(s.video_path, s.start, s.end, 4)
            assert not info.clamped and decoded_indices(arr) == info.indices


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_loading_decord_does_not_break_opencv_png(tmp_path):
    """decord's bundled zlib must not capture OpenCV's PNG codec (seen as 'bad parameters to zlib')."""
    import subprocess
    import sys

    if "decord" not in available_backends():
        pytest.skip("decord not installed")
    code = ("from ego_adr.video.readers import import_decord; import_decord(); import cv2, numpy as np; "
            "ok, buf = cv2.imencode('.png', np.zeros((8, 8, 3), np.uint8)); "
            "assert ok and cv2.imdecode(buf, cv2.IMREAD_COLOR) is not None")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
