"""Independent pieces of work on several processes: ``--jobs N`` of ``monitoring evaluate --monitor all``.

A *task* is a top-level function and its picklable arguments; the harness makes one per monitor that needs no
model (each writes its own folder), so ``--jobs 1`` and ``--jobs 2`` write the same bytes whenever each monitor is
deterministic in a process of its own (every monitor here is: seeded, and the learned ones fix their threads).
Processes are *spawned* (a fresh interpreter each): forking a process whose torch has started its OpenMP threads
can hang the child. With one job, or one task, nothing is spawned. The command's cache root (``--cache-dir``, a
:func:`ego_adr.store.cache_scope`) is the workers' too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from ego_adr.store import cache_root, cache_scope

JOBS_ENV = "EGO_ADR_JOBS"


def default_jobs() -> int:
    """``$EGO_ADR_JOBS`` if set, else the CPUs this process may run on. A value that is no number: ValueError."""
    env = os.environ.get(JOBS_ENV, "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"${JOBS_ENV}={env!r} is not a number of processes") from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run_tasks(tasks: Sequence[tuple[Callable, tuple]], jobs: int) -> list:
    """Each task's result, in the order given; on up to ``jobs`` spawned processes when there is more than one of
    each."""
    n = min(int(jobs), len(tasks))
    if n <= 1:
        return [fn(*args) for fn, args in tasks]
    root = str(cache_root())
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_in_scope, root, fn, args) for fn, args in tasks]
        return [f.result() for f in futures]


def _in_scope(root: str, fn: Callable, args: tuple):
    with cache_scope(root):
        return fn(*args)
