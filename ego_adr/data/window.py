"""The one rule for turning an annotated time window into the part of a video that is sampled.

Why one rule: a window that is silently reinterpreted (a null start read as "from 0", an inverted window read as
"the whole video", a window after the video's end answered from its last frame) produces a scored answer about
frames the annotation never meant. Every caller (the runner, the white agent, ``python -m ego_adr.check``) goes
through :func:`normalise_window`, and the data loader uses :func:`window_problem` to refuse what cannot be a
window before any video is opened.

The rule, in order:

1. **No segment.** Both ends missing (``None``/NaN) or both negative: the whole video, with a note. This is the
   public data's own convention (CaptainCook4D omissions carry ``start_time = end_time = -1``; one Epic-Tent
   record has ``-3661.033`` for both) and what the public white agent does for two negative times.
2. **Half a window** (exactly one end missing or negative): a failure, ``window: ...``. No end is guessed.
3. **Inverted** (``end < start``): a failure. A zero-length window (``end == start``) is the instant ``start``:
   the frames at and just after it (at least one frame), with a note.
4. **After the video** (``start >= duration``): a failure naming both times; never the last frame.
5. **Past the end** (``end > duration``): cut to the video's end with a note when the overrun is at most
   :data:`END_TOLERANCE_S`; a larger overrun is a failure (the window is not the clip the annotation meant).

``duration`` is the video's *nominal* length (what its container declares, or frames / fps): a truncated file
whose second half is missing keeps its nominal length, so a window in the missing part is planned normally and
then fails in the sampler because its frames cannot be decoded (see :mod:`ego_adr.video.sampler`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# A window end may overrun the video by this much and be cut with a note. Annotations are rounded (Epic-Tent's
# multiple-choice file stores times to 3 decimals) and containers disagree by a frame or two about where a video
# ends; one second covers both at every frame rate in the data, while a window that overruns by more is about
# footage the file does not have.
END_TOLERANCE_S = 1.0


class WindowError(ValueError):
    """The window cannot be sampled under the rule; ``str(e)`` is the sample's failure reason."""


@dataclass
class Window:
    """The part of the video to sample (seconds) and how it was obtained."""

    start: float
    end: float
    whole_video: bool = False
    clamped: bool = False
    notes: list[str] = field(default_factory=list)


def _absent(t) -> bool:
    return t is None or (isinstance(t, float) and math.isnan(t))


def _fmt(t) -> str:
    return "null" if _absent(t) else f"{float(t):g}"


def window_problem(start, end) -> str | None:
    """Why ``(start, end)`` can never be a window (rules 2 and 3), whatever the video; None when it can be.

    Used by the data loader so a malformed annotation is the sample's recorded failure before decoding.
    """
    for name, t in (("start", start), ("end", end)):
        if not _absent(t) and not isinstance(t, (int, float)):
            return f"window: {name} time {t!r} is not a number"
    s_missing = _absent(start) or float(start) < 0
    e_missing = _absent(end) or float(end) < 0
    if s_missing and e_missing:
        return None
    if s_missing or e_missing:
        return (f"window: start {_fmt(start)} s, end {_fmt(end)} s: one end is missing or negative "
                "(only both missing/negative means the whole video)")
    if float(end) < float(start):
        return f"window: end {_fmt(end)} s is before start {_fmt(start)} s"
    return None


def normalise_window(start, end, duration: float, fps: float) -> Window:
    """Apply the module's rule; raises :class:`WindowError` with the failure reason."""
    if not duration or duration <= 0 or not fps or fps <= 0:
        raise WindowError(f"video has no duration or frame rate (duration={duration}, fps={fps})")
    problem = window_problem(start, end)
    if problem:
        raise WindowError(problem)
    if (_absent(start) or float(start) < 0) and (_absent(end) or float(end) < 0):
        return Window(0.0, duration, whole_video=True,
                      notes=[f"no segment (start {_fmt(start)}, end {_fmt(end)}): the whole video is sampled"])
    s, e = float(start), float(end)
    notes: list[str] = []
    if s >= duration:
        raise WindowError(f"window: {s:g}-{e:g} s starts at or after the video's end ({duration:.2f} s)")
    if e == s:
        e = min(duration, s + 1.0 / fps)
        notes.append(f"zero-length window at {s:g} s: the frame at that instant")
    clamped = False
    if e > duration + 1e-6:
        over = e - duration
        if over > END_TOLERANCE_S + 1e-9:
            raise WindowError(f"window: {s:g}-{e:g} s ends {over:.2f} s after the video's end ({duration:.2f} s; "
                              f"at most {END_TOLERANCE_S:g} s is cut)")
        notes.append(f"window end {e:g} s is {over:.2f} s past the video's end: cut to {duration:.2f} s")
        e, clamped = duration, True
    return Window(s, e, clamped=clamped, notes=notes)
