"""HelpMeOut's one-class monitors (``*-oneclass``): trained on correct sequences only, they find actions that do
not fit the procedure, their training never sees an error step, and ``evaluate`` records their recipe."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ego_adr.helpmeout.cli import main as cli
from ego_adr.helpmeout.monitors.base import run_monitor
from ego_adr.helpmeout.monitors.learned_oneclass import OneClassMonitor
from ego_adr.helpmeout.monitors.registry import MONITORS, build_monitor, privileged

# a deterministic grammar: each task is one fixed order of actions (operators and objects of the domain's kind)
GRAMMAR = {
    "cut_a_banana": ["(human-move countertop drawer)", "(human-open-location drawer)",
                     "(human-pick-up-at-location knife drawer)", "(human-close-location drawer)",
                     "(human-move drawer table)", "(human-peel banana knife table)",
                     "(human-slice banana knife table)", "(task-end)"],
    "wash_a_mug": ["(human-move countertop cabinet)", "(human-open-location cabinet)",
                   "(human-pick-up-at-location mug cabinet)", "(human-close-location cabinet)",
                   "(human-move cabinet sink)", "(human-wash mug sink)", "(human-put-ontop-location mug sink)",
                   "(task-end)"],
}


def _ep(i: int, task: str, observed: list[str], onset: int | None = None) -> dict:
    labels = [int(t == onset) for t in range(len(observed))]
    return {"id": f"ep-{i}", "task": task, "observed": observed, "labels": labels, "correct": onset is None,
            "first_onset": onset, "initial_scene": [], "template_blocks": None}


def _correct(n: int, start: int = 0) -> list[dict]:
    tasks = sorted(GRAMMAR)
    return [_ep(start + i, tasks[i % 2], list(GRAMMAR[tasks[i % 2]])) for i in range(n)]


def _errorful(start: int = 1000) -> list[dict]:
    banana, mug = GRAMMAR["cut_a_banana"], GRAMMAR["wash_a_mug"]
    # substitution by an action the training has seen (in the other task): the model, not the unknown-token rule
    sub = banana[:5] + [mug[5]] + banana[6:]
    swap = mug[:2] + [mug[3], mug[2]] + mug[4:]  # closed before picking up: out of order
    return [_ep(start, "cut_a_banana", sub, 5), _ep(start + 1, "wash_a_mug", swap, 2)]


def _state(mon: OneClassMonitor) -> list[np.ndarray]:
    return [v.numpy().copy() for v in mon.model.net.state_dict().values()]


@pytest.mark.parametrize("arch", ["seq2seq", "sgt"])
def test_an_action_that_does_not_fit_the_procedure_scores_above_every_correct_step(arch):
    mon = OneClassMonitor(arch, hidden=(16,), max_epochs=30)
    mon.fit(_correct(120), val=_correct(8, 500) + _errorful(2000))
    test_ok, test_bad = _correct(4, 900), _errorful()
    rows = run_monitor(mon, test_ok + test_bad, progress=False)
    correct_max = max(p for r in rows[: len(test_ok)] for p in r["probs"])
    assert correct_max < 0.25  # the first actions are told apart by the task token alone (0.5 without it)
    for ep, r in zip(test_bad, rows[len(test_ok):]):
        onset = ep["first_onset"]
        assert r["probs"][onset] > correct_max, (arch, ep["id"], r["probs"], correct_max)
        assert max(r["probs"][:onset]) <= correct_max  # the correct prefix looks like correct steps
    assert all(c is None for r in rows for c in r["categories"])  # no type head: M4 has nothing to score


def test_training_never_sees_an_error_step():
    ok = _correct(40)
    bad = _errorful()
    # with prefixes, an errorful episode contributes only its steps before the onset, all labelled 0
    seqs = OneClassMonitor("seq2seq").sequences(ok + bad, prefixes=True)
    assert len(seqs) == len(ok) + len(bad)
    for (_, toks), ep in zip(seqs[len(ok):], bad):
        assert len(toks) == ep["first_onset"] and not any(ep["labels"][: len(toks)])

    def fitted(train: list[dict], prefixes: bool) -> list[np.ndarray]:
        mon = OneClassMonitor("seq2seq", hidden=(8,), max_epochs=4, prefixes=prefixes)
        mon.fit(train, val=_correct(6, 500))
        return _state(mon)

    # without prefixes errorful episodes change nothing; with them, changing the error step changes nothing
    for a, b in zip(fitted(ok, False), fitted(ok + bad, False)):
        np.testing.assert_array_equal(a, b)
    other = [dict(ep, observed=ep["observed"][: ep["first_onset"]] + ["(human-drop knife table)"]
                  + ep["observed"][ep["first_onset"] + 1 :]) for ep in bad]
    with_bad, with_other = fitted(ok + bad, True), fitted(ok + other, True)
    for a, b in zip(with_bad, with_other):
        np.testing.assert_array_equal(a, b)
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(with_bad, fitted(ok, False)))


def test_fit_is_deterministic_and_cached(tmp_path):
    train, val = _correct(40), _correct(6, 500) + _errorful()
    a = OneClassMonitor("seq2seq-sg", cache_dir=str(tmp_path), hidden=(8,), max_epochs=4)
    a.fit(train, val=val)
    cache = tmp_path / "oneclass_seq2seq-sg.pt"
    stamp = cache.stat().st_mtime_ns
    digest = json.loads((tmp_path / "oneclass_seq2seq-sg.json").read_text())["digest"]
    b = OneClassMonitor("seq2seq-sg", cache_dir=str(tmp_path), hidden=(8,), max_epochs=4)
    b.fit(train, val=val)  # same data and settings: loaded, not retrained
    assert cache.stat().st_mtime_ns == stamp and b.recipe == a.recipe
    c = OneClassMonitor("seq2seq-sg", hidden=(8,), max_epochs=4)
    c.fit(train, val=val)  # no cache: retrained from the seed
    for x, y, z in zip(_state(a), _state(b), _state(c)):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)
    d = OneClassMonitor("seq2seq-sg", cache_dir=str(tmp_path), hidden=(8,), max_epochs=4, seed=1)
    d.fit(train, val=val)  # other settings: a new digest, retrained
    assert cache.stat().st_mtime_ns != stamp
    assert json.loads((tmp_path / "oneclass_seq2seq-sg.json").read_text())["digest"] != digest


def test_registry_lists_the_three_beside_their_supervised_counterparts():
    for sup in ("seq2seq", "seq2seq-sg", "sgt"):
        spec = MONITORS[sup + "-oneclass"]
        assert spec.trains and not privileged(spec)
        assert spec.reads == MONITORS[sup].reads
        mon = build_monitor(sup + "-oneclass", seed=3, cache_dir=None)
        assert isinstance(mon, OneClassMonitor) and mon.arch == sup and mon.seed == 3
    names = list(MONITORS)
    assert names.index("sgt") < names.index("seq2seq-oneclass") < names.index("replanner")


def test_evaluate_writes_the_recipe(tmp_path):
    rel, out = tmp_path / "rel", tmp_path / "eval"
    # 80 episodes: the recipe's record (candidates, held-out curve, the chosen minimum) needs no more (issue 46: 200
    # took 14.5 s of training, 80 take 8.9 s)
    assert cli(["generate", "--episodes", "80", "--seed", "3", "--out", str(rel), "--quiet"]) == 0
    argv = ["evaluate", "--monitor", "seq2seq-oneclass", "--episodes", str(rel / "test.jsonl"), "--out", str(out),
            "--quiet", "--bootstrap", "0"]
    assert cli(argv) == 0
    m = json.loads((out / "metrics.json").read_text())
    r = m["training_recipe"]
    n_correct = sum(json.loads(line)["correct"] for line in (rel / "train.jsonl").read_text().splitlines())
    assert r["training_sequences"] == n_correct and not r["prefixes"]
    assert r["chosen"]["hidden"] in r["candidates"]["hidden"] and r["chosen"]["score"] in r["candidates"]["score"]
    curve = dict(map(tuple, r["heldout_nll"][str(r["chosen"]["hidden"])]))
    assert curve[r["chosen"]["epochs"]] == r["chosen"]["heldout_nll"] == min(
        v for c in r["heldout_nll"].values() for _, v in c)
    assert m["M4"]["macro"] == 0.0 and "Youden" in m["threshold_rule"] and not m["privileged"]
    assert (out / "oneclass_seq2seq.pt").is_file()
    from importlib import metadata

    assert m["versions"]["torch"] == metadata.version("torch")  # the same seed on another torch: other weights
