"""The whole loop offline with ``--model tiny`` (a tiny random text model through the real HF backend) on the demo
recordings: build (with the subsample and the LLM labelling pass) -> the same build again -> review -> merge, from
the command line. Its text is random: the procedures fall back to the rule, its labels are noise, and unparseable
replies are recorded as such, never turned into pairs or labels; what is tested is the machinery (the stage cache,
the records and provenance, the sheet). The commands are ``ego_adr.benchmark_builder``'s, run by the name users are
given (``python -m ego_adr.data build``, which finds them in ``benchmark_builder/data_commands.py``): the first build
as a process of its own, the rest through the same ``main`` in the test's process (a torch start less each, issue 46
item 12)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from .test_build import data_command, write_annotations


@pytest.mark.slow
def test_tiny_build_review_merge_offline(demo_root, tmp_path, capsys):
    ann = write_annotations(demo_root, tmp_path / "ann.csv", limit=4)  # + 'spilled', mapped nowhere: the LLM types it
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ego_adr.data", "build"]
    build_cmd = (
        cmd
        + [
            "--annotations",
            str(ann),
            "--out",
            str(out),
            "--model",
            "tiny",
            "--labels",
            str(tmp_path / "labels.json"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--subsample",
            "4",  # of 3 correct + 2 error rows: quotas 2.4 / 1.6 -> 2 correct, both errors
        ]
    )
    res = subprocess.run(build_cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "line 6: missing step" in res.stdout and "subsample: 4 of 5 rows, seed 0" in res.stdout
    info = json.loads((out / "build" / "build.json").read_text())
    assert info["identity"]["generation"] == {"max_new_tokens": 300, "do_sample": False}
    assert info["identity"]["options"] == {
        "llm_labels": True, "llm_misleading": False, "subsample": 4, "subsample_seed": 0
    }
    assert "tiny-qwen2" in info["model_fingerprint"]
    procs = json.loads((out / "build" / "procedures.json").read_text())
    assert {p["method"] for p in procs.values()} <= {"llm", "rule"}
    (lab,) = [json.loads(x) for x in (out / "build" / "labels.jsonl").read_text().splitlines()]
    assert (lab["line"], lab["own_labels"], lab["prompt"]) == (8, ["spilled"], "build_label")
    assert "tiny-qwen2" in lab["model"] and lab["raw"] is not None and lab["failure_kind"] in (None, "sample")
    mc = json.loads((out / "mykitchen_answer.json").read_text())
    if lab["labels"]:  # noise, but named types: the record says whose they are
        assert mc[-1]["close_end_answer"] == lab["labels"]
        assert set(mc[-1]["label_provenance"].values()) == {"llm-labelled"}
    else:  # the usual case: no type named, the row is left out and said so
        assert len(mc) == 3 and "line 8: left out: the LLM named no error type for label 'spilled'" in res.stdout
    gen = [json.loads(x) for x in (out / "build" / "generated.jsonl").read_text().splitlines()]
    assert len(gen) == len(mc) and all(g["pairs"] or g["failure_kind"] == "sample" for g in gen)
    again = data_command(capsys, build_cmd[3:])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "model calls 0, stage-cache hits" in again.stdout  # the stage cache answers every call, labels too
    assert (out / "build" / "labels.jsonl").read_text().splitlines() == [json.dumps(lab, ensure_ascii=False)]
    res = data_command(capsys, ["build", "review", str(out), "--video-root", str(demo_root / "videos")])
    assert res.returncode == 0, res.stderr
    sheet = out / "review" / "sheet.csv"
    with sheet.open(newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    assert {"label_provenance", "own_labels", "A:labels", "D:decision"} <= set(fields)
    rows.append(
        {
            **{k: "" for k in fields},
            "sample_id": rows[0]["sample_id"],
            "D:decision": "add",
            "D:question": "Did I fill the kettle?",
            "D:answer": "Yes, at the tap.",
        }
    )
    with sheet.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    res = data_command(capsys, ["build", "merge", str(out), str(sheet)])
    assert res.returncode == 0, res.stderr
    assert "added 1" in res.stdout and (out / "README.md").is_file()
