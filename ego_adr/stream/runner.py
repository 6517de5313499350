"""Feed a recording to a streaming monitor in time order, one window per stride, never looking ahead.

Ticks are at ``t = stride, 2*stride, ...`` up to the recording's duration, plus one at the duration itself when
the recording does not end on that grid (otherwise its last ``duration mod stride`` seconds would never be
watched); tick ``t`` sees the frames of ``[max(0, t - window), t)`` only (the sampler's window rule), so the
first ``k`` ticks of a recording cut after ``k * stride`` seconds are exactly the first ``k`` ticks of the whole
one. After the last tick the monitor's end-of-recording check runs (omissions).

Every tick is appended to a JSONL log (flushed; fsynced at the end of the recording) with the evidence the monitor observed; a rerun
with the same log replays those ticks through the monitor's pure update and continues where the first run
stopped, so a killed run loses at most the tick in progress and never pays twice for a model call.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.store import write_jsonl


@dataclass(frozen=True)
class StreamSettings:
    window: float = 8.0  # seconds of video per observation
    stride: float = 4.0  # seconds between observations
    frames: int = 8  # frames per window (Section 6.1's smallest setting, the Ego-ADR default)
    tail: bool = True  # a last tick at the recording's end when it is not on the stride grid (see tick_times)

    def tag(self) -> str:
        return f"w{_num(self.window)}s-s{_num(self.stride)}s-{self.frames}f"


def _num(x: float) -> str:
    return f"{x:g}"


class ResumeMismatch(RuntimeError):
    """A log holds ticks that do not belong to this recording and these settings."""


def tick_times(duration: float, stride: float, tail: bool = True) -> list[float]:
    """``stride, 2*stride, ...`` up to ``duration``; with ``tail`` one more tick at ``duration`` itself when the
    recording does not end on the grid, so its last ``duration mod stride`` seconds are watched too."""
    n = int(math.floor(duration / stride + 1e-9))
    times = [round(k * stride, 6) for k in range(1, n + 1)]
    if tail and duration - (times[-1] if times else 0.0) > 1e-6:
        times.append(round(duration, 6))
    return times


def read_log(path: Path | None) -> list[dict]:
    """Records of an append-only JSONL log; a torn last line (a kill while writing) is dropped."""
    if path is None or not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out


def repair_log(path: Path | None) -> list[dict]:
    """:func:`read_log`, and when a torn line was dropped, rewrite the file (atomically) without it, so that
    records appended afterwards are readable."""
    records = read_log(path)
    if path is not None and path.is_file() and len(path.read_text().splitlines()) != len(records):
        write_jsonl(path, records)
    return records


def _append(f, rec: dict) -> None:
    # flushed, not fsynced: a killed process loses nothing the OS was given; an fsync per tick cost ~0.1 s on a
    # busy disk (more than a tiny-model tick). The log is fsynced when the recording is finished.
    f.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    f.flush()


def video_duration(sampler, path: str) -> float:
    r = sampler.reader(path)
    return r.num_frames / r.fps


def stream_recording(monitor, video_path: str, task_id: str, procedure: str, settings: StreamSettings,
                     sampler, episode_id: str = "", log_path: Path | None = None, alerts_path: Path | None = None,
                     on_alert=None, on_tick=None, narrate_from=None, until: float | None = None) -> dict:
    """Run ``monitor`` over one recording; returns ticks, the end check, alerts and timings.

    Raises :class:`ego_adr.video.sampler.VideoError` when the recording cannot be opened (the caller records
    it for that episode); a window that cannot be decoded is a failed tick and the stream goes on.
    ``narrate_from(start, t)``: the reference-narration diagnostic (:func:`reference_narrator`) -- the window's
    narration comes from the annotations instead of the model; frames are not decoded.
    ``until``: watch only the first ``until`` seconds ("what has gone wrong so far?"); the end-of-recording
    check runs only when that reaches the recording's end, since omissions cannot be confirmed earlier.
    """
    duration = video_duration(sampler, video_path)
    monitor.reset(task_id, procedure, episode_id or Path(video_path).stem)
    seen_until = duration if until is None else max(0.0, min(duration, float(until)))
    times = tick_times(seen_until, settings.stride, settings.tail)
    ticks, end_rec = _replay(monitor, repair_log(log_path), times, seen_until, duration, log_path)
    if alerts_path is not None:  # rewritten from the replay, then appended as alerts happen
        _rewrite_alerts(alerts_path, monitor)
    from ego_adr.stream.frames import WindowReader

    windows = WindowReader(sampler, video_path)
    log = log_path.open("a") if log_path is not None else None
    alog = alerts_path.open("a") if alerts_path is not None else None
    emit = _emitter(alog, on_alert)
    try:
        for t in times[len(ticks):] if end_rec is None else []:
            t0 = time.perf_counter()
            start = max(0.0, t - settings.window)
            observed, decode_s = _observe(monitor, windows, sampler, video_path, start, t, settings.frames,
                                          narrate_from)
            tick = monitor.update(t, (start, t), observed)
            seconds = round(time.perf_counter() - t0, 4)
            rec = {"t": t, "window": [start, t], "observed": observed, "seconds": seconds,
                   "decode_s": round(decode_s, 4)}
            if log is not None:
                _append(log, rec)
            for a in tick.alerts:
                emit(a)
            ticks.append({**tick.to_dict(), "seconds": seconds, "decode_s": rec["decode_s"]})
            if on_tick is not None:
                on_tick(tick)
        end = _end_check(monitor, seen_until, duration, end_rec, log, emit, alerts_path)
    finally:
        if log is not None:
            os.fsync(log.fileno())
            log.close()
        if alog is not None:
            alog.close()
    processing = sum(t["seconds"] for t in ticks)
    return {"episode_id": episode_id, "video": str(video_path), "task_id": task_id, "duration": duration,
            "watched_until": seen_until,
            "ticks": ticks, "end": end.to_dict(), "alerts": [a.to_dict() for a in monitor.alerts],
            "processing_s": round(processing, 4), "rtf": round(processing / duration, 6) if duration else None,
            "monitor": monitor.describe(), "settings": settings.__dict__}


def _replay(monitor, logged: list[dict], times: list[float], seen_until: float, duration: float,
            log_path: Path | None) -> tuple[list[dict], dict | None]:
    """Feed the logged ticks back through the monitor's pure update; returns the ticks and the logged end
    record (``None`` when the recording was not finished)."""
    ticks: list[dict] = []
    for k, rec in enumerate(logged):
        if rec.get("final") or rec["t"] > seen_until + 1e-9:  # a log that goes further than asked: stop there
            return ticks, (rec if rec.get("final") and seen_until >= duration else None)
        if k >= len(times) or abs(rec["t"] - times[k]) > 1e-6:
            raise ResumeMismatch(f"{log_path}: tick {k} at {rec.get('t')} s does not match this recording "
                                 f"and stride; delete the folder or choose another --out")
        tick = monitor.update(rec["t"], tuple(rec["window"]), rec["observed"])
        ticks.append({**tick.to_dict(), "seconds": rec.get("seconds", 0.0), "decode_s": rec.get("decode_s", 0.0),
                      "replayed": True})
    return ticks, None


def _observe(monitor, windows, sampler, video_path: str, start: float, t: float, frames: int,
             narrate_from) -> tuple[dict, float]:
    """The monitor's evidence for the window ``[start, t)`` and the seconds spent decoding it."""
    from ego_adr.video.sampler import VideoError

    if narrate_from is not None:
        text = narrate_from(start, t)
        return (monitor.observe_text(text) if text else {"failure": "no annotated segment in this window"}), 0.0
    if not getattr(monitor, "needs_frames", True):
        return monitor.observe(None), 0.0
    t0 = time.perf_counter()
    try:
        try:
            clip = windows.clip(start, t, frames)
        except VideoError:  # already the sampler's own verdict (it was the fallback): do not redo
            raise
        except Exception:  # noqa: BLE001 -- the sampler's own path, with its backend fallback
            clip = sampler.sample_clip(video_path, start, t, frames)
        decode_s = time.perf_counter() - t0
        return monitor.observe(clip), decode_s
    except Exception as e:  # noqa: BLE001 -- a window that cannot be decoded fails alone
        return {"failure": f"video: {type(e).__name__}: {e}"}, 0.0


def _emitter(alog, on_alert):
    def emit(a) -> None:
        if alog is not None:
            _append(alog, a.to_dict())
        if on_alert is not None:
            on_alert(a)

    return emit


def _rewrite_alerts(alerts_path: Path, monitor) -> None:
    alerts_path.write_text("".join(json.dumps(a.to_dict(), default=str) + "\n" for a in monitor.alerts))


def _end_check(monitor, seen_until: float, duration: float, end_rec: dict | None, log, emit, alerts_path):
    """The end-of-recording check (omissions), only when the watch reached the recording's end; a replayed
    end is recomputed from the state (pure) and its alerts are not announced again."""
    if seen_until < duration:
        from ego_adr.reasoning.online import Tick

        return Tick(seen_until, (seen_until, seen_until), 0.0, None)  # not the end yet: no end check
    end = monitor.finish(duration)
    if end_rec is None:
        if log is not None:
            _append(log, {"final": True, "t": duration})
        for a in end.alerts:
            emit(a)
    elif alerts_path is not None:
        _rewrite_alerts(alerts_path, monitor)
    return end


def reference_narrator(segments: list[dict]):
    """Diagnostic narration from the annotations: the text of the latest annotated segment that has begun by
    the window's end and overlaps the window (its error description when it has one, else its action text).
    It measures the stages after narration (localisation, progress, classification) with a perfect narrator;
    a segment's description covers the whole segment, so this diagnostic may know a little of the segment's
    remainder -- it is never the default and shows in the output folder name and run.json."""

    def narrate(start: float, t: float) -> str | None:
        live = [s for s in segments if s["start"] < t and s["end"] > start]
        if not live:
            return None
        s = max(live, key=lambda x: x["start"])
        return s.get("description") or s.get("action")

    return narrate


def format_alert(a) -> str:
    m, s = divmod(a.t, 60)
    step = f'step {a.step_index + 1} "{a.step}"' if a.step_index is not None else "no step"
    why = a.evidence.get("progress") or a.evidence.get("reason") or ""
    if not why and a.evidence.get("classifier"):
        why = "keywords " + ", ".join(
            ",".join(c.get("anomaly", []) + c.get("other", [])) or str(c.get("contrast") or c.get("object_mismatch"))
            for c in a.evidence["classifier"])
    tail = f" -- {why}" if why else ""
    return f"[{int(m):02d}:{s:04.1f}] ALERT {a.error_type} (p={a.prob:.2f}) at {step}{tail}"
