"""Sampling policies: which frame indices a window's ``N`` frames are, by name, recorded on every sample.

Why named policies: the frame indices change the numbers a model gets, so the rule is part of a run's identity.
Two exist:

* ``bin-centre`` (default, ours): the window (normalised by :mod:`ego_adr.data.window`) holds the frames whose
  timestamps ``i / fps`` fall inside ``[start, end)``; that run of ``M`` frames is cut into ``N`` equal segments
  and the *centre* frame of each is taken (``first + floor((k + 0.5) * M / N)``). Centres rather than end points
  because the boundary frames of an annotated window often belong to the neighbouring step. Fewer than ``N``
  frames in the window: some repeat, recorded as ``duplicated``.
* ``public``: the public white agent's rule (``linspace(int(start*fps), int(end*fps), N)`` with both end points,
  its own handling of negative and inverted windows), implemented in :mod:`ego_adr.video.public_policy`.

A policy is a function ``(total_frames, fps, start, end, num_frames) -> Plan``; :func:`register_policy` adds one.
``total_frames`` is the video's nominal length (see :mod:`ego_adr.data.window`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ego_adr.data.window import WindowError, normalise_window
from ego_adr.video.public_policy import BIN_CENTRE, PUBLIC_LINSPACE, public_indices

DEFAULT_POLICY = BIN_CENTRE


@dataclass
class Plan:
    """Indices to decode for one window and how they were obtained."""

    indices: list[int]
    window: tuple[float, float]
    whole_video: bool = False
    clamped: bool = False
    duplicated: bool = False
    notes: list[str] = field(default_factory=list)


def bin_centre(total_frames: int, fps: float, start, end, num_frames: int) -> Plan:
    """The ``bin-centre`` policy (module docstring). Raises :class:`WindowError` for a window the rule refuses."""
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    if total_frames < 1 or not fps or fps <= 0:
        raise WindowError(f"video has no frames or no frame rate (frames={total_frames}, fps={fps})")
    w = normalise_window(start, end, total_frames / fps, fps)
    first = min(max(math.ceil(w.start * fps - 1e-6), 0), total_frames - 1)
    stop = min(max(math.ceil(w.end * fps - 1e-6), first + 1), total_frames)  # frames with t_i < end, >= 1
    m = stop - first
    idx = [first + int(math.floor((k + 0.5) * m / num_frames)) for k in range(num_frames)]
    return Plan(idx, (w.start, w.end), w.whole_video, w.clamped, m < num_frames, list(w.notes))


def as_plan(result) -> Plan:
    """An index rule's result as a :class:`Plan`. A policy returns a Plan; a rule with
    :func:`ego_adr.video.sampler.plan_indices`' signature (``index_rule=``, :func:`public_indices`) returns its
    triple ``(indices, window, flags)``. Anything else is refused: a bare index list says nothing of the window
    used, and a Plan made up for it would record one that was not."""
    if isinstance(result, Plan):
        return result
    if isinstance(result, tuple) and len(result) == 3 and isinstance(result[2], dict):
        idx, window, flags = result
        return Plan([int(i) for i in idx], (float(window[0]), float(window[1])),
                    bool(flags.get("whole_video")), bool(flags.get("clamped")), bool(flags.get("duplicated")),
                    list(flags.get("notes", [])))
    raise TypeError(f"an index rule returns a Plan or (indices, window, flags), not {type(result).__name__}")


def from_rule(rule: Callable) -> Callable[..., Plan]:
    """Wrap an index rule with ``plan_indices``' signature into a policy."""

    def policy(total_frames, fps, start, end, num_frames):
        return as_plan(rule(total_frames, fps, start, end, num_frames))

    policy.__name__ = getattr(rule, "__name__", "custom")
    return policy


def _public(total_frames: int, fps: float, start, end, num_frames: int) -> Plan:
    """The public white agent's index rule, :func:`ego_adr.video.public_policy.public_indices`, under the one name
    the protocol options, ``SampleInfo.policy`` and the reports use (``public-linspace``)."""
    s = -1.0 if start is None else float(start)  # the loader's None means "no segment"; the agent sees -1
    e = -1.0 if end is None else float(end)
    return as_plan(public_indices(total_frames, fps, s, e, num_frames))


_POLICIES: dict[str, Callable[..., Plan]] = {BIN_CENTRE: bin_centre, PUBLIC_LINSPACE: _public}


def register_policy(name: str, fn: Callable[..., Plan]) -> None:
    """Add (or replace) a sampling policy under ``name``."""
    _POLICIES[name] = fn


def policy_names() -> list[str]:
    return list(_POLICIES)


def get_policy(name: str) -> Callable[..., Plan]:
    try:
        return _POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown sampling policy {name!r}; use one of {', '.join(_POLICIES)}") from None
