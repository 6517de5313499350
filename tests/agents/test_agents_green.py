"""The green agent against white agents over real HTTP on loopback (our white agent; a 0.3-SDK white double)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from ego_adr.agents.messages import green_message
from ego_adr.taxonomy import OPTIONS

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO.parent / "shared" / "public-evaluator"  # the unmodified public evaluator (CI has it)

# A white agent written against the a2a-sdk 0.3.21 server API, standing in for a public/AgentBeats-style agent:
# it answers every question with the same option.
WHITE_03_DOUBLE = r'''
import sys, uvicorn
from a2a.server.apps import A2AStarletteApplication
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentSkill
from a2a.utils import new_agent_text_message

class ConstantExecutor(AgentExecutor):
    async def execute(self, context, event_queue):
        await event_queue.enqueue_event(new_agent_text_message("Wrong order", context_id=context.context_id))
    async def cancel(self, context, event_queue):
        pass

port = int(sys.argv[1])
card = AgentCard(name="constant", description="answers Wrong order", url=f"http://127.0.0.1:{port}", version="0",
                 default_input_modes=["text"], default_output_modes=["text"], capabilities=AgentCapabilities(),
                 skills=[AgentSkill(id="c", name="c", description="c", tags=["c"])])
handler = DefaultRequestHandler(agent_executor=ConstantExecutor(), task_store=InMemoryTaskStore())
uvicorn.run(A2AStarletteApplication(agent_card=card, http_handler=handler).build(), host="127.0.0.1", port=port,
            log_level="warning")
'''


def a2a03_dir() -> Path | None:
    p = Path(os.environ.get("EGO_ADR_A2A03") or REPO / ".ci" / "a2a03")
    return p if (p / "a2a" / "server").is_dir() else None


@pytest.fixture(scope="module")
def agents(tmp_path_factory):
    from ego_adr.agents.green import build_green_app
    from ego_adr.agents.serving import ServerThread, bind_socket, url_of
    from ego_adr.agents.white import WhiteAgent, build_white_app, load_agent_model
    from ego_adr.video.demo import ensure_demo

    demo = ensure_demo()
    base = tmp_path_factory.mktemp("green")
    model = load_agent_model("tiny", device="cpu", cache_dir=str(base / "cache"))
    white_agent = WhiteAgent(model, [demo / "videos"], mode="shallow", frames=4, cache_dir=base / "cache",
                             max_new_tokens=8)
    servers = []
    try:
        ws = bind_socket("127.0.0.1", 0)
        white_url = url_of(ws, "127.0.0.1")
        servers.append(ServerThread(build_white_app(white_agent, white_url), ws).start())
        gs = bind_socket("127.0.0.1", 0)
        green_url = url_of(gs, "127.0.0.1")
        servers.append(ServerThread(build_green_app(green_url), gs).start())
        yield SimpleNamespace(white=white_url, green=green_url, demo=demo, base=base)
    finally:
        for s in reversed(servers):
            s.stop()
        white_agent.close()


def config(demo: Path, out: Path, **kw) -> dict:
    wording = {"public_evaluator_root": str(PUBLIC)} if PUBLIC.is_dir() else {"question_wording": "ego_adr"}
    return {"video_root": str(demo / "videos"), "json_root": str(demo / "annotations"),
            "procedure_json_path": str(demo / "annotations" / "procedure.json"), "datasets": ["demo"],
            "task_type": "multiple-choice", "output_dir": str(out), "concurrency": 2, "limit": 4, "seed": 0,
            **wording, **kw}


def ask_green(green_url: str, white_url: str, cfg: dict):
    from ego_adr.agents.client import send_text

    return asyncio.run(send_text(green_url, green_message(white_url, cfg), timeout=600))


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_green_evaluates_white_and_metrics_match_the_scorer(agents):
    from ego_adr.eval.__main__ import main as eval_main
    from ego_adr.eval.mc import compute_mc_metrics, load_predictions

    out = agents.base / "mc"
    reply = ask_green(agents.green, agents.white, config(agents.demo, out))
    assert reply.kind == "message" and "Evaluation complete" in reply.text
    rows = load_predictions(out / "predictions.jsonl")
    assert len(rows) == 4
    for r in rows:
        assert r["route"] == "a2a" and r["white"]["protocol"] == "1.0"
        assert r["answer"] is not None or r["failure"]
        assert r["prediction"] in OPTIONS or r["prediction"] is None
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["overall"] == compute_mc_metrics(rows)["overall"]
    assert eval_main(["score", str(out / "predictions.jsonl"), "--out", str(agents.base / "rescored")]) == 0
    assert json.loads((agents.base / "rescored" / "metrics.json").read_text())["overall"] == saved["overall"]
    assert reply.metadata["metrics"]["overall"]["n"] == 4
    # resume: asking again sends nothing new and keeps one row per sample
    ask_green(agents.green, agents.white, config(agents.demo, out))
    assert len(load_predictions(out / "predictions.jsonl")) == 4
    # the same folder with the other question wording is refused, not mixed
    from a2a.utils.errors import InvalidParamsError

    used = rows[0]["question_wording"]
    other = {"public": "ego_adr", "ego_adr": "public"}[used]
    with pytest.raises(InvalidParamsError, match="worded|not found|other settings"):
        ask_green(agents.green, agents.white, config(agents.demo, out, question_wording=other))


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_green_open_ended_with_judges(agents):
    out = agents.base / "open"
    reply = ask_green(agents.green, agents.white, config(agents.demo, out, task_type="open-end", limit=2,
                                                         qa_selection="one", judges="tiny"))
    assert "Evaluation complete" in reply.text
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == "open-end" and metrics["n_rows"] == 2
    answers = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(answers) == 2 and all(a["answer"] or a["failure"] for a in answers)


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
@pytest.mark.parametrize("task", [
    "no tags at all",
    green_message("http://127.0.0.1:1", {"json_root": "/x"}),  # no video_root
    green_message("http://127.0.0.1:1", {"video_root": "/x", "json_root": "/x", "datasets": ["kitchen"]}),
    green_message("http://127.0.0.1:1", {"video_root": "/x", "json_root": "/x", "task_type": "essay"}),
    green_message("http://127.0.0.1:1", {"video_root": "/x", "json_root": "/x", "question_wording": "mine"}),
])
def test_malformed_tasks_are_refused(agents, task):
    from a2a.utils.errors import InvalidParamsError

    from ego_adr.agents.client import send_text

    with pytest.raises(InvalidParamsError):
        asyncio.run(send_text(agents.green, task))


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_missing_public_source_is_one_clear_error(agents, tmp_path, monkeypatch):
    from a2a.utils.errors import InvalidParamsError

    from ego_adr.agents.client import send_text

    monkeypatch.delenv("EGO_ADR_PUBLIC_EVALUATOR", raising=False)
    cfg = config(agents.demo, tmp_path / "nopublic", public_evaluator_root=str(tmp_path / "nowhere"),
                 question_wording="public")
    with pytest.raises(InvalidParamsError, match="public evaluator's source.*not found.*download_annotations"):
        asyncio.run(send_text(agents.green, green_message(agents.white, cfg), timeout=60))


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_unreachable_white_agent_is_an_error_not_a_hang(agents):
    from ego_adr.agents.client import send_text

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    from a2a.utils.errors import InternalError

    with pytest.raises(InternalError, match="evaluation failed"):
        asyncio.run(send_text(agents.green, green_message(dead, config(agents.demo, agents.base / "dead")),
                              timeout=60))


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_green_evaluates_a_03_white_agent(agents, tmp_path):
    lib = a2a03_dir()
    if lib is None:
        pytest.skip("a2a-sdk 0.3.21 not installed for the compatibility test: run "
                    "pip install --no-deps --target .ci/a2a03 'a2a-sdk==0.3.21' 'httpx-sse>=0.4' "
                    "(or set EGO_ADR_A2A03)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "white03.py"
    script.write_text(WHITE_03_DOUBLE)
    proc = subprocess.Popen([sys.executable, "-W", "ignore", str(script), str(port)],
                            env=dict(os.environ, PYTHONPATH=str(lib)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        t0 = time.monotonic()
        while True:
            try:
                if httpx.get(url + "/.well-known/agent-card.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() - t0 < 60, "0.3 white double did not start"
            time.sleep(0.2)
        out = tmp_path / "mc03"
        ask_green(agents.green, url, config(agents.demo, out, limit=3))
        rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
        assert len(rows) == 3
        assert all(r["prediction"] == "Wrong order" and str(r["white"]["protocol"]).startswith("0.3") for r in rows)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_launch_fresh_removes_only_an_evaluations_files(tmp_path, caplog):
    """Issue 46, item 1: ``python -m ego_adr.agents launch --fresh`` starts its folder over -- the green agent's
    files and both logs, once the folder's identity shows it is an evaluation's (as the green agent claims it, or
    as one written before identities named their command) -- and refuses a run's folder."""
    import logging

    from ego_adr.agents.green import KIND, WRITTEN
    from ego_adr.agents.launch import start_folder_over
    from ego_adr.folders import NotOurFolder, claim

    ident = {"evaluator": "ego_adr green agent", "task": "multiple-choice", "limit": 2}
    for name, kind in (("new", KIND), ("legacy", None)):
        out = tmp_path / name
        claim(out, ident, kind=kind, written=WRITTEN)
        for f in ("predictions.jsonl", "metrics.json", "white.log", "green.log", "notes.txt"):
            (out / f).write_text("x\n")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ego_adr.folders"):
            removed = start_folder_over(out)
        assert sorted(removed) == ["green.log", "identity.json", "metrics.json", "predictions.jsonl", "white.log"]
        assert "--fresh: removed" in caplog.text and [p.name for p in out.iterdir()] == ["notes.txt"]
    run = tmp_path / "run"
    claim(run, {"mode": "shallow"}, kind="run")
    (run / "predictions.jsonl").write_text("x\n")
    with pytest.raises(NotOurFolder, match="holds the results of `run`, not of `agents.green`"):
        start_folder_over(run)
    assert (run / "predictions.jsonl").exists()
