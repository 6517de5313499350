"""``python -m ego_adr.data build``: annotation rows with bad lines -> build -> review -> edited sheets -> merge ->
a data root that ``ego_adr.run`` and ``eval score`` accept, with a card whose counts are right.

The QA writer here is a model double (:class:`QAWriterDouble`): these tests are about the code around the LLM
(parsing, provenance, outages, review, merge, the data root), not about what an LLM writes. The real model path
(the tiny random text model through the HF backend) is ``test_build_tiny.py``.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ego_adr.benchmark_builder.builder import Options, build
from ego_adr.benchmark_builder.final import finalise
from ego_adr.data.build_input import read_rows
from ego_adr.data.egoerrorvqa import load_samples
from ego_adr.models.base import Capabilities, Generation

OWN_LABELS = {"used wrong item": "Wrong object", "skipped": "Omission"}


class QAWriterDouble:
    """Answers a QA request with two well-formed pairs naming the step, a procedure request with nothing usable,
    a labelling request with ``types[own label]`` (else a reply naming no error type); steps in ``outage`` get a
    connection error (a retryable failure)."""

    model_id = "qa-writer-double"
    fingerprint = "qa-writer-double-v1"
    capabilities = Capabilities(video=False, text_only=True, max_batch_size=8)

    def __init__(self, outage=(), types=None):
        self.outage = set(outage)
        self.types = dict(types or {})
        self.asked = 0
        self.messages: list[tuple[str, str]] = []  # (prompt name, text) of every request

    def _label(self, text: str) -> Generation:
        step = text.split("the step was: ")[1].split("\n")[0]
        if step in self.outage:
            return Generation(None, error="connection refused", kind="infrastructure")
        own = text.split("Its own label(s): ")[1].split("\n")[0]
        return Generation(self.types.get(own, "It is hard to say from the annotation."))

    def generate(self, requests):
        out = []
        for r in requests:
            self.asked += 1
            text = r.messages[0].content[0]
            self.messages.append((r.meta["prompt"], text))
            if r.meta["stage"] == "build_procedure":
                out.append(Generation("ok"))
                continue
            if r.meta["stage"] == "build_label":
                out.append(self._label(text))
                continue
            step = text.split("Step of this video segment: ")[1].split("\n")[0]
            if step in self.outage:
                out.append(Generation(None, error="connection refused", kind="infrastructure"))
                continue
            pairs = [
                {"question": f"Did I {step.lower()} correctly?", "answer": "Yes, I did."},
                {"question": f"What did I use to {step.lower()}?", "answer": "The right tool."},
            ]
            out.append(Generation("Here you are:\n" + json.dumps(pairs)))
        return out


def write_annotations(demo_root: Path, path: Path, limit: int | None = None) -> Path:
    """The demo recordings' annotations as a lab would write them (own labels, own source name) + 3 bad rows."""
    recs = json.loads((demo_root / "annotations" / "demo_answer.json").read_text())[:limit]
    own = {v: k for k, v in OWN_LABELS.items()}
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "recording", "video", "task", "step", "start", "end", "labels", "description"])
        for r in recs:
            lab = r["close_end_answer"][0]
            st, en = ("", "") if r["start_time"] < 0 else (r["start_time"], r["end_time"])
            w.writerow(
                [
                    "mykitchen",
                    r["video_id"],
                    f"demo/{r['video_id']}.mp4",
                    r["task_id"],
                    r["action_annotation"],
                    st,
                    en,
                    "" if lab == "correct" else own.get(lab, lab),
                    r["error_description"] or "",
                ]
            )
        w.writerow(["mykitchen", "tea_01", "", "demo_make_tea", "", 1, 2, "", ""])
        w.writerow(["mykitchen", "tea_01", "", "demo_make_tea", "Boil", "abc", 2, "", ""])
        w.writerow(["mykitchen", "tea_01", "", "demo_make_tea", "Boil", 3, 4, "spilled", ""])
    (path.parent / "labels.json").write_text(json.dumps(OWN_LABELS))
    return path


@pytest.fixture(scope="module")
def built(demo_root, tmp_path_factory):
    base = tmp_path_factory.mktemp("build")
    ann = write_annotations(demo_root, base / "ann.csv")
    out = base / "mykitchen"
    summary = build(
        ann,
        out,
        labels=base / "labels.json",
        model=QAWriterDouble(),
        cache_dir=base / "cache",
        options=Options(llm_labels=False),  # 'spilled' is a bad row here; the labelling: test_build_labels.py
    )
    return base, ann, out, summary


def test_bad_rows_are_reported_by_line_and_left_out(built, tmp_path):
    base, ann, out, summary = built
    assert summary["issues"] == [
        "line 18: missing step",
        "line 19: start 'abc' is not a number of seconds",
        "line 20: label 'spilled' is neither one of our options nor in the label mapping",
    ]
    assert summary["rows"] == 16 and (out / "build" / "issues.txt").read_text().count("line ") == 3
    jl = tmp_path / "a.jsonl"
    jl.write_text(
        '{"source": "x", "recording": "r", "task": "t", "step": "s"}\nnot json\n[1]\n'
        '{"source": "x", "recording": "r", "task": "t", "step": "s", "start": 5, "end": 2}\n'
    )
    good, bad = read_rows(jl)
    assert (
        [b.line for b in bad] == [2, 3] and len(good) == 2 and good[1].warning
    )  # an inverted window is kept


def test_only_bad_rows_refuse_and_say_how_many_are_not_shown(tmp_path):
    """Issue 38 point 9: four bad lines, three shown, the fourth counted (not silently dropped); nothing built."""
    from ego_adr.errors import UserError

    ann = tmp_path / "bad.csv"
    with ann.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "recording", "video", "task", "step", "start", "end", "labels", "description"])
        for start in ("a", "b", "c", "d"):
            w.writerow(["mykitchen", "tea_01", "", "demo_make_tea", "Boil", start, 2, "", ""])
    with pytest.raises(UserError) as e:
        build(ann, tmp_path / "out", model=QAWriterDouble(), cache_dir=tmp_path / "cache",
              options=Options(llm_labels=False))
    msg = str(e.value)
    assert "no usable row (4 bad: " in msg and msg.count("is not a number of seconds") == 3
    assert msg.endswith("; ... and 1 more)") and not (tmp_path / "out").exists()


def test_the_built_root_loads_through_the_registry(built, demo_root):
    base, ann, out, summary = built
    mc = load_samples(out, task="multiple-choice", video_root=demo_root / "videos")
    src = json.loads((demo_root / "annotations" / "demo_answer.json").read_text())
    assert [s.ground_truth for s in mc] == [r["close_end_answer"] for r in src]  # own labels mapped back
    assert {s.source for s in mc} == {"mykitchen"} and all(Path(s.video_path).is_file() for s in mc)
    oe = load_samples(out, task="open-end")
    assert len(oe) == 16 and all(len(s.qa_pairs) == 2 for s in oe)
    pair = json.loads((out / "mykitchen_qa_pairs.json").read_text())[0]["qa_pairs"][0]
    assert pair["provenance"] == "llm" and pair["model"] == "qa-writer-double-v1" and pair["prompt_version"]
    assert summary["procedures"] == {
        "given": 0,
        "llm": 0,
        "rule": 3,
    }  # "ok" is no procedure: the rule wrote them


def test_the_green_agent_takes_the_built_root_without_naming_its_sources(built, demo_root):
    from ego_adr.agents.green import EvalConfig, load_all_samples

    base, ann, out, _ = built
    cfg = EvalConfig.from_dict(
        {"video_root": str(demo_root / "videos"), "json_root": str(out), "task_type": "multiple-choice"}
    )
    assert cfg.datasets == ["mykitchen"] and len(load_all_samples(cfg)) == 16


def test_what_the_llm_is_asked(demo_root, tmp_path):
    ann = write_annotations(demo_root, tmp_path / "ann.csv")
    writer = QAWriterDouble()
    opts = Options(llm_labels=False)
    build(ann, tmp_path / "out", labels=tmp_path / "labels.json", model=writer, cache_dir=tmp_path / "c", options=opts)
    assert sorted(n for n, _ in writer.messages).count("build_procedure") == 3
    qa = [(n, t) for n, t in writer.messages if n.startswith("build_qa")]
    assert [n for n, _ in qa].count("build_qa_correct") == 10 and len(qa) == 16  # every correct step
    # Section 3.3: misleading questions about correct steps are the final annotator's, not the LLM's
    assert not any("misleading" in t for _, t in qa)
    salt = next(t for n, t in qa if "Salt was spooned into the cup instead of sugar." in t)
    assert (
        "error type): Wrong object" in salt and "Procedure: First, " in salt
    )  # own label mapped; rule procedure
    tea = next(t for n, t in writer.messages if n == "build_procedure" and '"demo_make_tea"' in t)
    assert "1. Fill the kettle with water at the tap\n" in tea  # the task's steps, numbered in order


def test_label_mappings_from_json_and_csv(tmp_path):
    from ego_adr.data.build_input import InputError, read_label_map

    (tmp_path / "m.json").write_text(json.dumps({"Both": ["wrong order", "Wrong object"], "X": "omission"}))
    assert read_label_map(tmp_path / "m.json") == {"both": ["Wrong order", "Wrong object"], "x": ["Omission"]}
    (tmp_path / "m.csv").write_text("label,option\nslip,Wrong action\nslip,Others\n")
    assert read_label_map(tmp_path / "m.csv") == {"slip": ["Wrong action", "Others"]}
    (tmp_path / "bad.json").write_text(json.dumps({"a": "not an option"}))
    with pytest.raises(InputError, match="not our options"):
        read_label_map(tmp_path / "bad.json")


def _edit(sheet: Path, dest: Path, edits: dict[int, dict], add: dict | None = None) -> Path:
    with sheet.open(newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    for i, cells in edits.items():
        rows[i].update(cells)
    if add:
        rows.append({**{k: "" for k in fields}, **add})
    with dest.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return dest


class Done:
    """What a command run in the test's process left: its exit status and what it printed."""

    def __init__(self, returncode: int, captured) -> None:
        self.returncode, self.stdout, self.stderr = returncode, captured.out, captured.err


def data_command(capsys, argv: list[str]) -> Done:
    """``python -m ego_adr.data ARGV`` through its ``main`` in this process (a torch start less: issue 46)."""
    from ego_adr.data.__main__ import main

    capsys.readouterr()
    rc = main(argv)
    return Done(rc, capsys.readouterr())


@pytest.mark.slow
def test_review_merge_and_run(built, demo_root, capsys):
    base, ann, out, _ = built
    res = data_command(capsys, ["build", "review", str(out), "--video-root", str(demo_root / "videos")])
    assert res.returncode == 0, res.stderr
    sheet = out / "review" / "sheet.csv"
    page = (out / "review" / "index.html").read_text()
    assert page.count("<section>") == 16 and page.count('<img src="frames/') == 64
    with sheet.open() as f:
        lines = list(csv.DictReader(f))
    first = lines[0]
    edits = {
        0: {"A:decision": "remove", "B:decision": "remove", "C:decision": "keep"},
        1: {
            "A:decision": "revise",
            "A:answer": "The kettle.",
            "B:decision": "revise",
            "B:answer": "The kettle.",
            "C:decision": "keep",
        },
        2: {"A:decision": "keep", "B:decision": "keep", "C:decision": "keep"},
        3: {"A:decision": "maybe"},
    }
    add = {
        "sample_id": first["sample_id"],
        "D:decision": "add",
        "D:question": "Did I skip a step before this?",
        "D:answer": "No, nothing was skipped.",
    }
    edits[4] = {"C:decision": "add", "C:question": "Q?", "C:answer": "A."}  # a reviewer does not add (App. A)
    edits[5] = {"D:decision": "remove"}  # and the adder does not decide generated pairs
    edited = _edit(sheet, base / "edited.csv", edits, add)
    res = data_command(capsys, ["build", "merge", str(out), str(edited)])
    assert res.returncode == 0, res.stderr
    assert "line 5: A:decision 'maybe' is not one of keep, revise, remove, add" in res.stdout
    assert "line 6: C:decision add: only the adder (D) adds pairs (Appendix A); skipped" in res.stdout
    assert "line 7: D:decision remove: D is the adder, who only adds pairs (Appendix A); skipped" in res.stdout
    info = json.loads((out / "build" / "build.json").read_text())
    assert info["model_fingerprint"] == "qa-writer-double-v1"
    oe_file = out / "mykitchen_qa_pairs.json"
    final = json.loads(oe_file.read_text())
    pairs = [p for r in final for p in r["qa_pairs"]]
    assert len(pairs) == 32 - 1 + 1
    assert [p["provenance"] for p in pairs].count("human-revised") == 1
    assert [p for p in pairs if p["provenance"] == "human-added"][0][
        "question"
    ] == "Did I skip a step before this?"
    assert lines[0]["pair_id"] not in {p["id"] for p in pairs}
    card = (out / "README.md").read_text()
    assert (
        "| 32 | 1 | 1 | 1 | 29 | 1 | 32 |" in card
    )  # LLM-made, kept, revised, removed, unreviewed, added, final
    assert "31 LLM-generated (96.9 %) and 1 human-added (3.1 %)" in card
    assert "Reviewers: A, B, C; adder: D" in card and "the adder's (Section 3.3); 1 pairs added on correct" in card
    # re-importing the same sheet (twice) and re-exporting it lose nothing and change nothing
    before = oe_file.read_bytes()
    for _ in range(2):
        finalise(out, [edited])
    assert oe_file.read_bytes() == before
    assert data_command(capsys, ["build", "review", str(out)]).returncode == 0
    with sheet.open() as f:
        again = list(csv.DictReader(f))
    assert again[1]["A:decision"] == "revise" and again[1]["A:answer"] == "The kettle."
    assert any(x["provenance"] == "human-added" and x["D:decision"] == "add" for x in again)
    # a second edit of the re-exported sheet: B changes one decision, nothing else moves
    _edit(sheet, base / "edited2.csv", {2: {"B:decision": "remove"}})
    s = finalise(out, [base / "edited2.csv"])
    assert s["counts"]["removed"] == 1 and s["counts"]["revised"] == 1 and s["counts"]["added"] == 1
    assert s["agreement"]["n_items"] == 3 and s["agreement"]["fleiss_kappa"] is not None
    # the data root runs and scores with no code change
    run = base / "run"
    from ego_adr.run.cli import main  # `python -m ego_adr.run` in this process: a torch start less (issue 46)

    assert main(["--data-root", str(out), "--video-root", str(demo_root / "videos"), "--mode", "shallow", "--frames",
                 "4", "--limit", "4", "--output-dir", str(run), "--quiet"]) == 0
    rows = [json.loads(x) for x in (run / "predictions.jsonl").read_text().splitlines()]
    assert (
        len(rows) == 4
        and {r["source"] for r in rows} == {"mykitchen"}
        and not any(r["failure"] for r in rows)
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "ego_adr.eval",
            "score",
            str(run / "predictions.jsonl"),
            "--out",
            str(base / "eval"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads((base / "eval" / "metrics.json").read_text())["overall"]["n"] == 4


def test_an_outage_is_never_a_pair_and_a_rerun_asks_again(demo_root, tmp_path):
    ann = write_annotations(demo_root, tmp_path / "ann.csv", limit=4)
    step = json.loads((demo_root / "annotations" / "demo_answer.json").read_text())[1]["action_annotation"]
    out = tmp_path / "out"
    s = build(
        ann,
        out,
        labels=tmp_path / "labels.json",
        model=QAWriterDouble(outage={step}),
        cache_dir=tmp_path / "c",
    )
    assert s["outages"] == 1 and s["counts"]["llm_made"] == 6
    gen = [json.loads(x) for x in (out / "build" / "generated.jsonl").read_text().splitlines()]
    assert [g["failure_kind"] for g in gen].count("infrastructure") == 1
    again = QAWriterDouble()
    s = build(ann, out, labels=tmp_path / "labels.json", model=again, cache_dir=tmp_path / "c")
    assert s["outages"] == 0 and s["counts"]["llm_made"] == 8
    assert again.asked == 1  # only the segment that failed: every successful call came from the stage cache


def test_a_folder_holds_one_build(built, tmp_path):
    from ego_adr.errors import UserError

    base, ann, out, _ = built
    with pytest.raises(UserError, match="other settings .*model"):
        build(
            ann,
            out,
            labels=base / "labels.json",
            model=type("Other", (QAWriterDouble,), {"fingerprint": "x"})(),
        )


def test_fresh_rebuilds_removing_only_the_builds_files(built, tmp_path, caplog):
    """Issue 46, item 1: ``--fresh`` removed the whole folder (a user's notes with it); now only what a build
    writes goes, and it says which."""
    import logging
    import shutil

    from ego_adr.errors import UserError

    base, ann, out, _ = built
    mine = tmp_path / "mykitchen"
    shutil.copytree(out, mine)
    (mine / "notes.txt").write_text("mine")
    other = type("Other", (QAWriterDouble,), {"fingerprint": "x"})()
    with caplog.at_level(logging.WARNING, logger="ego_adr.folders"):
        s = build(ann, mine, labels=base / "labels.json", model=other, cache_dir=tmp_path / "c", fresh=True,
                  options=Options(llm_labels=False))
    removed = caplog.text.split("--fresh: removed ")[1].split(" from ")[0].split(", ")
    assert {"build", "procedure.json", "sources.json", "README.md", "mykitchen_answer.json",
            "mykitchen_qa_pairs.json"} <= set(removed) and "notes.txt" not in removed
    assert (mine / "notes.txt").read_text() == "mine" and s["counts"]["llm_made"] > 0
    assert json.loads((mine / "build" / "build.json").read_text())["identity"]["model"] == "x"
    plain = tmp_path / "plain"  # a folder no build wrote: refused, nothing removed
    plain.mkdir()
    (plain / "README.md").write_text("mine")
    with pytest.raises(UserError, match="not a build folder"):
        build(ann, plain, labels=base / "labels.json", model=other, cache_dir=tmp_path / "c", fresh=True)
    assert (plain / "README.md").read_text() == "mine"
