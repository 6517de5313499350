"""The video stream through the one monitoring command (issue 43): the folder's identity as the former ``stream
--evaluate`` wrote it, checked before the model is loaded, a folder of other settings refused (before issue 43 it
was re-labelled and its outputs resumed as the new settings'), the per-step files, and the former command."""

import json

from ego_adr.monitoring.cli import main as monitoring
from ego_adr.monitoring.per_step import read_steps, schema_errors
from ego_adr.stream.cli import main as stream

FORMER_ORDER = ["data", "data_root", "video_root", "sources", "limit", "settings", "model", "route", "threshold",
                "max_new_tokens", "seed", "tolerance_s", "narration_source"]


def _argv(out, *flags):
    return ["evaluate", "--benchmark", "egoadr-stream", "--monitor", "random", "--mode", "shallow", "--window",
            "15s", "--stride", "15s", "--limit", "2", "--quiet", "--out", str(out), *flags]


def test_a_folder_resumes_and_one_of_other_settings_is_refused_before_the_model_loads(tmp_path, capsys):
    out = tmp_path / "eval"
    assert monitoring(_argv(out, "--frames", "2")) == 0
    ident = json.loads((out / "identity.json").read_text())
    assert list(ident) == FORMER_ORDER and ident["model"].startswith("hf:tiny") and ident["route"] == "shallow"
    rows = read_steps(out / "steps" / "random.jsonl")
    assert rows and not [e for r in rows for e in schema_errors(r)]
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics) == ["random"] and metrics["random"]["all"]["episodes"] == 2
    outputs = (out / "outputs" / "random.jsonl").read_bytes()
    capsys.readouterr()
    assert monitoring(_argv(out, "--frames", "4")) == 2
    err = capsys.readouterr().err.splitlines()  # one line: no model load (its memory plan, its progress) before it
    assert len(err) == 1 and "settings.frames 2 -> 4" in err[0], err
    assert monitoring(_argv(out, "--frames", "2")) == 0  # the same settings resume: nothing streamed again
    assert (out / "outputs" / "random.jsonl").read_bytes() == outputs
    assert monitoring(_argv(out, "--frames", "4", "--fresh")) == 0
    assert json.loads((out / "identity.json").read_text())["settings"]["frames"] == 4


def test_the_former_command_says_the_new_one_and_runs_it(capsys):
    assert stream(["--evaluate", "--baselines", "random", "--data-root", "/nonexistent"]) == 2
    said, err = capsys.readouterr()
    assert said.startswith("note: `python -m ego_adr.stream --evaluate` is now `python -m ego_adr.monitoring "
                           "evaluate --benchmark egoadr-stream --monitor egoadr,random --data-root /nonexistent`")
    assert len(err.strip().splitlines()) == 1 and "is not a folder" in err
