"""Compute the next items (e.g. decode the next clips) in background threads while the caller uses the current one.

Why threads: the heavy part of frame sampling runs inside decord / FFmpeg, which release the GIL while
decoding, so decoding the next clips overlaps with a model call on the current one (itself mostly outside the
GIL in torch kernels or waiting on a server). Results come back in input order; at most ``depth`` items are
started ahead of the consumer (bounded memory: ``depth`` decoded clips); a failure of one item is returned as
that item's ``error`` and never stops the rest; stopping early (``break``, :meth:`Prefetcher.close`, leaving the
``with`` block) cancels what has not started and waits only for the items already running.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any


@dataclass
class Prefetched:
    """One item's outcome. ``seconds``: time ``fn`` ran (e.g. decode time); ``waited``: time the consumer
    waited for it (0 when prefetching fully hid it)."""

    index: int
    item: Any
    value: Any = None
    error: BaseException | None = None
    seconds: float = 0.0
    waited: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def _timed(fn: Callable[[Any], Any], index: int, item: Any) -> Prefetched:
    t = time.perf_counter()
    try:
        return Prefetched(index, item, value=fn(item), seconds=time.perf_counter() - t)
    except Exception as e:  # noqa: BLE001 - any per-item failure is data, not a crash
        return Prefetched(index, item, error=e, seconds=time.perf_counter() - t)


class Prefetcher:
    """Iterate :class:`Prefetched` results of ``fn(item)`` in input order, computing up to ``depth`` items ahead
    on ``workers`` threads. ``workers=0`` computes each item in the caller's thread when it is asked for (no
    overlap; for debugging)."""

    def __init__(self, fn: Callable[[Any], Any], items: Iterable[Any], workers: int = 2, depth: int = 4):
        if workers < 0 or depth < 1:
            raise ValueError(f"need workers >= 0 and depth >= 1, got workers={workers}, depth={depth}")
        self.fn = fn
        self._items = iter(items)
        self.workers = workers
        self.depth = depth
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prefetch") if workers else None
        self._pending: deque[Future] = deque()
        self._next_index = 0
        self._exhausted = False
        self._closed = False
        self._iterating = False

    def _fill(self) -> None:
        while not self._exhausted and len(self._pending) < self.depth:
            try:
                item = next(self._items)
            except StopIteration:
                self._exhausted = True
                return
            self._pending.append(self._pool.submit(_timed, self.fn, self._next_index, item))
            self._next_index += 1

    def __iter__(self) -> Iterator[Prefetched]:
        if self._iterating:
            raise RuntimeError("a Prefetcher can be iterated only once")
        self._iterating = True
        try:
            if self._pool is None:
                for i, item in enumerate(self._items):
                    if self._closed:
                        return
                    yield _timed(self.fn, i, item)
                return
            self._fill()
            while self._pending and not self._closed:
                fut = self._pending.popleft()
                t = time.perf_counter()
                res = fut.result()
                res.waited = time.perf_counter() - t
                self._fill()  # start the next one before handing this one out
                yield res
        finally:
            self.close()

    def close(self) -> None:
        """Cancel items not yet started and wait for running ones; idempotent."""
        if self._closed:
            return
        self._closed = True
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Prefetcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown
            pass
