"""The step-stream benchmarks' work spread over processes: ``--jobs N`` (issue 35: ``--monitor all`` on a
complete-trial benchmark in under a minute on 2 cores).

What takes the time of ``evaluate --monitor all`` is fitting: every learned monitor once on the training set and,
for the nested selection (:mod:`.selection`), once per outer fold. Those fits are independent of one another, and
each is deterministic on one thread (float64, :mod:`ego_adr.monitoring.numerics`), so they can run in separate
processes and give the same bytes as in one: ``--jobs 1`` and ``--jobs 2`` write identical folders
(``tests/online_mistakes/test_workers.py``).

The processes are the harness's (:mod:`ego_adr.monitoring.workers`, one task per group of monitors and one per
missing fold of the selection). What is the step streams' own is which monitors share a process: those that reuse
each other's fits through an in-process memo (``stacked`` reads the GRU, n-gram and graph fits of
``seq2seq-oneclass``, ``ngram-oneclass`` and ``egoadr-graph``) must run in one process to share them, and
:func:`groups` keeps them together, from each spec's ``fits_with``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ego_adr.online_mistakes.registry import REGISTRY


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
