"""``--jobs``: the step-stream benchmarks' fits spread over processes (ego_adr/online_mistakes/workers.py) write the
same bytes as one process; the nested selection follows the monitors' options and is kept under the cache root."""

import json

import pytest

from ego_adr.online_mistakes import data as D
from ego_adr.online_mistakes import selection

pytestmark = pytest.mark.slow


def test_two_processes_write_the_folders_of_one_and_read_the_kept_selection(online_root, cli, tent_all, tmp_path):
    """``tent_all`` ran with one process (EGO_ADR_JOBS=1 under the suite) into the session's cache root."""
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", "all",
                       "--data-root", online_root, "--out", tmp_path / "two", "--jobs", "2", "--quiet")
    assert code == 0, err
    one, two = (json.loads((p / "summary.json").read_text()) for p in (tent_all, tmp_path / "two"))
    assert "cached" in two["selection"]  # the selection tent_all computed, read back, not fitted again
    assert {k: v for k, v in two["selection"].items() if k != "cached"} == \
        {k: v for k, v in one["selection"].items() if k != "cached"}
    assert one["rows"] == two["rows"] and len(one["rows"]) > 10
    for r in one["rows"]:
        n = r["monitor"]
        assert (tent_all / n / "steps.jsonl").read_bytes() == (tmp_path / "two" / n / "steps.jsonl").read_bytes(), n


def test_the_nested_selection_is_the_same_on_two_processes_and_follows_the_options(online_root, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path / "cache"))
    train = D.load_training(online_root, "epic-tent-o")
    names = ["position", "count-based", "ngram-oneclass", "sgt-oneclass"]
    small = {"sgt-oneclass": {"seed": 0, "folds": 5, "hidden": (8,), "max_epochs": 2}}
    one = selection.nested_scores(train, names, small, jobs=1)
    assert selection.nested_scores(train, names, small, jobs=2) == one
    assert set(one) == set(names) and all(s["steps"] > 0 for s in one.values())
    other = selection.nested_scores(train, names, {"sgt-oneclass": small["sgt-oneclass"] | {"seed": 1}})
    assert other["sgt-oneclass"] != one["sgt-oneclass"] and other["count-based"] == one["count-based"]
    # kept per training set, monitors and options: another seed is another file
    sel = selection.record(train, names, small, one)
    assert selection.cached(train, names, small) == (selection.cached(train, names, small)[0], sel)
    assert selection.cached(train, names, {"sgt-oneclass": small["sgt-oneclass"] | {"seed": 1}})[1] is None
    assert sel["options"]["sgt-oneclass"]["hidden"] == [8] and sel["chosen"] in names


@pytest.mark.parametrize("flag, env, expect", [(("--jobs", "0"), None, "--jobs 0: give 1 or more processes"),
                                               ((), "two", "$EGO_ADR_JOBS='two' is not a number of processes")])
def test_a_bad_number_of_jobs_is_one_line(online_root, cli, tmp_path, monkeypatch, flag, env, expect):
    monkeypatch.setenv("EGO_ADR_JOBS", env) if env is not None else monkeypatch.delenv("EGO_ADR_JOBS", raising=False)
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "flag-all", "--data-root", online_root,
                       "--out", tmp_path / "out", *flag)
    assert code == 2 and expect in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
