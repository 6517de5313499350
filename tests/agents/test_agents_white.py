"""The Ego-ADR white agent over real HTTP on loopback: 0.3 and 1.0 clients, path safety, bad requests.

The server runs the tiny random model (answers capped at a few tokens to stay fast). The unmodified a2a-sdk
0.3.21 client runs in a subprocess from a separate install folder (it cannot share an environment with 1.3):
``pip install --no-deps --target .ci/a2a03 'a2a-sdk==0.3.21' 'httpx-sse>=0.4'`` (or set ``EGO_ADR_A2A03`` to
such a folder); those tests skip with that hint when it is missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from ego_adr.agents.messages import mc_question, open_question, white_message
from ego_adr.taxonomy import OPTIONS

REPO = Path(__file__).resolve().parents[2]
PROC = ("First, fill the kettle with water at the tap, then switch it on. Next, put a tea bag into the cup, then "
        "pour the hot water into the cup.")

CLIENT_03 = r'''
import asyncio, json, sys, uuid, httpx
from a2a.client import A2ACardResolver, A2AClient
from a2a.types import Message, MessageSendParams, Part, Role, SendMessageRequest, SendMessageSuccessResponse, TextPart
from a2a.utils import get_text_parts

async def main(url, text):
    async with httpx.AsyncClient(timeout=120.0) as h:
        card = await A2ACardResolver(httpx_client=h, base_url=url).get_agent_card()
        client = A2AClient(httpx_client=h, agent_card=card)
        msg = Message(role=Role.user, parts=[Part(TextPart(text=text))], message_id=uuid.uuid4().hex)
        resp = await client.send_message(request=SendMessageRequest(id=uuid.uuid4().hex,
                                                                  params=MessageSendParams(message=msg)))
        root = resp.root
        out = {"response": type(root).__name__, "card_url": card.url, "card_protocol": card.protocol_version}
        if isinstance(root, SendMessageSuccessResponse):
            out["result"] = type(root.result).__name__
            out["texts"] = get_text_parts(root.result.parts) if isinstance(root.result, Message) else []
            out["metadata"] = getattr(root.result, "metadata", None)
        else:
            out["error"] = {"code": root.error.code, "message": root.error.message}
        print(json.dumps(out))

asyncio.run(main(sys.argv[1], open(sys.argv[2]).read()))
'''


def a2a03_dir() -> Path | None:
    p = Path(os.environ.get("EGO_ADR_A2A03") or REPO / ".ci" / "a2a03")
    return p if (p / "a2a" / "client").is_dir() else None


def run_03_client(url: str, text: str, tmp_path: Path) -> dict:
    lib = a2a03_dir()
    if lib is None:
        pytest.skip("a2a-sdk 0.3.21 not installed for the compatibility test: run "
                    "pip install --no-deps --target .ci/a2a03 'a2a-sdk==0.3.21' 'httpx-sse>=0.4' "
                    "(or set EGO_ADR_A2A03)")
    script, msg = tmp_path / "client03.py", tmp_path / f"msg-{uuid.uuid4().hex}.txt"
    script.write_text(CLIENT_03)
    msg.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(lib))
    r = subprocess.run([sys.executable, "-W", "ignore", str(script), url, str(msg)], env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def rpc03(url: str, text: str | None = None, body=None, headers=None) -> httpx.Response:
    """What the 0.3 client puts on the wire for one text message (method message/send, kind fields)."""
    if body is None:
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/send",
                "params": {"message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                                       "parts": [{"kind": "text", "text": text}]}}}
    return httpx.post(url, json=body if not isinstance(body, (bytes, str)) else None,
                      content=body if isinstance(body, (bytes, str)) else None, headers=headers, timeout=120)


@pytest.fixture(scope="module")
def white(tmp_path_factory):
    from ego_adr.agents.serving import ServerThread, bind_socket, url_of
    from ego_adr.agents.white import WhiteAgent, build_white_app, load_agent_model
    from ego_adr.video.demo import demo_paths

    _, video_root = demo_paths()
    src = sorted((video_root / "demo").glob("*.mp4"))[0]
    base = tmp_path_factory.mktemp("white")
    root, outside = base / "videos", base / "outside"
    root.mkdir()
    outside.mkdir()
    shutil.copy(src, root / "clip.mp4")
    shutil.copy(src, outside / "secret.mp4")
    (root / "escape.mp4").symlink_to(outside / "secret.mp4")
    (root / "alias.mp4").symlink_to(root / "clip.mp4")
    (root / "notes.txt").write_text("not a video")
    model = load_agent_model("tiny", device="cpu", cache_dir=str(base / "cache"))
    agent = WhiteAgent(model, [root], mode="shallow", frames=4, cache_dir=base / "cache", max_pending=1,
                       max_new_tokens=8)
    sock = bind_socket("127.0.0.1", 0)
    url = url_of(sock, "127.0.0.1")
    server = ServerThread(build_white_app(agent, url, max_body=16 * 1024, model_name="tiny"), sock).start()
    yield SimpleNamespace(url=url, agent=agent, root=root, outside=outside, clip=str(root / "clip.mp4"))
    server.stop()
    agent.close()


def mc_text(path: str, step: str | None = "Put a tea bag into the cup", start=1.0, end=4.0) -> str:
    return white_message(path, mc_question(PROC, step), start, end)


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_card_serves_both_protocol_generations(white):
    card = httpx.get(white.url + "/.well-known/agent-card.json", timeout=10).json()
    assert card["url"] == white.url and card["protocolVersion"] == "0.3"  # the fields a 0.3 client needs
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0", "0.3"}
    assert {s["id"] for s in card["skills"]} == {"egoerrorvqa-multiple-choice", "egoerrorvqa-open-end"}
    assert card["capabilities"].get("streaming") is not True


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_raw_03_request_gets_one_option_message(white):
    r = rpc03(white.url, mc_text(white.clip, step=None, start=-1.0, end=-1.0))
    res = r.json()["result"]
    assert res["kind"] == "message" and res["role"] == "agent"
    meta = res["metadata"]["ego_adr"]
    assert meta["status"] in ("ok", "unanswerable")
    if meta["status"] == "unanswerable":  # documented: never an option it did not conclude
        assert res["parts"][0]["text"] == "unanswerable: " + meta["unanswerable_reason"]
    else:
        assert res["parts"][0]["text"] in OPTIONS and meta["prediction"] == res["parts"][0]["text"]


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_sdk_03_client_gets_exactly_one_option(white, tmp_path):
    out = run_03_client(white.url, mc_text(white.clip), tmp_path)
    assert out["response"] == "SendMessageSuccessResponse" and out["result"] == "Message"
    assert out["card_url"] == white.url
    assert len(out["texts"]) == 1 and out["texts"][0] in OPTIONS
    refused = run_03_client(white.url, mc_text(str(white.outside / "secret.mp4")), tmp_path)
    assert refused["response"] == "JSONRPCErrorResponse" and refused["error"]["code"] == -32602


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_sdk_10_client_on_the_same_port(white):
    from ego_adr.agents.client import send_text

    reply = asyncio.run(send_text(white.url, mc_text(white.clip)))
    assert reply.kind == "message" and reply.protocol == "1.0"
    assert reply.text in OPTIONS
    open_reply = asyncio.run(send_text(white.url, white_message(white.clip, open_question(PROC, "What is done?"),
                                                                None, None)))
    assert open_reply.text and open_reply.metadata["ego_adr"]["task"] == "open-end"


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
@pytest.mark.parametrize("which", ["dotdot", "absolute", "symlink_out", "missing", "relative_dotdot", "dir"])
def test_paths_outside_the_roots_are_refused_without_opening(white, which):
    paths = {
        "dotdot": str(white.root / ".." / "outside" / "secret.mp4"),
        "absolute": str(white.outside / "secret.mp4"),
        "symlink_out": str(white.root / "escape.mp4"),
        "missing": str(white.root / "nope.mp4"),
        "relative_dotdot": "../outside/secret.mp4",
        "dir": str(white.root),
    }
    opens = white.agent.sampler.stats["opens"]
    r = rpc03(white.url, mc_text(paths[which]))
    err = r.json()["error"]
    assert err["code"] == -32602
    assert str(white.outside) not in err["message"] and str(white.root) not in err["message"]
    assert white.agent.sampler.stats["opens"] == opens


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_symlink_inside_the_roots_and_relative_paths_are_allowed(white):
    from ego_adr.agents.white import VideoGuard

    guard = VideoGuard([white.root])
    assert guard.resolve(str(white.root / "alias.mp4")) == (white.root / "clip.mp4").resolve()
    assert guard.resolve("clip.mp4") == (white.root / "clip.mp4").resolve()


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_malformed_and_oversized_requests_get_errors_and_the_server_keeps_serving(white):
    assert rpc03(white.url, body=b"{not json").json()["error"]["code"] == -32700
    assert rpc03(white.url, "hello, no tags here").json()["error"]["code"] == -32602
    bad_time = white_message(white.clip, mc_question(PROC, "x"), None, None).replace("-1.0</start_ts>", "soon</start_ts>")
    assert rpc03(white.url, bad_time).json()["error"]["code"] == -32602
    assert "error" in rpc03(white.url, body={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                             "params": {"message": "nope"}}).json()
    big = rpc03(white.url, mc_text(white.clip) + " " * (20 * 1024))
    assert big.status_code == 413 and big.json()["error"]["code"] == -32600
    # still serving
    ok = rpc03(white.url, mc_text(white.clip))
    assert ok.json()["result"]["parts"][0]["text"] in OPTIONS


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_requests_beyond_the_queue_bound_are_refused_as_busy(white):
    async def burst():
        async with httpx.AsyncClient(timeout=120) as h:
            bodies = [{"jsonrpc": "2.0", "id": i, "method": "message/send",
                       "params": {"message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                                              "parts": [{"kind": "text", "text": mc_text(white.clip, start=i)}]}}}
                      for i in range(4)]
            return await asyncio.gather(*(h.post(white.url, json=b) for b in bodies))

    replies = [r.json() for r in asyncio.run(burst())]
    answered = [r for r in replies if "result" in r]
    busy = [r for r in replies if "error" in r]
    assert answered and busy  # max_pending=1: one runs, the rest are told to retry
    assert all("busy" in r["error"]["message"] for r in busy)


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_bearer_token_guards_rpc_but_not_the_card(white):
    from ego_adr.agents.serving import ServerThread, bind_socket, url_of
    from ego_adr.agents.white import build_white_app

    sock = bind_socket("127.0.0.1", 0)
    url = url_of(sock, "127.0.0.1")
    server = ServerThread(build_white_app(white.agent, url, token="s3cret"), sock).start()
    try:
        card = httpx.get(url + "/.well-known/agent-card.json", timeout=10)
        assert card.status_code == 200 and "bearer" in card.json().get("securitySchemes", {})
        assert rpc03(url, "x").status_code == 401
        assert rpc03(url, "x", headers={"Authorization": "Bearer wrong"}).status_code == 401
        r = rpc03(url, "no tags", headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200 and r.json()["error"]["code"] == -32602
    finally:
        server.stop()


class GibberishModelDouble:
    """Stands in for a model whose answers name no option, to check the unanswerable path of the agent."""

    model_id = "gibberish-double"
    fingerprint = "gibberish-double@1"

    @property
    def capabilities(self):
        from ego_adr.models.base import Capabilities

        return Capabilities(video=True, text_only=True, max_batch_size=4)

    def generate(self, requests):
        from ego_adr.models.base import Generation

        return [Generation(text="zzz qqq") for _ in requests]


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_unparseable_verdict_is_never_sent_as_an_option(white, tmp_path):
    """Ego-ADR's classifier found no option in the model's text: the method's answer is that text (its row says
    how it was obtained), which no ground truth credits -- never a made-up option such as ``Others``."""
    from ego_adr.agents.white import WhiteAgent
    from ego_adr.eval.scoring import score_row, strict_option

    agent = WhiteAgent(GibberishModelDouble(), [white.root], mode="deep", frames=2, cache_dir=tmp_path)
    try:
        ans = asyncio.run(agent.answer(mc_text(white.clip)))
    finally:
        agent.close()
    meta = ans.metadata["ego_adr"]
    assert strict_option(ans.text) is None and ans.text == "zzz qqq"
    assert meta["prediction"] is None and meta["raw"] == "zzz qqq"
    for gt in (["Others"], ["correct"], ["Wrong object"]):  # no ground truth credits it
        o = score_row({"sample_id": "x", "source": "s", "ground_truth": gt, "answer": ans.text})
        assert not o["hit"] and o["cell"] == "fp"


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_unreadable_video_is_unanswerable(white, tmp_path):
    """A file that is no video: the reply says why and is no option (the public rule scores it an error claim)."""
    broken = white.root / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42 this is not a video" * 10)
    ans = asyncio.run(white.agent.answer(mc_text(str(broken))))
    assert ans.text.startswith("unanswerable: ") and "video" in ans.text
    assert ans.metadata["ego_adr"]["status"] == "unanswerable" and "\n" not in ans.text


def test_non_loopback_bind_needs_a_token():
    from ego_adr.agents.serving import check_bind
    from ego_adr.errors import UserError

    check_bind("127.0.0.1", None, False)
    check_bind("0.0.0.0", "t", False)
    check_bind("0.0.0.0", None, True)
    with pytest.raises(UserError, match="--token"):
        check_bind("0.0.0.0", None, False)


@pytest.mark.parametrize("command", ["white", "green"])
def test_a_public_host_without_a_token_is_a_user_mistake(command, capsys, monkeypatch, tmp_path):
    """Issue 38 point 3: exit 2 and one ``error:`` line, as every other user mistake; nothing is bound or loaded."""
    import importlib

    monkeypatch.delenv("EGO_ADR_AGENT_TOKEN", raising=False)
    main = importlib.import_module(f"ego_adr.agents.{command}").main
    required = {"white": ["--model", "tiny", "--video-root", str(tmp_path)], "green": []}[command]
    assert main(["--host", "0.0.0.0", *required]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: refusing to listen on 0.0.0.0 without --token")


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_one_pass_baseline_answers_the_raw_reply_like_the_public_white_agent(white, tmp_path):
    """``direct`` is the paper's baseline row: what goes on the wire is the model's reply as it came."""
    from ego_adr.agents.white import WhiteAgent

    agent = WhiteAgent(GibberishModelDouble(), [white.root], mode="direct", frames=2, cache_dir=tmp_path)
    try:
        ans = asyncio.run(agent.answer(mc_text(white.clip)))
    finally:
        agent.close()
    assert ans.text == "zzz qqq" and ans.metadata["ego_adr"]["status"] == "ok"
