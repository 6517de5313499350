"""The CaptainCook4D monitors: the procedure monitor's checks on a small graph and on the real recipes (it alarms
where the benchmark places each omission), the reference rules, the supervised monitor, the learned graph's mask,
and the evaluation's choices made without the test split."""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import evaluate as E
from ego_adr.captaincook4d import graphs as G
from ego_adr.captaincook4d import monitors as M
from ego_adr.monitoring.monitor import run_episode
from ego_adr.monitoring.per_step import schema_errors
from ego_adr.online_mistakes.types import StepContext


def _graph():
    # START -> 1 -> 2 -> 3 -> END, START -> 4 -> END (step ids 101 .. 104)
    text = {0: "START", 1: "s1", 2: "s2", 3: "s3", 4: "s4", 9: "END"}
    return G.parse({"steps": {str(k): v for k, v in text.items()},
                    "edges": [[0, 1], [1, 2], [2, 3], [3, 9], [0, 4], [4, 9]]}, "g.json", "r",
                   {f"s{i}": 100 + i for i in range(1, 5)})


def _run(monitor, steps, recipe="r"):
    return run_episode(monitor, "e", StepContext("captaincook4d-complete", f"captaincook4d-x_1-{recipe}", {}),
                       iter(steps))


def _train(**kw) -> B.Training:
    return B.Training("captaincook4d-complete", ((101, 102, 103, 104, B.END_ID),), {}, graphs={"r": _graph()}, **kw)


def test_the_procedure_monitor_alarms_early_late_and_at_the_end_each_omission_once():
    mon = M.Procedure("official", "early,late,end")
    mon.fit(_train())
    # 1, 3 (2 skipped: early), 2 (after 3, which needs it: late), END (4 never done: omission)
    outs = _run(mon, [101, 103, 102, B.END_ID])
    assert [o.flagged for o in outs] == [False, True, True, True]
    assert [o.category for o in outs[1:]] == ["order: before a step it needs", "order: after a step that needs it",
                                             "omission"]
    assert outs[1].evidence["missing_before"] == ["s2"] and outs[3].evidence["missing_before"] == ["s4"]
    # 1, 3 (2 missing, known from here on), END: 2 was reported at 3, only 4 is new at the end
    outs = _run(mon, [101, 103, 104, B.END_ID])
    assert outs[3].evidence["missing_before"] == [] and not outs[3].flagged
    mon = M.Procedure("official", "late")
    mon.fit(_train())
    assert [o.flagged for o in _run(mon, [101, 103, 102, B.END_ID])] == [False, False, True, False]


def test_on_the_real_recipes_every_omission_is_alarmed_where_the_benchmark_places_it(cc4d_root):
    data = B.load(cc4d_root, "captaincook4d-complete")
    mon = M.Procedure("official", "early,end")
    mon.fit(data.train)
    placed = 0
    for rec in data.test.recordings:
        outs = _run(mon, rec.steps, rec.recipe)
        for _, row in rec.skipped:
            assert outs[row].flagged, (rec.recording, row, rec.skipped)
            placed += 1
    assert placed == sum(len(r.skipped) for r in data.test.recordings) > 0


def test_the_reference_rules_are_the_step_streams_own_from_their_registry():
    from ego_adr.captaincook4d.registry import REGISTRY
    from ego_adr.online_mistakes.monitors import reference

    train = _train()
    step, trans = REGISTRY.build("unseen-step"), REGISTRY.build("one-step-memory")
    assert (type(step), type(trans)) == (reference.UnseenStep, reference.UnseenTransition)
    step.fit(train)
    trans.fit(train)
    assert [o.flagged for o in _run(step, [101, 105, B.END_ID])] == [False, True, False]
    assert [o.flagged for o in _run(trans, [101, 102, 104, B.END_ID])] == [False, False, True, False]
    assert _run(trans, [102])[0].flagged  # the first step after the start: (start, 102) never seen


def test_the_supervised_monitor_learns_from_the_training_labels(cc4d_root):
    from ego_adr.monitoring.ranking import auroc

    data = B.load(cc4d_root, "captaincook4d-complete")
    mon = M.Supervised()
    mon.fit(data.train)
    y, p = [], []
    for rec in data.train.labelled:
        y += list(rec.labels)
        p += [o.prob for o in _run(mon, rec.steps, rec.recipe)]
    assert all(0.0 <= x <= 1.0 for x in p) and auroc(np.array(y, bool), np.array(p)) > 0.75


def test_a_step_no_training_recording_of_its_recipe_holds_has_no_node_in_the_learned_graph(cc4d_root):
    data = B.load(cc4d_root, "captaincook4d-complete")
    keep = [i for i, r in enumerate(data.train.recipes) if r == "coffee"]
    seqs = tuple(tuple(s for s in data.train.sequences[i] if s != 60) for i in keep)  # 60: a coffee step, removed
    train = dataclasses.replace(data.train, sequences=seqs, recipes=("coffee",) * len(seqs),
                                recipe_steps={"coffee": data.train.recipe_steps["coffee"]})
    assert 60 in train.recipe_steps["coffee"]
    g = M.learned_graphs(train)["coffee"]
    assert g.node(60) is None and all(g.node(s) is not None for s in train.recipe_steps["coffee"] if s != 60)
    mon = M.Procedure("learned", "early")
    mon.fit(train)
    assert _run(mon, [60], "coffee")[0].category == "unknown step"


def test_the_evaluation_chooses_nothing_on_the_test_split(cc4d_root):
    data = B.load(cc4d_root, "captaincook4d-complete")
    rng = random.Random(0)
    shuffled = tuple(dataclasses.replace(r, labels=tuple(rng.sample(r.labels, len(r.labels))))
                     for r in data.test.recordings)
    other = dataclasses.replace(data, test=dataclasses.replace(data.test, recordings=shuffled))
    only = ["flag-all", "never-alarm", "unseen-transition", "procedure-official", "supervised"]
    got = [E.run_one(n, [data, other]) for n in only]
    a, b = [g[0] for g in got], [g[1] for g in got]
    assert E.headline(a) == E.headline(b) in ("procedure-official", "supervised")
    for x, y in zip(a, b):
        assert (x["options"], x["validation"]) == (y["options"], y["validation"])
        assert x["test"] != y["test"] or x["monitor"] in ("flag-all", "never-alarm")
    for r in a:
        assert not [e for row in r["rows"][:50] for e in schema_errors(row)]
