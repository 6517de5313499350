"""The LLM labelling pass of ``data build`` (paper Section 3.3), the reviewers' verdicts on its labels, and the
LLM's misleading questions behind ``--llm-misleading``.

The model here is a double (:class:`QAWriterDouble`: it types ``used wrong item`` as Wrong object and ``skipped``
as Omission, and names no type for ``spilled``): these tests are about the code around the LLM (which rows are
asked, the stage cache, provenance, what is left out and reported, review and merge). The real model path is
``test_build_tiny.py``.
"""

from __future__ import annotations

import csv
import json

import pytest

from ego_adr.benchmark_builder.builder import Options, build
from ego_adr.benchmark_builder.final import finalise, load_state, write_roles
from ego_adr.benchmark_builder.review import write_review
from ego_adr.data.egoerrorvqa import load_samples
from ego_adr.errors import InfrastructureError

from .test_build import QAWriterDouble, _edit, write_annotations

TYPES = {"used wrong item": "- Wrong object", "skipped": "Omission."}


def _demo(demo_root):
    return json.loads((demo_root / "annotations" / "demo_answer.json").read_text())


def _mc(out):
    return json.loads((out / "mykitchen_answer.json").read_text())


@pytest.fixture(scope="module")
def labelled(demo_root, tmp_path_factory):
    """The demo annotations with the dataset's own labels and no mapping: the LLM types them."""
    base = tmp_path_factory.mktemp("labels")
    ann = write_annotations(demo_root, base / "ann.csv")
    writer = QAWriterDouble(types=TYPES)
    out = base / "out"
    s = build(ann, out, model=writer, cache_dir=base / "cache")
    return base, ann, out, s, writer


def test_rows_without_our_label_are_typed_by_the_llm(labelled, demo_root):
    base, ann, out, s, writer = labelled
    asked = [t for n, t in writer.messages if n == "build_label"]
    # only the rows whose label is neither an option nor mapped: 2 x used wrong item, 2 x skipped, 1 x spilled
    assert len(asked) == 5 and sum("Its own label(s): skipped\n" in t for t in asked) == 2
    salt = next(t for t in asked if "Salt was spooned into the cup instead of sugar." in t)
    assert "the step was: Add a spoonful of sugar to the cup" in salt and "- Wrong action: " in salt
    src = _demo(demo_root)
    assert [r["close_end_answer"] for r in _mc(out)] == [r["close_end_answer"] for r in src]
    prov = [r.get("label_provenance") for r in _mc(out)]
    typed = [i for i, r in enumerate(src) if r["close_end_answer"][0] in ("Wrong object", "Omission")]
    assert [i for i, p in enumerate(prov) if p] == typed
    assert prov[typed[0]] == {src[typed[0]]["close_end_answer"][0]: "llm-labelled"}
    assert s["labels"] == {"given": 12, "mapped": 0, "llm-labelled": 4, "human-revised": 0, "segments_reviewed": 0}
    # 'spilled' got no type: left out, reported with the reply, recorded
    assert s["rows"] == 16 and s["label_failures"] == 1
    assert "line 5: label 'used wrong item' typed by the LLM as Wrong object (llm-labelled)" in s["issues"]
    assert any(i.startswith("line 20: left out: the LLM named no error type for label 'spilled'") for i in s["issues"])
    recs = [json.loads(x) for x in (out / "build" / "labels.jsonl").read_text().splitlines()]
    assert [(r["line"], r["failure_kind"]) for r in recs][-1] == (20, "sample")
    assert {(r["prompt"], r["prompt_version"], r["model"]) for r in recs} == {
        ("build_label", "1", "qa-writer-double-v1")
    }
    assert "4 typed by the model (`llm-labelled`)" in (out / "README.md").read_text()
    segs, _, info = load_state(out)
    assert info["identity"]["prompts"]["build_label"] == "1" and info["identity"]["options"]["llm_labels"]
    assert sum(bool(x["row"]["own_labels"]) for x in segs) == 4


def test_a_rebuild_asks_the_labeller_nothing(labelled):
    base, ann, out, s, _ = labelled
    again = QAWriterDouble(types=TYPES)
    s2 = build(ann, out, model=again, cache_dir=base / "cache")
    assert again.asked == 0 and s2["calls"]["model_calls"] == 0  # the stage cache answered every call
    assert s2["labels"] == s["labels"]


def test_a_labelling_outage_writes_nothing_and_a_rerun_asks_only_it(demo_root, tmp_path):
    ann = write_annotations(demo_root, tmp_path / "ann.csv", limit=8)
    out = tmp_path / "out"
    with pytest.raises(InfrastructureError, match="labels of 1 rows"):
        build(ann, out, model=QAWriterDouble(outage={"Stir the tea with the spoon"}, types=TYPES),
              cache_dir=tmp_path / "c")
    assert not out.exists()
    again = QAWriterDouble(types=TYPES)
    build(ann, out, model=again, cache_dir=tmp_path / "c")
    asked = [t for n, t in again.messages if n == "build_label"]
    assert len(asked) == 1 and "the step was: Stir the tea with the spoon" in asked[0]


def _sheet_lines(out):
    with (out / "review" / "sheet.csv").open() as f:
        return list(csv.DictReader(f))


def test_reviewers_correct_an_llm_label_in_the_sheet(labelled, tmp_path):
    base, ann, out, _, _ = labelled
    segs, gen, _ = load_state(out)
    write_roles(out, ["A", "B", "C"], "D")
    write_review(out, segs, {g["sample_id"]: g for g in gen}, ["A", "B", "C"])
    lines = _sheet_lines(out)
    first = {}
    for i, x in enumerate(lines):
        first.setdefault(x["sample_id"], i)
    salt = next(i for i, x in enumerate(lines) if x["own_labels"] == "used wrong item")
    butter = next(i for i, x in enumerate(lines) if x["own_labels"] == "used wrong item" and i != salt
                  and first[x["sample_id"]] == i)
    given = next(i for i, x in enumerate(lines) if x["labels"] == "Wrong order")
    assert lines[salt]["label_provenance"] == "Wrong object: llm-labelled" and "A:labels" in lines[salt]
    assert lines[given]["label_provenance"] == "Wrong order: given" and "D:labels" not in lines[salt]
    edits = {
        salt: {"A:labels": "Wrong action", "B:labels": "wrong action", "C:labels": "keep"},  # 2 of 3: revised
        butter: {"A:labels": "Others", "B:labels": "keep"},  # 1 of 2: the LLM's label stands
        given: {"A:labels": "Others"},  # the annotation's own label is not reviewed here
        salt + 1: {"C:labels": "Nonsense"},  # the second line of the segment: differs from the first
    }
    sheet = _edit(out / "review" / "sheet.csv", tmp_path / "edited.csv", edits)
    s = finalise(out, [sheet])
    assert any(f"line {given + 2}: A:labels: segment " in p and "annotation's labels" in p for p in s["problems"])
    assert any(f"line {salt + 3}: C:labels: 'Nonsense' is not one of our error options" in p for p in s["problems"])
    sid = lines[salt]["sample_id"]
    rec = next(r for r, x in zip(_mc(out), segs) if x["sample_id"] == sid)
    assert rec["close_end_answer"] == ["Wrong action"] and rec["label_provenance"] == {"Wrong action": "human-revised"}
    assert next(x for x in load_samples(out, task="multiple-choice") if x.sample_id == sid).ground_truth == [
        "Wrong action"
    ]
    bsid = lines[butter]["sample_id"]
    rec = next(r for r, x in zip(_mc(out), segs) if x["sample_id"] == bsid)
    assert rec["label_provenance"] == {"Wrong object": "llm-labelled"}
    assert s["labels"]["human-revised"] == 1 and s["labels"]["segments_reviewed"] == 2
    # importing again changes nothing; a sheet exported again carries the verdicts on the segment's first line
    before = (out / "mykitchen_answer.json").read_bytes()
    finalise(out, [sheet])
    assert (out / "mykitchen_answer.json").read_bytes() == before
    write_review(out, segs, {g["sample_id"]: g for g in gen}, ["A", "B", "C"])
    again = _sheet_lines(out)
    assert again[salt]["A:labels"] == "Wrong action" and again[salt + 1]["A:labels"] == ""


def test_the_llms_misleading_questions_are_a_named_option(demo_root, tmp_path):
    ann = write_annotations(demo_root, tmp_path / "ann.csv", limit=4)
    for misleading in (False, True):
        writer = QAWriterDouble(types=TYPES)
        out = tmp_path / f"m{misleading}"
        build(ann, out, model=writer, cache_dir=tmp_path / "c", options=Options(llm_misleading=misleading))
        correct = [t for n, t in writer.messages if n.startswith("build_qa_correct")]
        names = {n for n, _ in writer.messages if n.startswith("build_qa_correct")}
        assert len(correct) == 3 and all(("deliberately misleading" in t) == misleading for t in correct)
        assert names == {"build_qa_correct_misleading" if misleading else "build_qa_correct"}
        ident = load_state(out)[2]["identity"]
        assert ident["options"]["llm_misleading"] is misleading
        assert ("build_qa_correct_misleading" in ident["prompts"]) is misleading
        pairs = [p for r in json.loads((out / "mykitchen_qa_pairs.json").read_text()) for p in r["qa_pairs"]]
        assert {p["prompt"] for p in pairs} == {"build_qa_error", *names}
        card = (out / "README.md").read_text()
        assert ("**written by the model** (`--llm-misleading`, a deviation" in card) is misleading
        assert ("misleading questions about correct steps: the adder's (Section 3.3)" in card) is not misleading
    # another choice is another build: the folder refuses it
    from ego_adr.errors import UserError

    with pytest.raises(UserError, match="options"):
        build(ann, tmp_path / "mFalse", model=QAWriterDouble(types=TYPES), cache_dir=tmp_path / "c",
              options=Options(llm_misleading=True))
