"""Open-ended judging rules (issue 29 item 2, issue 28 item 9): the default protocol's final score is the mean of
both judges, so a row with one unparseable reply has no score and is counted; an outage recorded through the
stage cache keeps its real cause; rows whose video is missing say their failure kind; a table of "-" says why.
The judges are doubles (the tests are about the judging code around them)."""

from __future__ import annotations

import json

import pytest

from ego_adr.eval.open_end import ONE_UNPARSEABLE, PAPER_RULE, render_open_end_report, score_open_end_rows
from ego_adr.models.base import Capabilities, Generation
from ego_adr.models.cache import StageCache
from ego_adr.run.config import RunConfig
from ego_adr.run.judging import judge_request, judge_rows
from ego_adr.store import JsonlStore


class ReplyJudgeDouble:
    """A judge double: ``replies[answer]`` is its reply text; ``down`` fails every call with ``error``. It names
    its own backend, as the real ones do (the stage-cache key holds it)."""

    backend = "double"

    def __init__(self, name: str, replies: dict | None = None, error: str | None = None) -> None:
        self.model_id, self.fingerprint = name, f"{name}@test"
        self.replies, self.error, self.calls = replies or {}, error, 0
        self.capabilities = Capabilities(video=False, max_batch_size=4)

    def generate(self, requests):
        self.calls += len(requests)
        if self.error:
            return [Generation(None, error=self.error) for _ in requests]
        return [Generation(self.replies[r.messages[-1].content[0].split("Model answer: ")[1].split("\n")[0]])
                for r in requests]


def _answers(*texts):
    return [{"sample_id": f"s{i}", "qa_index": 0, "source": "captaincook4d", "question": "What went wrong?",
             "reference": "Salt instead of sugar.", "answer": a} for i, a in enumerate(texts)]


def test_one_unparseable_judge_gives_no_score_not_the_other_judges_alone(tmp_path):
    # hand-computed: s0 (4 + 2) / 2 = 3; s1 judge-a writes prose -> no mean of both -> unscored; s2 (5 + 5) / 2 = 5
    a = ReplyJudgeDouble("judge-a", {"x": '{"score": 4}', "y": "I would say 1.", "z": '{"score": 5}'})
    b = ReplyJudgeDouble("judge-b", {"x": '{"score": 2}', "y": '{"score": 5}', "z": '{"score": 5}'})
    with JsonlStore(tmp_path / "j.jsonl") as store:
        rows = judge_rows(_answers("x", "y", "z"), [a, b], store, progress=False)
    one = rows[1]
    assert one["score"] is None and one["failure"].startswith("one judge's reply unparseable")
    assert one["judge_scores"] == {"judge-a": None, "judge-b": 5.0}  # b's score is kept, not used as the mean
    m = score_open_end_rows(rows)
    assert m["avg_sim"] == 4.0 and m["n_scored"] == 2  # (3 + 5) / 2; the old rule gave (3 + 5 + 5) / 3
    assert m["failures"] == {ONE_UNPARSEABLE: 1}
    assert m["judge_rule"] == {"rule": PAPER_RULE, "rows_one_judge_unparseable": 1}
    assert m["per_judge"]["judge-b"]["mean"] == 4.0  # each judge's own mean keeps its parsed replies
    report = render_open_end_report(m)
    assert "1 row(s) have no score because one judge's reply could not be parsed" in report
    # a file written by the old rule (score = the one parseable judge) is scored by today's rule
    old = {**one, "score": 5.0, "failure": None, "failed_judges": ["judge-a"]}
    assert score_open_end_rows([rows[0], old, rows[2]])["avg_sim"] == 4.0


def test_an_outage_through_the_cache_keeps_its_real_cause(tmp_path):
    """Judges are asked one at a time into the stage cache, then answer from it (run.open_end); a call that
    failed in the first pass is recorded with that pass's error, not "judge already released"."""
    from ego_adr.run.open_end import judge_one_at_a_time

    rows = _answers("x", "y")
    refused = "[infrastructure] connection refused: http://127.0.0.1:9/v1/chat/completions"
    loaders = {"judge-a": lambda: ReplyJudgeDouble("judge-a", {"x": '{"score": 4}', "y": '{"score": 3}'}),
               "judge-b": lambda: ReplyJudgeDouble("judge-b", error=refused)}
    cache = StageCache(tmp_path / "cache.sqlite")
    judges, stats = judge_one_at_a_time(loaders, lambda k: [judge_request(r) for r in rows], cache, "test", False)
    assert stats["judge-b"]["model_calls"] == 2
    with JsonlStore(tmp_path / "j.jsonl") as store:
        got = judge_rows(rows, judges, store, cache, progress=False)
    for r in got:
        assert r["failure_kind"] == "infrastructure" and "connection refused" in r["failure"]
        assert "already released" not in r["failure"]
        assert r["judges"]["judge-b"]["error"].startswith("[infrastructure] connection refused")
    assert score_open_end_rows(got)["n_unjudged"] == 2


def _doubles(cfg):
    length = {"judge-a": lambda: ReplyJudgeDouble("judge-a", error="never asked"),
              "judge-b": lambda: ReplyJudgeDouble("judge-b", error="never asked")}
    return length, "two doubles", "test"


def test_open_end_rows_with_a_missing_video_say_their_kind(tmp_path, monkeypatch, tiny_model_dir, shared_data):
    from ego_adr.run import open_end
    from ego_adr.run.runner import execute

    monkeypatch.setattr(open_end, "judge_loaders", _doubles)
    out = tmp_path / "novideo"
    execute(RunConfig(task="open-end", model="tiny", data_root=str(shared_data), video_root=str(tmp_path),
                      limit=2, max_new_tokens=4, output_dir=str(out), use_cache=False), progress=False)
    answers = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    judged = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert answers and all(r["failure"].startswith("video:") for r in answers)
    assert {r["failure_kind"] for r in answers} == {"sample"}  # as a multiple-choice row with no video says
    assert {r["failure_kind"] for r in judged} == {"sample"} and all(r["score"] is None for r in judged)


@pytest.mark.slow
def test_a_tiny_open_end_run_says_why_its_table_is_dashes(tmp_path, tiny_model_dir, demo_root):
    from ego_adr.run.experiments import table3_rows
    from ego_adr.run.runner import execute

    out = tmp_path / "tiny"
    cfg = RunConfig(task="open-end", model="tiny", limit=1, max_new_tokens=4, output_dir=str(out))
    _, m = execute(cfg, progress=False)
    assert m["n_scored"] == 0 and m["avg_sim"] is None  # the tiny random judges write no score in the rubric form
    report = (out / "report.md").read_text()
    assert "Note: Every score is '-': none of the" in report and "tiny random LMs" in report
    from ego_adr.eval.open_end import render_open_end_report

    assert "not judgeable" in render_open_end_report(m)  # what `run --task open-end` prints under its table
    run = json.loads((out / "run.json").read_text())
    table = table3_rows([{"cell": {"label": "8f"}, "config": cfg, "metrics": m, "judges": run["judges"]}])
    assert "| - |" in table and "Note: Every score is '-'" in table and "not judgeable" in table


def test_an_empty_answer_is_judged_as_the_public_evaluator_does(tmp_path, monkeypatch, demo_root):
    """The public green agent sends the white agent's stripped text, "" included, to its judges (the rubric's
    0); ``ego_adr.run --task open-end`` recorded an empty answer as a failed answer and never asked. The model
    double answers "" to every question; each judge double scores "" 0, so every row is asked and scores 0."""
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run import open_end
    from ego_adr.run.runner import execute

    judges = {n: ReplyJudgeDouble(n, {"": '{"score": 0, "reason": "no answer"}'}) for n in ("judge-a", "judge-b")}
    monkeypatch.setattr(open_end, "judge_loaders",
                        lambda cfg: ({n: (lambda j=j: j) for n, j in judges.items()}, "two doubles", "test"))

    class SilentModelDouble(ScriptedModelDouble):
        def generate(self, requests):
            return [Generation("", seconds=0.0) for _ in requests]

    out = tmp_path / "silent"
    _, m = execute(RunConfig(task="open-end", limit=2, output_dir=str(out), use_cache=False), progress=False,
                   model=SilentModelDouble())
    answers = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    judged = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    assert answers and all(r["answer"] == "" and not r.get("error") for r in answers)
    assert judges["judge-a"].calls == judges["judge-b"].calls == len(answers)
    assert [r["score"] for r in judged] == [0.0] * len(answers)
    assert m["n_scored"] == len(answers) and m["avg_sim"] == 0.0
