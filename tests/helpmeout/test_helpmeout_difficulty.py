"""How hard the release is: failed attempts the precondition check sees, varied timing, the detectability probe,
and the learned monitors' checkpoint selection on the validation split."""

import random

import pytest

from ego_adr.helpmeout.generator.difficulty import NgramProbe, detectability
from ego_adr.helpmeout.generator.episodes import validate_episode
from ego_adr.helpmeout.generator.generator_sites import SITES, Sites, apply_site
from ego_adr.helpmeout.generator.injection import program, realise
from ego_adr.helpmeout.monitors import build_monitor, run_monitor
from ego_adr.helpmeout.world.replay import replay
from ego_adr.helpmeout.world.templates import instantiate_scene, template_by_name
from ego_adr.helpmeout.world.trajectory_planner import plan, scene_state


@pytest.fixture(scope="module")
def coffee():
    t = template_by_name("making_toast_and_coffee")
    scene = instantiate_scene(t, random.Random(0), p_distractor=0.0)
    order = t.canonical_order()
    items = program(t, order)
    return t, scene, order, Sites(items, t, scene, order, set(), list(range(len(items))), 0)


def test_a_stir_can_come_before_any_of_the_additions(coffee):
    _t, _s, _o, sites = coffee
    stirs = [p for _k, p in SITES["sequence"](sites, "sequence") if p[0] == "stir"]
    assert sorted(p[3] for p in stirs) == list(range(stirs[0][4]))  # before addition 1, 2, ..., n


def test_stirring_the_empty_mug_is_a_failed_attempt_that_only_the_onset_may_be(coffee):
    t, scene, _o, sites = coffee
    first = next(p for _k, p in SITES["sequence"](sites, "sequence") if p[0] == "stir" and p[3] == 0)
    items, rec = apply_site(sites, "sequence", first)
    state = scene_state(scene)
    real = realise(t, state, items)
    assert len(real.failed) == 1 and real.steps[real.failed[0]].action[0] == "human-stir"
    actions = [s.action for s in real.steps]
    assert not replay(state, actions).ok  # the strict replay sees the broken precondition
    assert replay(state, actions, may_fail=real.failed).ok  # as the labelled onset it is a failed attempt
    assert "addition 1 of" in rec.detail


def test_validation_accepts_a_failed_attempt_only_at_an_error_onset(coffee):
    t, scene, order, sites = coffee
    first = next(p for _k, p in SITES["sequence"](sites, "sequence") if p[0] == "stir" and p[3] == 0)
    items, _rec = apply_site(sites, "sequence", first)
    state = scene_state(scene)
    real = realise(t, state, items)
    ref = [s.text for s in plan(t, scene, order)] + ["(task-end)"]
    obs = [s.text for s in real.steps] + ["(task-end)"]
    onset = real.failed[0]
    ep = {"initial_scene": state.facts()}
    ep.update(
        {
            "goal": [],
            "reference": ref,
            "observed": obs,
            "correct": False,
            "labels": [int(i == onset) for i in range(len(obs))],
            "errors": [{"category": "sequence", "onset": onset}],
        }
    )
    assert validate_episode(ep) == []
    row = run_monitor(build_monitor("precondition"), [{**ep, "id": "x", "task": t.name}], progress=False)[0]
    assert row["probs"][onset] == 1.0  # the precondition check fires on target
    ep["errors"] = [{"category": "sequence", "onset": onset + 1}]
    ep["labels"] = [int(i == onset + 1) for i in range(len(obs))]
    assert any("invalid" in p for p in validate_episode(ep))


def _ep(task, actions, bad):
    obs = list(actions) + ["(task-end)"]
    return {
        "task": task,
        "observed": obs,
        "labels": [int(i == bad) for i in range(len(obs))],
        "errors": [{"category": "sequence", "onset": bad}] if bad is not None else [],
        "primary_category": "sequence" if bad is not None else None,
    }


def test_the_probe_finds_a_stereotyped_error_and_not_a_varied_one():
    ok = ["(human-move a b)", "(human-stir mug spoon b)", "(human-move b a)"]
    odd = ["(human-move a b)", "(human-fold towel b)", "(human-move b a)"]
    train = [_ep("t", ok, None) for _ in range(20)] + [_ep("t", odd, 1) for _ in range(20)]
    test = [_ep("t", ok, None) for _ in range(5)] + [_ep("t", odd, 1) for _ in range(5)]
    assert detectability(train, test, n=2)["sequence"]["ngram_AUPRC"] == pytest.approx(1.0)
    # the same error at a step whose context never differs from a correct one: the probe cannot rank the error
    # stirs above the correct stirs, so its AUPRC is the error share among those steps (half of them)
    same = [_ep("t", ok, 1) for _ in range(5)]
    rows = detectability(
        [_ep("t", ok, None) for _ in range(20)] + [_ep("t", ok, 1) for _ in range(20)],
        [_ep("t", ok, None) for _ in range(5)] + same,
        n=2,
    )
    assert rows["sequence"]["ngram_AUPRC"] == pytest.approx(0.5)
    assert NgramProbe(2).fit(train).scores(test[-1])[1] == pytest.approx(1.0)


@pytest.mark.slow
def test_learned_monitor_keeps_the_best_validation_epoch():
    from ego_adr.helpmeout.generator.episodes import assign_splits, generate

    eps = generate(80, 3, progress=False)
    assign_splits(eps, 3, test_size=20)
    train = [e for e in eps if e["split"] == "train"]
    val = [e for e in eps if e["split"] != "train"][:20]
    mon = build_monitor("seq2seq", epochs=4, patience=1, hidden=8)
    mon.fit(train, val=val)
    r = mon.recipe
    assert r["selection"] == "lowest validation loss" and 1 <= r["best_epoch"] <= r["epochs_run"] <= 4
    assert r["val_loss"][r["best_epoch"] - 1] == min(r["val_loss"])


def test_how_hard_table_puts_each_paper_row_beside_ours(tmp_path):
    import json

    from ego_adr.helpmeout.evaluation.paper_results import PAPER, how_hard_table

    m = {
        "monitor": "sgt",
        "privileged": False,
        "M1": 0.7,
        "M2": {"all": 0.5, "end": 0.8, "mid": 0.3},
        "M3": {"missed": 0.2, "early": 0.1, "on_target": 0.6, "false_alarm": 0.3},
        "M4": {"macro": 0.4},
        "by_complexity": {"simple": {"M1": 0.9, "M2_mid": 0.5}},
    }
    (tmp_path / "sgt").mkdir()
    (tmp_path / "sgt" / "metrics.json").write_text(json.dumps(m))
    text = how_hard_table(tmp_path)
    paper_row = next(line for line in text.splitlines() if line.startswith("| sgt | paper |"))
    assert f"{PAPER['sgt']['M1']:.3f}" in paper_row and "| – |" in paper_row  # SGT's M4 did not survive
    assert "|  | ours | 0.700 | 0.500 | 0.800 | 0.300 | 0.200 | 0.100 | 0.600 | 0.300 | 0.400 |" in text
    assert "| sgt | paper | 0.844 | 0.690 |" in text and "|  | ours | 0.900 | 0.500 | – | – | – | – |" in text


def test_oneclass_table_puts_each_family_trained_both_ways_beside_the_paper(tmp_path):
    import json

    from ego_adr.helpmeout.evaluation.paper_results import oneclass_table

    def write(name, m1, recipe=None):
        m = {"monitor": name, "privileged": False, "M1": m1, "M2": {"all": 0.25, "end": 0.5, "mid": 0.125},
             "M3": {"missed": 0.1, "early": 0.5, "on_target": 0.25, "false_alarm": 0.375}, "M4": {"macro": 0.0},
             "by_complexity": {"simple": {"M1": 0.55}, "medium": {"M1": 0.7}, "complex": {"M1": 0.75}}}
        if recipe:
            m["training_recipe"] = recipe
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(json.dumps(m))

    write("seq2seq", 0.6)
    write("seq2seq-oneclass", 0.65, {"chosen": {"hidden": 64, "epochs": 6, "heldout_nll": 0.9, "score": "margin"}})
    lines = oneclass_table(tmp_path).splitlines()
    rows = [x for x in lines if x.startswith("| seq2seq")]
    # the paper's supervised Seq2Seq (Table 2 / 13 / 15, Table 14's M1 by complexity), then ours both ways
    assert rows[0] == ("| seq2seq | paper (supervised) | 0.496 | 0.376 | 0.656 | 0.132 | 0.990 | 0.000 | 0.100 "
                       "| 0.614 / 0.498 / 0.349 | |")
    assert rows[1].startswith("| seq2seq | ours, supervised | 0.600 | 0.250 | 0.500 | 0.125 | 0.100 | 0.250 | "
                              "0.375 | 0.550 / 0.700 / 0.750 |")
    assert rows[2].startswith("| seq2seq-oneclass | ours, one-class | 0.650 |")
    assert rows[2].endswith("| hidden 64, epochs 6, score margin |")  # the chosen recipe, not the NLL
    assert not any(x.startswith(("| seq2seq-sg |", "| sgt |")) and "ours" in x for x in lines)  # no folder: no row
