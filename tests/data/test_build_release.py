"""The public release converted to the build input schema and built again gives back its multiple-choice samples
exactly (same clips, windows, labels, task ids; the sample ids and step texts too). Run on the developer split
(``../shared/egoerrorvqa``) and, when ``$EGO_ADR_FULL_RELEASE`` names the full ``data/json``, on that."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ego_adr.build.builder import build
from ego_adr.data.build_convert import convert_release
from ego_adr.data.build_input import write_jsonl
from ego_adr.data.egoerrorvqa import load_samples

from .test_build import QAWriterDouble

FIELDS = (
    "source",
    "sample_id",
    "video_id",
    "start",
    "end",
    "ground_truth",
    "task_id",
    "action",
    "action_field",
    "step_index",
    "correct",
    "procedure",
)


def _key(s):
    return tuple(repr(getattr(s, f)) for f in FIELDS)


def _roots(shared_data):
    out = [shared_data]
    if os.environ.get("EGO_ADR_FULL_RELEASE"):
        out.append(Path(os.environ["EGO_ADR_FULL_RELEASE"]))
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
        original = load_samples(root, task="multiple-choice")
        rebuilt = load_samples(out, task="multiple-choice")
        assert [_key(x) for x in rebuilt] == [_key(x) for x in original]
        assert len(load_samples(out, task="open-end")) == len(original)  # every segment got its pairs
