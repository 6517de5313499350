"""What the white agent adds around the a2a SDK's server so malformed traffic cannot grow it or flood its log.

Issue 18: 3,000 refused 50 KB requests grew the agent from 814 to 1,060 MB (every request, a refused one
included, leaves a task in the SDK's in-memory store, which never forgets one) and each refusal wrote two ERROR
tracebacks to the log (2.3 MB per 1,000). ``tests/agents/test_white_soak.py`` measures both.
"""

from __future__ import annotations

import logging


class RefusalLogFilter:
    """Drops the a2a SDK's log records about a request this agent refused on purpose (issue 18: each refusal
    wrote two ERROR tracebacks, 2.3 MB per 1,000 refusals): the agent already logged it in one line. Records of
    any other error keep their tracebacks."""

    def filter(self, record) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not getattr(exc, "ego_adr_refusal", False)


#: The SDK's per-request chatter ("Task not found ... Creating new task", "Dispatcher task was cancelled"),
#: one or two lines per request, refused or not; kept at WARNING/ERROR so a refusal is one line in the log.
_QUIET_LOGGERS = {"a2a.server.tasks.task_manager": "WARNING", "a2a.server.events.event_queue_v2": "ERROR"}
_SDK_LOGGERS = ("a2a.server.agent_execution.active_task", "a2a.server.request_handlers",
                "a2a.server.apps", "a2a.server.routes")


def quiet_sdk_logs() -> None:
    for name in _SDK_LOGGERS:
        logging.getLogger(name).addFilter(RefusalLogFilter())
    for name, level in _QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(level)


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
