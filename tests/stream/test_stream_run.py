"""The stream runner on a synthetic recording with the tiny model: no look-ahead, and resume after a kill."""

import json

import pytest

from ego_adr.reasoning.online import OnlineMonitor
from ego_adr.stream.runner import StreamSettings, read_log, stream_recording, tick_times

SETTINGS = StreamSettings(window=8.0, stride=4.0, frames=4)
CUT = 16.0


@pytest.fixture(scope="module")
def recording():
    from ego_adr.stream.episodes import demo_episode

    return demo_episode()


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from ego_adr.models import load_model

    return load_model(str(tiny_model_dir), device="cpu")


def _pipe(model):
    """A fresh pipeline around ``model`` with no stage cache, so every tick really asks the model."""
    from ego_adr.models.cache import CachedModel
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig

    counted = CachedModel(model, None, "hf")
    return EgoADR(counted, PipelineConfig(mode="shallow", frames=SETTINGS.frames, max_new_tokens=12)), counted


def _run(model, video, ep, log=None, on_tick=None):
    from ego_adr.video.sampler import FrameSampler

    pipe, counted = _pipe(model)
    with FrameSampler() as sampler:
        res = stream_recording(OnlineMonitor(pipe), video, ep["task_id"], ep["procedure"], SETTINGS, sampler,
                               ep["id"], log_path=log, on_tick=on_tick)
    return res, counted


def _essence(ticks):
    return [(t["t"], t["window"], t["prob"], t["error_type"], t["step_index"], t["evidence"].get("narration"))
            for t in ticks]


@pytest.fixture(scope="module")
def full_run(tiny, recording):
    return _run(tiny, recording["video_path"], recording)[0]


def test_truncated_recording_gives_the_prefix_of_the_full_run(tiny, recording, full_run, tmp_path):
    from ego_adr.video.synth_recording import truncate_video

    cut = truncate_video(recording["video_path"], tmp_path / "cut.mp4", CUT)
    part, _ = _run(tiny, str(cut), recording)
    assert part["duration"] == pytest.approx(CUT)
    assert [t["t"] for t in part["ticks"]] == tick_times(CUT, SETTINGS.stride) == [4.0, 8.0, 12.0, 16.0]
    k = len(part["ticks"])
    assert len(full_run["ticks"]) > k  # the full recording goes on after the cut
    assert _essence(part["ticks"]) == _essence(full_run["ticks"][:k])
    window_alerts = [a for a in full_run["alerts"] if a["kind"] == "window" and a["t"] <= CUT]
    assert [a for a in part["alerts"] if a["kind"] == "window"] == window_alerts
    # the end check belongs to the end of each recording, never earlier
    assert all(a["t"] == part["duration"] for a in part["alerts"] if a["kind"] == "end")


class Killed(Exception):
    pass


def test_resume_after_a_kill_replays_and_continues(tiny, recording, full_run, tmp_path):
    log = tmp_path / "ticks.jsonl"
    seen = []

    def kill_after_three(tick):
        seen.append(tick.t)
        if len(seen) == 3:
            raise Killed

    with pytest.raises(Killed):
        _run(tiny, recording["video_path"], recording, log, on_tick=kill_after_three)
    assert [r["t"] for r in read_log(log)] == [4.0, 8.0, 12.0]
    with log.open("a") as f:  # a kill in the middle of writing the fourth tick
        f.write('{"t": 16.0, "window": [8.0, 16.0], "obs')
    res, counted = _run(tiny, recording["video_path"], recording, log)
    n = len(full_run["ticks"])
    assert counted.model_calls == n - 3  # one narration per tick not in the log, none for the replayed ones
    assert [t.get("replayed", False) for t in res["ticks"]] == [True] * 3 + [False] * (n - 3)
    assert _essence(res["ticks"]) == _essence(full_run["ticks"])
    assert res["alerts"] == full_run["alerts"]
    records = read_log(log)
    assert records[-1]["final"] and len(records) == n + 1  # the torn line was replaced, not kept
    again, counted = _run(tiny, recording["video_path"], recording, log)
    assert counted.model_calls == 0 and again["alerts"] == full_run["alerts"]
    json.dumps(again)  # everything the runner returns is JSON-able


def test_python_api_watch_up_to_a_time(tiny, recording):
    from ego_adr.stream import watch

    seen = []
    res = watch(recording["video_path"], recording["procedure"], tiny, mode="shallow", frames=4, max_new_tokens=12,
                until=8.0, on_alert=seen.append)
    assert [t["t"] for t in res["ticks"]] == [4.0, 8.0] and res["watched_until"] == 8.0
    assert [a.to_dict() for a in seen] == res["alerts"]
