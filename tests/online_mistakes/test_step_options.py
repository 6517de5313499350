"""``evaluate``'s monitor options, partial streams and their bad inputs (issue 34 items 6 and 9): an option reaches
the monitor that declares it and the folder's identity, one it does not take is refused; a recogniser file that
covers some test videos is scored on those with ``--partial`` (coverage said everywhere, no goal line), refused
without it; duplicate video keys are refused. Every refusal: one line, exit 2, nothing in ``--out``."""

from __future__ import annotations

import json

import pytest

from ego_adr.online_mistakes.registry import REGISTRY


def _preds(root) -> dict:
    return json.loads((root / "prego" / "predictions" / "output_miniROAD_Epic-tent-O.json").read_text())


def _refused(cli, out, *argv) -> str:
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", *argv, "--out", out)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())
    return lines[0]


def test_each_monitor_declares_its_options_and_a_value_is_read_by_its_option():
    assert set(REGISTRY.options("prego")) >= {"decoding", "samples", "temperature", "max_new_tokens",
                                               "unseen_task", "example_labels", "task_line", "example_order"}
    assert REGISTRY.options("count-based") == {}
    got = REGISTRY.resolve_options("sgt-oneclass", {"hidden": "16,32", "seed": "3"})
    assert got == {"folds": 5, "hidden": (16, 32), "max_epochs": 16, "seed": 3}
    for given, words in (({"nope": "1"}, "does not take option 'nope'"), ({"hidden": "x"}, "cannot be read"),
                         ({"decoding": "emoji"}, "not one of")):
        with pytest.raises(ValueError, match=words):
            REGISTRY.resolve_options("prego" if "decoding" in given else "sgt-oneclass", given)


@pytest.mark.parametrize("argv, words", [
    (("--monitor", "count-based", "--monitor-option", "seed=1"), "does not take option 'seed'"),
    (("--monitor", "count-based", "--decoding", "sampled"), "does not take option 'decoding'"),
    (("--monitor", "sgt-oneclass", "--monitor-option", "hidden=big"), "hidden"),
    (("--monitor", "sgt-oneclass", "--monitor-option", "folds=1"), "folds must be >= 2"),
    (("--monitor", "sgt-oneclass", "--monitor-option", "seed"), "not KEY=VALUE"),
    (("--monitor", "all", "--monitor-option", "nosuch=1"), "no monitor takes this option"),
    (("--monitor", "prego", "--model", "tiny", "--samples", "3", "--monitor-option", "samples=4"), "contradicts"),
    (("--monitor", "all", "--selection-seeds", ""), "no seed given"),
    (("--monitor", "all", "--selection-seeds", "1,2,1"), "seed 1 is given twice"),
    (("--monitor", "all", "--selection-seeds", "1,x"), "whole numbers"),
    (("--monitor", "count-based", "--selection-seeds", "1"), "over several monitors only"),
])
def test_an_option_the_monitor_does_not_take_is_one_line(online_root, cli, tmp_path, argv, words):
    line = _refused(cli, tmp_path / "out", *argv, "--data-root", online_root)
    assert words in line, line


def test_partial_scores_the_covered_videos_and_says_so_everywhere(online_root, cli, tmp_path):
    from ego_adr.online_mistakes.goal import goal

    doc = _preds(online_root)
    covered = dict(list(doc.items())[:5])
    path = tmp_path / "five.json"
    path.write_text(json.dumps(covered))
    base = ("--stream", path, "--monitor", "count-based", "--data-root", online_root)
    line = _refused(cli, tmp_path / "refused", *base)  # without --partial: refused, and the flag is named
    assert "10 of the 15 test videos" in line and "--partial" in line
    out = tmp_path / "run"
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", *base, "--partial", "--out", out, "--quiet")
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["coverage"] == {"scored": 5, "benchmark": 15} and m["videos"] == 5
    assert m["unscored_videos"] == [v for v in doc if v not in covered]  # listed, nothing invented for them
    rows = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert sorted({r["episode"] for r in rows}) == sorted(covered)
    assert m["steps"] == sum(len(v["pred"]) for v in covered.values())
    report = (out / "report.md").read_text()
    assert report.count("5 of 15 test videos") >= 3 and "not compared" in report
    # a partial run is never compared with a published row; the same row over every test video would be
    part = goal([m], "epic-tent-o", "miniroad", "count-based")
    assert part and all(g["published"] is None and "5 of 15 test videos" in g["note"] for g in part)
    full = goal([dict(m, coverage={"scored": 15, "benchmark": 15})], "epic-tent-o", "miniroad", "count-based")
    assert full and all(g["published"] is not None and "note" not in g for g in full)


def test_partial_with_a_file_that_covers_no_test_video_is_one_line(online_root, cli, tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"recording_a": {"pred": [1, 2]}, "recording_b": {"pred": [3]}}))
    line = _refused(cli, tmp_path / "out", "--stream", path, "--partial", "--monitor", "count-based",
                    "--data-root", online_root)
    assert "covers none of the 15 test videos" in line
    line = _refused(cli, tmp_path / "out", "--stream", "oracle", "--partial", "--monitor", "count-based",
                    "--data-root", online_root)
    assert "--partial" in line


def test_a_stream_file_with_a_video_twice_is_one_line(online_root, cli, tmp_path):
    doc = _preds(online_root)
    first = next(iter(doc))
    text = json.dumps(doc)[:-1] + f', "{first}": {{"pred": [4, 7]}}}}'  # the same key again, other steps
    path = tmp_path / "twice.json"
    path.write_text(text)
    line = _refused(cli, tmp_path / "out", "--stream", path, "--monitor", "count-based", "--data-root",
                    online_root)
    assert f"{first!r} twice" in line and str(path) in line


def test_a_monitor_whose_package_is_missing_is_left_out_of_all_and_named_alone_is_one_line(monkeypatch):
    """ngram-text needs MiniLM (the real-models extra): without it, ``--monitor all`` lists it as not run with the
    install line, and ``--monitor ngram-text`` stops with that line (exit 2) before any work."""

    from ego_adr.errors import UserError
    from ego_adr.online_mistakes.monitors.ngram_text import NGramTextMonitor
    from ego_adr.online_mistakes.registry import REGISTRY, not_runnable, unavailable

    names = [n for n in REGISTRY.names() if not REGISTRY.get(n).needs_model]
    assert unavailable("ngram-text") is None and not_runnable("all", names, False) == {}

    def missing():
        raise UserError("needs sentence-transformers: pip install -e '.[real-models]'")

    monkeypatch.setattr(NGramTextMonitor, "check_available", staticmethod(missing))
    assert not_runnable("all", [*names, "prego"], False) == {
        "prego": "needs --model", "ngram-text": "needs sentence-transformers: pip install -e '.[real-models]'"}
    with pytest.raises(UserError, match=r"--monitor ngram-text needs sentence-transformers: pip install"):
        not_runnable("ngram-text", ["ngram-text"], False)
