"""Serving A2A agents (shared by the white and the green agent).

One Starlette app per agent with the card at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``, 1.0 and 0.3 on
the same port (see :mod:`ego_adr.agents.messages`). Two guards sit in front of the A2A routes: a bounded request
body (HTTP 413 with a JSON-RPC error body; the body is counted as it streams, so a missing or false
``Content-Length`` does not get past it) and, when a token is set, ``Authorization: Bearer <token>`` on everything
but the agent card (clients must be able to discover the agent before they authenticate). Binding to a
non-loopback address without a token is refused unless asked for explicitly.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
import threading
import time

from ego_adr.errors import UserError

READY_PREFIX = "EGO_ADR_AGENT_READY "  # the line an agent prints on stdout once it serves (launch reads it)


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
        raise UserError(f"refusing to listen on {host} without --token: anyone who can reach it could use the "
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


def build_app(card, request_handler, token: str | None = None, max_body: int = 256 * 1024,
              log_name: str = "ego_adr.agents"):
    """Starlette app: card route + JSON-RPC route (1.0 and 0.3 on one port) behind :class:`_Guard`, and around
    both the one-line refusal log (:class:`ego_adr.agents.sdk_guard.RefusalLog`, on logger ``log_name``)."""
    import logging

    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
    from starlette.applications import Starlette

    from ego_adr.agents.sdk_guard import RefusalLog, quiet_sdk_logs

    routes = create_agent_card_routes(card) + create_jsonrpc_routes(request_handler, "/", enable_v0_3_compat=True)
    quiet_sdk_logs()  # after the SDK's server modules are imported: their loggers exist now
    guarded = _Guard(Starlette(routes=routes), token, max_body, AGENT_CARD_WELL_KNOWN_PATH)
    return RefusalLog(guarded, logging.getLogger(log_name))


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket bound now (port 0 = a free port), so the card can name the real port race-free."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError as e:  # a busy port, an address this machine does not have: one line, exit 2
        s.close()
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


