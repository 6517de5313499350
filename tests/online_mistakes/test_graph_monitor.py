"""The Ego-ADR graph monitor's progress logic on a hand-made procedure, where each answer is known by hand.

The procedure: 1 (unpack) always first, then 2 and 3 in either order, then 4 (assemble) once both are done, then
5 (inspect), sometimes 5 twice in a row (a second look), never again after anything else. Step 9 exists in the
taxonomy but in no correct recording.
"""

from __future__ import annotations

import json

from ego_adr.monitoring.monitor import run_episode
from ego_adr.online_mistakes.monitors.graph import CATEGORY, GraphMonitor, TaskGraph
from ego_adr.online_mistakes.types import StepContext, TrainingSet

SEQS = ((1, 2, 3, 4, 5),) * 4 + ((1, 3, 2, 4, 5),) * 4 + ((1, 2, 3, 4, 5, 5),) * 2
TAX = {i: f"step-{i}" for i in (1, 2, 3, 4, 5, 9)}
TRAIN = TrainingSet("toy-procedure", SEQS, TAX, tuple(f"rec{i}" for i in range(len(SEQS))))
STRICT = {"support": 2, "tau_skip": 1.0, "tau_order": 1.0, "tau_repeat": 1.0, "transitions": False}


def _run(mon, steps):
    return run_episode(mon, "v", StepContext("toy-procedure", "v", TAX), steps)


def _monitor(params=STRICT):
    mon = GraphMonitor(params=params)
    mon.fit(TRAIN)
    return mon


def test_the_graph_holds_the_procedure():
    g = TaskGraph.learn(SEQS)
    assert g.steps == {1, 2, 3, 4, 5}
    pre4 = dict(g.preconditions(4, support=2))
    assert pre4[1] == pre4[2] == pre4[3] == 1.0  # 1, 2 and 3 come before 4 in every recording
    assert dict(g.preconditions(3, support=2))[2] == 0.6  # 2 before 3 in 6 of 10: not a precondition at 1.0
    assert g.first[2, 4] / g.together[2, 4] == 1.0 and g.first[2, 3] / g.together[2, 3] == 0.6


def test_correct_recordings_raise_nothing():
    mon = _monitor()
    for s in ((1, 2, 3, 4, 5), (1, 3, 2, 4, 5), (1, 2, 3, 4, 5, 5)):
        outs = _run(mon, s)
        assert [o.flagged for o in outs] == [False] * len(s), s


def test_skipped_step():
    outs = _run(_monitor(), (1, 2, 4))  # 4 before its precondition 3
    assert [o.flagged for o in outs] == [False, False, True]
    assert outs[2].category == CATEGORY["skipped"] == "Omission"
    assert outs[2].evidence["checks"] == ["skipped"] and outs[2].evidence["skipped_step"] == "step-3"


def test_step_out_of_order():
    # 3 after 4: 3 comes before 4 in every recording with both. (4 itself skipped 3: flagged as skipped first)
    outs = _run(_monitor(), (1, 2, 4, 3))
    assert outs[3].flagged and "out-of-order" in outs[3].evidence["checks"]
    assert outs[3].category == "Wrong order" and outs[3].evidence["out-of-order_step"] == "step-4"


def test_repeated_step():
    outs = _run(_monitor(), (1, 2, 1))  # 1 again: no recording does 1 twice
    assert [o.flagged for o in outs] == [False, False, True]
    assert outs[2].evidence["checks"] == ["repeated"] and outs[2].category == "Unintended and unnecessary action"
    # 5 twice in a row is in the training recordings; 5 a third time is not
    outs = _run(_monitor(), (1, 2, 3, 4, 5, 5, 5))
    assert [o.flagged for o in outs][:6] == [False] * 6
    assert not outs[6].flagged  # consecutive repeats are the transition check's business, off here
    on = dict(STRICT, transitions=True)
    assert _run(_monitor(on), (1, 2, 3, 4, 5, 5, 5))[6].flagged is False  # 5 -> 5 is a seen transition


def test_unknown_step_and_unseen_transition():
    outs = _run(_monitor(), (1, 9))
    assert outs[1].flagged and outs[1].evidence["checks"] == ["unknown-step"]
    on = dict(STRICT, transitions=True, tau_skip=2.0)
    outs = _run(_monitor(on), (2,))  # no correct recording starts with 2
    assert outs[0].flagged and outs[0].evidence["checks"] == ["unseen-transition"] and outs[0].evidence["after"] == "START"


def test_thresholds_switch_checks_off():
    off = {"support": 2, "tau_skip": 2.0, "tau_order": 2.0, "tau_repeat": 2.0, "transitions": False}
    assert [o.flagged for o in _run(_monitor(off), (1, 2, 4, 3, 1))] == [False] * 5
    assert _run(_monitor(off), (1, 9))[1].flagged  # the unknown-step check is always on


def test_cross_validated_fit_records_its_selection():
    mon = GraphMonitor()
    mon.fit(TRAIN)
    sel = mon.selection
    json.dumps(sel)  # goes into metrics.json as it is
    assert set(sel["chosen"]) == set(STRICT) and sel["folds"] and sel["validation"]["episodes"] > 0
    assert sel["cv_score"]["objective"] == max(r["objective"] for r in sel["cv_top10"])
    outs = _run(mon, (1, 9))
    assert outs[1].flagged and outs[1].prob > outs[0].prob  # calibrated: an unknown step is likelier a mistake
    assert all(0.0 <= o.prob <= 1.0 for o in _run(mon, (1, 2, 1, 4, 3)))
