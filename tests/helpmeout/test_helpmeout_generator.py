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


def test_table8_defaults_and_targets():
    c = GeneratorConfig()
    assert (c.goal_salience, c.activation_decay, c.commission_prob, c.omit_threshold, c.activation_noise_std,
            c.min_length) == (0.48, 0.20, 0.12, 0.30, 0.10, 10)
    t = target_shares()
    assert len(t) == 9 and abs(sum(t.values()) - 1) < 1e-9
    assert t["omission"] == 0.44 and abs(t["sequence"] - 0.56 * 0.22) < 1e-9


def test_every_episode_replays_and_correct_ones_reach_the_goal(episodes):
    bad = {ep["id"]: validate_episode(ep) for ep in episodes}
    assert not {k: v for k, v in bad.items() if v}
    for ep in episodes:
        assert len(ep["observed"]) - 1 >= 10  # Table 8: minimum trajectory length
        if ep["correct"]:
            assert ep["observed"] == ep["reference"] and sum(ep["labels"]) == 0


def test_categories_onsets_and_shares(episodes):
    stats = release_stats(episodes)
    assert set(stats["category_counts"]) == set(CATEGORIES)
    assert all(stats["category_counts"][c] > 0 for c in CATEGORIES)
    assert stats["max_share_gap_pp"] <= 3.0
    for ep in episodes:
        end = len(ep["observed"]) - 1
        for e in ep["errors"]:
            assert ep["labels"][e["onset"]] == 1
            if e["category"] == "omission":
                assert e["onset"] == end
            else:
                assert e["onset"] < end
        if not ep["correct"]:
            assert ep["observed"] != ep["reference"]


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
