"""Streaming monitors; the registry (:mod:`.registry`) says what each reads and whether it is privileged."""

from __future__ import annotations

from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput, run_monitor
from ego_adr.helpmeout.monitors.registry import MONITORS, MonitorSpec, build_monitor, monitor_help

__all__ = ["EpisodeContext", "Monitor", "StepOutput", "run_monitor", "build_monitor", "MONITORS", "MonitorSpec",
           "monitor_help"]
