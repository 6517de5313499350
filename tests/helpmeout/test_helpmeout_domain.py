"""HelpMeOut domain: hierarchy sizes, operators, planner correctness and the replay validator."""

import random

import pytest

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import goal_unmet, parse_action, state_from_facts
from ego_adr.helpmeout.world.operators import OPERATORS, check_action
from ego_adr.helpmeout.world.replay import replay
from ego_adr.helpmeout.world.templates import FAMILIES, instantiate_scene, load_templates
from ego_adr.helpmeout.world.trajectory_planner import plan, scene_state


def test_hierarchy_matches_table5_counts():
    c = onto.counts()
    assert c == {"location": 31, "receptacle": 31, "food": 49, "tool": 31, "thing": 45}
    assert len(onto.MOVABLE_TYPES) == 156


def test_38_operators_with_preconditions():
    assert len(OPERATORS) == 38
    st = state_from_facts(["(location countertop)", "(location cabinet)", "(human-at countertop)",
                           "(inside mug cabinet)"])
    # the cabinet is closed: the mug cannot be taken out before opening it
    assert check_action(st, parse_action("(human-move countertop cabinet)")) is None
    res = replay(st, ["(human-move countertop cabinet)", "(human-pick-up-at-location mug cabinet)"])
    assert not res.ok and res.failed_at == 1
    res = replay(st, ["(human-move countertop cabinet)", "(human-open-location cabinet)",
                      "(human-pick-up-at-location mug cabinet)"])
    assert res.ok and res.state.holding == "mug"
    assert check_action(st, ("human-fly", "mug")) is not None


def test_templates_cover_eight_families_and_plan_to_goal():
    ts = load_templates()
    assert len(ts) >= 30
    assert {t.family for t in ts} == set(FAMILIES)
    rng = random.Random(1)
    for t in ts:
        scene = instantiate_scene(t, rng)
        steps = plan(t, scene, t.random_order(rng))
        res = replay(scene_state(scene), [s.action for s in steps])
        assert res.ok, (t.name, res.reason)
        assert goal_unmet(res.state, t.goal) == [], t.name


def test_block_order_is_randomised_within_the_partial_order():
    t = next(t for t in load_templates() if t.name == "making_toast_and_coffee")
    orders = {t.random_order(random.Random(s)) for s in range(40)}
    assert len(orders) > 1
    for o in orders:
        assert o.index("boil_water") < o.index("coffee") < o.index("serve")


def test_replay_rejects_a_broken_trajectory():
    t = next(t for t in load_templates() if t.name == "making_instant_coffee")
    scene = instantiate_scene(t, random.Random(0))
    steps = [s.action for s in plan(t, scene)]
    broken = steps[:3] + steps[4:]  # drop one action from the middle
    assert not replay(scene_state(scene), broken).ok


@pytest.mark.parametrize("name", ["sugar", "spoon", "refrigerator"])
def test_confusables_exist(name):
    assert onto.confusables(name)
