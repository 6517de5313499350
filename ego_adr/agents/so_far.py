""""What has gone wrong so far?" -- the white agent's streaming question about a recording up to a given time.

Wire format: the public open-ended message (``<video_path>``, ``<question>`` with ``Task Procedure: ...`` and
``Question: ...``, ``<start_ts>``, ``<end_ts>``) whose question asks what has gone wrong so far (see
:func:`is_so_far_question`); ``<end_ts>`` is the time up to which the recording may be watched (``-1``: all of
it). The agent runs Ego-ADR online (:class:`ego_adr.reasoning.online.OnlineMonitor`) over ``[0, end_ts]`` with
the default window and stride and never looks past ``end_ts``; the end-of-recording omission check runs only
when ``end_ts`` reaches the recording's end. The reply lists the alerts in time order (or says there are none),
and ``metadata["ego_adr"]["alerts"]`` carries them as data.
"""

from __future__ import annotations

import re

SO_FAR = re.compile(r"\b(what|anything)\b.*\b(gone|went|go)\s+wrong\b.*\bso far\b|\bso far\b.*\b(gone|went)\s+wrong\b"
                    r"|\b(mistakes?|errors?)\b.*\bso far\b", re.IGNORECASE | re.DOTALL)


def is_so_far_question(question: str | None) -> bool:
    """"What has gone wrong so far?", "Any mistakes so far?", "Which errors so far?" (case-insensitive)."""
    return bool(question) and bool(SO_FAR.search(question))


def answer_so_far(pipe, sampler, video_path: str, procedure: str, until: float | None, frames: int = 8,
                  window: float = 8.0, stride: float = 4.0) -> tuple[str, dict]:
    """Reply text and metadata for the recording watched up to ``until`` seconds (None: to its end)."""
    import hashlib

    from ego_adr.reasoning.online import Alert, OnlineMonitor
    from ego_adr.stream.runner import StreamSettings, format_alert, stream_recording

    task_id = "a2a-" + hashlib.sha256(procedure.encode()).hexdigest()[:12]
    res = stream_recording(OnlineMonitor(pipe), video_path, task_id, procedure,
                           StreamSettings(window, stride, frames), sampler, until=until)
    upto = res["watched_until"]
    alerts = res["alerts"]
    if alerts:
        lines = [f"Up to {upto:.1f} s, {len(alerts)} thing(s) went wrong:"]
        lines += [format_alert(Alert(**a)) for a in alerts]
    else:
        lines = [f"Up to {upto:.1f} s, nothing has gone wrong that the monitor could see."]
    meta = {"task": "stream-so-far", "status": "ok", "watched_until": upto, "duration": res["duration"],
            "alerts": alerts, "n_ticks": len(res["ticks"]), "processing_s": res["processing_s"],
            "monitor": res["monitor"]}
    return "\n".join(lines), meta


def run_so_far(agent, q, path) -> tuple[str, dict]:
    """The white agent's handler (runs on its model thread): reply text and its ``ego_adr`` metadata."""
    return answer_so_far(agent.pipe, agent.sampler, str(path), q.procedure, q.end, agent.frames)
