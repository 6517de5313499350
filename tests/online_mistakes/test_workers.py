"""``--jobs``: the step-stream benchmarks' fits spread over processes (ego_adr/online_mistakes/workers.py) write the
same bytes as one process; the nested selection follows the monitors' options and is kept under the cache root."""

import json

import pytest

from ego_adr.online_mistakes import selection
from ego_adr.online_mistakes.data import cut as D

pytestmark = pytest.mark.slow


def test_two_processes_write_the_folders_of_one_and_read_the_kept_selection(online_root, cli, tent_all, tmp_path,
                                                                           tent_all_args):
    """``tent_all`` ran with one process (EGO_ADR_JOBS=1 under the suite) into the session's cache root."""
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", "all",
                       "--data-root", online_root, "--out", tmp_path / "two", "--jobs", "2", *tent_all_args,
                       "--quiet")
    assert code == 0, err
    one, two = (json.loads((p / "summary.json").read_text()) for p in (tent_all, tmp_path / "two"))
    cold, kept = (json.loads((p / "timing.json").read_text())["fold_cache"] for p in (tent_all, tmp_path / "two"))
    assert kept["computed"] == 0 and kept["read"] == cold["read"] + cold["computed"] > 0  # read back, not refitted
    # issue 46 item 3: one process and a cold cache, two processes and a warm one: the same result files, byte for
    # byte; what follows the cache and the clock is in timing.json alone
    for f in ("summary.json", "summary.md"):
        assert (tent_all / f).read_bytes() == (tmp_path / "two" / f).read_bytes(), f
    assert len(one["rows"]) > 10
    for r in one["rows"]:
        for f in ("steps.jsonl", "metrics.json", "report.md"):
            n = r["monitor"]
            assert (tent_all / n / f).read_bytes() == (tmp_path / "two" / n / f).read_bytes(), (n, f)
    assert "from_cache" in (tent_all / "dtgl-do" / "timing.json").read_text()


def test_the_nested_selection_is_the_same_on_two_processes_and_follows_the_options(online_root, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path / "cache"))
    train = D.load_training(online_root, "epic-tent-o")
    names = ["position", "count-based", "ngram-oneclass", "sgt-oneclass"]
    small = {"sgt-oneclass": {"seed": 0, "folds": 5, "hidden": (8,), "max_epochs": 2}}
    one = selection.record(train, names, small, seeds=(1,), jobs=1)
    assert one["fold_cache"]["computed"] == 4 * 5 and one["fold_cache"]["read"] == 0
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path / "cache-2"))
    two = selection.record(train, names, small, seeds=(1,), jobs=2)
    assert {k: v for k, v in two.items() if k != "fold_cache"} == {k: v for k, v in one.items() if k != "fold_cache"}
    assert set(one["scores"]) == set(names) and all(s["by_seed"]["1"]["steps"] > 0 for s in one["scores"].values())
    # kept per fold, monitor and options: the same again is read back; another seed of one monitor is computed
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path / "cache"))
    other = selection.record(train, names, {"sgt-oneclass": small["sgt-oneclass"] | {"seed": 1}}, seeds=(1,))
    assert other["fold_cache"] == {"folder": other["fold_cache"]["folder"], "read": 3 * 5, "computed": 5}
    assert other["scores"]["sgt-oneclass"] != one["scores"]["sgt-oneclass"]
    assert other["scores"]["count-based"] == one["scores"]["count-based"]
    again = selection.record(train, names, small, seeds=(1,))
    assert again["fold_cache"]["computed"] == 0 and again["scores"] == one["scores"]
    assert one["options"]["sgt-oneclass"]["hidden"] == [8] and one["chosen"] in names


@pytest.mark.parametrize("flag, env, expect", [(("--jobs", "0"), None, "--jobs 0: give 1 or more processes"),
                                               ((), "two", "$EGO_ADR_JOBS='two' is not a number of processes")])
def test_a_bad_number_of_jobs_is_one_line(online_root, cli, tmp_path, monkeypatch, flag, env, expect):
    monkeypatch.setenv("EGO_ADR_JOBS", env) if env is not None else monkeypatch.delenv("EGO_ADR_JOBS", raising=False)
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "flag-all", "--data-root", online_root,
                       "--out", tmp_path / "out", *flag)
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
