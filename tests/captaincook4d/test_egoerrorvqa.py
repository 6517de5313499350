"""EgoErrorVQA's CaptainCook4D questions answered from the oracle step stream and the recipe graph, no video: the
answers follow the annotation, and the predictions file is what the public evaluator's rule scores."""

from __future__ import annotations

from ego_adr.captaincook4d import egoerrorvqa as Q
from ego_adr.eval.mc import compute_mc_metrics, load_predictions


def test_the_no_video_answers_follow_the_steps_and_are_scored_by_the_evaluator(shared_data, cc4d_root, tmp_path):
    rows = Q.predictions(shared_data, cc4d_root)
    assert {r["answer"] for r in rows} <= {"correct", "Wrong order", "Omission"}
    omitted = [r for r in rows if "Omission" in r["ground_truth"]]
    assert omitted and all(r["answer"] == "Omission" for r in omitted)  # a skipped step is absent from the stream

    def share(rs):
        return sum(r["answer"] == "Wrong order" for r in rs) / len(rs)

    order = [r for r in rows if "Wrong order" in r["ground_truth"]]
    correct = [r for r in rows if r["ground_truth"] == ["correct"]]
    assert share(order) > 0.5 > 0.1 > share(correct)
    path = Q.write(rows, tmp_path / "predictions.jsonl")
    m = compute_mc_metrics(load_predictions(path))
    assert m["overall"]["n"] == len(rows) and m["excluded"]["n"] == 0
    assert m["per_type_accuracy"]["overall"]["Wrong action"]["accuracy"] == 0.0  # needs the video
    base = compute_mc_metrics(Q.majority(rows))
    assert base["overall"]["recall"] == 0.0 and m["overall"]["accuracy"] > base["overall"]["accuracy"]
