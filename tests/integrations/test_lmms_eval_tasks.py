"""The lmms-eval task files and the scoring behind them, without lmms-eval: the committed YAMLs are what
``make_yamls.py`` writes from the source registry, and a group's pooled values are ego_adr.eval's overall
numbers (which the mean of per-source values is not)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ego_adr.data.sources import names
from ego_adr.eval.mc import compute_mc_metrics
from ego_adr.integrations.lmms_eval import results as R
from ego_adr.integrations.lmms_eval.tasks.egoerrorvqa import make_yamls

TASKS = Path(make_yamls.__file__).resolve().parent


def _yaml(path: Path) -> dict:
    """A task YAML as lmms-eval reads it, ``!function utils.X`` kept as the string ``utils.X``."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)


# The oracle, written out by hand from docs/lmms_eval.md's metric table: four rates, their simple averages over
# sources, and one per-type accuracy per option of the taxonomy (its nine option strings, spelled here).
MC_NAMES = {"accuracy", "precision", "recall", "f1", "simple_average_accuracy", "simple_average_precision",
            "simple_average_recall", "simple_average_f1"} | {f"per_type_accuracy_{t}" for t in (
                "correct", "wrong_object", "wrong_action", "wrong_order", "omission",
                "unintended_and_unnecessary_action", "correct_wrong_action", "equipment_failure", "others")}
OE_NAMES = {"avg_sim": True, "macro_avg": True, "unjudged": False}  # metric -> higher is better


def _functions(node) -> list[str]:
    if isinstance(node, dict):
        return [f for v in node.values() for f in _functions(v)]
    if isinstance(node, list):
        return [f for v in node for f in _functions(v)]
    return [node] if isinstance(node, str) and node.startswith("utils.") else []


def test_committed_task_files_say_what_the_docs_say():
    """Read back as lmms-eval reads them (not compared with the generator's output): one subtask per public source
    whose manifest names that source, every metric of the docs' table with its own aggregation, the group pooling
    its subtasks, the open-ended tasks' three metrics, the public white agent's decoding, and every ``!function``
    naming a callable of utils.py."""
    from ego_adr.integrations.lmms_eval.tasks.egoerrorvqa import utils

    template = _yaml(TASKS / "_default_template_mc_yaml")
    assert {m["metric"] for m in template["metric_list"]} == MC_NAMES
    for m in template["metric_list"]:
        assert m["aggregation"] == f"utils.aggregate_{m['metric']}" and m["higher_is_better"] is True
    assert template["generation_kwargs"] == {"max_new_tokens": 128, "temperature": 0, "do_sample": False, "until": []}
    public = ["captaincook4d", "epic_tent", "assembly101", "egooops"]  # the paper's four sources (Table 2)
    assert set(names(public_only=True)) == set(public)
    for src in [*public, "demo"]:
        task = _yaml(TASKS / f"egoerrorvqa_mc_{src}.yaml")
        assert task["include"] == "_default_template_mc_yaml" and task["task"] == f"egoerrorvqa_mc_{src}"
        manifest = TASKS / task["dataset_kwargs"]["data_files"]["test"]
        lines = [json.loads(x) for x in manifest.read_text().splitlines()]
        assert lines == [{"lmms_task": f"egoerrorvqa_mc_{src}", "kind": "multiple-choice", "source": src}]
    group = _yaml(TASKS / "_egoerrorvqa_mc.yaml")
    assert group["group"] == "egoerrorvqa_mc" and group["task"] == [f"egoerrorvqa_mc_{s}" for s in public]
    assert {m["metric"]: m["aggregation"] for m in group["aggregate_metric_list"]} == dict.fromkeys(
        MC_NAMES, "utils.pooled")
    for name, srcs in (("egoerrorvqa_oe", public), ("egoerrorvqa_oe_demo", ["demo"])):
        oe = _yaml(TASKS / f"{name}.yaml")
        assert {m["metric"]: m["higher_is_better"] for m in oe["metric_list"]} == OE_NAMES
        assert oe["process_results"] == "utils.process_results_oe" and oe["generation_kwargs"]["max_new_tokens"] == 128
        lines = [json.loads(x) for x in (TASKS / oe["dataset_kwargs"]["data_files"]["test"]).read_text().splitlines()]
        assert [x["source"] for x in lines] == srcs and {x["kind"] for x in lines} == {"open-end"}
    every = [f for p in TASKS.glob("*yaml") for f in _functions(_yaml(p))]
    assert every and all(callable(getattr(utils, f.removeprefix("utils."), None)) for f in every)


def test_committed_task_files_are_the_generators_output():
    """Staleness only (the content is checked above): the committed files are what make_yamls.py writes now."""
    files = make_yamls.files()
    for rel, text in files.items():
        assert (TASKS / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: run make_yamls.py"
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


def test_the_task_folder_command_checks_model_args_before_lmms_eval_starts(capsys):
    """Issue 38 point 4: ``python -m ego_adr.integrations.lmms_eval --model_args ...`` checks them as the model will
    (one line, exit 2, no task folder printed, so ``TASKS=$(...) && lmms-eval ...`` never starts lmms-eval)."""
    import torch

    from ego_adr.integrations.lmms_eval.__main__ import main

    assert main([]) == 0 and capsys.readouterr().out.strip() == str(TASKS.parent)
    bad = {"pretrained=x,nonsense=1": "unknown model_args ['nonsense']", "device": "is not key=value",
           "mode=deepest": "mode", "device=gpu0": "device='gpu0' is not a device"}
    if not torch.cuda.is_available():  # named as --model_args spells it, not as our command lines (issue 46)
        bad["device=cuda"] = "device=cuda asked for, but this machine has no usable CUDA GPU; use device=cpu (or auto)"
    for args, says in bad.items():
        assert main(["--model_args", args]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and says in err, (args, err)
