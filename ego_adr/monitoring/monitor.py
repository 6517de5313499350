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
from collections.abc import Callable, Iterable, Iterator, Sequence
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


def stepped(monitor: Monitor, recordings: Sequence, context: Callable[[Any], Any], *, progress: bool = False,
            desc: str = "monitor") -> Iterator[tuple[Any, list[StepOutput]]]:
    """Each of ``recordings`` (anything with ``.video`` and ``.steps``) through :func:`run_episode` with its
    ``context(recording)``; yields (recording, outputs). With ``progress``, one bar over all their steps on stderr,
    advanced as the monitor answers: a monitor that asks a model takes minutes over a benchmark, and the bar is how
    a user sees it move (every step-stream benchmark's monitors, issue 46)."""
    from tqdm import tqdm

    with tqdm(total=sum(len(r.steps) for r in recordings), desc=desc, unit="step", disable=not progress) as bar:
        for rec in recordings:
            yield rec, run_episode(monitor, rec.video, context(rec), _counted(rec.steps, bar))


def _counted(observations: Sequence, bar) -> Iterator:
    """``observations`` one at a time, each produced only when the monitor asks for it; ``bar`` counts a step when
    the next one is asked for, the last one when the episode ends."""
    for i, obs in enumerate(observations):
        if i:
            bar.update(1)
        yield obs
    if len(observations):
        bar.update(1)
