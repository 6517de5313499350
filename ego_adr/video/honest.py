"""Checking decoded frames against the plan: every returned frame is the one asked for, or the difference is
recorded (a substitution), or the sample fails. Used by :class:`ego_adr.video.sampler.FrameSampler`.

Why: a decoder asked for frame 400 of a file cut after frame 300 may return frame 300 (or the last frame it
managed), and a window answered from those frames looks exactly like a valid one. Each reader reports which frame
it produced (:class:`ego_adr.video.readers.Decoded`); this module compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ego_adr.video.policies import Plan


@dataclass
class Outcome:
    """What one reader delivered for a plan: exact frames by requested index, and what is wrong with the rest."""

    backend: str
    frames: dict[int, np.ndarray] = field(default_factory=dict)  # requested index -> exactly that frame
    near: dict[int, tuple[int, np.ndarray]] = field(default_factory=dict)  # requested -> (other index, its frame)
    problems: dict[int, str] = field(default_factory=dict)  # requested index -> why it is not exact

    @property
    def complete(self) -> bool:
        return not self.problems


def max_shift(plan: Plan) -> int:
    """Largest distance (frames) a substitute may lie from the requested frame: half a sampling segment, so a
    substitute stays inside its own segment of the window (0 when the window has fewer frames than requested)."""
    idx = sorted(set(plan.indices))
    if len(idx) < 2:
        return 0
    gaps = [b - a for a, b in zip(idx, idx[1:])]
    return min(gaps) // 2


def read_plan(reader, plan: Plan, transform) -> Outcome:
    """Decode the plan's distinct indices with ``reader`` and sort the results (raises if the decoder breaks)."""
    uniq = sorted(set(plan.indices))
    out = Outcome(reader.backend)
    for i, d in zip(uniq, reader.read(uniq, transform), strict=True):
        if d.index == i and d.frame is not None:
            out.frames[i] = d.frame
        elif d.frame is not None and d.index is not None:
            out.near[i] = (d.index, d.frame)
            out.problems[i] = f"frame {i} requested, the decoder produced frame {d.index}"
        else:
            out.problems[i] = d.problem or f"frame {i} could not be decoded"
    return out


def find_substitutes(reader, out: Outcome, plan: Plan, transform, reads: int = 4) -> None:
    """For each problem, try the nearest frames within :func:`max_shift` (at most ``reads`` decodes per frame)
    and keep the nearest one that decodes exactly, in ``out.near``."""
    tol = max_shift(plan)
    limit = max(reader.num_frames, 1) - 1
    for i in list(out.problems):
        if i in out.near and abs(out.near[i][0] - i) <= tol:
            continue
        cands = sorted({min(max(i + d * s, 0), limit) for d in range(1, tol + 1) for s in (-1, 1)} - {i},
                       key=lambda j: (abs(j - i), j))[:reads]
        for j in cands:
            if j in out.frames:
                out.near[i] = (j, out.frames[j])
                break
            d = reader.read([j], transform)[0]
            if d.index == j and d.frame is not None:
                out.near[i] = (j, d.frame)
                break


def assemble(out: Outcome, plan: Plan, fps: float, substitute: str) -> tuple[list[int], np.ndarray, list[dict]]:
    """The frames in plan order, the indices actually used and the substitutions; raises ``LookupError`` with the
    failure reason when a frame is missing and may not (or cannot) be substituted."""
    tol = max_shift(plan)
    used, subs, missing = [], [], []
    for i in plan.indices:
        if i in out.frames:
            used.append(i)
            continue
        near = out.near.get(i)
        if substitute == "nearest" and near is not None and abs(near[0] - i) <= tol:
            used.append(near[0])
            if not any(s["requested"] == i for s in subs):
                subs.append({"requested": i, "used": near[0], "seconds_off": round((near[0] - i) / fps, 4),
                             "reason": out.problems[i]})
            continue
        missing.append(i)
    if missing:
        uniq = sorted(set(missing))
        first = out.problems[uniq[0]]
        span = f"{uniq[0] / fps:.2f}-{uniq[-1] / fps:.2f} s" if len(uniq) > 1 else f"{uniq[0] / fps:.2f} s"
        raise LookupError(f"{len(uniq)} of {len(set(plan.indices))} requested frames not decodable "
                          f"(frames {uniq[0]}..{uniq[-1]}, {span}; {first})")
    frames = {**out.frames, **{j: f for j, f in out.near.values()}}
    return used, np.stack([frames[j] for j in used]), subs
