"""lmms-eval's real CLI with ``--model scripted_replies``: numbers known by hand, and a judge outage repaired by the
next run. The model is a double (``tests/integrations/lmms_scripted``) replying from a script and the judges are
doubles served on loopback (an OpenAI-compatible chat endpoint each): the tests are about the tasks' scoring and
judging code. Its own file, apart from ``test_lmms_eval_cli.py`` (whose helpers it shares), so that README's
``--dist loadfile`` can give the two halves of lmms-eval's minutes to two workers (issue 46 item 12)."""

from __future__ import annotations

import json
import math
import os

import pytest

from tests.integrations.test_lmms_eval_cli import REPO, logged, reply_of, rescore, run_lmms, samples_file

pytestmark = pytest.mark.slow

# The demo's first six multiple-choice documents have the ground truths below.
MC_TRUTH = ["correct", "correct", "correct", "Wrong object", "Wrong order", "correct"]
MC_REPLIES = ["correct", "Wrong action", "The step looks fine.", "Wrong object.", "correct", ""]
# by hand: hits d0 d3 -> accuracy 2/6; TP d3; FP d1 d2 d5 (prose and an empty reply are error claims); TN d0;
# FN d4 -> precision 1/4, recall 1/2, F1 2 * 1/4 * 1/2 / (3/4) = 1/3; correct 1 of 4, Wrong object 1/1, Wrong order 0/1
MC_BY_HAND = {"accuracy": 2 / 6, "precision": 1 / 4, "recall": 1 / 2, "f1": 1 / 3, "per_type_accuracy_correct": 1 / 4,
              "per_type_accuracy_wrong_object": 1.0, "per_type_accuracy_wrong_order": 0.0}
# open-ended: (answer, Qwen-prompted judge's score, DeepSeek-prompted judge's score); the empty answer is judged too
OE_SCRIPT = [("I picked up the kettle and took it to the tap.", 5, 4), ("I picked up the cup.", 2, 3), ("", 0, 0),
             ("Salt went in.", 4, 4), ("I do not know.", 1, 0), ("No mistake.", 5, 5)]
OE_BY_HAND = (4.5 + 2.5 + 0.0 + 4.0 + 0.5 + 5.0) / 6  # 2.75; one source, so macro_avg is the same
N_SCRIPTED = 6


class JudgeDouble:
    """A judge double on loopback: an OpenAI-compatible ``/v1/chat/completions`` replying ``{"score": N}`` by the
    answer quoted in the public judge prompt (``Model's Answer: ...``); counts the requests it was sent."""

    def __init__(self, scores: dict[str, int], port: int = 0) -> None:
        import http.server
        import threading

        double = self
        self.scores, self.requests = scores, 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][-1]["content"]
                text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
                answer = text.split("Model's Answer: ")[1].split("\n")[0]
                double.requests += 1
                reply = json.dumps({"score": double.scores[answer], "reason": "judge double"})
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """The script, judge A (Qwen-prompted) up, judge B's port (DeepSeek-prompted) free: B is down."""
    from ego_adr.integrations.lmms_eval import docs as D

    tmp = tmp_path_factory.mktemp("scripted_lmms")
    mc = D.load_docs("egoerrorvqa_mc_demo", D.MC, "demo")[:N_SCRIPTED]
    oe = D.load_docs("egoerrorvqa_oe_demo", D.OE, "demo")[:N_SCRIPTED]
    script = {d["sample_id"]: r for d, r in zip(mc, MC_REPLIES, strict=True)}
    script.update({f"{d['sample_id']}#{d['qa_index']}": a for d, (a, _, _) in zip(oe, OE_SCRIPT, strict=True)})
    (tmp / "script.json").write_text(json.dumps(script))
    judge_a = JudgeDouble({a: qa for a, qa, _ in OE_SCRIPT})
    port_b = _free_port()
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests' / 'integrations'}", "LMMS_EVAL_PLUGINS": "lmms_scripted",
           "EGOERRORVQA_JUDGES": f"qwen=judge-a@http://127.0.0.1:{judge_a.port}/v1,"
                                 f"deepseek=judge-b@http://127.0.0.1:{port_b}/v1",
           # the judge client's whole retry sequence (5 retries) against the dead port, at 1/100 of the real
           # 1+2+4+8+16 s backoff (about 31 s of sleeping: issue 46 item 12)
           "EGO_ADR_RETRY_BASE_SECONDS": "0.01"}
    yield tmp, env, judge_a, port_b
    judge_a.close()


def _run_scripted(tmp, env, out_name):
    return run_lmms(tmp, "scripted_replies", f"script={tmp / 'script.json'}", "egoerrorvqa_mc_demo,egoerrorvqa_oe_demo",
                    env, limit=N_SCRIPTED, out_name=out_name)


def test_scripted_replies_give_the_numbers_computed_by_hand_and_a_judge_outage_is_unjudged(scripted):
    tmp, env, judge_a, _ = scripted
    results, out, text = _run_scripted(tmp, env, "down")
    samples = logged(out, "egoerrorvqa_mc_demo")
    assert [s["target"] for s in samples] == MC_TRUTH and [reply_of(s) for s in samples] == MC_REPLIES
    for name, want in MC_BY_HAND.items():
        assert results["egoerrorvqa_mc_demo"][f"{name},none"] == pytest.approx(want, abs=1e-12), name
    metrics = rescore(tmp, samples_file(out, "egoerrorvqa_mc_demo"), "mc")  # eval score on lmms-eval's own file
    assert (metrics["overall"]["accuracy"], metrics["overall"]["f1"]) == pytest.approx((2 / 6, 1 / 3), abs=1e-12)
    # judge B down: no answer has both judgements, so none is averaged (before: (A + 0) / 2 = 17/12 = 1.42)
    oe = results["egoerrorvqa_oe_demo"]
    assert oe["unjudged,none"] == N_SCRIPTED and math.isnan(oe["avg_sim,none"]) and math.isnan(oe["macro_avg,none"])
    assert f"{N_SCRIPTED} of {N_SCRIPTED} answers are UNJUDGED" in text
    (judged,) = sorted(out.glob("egoerrorvqa_oe_judgements-*.jsonl"))
    for r in map(json.loads, judged.read_text().splitlines()):
        assert r["score"] is None and r["failure_kind"] == "infrastructure"
        assert r["failure"].startswith("judge call failed (DeepSeekJudge: [infrastructure]")
        assert "already released" not in r["failure"]  # the real cause, kept through the stage cache
    again = rescore(tmp, samples_file(out, "egoerrorvqa_oe_demo"), "oe_down")
    assert again["n_unjudged"] == N_SCRIPTED and again["avg_sim"] is None
    assert judge_a.requests == N_SCRIPTED


def test_a_rerun_with_the_judge_back_gives_the_full_score(scripted):
    tmp, env, judge_a, port_b = scripted
    if not sorted((tmp / "down").rglob("*_results.json")):
        pytest.skip("needs the outage run of the test before")
    judge_b = JudgeDouble({a: ds for a, _, ds in OE_SCRIPT}, port=port_b)  # the judge is back
    try:
        results, out, _ = _run_scripted(tmp, env, "back")  # another --output_path: the judgements are kept apart
    finally:
        judge_b.close()
    oe = results["egoerrorvqa_oe_demo"]
    assert oe["unjudged,none"] == 0
    assert oe["avg_sim,none"] == pytest.approx(OE_BY_HAND, abs=1e-12)
    assert oe["macro_avg,none"] == pytest.approx(OE_BY_HAND, abs=1e-12)
    assert judge_b.requests == N_SCRIPTED and judge_a.requests == N_SCRIPTED  # A answered from the stage cache
    metrics = rescore(tmp, samples_file(out, "egoerrorvqa_oe_demo"), "oe_back")
    assert metrics["avg_sim"] == pytest.approx(OE_BY_HAND, abs=1e-12) and metrics["n_unjudged"] == 0
