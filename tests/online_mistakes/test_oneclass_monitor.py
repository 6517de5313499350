"""One-class Seq2Seq (GRU) / SGT (transformer) monitors: next-step likelihood learnt from correct sequences only."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ego_adr.monitoring.monitor import run_episode
from ego_adr.monitoring.next_step_model import Adam
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.monitors import neural_oneclass as O
from ego_adr.online_mistakes.types import StepContext, TrainingSet

# 1 first; then 2 (7 of 10) or 3; 4 after both; 5 last. "1 -> 4" never happens.
SEQS = ((1, 2, 3, 4, 5),) * 7 + ((1, 3, 2, 4, 5),) * 3
TAX = {i: f"s{i}" for i in (1, 2, 3, 4, 5, 9)}
TRAIN = TrainingSet("toy-procedure", SEQS, TAX, tuple(f"r{i}" for i in range(len(SEQS))))


@pytest.mark.parametrize("arch", O.ARCHS)
def test_an_unseen_transition_ranks_above_a_frequent_one(arch):
    m = O.NextStepModel(arch, hidden=16, seed=0).fit(SEQS, epochs=40)
    lp = m.logprobs([(1, 2)])[0][1]  # the distribution after the prefix (1,)
    frequent, unseen, never = (O.score_of(lp, m.cls(x))["surprisal"] for x in (2, 4, 9))
    assert frequent < unseen < never  # 1 -> 2 most of the time, 1 -> 4 never, step 9 not in training at all
    assert np.exp(lp).sum() == pytest.approx(1.0, abs=1e-5)


def test_scores_of_a_distribution():
    lp = np.log(np.array([0.05, 0.6, 0.3, 0.05]))  # class 0: a step never seen in training
    s = O.score_of(lp, 2)
    assert s["surprisal"] == pytest.approx(-np.log(0.3)) and s["margin"] == pytest.approx(np.log(0.6 / 0.3))
    assert O.score_of(lp, 1)["margin"] == 0.0


def test_the_small_adam_is_torchs_adam():
    import torch

    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    ours, theirs = Adam(list(a.parameters()), lr=1e-2), torch.optim.Adam(b.parameters(), lr=1e-2)
    x = torch.randn(8, 3)
    for _ in range(25):
        for net, opt in ((a, ours), (b, theirs)):
            opt.zero_grad()
            (net(x) ** 2).sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


@pytest.mark.parametrize("arch", O.ARCHS)
def test_the_monitor_selects_fits_and_flags(arch):
    mon = O.OneClassMonitor(arch)
    mon.fit(TRAIN)
    sel = mon.selection
    json.dumps(sel)
    chosen = sel["chosen"]
    assert chosen["hidden"] in O.HIDDEN and chosen["score"] in O.SCORES and sel["validation"]["episodes"] > 0
    # the epochs chosen are those of the lowest mean held-out NLL of the curve of the hidden size chosen
    curve = dict(map(tuple, sel["heldout_nll"][str(chosen["hidden"])]))
    assert curve[chosen["epochs"]] == chosen["heldout_nll"] == min(v for c in sel["heldout_nll"].values()
                                                                    for _, v in c)
    outs = run_episode(mon, "v", StepContext("toy-procedure", "v", TAX), [1, 2, 3, 9])
    assert outs[3].flagged and outs[3].prob > max(o.prob for o in outs[:3])
    assert outs[3].evidence["expected"] == 4  # what the model anticipated instead


def test_a_monitor_built_on_the_same_fit_shares_it():
    plan = cv.plan("toy-procedure", SEQS, sorted(TAX))
    f1, f2 = O.select_and_fit(SEQS, "gru", plan), O.select_and_fit([list(s) for s in SEQS], "gru", plan)
    assert f1 is f2  # memoised: the stacked monitor reuses seq2seq-oneclass's fit in the same process
    assert len(f1.labels) == len(f1.oof["surprisal"]) == sum(len(e.steps) for _, eps in f1.validation for e in eps)


def test_streaming_before_fit_is_refused():
    with pytest.raises(RuntimeError, match="fit"):
        O.OneClassMonitor().reset(StepContext("b", "v"))
