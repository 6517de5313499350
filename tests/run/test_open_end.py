"""Open-ended judging: score parsing, question selection, Table 3 scoring, and judging with two tiny text LMs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ego_adr.data.sample import OPEN_END, QAPair, Sample
from ego_adr.eval.open_end import (
    PARSE_FAILURES,
    parse_score,
    render_open_end_report,
    score_open_end_rows,
    select_qa,
)
from ego_adr.models.base import Generation, GenerationConfig
from ego_adr.models.cache import CachedModel, StageCache
from ego_adr.run.judging import judge_request, judge_rows
from ego_adr.store import JsonlStore

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "egoerrorvqa"


# --- parse_score: only the requested JSON form ---------------------------------------------------------------
@pytest.mark.parametrize(
    "text, score",
    [
        ('{"score": 4, "reason": "Same action, misses the tool."}', 4.0),
        ('```json\n{"score": 3, "reason": "partly right"}\n```', 3.0),
        ('Sure! Here is my evaluation:\n{"Score": 5, "reason": "identical"}\nHope this helps.', 5.0),
        ('{"score": 3.5, "reason": "half of it"}', 3.5),
        ('{"score": 0, "reason": "no response"}', 0.0),
        ('{"score": 2, "reason": "a"} and again {"score": 2}', 2.0),  # repeated, same value
    ],
)
def test_parse_score_accepts_the_requested_json(text, score):
    s, _, m = parse_score(text)
    assert (s, m) == (score, "json")


def test_parse_score_reason_from_json():
    assert parse_score('{"score": 4, "reason": "misses the tool"}')[1] == "misses the tool"


@pytest.mark.parametrize(
    "text, method",
    [
        ("", "empty"),
        (None, "empty"),
        ("   \n ", "empty"),
        ("The model answer says the person added 2 eggs; the reference says 3.", "unparseable"),
        ("The answer is mostly wrong, so I give it 2.", "unparseable"),  # prose, not the requested form
        ("Score: 3.5", "unparseable"),
        ("4/5 - the answer only omits the screwdriver", "unparseable"),
        ("5", "unparseable"),
        ('{"Sim": 5, "explanation": "identical"}', "unparseable"),  # another key
        ('{"score": "4", "reason": "a string"}', "unparseable"),  # not a number
        ('{"score": true}', "unparseable"),
        ('{"score": 10, "reason": "great"}', "out_of_range"),
        ('{"score": -1}', "out_of_range"),
        ('{"score": 3} {"score": 5}', "ambiguous"),
        ("ÿþ garbage \x00 tokens <|im_end|>", "unparseable"),
    ],
)
def test_parse_score_failures_are_recorded_not_numbers(text, method):
    s, _, m = parse_score(text)
    assert s is None and m == method and m in PARSE_FAILURES


# --- question selection ---------------------------------------------------------------------------------------
def _sample(sid: str, n_qa: int, source: str = "captaincook4d") -> Sample:
    return Sample(
        source=source, task=OPEN_END, sample_id=sid, task_id="t1", procedure="Cut. Cook.", video_id="v",
        video_path=None, start=0.0, end=1.0, action=None, action_field="none",
        qa_pairs=[QAPair(f"q{i} of {sid}?", f"ref {i}") for i in range(n_qa)],
    )


def test_select_qa_all_and_one_are_deterministic():
    samples = [_sample(f"s{i}", 1 + i % 3) for i in range(30)] + [_sample("empty", 0)]
    allp = select_qa(samples, "all")
    assert [(s.sample_id, i) for s, i in allp][:3] == [("s0", 0), ("s1", 0), ("s1", 1)]
    assert len(allp) == sum(1 + i % 3 for i in range(30))
    one = select_qa(samples, "one", seed=0)
    assert len(one) == 30 and all(0 <= i < len(s.qa_pairs) for s, i in one)
    again = select_qa(list(reversed(samples)), "one", seed=0)  # order- and shard-independent
    assert {(s.sample_id, i) for s, i in one} == {(s.sample_id, i) for s, i in again}
    other = select_qa(samples, "one", seed=1)
    assert {(s.sample_id, i) for s, i in other} != {(s.sample_id, i) for s, i in one}  # 3^10 * 2^10 choices
    with pytest.raises(ValueError, match="one of"):
        select_qa(samples, "random")


def test_select_qa_on_shared_annotations():
    if not SHARED.exists():
        pytest.skip(f"shared EgoErrorVQA annotations not found at {SHARED}")
    data = json.loads((SHARED / "epic_tent_qa_pair.json").read_text())
    items = data if isinstance(data, list) else list(data.values())
    samples = []
    for k, it in enumerate(items):
        qas = it.get("qa_pairs") or []
        s = _sample(str(it.get("sample_id", k)), 0, "epic_tent")
        s.qa_pairs = [QAPair(q.get("question", ""), q.get("answer", "")) for q in qas]
        samples.append(s)
    n_pairs = sum(len(s.qa_pairs) for s in samples)
    assert len(select_qa(samples, "all")) == n_pairs > len(select_qa(samples, "one")) > 0


# --- judging with model doubles ---------------------------------------------------------------------------------
class ScriptedJudgeDouble:
    """A judge double replying with a fixed text per answer (keyed by the answer's text); counts requests."""

    def __init__(self, name: str, replies: dict[str, str | None]) -> None:
        self.model_id = name
        self.fingerprint = f"{name}@test"
        self.replies = replies
        self.requests_seen = 0

    @property
    def capabilities(self):
        from ego_adr.models.base import Capabilities

        return Capabilities(video=False, max_batch_size=3)

    def generate(self, requests):
        self.requests_seen += len(requests)
        out = []
        for r in requests:
            text = r.messages[-1].content[0]
            answer = text.split("Model answer: ")[1].split("\n")[0]
            reply = self.replies[answer]
            out.append(Generation(None, error="CUDA out of memory") if reply is None else Generation(reply))
        return out


def _answers():
    rows = []
    for src, sid, ans in [
        ("captaincook4d", "c1", "good"), ("captaincook4d", "c2", "half"), ("epic_tent", "t1", "fine"),
        ("assembly101", "a1", "odd"), ("egooops", "h1", "oom"), ("egooops", "h2", ""),
    ]:
        rows.append({"sample_id": sid, "qa_index": 0, "source": src, "question": "What went wrong?",
                     "reference": "The person used salt instead of sugar.", "answer": ans, "qa_selection": "all"})
    rows.append({"sample_id": "h3", "qa_index": 1, "source": "egooops", "question": "Q?", "reference": "R",
                 "answer": None, "error": "video missing"})
    return rows


def test_judge_rows_bookkeeping_resume_and_cache(tmp_path):
    a = ScriptedJudgeDouble("judge-a", {"good": '{"score": 5, "reason": "same"}', "half": '{"score": 3}',
                                        "fine": '```json\n{"score": 5, "reason": "same"}\n```',
                                        "odd": "no idea", "oom": None, "": '{"score": 0, "reason": "no response"}'})
    b = ScriptedJudgeDouble("judge-b", {"good": '{"score": 4}', "fine": 'Here: {"score": 4, "reason": "same"}',
                                        "half": '{"score": 2}', "odd": '{"score": 9}', "oom": '{"score": 1}',
                                        "": '{"score": 0}'})
    cache = StageCache(tmp_path / "cache")
    path = tmp_path / "judgements.jsonl"
    answers = _answers()
    with JsonlStore(path) as store:
        rows = judge_rows(answers[:3], [a, b], store, cache, progress=False)  # "killed" after 3 answers
        assert len(rows) == 3
        rows = judge_rows(answers, [a, b], store, cache, progress=False)  # resumed: only the rest are judged
    assert a.requests_seen == 6 and b.requests_seen == 6  # every answer but the failed one (empty too); none twice
    by = {r["sample_id"]: r for r in rows}
    assert len(rows) == len(answers) and len(by) == len(answers)
    assert by["c1"]["score"] == 4.5 and by["c1"]["judges"]["judge-a"]["reason"] == "same"
    assert by["c2"]["score"] == 2.5 and by["c2"]["judge_scores"] == {"judge-a": 3.0, "judge-b": 2.0}
    odd = by["a1"]
    assert odd["score"] is None and odd["judges"]["judge-a"]["method"] == "unparseable"
    assert odd["judges"]["judge-b"]["method"] == "out_of_range" and odd["judges"]["judge-b"]["raw"] == '{"score": 9}'
    assert odd["failure"].startswith("no judge score") and set(odd["failed_judges"]) == {"judge-a", "judge-b"}
    oom = by["h1"]  # a failed judge call: no one-judge mean, a retryable failure (issue 19)
    assert oom["score"] is None and oom["failure_kind"] == "infrastructure"
    assert oom["failure"].startswith("judge call failed (judge-a: CUDA out of memory)")
    assert oom["judges"]["judge-a"]["method"] == "judge_error" and oom["judges"]["judge-a"]["error"]
    assert oom["judge_scores"] == {"judge-a": None, "judge-b": None}
    assert by["h2"]["score"] == 0.0 and by["h2"]["judges"]["judge-a"]["method"] == "json"  # the empty answer: asked
    assert by["h3"]["score"] is None and by["h3"]["failure"] == "answer failed: video missing"

    # Re-scoring into a fresh file with the same judges: the cache answers everything but the failed call.
    a2 = CachedModel(a, cache, "ScriptedJudgeDouble")
    with JsonlStore(tmp_path / "again.jsonl") as store2:
        rows2 = judge_rows(answers, {"judge-a": a2, "judge-b": b}, store2, cache, progress=False)
    assert a2.model_calls == 1 and a2.cache_hits == 5  # only the OOM is retried
    assert b.requests_seen == 6
    assert [r["score"] for r in rows2] == [r["score"] for r in rows]

    with JsonlStore(path) as store3, pytest.raises(ValueError, match="other judges"):
        c = ScriptedJudgeDouble("judge-c", {})
        judge_rows(answers, [a, c], store3, cache, progress=False)

    m = score_open_end_rows(rows)
    assert m["n_rows"] == 7 and m["n_scored"] == 4 and m["n_unscored"] == 3
    assert m["failures"] == {"no_judge_score": 1, "answer_failed": 1, "judge_call_failed": 1}
    assert m["per_source"]["captaincook4d"] == {"column": "Cook", "mean": 3.5, "n": 2}
    assert m["per_source"]["egooops"]["mean"] == 0.0
    assert "assembly101" not in m["per_source"]
    assert m["avg_sim"] == pytest.approx((4.5 + 2.5 + 4.5 + 0.0) / 4)  # weighted by scored pairs
    assert m["macro_avg"] == pytest.approx((3.5 + 4.5 + 0.0) / 3)
    assert m["per_judge"]["judge-a"]["parse_failures"] == 1 and m["per_judge"]["judge-a"]["judge_errors"] == 1
    assert m["per_judge"]["judge-b"]["mean"] == pytest.approx((4 + 2 + 4 + 0) / 4)
    assert m["qa_selection"] == "all"
    report = render_open_end_report(m)
    assert "| Method | frames | Cook | Tent | Toy | Hand | Avg-Sim. |" in report
    assert "| 3.50 | 4.50 | - | 0.00 | 2.88 |" in report
    assert "questions: all" in report

    dup = score_open_end_rows(rows + rows[:2])
    assert dup["n_duplicate_rows"] == 2 and dup["avg_sim"] == m["avg_sim"]
    with pytest.raises(ValueError, match="judge stage"):
        score_open_end_rows(answers)


def test_judge_request_uses_central_prompt_and_paper_decoding():
    r = judge_request({"question": "Q?", "reference": "R.", "answer": "A."})
    assert r.config.max_new_tokens == 256 and r.config.do_sample is False  # Appendix H
    assert r.meta["stage"] == "judge" and r.meta["prompt_version"]
    text = r.messages[0].content[0]
    assert "Q?" in text and "R." in text and "A." in text and "0 = no response" in text


# --- end to end with two tiny random text LMs through the HF code path ------------------------------------------
@pytest.fixture(scope="module")
def tiny_judges(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from ego_adr.models.hf_text import HFTextLM
    from ego_adr.models.tiny import build_tiny_text_lm, build_tokenizer

    # One intra-op thread: a 64-wide model gains nothing from more, and on a busy 2-core CI box spinning
    # threads make it several times slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny-judges")
    tok = build_tokenizer()
    yield {
        "tiny-a": HFTextLM(str(build_tiny_text_lm(root / "a", 0, tok)), device="cpu", max_batch_size=4),
        "tiny-b": HFTextLM(str(build_tiny_text_lm(root / "b", 1, tok)), device="cpu", max_batch_size=4),
    }
    torch.set_num_threads(threads)


# The paper's 256 tokens (tested in test_judge_request_...) would make this CPU test slow without changing what it
# checks: the judge path, bookkeeping and the cache.
SHORT = GenerationConfig(max_new_tokens=24, do_sample=False)


def test_tiny_text_judges_end_to_end(tiny_judges, tmp_path):
    answers = [r for r in _answers() if r["answer"] and r["answer"] != "oom"][:3]
    assert tiny_judges["tiny-a"].fingerprint != tiny_judges["tiny-b"].fingerprint
    cache = StageCache(tmp_path)
    with JsonlStore(tmp_path / "judgements.jsonl") as store:
        wrapped = {n: CachedModel(j, cache, "hf") for n, j in tiny_judges.items()}
        rows = judge_rows(answers, wrapped, store, cache, config=SHORT, progress=False)
    assert len(rows) == 3
    for r in rows:
        for p in r["judges"].values():
            assert isinstance(p["raw"], str) and p["error"] is None
            assert (p["score"] is None) == (p["method"] in PARSE_FAILURES)
            assert p["score"] is None or 0 <= p["score"] <= 5
    assert all(w.model_calls == 3 for w in wrapped.values())

    again = {n: CachedModel(j, cache, "hf") for n, j in tiny_judges.items()}
    with JsonlStore(tmp_path / "rescore.jsonl") as store2:
        rows2 = judge_rows(answers, again, store2, cache, config=SHORT, progress=False)
    assert all(w.model_calls == 0 and w.cache_hits == 3 for w in again.values())
    assert [r["judges"] for r in rows2] == [r["judges"] for r in rows]
    m = score_open_end_rows(rows2)
    assert m["n_rows"] == 3 and m["n_scored"] + m["n_unscored"] == 3
    assert "tiny-a" in render_open_end_report(m)


def test_hf_text_lm_rejects_frames_per_request(tiny_judges):
    import numpy as np

    from ego_adr.models.base import Frames, Message, Request

    fr = Frames(np.zeros((2, 4, 4, 3), np.uint8), fps=1.0)
    reqs = [
        Request([Message.user("hello there")], GenerationConfig(max_new_tokens=4)),
        Request([Message.user(fr, "what is this")], GenerationConfig(max_new_tokens=4)),
    ]
    g = tiny_judges["tiny-a"].generate(reqs)
    assert g[0].ok and not g[1].ok and "frames" in g[1].error
