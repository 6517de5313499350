"""Parity with the public EgoErrorVQA green agent: same multiple-choice messages, same per-sample outcomes, same
metrics -- for our green agent, for ``python -m ego_adr.eval score`` on what it wrote, and for an old-format
predictions file re-scored from its raw text.

The public side is the unmodified ``src/green_agent/agent.py`` of ``../shared/public-evaluator``, executed in a
subprocess with the a2a-sdk 0.3.21 it was written for (``.ci/a2a03``) on ``sys.path``. Only what multiple choice
never touches or cannot have here is stood in for: torch/transformers (used by its open-ended judges only), its
``src.my_util`` package (not in the checkout; its A2A client is replaced by a scripted white agent that replies
from the same table as ours), and its hard-coded results folder under the authors' home (writes are redirected
to a scratch folder). Its scoring code runs as written. Per-sample cells are read from the public code itself
by running it once per sample.

Samples: the first records of each real annotation file (developer split in ``../shared/egoerrorvqa``) plus the
awkward ones (whole-video omissions, EgoOops ``null`` steps, Epic-Tent "unknown action", a negative time), with
empty stand-in video files at the public layout (the replies are scripted, nothing is decoded); one video is
missing and one reply is a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent  # public_stand_ins.py, imported by the harness
SHARED = REPO.parent / "shared"
PUBLIC = SHARED / "public-evaluator"
DATA = SHARED / "egoerrorvqa"
FILES = {"captaincook4d": "captaincook4d_answer.json", "epic_tent": "epic_tent_answer_sec.json",
         "assembly101": "assembly101_answers.json", "egooops": "egooops_answer.json"}
OPEN_FILES = {"captaincook4d": "captaincook4d_qa_pairs_updated.json", "epic_tent": "epic_tent_qa_pair.json",
              "assembly101": "assembly101_qa_pairs_updated.json", "egooops": "egooops_qa_pair.json"}
PER_SOURCE = 9

# Reply texts that are not derived from the ground truth: prose, punctuation, markdown, cues, a letter, empty,
# long, a JSON-RPC error (None).
FIXED = ["correct", " Correct. ", "CORRECT!", None, '"correct"', "correct .", "The step looks correct.", "", "B",
         "Answer: Wrong order", "**Omission**", "Wrong Object", "wrong action;", "Others",
         "unanswerable: video could not be decoded", "I think the person skipped adding the salt. " * 12,
         "Omission\n\nThe person skipped the step.", "Unintended and unnecessary action", "Equipment failure:",
         "No error", "```\nWrong order\n```", "correct wrong action"]


def from_gt(gt, k: int) -> str:
    g = gt[0] if isinstance(gt, list) else gt
    return [g, f"{g.lower()}.", f"  {g.upper()}!", f"**{g}**", f"Answer: {g}", f'"{g}"', f"{g}\n"][k % 7]


HARNESS = r'''
import asyncio, json, os, sys, types
from public_stand_ins import install_my_util, load_public, redirect_results
public_root, job_path, out_path, scratch = sys.argv[1:5]
job = json.load(open(job_path))
for name in ("torch", "transformers"):  # used only by the open-ended judges, which multiple choice never builds
    m = types.ModuleType(name)
    m.AutoTokenizer = m.AutoModelForCausalLM = None
    sys.modules[name] = m
from a2a.types import (InternalError, JSONRPCErrorResponse, Message, Part, Role, SendMessageResponse,
                       SendMessageSuccessResponse, TextPart)
sent = []

class Http:
    async def aclose(self):
        pass

async def create_a2a_client(url):
    return object(), Http()

async def send_message_with_client(client, message, task_id=None, context_id=None):
    sent.append(message)
    text = job["replies"].get(message, "NO SCRIPTED REPLY FOR THIS MESSAGE")
    if text is None:
        return SendMessageResponse(root=JSONRPCErrorResponse(id="1", error=InternalError(message="scripted")))
    msg = Message(role=Role.agent, parts=[Part(root=TextPart(text=text))], message_id="m")
    return SendMessageResponse(root=SendMessageSuccessResponse(id="1", result=msg))

install_my_util(create_a2a_client, send_message_with_client, lambda text: {})
mod = load_public(public_root, "public_green", "src/green_agent/agent.py")
redirect_results(mod, scratch)

cfg = job["config"]
if job.get("task") == "open-end":
    class JudgeDouble:  # stands in for the two 7B judge models; the test is about the messages sent
        def __init__(self, *a, **k):
            pass
        def evaluate_answer(self, question, model_answer, ground_truth):
            return {"score": 3, "reason": "judge double"}
        def cleanup(self):
            pass
    mod.QwenJudge = mod.DeepSeekJudge = JudgeDouble
    mod.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(empty_cache=lambda: None))
    for ds in cfg["datasets"]:  # its open-ended loop reads only the last dataset of a list: one run each
        asyncio.run(mod.evaluate_with_white_agent("http://scripted", dict(cfg, datasets=[ds])))
    json.dump({"sent": sent}, open(out_path, "w"))
    sys.exit(0)
full = asyncio.run(mod.evaluate_with_white_agent_multiple_choice("http://scripted", cfg))
full_sent = list(sent)
singles = []
for ds in cfg["datasets"]:
    data = json.load(open(os.path.join(cfg["json_root"], job["files"][ds])))
    for k, rec in enumerate(r for r in data if isinstance(r, dict)):
        root = os.path.join(scratch, "single", ds, str(k))
        os.makedirs(root, exist_ok=True)
        json.dump([rec], open(os.path.join(root, job["files"][ds]), "w"))
        rep = asyncio.run(mod.evaluate_with_white_agent_multiple_choice(
            "http://scripted", dict(cfg, json_root=root, datasets=[ds])))
        m = rep["summary"]["dataset_metrics"][ds]
        cells = [c for c in ("tp", "fp", "tn", "fn") if m[c]]
        singles.append({"dataset": ds, "cell": cells[0] if cells else None,
                        "is_correct": rep["detailed_results"][ds][0]["is_correct"]})
json.dump({"summary": full["summary"], "sent": full_sent, "singles": singles}, open(out_path, "w"))
'''


def a2a03_dir() -> Path | None:
    p = Path(os.environ.get("EGO_ADR_A2A03") or REPO / ".ci" / "a2a03")
    return p if (p / "a2a" / "client").is_dir() else None


def pick_records(data: list, source: str) -> list:
    """The first records, plus the first awkward one of each kind the file has."""
    special = [lambda r: r.get("start_time") == -1, lambda r: r.get("action_annotation") is None,
               lambda r: r.get("action_annotation") in ("unknown action", "instruction"),
               lambda r: isinstance(r.get("start_time"), (int, float)) and r["start_time"] < -1,
               lambda r: isinstance(r.get("close_end_answer"), list) and len(r["close_end_answer"]) > 1]
    out = list(data[:PER_SOURCE])
    for test in special:
        hit = next((r for r in data if test(r)), None)
        if hit is not None and hit not in out:
            out.append(hit)
    return out


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    lib = a2a03_dir()
    if lib is None or not (PUBLIC / "src" / "green_agent" / "agent.py").is_file() or not DATA.is_dir():
        pytest.skip("needs ../shared/public-evaluator, ../shared/egoerrorvqa and a2a-sdk 0.3.21 in .ci/a2a03 "
                    "(pip install --no-deps --target .ci/a2a03 'a2a-sdk==0.3.21' 'httpx-sse>=0.4')")
    from ego_adr.agents.green import EvalConfig, evaluate, load_all_samples
    from ego_adr.agents.green_mc import questions
    from ego_adr.agents.serving import ServerThread, bind_socket, url_of

    base = tmp_path_factory.mktemp("parity")
    json_root, video_root = base / "json", base / "videos"
    json_root.mkdir()
    (json_root / "procedure.json").write_text((DATA / "procedure.json").read_text())
    for ds, f in FILES.items():
        (json_root / f).write_text(json.dumps(pick_records(json.loads((DATA / f).read_text()), ds)))
    cfg = {"video_root": str(video_root), "json_root": str(json_root),
           "procedure_json_path": str(json_root / "procedure.json"), "datasets": list(FILES),
           "task_type": "multiple-choice", "output_dir": str(base / "ours"), "concurrency": 3,
           "public_evaluator_root": str(PUBLIC)}
    ecfg = EvalConfig.from_dict(cfg)
    samples = load_all_samples(ecfg)
    messages, _ = questions(ecfg, samples)
    replies = {}
    missing = messages[samples[5].sample_id][1]  # this video is left out: a failure on both sides
    for i, s in enumerate(samples):
        msg, path = messages[s.sample_id]
        if path != missing:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).touch()
        replies[msg] = FIXED[(i // 2) % len(FIXED)] if i % 2 == 0 else from_gt(s.ground_truth, i // 2)
    n_failed = sum(messages[s.sample_id][1] == missing or replies[messages[s.sample_id][0]] is None
                   for s in samples)
    job = base / "job.json"
    job.write_text(json.dumps({"config": cfg, "replies": replies, "files": FILES}))
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", HARNESS, str(PUBLIC), str(job), str(base / "pub.json"),
                        str(base / "scratch")], env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), str(HERE)])), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    public = json.loads((base / "pub.json").read_text())

    white = ScriptedWhiteDouble(replies)
    sock = bind_socket("127.0.0.1", 0)
    server = ServerThread(white.app(url_of(sock, "127.0.0.1")), sock).start()
    try:
        ours = asyncio.run(evaluate(url_of(sock, "127.0.0.1"), ecfg))
    finally:
        server.stop()
    return {"public": public, "ours": ours, "samples": samples, "messages": messages, "missing": missing,
            "base": base, "replies": replies, "n_failed": n_failed}


class ScriptedWhiteDouble:
    """Stands in for the white agent under evaluation: replies from a fixed table (None = JSON-RPC error)."""

    def __init__(self, replies: dict):
        self.replies = replies
        self.received: list[str] = []

    def app(self, url: str):
        from a2a.helpers import get_message_text, new_text_message
        from a2a.server.agent_execution import AgentExecutor
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.tasks import InMemoryTaskStore
        from a2a.utils.errors import InternalError

        from ego_adr.agents.serving import agent_card, build_app

        replies, received = self.replies, self.received

        class Executor(AgentExecutor):
            async def execute(self, context, event_queue):
                received.append(get_message_text(context.message))
                text = replies.get(received[-1], "NO SCRIPTED REPLY FOR THIS MESSAGE")
                if text is None:
                    raise InternalError(message="scripted")
                await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))

            async def cancel(self, context, event_queue):
                pass

        card = agent_card("scripted", "scripted white double", url, [{"id": "s", "name": "s", "description": "s",
                                                                       "tags": ["s"]}], "0", None)
        handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card)
        return build_app(card, handler, None, 1024 * 1024)


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_multiple_choice_messages_equal_the_public_green_agents(parity):
    ours = [parity["messages"][s.sample_id][0] for s in parity["samples"]
            if parity["messages"][s.sample_id][1] != parity["missing"]]
    assert parity["public"]["sent"] == ours
    egooops = next(m for s in parity["samples"] if s.source == "egooops" for m in [parity["messages"][s.sample_id][0]])
    assert 'Current Step: "None"' in egooops  # the stored null, as the public agent writes it
    assert any("<start_ts>-1.0</start_ts>" in m for m in ours)  # raw times, not our normalised window
    assert any("<start_ts>-3661.033</start_ts>" in m for m in ours)


def outcome_table(rows, samples):
    from ego_adr.eval.scoring import score_row

    by_id = {r["sample_id"]: score_row(r) for r in rows}
    return [(s.source, by_id[s.sample_id]["cell"], by_id[s.sample_id]["hit"]) for s in samples]


def assert_same_metrics(public_summary: dict, metrics: dict):
    for ds, pm in public_summary["dataset_metrics"].items():
        om = metrics["per_source"][ds]
        assert (om["n"], om["tp"], om["fp"], om["tn"], om["fn"]) == (pm["total_samples"], pm["tp"], pm["fp"],
                                                                     pm["tn"], pm["fn"]), ds
        for k in ("accuracy", "precision", "recall", "f1"):
            assert round(om[k], 4) == pm[k], (ds, k)
    for k in ("accuracy", "precision", "recall", "f1"):
        assert round(metrics["overall"][k], 4) == public_summary[f"overall_{k}"], k
        assert metrics["simple_average"][k] == pytest.approx(public_summary[f"simple_average_{k}"], abs=1e-4), k
    assert metrics["overall"]["n"] == public_summary["total_samples"]


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_green_agent_outcomes_and_metrics_equal_the_public_ones(parity):
    from ego_adr.eval.mc import load_predictions

    rows = load_predictions(parity["base"] / "ours" / "predictions.jsonl")
    public = [(x["dataset"], x["cell"], x["is_correct"]) for x in parity["public"]["singles"]]
    assert outcome_table(rows, parity["samples"]) == public
    m = parity["ours"]["metrics"]
    assert_same_metrics(parity["public"]["summary"], m)
    # every kind of outcome occurred, so the comparison covers them all
    assert {c for _, c, _ in public} == {"tp", "fp", "tn", "fn", None}
    assert m["overall"]["n_failed"] == parity["n_failed"] >= 2 and m["lenient"]["n_lenient_only"] > 0


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_eval_score_and_old_files_rescore_to_the_public_numbers(parity, tmp_path):
    from ego_adr.eval.__main__ import main

    pred = parity["base"] / "ours" / "predictions.jsonl"
    assert main(["score", str(pred), "--out", str(tmp_path / "s"), "--n-boot", "50"]) == 0
    assert_same_metrics(parity["public"]["summary"], json.loads((tmp_path / "s" / "metrics.json").read_text()))
    # an old-format file (no answer field: raw text and the lenient prediction, as the green agent wrote before)
    from ego_adr.taxonomy import normalize_option

    old = []
    for line in pred.read_text().splitlines():
        r = json.loads(line)
        raw = r.pop("answer")
        r.pop("answer_from")
        r["prediction"] = normalize_option(raw) if raw is not None else None
        if r["failure"] is None and r["prediction"] is None:
            r["failure"] = "unparseable" if raw else "empty answer"
        old.append(r)
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    assert main(["score", str(tmp_path / "old.jsonl"), "--out", str(tmp_path / "o"), "--n-boot", "50"]) == 0
    assert_same_metrics(parity["public"]["summary"], json.loads((tmp_path / "o" / "metrics.json").read_text()))


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_open_ended_messages_equal_the_public_green_agents(tmp_path):
    """Open-ended: the public agent draws one QA pair at random; each message it sends is ours for that pair,
    and our green agent sends exactly those messages."""
    lib = a2a03_dir()
    if lib is None or not (PUBLIC / "src" / "green_agent" / "agent.py").is_file() or not DATA.is_dir():
        pytest.skip("needs ../shared/public-evaluator, ../shared/egoerrorvqa and a2a-sdk 0.3.21 in .ci/a2a03")
    from tqdm import tqdm

    from ego_adr.agents.client import AgentClient
    from ego_adr.agents.green import EvalConfig, _run_open, limit_samples, load_all_samples
    from ego_adr.agents.public_mc import public_open_messages
    from ego_adr.agents.serving import ServerThread, bind_socket, url_of
    from ego_adr.store import JsonlStore

    json_root, video_root = tmp_path / "json", tmp_path / "videos"
    json_root.mkdir()
    (json_root / "procedure.json").write_text((DATA / "procedure.json").read_text())
    for f in OPEN_FILES.values():
        (json_root / f).write_text(json.dumps(json.loads((DATA / f).read_text())[:4]))
    cfg = {"video_root": str(video_root), "json_root": str(json_root),
           "procedure_json_path": str(json_root / "procedure.json"), "datasets": list(OPEN_FILES),
           "task_type": "open-end", "output_dir": str(tmp_path / "ours"), "qa_selection": "all"}
    ecfg = EvalConfig.from_dict(cfg)
    samples = load_all_samples(ecfg)
    ours = public_open_messages(samples, ecfg.json_root, ecfg.video_root, ecfg.procedure_json_path)
    for _, path in ours.values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).touch()
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"config": cfg, "replies": {}, "files": OPEN_FILES, "task": "open-end"}))
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", HARNESS, str(PUBLIC), str(job), str(tmp_path / "p.json"),
                        str(tmp_path / "scratch")], env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), str(HERE)])), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    sent = json.loads((tmp_path / "p.json").read_text())["sent"]
    assert len(sent) == len(samples)  # one per sample
    for s, msg in zip(samples, sent):
        assert msg in {m for (sid, _), (m, _) in ours.items() if sid == s.sample_id}
    # what our green agent's open-ended loop puts on the wire (judging, which needs judge models, is left out)
    white = ScriptedWhiteDouble({m: "The person skipped a step." for m, _ in ours.values()})
    sock = bind_socket("127.0.0.1", 0)
    server = ServerThread(white.app(url_of(sock, "127.0.0.1")), sock).start()
    asked = limit_samples(samples, 8)
    store = JsonlStore(tmp_path / "ours" / "predictions.jsonl")

    async def ask_all():
        async with AgentClient(url_of(sock, "127.0.0.1"), None, 60) as client:
            await _run_open(client, asyncio.Semaphore(2), asked, ours, store, "scripted", ecfg, False, tqdm)

    try:
        asyncio.run(ask_all())
    finally:
        server.stop()
        store.close()
    want = [m for (sid, _), (m, _) in ours.items() if sid in {s.sample_id for s in asked}]
    assert sorted(white.received) == sorted(want)
    rows = [json.loads(line) for line in (tmp_path / "ours" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == len(want) and all(r["question_wording"] == "public" and r["answer"] for r in rows)
