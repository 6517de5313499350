"""``python -m ego_adr.eval score`` on lmms-eval's own ``<date>_samples_<task>.jsonl`` (issue 28 item 4), without
lmms-eval: the lines are written here in the shape lmms-eval 0.7.3 logs them (``doc_id``, ``target``, the
flattened ``filtered_resps`` and what the task's ``process_results`` returned, ``egoerrorvqa_row`` among it; the
real CLI writes them in tests/integrations/test_lmms_eval_cli.py). Every expected number is computed by hand."""

from __future__ import annotations

import json

import pytest

from ego_adr.eval.__main__ import main
from ego_adr.eval.lmms_samples import answers_digest, judgements_name, judges_digest


def _mc_line(i, source, truth, reply, answered=True):
    row = {"sample_id": f"{source}/{i}", "source": source, "task_id": "t", "ground_truth": truth,
           "answer": reply if answered else None, "answer_from": "lmms-eval reply",
           "failure": None if answered else "video: VideoError: file not found", "frames": 8,
           "protocol": "public,resize=processor"}
    return {"doc_id": i, "target": " | ".join(truth), "filtered_resps": reply, "doc_hash": f"h{i}",
            "accuracy": row, "f1": row, "egoerrorvqa_row": row}


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_mc_samples_file_is_scored_from_its_logged_replies(tmp_path, capsys):
    lines = [_mc_line(0, "egooops", ["Wrong order"], "Wrong order."),  # hit after cleaning, TP
             _mc_line(1, "egooops", ["correct"], "correct"),  # TN
             _mc_line(2, "egooops", ["correct"], "The step is fine"),  # prose: an error claim, FP
             _mc_line(3, "egooops", ["Omission"], "", answered=False)]  # no clip: in n, in no cell
    path = _write(tmp_path / "out" / "model" / "20261202_samples_egoerrorvqa_mc_egooops.jsonl", lines)
    assert main(["score", str(path), "--out", str(tmp_path / "scored"), "--n-boot", "20"]) == 0
    assert "lmms-eval samples: 4 multiple-choice replies" in capsys.readouterr().out
    o = json.loads((tmp_path / "scored" / "metrics.json").read_text())["overall"]
    # by hand: 2 hits of 4; TP 1, FP 1, TN 1; precision 1/2, recall 1/1, F1 2/3
    assert (o["n"], o["tp"], o["fp"], o["tn"], o["fn"], o["n_failed"]) == (4, 1, 1, 1, 0, 1)
    assert (o["accuracy"], o["precision"], o["recall"], o["f1"]) == pytest.approx((0.5, 0.5, 1.0, 2 / 3))


def test_a_log_whose_scored_row_is_not_its_reply_is_refused(tmp_path, capsys):
    line = _mc_line(0, "egooops", ["correct"], "correct")
    line["egoerrorvqa_row"] = {**line["egoerrorvqa_row"], "answer": "Omission"}
    path = _write(tmp_path / "samples_x.jsonl", [line])
    assert main(["score", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "doc_id 0 logged the reply 'correct' but scored 'Omission'" in err and len(err.splitlines()) == 1
    other = _write(tmp_path / "samples_other.jsonl", [{"doc_id": 0, "target": "A", "filtered_resps": "A",
                                                       "exact_match": 1.0}])
    assert main(["score", str(other), "--out", str(tmp_path / "o2")]) == 2
    assert "not an egoerrorvqa task's log" in capsys.readouterr().err


def _oe_answers():
    return [{"task": "open-end", "sample_id": f"demo/{i}", "qa_index": 0, "source": "demo", "task_id": "t",
             "question": "What went wrong?", "reference": "Salt.", "answer": a, "error": None, "failure": None,
             "failure_kind": None} for i, a in enumerate(("salt", "sugar", "nothing"))]


def _judgement(answer: dict, qwen, deepseek, failed: bool = False) -> dict:
    row = {**answer, "protocol": "public", "judge_set": ["qwen=a", "deepseek=b"],
           "judges": {"qwen": {"score": qwen, "method": "public-json"},
                      "deepseek": {"score": deepseek, "method": "public-json"}},
           "judge_scores": {"qwen": qwen, "deepseek": deepseek}, "failed_judges": [], "failure": None,
           "score": None if failed else (qwen + deepseek) / 2}
    if failed:
        row.update(failure="judge call failed (DeepSeekJudge: [infrastructure] ConnectError: connection refused)",
                   failure_kind="infrastructure", judge_scores={"qwen": None, "deepseek": None})
    return row


def test_open_ended_samples_file_finds_its_judgements_by_its_answers(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path / "cache"))
    answers = _oe_answers()
    lines = [{"doc_id": i, "target": a["reference"], "filtered_resps": a["answer"], "avg_sim": a, "egoerrorvqa_row": a}
             for i, a in enumerate(answers)]
    out = tmp_path / "out"
    path = _write(out / "model" / "20261202_samples_egoerrorvqa_oe_demo.jsonl", lines)
    assert main(["score", str(path), "--out", str(tmp_path / "s0")]) == 2  # no judgements yet: one line, what to do
    err = capsys.readouterr().err
    assert f"egoerrorvqa_oe_judgements-{answers_digest(answers)}-*.jsonl" in err and "--judgements" in err
    # by hand: (5 + 4) / 2 = 4.5 and (1 + 2) / 2 = 1.5; the third answer's judge was down: unjudged, in no average
    judged = [_judgement(answers[0], 5, 4), _judgement(answers[1], 1, 2), _judgement(answers[2], 3, 0, failed=True)]
    name = judgements_name(answers_digest(answers), judges_digest(""))
    _write(tmp_path / "cache" / "lmms-eval" / name, judged)  # where the task keeps them between runs
    assert main(["score", str(path), "--out", str(tmp_path / "s1")]) == 0
    m = json.loads((tmp_path / "s1" / "metrics.json").read_text())
    assert m["avg_sim"] == 3.0 and m["n_scored"] == 2 and m["n_unjudged"] == 1
    assert f"judged in {tmp_path / 'cache' / 'lmms-eval' / name}" in capsys.readouterr().out
    # a copy beside lmms-eval's results (its --output_path) is found first; --judgements names one directly
    _write(out / name, judged[:2] + [_judgement(answers[2], 3, 0)])
    assert main(["score", str(path), "--out", str(tmp_path / "s2")]) == 0
    assert json.loads((tmp_path / "s2" / "metrics.json").read_text())["avg_sim"] == pytest.approx(7.5 / 3)
    assert main(["score", str(path), "--out", str(tmp_path / "s3"), "--judgements",
                 str(tmp_path / "cache" / "lmms-eval" / name)]) == 0
    assert json.loads((tmp_path / "s3" / "metrics.json").read_text())["avg_sim"] == 3.0
