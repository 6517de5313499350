"""HelpMeOut through the one monitoring command (issue 43): folders written by the former ``helpmeout evaluate``
resume, the former command still runs (and says what it is now), ``--monitor a,b`` writes one folder per monitor
and the paper's tables with the same bytes for any ``--jobs``; and issue 46's items 5 and 8."""

import json
import shutil

import pytest

from ego_adr.helpmeout.cli import main as helpmeout
from ego_adr.helpmeout.evaluation.benchmark import HARNESS_VERSION
from ego_adr.monitoring.cli import main as monitoring


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("release")
    assert helpmeout(["generate", "--episodes", "160", "--seed", "4", "--out", str(d), "--quiet"]) == 0
    return d


def _evaluate(release, out, *flags):
    return ["evaluate", "--benchmark", "helpmeout", "--episodes", str(release / "test.jsonl"), "--out", str(out),
            "--quiet", *flags]


#: identity.json as ``python -m ego_adr.helpmeout evaluate --monitor precondition`` wrote it before issue 43
def _former_identity(episodes: str, monitor: str = "precondition", **changed) -> dict:
    return {"helpmeout": "evaluate", "cmd": "evaluate", "monitor": monitor, "episodes": episodes, "train": None,
            "val": None, "threshold": None, "tolerance": 0, "bootstrap": 1000, "seeds": 20, "subset": False,
            "budget_s": 5.0, "model": None, "backend": "hf", "base_url": None, "max_new_tokens": 512,
            "cache_dir": None, "templates": None, "limit": 0, **changed}


def test_a_folder_of_the_former_command_resumes_and_other_settings_are_refused(release, tmp_path, capsys):
    out = tmp_path / "precondition"
    episodes = str(release / "test.jsonl")
    assert monitoring(_evaluate(release, out, "--monitor", "precondition")) == 0
    # the identity is the one the former command wrote, key for key and in its order, and the harness's version
    ident = _former_identity(episodes) | {"harness_version": HARNESS_VERSION}
    assert (out / "identity.json").read_text() == json.dumps(ident, indent=1)
    before = {f: (out / f).read_bytes() for f in ("steps.jsonl", "metrics.json", "outputs.jsonl", "report.md")}
    capsys.readouterr()
    assert monitoring(_evaluate(release, out, "--monitor", "precondition")) == 0  # read back, not redone
    assert "finished before" in capsys.readouterr().out
    assert {f: (out / f).read_bytes() for f in before} == before
    assert monitoring(_evaluate(release, out, "--monitor", "precondition", "--tolerance", "2")) == 2
    err = capsys.readouterr().err
    assert "tolerance 0 -> 2" in err and len(err.strip().splitlines()) == 1
    # a folder the former command (or stage 1, before the version key) wrote: the same run, its results redone
    (out / "identity.json").write_text(json.dumps(_former_identity(episodes), indent=1))
    (out / "metrics.json").write_text((out / "metrics.json").read_text().replace('"seconds"', '"stale_seconds"'))
    assert monitoring(_evaluate(release, out, "--monitor", "precondition")) == 0
    assert "finished before" not in capsys.readouterr().out
    assert json.loads((out / "identity.json").read_text()) == ident and "stale_seconds" not in (
        out / "metrics.json").read_text()
    # a folder of another harness version is refused, naming the key
    (out / "identity.json").write_text(json.dumps(ident | {"harness_version": "0"}, indent=1))
    assert monitoring(_evaluate(release, out, "--monitor", "precondition")) == 2
    assert "harness_version" in capsys.readouterr().err


def test_the_former_command_runs_and_prints_the_new_one(release, tmp_path, capsys):
    out = tmp_path / "random"
    argv = ["evaluate", "--monitor", "random", "--episodes", str(release / "test.jsonl"), "--out", str(out),
            "--seeds", "2", "--quiet"]
    assert helpmeout(argv) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("note: `python -m ego_adr.helpmeout evaluate` is now `python -m ego_adr.monitoring "
                              "evaluate --benchmark helpmeout --monitor random")
    assert sum("is now" in line for line in said) == 1 and (out / "metrics.json").is_file()


def test_several_monitors_write_the_same_bytes_for_any_jobs_and_the_tables(release, tmp_path, capsys):
    one, two = tmp_path / "one", tmp_path / "two"
    names = "random,precondition,cusum"
    flags = ["--monitor", names, "--seeds", "2", "--bootstrap", "50"]
    assert monitoring(_evaluate(release, one, *flags, "--jobs", "1")) == 0
    assert monitoring(_evaluate(release, two, *flags, "--jobs", "2")) == 0
    for name in names.split(","):
        for f in ("steps.jsonl", "outputs.jsonl", "report.md", "identity.json"):
            assert (one / name / f).read_bytes() == (two / name / f).read_bytes(), (name, f)
        # each folder is the one a single run writes: its identity names only its monitor
        assert json.loads((one / name / "identity.json").read_text())["monitor"] == name
    text = (one / "summary.md").read_text()
    assert "## Table 2" in text and "## Tables 11-12" in text and text == (two / "summary.md").read_text()
    # a monitor folder of a several-monitor run is the single run's: a single run reads it back
    capsys.readouterr()
    assert monitoring(_evaluate(release, one / "cusum", "--monitor", "cusum", "--seeds", "2", "--bootstrap", "50")) == 0
    assert "finished before" in capsys.readouterr().out


def test_llm_is_one_folder_with_and_without_subset(release, tmp_path, capsys):
    """Issue 46 item 5: ``--subset`` is always on for ``llm``, so the run with it and the run without it are one
    run; and a folder the former command labelled ``subset: false`` is that run too."""
    out = tmp_path / "llm"
    flags = ["--monitor", "llm", "--model", "tiny", "--max-new-tokens", "2", "--limit", "6", "--threshold", "0.5",
             "--bootstrap", "10"]
    assert monitoring(_evaluate(release, out, *flags)) == 0
    assert json.loads((out / "identity.json").read_text())["subset"] is True
    capsys.readouterr()
    assert monitoring(_evaluate(release, out, *flags, "--subset")) == 0
    assert "finished before" in capsys.readouterr().out
    former = tmp_path / "former"
    shutil.copytree(out, former)
    ident = json.loads((former / "identity.json").read_text())
    (former / "identity.json").write_text(json.dumps(ident | {"subset": False}, indent=1))
    assert monitoring(_evaluate(release, former, *flags)) == 0
    assert json.loads((former / "identity.json").read_text())["subset"] is True


def test_a_summary_of_one_llm_folder_prints_only_what_it_holds(release, tmp_path, capsys):
    """Issue 46 item 8: no bare headers of the test-split tables, and every table valid markdown."""
    out = tmp_path / "llm"
    assert monitoring(_evaluate(release, out, "--monitor", "llm", "--model", "tiny", "--max-new-tokens", "2",
                                "--limit", "6", "--threshold", "0.5", "--bootstrap", "10")) == 0
    assert helpmeout(["summarize", str(out), "--out", str(tmp_path / "summary")]) == 0
    text = (tmp_path / "summary" / "summary.md").read_text()
    assert "Table 17" in text and "llm (tiny)" in text
    for absent in ("Table 13", "Table 14", "Table 15", "Tables 11-12", "episodes 0"):
        assert absent not in text
    lines = text.splitlines()
    for k, line in enumerate(lines[:-1]):  # a header row's cells = its delimiter row's cells
        if lines[k + 1].startswith("|---"):
            assert line.count("|") == lines[k + 1].count("|"), line


def test_an_all_folder_holds_all_as_asked_and_the_list_it_held_before_still_resumes(release, tmp_path):
    """Issue 46 item 1 on HelpMeOut: ``--monitor all``'s folder identity is ``all`` as asked (what it resolved to is
    written beside it, never compared), and a folder that held the resolved list is the same run."""
    from ego_adr.helpmeout.evaluation.benchmark import Settings
    from ego_adr.monitoring.benchmarks import BENCHMARKS
    from ego_adr.monitoring.settings import EvalSettings

    bench = BENCHMARKS.get("helpmeout").make_driver()
    s = EvalSettings("helpmeout", "all", own=Settings(episodes=str(release / "test.jsonl")))
    names = ["random", "cusum"]
    ident = bench.identity(s, None, names, {})
    assert ident["monitors"] == "all" and bench.resolved(s, names) == {"resolved_monitors": names}
    assert [f["monitors"] for f in bench.former_identities(s, None, names, {})] == [names]
    assert bench.identity(s, None, names[:1], {}) == ident  # a monitor more or less in all: the same folder
    listed = EvalSettings("helpmeout", "random,cusum", own=s.own)
    assert bench.identity(listed, None, names, {})["monitors"] == names
