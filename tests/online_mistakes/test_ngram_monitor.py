"""The Witten-Bell n-gram monitor: its probabilities by hand, its task back-off, its selection."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ego_adr.monitoring.monitor import run_episode
from ego_adr.online_mistakes.monitors.ngram import NGramModel, NGramMonitor, task_of
from ego_adr.online_mistakes.types import StepContext, TrainingSet


def test_witten_bell_bigram_by_hand():
    # two recordings: 1 2 and 1 3. The add-one unigram over (never seen, 1, 2, 3): counts (0, 2, 1, 1) + 1 each,
    # p0 = (1, 3, 2, 2) / 8. After step 1: seen {2: 1, 3: 1}, 2 types, total 2:
    # p(2 | 1) = (1 + 2 * 2/8) / (2 + 2) = 0.375, p(1 | 1) = (0 + 2 * 3/8) / 4 = 0.1875
    m = NGramModel(order=2).fit([(1, 2), (1, 3)])
    p = np.exp(m.dist([1]))
    assert p[m.cls(2)] == pytest.approx(0.375) and p[m.cls(3)] == pytest.approx(0.375)
    assert p[m.cls(1)] == pytest.approx(0.1875) and p[m.cls(99)] == pytest.approx(0.0625)
    assert p.sum() == pytest.approx(1.0)
    # after BOS only step 1 was seen: p(1 | start) = (2 + 1 * 3/8) / (2 + 1)
    assert np.exp(m.dist([]))[m.cls(1)] == pytest.approx((2 + 3 / 8) / 3)


def test_a_task_sharpens_its_own_steps_and_an_unknown_task_falls_back_exactly():
    seqs, tasks = [(1, 2, 3), (1, 2, 3), (1, 4, 5), (1, 4, 5)], ["a01", "a01", "b02", "b02"]
    m = NGramModel(order=2).fit(seqs, tasks)
    after1_a = np.exp(m.dist([1], "a01"))
    assert after1_a[m.cls(2)] > 0.5 > after1_a[m.cls(4)]  # toy a01 goes 1 -> 2, the global model half-half
    assert np.array_equal(m.dist([1], "zz9"), m.dist([1], None))  # a toy without recordings: the global model
    assert np.exp(m.dist([1], "b02"))[m.cls(4)] > 0.5


def test_task_of_a_recording_name():
    assert task_of("nusar-2021_action_both_9044-a08_9044_user_id_2021-02-08_145442") == "a08"
    assert task_of("annotations_9") is None


def test_the_monitor_chooses_its_order_by_heldout_likelihood_and_flags():
    seqs = ((1, 2, 3, 4),) * 6 + ((1, 3, 2, 4),) * 4
    train = TrainingSet("toy", seqs, {i: str(i) for i in range(1, 6)}, tuple(f"r{i}" for i in range(10)))
    mon = NGramMonitor()
    mon.fit(train)
    sel = mon.selection
    json.dumps(sel)
    order = sel["chosen"]["order"]
    assert sel["heldout_nll"][str(order)] == min(sel["heldout_nll"].values())
    outs = run_episode(mon, "v", StepContext("toy", "v", train.taxonomy), [1, 2, 4, 5])
    assert outs[3].flagged and outs[3].prob > outs[1].prob  # 5 never seen; 2 after 1 the usual
    assert not outs[1].flagged
