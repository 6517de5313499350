"""The video stream's monitors, a registry of the monitoring layer (:mod:`ego_adr.monitoring.registry`).

``python -m ego_adr.monitoring evaluate --benchmark egoadr-stream --monitor NAME|a,b|all`` runs them (the former
``python -m ego_adr.stream --evaluate --baselines a,b`` always added ``egoadr``, and still does). What each reads:
the video windows watched so far and the procedure text are the task input (Ego-ADR online's setting: no pre-cut
clip, no step name); none of the three reads more, so none is privileged.
"""

from __future__ import annotations

from ego_adr.monitoring.registry import MonitorSpec, Registry

WINDOWS, PROCEDURE = "video windows so far", "procedure text"
STREAM_INPUT = (WINDOWS, PROCEDURE)

REGISTRY = Registry("egoadr-stream", STREAM_INPUT, (
    MonitorSpec("egoadr", "ego_adr.reasoning.online:OnlineMonitor",
                "Ego-ADR online: narrate each window, localise the step, track progress, classify", STREAM_INPUT,
                needs_model=True),
    MonitorSpec("random", "ego_adr.stream.baselines:RandomStreamMonitor",
                "uniform P(error) and type per window (HelpMeOut's Random row)", ()),
    MonitorSpec("direct", "ego_adr.stream.baselines:DirectStreamMonitor",
                "the one-pass direct prompt on every window, the same end check", STREAM_INPUT, needs_model=True),
))


def build_monitors(names: list[str], pipe, threshold: float, seed: int) -> dict:
    """name -> monitor, each given what its constructor takes of the pipeline, the threshold and the seed."""
    return {n: REGISTRY.build(n, pipe=pipe, threshold=threshold, seed=seed) for n in names}
