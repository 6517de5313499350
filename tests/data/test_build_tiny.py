"""The whole loop offline with ``--model tiny`` (a tiny random text model through the real HF backend) on the demo
recordings: build -> review -> merge from the command line. Its text is random: the procedures fall back to the
rule and unparseable replies are recorded as such, never turned into pairs."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from .test_build import write_annotations


@pytest.mark.slow
def test_tiny_build_review_merge_offline(demo_root, tmp_path):
    ann = write_annotations(demo_root, tmp_path / "ann.csv", limit=3)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "ego_adr.data", "build"]
    res = subprocess.run(
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
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "line 5: missing step" in res.stdout
    info = json.loads((out / "build" / "build.json").read_text())
    assert info["identity"]["generation"] == {"max_new_tokens": 300, "do_sample": False}
    assert "tiny-qwen2" in info["model_fingerprint"]
    procs = json.loads((out / "build" / "procedures.json").read_text())
    assert {p["method"] for p in procs.values()} <= {"llm", "rule"}
    gen = [json.loads(x) for x in (out / "build" / "generated.jsonl").read_text().splitlines()]
    assert len(gen) == 3 and all(g["pairs"] or g["failure_kind"] == "sample" for g in gen)
    res = subprocess.run(
        cmd + ["review", str(out), "--video-root", str(demo_root / "videos")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    sheet = out / "review" / "sheet.csv"
    with sheet.open(newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    rows.append(
        {
            **{k: "" for k in fields},
            "sample_id": rows[0]["sample_id"],
            "A:decision": "add",
            "A:question": "Did I fill the kettle?",
            "A:answer": "Yes, at the tap.",
        }
    )
    with sheet.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    res = subprocess.run(cmd + ["merge", str(out), str(sheet)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "added 1" in res.stdout and (out / "README.md").is_file()
