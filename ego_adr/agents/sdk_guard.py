"""What the agents add around the a2a SDK's server so malformed traffic cannot grow them or flood their log.

Issue 18: 3,000 refused 50 KB requests grew the agent from 814 to 1,060 MB (every request, a refused one
included, leaves a task in the SDK's in-memory store, which never forgets one) and each refusal wrote two ERROR
tracebacks to the log (2.3 MB per 1,000). ``tests/agents/test_white_soak.py`` measures both.

Issue 28, item 10: the refusals the SDK makes itself still logged as each of its layers pleased -- the 0.3
compat adapter a 12-line pydantic traceback for ``message/send`` with empty ``params``, the 1.0 dispatcher one
WARNING line, its protobuf validation nothing at all. :class:`RefusalLog` makes it one line per refusal,
whichever layer refuses: it watches every JSON-RPC reply, logs ``refused (<kind>): <method>: <message>`` for an
error reply, and holds back what the SDK logged while handling that request (:class:`RequestLogBuffer`), then
drops it for a refusal or lets it through for anything else (a real failure keeps its traceback).
``tests/agents/test_refusal_log.py`` counts the lines.
"""

from __future__ import annotations

import contextvars
import json
import logging


class RefusalLogFilter:
    """Drops the a2a SDK's log records about a request this agent refused on purpose (issue 18: each refusal
    wrote two ERROR tracebacks, 2.3 MB per 1,000 refusals): :class:`RefusalLog` logs it in one line. Records of
    any other error keep their tracebacks."""

    def filter(self, record) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not getattr(exc, "ego_adr_refusal", False)


_held: contextvars.ContextVar = contextvars.ContextVar("ego_adr_request_log", default=None)


class RequestLogBuffer:
    """A logging filter on the SDK's loggers: while a request is being answered, its records are held, not
    written; :meth:`release` writes them (the reply was no refusal) or :meth:`drop` forgets them. Records from
    outside any request (start-up, worker threads) pass at once."""

    def filter(self, record) -> bool:
        held = _held.get()
        if held is None or held["closed"]:
            return True
        held["records"].append(record)
        return False

    @staticmethod
    def open() -> tuple[contextvars.Token, dict]:
        held = {"records": [], "closed": False}
        return _held.set(held), held

    @staticmethod
    def close(held: dict, keep: bool) -> None:
        """Stop holding; write what was held when ``keep``. Callable from any task (the token is reset by the
        one that opened it)."""
        if not held["closed"]:
            held["closed"] = True
            if keep:
                for r in held["records"]:
                    logging.getLogger(r.name).handle(r)
            held["records"] = []


#: The SDK's per-request chatter ("Task not found ... Creating new task", "Dispatcher task was cancelled"),
#: one or two lines per request, refused or not; kept at WARNING/ERROR so a refusal is one line in the log.
_QUIET_LOGGERS = {"a2a.server.tasks.task_manager": "WARNING", "a2a.server.events.event_queue_v2": "ERROR"}


def quiet_sdk_logs() -> None:
    """Install the filters on every a2a SDK logger that exists (call it once the SDK's server modules are
    imported: a logger's filters apply to its own records only, not to its children's)."""
    names = [n for n in logging.Logger.manager.loggerDict if n == "a2a" or n.startswith("a2a.")]
    for name in names:
        lg = logging.getLogger(name)
        if not any(isinstance(f, RequestLogBuffer) for f in lg.filters):
            lg.addFilter(RefusalLogFilter())
            lg.addFilter(RequestLogBuffer())
    for name, level in _QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(level)


#: JSON-RPC / A2A error codes -> the word in the refusal line; the soak test reads "refused (invalid)".
_KINDS = {-32700: "not JSON", -32600: "invalid request", -32601: "unknown method", -32602: "invalid",
          -32001: "not found", -32002: "not cancelable", -32004: "unsupported", -32009: "version"}
_KEPT_BODY = 256 * 1024  # bytes of a request / reply looked at (the agents' bodies are bounded below that)


def _short(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + f"... ({len(text)} chars)"


def refusal_line(status: int, reply: bytes, request: bytes) -> str | None:
    """The one log line of a refused request, or ``None`` when the reply is no refusal (a result, or an internal
    failure, which keeps its own log records)."""
    try:
        body = json.loads(reply)
    except ValueError:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return None
    code, message = err.get("code"), str(err.get("message") or "")
    if status == 401 or status == 413:
        kind = "unauthorized" if status == 401 else "too large"
    elif code == -32603:  # internal: a refusal only when the agent says busy
        if not message.startswith("busy"):
            return None
        kind = "busy"
    else:
        kind = _KINDS.get(code, f"error {code}")
    data = err.get("data")
    if isinstance(data, str) and data.strip():
        message = f"{message}: {data}" if message else data
    try:
        req = json.loads(request)
        method = req.get("method") if isinstance(req, dict) else None
    except ValueError:
        method = None
    return f"refused ({kind}): {method if isinstance(method, str) else '-'}: {_short(message)}"


class RefusalLog:
    """ASGI middleware: one log line per refused request, whichever layer refused (see the module docstring)."""

    def __init__(self, app, log: logging.Logger):
        self.app, self.log = app, log

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        request, reply, state = bytearray(), bytearray(), {"status": 200, "json": False, "decided": False}
        token, held = RequestLogBuffer.open()

        async def rx():
            msg = await receive()
            if len(request) < _KEPT_BODY:
                request.extend(msg.get("body", b"")[: _KEPT_BODY - len(request)])
            return msg

        def decide(keep: bool, line: str | None = None) -> None:
            if not state["decided"]:
                state["decided"] = True
                RequestLogBuffer.close(held, keep)
                if line:
                    self.log.info("%s", line)

        async def tx(msg):
            if msg["type"] == "http.response.start":
                state["status"] = msg.get("status", 200)
                ctype = dict(msg.get("headers") or []).get(b"content-type", b"")
                state["json"] = ctype.startswith(b"application/json")
                if not state["json"]:  # a stream or a page: no refusal, let the held records out now
                    decide(True)
            elif msg["type"] == "http.response.body" and state["json"] and not state["decided"]:
                reply.extend(msg.get("body", b"")[: max(0, _KEPT_BODY - len(reply))])
                if not msg.get("more_body", False):
                    line = refusal_line(state["status"], bytes(reply), bytes(request))
                    decide(line is None, line)
            await send(msg)

        try:
            await self.app(scope, rx, tx)
        finally:
            decide(True)
            _held.reset(token)


class BoundedTaskStore:
    """The SDK's in-memory task store, holding at most ``max_tasks`` tasks (the oldest are dropped).

    Why: every request, a refused one included, leaves a task in the SDK's store, and the in-memory store never
    forgets one, so malformed traffic grew the agent's memory without bound (issue 18: 814 -> 1,060 MB over 3,000
    refused 50 KB requests). This agent answers with single messages, never with tasks a client polls later, so
    only recent tasks are worth keeping."""

    def __new__(cls, max_tasks: int = 256):
        from collections import OrderedDict

        from a2a.server.tasks import InMemoryTaskStore

        class _Store(InMemoryTaskStore):
            def __init__(self) -> None:
                super().__init__()
                self._order: OrderedDict = OrderedDict()
                self.max_tasks = max_tasks

            async def save(self, task, context) -> None:
                await super().save(task, context)
                self._order[task.id] = context
                self._order.move_to_end(task.id)
                while len(self._order) > self.max_tasks:
                    old, ctx = self._order.popitem(last=False)
                    await super().delete(old, ctx)

            async def delete(self, task_id, context) -> None:
                self._order.pop(task_id, None)
                await super().delete(task_id, context)

        return _Store()
