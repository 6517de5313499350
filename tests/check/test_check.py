"""``python -m ego_adr.check`` on clips generated here (ego_adr.video.synth), with the embedded tiny model."""

from __future__ import annotations

import json

import pytest

from ego_adr.check.__main__ import main
from ego_adr.taxonomy import OPTIONS
from ego_adr.video.sampler import plan_indices
from ego_adr.video.synth import make_test_video

PROCEDURE = "Fill the kettle with water. Boil the water. Put a tea bag in the cup. Pour the hot water into the cup."


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    d = tmp_path_factory.mktemp("check")
    (d / "tea.txt").write_text(PROCEDURE + "\n")
    return make_test_video(d / "clip.mp4", 12, fps=8), d / "tea.txt"


def run_json(capsys, *argv):
    rc = main([*argv, "--json", "--max-new-tokens", "8"])
    out = capsys.readouterr().out
    return rc, json.loads(out) if rc == 0 else out


def test_one_clip_verdict_step_narration_evidence_timings(clip, capsys, tiny_model_dir):
    video, proc = clip
    rc, doc = run_json(capsys, "--video", str(video), "--procedure", str(proc),
                       "--step", "pour the hot water into the cup", "--start", "2", "--end", "8")
    assert rc == 0 and doc["route"] == "shallow" and doc["probe"]["route"] == "shallow"  # the random model fails it
    (r,) = doc["clips"]
    assert r["failure"] is None and r["verdict"] in OPTIONS
    assert r["matched_step"]["number"] == 4 and r["matched_step"]["text"] == "Pour the hot water into the cup"
    assert r["matched_step"]["score"] > 0.9 and r["matched_step"]["method"] == "tfidf"
    assert isinstance(r["narration"], str) and r["evidence"]["method"]
    assert r["frames"]["indices"] == plan_indices(96, 8.0, 2.0, 8.0, 8)[0] and r["frames"]["policy"] == "bin-centre"
    assert {"decode_s", "model_narrate_s", "total_s"} <= set(r["timings"])


def test_readable_output_and_text_procedure(clip, capsys, tiny_model_dir):
    video, _ = clip
    assert main(["--video", str(video), "--procedure", PROCEDURE, "--step", "Boil the water",
                 "--max-new-tokens", "8"]) == 0
    out = capsys.readouterr().out
    assert "verdict:" in out and "matched step: #2 'Boil the water'" in out and "whole video" in out
    assert "narration:" in out and "timings:" in out


def test_clips_file_records_a_bad_clip_and_goes_on(clip, tmp_path, capsys, tiny_model_dir):
    video, proc = clip
    f = tmp_path / "clips.csv"
    f.write_text("video,procedure,step,start,end\n"
                 f"{video},{proc},Put a tea bag in the cup,1,5\n"
                 "missing.mp4,,Boil the water,,\n"
                 f"{video},,Boil the water,9,20\n")  # 8 s past the end of a 12-s clip: refused, not clamped
    assert main(["--clips", str(f), "--procedure", PROCEDURE, "--max-new-tokens", "8"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]  # issue 28, item 9: which clips, and why
    assert last.startswith("3 clip(s), 2 without a verdict: #2 missing.mp4: ") and "file not found" in last
    assert "; #3 clip.mp4 9-20 s: " in last and "after the video's end" in last
    rc, doc = run_json(capsys, "--clips", str(f), "--procedure", PROCEDURE)
    assert rc == 0 and len(doc["clips"]) == 3
    ok, missing, late = doc["clips"]
    assert ok["failure"] is None and ok["matched_step"]["number"] == 3
    assert missing["verdict"] is None and "file not found" in missing["failure"]
    assert late["verdict"] is None and "after the video's end" in late["failure"]
    j = tmp_path / "clips.jsonl"
    j.write_text(json.dumps({"video": str(video), "procedure": PROCEDURE, "start": 0, "end": 4}) + "\n")
    rc, doc = run_json(capsys, "--clips", str(j))
    assert rc == 0 and doc["clips"][0]["step"] is None and doc["clips"][0]["matched_step"]  # matched from narration


@pytest.mark.parametrize("argv, says", [
    ([], "name a clip"),
    (["--video", "nope.mp4", "--procedure", "x y", "--step", "s"], "not found"),
    (["--video", "{video}", "--step", "s"], "--procedure is required"),
    (["--video", "{video}", "--procedure", "nope.txt"], "procedure file"),
    (["--video", "{video}", "--procedure", "a b", "--start", "5", "--end", "2"], "before start"),
    (["--video", "{video}", "--procedure", "a b", "--start", "5"], "one end is missing"),
    (["--clips", "{missing}"], "clips file"),
])
def test_user_mistakes_are_one_line_exit_2(clip, tmp_path, capsys, argv, says):
    video, _ = clip
    argv = [a.format(video=video, missing=tmp_path / "none.csv") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and err.startswith("error: ")


def test_an_unreadable_only_clip_stops_before_the_model_is_loaded(tmp_path, capsys, monkeypatch):
    """Issue 18: check used to load the model, then exit 0 with "verdict: none" for a clip it cannot read."""
    from ego_adr.check import core
    from ego_adr.check.__main__ import main

    def no_load(*a, **k):
        raise AssertionError("the model must not be loaded for an unreadable clip")

    monkeypatch.setattr(core, "load_model", no_load)
    junk = tmp_path / "clip.mp4"
    junk.write_bytes(b"\x00not a video\x00" * 64)
    assert main(["--video", str(junk), "--procedure", "Boil the water. Pour it."]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read the video" in err and "clip.mp4" in err
