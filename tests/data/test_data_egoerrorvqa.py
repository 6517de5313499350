"""EgoErrorVQA loaders on the real annotation files (../shared/egoerrorvqa) and on small files written here."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ego_adr.data.egoerrorvqa import (
    FILES,
    PUBLIC_SOURCES,
    SOURCES,
    DataError,
    LoadIssue,
    load_procedures,
    load_samples,
    sample_problem,
    video_path_for,
)
from ego_adr.data.sample import MULTIPLE_CHOICE, OPEN_END, Sample
from ego_adr.data.sources import clean_cc4d_description
from ego_adr.taxonomy import OPTIONS, canonical

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "egoerrorvqa"
# Sample counts of the developer split, from ../shared/egoerrorvqa/README.md.
COUNTS = {
    MULTIPLE_CHOICE: {"captaincook4d": 702, "assembly101": 327, "egooops": 145, "epic_tent": 124},
    OPEN_END: {"captaincook4d": 683, "assembly101": 328, "egooops": 139, "epic_tent": 131},
}


@pytest.fixture(scope="module")
def shared() -> Path:
    if not (SHARED / "procedure.json").is_file():
        pytest.skip(f"EgoErrorVQA annotations not found at {SHARED} (the shared developer split is absent)")
    return SHARED


@pytest.fixture(scope="module")
def loaded(shared) -> dict[str, list[Sample]]:
    return {task: load_samples(shared, task) for task in (MULTIPLE_CHOICE, OPEN_END)}


def raw(source: str, task: str) -> list[dict]:
    return json.loads((SHARED / FILES[(source, task)]).read_text())


def of(samples: list[Sample], source: str) -> list[Sample]:
    return [s for s in samples if s.source == source]


@pytest.mark.parametrize("task", [MULTIPLE_CHOICE, OPEN_END])
def test_counts_match_readme_and_nothing_is_reported(shared, task):
    issues: list[LoadIssue] = []
    samples = load_samples(shared, task, issues=issues)
    assert Counter(s.source for s in samples) == COUNTS[task]
    assert issues == []
    assert all(sample_problem(s) is None for s in samples)
    assert all(s.task == task and s.procedure for s in samples)


def test_multiple_choice_ground_truth_is_a_list_of_valid_options(loaded):
    for source in PUBLIC_SOURCES:
        records = raw(source, MULTIPLE_CHOICE)
        samples = of(loaded[MULTIPLE_CHOICE], source)
        for rec, s in zip(records, samples, strict=True):
            assert s.ground_truth and set(s.ground_truth) <= set(OPTIONS)
            expected = rec["close_end_answer"] if isinstance(rec["close_end_answer"], list) else [rec["close_end_answer"]]
            assert s.ground_truth == [canonical(x) for x in expected]
    for s in loaded[OPEN_END]:
        assert s.ground_truth == [] and 1 <= len(s.qa_pairs) <= 3
        assert all(p.question and p.answer for p in s.qa_pairs)


def test_captaincook4d_multi_label_lists_are_kept(loaded):
    multi = [s for s in of(loaded[MULTIPLE_CHOICE], "captaincook4d") if len(s.ground_truth) > 1]
    raw_multi = [r for r in raw("captaincook4d", MULTIPLE_CHOICE) if len(r["close_end_answer"]) > 1]
    assert len(multi) == len(raw_multi) > 0
    assert any(len(s.ground_truth) == 3 for s in multi)


def test_only_no_segment_windows_mean_whole_video(loaded):
    for task, samples in loaded.items():
        for source in PUBLIC_SOURCES:
            for rec, s in zip(raw(source, task), of(samples, source), strict=True):
                if rec["start_time"] < 0 and rec["end_time"] < 0:
                    assert s.start is None and s.end is None, s.sample_id
                else:  # kept as annotated; the sampler's window rule decides (ego_adr.data.window)
                    assert (s.start, s.end) == (rec["start_time"], rec["end_time"])
    omissions = [s for s in of(loaded[MULTIPLE_CHOICE], "captaincook4d") if "Omission" in s.ground_truth]
    assert omissions and all(s.start is None and s.end is None for s in omissions)
    assert any(s.start is None for s in of(loaded[MULTIPLE_CHOICE], "epic_tent"))  # the -3661.033 record


@pytest.mark.parametrize("start,end,want", [
    (-1, -1, (None, None)), (None, None, (None, None)), (-3661.033, -3661.033, (None, None)),
    (None, 12.0, (None, 12.0)), (5.0, -1, (5.0, -1.0)), (8.0, 3.0, (8.0, 3.0)), ("x", 3, (None, 3.0)),
    (2, 4, (2.0, 4.0)),
])
def test_time_window_keeps_malformed_windows_for_the_rule(start, end, want):
    from ego_adr.data.egoerrorvqa import time_window
    from ego_adr.data.window import window_problem

    assert time_window(start, end) == want
    malformed = want != (None, None) and (None in want or min(want) < 0 or want[1] < want[0])
    assert (window_problem(*want) is not None) == malformed


def test_missing_video_id_is_named_not_a_missing_file(tmp_path):
    from ego_adr.data.egoerrorvqa import load_samples, sample_problem

    (tmp_path / "procedure.json").write_text(json.dumps({"t1": "Boil water. Add tea."}))
    recs = [{"video_id": "", "task_id": "t1", "start_time": 1, "end_time": 2, "original_description": "Boil water",
             "modified_description": "Boil water", "close_end_answer": ["correct"]},
            {"video_id": "9_1", "task_id": "t1", "start_time": 5, "end_time": 2, "original_description": "Add tea",
             "modified_description": "Add tea", "close_end_answer": ["correct"]}]
    (tmp_path / "captaincook4d_answer.json").write_text(json.dumps(recs))
    issues = []
    samples = load_samples(tmp_path, sources=["captaincook4d"], video_root=tmp_path / "V", issues=issues)
    assert samples[0].video_path is None and sample_problem(samples[0]) == "record has no video_id"
    assert samples[1].video_path.endswith("9_1_360p.mp4") and (samples[1].start, samples[1].end) == (5.0, 2.0)
    assert any("end 2 s is before start 5 s" in i.problem for i in issues)


def test_captaincook4d_action_drops_duplicated_verb_prefix(loaded):
    assert clean_cc4d_description("Add-Add 1 can drained tuna to the bowl") == "Add 1 can drained tuna to the bowl"
    assert clean_cc4d_description("Add-1/4 tbsp balsamic vinegar") == "Add 1/4 tbsp balsamic vinegar"
    assert clean_cc4d_description("Coat -Coat a 6-oz. ramekin cup") == "Coat a 6-oz. ramekin cup"
    assert clean_cc4d_description("slicing-Continue slicing with floss") == "Continue slicing with floss"
    for task, samples in loaded.items():
        for rec, s in zip(raw("captaincook4d", task), of(samples, "captaincook4d"), strict=True):
            prefix, _, rest = rec["original_description"].partition("-")
            assert not s.action.startswith(prefix + "-") and s.action.endswith(rest.strip()), s.action
            assert s.action == clean_cc4d_description(rec["original_description"])
            if rec["modified_description"] != rec["original_description"]:
                assert s.action != rec["modified_description"]  # the error description must not leak in


def test_assembly101_actions_from_annotation_or_verb_and_objects(loaded):
    mc = of(loaded[MULTIPLE_CHOICE], "assembly101")
    assert {s.action_field for s in mc} == {"action_annotation"}
    assert [s.action for s in mc] == [r["action_annotation"] for r in raw("assembly101", MULTIPLE_CHOICE)]
    oe = of(loaded[OPEN_END], "assembly101")
    assert {s.action_field for s in oe} == {"verb_objects"}
    # The composed phrase must read exactly like the multiple-choice file's action_annotation for the same clip.
    mc_by_id = {s.sample_id: s.action for s in mc}
    shared_ids = [s for s in oe if s.sample_id in mc_by_id]
    assert len(shared_ids) > 100
    assert all(s.action == mc_by_id[s.sample_id] for s in shared_ids)


def test_egooops_actions_come_from_the_instruction_index(loaded):
    for task, samples in loaded.items():
        records = raw("egooops", task)
        samples = of(samples, "egooops")
        step_text = {(r["task_id"], r["instruction"]): r["instruction_label"] for r in records if r["instruction_label"]}
        for rec, s in zip(records, samples, strict=True):
            idx = rec["instruction"]
            assert s.step_index == (idx if idx >= 0 else None)
            if rec["instruction_label"]:
                assert s.action == rec["instruction_label"] and s.action_field == "instruction"
            if (rec["task_id"], idx) in step_text:  # error clips too: same source of the action as correct ones
                assert s.action == step_text[(rec["task_id"], idx)] and s.action_field == "instruction"
            if idx < 0:
                assert s.action is None and s.action_field == "none"
        errors = [s for r, s in zip(records, samples, strict=True) if r["is_error"] and r["instruction"] >= 0]
        assert errors and all(s.action for s in errors)


def test_epic_tent_uninformative_actions_become_none(loaded):
    for task, samples in loaded.items():
        seen = set()
        for rec, s in zip(raw("epic_tent", task), of(samples, "epic_tent"), strict=True):
            if rec["action_annotation"].strip().lower() in ("instruction", "unknown action", ""):
                seen.add(rec["action_annotation"])
                assert s.action is None and s.action_field == "uninformative"
            else:
                assert s.action == rec["action_annotation"] and s.action_field == "action_annotation"
        assert "instruction" in seen


def test_reference_is_free_text_never_a_label(loaded):
    labelish = {o.lower() for o in OPTIONS}
    for rec, s in zip(raw("captaincook4d", MULTIPLE_CHOICE), of(loaded[MULTIPLE_CHOICE], "captaincook4d"), strict=True):
        if rec["is_error"]:
            assert s.reference == "; ".join(dict.fromkeys(e["description"] for e in rec["errors"]))
        else:
            assert s.reference == s.action
    for rec, s in zip(raw("egooops", OPEN_END), of(loaded[OPEN_END], "egooops"), strict=True):
        assert s.reference == (rec["error_caption"].strip() if rec["is_error"] else s.action)
    for source in ("assembly101", "epic_tent"):  # their error annotations are label names
        for s in of(loaded[MULTIPLE_CHOICE], source):
            if s.ground_truth != ["correct"]:
                assert s.reference is None
    assert all((s.reference or "").lower() not in labelish for samples in loaded.values() for s in samples)


def test_sample_ids_unique_stable_and_shared_between_tasks(shared, loaded):
    for task, samples in loaded.items():
        for source in PUBLIC_SOURCES:
            ids = [s.sample_id for s in of(samples, source)]
            assert len(ids) == len(set(ids)), (task, source)
            assert all(i.startswith(source + "/") for i in ids)
    again = load_samples(shared, OPEN_END)
    assert [s.sample_id for s in again] == [s.sample_id for s in loaded[OPEN_END]]
    # A clip (identity computed here from the raw fields) held once in each task's file gets one id in both.
    def key(source: str, r: dict) -> tuple:
        ident = {"captaincook4d": ("step_id",), "assembly101": ("verb", "first_object", "second_object"),
                 "egooops": ("task_id", "instruction"), "epic_tent": ("action_label",)}[source]
        return (r["video_id"], round(r["start_time"], 3), round(r["end_time"], 3)) + tuple(r[k] for k in ident)

    for source in PUBLIC_SOURCES:
        ids: dict[str, dict[tuple, list[str]]] = {}
        for task in (MULTIPLE_CHOICE, OPEN_END):
            ids[task] = {}
            for r, s in zip(raw(source, task), of(loaded[task], source), strict=True):
                ids[task].setdefault(key(source, r), []).append(s.sample_id)
        once_in_both = [k for k, v in ids[MULTIPLE_CHOICE].items() if len(v) == 1 and len(ids[OPEN_END].get(k, [])) == 1]
        assert len(once_in_both) >= 0.4 * len(ids[MULTIPLE_CHOICE]), source  # the 70% splits overlap well
        assert all(ids[MULTIPLE_CHOICE][k] == ids[OPEN_END][k] for k in once_in_both), source


def test_sample_ids_do_not_depend_on_file_order(shared, tmp_path):
    records = raw("epic_tent", MULTIPLE_CHOICE)
    (tmp_path / "procedure.json").write_text((shared / "procedure.json").read_text())
    (tmp_path / FILES[("epic_tent", MULTIPLE_CHOICE)]).write_text(json.dumps(records[::-1]))
    forward = load_samples(shared, MULTIPLE_CHOICE, sources=["epic_tent"])
    backward = load_samples(tmp_path, MULTIPLE_CHOICE, sources=["epic_tent"])[::-1]
    assert [s.sample_id for s in backward] == [s.sample_id for s in forward]
    assert sum("#" in s.sample_id for s in forward) >= 2  # the duplicated-clip groups were disambiguated


def test_video_paths_follow_the_public_layout(shared, tmp_path):
    samples = load_samples(shared, MULTIPLE_CHOICE, video_root=tmp_path)
    first = {s.source: s for s in reversed(samples)}
    cc, tent, oops = first["captaincook4d"], first["epic_tent"], first["egooops"]
    assert cc.video_path == str(tmp_path / "captaincook4d" / f"{cc.video_id}_360p.mp4")
    assert tent.video_path == str(tmp_path / "epic-tent" / f"0{tent.video_id}.tent.gopro.MP4")
    assert oops.video_path == str(tmp_path / "egooops" / oops.task_id / f"{oops.video_id}.MP4")
    assert all(s.video_path is None for s in load_samples(shared, MULTIPLE_CHOICE, sources="egooops"))
    assert video_path_for("demo", {"video_id": "d1"}, tmp_path) == str(tmp_path / "demo" / "d1.mp4")


def test_assembly101_view_fallback_order(tmp_path):
    rec = {"video_id": "nusar-x"}
    folder = tmp_path / "assembly101" / "nusar-x"
    preferred = folder / "HMC_84355350_mono10bit.mp4"
    assert video_path_for("assembly101", rec, tmp_path) == str(preferred)  # nothing there: name the preferred one
    folder.mkdir(parents=True)
    (folder / "HMC_99999999_mono10bit.mp4").write_bytes(b"x")
    (folder / "HMC_11111111_mono10bit.mp4").write_bytes(b"x")
    assert video_path_for("assembly101", rec, tmp_path) == str(folder / "HMC_11111111_mono10bit.mp4")
    (folder / "HMC_21110305_mono10bit.mp4").write_bytes(b"x")
    assert video_path_for("assembly101", rec, tmp_path) == str(folder / "HMC_21110305_mono10bit.mp4")
    preferred.write_bytes(b"x")
    assert video_path_for("assembly101", rec, tmp_path) == str(preferred)


def test_missing_data_raises_a_helpful_data_error(tmp_path):
    with pytest.raises(DataError, match="download_annotations.py") as err:
        load_samples(tmp_path / "nowhere", MULTIPLE_CHOICE)
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(DataError, match="procedure.json"):
        load_procedures(tmp_path)
    (tmp_path / "procedure.json").write_text(json.dumps({"Coffee": "Boil water. Pour it over the grounds."}))
    with pytest.raises(DataError, match="captaincook4d_answer.json"):
        load_samples(tmp_path, MULTIPLE_CHOICE, sources=["captaincook4d"])
    with pytest.raises(ValueError, match="unknown source"):
        load_samples(tmp_path, MULTIPLE_CHOICE, sources=["ego4d"])
    with pytest.raises(ValueError, match="unknown task"):
        load_samples(tmp_path, "yes-no")


def test_bad_records_are_loaded_and_reported_not_fatal(tmp_path, caplog):
    (tmp_path / "procedure.json").write_text(json.dumps({"Coffee": "Boil water. Pour it over the grounds."}))
    base = {"recording_id": "9_1", "video_id": "9_1", "step_id": 1, "errors": [], "is_error": False,
            "original_description": "Pour-Pour the water", "action_annotation": "Pour-Pour the water"}
    records = [
        dict(base, task_id="Coffee", start_time=1.0, end_time=2.0, close_end_answer=["CORRECT"]),
        dict(base, task_id="Tea", start_time=3.0, end_time=4.0, close_end_answer=["wrong action", "Spilled"],
             is_error=True, errors=[{"tag": "Technique Error", "description": "spilled water on the table"}]),
        dict(base, task_id="Coffee", start_time=5.0, end_time=6.0, close_end_answer=["Spilled"]),
    ]
    (tmp_path / "captaincook4d_answer.json").write_text(json.dumps(records))
    issues: list[LoadIssue] = []
    samples = load_samples(tmp_path, MULTIPLE_CHOICE, sources=["captaincook4d"], video_root=tmp_path, issues=issues)
    assert len(samples) == 3
    assert samples[0].ground_truth == ["correct"] and sample_problem(samples[0]) is None
    assert samples[1].ground_truth == ["Wrong action"] and samples[1].procedure == ""
    assert "Tea" in sample_problem(samples[1])
    assert samples[1].reference == "spilled water on the table"
    assert samples[2].ground_truth == [] and sample_problem(samples[2]) == "no valid ground-truth label"
    problems = {(i.sample_id, i.problem) for i in issues}
    assert any(sid == samples[1].sample_id and "'Spilled'" in p for sid, p in problems)
    assert any(sid == samples[1].sample_id and "procedure.json" in p for sid, p in problems)
    assert "problem(s)" in caplog.text
    # A source that was not requested may be absent; the open-ended file of this source is.
    with pytest.raises(DataError):
        load_samples(tmp_path, OPEN_END, sources=["captaincook4d"])


def test_demo_records_load_from_their_own_files(tmp_path):
    (tmp_path / "procedure.json").write_text(json.dumps({"demo-tea": "Boil water. Put a tea bag in a cup."}))
    rec = {"video_id": "tea_01", "task_id": "demo-tea", "start_time": 0.0, "end_time": 4.0,
           "action_annotation": "Put a tea bag in a cup", "close_end_answer": ["Wrong object"], "is_error": True,
           "error_description": "put a coffee pod in the cup instead of a tea bag"}
    (tmp_path / "demo_answer.json").write_text(json.dumps([rec, dict(rec, start_time=-1, end_time=-1)]))
    (tmp_path / "demo_qa_pairs.json").write_text(json.dumps([dict(rec, qa_pairs=[{"question": "q?", "answer": "a"}])]))
    mc = load_samples(tmp_path, MULTIPLE_CHOICE, sources="demo", video_root=tmp_path / "v")
    oe = load_samples(tmp_path, OPEN_END, sources=["demo"])
    assert [s.ground_truth for s in mc] == [["Wrong object"], ["Wrong object"]]
    assert mc[0].video_path == str(tmp_path / "v" / "demo" / "tea_01.mp4")
    assert mc[0].reference == rec["error_description"] and mc[1].start is None
    assert oe[0].sample_id == mc[0].sample_id and oe[0].qa_pairs[0].answer == "a"
    assert "demo" in SOURCES and "demo" not in PUBLIC_SOURCES


def test_missing_annotation_fields_are_counted_exclusions_not_failed_answers(tmp_path, demo_root):
    """Issue 18, item 8: a record without task_id or close_end_answer is excluded and counted by reason; it
    neither lowers accuracy as a failed sample nor passes for an unknown label."""
    import json
    import shutil

    from ego_adr.data.egoerrorvqa import load_samples, sample_problem
    from ego_adr.eval.mc import compute_mc_metrics

    root = tmp_path / "data"
    shutil.copytree(demo_root / "annotations" if (demo_root / "annotations").is_dir() else demo_root, root)
    path = root / "demo_answer.json"
    recs = json.loads(path.read_text())
    del recs[0]["task_id"]
    del recs[1]["close_end_answer"]
    path.write_text(json.dumps(recs))
    samples = load_samples(root, sources=["demo"])
    assert samples[0].missing_fields == ["task_id"] and samples[1].missing_fields == ["close_end_answer"]
    assert not samples[2].missing_fields
    rows = []
    for s in samples:  # what the runner writes for a sample it cannot evaluate, and an answer for the rest
        problem = sample_problem(s)
        rows.append({"sample_id": s.sample_id, "source": s.source, "ground_truth": list(s.ground_truth),
                     "prediction": None if problem else "correct", "raw": None if problem else "correct",
                     "failure": f"data: {problem}" if problem else None})
    m = compute_mc_metrics(rows, n_boot=10)
    assert m["overall"]["n"] == len(samples) - 2 and m["overall"]["n_failed"] == 0
    assert m["excluded"]["by_reason"] == {"missing annotation field(s) task_id": 1,
                                          "missing annotation field(s) close_end_answer": 1}
