"""HelpMeOut generator and episode files: validity, categories, onsets, shares, determinism."""

import json

import pytest

from ego_adr.helpmeout.cli import main
from ego_adr.helpmeout.generator.episodes import assign_splits, generate, release_stats, validate_episode
from ego_adr.helpmeout.generator.goal_control import CATEGORIES, GeneratorConfig, target_shares


@pytest.fixture(scope="module")
def episodes():
    eps = generate(400, 7, progress=False)
    assign_splits(eps, 7)
    return eps


def test_table8_goal_control_behaves_as_the_paper_says():
    """Table 8 through the model's behaviour, not its constants: block k of K gets activation
    0.48 - 0.20 k/K + N(0, 0.10); omissions try lapses (below 0.30) first, lowest first; a second error needs a
    lapse-prone profile and then fires with the commission probability 0.12 (checked over many draws, each
    within four standard errors)."""
    import random

    import numpy as np

    from ego_adr.helpmeout.generator.goal_control import GoalControlModel

    model, rng, k_blocks, n = GoalControlModel(GeneratorConfig()), random.Random(0), 5, 20000
    acts = np.array([model.activations(k_blocks, rng) for _ in range(n)])
    for k in range(k_blocks):
        assert abs(acts[:, k].mean() - (0.48 - 0.20 * k / k_blocks)) < 4 * 0.10 / np.sqrt(n)
        assert abs(acts[:, k].std() - 0.10) < 4 * 0.10 / np.sqrt(2 * n)
    act = [0.5, 0.25, 0.4, 0.1, 0.31]
    assert model.omission_order(act) == [3, 1, 4, 2, 0]
    assert not any(model.second_error([0.31, 0.5], rng) for _ in range(2000))  # no lapse, no second error
    fired = np.mean([model.second_error([0.29, 0.5], rng) for _ in range(n)])
    assert abs(fired - 0.12) < 4 * np.sqrt(0.12 * 0.88 / n)
    # Table 4: omission 0.44 of all errors; of the commission share 0.56, sequence 0.22, object substitution
    # 0.17, perseveration 0.15 (the paper's three named weights)
    t = target_shares()
    assert t["omission"] == pytest.approx(0.44) and sum(t.values()) == pytest.approx(1.0)
    for c, w in (("sequence", 0.22), ("object_substitution", 0.17), ("perseveration", 0.15)):
        assert t[c] == pytest.approx(0.56 * w)


def test_every_episode_replays_and_correct_ones_reach_the_goal(episodes):
    bad = {ep["id"]: validate_episode(ep) for ep in episodes}
    assert not {k: v for k, v in bad.items() if v}
    for ep in episodes:
        assert len(ep["observed"]) - 1 >= 10  # Table 8: minimum trajectory length
        if ep["correct"]:
            assert ep["observed"] == ep["reference"] and sum(ep["labels"]) == 0


def _first_divergence(a: list[str], b: list[str]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def test_realised_onsets_follow_the_onset_rules(episodes):
    """What quota planning does not guarantee: where each error's label lands on the realised trajectory,
    checked against the observed and reference trajectories alone (Section A.5's rules as docs/helpmeout.md
    states them)."""
    from ego_adr.helpmeout.world.domain import parse_action

    stats = release_stats(episodes)
    assert all(stats["category_counts"][c] > 0 for c in CATEGORIES)
    seen = set()
    for ep in episodes:
        obs, ref = ep["observed"], ep["reference"]
        end, d = len(obs) - 1, _first_divergence(obs, ref)
        if not ep["correct"]:
            assert obs != ref and ep["first_onset"] == min(e["onset"] for e in ep["errors"])
        for e in ep["errors"]:
            c, on = e["category"], e["onset"]
            assert ep["labels"][on] == 1
            seen.add(c)
            if c == "omission":  # confirmed at the task end; a block is missing from the trajectory
                assert on == end
                if len(ep["errors"]) == 1:
                    assert len(obs) < len(ref)
                continue
            assert on < end
            if len(ep["errors"]) > 1:
                continue
            if c == "action_addition":  # its first added step: the person did exactly the reference until then
                assert obs[:on] == ref[:on]
            else:  # never labelled where the person still did exactly the reference
                assert d <= on
            if c in ("sequence", "anticipation"):  # the key action, done before its planned place
                assert obs[on] in ref[on + 1:]
            if c == "perseveration":  # the repeated addition: the same operator on the same objects before
                assert any(parse_action(x)[:3] == parse_action(obs[on])[:3] for x in obs[:on])
    assert seen == set(CATEGORIES)


def test_first_errors_are_the_planned_quotas_and_later_errors_are_counted_apart(episodes):
    """Figure 7's shares are over all injected errors; an episode's first error has its planned category (exact
    largest-remainder quotas of Table 4's shares, computed here), later errors are the goal-control model's."""
    stats = release_stats(episodes)
    errorful = [ep for ep in episodes if not ep["correct"]]
    shares = target_shares()
    raw = {c: shares[c] * len(errorful) for c in CATEGORIES}
    quota = {c: int(raw[c]) for c in CATEGORIES}
    for c in sorted(CATEGORIES, key=lambda c: -(raw[c] - quota[c]))[: len(errorful) - sum(quota.values())]:
        quota[c] += 1
    assert stats["first_error_counts"] == quota
    later = {c: sum(e["category"] == c for ep in errorful for e in ep["errors"][1:]) for c in CATEGORIES}
    assert stats["later_error_counts"] == later
    assert sum(later.values()) == sum(len(ep["errors"]) - 1 for ep in errorful) > 0
    assert all(stats["first_error_counts"][c] + later[c] == stats["category_counts"][c] for c in CATEGORIES)


def test_substitution_onset_touches_the_wrong_thing(episodes):
    subs = [(ep, e) for ep in episodes for e in ep["errors"] if e["category"] in ("tool_substitution",
                                                                                   "object_substitution")]
    assert subs
    for ep, e in subs:
        wrong = e["detail"].split(" instead of ")[0]
        assert wrong in ep["observed"][e["onset"]]


def test_cli_generate_is_deterministic_and_validate_flags_bad_files(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["generate", "--episodes", "60", "--seed", "3", "--out", str(a), "--quiet"]) == 0
    assert main(["generate", "--episodes", "60", "--seed", "3", "--out", str(b), "--quiet", "--workers", "2"]) == 0
    for f in ("train.jsonl", "val.jsonl", "test.jsonl", "stats.json"):
        assert (a / f).read_bytes() == (b / f).read_bytes()
    stats = json.loads((a / "stats.json").read_text())
    assert "category_shares" in stats and "target_shares" in stats
    assert main(["validate", str(a / "train.jsonl"), str(a / "test.jsonl")]) == 0
    rows = [json.loads(x) for x in (a / "train.jsonl").read_text().splitlines()]
    rows[0]["observed"] = rows[0]["observed"][:2] + rows[0]["observed"][3:]
    rows[0]["labels"] = rows[0]["labels"][:-1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["validate", str(bad)]) == 1
