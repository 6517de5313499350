"""User mistakes stop `python -m ego_adr.stream` at once with one line and exit 2 (no model is loaded)."""

import argparse
import json

import pytest

from ego_adr.stream.cli import main, seconds


@pytest.mark.parametrize("argv,needle", [
    (["--video", "/nonexistent/rec.mp4", "--procedure", "x"], "no such file"),
    (["--evaluate", "--data-root", "/nonexistent"], "is not a folder"),
    (["--evaluate", "--baselines", "random,oracle"], "unknown monitor 'oracle'"),
    (["--frames", "0"], "--frames"),
    (["--threshold", "1.5"], "--threshold"),
    (["--model", "no-such/model-xyz"], "Unknown model"),
])
def test_user_mistakes_exit_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err


def test_video_without_procedure_and_reference_without_annotations(tmp_path, capsys):
    rec = tmp_path / "rec.mp4"
    rec.write_bytes(b"not a video")
    assert main(["--video", str(rec)]) == 2
    assert "--procedure" in capsys.readouterr().err
    assert main(["--video", str(rec), "--procedure", "Fill the kettle.", "--narration-source", "reference"]) == 2
    assert "annotated segments" in capsys.readouterr().err


def test_durations_parse():
    assert seconds("8s") == 8.0 and seconds("0.5m") == 30.0 and seconds("4") == 4.0
    with pytest.raises(argparse.ArgumentTypeError):
        seconds("fast")


def test_procedure_paths_are_read_as_check_reads_them(tmp_path):
    """Issue 18, item 4: a .md path, an empty .txt and a binary file are files, not the procedure text."""
    from types import SimpleNamespace

    from ego_adr.errors import UserError
    from ego_adr.stream.cli import _procedure

    def args(p):
        return SimpleNamespace(procedure=str(p), data_root=None, task_id=None, video=str(tmp_path / "rec.mp4"))

    md = tmp_path / "steps.md"
    md.write_text("Boil the water. Pour it into the cup.\n")
    assert _procedure(args(md)) == ("steps", "Boil the water. Pour it into the cup.")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blob.txt").write_bytes(bytes(range(256)))
    for bad, why in ((tmp_path / "empty.txt", "is empty"), (tmp_path / "missing.md", "not found"),
                     (tmp_path / "blob.txt", "not UTF-8")):
        with pytest.raises(UserError, match=why):
            _procedure(args(bad))
    assert _procedure(args("Boil the water. Pour it.")) == ("rec", "Boil the water. Pour it.")


def test_a_folder_of_other_settings_names_the_setting_and_fresh_starts_over(tmp_path, capsys):
    """Issue 38, item 2: ``--frames 4`` over a folder written with ``--frames 2`` named the whole settings group,
    cut off at 40 characters; it names the key that differs, and ``--fresh`` (the run's flag) starts over, keeping
    what the stream did not write. ``--output-dir`` is the same flag as ``--out``."""
    out = tmp_path / "stream"
    base = ["--quiet", "--mode", "shallow", "--max-new-tokens", "4", "--no-cache", "--window", "15s", "--stride", "15s"]
    assert main([*base, "--frames", "2", "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine\n")
    capsys.readouterr()
    assert main([*base, "--frames", "4", "--output-dir", str(out)]) == 2
    # refused before the model is loaded (issue 46 item 6): the load's memory plan and progress, which went to
    # stderr first, never come
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "settings.frames 2 -> 4" in err[0] and "--fresh" in err[0], err
    assert "settings.window" not in err[0] and "..." not in err[0]  # only what differs, not cut off
    assert main([*base, "--frames", "4", "--out", str(out), "--fresh"]) == 0
    assert json.loads((out / "identity.json").read_text())["settings"]["frames"] == 4
    ticks = [json.loads(line) for line in (out / "ticks.jsonl").read_text().splitlines()]
    assert ticks and not any(t.get("replayed") for t in ticks)  # nothing kept from the frames-2 run
    assert (out / "notes.txt").read_text() == "mine\n"
