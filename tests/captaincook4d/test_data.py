"""CaptainCook4D read into the benchmarks: the test split's counts recomputed from the annotation files by code
that shares nothing with the loader, the omission rule, the cut benchmark, and bad input refused in one line."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import graphs as G
from ego_adr.captaincook4d import sources as S
from ego_adr.errors import UserError

ANN = "sources/CaptainCook4D-annotations"


def _raw_test_counts(root) -> dict:
    """The test split read with json and nothing else: recordings, steps done, Order Error steps, skipped steps,
    and the positives under the end rule (an order error, or the recording's end when it skipped a step)."""
    split = json.loads((root / ANN / "data_splits/recordings_data_split_combined.json").read_text())["test"]
    recs = {r["recording_id"]: r for r in json.loads((root / ANN / "annotation_json/error_annotations.json")
                                                     .read_text())}
    out = Counter(recordings=len(split))
    for rid in split:
        steps = recs[rid]["step_annotations"]
        tags = [[e["tag"] for e in (s.get("errors") or [])] for s in steps]
        done = [t for s, t in zip(steps, tags) if s["start_time"] != -1]
        skipped = sum(1 for s, t in zip(steps, tags) if s["start_time"] == -1 and "Missing Step" in t)
        out["steps"] += len(done)
        out["order"] += sum("Order Error" in t for t in done)
        out["skipped"] += skipped
        out["end_rule_positives"] += sum("Order Error" in t for t in done) + (skipped > 0)
        out["annotated"] += len(steps)
        out["errorful"] += sum(bool(t) for t in tags)
        out["missing_tags"] += sum("Missing Step" in t for t in tags)
    return dict(out)


def test_the_test_split_counts_are_the_annotation_files(cc4d_root):
    raw = _raw_test_counts(cc4d_root)
    # the description of the split, from CaptainCook4D's files: 109 recordings, 1,613 steps, 674 errorful,
    # 367 with Order Error, 70 with Missing Step
    assert (raw["recordings"], raw["annotated"], raw["errorful"], raw["order"], raw["missing_tags"]) == (
        109, 1613, 674, 367, 70)
    got = B.counts(B.load(cc4d_root, "captaincook4d-complete", rule="end").test)
    assert (got["recordings"], got["steps"], got["ends"]) == (raw["recordings"], raw["steps"], raw["recordings"])
    assert (got["order_error_steps"], got["skipped_steps"]) == (raw["order"], raw["skipped"])
    assert got["positives"] == raw["end_rule_positives"]


def _graph(edges, steps=(1, 2, 3, 4)):
    text = {0: "START", **{s: f"s{s}" for s in steps}, 9: "END"}
    return G.parse({"steps": {str(k): v for k, v in text.items()}, "edges": [list(e) for e in edges]}, "g.json", "r",
                   {f"s{s}": 100 + s for s in steps})


def test_a_skipped_step_is_placed_on_the_first_step_that_needs_it_else_on_the_end():
    # 1 -> 2 -> 3 -> END, 4 -> END: step 2 skipped shows when 3 is done; 4 skipped only at the end
    g = _graph([(0, 1), (1, 2), (2, 3), (3, 9), (0, 4), (4, 9)])
    assert B.targets(g, [101, 103], [102, 104]) == [1, 2]
    assert B.targets(g, [101, 103], [102, 104], rule="end") == [2, 2]
    # a transitive need: 1 skipped shows at 3 when 2 was skipped too
    assert B.targets(g, [103], [101, 102]) == [0, 0]


def test_a_repeated_step_takes_its_next_node():
    # two nodes of one step (CaptainCook4D's repeated steps): the second doing is the second node
    text = {0: "START", 1: "a", 2: "b", 3: "b", 4: "END"}
    g = G.parse({"steps": {str(k): v for k, v in text.items()}, "edges": [[0, 1], [1, 2], [2, 3], [3, 4]]}, "g", "r",
                {"a": 10, "b": 11})
    assert (g.node(11, 0), g.node(11, 1), g.node(11, 5)) == (2, 3, 3)
    assert B.targets(g, [10, 11], [11]) == [2]  # the second "b" skipped: nothing done needs it -> the end


def test_the_cut_benchmark_ends_every_recording_at_its_first_positive(cc4d_root):
    full = B.load(cc4d_root, "captaincook4d-complete").test
    cut = B.load(cc4d_root, "captaincook4d-o").test
    whole = {r.recording: r for r in full.recordings}
    assert len(cut.recordings) + len(cut.dropped) == len(full.recordings)
    for r in cut.recordings:
        assert r.labels[-1] == 1 and sum(r.labels) == 1
        assert r.steps == whole[r.recording].steps[:len(r.steps)]
    assert all(sum(whole[d].labels) == 0 for d in cut.dropped)


def _write(root, rel, doc):
    (root / rel).write_text(json.dumps(doc))


def _refused(root, *words):
    with pytest.raises(UserError) as e:
        B.load(root, "captaincook4d-complete")
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_a_split_naming_a_recording_the_annotations_lack_is_refused(root_copy):
    rel = f"{ANN}/data_splits/recordings_data_split_combined.json"
    doc = json.loads((root_copy / rel).read_text())
    doc["test"].append("99_99")
    _write(root_copy, rel, doc)
    _refused(root_copy, "recordings_data_split_combined.json", "'99_99'")


def test_a_graph_with_a_cycle_or_an_edge_to_a_missing_step_is_refused(root_copy):
    rel = f"{ANN}/task_graphs/coffee.json"
    good = json.loads((root_copy / rel).read_text())
    a, b = good["edges"][1]
    _write(root_copy, rel, {**good, "edges": [*good["edges"], [b, a]]})
    _refused(root_copy, "coffee.json", "cycle")
    _write(root_copy, rel, {**good, "edges": [*good["edges"], [1, 77]]})
    _refused(root_copy, "coffee.json", "[1, 77]")
    _write(root_copy, rel, {**good, "steps": {**good["steps"], "3": "Stir-Stir the soup"}})
    _refused(root_copy, "coffee.json", "node 3", "no step of recipe 'coffee'")


def test_a_recording_with_a_step_outside_its_recipe_is_refused(root_copy):
    rel = f"{ANN}/annotation_json/error_annotations.json"
    doc = json.loads((root_copy / rel).read_text())
    doc[5]["step_annotations"][2]["step_id"] = 350 if doc[5]["activity_id"] != 29 else 1
    _write(root_copy, rel, doc)
    _refused(root_copy, "error_annotations.json", repr(doc[5]["recording_id"]), "step 2")


def test_a_data_root_missing_a_file_is_refused(root_copy):
    (root_copy / f"{ANN}/task_graphs/ramen.json").unlink()
    _refused(root_copy, "task_graphs/ramen.json", "not found")
    with pytest.raises(UserError, match="step_idx_description.json not found"):
        (root_copy / S.DESCRIPTIONS).unlink()
        S.load(root_copy)
