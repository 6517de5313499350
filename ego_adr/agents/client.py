"""Calling A2A agents: :func:`send_text` and :class:`AgentClient` use the a2a-sdk 1.x client, which reads the card
and speaks 1.0 when the card lists it and 0.3 otherwise, so our green agent evaluates white agents of either
generation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


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
