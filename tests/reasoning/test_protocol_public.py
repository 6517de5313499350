"""``--protocol public`` reproduces the public white agent's inputs: the frames it samples (read back from the
pictures of stand-in videos), the clip rate it sends, its frame size, its question and its raw answers.

The model is a recording double (the tests are about the inputs the code around the model builds); the
videos are generated per test with each frame's index drawn into its pixels.
"""

import json

import numpy as np
import pytest

from ego_adr.models.base import Generation
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.run.config import ConfigError, RunConfig
from ego_adr.run.runner import default_output_dir, execute, load_dataset
from ego_adr.video.public_policy import public_indices, qwen_vl_utils_list_size, white_agent_window
from ego_adr.video.synth import make_public_layout_videos, read_frame_index

FPS = 2.0  # stand-in videos at 2 fps: int(t * fps) and bin centres pick different frames


class RecordingDouble(ScriptedModelDouble):
    """Answers every request with ``reply`` and keeps the requests it was sent."""

    def __init__(self, reply: str = "Wrong order", fingerprint: str = "recording-double"):
        super().__init__(answer=reply, fingerprint=fingerprint)
        self.requests = []

    def generate(self, requests):
        self.requests += requests
        return [Generation(self.answer) for _ in requests]


@pytest.fixture(scope="module")
def stand_in(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("videos")
    cfg = RunConfig(data_root=str(shared_data), video_root=str(root), limit=12).validate()
    samples, _ = load_dataset(cfg)
    make_public_layout_videos(samples, root, fps=FPS)
    return shared_data, root


def _run(tmp_path, stand_in, model, **kw):
    data, videos = stand_in
    out = tmp_path / "out"
    kw.setdefault("limit", 12)
    kw.setdefault("mode", "direct")
    cfg = RunConfig(model="double", data_root=str(data), video_root=str(videos),
                    cache_dir=str(tmp_path / "cache"), output_dir=str(out), **kw)
    execute(cfg, progress=False, model=model)
    rows = {r["sample_id"]: r for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    return cfg, rows, json.loads((out / "run.json").read_text())


def _white_agent_indices(path, start_raw, end_raw, n=8):
    """The public white agent's rule, restated independently from its source, on decord's frame count/rate."""
    from ego_adr.video.readers import import_decord

    vr = import_decord().VideoReader(path)
    total, fps = len(vr), vr.get_avg_fps() or 30.0
    try:
        s = float(str(start_raw)) if str(start_raw) else 0.0
        e = float(str(end_raw)) if str(end_raw) else 30.0
    except ValueError:
        s, e = 0.0, 30.0
    if s < 0 and e < 0:
        a, b = 0, total - 1
    else:
        a, b = max(0, int(s * fps)), min(total - 1, int(e * fps))
        if b <= a:
            b = min(a + n, total - 1)
    return np.clip(np.linspace(a, b, n, dtype=int), 0, total - 1).tolist()


def test_public_direct_run_samples_the_white_agents_frames_and_records_its_fps(tmp_path, stand_in):
    from ego_adr.data.egoerrorvqa import load_samples

    model = RecordingDouble()
    cfg, rows, run = _run(tmp_path, stand_in, model, protocol="public")
    by_id = {s.sample_id: s for s in load_samples(stand_in[0], sources=None, video_root=stand_in[1])}
    seen = 0
    assert len(model.requests) == len(rows) >= 8
    for req in model.requests:
        frames = req.messages[0].content[0]
        question = req.messages[0].content[1]
        assert frames.fps == 2.0  # what the public agent's processor used (its message's 1.0 is dropped)
        assert req.config.max_new_tokens == 128
        got = [read_frame_index(f) for f in frames.array]
        # the sample this request was for: the one whose raw step text the question quotes
        matches = [s for s in by_id.values() if s.sample_id in rows and
                   question.endswith(f'Current Step: "{s.wire["action_annotation"]}"') and
                   _white_agent_indices(s.video_path, s.wire["start_time"], s.wire["end_time"]) == got]
        assert matches, f"frames {got} are not the white agent's for any sample quoting {question[-60:]!r}"
        seen += 1
    assert seen == len(rows)
    whole = [r for r in rows.values() if r["frames_info"]["whole_video"]]
    assert whole, "the selection should hold a CaptainCook4D omission (start = end = -1)"
    for r in rows.values():
        assert r["frames_info"]["clip_fps_message"] == 1.0 and r["frames_info"]["clip_fps"] == 2.0
        assert r["answer"] == "Wrong order" and r["extraction"] == "raw"
    assert run["protocol"]["name"] == "public" and run["protocol"]["deviations_from_public"] == {}
    assert "-public" in str(default_output_dir(cfg))


def test_default_protocol_keeps_bin_centres_true_rate_and_our_question(tmp_path, stand_in):
    model = RecordingDouble(fingerprint="recording-double-ours")
    _, rows, run = _run(tmp_path, stand_in, model)
    for req in model.requests:
        frames, question = req.messages[0].content
        assert "Answer with exactly one of" in question and req.config.max_new_tokens == 256
    assert run["protocol"]["deviations_from_public"]["sampling"] == {"here": "bin-centre",
                                                                     "public": "public-linspace"}
    for r in rows.values():  # the true sampled rate: 8 frames over the window's seconds
        info = r["frames_info"]
        seconds = max(info["window"][1] - info["window"][0], 1 / info["video_fps"])
        assert info["clip_fps"] == pytest.approx(8 / seconds)
        assert info["indices"][-1] / info["video_fps"] < info["window"][1]  # inside [start, end): never at end


def test_public_question_quotes_the_stored_step_and_leaks_egooops_labels(tmp_path, stand_in):
    model = RecordingDouble(fingerprint="recording-double-q")
    _, rows, _ = _run(tmp_path, stand_in, model, protocol="public", sources=["egooops"], limit=3)
    from ego_adr.reasoning.public_text import read_public_text

    guidance = read_public_text().guidance.strip()
    asked = [r.messages[0].content[1] for r in model.requests]
    assert all(q.startswith(guidance[:80]) for q in asked)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Label leak" in report
    errors = [r for r in rows.values() if r["ground_truth"] != ["correct"] and not r["failure"]]
    assert errors and all(r["action"] is None for r in errors)
    assert sum(q.endswith('Current Step: "None"') for q in asked) == len(errors)


@pytest.mark.parametrize("reply,answers,prediction,extraction", [
    (' "Wrong order." ', "raw", "Wrong order", "raw"),
    ("The person made a wrong order error.", "raw", None, "raw"),
    ("The person made a wrong order error.", "lenient", "Wrong order", "single-mention"),
    ("**Answer:** Omission", "lenient", "Omission", "answer-cue"),
])
def test_baseline_answers_are_raw_unless_lenient_is_asked(tmp_path, stand_in, reply, answers, prediction, extraction):
    model = RecordingDouble(reply, fingerprint=f"recording-{answers}-{reply}")
    cfg, rows, run = _run(tmp_path, stand_in, model, sources=["assembly101"], limit=2,
                          protocol_options={"answers": answers})
    for r in rows.values():
        assert r["raw"] == reply and r["prediction"] == prediction and r["extraction"] == extraction
        assert r["answer"] == (prediction if answers == "lenient" else reply.strip())
        assert (r["failure"] == "unparseable") == (prediction is None)
    assert ("answers=lenient" in str(default_output_dir(cfg))) == (answers == "lenient")


def test_white_agent_window_and_index_rule_edge_cases():
    assert white_agent_window("None", "None") == (0.0, 30.0)  # a null field, as the green agent prints it
    assert white_agent_window("", "") == (0.0, 30.0)
    assert white_agent_window(-1, -1) == (-1.0, -1.0)
    assert public_indices(100, 10.0, -1.0, -1.0, 8)[0] == [0, 14, 28, 42, 56, 70, 84, 99]  # whole video
    assert public_indices(100, 10.0, 2.0, 2.0, 4)[0] == [20, 21, 22, 24]  # end <= start: end = start + N
    idx, _, flags = public_indices(50, 10.0, 3.0, 9.0, 3)  # the end is past the video: clamped
    assert idx == [30, 39, 49] and flags["clamped"]
    assert public_indices(100, 10.0, 1.0, 2.0, 3)[0] == [10, 15, 20]  # both end frames are taken


def test_qwen_vl_utils_frame_size_of_a_frame_list():
    assert qwen_vl_utils_list_size(360, 640, 8)[-1] == (336, 616)  # CaptainCook4D 360p
    assert qwen_vl_utils_list_size(1080, 1920, 8)[-1] == (560, 1036)  # GoPro full HD: capped at 768 cells
    h, w = qwen_vl_utils_list_size(120, 160, 8)[-1]
    assert h * w >= 128 * 28 * 28 and h % 28 == 0 and w % 28 == 0  # small frames are enlarged to 128 cells


def test_unknown_protocol_option_stops_with_a_message(tmp_path):
    with pytest.raises(ConfigError, match="unknown protocol option"):
        RunConfig(protocol_options={"frames_rule": "x"}).validate()
    with pytest.raises(ConfigError, match="public evaluator"):
        RunConfig(protocol="public", protocol_options={"public_source": str(tmp_path / "nowhere")},
                  data_root=str(tmp_path)).validate()


def test_cli_protocol_mistakes_stop_with_one_line_and_exit_2(capsys):
    from ego_adr.run.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--protocol-option", "no-equals-sign"])
    assert e.value.code == 2
    assert main(["--protocol-option", "sampling=every-frame"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("error: --protocol-option") and "sampling must be one of" in err[-1]


def test_public_budget_is_the_baselines_ego_adr_stages_keep_the_papers(tmp_path, stand_in):
    model = RecordingDouble("Omission", fingerprint="recording-budget")
    _run(tmp_path, stand_in, model, protocol="public", mode="deep", limit=2, sources=["assembly101"])
    budgets = {r.meta["stage"]: r.config.max_new_tokens for r in model.requests}
    assert budgets["narrate"] == budgets["classify"] == 256  # Appendix C
    model = RecordingDouble("Omission", fingerprint="recording-budget-2")
    _run(tmp_path / "b", stand_in, model, protocol="public", mode="deep", limit=2, sources=["assembly101"],
         max_new_tokens=64)
    assert {r.config.max_new_tokens for r in model.requests if r.meta["stage"] != "bank"} == {64}


def test_default_protocol_leaves_the_demo_folder_name_alone():
    assert str(default_output_dir(RunConfig(max_new_tokens=64))) == "runs/tiny-demo-multiple-choice-auto-8f-demo"
    assert str(default_output_dir(RunConfig(protocol="public"))).endswith("-8f-public-demo")


def test_default_folders_are_named_by_their_data(tmp_path):
    """Issue 38 point 10: another data root, or a part of one, gets its own default folder (not ``-demo``)."""
    bench, shared = tmp_path / "bench", tmp_path / "shared" / "egoerrorvqa"
    a = default_output_dir(RunConfig(data_root=str(bench)))
    b = default_output_dir(RunConfig(data_root=str(shared), limit=8))
    c = default_output_dir(RunConfig(data_root=str(shared), sources=["epic_tent", "assembly101"]))
    assert str(a) == "runs/tiny-demo-multiple-choice-auto-8f-bench"
    assert str(b) == "runs/tiny-demo-multiple-choice-auto-8f-egoerrorvqa-limit8"
    assert str(c).endswith("-8f-egoerrorvqa-sassembly101+epic_tent")
    assert len({a, b, c, default_output_dir(RunConfig())}) == 4
