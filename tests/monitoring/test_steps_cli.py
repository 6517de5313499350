"""``python -m ego_adr.monitoring evaluate``: another recogniser's output through ``--stream FILE``, the bad inputs
of issue 27 (one line naming the file and what is wrong, exit 2, nothing in OUT), and folders that say what they
hold."""

from __future__ import annotations

import json
import shutil

import pytest


def _prego_file(root, name="output_miniROAD_Epic-tent-O.json") -> dict:
    return json.loads((root / "prego" / "predictions" / name).read_text())


def _write(path, doc) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def _refused(cli, out, *argv) -> str:
    code, _, err = cli("evaluate", *argv, "--out", out)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())  # nothing half-written
    return lines[0]


def made_up_recogniser(root) -> dict:
    """A recogniser's output we made: the test steps of EPIC-Tent-O with every third correct step missed, every
    fourth one confused with the step after it in the taxonomy, and a recording the test set does not have."""
    out = {}
    for video, entry in _prego_file(root).items():
        gt = entry["gt"]
        body = [s for i, s in enumerate(gt[:-1]) if i % 3 != 2]
        body = [(s + 1) % 12 if i % 4 == 3 else s for i, s in enumerate(body)]
        out[video] = {"pred": body + gt[-1:]}
    out["annotations_99"] = {"pred": [4, 7, 10]}
    return out


def test_another_recognisers_output_runs_with_stream_file(online_root, cli, tmp_path):
    preds = _write(tmp_path / "my_recogniser.json", made_up_recogniser(online_root))
    # one monitor: every monitor on a recogniser's stream is test_step_metrics.py's (miniroad)
    code, out, err = cli("evaluate", "--benchmark", "epic-tent-o", "--stream", preds, "--monitor", "count-based",
                         "--data-root", online_root, "--out", tmp_path / "run", "--quiet")
    assert code == 0, err
    assert "annotations_99" in out  # the extra recording is said to be left out
    doc = json.loads(open(preds).read())
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert m["stream"] == preds and m["videos"] == 15 and m["mistakes"] == 15
    assert m["steps"] == sum(len(v["pred"]) for k, v in doc.items() if k != "annotations_99")
    assert m["extra_videos"] == ["annotations_99"]
    rows = [json.loads(x) for x in (tmp_path / "run" / "steps.jsonl").read_text().splitlines()]
    assert [r["step_id"] for r in rows if r["episode"] == "annotations_1"] == doc["annotations_1"]["pred"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"file {preds}" in report and "Count-Based+ [DTGL Table 3]" in report


@pytest.mark.parametrize("case", ["unknown_step", "empty_sequence", "no_mistake", "not_json", "missing_video",
                                  "not_an_integer"])
def test_a_bad_stream_file_is_one_line_and_exit_2(online_root, cli, tmp_path, case):
    doc = {k: {"pred": v["gt"]} for k, v in _prego_file(online_root).items()}
    path = tmp_path / "preds.json"
    expect = {"unknown_step": "step id 42, which the taxonomy does not know", "empty_sequence": "empty sequence",
              "no_mistake": "no mistake step to score", "not_json": "is not JSON",
              "missing_video": "1 of the 15 test videos", "not_an_integer": "not an integer step id"}[case]
    if case == "unknown_step":
        doc["annotations_3"]["pred"][2] = 42
    elif case == "empty_sequence":
        doc["annotations_3"]["pred"] = []
    elif case == "no_mistake":
        doc["annotations_3"] = {"gt": [4, 7]}
    elif case == "missing_video":
        del doc["annotations_3"]
    elif case == "not_an_integer":
        doc["annotations_3"]["pred"][0] = "4"
    if case == "not_json":
        path.write_text('{"annotations_1": {"pred": [4, 7,')
    else:
        _write(path, doc)
    line = _refused(cli, tmp_path / "out", "--benchmark", "epic-tent-o", "--stream", path, "--monitor", "flag-all",
                    "--data-root", online_root)
    assert str(path) in line and expect in line, line
    if case in ("unknown_step", "empty_sequence", "no_mistake", "not_an_integer"):
        assert "annotations_3" in line


def test_a_data_root_without_the_files_names_the_file(online_root, cli, tmp_path):
    line = _refused(cli, tmp_path / "out", "--benchmark", "assembly101-o", "--monitor", "flag-all", "--data-root",
                    tmp_path)
    assert "dtgl/assembly101/train.json not found" in line and "download" in line
    partial = tmp_path / "partial"
    shutil.copytree(online_root / "dtgl", partial / "dtgl")
    line = _refused(cli, tmp_path / "out", "--benchmark", "epic-tent-o", "--stream", "miniroad", "--monitor",
                    "flag-all", "--data-root", partial)
    assert "prego/predictions/output_miniROAD_Epic-tent-O.json not found" in line


def test_a_test_file_whose_sequence_has_no_mistake_is_refused(online_root, cli, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(online_root / "dtgl" / "epic-tent", root / "dtgl" / "epic-tent")
    test = root / "dtgl" / "epic-tent" / "test.json"
    doc = json.loads(test.read_text())
    doc["annotations"]["annotations_5"]["segments"][-1]["has_errors"] = False
    test.write_text(json.dumps(doc))
    line = _refused(cli, tmp_path / "out", "--benchmark", "epic-tent-o", "--monitor", "flag-all", "--data-root", root)
    assert "annotations_5" in line and "without a mistake" in line and str(test) in line


@pytest.mark.parametrize(("argv", "expect"), [
    (("--benchmark", "epic-tent", "--monitor", "flag-all"), "--benchmark 'epic-tent'"),
    (("--benchmark", "epic-tent-o", "--monitor", "nope"), "--monitor 'nope'"),
    (("--benchmark", "epic-tent-o", "--monitor", "prego"), "needs --model"),
    (("--benchmark", "epic-tent-o", "--monitor", "flag-all", "--stream", "orcale"), "--stream 'orcale' is neither"),
])
def test_bad_flags_are_one_line(online_root, cli, tmp_path, argv, expect):
    assert expect in _refused(cli, tmp_path / "out", *argv, "--data-root", online_root)


def test_the_same_command_redoes_its_folder_identically_and_another_refuses(online_root, cli, tmp_path, tent_all):
    out = tmp_path / "run"
    argv = ("evaluate", "--benchmark", "epic-tent-o", "--monitor", "count-based", "--data-root", online_root,
            "--out", out, "--quiet")
    assert cli(*argv)[0] == 0
    first = (out / "steps.jsonl").read_bytes()
    assert cli(*argv)[0] == 0
    assert (out / "steps.jsonl").read_bytes() == first
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "one-step-memory", "--data-root",
                       online_root, "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "other settings" in err and "monitor" in err
    assert (out / "steps.jsonl").read_bytes() == first
    # a folder of --monitor all holds per-monitor folders a single run of the same monitor resumes (a copy of the
    # session's --monitor all folder: the shared one is read only)
    shutil.copytree(tent_all, tmp_path / "all")
    assert cli(*argv[:-3], "--out", tmp_path / "all" / "count-based", "--quiet")[0] == 0
    assert (tmp_path / "all" / "count-based" / "steps.jsonl").read_bytes() == first
