"""Ego-ADR online over whole recordings: the stream runner, episodes from annotations, evaluation, timeline.

The monitor itself lives in :mod:`ego_adr.reasoning.online`; ``python -m ego_adr.stream --help`` for the CLI;
:func:`watch` for the Python API.
"""

from __future__ import annotations


def watch(video: str, procedure: str, model=None, *, task_id: str = "task", mode: str = "auto",
          window: float = 8.0, stride: float = 4.0, frames: int = 8, threshold: float = 0.5,
          until: float | None = None, max_new_tokens: int = 256, cache_dir=None, on_alert=None) -> dict:
    """Watch ``video`` with Ego-ADR online and return ticks, alerts and timings (see
    :func:`ego_adr.stream.runner.stream_recording`). ``model``: any :class:`ego_adr.models.base.VLM`;
    ``until``: watch only the first seconds; ``on_alert(alert)`` is called as each alert is raised."""
    from ego_adr.reasoning.online import OnlineMonitor
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
    from ego_adr.stream.runner import StreamSettings, stream_recording
    from ego_adr.video.sampler import FrameSampler

    pipe = EgoADR(model, PipelineConfig(mode=mode, frames=frames, max_new_tokens=max_new_tokens), cache_dir=cache_dir)
    with FrameSampler() as sampler:
        return stream_recording(OnlineMonitor(pipe, threshold), video, task_id, procedure,
                                StreamSettings(window, stride, frames), sampler, on_alert=on_alert, until=until)
