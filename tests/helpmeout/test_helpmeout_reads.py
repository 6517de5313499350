"""Monitors honest about what they read: ``egoadr`` uses only the words, ``egoadr-online`` the episode's variant."""

import pytest

from ego_adr.helpmeout.generator.episodes import assign_splits, generate
from ego_adr.helpmeout.monitors import EpisodeContext, build_monitor, run_monitor
from ego_adr.helpmeout.monitors.base import CONFUSABLES, PROCEDURE, SIMULATOR, TASK_INPUT, TEMPLATE_NORMS
from ego_adr.helpmeout.monitors.registry import MONITORS, extra_reads, privileged
from ego_adr.helpmeout.world.templates import template_by_name


@pytest.fixture(scope="module")
def test_split():
    eps = generate(160, 5, progress=False)
    assign_splits(eps, 5, test_size=40)
    return [e for e in eps if e["split"] == "test"]


def test_word_monitors_read_only_the_task_input_and_the_procedure_text():
    for name in ("egoadr", "egoadr-deep", "egoadr-online"):
        assert set(MONITORS[name].reads) == set(TASK_INPUT) | {PROCEDURE}
        assert not privileged(MONITORS[name])
    knowledge = MONITORS["egoadr-knowledge"]
    assert privileged(knowledge) and {TEMPLATE_NORMS, CONFUSABLES, SIMULATOR} <= set(extra_reads(knowledge))


def test_egoadr_does_not_replay_a_non_executable_action():
    """The simulator is not its input: an impossible action is judged on its words, not its preconditions."""
    scene = (
        "(location countertop)",
        "(location toaster)",
        "(human-at countertop)",
        "(handempty)",
        "(ontop bread countertop)",
    )
    ctx = EpisodeContext("x", "making_toast_and_coffee", scene, ("toast",))
    words, knowing = build_monitor("egoadr"), build_monitor("egoadr-knowledge")
    impossible = "(human-toast bread toaster)"  # nothing is in the toaster, it is off
    for mon in (words, knowing):
        mon.reset(ctx)
    assert "not executable" in knowing.step(0, impossible).evidence.get("why", "")
    assert "not executable" not in words.step(0, impossible).evidence.get("why", "")


def test_egoadr_online_expects_only_the_variant_blocks(test_split):
    ep = next(
        e
        for e in test_split
        if e["correct"] and len(e["template_blocks"]) < len(template_by_name(e["task"]).blocks)
    )
    mon = build_monitor("egoadr-online")
    mon.reset(EpisodeContext(ep["id"], ep["task"], tuple(ep["initial_scene"]), tuple(ep["template_blocks"])))
    full = template_by_name(ep["task"])
    asked = [b.text for b in full.blocks if b.id in ep["template_blocks"]]
    others = [b.text for b in full.blocks if b.id not in ep["template_blocks"]]
    procedure = mon.monitor.procedure
    assert all(a.rstrip(". ") in procedure for a in asked)
    assert not any(o.rstrip(". ") in procedure for o in others)


def test_egoadr_catches_a_repeated_addition_from_the_history_alone(test_split):
    ep = next((e for e in test_split if e["primary_category"] == "perseveration"), None)
    if ep is None:
        pytest.skip("no perseveration episode in this small split")
    row = run_monitor(build_monitor("egoadr"), [ep], progress=False)[0]
    onset = ep["errors"][0]["onset"]
    assert row["categories"][onset] == "perseveration" and row["probs"][onset] >= 0.9
