"""The public release converted to the build input schema and built again gives back its multiple-choice samples
exactly: every field of every sample (clips, windows, labels, task ids, sample ids, step texts, and ``wire``: the
times and step as the public protocol sends them), and every record of the files as stored (``-1.0`` stays
``-1.0``, ``777`` stays ``777``, Epic-Tent's ``-3661.033`` and its one-text labels stay as they are). Run on the
developer split (``../shared/egoerrorvqa``) and, when ``$EGO_ADR_FULL_RELEASE`` names the full ``data/json``, on
that."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ego_adr.benchmark_builder.builder import build
from ego_adr.data import sources as registry
from ego_adr.data.build_convert import convert_release
from ego_adr.data.build_input import write_jsonl
from ego_adr.data.egoerrorvqa import load_samples
from ego_adr.data.sample import Sample

from .test_build import QAWriterDouble

PUBLIC = ("captaincook4d", "egooops", "epic_tent", "assembly101")


def _fields(s: Sample) -> dict:
    """Every field of a sample, as text (so ``-1`` and ``-1.0`` differ); both roots load with one video root."""
    return {k: repr(v) for k, v in s.to_dict().items()}


def _roots(shared_data):
    out = [shared_data]
    if os.environ.get("EGO_ADR_FULL_RELEASE"):
        out.append(Path(os.environ["EGO_ADR_FULL_RELEASE"]))
    return out


def _mismatches(original: list[Sample], rebuilt: list[Sample]) -> list[str]:
    out = []
    for a, b in zip(original, rebuilt, strict=True):
        fa, fb = _fields(a), _fields(b)
        out += [f"{a.sample_id} {k}: {fa[k]} came back as {fb[k]}" for k in fa if fa[k] != fb[k]]
    return out


@pytest.mark.slow
def test_the_release_rebuilt_gives_back_its_multiple_choice_samples(shared_data, tmp_path):
    for i, root in enumerate(_roots(shared_data)):
        ann = write_jsonl(convert_release(root), tmp_path / f"release{i}.jsonl")
        out = tmp_path / f"rebuilt{i}"
        s = build(
            ann,
            out,
            model=QAWriterDouble(),
            given_procedures=root / "procedure.json",
            cache_dir=tmp_path / "cache",
        )
        assert (
            s["bad_rows"] == 0 and s["procedures"]["rule"] == s["procedures"]["llm"] == 0
        )  # the release's texts
        videos = tmp_path / "videos"
        original = load_samples(root, task="multiple-choice", video_root=videos)
        rebuilt = load_samples(out, task="multiple-choice", video_root=videos)
        assert len(rebuilt) == len(original)
        assert _mismatches(original, rebuilt) == []
        for source in PUBLIC:  # the files themselves: every record as the release stores it
            name = registry.get(source).files["multiple-choice"]
            assert json.loads((out / name).read_text()) == json.loads((root / name).read_text()), name
        assert len(load_samples(out, task="open-end")) == len(original)  # every segment got its pairs


def test_times_and_one_text_labels_come_back_as_stored(tmp_path):
    """Issue 28 item 6: ``epic_tent/6/whole/act7`` stores -3661.033 for both times; they came back as -1 (and
    CaptainCook4D's -1.0 as -1, its whole seconds 777 as 777.0) in the record and in ``wire``."""
    rows = [
        {"source": "mine", "recording": "r1", "task": "t", "step": "a", "start": -3661.033, "end": -3661.033},
        {"source": "mine", "recording": "r1", "task": "t", "step": "b", "start": -1.0, "end": -1.0},
        {"source": "mine", "recording": "r1", "task": "t", "step": "c", "start": 757.8, "end": 777},
        {"source": "mine", "recording": "r1", "task": "t", "step": "d"},
    ]
    ann = write_jsonl(rows, tmp_path / "a.jsonl")
    csv_ann = tmp_path / "a.csv"
    csv_ann.write_text("source,recording,task,step,start,end\nmine,r2,t,e,-1.0,-1\nmine,r2,t,f,3,4.50\n")
    for path, want in (
        (ann, [(-3661.033, -3661.033), (-1.0, -1.0), (757.8, 777), (-1, -1)]),
        (csv_ann, [(-1.0, -1), (3, 4.5)]),
    ):
        out = tmp_path / path.suffix[1:]
        build(path, out, model=QAWriterDouble(), cache_dir=tmp_path / "c")
        recs = json.loads((out / "mine_answer.json").read_text())
        got = [(r["start_time"], r["end_time"]) for r in recs]
        assert [tuple(map(repr, g)) for g in got] == [tuple(map(repr, w)) for w in want]
        wire = [(s.wire["start_time"], s.wire["end_time"]) for s in load_samples(out, task="multiple-choice")]
        assert [tuple(map(repr, w)) for w in wire] == [tuple(map(repr, w)) for w in want]
