"""Monitor registry: ``evaluate --monitor NAME`` builds one of these."""

from __future__ import annotations

from collections.abc import Callable

from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput, run_monitor

MONITORS = ("random", "cusum", "precondition", "replanner", "learned", "egoadr", "egoadr-deep")


def build_monitor(name: str, **kw) -> Monitor:
    """``kw`` is passed to the monitor's constructor (seed, budget_s, cache_dir, model, templates_dir, ...)."""
    from ego_adr.helpmeout.monitors import baselines, egoadr_stream, learned

    table: dict[str, Callable[..., Monitor]] = {
        "random": baselines.RandomMonitor,
        "cusum": baselines.CusumMonitor,
        "precondition": baselines.PreconditionMonitor,
        "replanner": baselines.ReplannerMonitor,
        "learned": learned.LearnedMonitor,
        "egoadr": egoadr_stream.EgoADRStreamMonitor,
        "egoadr-deep": egoadr_stream.EgoADRStreamMonitor,
    }
    if name not in table:
        raise ValueError(f"unknown monitor {name!r}; choose one of {', '.join(MONITORS)}")
    factory = table[name]
    import inspect

    params = inspect.signature(factory).parameters
    if name == "egoadr-deep":
        kw["mode"] = "deep"
    return factory(**{k: v for k, v in kw.items() if k in params})


__all__ = ["EpisodeContext", "Monitor", "StepOutput", "run_monitor", "build_monitor", "MONITORS"]
