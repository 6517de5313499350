"""The headline's choice on validation and when it is a tie (:mod:`ego_adr.captaincook4d.choice`), on constructed
validation rows: a clear winner is a choice, two monitors of (nearly) the same rows are a tie, and the goal
verdict of a tie follows the step streams' meaning of ``tie``."""

from __future__ import annotations

import numpy as np

from ego_adr.captaincook4d import choice as C
from ego_adr.captaincook4d import report as R


def _rows(labels, scores, flags=None):
    return [{"episode": f"r{i // 6}", "index": i % 6, "label": int(y), "p_error": float(p),
             "flagged": bool(f if flags is not None else p >= 0.5)}
            for i, (y, p, f) in enumerate(zip(labels, scores, flags if flags is not None else scores))]


def _labels(n=240, seed=0):
    return (np.random.default_rng(seed).random(n) < 0.25).astype(int)


def test_a_clear_winner_is_a_choice_every_resample_agrees_with():
    y = _labels()
    noise = np.random.default_rng(1).random(len(y))
    c = C.stability({"good": _rows(y, 0.8 * y + 0.2 * noise), "poor": _rows(y, noise)})
    assert (c["chosen"], c["tie"], c["between"], c["agree"]) == ("good", False, ["good"], 1.0)
    assert c["candidates"]["poor"]["objective"] < c["candidates"]["good"]["spread"][0]
    assert "**good**" in C.text(c)


def test_two_monitors_of_nearly_the_same_rows_are_a_tie_named_as_such():
    y = _labels()
    p = 0.4 * y + 0.6 * np.random.default_rng(2).random(len(y))  # overlapping scores: no perfect split
    q = p.copy()
    q[np.flatnonzero(y)[0]] = 0.0  # one positive missed: a margin no resample of recordings can trust
    c = C.stability({"a": _rows(y, p), "b": _rows(y, q), "c": _rows(y, np.random.default_rng(3).random(len(y)))})
    assert c["chosen"] == "a" and c["tie"] and c["between"] == ["a", "b"] and c["runner_up"] == "b"
    assert 0 < c["candidates"]["a"]["objective"] - c["candidates"]["b"]["objective"] < 0.01
    assert "**tie** between a, b" in C.text(c)
    again = C.stability({"a": _rows(y, p), "b": _rows(y, q), "c": _rows(y, np.random.default_rng(3).random(len(y)))})
    assert again == c  # seeds fixed in advance: the same verdict on every run


def test_a_monitor_without_a_threshold_is_judged_by_its_own_alarms():
    y = _labels()
    c = C.stability({"rule": _rows(y, np.zeros(len(y)), flags=y.astype(bool))}, fixed=["rule"])
    assert c["candidates"]["rule"]["objective"] == 1.0


def _summary(values, tie):
    res = [{"monitor": n, "group": g, "test": {"macro_f1": v}, "validation": {"objective": 0.5}}
           for n, g, v in values]
    return {"benchmark": "b", "results": res, "headline": values[1][0],
            "choice": {"tie": tie, "between": [values[1][0], values[2][0]]}}


def test_the_goal_verdict_of_a_tie_is_reached_only_when_every_monitor_of_the_tie_reaches_it():
    rule = ("flag-all", "blind", 0.50)
    both = R.goal(_summary([rule, ("a", "supervised", 0.70), ("b", "official graph", 0.65)], tie=True))
    assert (both["verdict"], both["reached"]) == ("reached", True)
    split = R.goal(_summary([rule, ("a", "supervised", 0.70), ("b", "official graph", 0.55)], tie=True))
    assert (split["verdict"], split["reached"]) == ("tie", False)
    assert "**tie**: the target lies between them" in R._verdict(split)
    alone = R.goal(_summary([rule, ("a", "supervised", 0.70), ("b", "official graph", 0.55)], tie=False))
    assert (alone["verdict"], alone["tie"]) == ("reached", None)
