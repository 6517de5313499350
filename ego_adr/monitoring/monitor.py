"""What a monitor is and how it is fed: reset with the context, then one observation at a time, never a later one.

Every online benchmark (HelpMeOut's symbolic episodes, video recordings, step streams) feeds its monitors through
:func:`run_episode`, which records only what the monitor returned. A monitor returns a :class:`StepOutput`
per observation: ``prob`` is P(an error has happened by this step), ``flagged`` whether it alarms here (``None``:
the benchmark's threshold decides), ``category`` the error type it names where it has one, ``onset`` the step it
blames, ``evidence`` whatever it wants a reader to see (kept in the per-step file), ``flagged_for`` its alarm at
the operating point chosen for each metric (a benchmark that scores several metrics may choose one per metric).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepOutput:
    prob: float
    onset: int | None = None
    category: str | None = None
    evidence: dict = field(default_factory=dict)
    flagged: bool | None = None  # None: the benchmark's threshold on ``prob`` decides
    # a thresholded monitor's alarm at the operating point chosen for each metric it is scored on (metric ->
    # flag), where those differ from ``flagged``; None: ``flagged`` for every metric
    flagged_for: dict | None = None


class Monitor:
    """Base class of every monitor. Subclasses implement :meth:`reset` and :meth:`step`; trained ones :meth:`fit`.

    ``name`` and ``reads`` are set from the registry spec when the monitor is built
    (:meth:`ego_adr.monitoring.registry.Registry.build`). ``timed_out`` lets a planner-based monitor say it gave up
    on an episode (HelpMeOut leaves such episodes out of M3).
    """

    name = "monitor"
    reads: tuple[str, ...] = ()
    timed_out = False

    def fit(self, train: list) -> None:  # noqa: B027 - optional hook
        """Learn from the benchmark's training data (only monitors whose spec says ``trains``)."""

    def reset(self, ctx: Any) -> None:
        raise NotImplementedError

    def step(self, t: int, observation: Any) -> StepOutput:
        raise NotImplementedError


def checked_prob(monitor: Monitor, p: float, where: str) -> float:
    """``p`` as a float in [0, 1]; anything else is the monitor's bug, named with where it happened."""
    p = float(p)
    if math.isnan(p) or not 0.0 <= p <= 1.0:
        raise ValueError(f"monitor {monitor.name} returned probability {p} at {where}")
    return p


def run_episode(monitor: Monitor, episode_id: str, ctx: Any, observations: Sequence | Iterable) -> list[StepOutput]:
    """Reset ``monitor`` with ``ctx`` and feed it ``observations`` one at a time; its outputs, checked.

    The monitor gets observation ``t`` only after it has answered for ``t - 1``: an iterable is consumed lazily,
    so a monitor cannot read ahead even by accident.
    """
    monitor.timed_out = False
    monitor.reset(ctx)
    outs = []
    for t, obs in enumerate(observations):
        out = monitor.step(t, obs)
        out.prob = checked_prob(monitor, out.prob, f"{episode_id} step {t}")
        outs.append(out)
    return outs


def counted(observations: Sequence, bar=None) -> Iterator:
    """``observations`` one at a time for :func:`run_episode`, each produced only when the monitor asks for it, with
    ``bar`` (a tqdm bar, or None) advanced as the monitor answers: a step is counted when the next one is asked
    for, the last one when the episode ends. A monitor that asks a model takes minutes over a benchmark, and the
    bar is how a user sees it move (every step-stream benchmark's monitors, issue 46)."""
    for i, obs in enumerate(observations):
        if bar is not None and i:
            bar.update(1)
        yield obs
    if bar is not None and len(observations):
        bar.update(1)
