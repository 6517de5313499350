"""The lmms-eval task files and the scoring behind them, without lmms-eval: the committed YAMLs are what
``make_yamls.py`` writes from the source registry, and a group's pooled values are ego_adr.eval's overall
numbers (which the mean of per-source values is not)."""

from __future__ import annotations

import math
from pathlib import Path

from ego_adr.data.sources import names
from ego_adr.eval.mc import compute_mc_metrics
from ego_adr.integrations.lmms_eval import results as R
from ego_adr.integrations.lmms_eval.tasks.egoerrorvqa import make_yamls

TASKS = Path(make_yamls.__file__).resolve().parent


def test_committed_task_files_are_generated_from_the_registry():
    files = make_yamls.files()
    for rel, text in files.items():
        assert (TASKS / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: run make_yamls.py"
    group = files["_egoerrorvqa_mc.yaml"]
    for src in names(public_only=True):  # one subtask per public source, and nothing else
        assert f"  - egoerrorvqa_mc_{src}\n" in group
    assert group.count("  - egoerrorvqa_mc_") == len(names(public_only=True))
    on_disk = {p.relative_to(TASKS).as_posix() for p in TASKS.rglob("*") if p.suffix in (".yaml", ".jsonl")}
    assert on_disk == {k for k in files if k.endswith((".yaml", ".jsonl"))}


def _row(i: int, source: str, gt: str, answer: str | None) -> dict:
    return {
        "sample_id": f"{source}/{i}",
        "source": source,
        "ground_truth": [gt],
        "answer": answer,
        "failure": None if answer is not None else "video: missing",
    }


def test_pooled_values_are_the_overall_scores_not_a_mean_of_sources():
    a = [
        _row(0, "captaincook4d", "Omission", "Omission"),
        _row(1, "captaincook4d", "correct", "Wrong order"),
        _row(2, "captaincook4d", "correct", "correct"),
        _row(3, "captaincook4d", "correct", "Omission"),
    ]
    b = [
        _row(0, "epic_tent", "Wrong order", "Wrong order"),
        _row(1, "epic_tent", "Omission", "correct"),
        _row(2, "epic_tent", "Omission", "Wrong order"),
        _row(3, "epic_tent", "correct", None),
    ]
    per_a = {k: R.AGGREGATIONS[f"aggregate_{k}"](a) for k in R.MC_METRICS}
    per_b = {k: R.AGGREGATIONS[f"aggregate_{k}"](b) for k in R.MC_METRICS}
    want = compute_mc_metrics(a + b)
    got = {k: R.pooled([per_a[k], per_b[k]], [4, 4]) for k in R.MC_METRICS}
    for k in ("accuracy", "precision", "recall", "f1"):
        assert got[k] == want["overall"][k]
        assert per_a[k] == want["per_source"]["captaincook4d"][k]
        assert per_b[k] == want["per_source"]["epic_tent"][k]
        assert got[f"simple_average_{k}"] == want["simple_average"][k]
    # pooled precision (TP 2 of 5 error claims) is not the size-weighted mean of the sources' 1/3 and 1/2
    assert got["precision"] == 2 / 5 and per_a["precision"] == 1 / 3 and per_b["precision"] == 1 / 2
    omission = want["per_type_accuracy"]["overall"]["Omission"]["accuracy"]
    assert got["per_type_accuracy_omission"] == omission
    assert math.isnan(got["per_type_accuracy_equipment_failure"])  # no such sample: None there, NaN here
    assert float(got["accuracy"]) == got["accuracy"] and isinstance(got["accuracy"], float)


def test_demo_documents_carry_the_public_question_and_clip():
    import json

    import pytest

    from ego_adr.integrations.lmms_eval import docs as D
    from ego_adr.reasoning.public_text import PublicSourceMissing, read_public_text
    from ego_adr.video.public_policy import public_indices, white_agent_window

    try:
        guidance = read_public_text().guidance
    except PublicSourceMissing as e:
        pytest.skip(str(e))
    mc = D.load_docs("egoerrorvqa_mc_demo", D.MC, "demo")
    assert len(mc) == 16 and len({d["sample_id"] for d in mc}) == 16
    doc = mc[0]
    wire = json.loads(doc["sample"])["wire"]
    assert doc["question"].startswith(guidance.strip()[:40])
    assert f'Current Step: "{wire["action_annotation"]}"' in doc["question"]  # the stored step, as the public
    assert (doc["start"], doc["end"]) == white_agent_window(wire["start_time"], wire["end_time"])
    item = D.item_of(doc)
    info = item.frames_info
    want, _, _ = public_indices(info["video_frames"], info["video_fps"], doc["start"], doc["end"], 8)
    assert info["indices"] == want and item.frames.fps == 2.0  # the public frame rule and clip rate
    images = D.clip_images(doc)
    assert len(images) == 8 and images[0].size == (item.frames.array.shape[2], item.frames.array.shape[1])
    oe = D.load_docs("egoerrorvqa_oe_demo", D.OE, "demo")
    assert len(oe) == 16 and all(d["question"].endswith("Question: " + d["qa_question"]) for d in oe)


def test_real_tasks_need_the_data_root_in_one_line(monkeypatch):
    import pytest

    from ego_adr.errors import UserError
    from ego_adr.integrations.lmms_eval import docs as D

    monkeypatch.delenv(D.ENV_DATA, raising=False)
    with pytest.raises(UserError, match=D.ENV_DATA) as e:
        D.load_docs("egoerrorvqa_mc_captaincook4d", D.MC, "captaincook4d")
    assert "\n" not in str(e.value)
    monkeypatch.setenv(D.ENV_FRAMES, "eight")
    with pytest.raises(UserError, match=D.ENV_FRAMES):
        D.frames()
