"""Serving and calling A2A agents (shared by both agents), and ``python -m ego_adr.agents launch``.

Serving: one Starlette app per agent with the card at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``,
1.0 and 0.3 on the same port (see :mod:`ego_adr.agents.protocol`). Two guards sit in front of the A2A routes:
a bounded request body (HTTP 413 with a JSON-RPC error body; the body is counted as it streams, so a missing or
false ``Content-Length`` does not get past it) and, when a token is set, ``Authorization: Bearer <token>`` on
everything but the agent card (clients must be able to discover the agent before they authenticate).
Binding to a non-loopback address without a token is refused unless asked for explicitly.

Calling: :func:`send_text` uses the a2a-sdk 1.x client, which reads the card and speaks 1.0 when the card lists
it and 0.3 otherwise, so our green agent evaluates white agents of either generation.

``launch`` starts a white agent (tiny model, embedded demo videos) and a green agent as subprocesses on free
loopback ports, runs one evaluation of the demo set, prints the metrics and stops both (terminate, then kill
after a grace period; nothing is left running, also on Ctrl-C or error).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

READY_PREFIX = "EGO_ADR_AGENT_READY "  # the line an agent prints on stdout once it serves (launch reads it)
TINY_MAX_NEW_TOKENS = 48


# ------------------------------------------------------------------------------------------------ server
def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to expose an agent beyond this machine without a token (it reads files and runs a model)."""
    if not is_loopback(host) and not token and not allow_unauthenticated:
        raise SystemExit(f"refusing to listen on {host} without --token: anyone who can reach it could use the "
                         "agent. Pass --token T (clients send 'Authorization: Bearer T'), or "
                         "--allow-unauthenticated if the network is trusted.")


def agent_card(name: str, description: str, url: str, skills: list[dict], version: str, token: str | None):
    """The card, listing the JSON-RPC interface twice (1.0 and 0.3) so both client generations find it."""
    from a2a.types import a2a_pb2 as pb

    card = pb.AgentCard(
        name=name, description=description, version=version,
        supported_interfaces=[pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=v)
                              for v in ("1.0", "0.3")],
        capabilities=pb.AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id=s["id"], name=s["name"], description=s["description"], tags=s.get("tags", []),
                              examples=s.get("examples", [])) for s in skills],
    )
    if token:
        card.security_schemes["bearer"].http_auth_security_scheme.scheme = "bearer"
        req = card.security_requirements.add()
        req.schemes["bearer"].SetInParent()
    return card


def _jsonrpc_error(code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


class _Guard:
    """ASGI middleware: bearer token (all but GET of the card) and a bounded request body."""

    def __init__(self, app, token: str | None, max_body: int, card_path: str):
        self.app, self.token, self.max_body, self.card_path = app, token, max_body, card_path

    async def _reply(self, send, status: int, code: int, message: str) -> None:
        body = _jsonrpc_error(code, message)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        is_card = scope.get("method") == "GET" and scope.get("path") == self.card_path
        if self.token and not is_card:
            import hmac

            auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            if not hmac.compare_digest(auth.encode(), f"Bearer {self.token}".encode()):
                return await self._reply(send, 401, -32001, "missing or wrong bearer token")
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await self._reply(send, 413, -32600, f"request too large (limit {self.max_body} bytes)")
        # count the body as it arrives: a chunked upload has no Content-Length
        chunks, total, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            chunk = msg.get("body", b"")
            total += len(chunk)
            if total > self.max_body:
                return await self._reply(send, 413, -32600, f"request too large (limit {self.max_body} bytes)")
            chunks.append(chunk)
            more = msg.get("more_body", False)
        body, sent = b"".join(chunks), False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


def build_app(card, request_handler, token: str | None = None, max_body: int = 256 * 1024):
    """Starlette app: card route + JSON-RPC route (1.0 and 0.3 on one port) behind :class:`_Guard`."""
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
    from starlette.applications import Starlette

    routes = create_agent_card_routes(card) + create_jsonrpc_routes(request_handler, "/", enable_v0_3_compat=True)
    return _Guard(Starlette(routes=routes), token, max_body, AGENT_CARD_WELL_KNOWN_PATH)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket bound now (port 0 = a free port), so the card can name the real port race-free."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError as e:  # a busy port, an address this machine does not have: one line, exit 2
        s.close()
        from ego_adr.errors import UserError

        raise UserError(f"cannot listen on {host}:{port} ({e.strerror or e}); pick another --port (0 = any free "
                        "port) or stop what holds it") from None
    s.listen(128)
    s.set_inheritable(True)
    return s


def url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    h = f"[{host}]" if ":" in host else host
    return f"http://{h}:{port}"


class ServerThread:
    """An app served by uvicorn in a background thread (tests, in-process use). ``stop()`` always returns."""

    def __init__(self, app, sock: socket.socket):
        import uvicorn

        self.sock = sock
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                                    timeout_graceful_shutdown=5))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def start(self, timeout: float = 30.0) -> ServerThread:
        self.thread.start()
        t0 = time.monotonic()
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() - t0 > timeout:
                raise RuntimeError("agent server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        try:
            self.sock.close()
        except OSError:
            pass


def serve_forever(app, sock: socket.socket, url: str, name: str) -> None:
    """Serve until SIGINT/SIGTERM; print the ready line first (``launch`` waits for it)."""
    import uvicorn

    print(f"{name} serving at {url} (card: {url}/.well-known/agent-card.json)", file=sys.stderr, flush=True)
    print(READY_PREFIX + url, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                  timeout_graceful_shutdown=5)).run(sockets=[sock])


# ------------------------------------------------------------------------------------------------ client
@dataclass
class AgentReply:
    text: str | None  # the first text part of the reply message (None: no text)
    metadata: dict = field(default_factory=dict)
    kind: str = "message"  # message | task
    protocol: str | None = None  # the protocol version the client chose from the card


class AgentClient:
    """One a2a-sdk 1.x client for one agent (card read once); ``send`` returns an :class:`AgentReply`.

    Errors (JSON-RPC error replies, HTTP errors, timeouts) raise; the caller records them per sample.
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = 600.0):
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout
        self._client = None
        self._http = None
        self.protocol: str | None = None

    async def __aenter__(self) -> AgentClient:
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._http = httpx.AsyncClient(timeout=self.timeout, headers=headers)
        card = await A2ACardResolver(self._http, self.url).get_agent_card()
        # who answers: part of a green run's identity (the URL is not: a relaunched agent gets another port)
        self.card_identity = {"name": card.name, "version": card.version, "description": card.description}
        self._client = ClientFactory(ClientConfig(streaming=False, httpx_client=self._http)).create(card)
        versions = [i.protocol_version for i in card.supported_interfaces if i.protocol_binding == "JSONRPC"]
        self.protocol = "1.0" if "1.0" in versions else (versions[0] if versions else None)
        return self

    async def __aexit__(self, *exc) -> None:
        if self._client is not None:
            await self._client.close()
        if self._http is not None:
            await self._http.aclose()

    async def send(self, text: str) -> AgentReply:
        from a2a.helpers import get_text_parts, new_text_message
        from a2a.types import a2a_pb2 as pb
        from google.protobuf.json_format import MessageToDict

        req = pb.SendMessageRequest(message=new_text_message(text, role=pb.Role.ROLE_USER))
        reply: AgentReply | None = None
        async for ev in self._client.send_message(req):
            which = ev.WhichOneof("payload")
            if which == "message":
                parts = get_text_parts(ev.message.parts)
                reply = AgentReply(parts[0] if parts else None, MessageToDict(ev.message.metadata), "message",
                                   self.protocol)
            elif which == "task":  # not the public contract, but read the answer a Task carries if any
                texts = [t for a in ev.task.artifacts for t in get_text_parts(a.parts)]
                texts += get_text_parts(ev.task.status.message.parts)
                reply = AgentReply(texts[0] if texts else None, MessageToDict(ev.task.metadata), "task",
                                   self.protocol)
        if reply is None:
            raise RuntimeError("the agent sent no message")
        return reply


async def send_text(url: str, text: str, token: str | None = None, timeout: float = 600.0) -> AgentReply:
    async with AgentClient(url, token, timeout) as c:
        return await c.send(text)


async def wait_for_card(url: str, timeout: float = 60.0) -> dict:
    import httpx

    t0 = time.monotonic()
    last = None
    async with httpx.AsyncClient(timeout=5) as h:
        while time.monotonic() - t0 < timeout:
            try:
                r = await h.get(url.rstrip("/") + "/.well-known/agent-card.json")
                if r.status_code == 200:
                    return r.json()
                last = f"HTTP {r.status_code}"
            except httpx.HTTPError as e:
                last = str(e)
            await asyncio.sleep(0.2)
    raise TimeoutError(f"no agent card at {url} after {timeout:.0f}s ({last})")


# ------------------------------------------------------------------------------------------------ launch
class _Agent:
    """A child agent process; its URL comes from its ready line."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict):
        self.name = name
        self.log = open(log_path, "w")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.url: str | None = None

    def wait_ready(self, timeout: float) -> str:
        box: dict = {}

        def read():
            for line in self.proc.stdout:
                if line.startswith(READY_PREFIX):
                    box["url"] = line[len(READY_PREFIX):].strip()
                    break

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(timeout)
        if "url" not in box:
            raise RuntimeError(f"{self.name} agent did not start within {timeout:.0f}s "
                               f"(exit code {self.proc.poll()}); see {self.log.name}")
        self.url = box["url"]
        return self.url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.log.close()


def run_launch(task: str = "multiple-choice", output_dir: str | None = None, frames: int = 8, mode: str = "auto",
               limit: int | None = None, concurrency: int = 2, model: str = "tiny",
               max_new_tokens: int | None = None, startup_timeout: float = 240.0, question_wording: str | None = None,
               public_evaluator_root: str | None = None) -> dict:
    """Start white + green on free loopback ports, evaluate the demo set, stop both; return the metrics.

    The tiny random model never emits an end token, so every answer runs to the token limit; with it, answers are
    capped at :data:`TINY_MAX_NEW_TOKENS` to keep the demo short (real models keep Appendix C's 256).
    ``question_wording`` None: the public green agent's questions when its source is found, else ours (said so).
    """
    from ego_adr.agents.protocol import ProtocolError
    from ego_adr.agents.public_mc import find_public_root
    from ego_adr.data.demo import ensure_demo

    root = ensure_demo()
    if question_wording is None and task == "multiple-choice":
        try:
            public_evaluator_root = str(find_public_root(public_evaluator_root, str(root / "annotations")))
            question_wording = "public"
        except ProtocolError as e:
            question_wording = "ego_adr"
            print(f"note: asking with ego_adr's own wording: {e}", file=sys.stderr)
    out = Path(output_dir or Path("runs") / f"a2a-demo-{task}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    py = sys.executable
    white = _Agent("white", [py, "-m", "ego_adr.agents.white", "--model", model, "--mode", mode,
                             "--frames", str(frames), "--video-root", str(root / "videos"), "--port", "0",
                             "--device", "cpu", "--max-new-tokens",
                             str(max_new_tokens or (TINY_MAX_NEW_TOKENS if model == "tiny" else 256))],
                   out / "white.log", env)
    agents = [white]
    try:
        green = _Agent("green", [py, "-m", "ego_adr.agents.green", "--port", "0"], out / "green.log", env)
        agents.append(green)
        white_url = white.wait_ready(startup_timeout)
        green_url = green.wait_ready(startup_timeout)
        print(f"white agent {white_url}  green agent {green_url}", file=sys.stderr)
        cfg = {"video_root": str(root / "videos"), "json_root": str(root / "annotations"),
               "procedure_json_path": str(root / "annotations" / "procedure.json"), "datasets": ["demo"],
               "task_type": task, "output_dir": str(out), "concurrency": concurrency, "limit": limit, "seed": 0,
               # open-ended: one QA pair per clip, as the public evaluator asks (it draws one at random)
               "qa_selection": "one", "question_wording": question_wording or "public",
               "public_evaluator_root": public_evaluator_root}
        from ego_adr.agents.protocol import green_message

        reply = asyncio.run(send_text(green_url, green_message(white_url, cfg), timeout=3600))
        print(reply.text)
        metrics = json.loads((out / "metrics.json").read_text())
        return metrics
    finally:
        for a in reversed(agents):
            a.stop()


async def ask(client, sem, text: str) -> tuple[object, str | None, float]:
    """Send one question under the semaphore: ``(reply, None, seconds)``, or ``(None, reason, seconds)`` when the
    white agent could not be asked (any transport or JSON-RPC failure is that sample's failure)."""
    async with sem:
        t0 = time.perf_counter()
        try:
            reply = await client.send(text)
            return reply, None, time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 -- any transport/JSON-RPC failure is this sample's failure
            return None, f"white agent error: {type(e).__name__}: {e}", time.perf_counter() - t0
