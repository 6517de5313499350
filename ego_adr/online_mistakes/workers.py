"""The step-stream benchmarks' work spread over processes: ``--jobs N`` (issue 35: ``--monitor all`` on a
complete-trial benchmark in under a minute on 2 cores).

What takes the time of ``evaluate --monitor all`` is fitting: every learned monitor once on the training set and,
for the nested selection (:mod:`.selection`), once per outer fold. Those fits are independent of one another, and
each is deterministic on one thread (float64, :mod:`ego_adr.monitoring.numerics`), so they can run in separate
processes and give the same bytes as in one: ``--jobs 1`` and ``--jobs 2`` write identical folders
(``tests/monitoring/test_workers.py``).

A *task* is a top-level function and its picklable arguments. Monitors that reuse each other's fits through an
in-process memo (``stacked`` reads the GRU, n-gram and graph fits of ``seq2seq-oneclass``, ``ngram-oneclass``
and ``egoadr-graph``) must run in one process to share them: :func:`groups` keeps them together, from each spec's
``fits_with``. Processes are *spawned* (a fresh interpreter each, ~2.5 s to import torch): forking a process whose
torch has started its OpenMP threads can hang the child. With one job, or one task, nothing is spawned.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from ego_adr.online_mistakes.registry import REGISTRY
from ego_adr.store import cache_root, cache_scope

JOBS_ENV = "EGO_ADR_JOBS"


def default_jobs() -> int:
    """``$EGO_ADR_JOBS`` if set, else the CPUs this process may run on."""
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


def groups(names: Sequence[str]) -> list[list[str]]:
    """``names`` in groups that must share a process (same ``fits_with``; a monitor without one is alone), the
    costly first, so that the tasks left for the end are cheap: more monitors that train first, then the later in
    the registry first (a rough rule: the registry lists the blind and counting monitors before the learned ones,
    the one-class nets last among those alone)."""
    by: dict[str, list[str]] = {}
    for n in names:
        by.setdefault(REGISTRY.get(n).fits_with or n, []).append(n)
    order = {n: i for i, n in enumerate(REGISTRY.names())}
    return sorted(by.values(), key=lambda g: (-sum(REGISTRY.get(n).trains for n in g), -max(order[n] for n in g)))


def plain(a):
    """The command's arguments without the callables argparse keeps in them (``fn``): what a task may carry to
    a spawned process."""
    import argparse

    return argparse.Namespace(**{k: v for k, v in vars(a).items() if not callable(v)})


def run(tasks: Sequence[tuple[Callable, tuple]], jobs: int) -> list:
    """Each task's result, in the order given; on ``jobs`` spawned processes when there is more than one of each
    (tasks are started in the order given)."""
    n = min(int(jobs), len(tasks))
    if n <= 1:
        return [fn(*args) for fn, args in tasks]
    root = str(cache_root())  # the command's cache root (--cache-dir, a cache_scope) is the workers' too
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_in_scope, root, fn, args) for fn, args in tasks]
        return [f.result() for f in futures]


def _in_scope(root: str, fn: Callable, args: tuple):
    with cache_scope(root):
        return fn(*args)
