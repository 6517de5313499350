"""``dtgl-do``: DTGL's DO loss against a hand computation, its graph rules on graphs small enough to follow by hand,
the EPIC-Tent-O rows within one point of DTGL's Table 3 (trained here, ~1 s), the cache, and the refusal of a data
root without training sequences. Assembly101-O's rows train for minutes: ``scripts/bench_monitoring.py --dtgl-do``."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from ego_adr.online_mistakes.monitors import dtgl_graph as G
from ego_adr.online_mistakes.monitors import dtgl_train as T

PUBLISHED = {"oracle": 0.583, "miniroad": 0.465}  # DTGL Table 3, EPIC-Tent-O DO* / DO+ (macro F1)


def test_tgml_loss_matches_a_hand_computation():
    """Two steps a, b (nodes 2, 3), Z = 0 so every row is uniform over its allowed entries: START -> {BETA};
    a -> {BETA, START, b}; b -> {BETA, START, a}; END -> {BETA, START, a, b}. One sequence a, b."""
    import torch

    n, e, beta = 6, T.EPS, 0.005
    z = torch.zeros(n, n, dtype=torch.float64)
    got = T.tgml_loss(z, torch.from_numpy(T.allowed_mask(n)), T.terms([[2, 3]], n), beta)
    rates = [  # (den, num) at START (J = {BETA}), a (J + START), b (J + a), END (J + b)
        ((1 + e) + (1 / 3 + e) + (1 / 3 + e) + (1 / 4 + e), 1 + e),
        ((2 / 3 + 2 * e) + (2 / 3 + 2 * e) + (1 / 2 + 2 * e), 2 / 3 + 2 * e),
        ((1 + 3 * e) + (3 / 4 + 3 * e), 1 + 3 * e),
        (1 + 4 * e, 1 + 4 * e),
    ]
    want = sum(beta * math.log(den) - math.log(num) for den, num in rates)
    assert float(got) == pytest.approx(want, rel=1e-12)


def test_loss_counts_each_distinct_rate_as_often_as_it_occurs():
    """Rates are grouped by (set before, node): the grouped loss of a, b; b, a; a, b equals the sum of each
    sequence's own loss."""
    import torch

    n = 6
    z = torch.rand(n, n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    allowed = torch.from_numpy(T.allowed_mask(n))

    def loss(seqs, counts=None):
        return float(T.tgml_loss(z, allowed, T.terms(seqs, n, counts), 0.005))

    one, two = loss([[2, 3]]), loss([[3, 2]])
    assert loss([[2, 3], [3, 2], [2, 3]]) == pytest.approx(2 * one + two, rel=1e-12)
    assert loss([[2, 3], [3, 2]], [2, 1]) == pytest.approx(2 * one + two, rel=1e-12)


def test_dedupe_moves_a_repeated_step_only_when_the_draw_is_below_half():
    draws = iter([0.7, 0.2])
    assert T.dedupe([1, 2, 1, 3, 2], lambda: next(draws)) == [1, 3, 2]  # 1 stays (0.7), 2 moves (0.2)


def test_sequence_variants_and_mask_come_from_the_training_recordings():
    d = T.prepare([(5, 7, 5, 9)], [5, 7, 9, 11])
    first, last, every = d.variants
    assert (first, last, every) == (((2, 3, 4),), ((3, 2, 4),), ((2, 3, 2, 4),))
    assert d.masked == frozenset({3}) and d.n == 8  # step 11 (position 3) is in no recording


def test_assembly101_mask_is_dtgl_config_list(online_root):
    """DTGL's Assembly101-O configs list 27 masked steps: exactly those no training recording holds."""
    from ego_adr.online_mistakes.data.cut import load_training

    tr = load_training(online_root, "assembly101-o")
    d = T.prepare(tr.sequences, list(tr.taxonomy))
    dtgl = {5, 6, 7, 10, 11, 16, 17, 22, 23, 24, 27, 30, 34, 35, 36, 41, 46, 47, 50, 51, 52, 53, 66, 70, 71, 78, 85}
    assert {list(tr.taxonomy)[p] for p in d.masked} == dtgl


def _edges(n, pairs):
    e = np.zeros((n, n), dtype=bool)
    for a, b in pairs:
        e[a, b] = True
    return e


def test_cycle_removal_never_takes_the_closing_edge():
    """networkx lists the 3-cycle as [1, 2, 3]: candidates 1->2 and 2->3, so the weaker of those goes even though
    the closing edge 3->1 is weaker still (DTGL's rule); the result is a DAG."""
    e = _edges(5, [(1, 2), (2, 3), (3, 1), (4, 1)])
    w = np.zeros((5, 5))
    w[1, 2], w[2, 3], w[3, 1], w[4, 1] = 0.5, 0.4, 0.2, 0.9
    out = G.remove_cycles(e, w)
    assert not G.is_dag(e) and G.is_dag(out)
    assert (e & ~out).nonzero() == (np.array([2]), np.array([3]))


def test_transitive_reduction_drops_only_edges_with_another_path():
    e = _edges(5, [(3, 2), (2, 1), (3, 1), (1, 0), (3, 0), (4, 0)])
    out = G.reduce(e)
    assert sorted(zip(*out.nonzero())) == [(1, 0), (2, 1), (3, 2), (4, 0)]


def test_relaxed_rule_and_completion():
    e = _edges(5, [(1, 0), (1, 2), (2, 0), (3, 1), (3, 2), (3, 0)])
    r = G.relax(e)
    assert sorted(zip(*r.nonzero())) == [(1, 0), (2, 0), (3, 0), (3, 1), (3, 2)]  # 1 had START + one other
    c = G.complete(_edges(5, [(2, 1)]), skip={3})
    # 2 has no dependent -> precondition of END (4); 1 has no precondition -> START; 3 is skipped
    assert sorted(zip(*c.nonzero())) == [(1, 0), (2, 1), (4, 2)]


def test_precondition_check_follows_dtgl():
    pre = {0: [], 1: [0], 2: [1], 3: [1, 2], 4: [3]}
    chk = G.PreconditionCheck(pre)
    assert chk.step(2) == (True, [1], [1])  # 1 not seen yet; 2 is still added to the steps seen
    assert chk.step(None) == (True, [], [])  # a step the graph lacks
    assert chk.step(1) == (False, [0], [])
    assert chk.step(3) == (False, [1, 2], [])


@pytest.fixture(scope="module")
def epic(online_root, tmp_path_factory):
    """Both EPIC-Tent-O streams with a fresh cache (so the first fit trains), then again (from the cache)."""
    from ego_adr.online_mistakes.data.cut import load_stream, load_training
    from ego_adr.online_mistakes.fitting import result, run_monitor
    from ego_adr.store import cache_scope

    train = load_training(online_root, "epic-tent-o")
    out = {}
    with cache_scope(tmp_path_factory.mktemp("dtgl_cache")):
        for run in (1, 2):
            for s in PUBLISHED:
                stream = load_stream(online_root, "epic-tent-o", s)
                rows, mon = run_monitor("dtgl-do", train, stream)
                out[(run, s)] = (result("dtgl-do", train, stream, rows, mon), rows)
    return out


@pytest.mark.parametrize("stream", list(PUBLISHED))
def test_epic_tent_rows_within_one_point_of_dtgl_table3(epic, stream):
    res, _ = epic[(1, stream)]
    assert abs(res["macro_f1"] - PUBLISHED[stream]) < 0.01, res["macro_f1"]
    assert res["selection"]["hyper_parameters"]["dtgl_config_file"] == "EPIC-Tent-O/DO.yaml"
    assert res["stats"]["epochs_run"] < 1200  # early stopping fired


def test_second_run_reads_the_cached_graph(epic):
    first, second = epic[(1, "oracle")], epic[(2, "oracle")]
    assert not first[0]["stats"]["from_cache"] and second[0]["stats"]["from_cache"]
    assert json.dumps(first[1], sort_keys=True) == json.dumps(second[1], sort_keys=True)


def test_assembly101_config_follows_the_stream():
    from ego_adr.online_mistakes.fitting import configured
    from ego_adr.online_mistakes.monitors.dtgl_do import resolve_config
    from ego_adr.online_mistakes.types import TrainingSet

    def steps(stream: str) -> str:  # what the run's training set says its steps are
        return configured(TrainingSet("assembly101-o", (), {}), stream).steps

    assert resolve_config("assembly101-o", steps("oracle"))[1].early_stopping is None
    assert resolve_config("assembly101-o", steps("oracle-merged"))[1].early_stopping is None
    assert resolve_config("assembly101-o", steps("miniroad"))[1].early_stopping == 0.79
    assert resolve_config("assembly101-o", steps("/some/recogniser.json"))[1].train_mask
    assert resolve_config("epic-tent-o", "oracle")[1] == resolve_config("epic-tent-o", "recognised")[1]
    assert resolve_config("another-benchmark", "oracle")[0] == "other/no-early-stopping"


def test_data_root_without_training_sequences_is_refused(online_root, tmp_path, cli):
    root = tmp_path / "root"
    shutil.copytree(online_root / "dtgl" / "epic-tent", root / "dtgl" / "epic-tent")
    doc = json.loads((root / "dtgl" / "epic-tent" / "train.json").read_text())
    doc["annotations"] = {}
    (root / "dtgl" / "epic-tent" / "train.json").write_text(json.dumps(doc))
    out = tmp_path / "out"
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", "dtgl-do",
                       "--data-root", root, "--out", out)
    assert code == 2 and "training" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists() or not any(out.iterdir())


def test_steps_are_byte_identical_under_one_and_two_threads(epic, online_root, tmp_path):
    """A process started with another thread count than this one trains afresh (its own cache) and writes the
    same ``steps.jsonl`` byte for byte as the graph trained in this process."""
    import os
    import subprocess
    import sys

    import torch

    n = "1" if torch.get_num_threads() > 1 else "2"
    env = {**os.environ, "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
           "EGO_ADR_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "ego_adr.monitoring", "evaluate", "--benchmark", "epic-tent-o", "--stream",
                    "miniroad", "--monitor", "dtgl-do", "--data-root", str(online_root), "--out", str(out),
                    "--quiet"], env=env, check=True)
    assert not json.loads((out / "timing.json").read_text())["stats"]["from_cache"]
    assert "from_cache" not in (out / "metrics.json").read_text() + (out / "report.md").read_text()
    here = "".join(json.dumps(r, sort_keys=True) + "\n" for r in epic[(1, "miniroad")][1])
    assert (out / "steps.jsonl").read_text() == here
