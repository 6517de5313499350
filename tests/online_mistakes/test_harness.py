"""The harness feeds a monitor one step at a time and never a later one: a monitor double records what it was
given and when, against a recording that logs when each step is handed out."""

from __future__ import annotations

import dataclasses

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.online_mistakes.data.cut import Recording, Stream
from ego_adr.online_mistakes.fitting import feed
from ego_adr.online_mistakes.types import StepContext, TrainingSet

EVENTS: list[tuple] = []


class LoggedSteps(tuple):
    """A recording's steps that log each one as it is handed out."""

    def __iter__(self):
        for t, s in enumerate(tuple.__iter__(self)):
            EVENTS.append(("handed", t))
            yield s


class RecordingMonitorDouble(Monitor):
    """Records every call: what the context held and which step it got when."""

    def __init__(self):
        self.seen: list = []

    def reset(self, ctx):
        self.ctx = ctx
        self.seen.append(("reset", ctx.video))

    def step(self, t, step_id):
        EVENTS.append(("answered", t))
        self.seen.append((t, step_id))
        return StepOutput(0.9 if step_id == 3 else 0.1)  # no flag of its own: the harness's p >= 0.5 decides


def test_the_monitor_gets_one_step_at_a_time_and_never_a_later_one():
    EVENTS.clear()
    train = TrainingSet("toy", ((1, 2),), {1: "a", 2: "b", 3: "c"})
    stream = Stream("toy", "s", "-", "-", (Recording("v1", LoggedSteps((1, 2, 3))), Recording("v2", LoggedSteps((3,)))))
    mon = RecordingMonitorDouble()
    rows = feed(mon, train, stream)
    assert mon.seen == [("reset", "v1"), (0, 1), (1, 2), (2, 3), ("reset", "v2"), (0, 3)]
    # step t is handed out only after the monitor answered t - 1
    assert EVENTS == [("handed", 0), ("answered", 0), ("handed", 1), ("answered", 1), ("handed", 2),
                      ("answered", 2), ("handed", 0), ("answered", 0)]
    # what a monitor learns of a recording before its first step: its name and the taxonomy, no step
    assert [f.name for f in dataclasses.fields(StepContext)] == ["benchmark", "video", "taxonomy"]
    assert isinstance(mon.ctx, StepContext) and mon.ctx.video == "v2"
    assert [(r["episode"], r["index"], r["label"], r["flagged"]) for r in rows] == [
        ("v1", 0, 0, False), ("v1", 1, 0, False), ("v1", 2, 1, True), ("v2", 0, 1, True)]


def test_every_registered_monitor_builds_and_answers_every_step():
    """A typo in a spec (factory string, constructor argument) fails here, not for the first user who picks it."""
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.online_mistakes.registry import REGISTRY

    seqs = ((1, 2, 3, 4), (1, 3, 2, 4), (1, 2, 3, 4), (2, 1, 3, 4), (1, 2, 4), (1, 2, 3, 4))
    train = TrainingSet("toy", seqs, {i: f"step {i}" for i in range(1, 6)}, tuple(f"v{i}" for i in range(6)))
    stream = Stream("toy", "s", "-", "-", (Recording("t1", (1, 2, 5)), Recording("t2", (2, 4))))
    for spec in REGISTRY:
        mon = REGISTRY.build(spec.name, model=ScriptedModelDouble(answer=" 2"))
        assert mon.name == spec.name and mon.reads == spec.reads and spec.description
        mon.fit(train)
        rows = feed(mon, train, stream)
        assert [r["episode"] for r in rows] == ["t1"] * 3 + ["t2"] * 2
        assert all(0.0 <= r["p_error"] <= 1.0 and isinstance(r["flagged"], bool) for r in rows)
        assert isinstance(getattr(mon, "selection", None), dict), spec.name
