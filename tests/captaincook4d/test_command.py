"""The CaptainCook4D benchmarks through the one command (``python -m ego_adr.monitoring evaluate --benchmark
captaincook4d-...``) on the real annotations: the folders and the summary it writes, resume and refusal by
identity, ``--fresh``, options and aliases, and bad input refused in one line with nothing written."""

from __future__ import annotations

import json
import shutil

import pytest

from ego_adr.captaincook4d import evaluate as E
from ego_adr.monitoring.benchmarks import BENCHMARKS

ANN = "sources/CaptainCook4D-annotations"
FEW = "procedure-official,supervised,unseen-transition,flag-all"  # conftest's cc4d_few runs these


def test_both_benchmarks_are_registered_with_their_splits_by_role():
    for name in ("captaincook4d-complete", "captaincook4d-o"):
        spec = BENCHMARKS.get(name)
        assert spec.roles() == {"fit": ("train",), "choose": ("val",), "score": ("test",)}
        names = spec.monitor_registry().names()
        assert len(names) == len(set(names)) and {"unseen-step", "unseen-transition", "procedure-official"} <= set(
            names)
        assert spec.monitor_registry().get("one-step-memory").name == "unseen-transition"


def test_several_monitors_write_their_folders_and_a_summary_led_by_the_validation_choice(cc4d_few):
    names = FEW.split(",")
    for n in names:
        assert {"identity.json", "steps.jsonl", "validation_steps.jsonl", "metrics.json", "report.md"} <= {
            p.name for p in (cc4d_few / n).iterdir()}
    s = json.loads((cc4d_few / "summary.json").read_text())
    assert [r["monitor"] for r in s["results"]] == names
    assert s["headline"] == E.headline(s["results"]) in ("procedure-official", "supervised")
    c = s["choice"]
    assert c["resamples"] == 200 and set(c["candidates"]) == {"procedure-official", "supervised"}
    assert c["tie"] == (len(c["between"]) > 1) and c["between"][0] == s["headline"]
    assert set(s["agreement"]) == {"unseen-transition"}
    assert s["counts"]["test"]["recordings"] == 109 and s["goal"]["rule"][0] in ("flag-all", "unseen-transition")
    md = (cc4d_few / "summary.md").read_text()
    assert "Chosen on validation" in md and "unseen-transition:" in md and "| **flag-all**" in md


def test_one_monitor_alone_writes_what_the_run_of_several_wrote(cc4d_root, cc4d_few, tmp_path, cli):
    out = tmp_path / "one"
    code, said, _ = cli("evaluate", "--benchmark", "captaincook4d-complete", "--monitor", "one-step-memory",
                        "--data-root", cc4d_root, "--out", out, "--jobs", "1")
    assert code == 0 and "unseen-transition: validation objective" in said
    for f in ("steps.jsonl", "metrics.json", "identity.json"):
        assert (out / f).read_bytes() == (cc4d_few / "unseen-transition" / f).read_bytes(), f


def test_the_same_identity_resumes_another_refuses_and_fresh_starts_over(cc4d_root, cc4d_few, tmp_path, cli):
    out = tmp_path / "few"
    shutil.copytree(cc4d_few, out)
    before = (out / "summary.json").read_bytes()
    args = ["evaluate", "--benchmark", "captaincook4d-complete", "--monitor", FEW, "--data-root", cc4d_root,
            "--out", out, "--jobs", "1"]
    code, said, _ = cli(*args)
    assert code == 0 and said.count("read back, not redone") == 4 and (out / "summary.json").read_bytes() == before
    code, _, err = cli(*args, "--missing-target", "end")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "missing_target" in err
    assert (out / "summary.json").read_bytes() == before
    code, said, _ = cli(*args[:4], "flag-all", *args[5:7], "--out", out / "flag-all", "--missing-target", "end",
                        "--fresh")
    ident = json.loads((out / "flag-all" / "identity.json").read_text())
    assert code == 0 and ident["missing_target"] == "end" and "read back" not in said


def test_a_monitor_option_is_given_not_chosen_and_is_part_of_the_identity(cc4d_root, tmp_path, cli):
    out = tmp_path / "early-end"
    code, _, _ = cli("evaluate", "--benchmark", "captaincook4d-o", "--monitor", "procedure-official",
                     "--monitor-option", "checks=end,early", "--data-root", cc4d_root, "--out", out, "--quiet")
    m = json.loads((out / "metrics.json").read_text())
    assert code == 0 and list(m["validation"]["choices"]) == ["-"] and m["given_options"] == {"checks": "early,end"}
    assert json.loads((out / "identity.json").read_text())["option.checks"] == "early,end"
    assert "given" in m["selection"]["chosen_by"]
    code, _, err = cli("evaluate", "--benchmark", "captaincook4d-o", "--monitor", "procedure-official",
                       "--monitor-option", "checks=sideways", "--data-root", cc4d_root, "--out", tmp_path / "x")
    assert code == 2 and "checks" in err and not (tmp_path / "x").exists()


def _damage(root, rel, change):
    p = root / rel
    doc = json.loads(p.read_text())
    p.write_text(json.dumps(change(doc)))


def _cycle(doc):
    a, b = doc["edges"][1]
    return {**doc, "edges": [*doc["edges"], [b, a]]}


def _outside(doc):
    doc[5]["step_annotations"][2]["step_id"] = 350 if doc[5]["activity_id"] != 29 else 1
    return doc


BAD = {
    "split": (f"{ANN}/data_splits/recordings_data_split_combined.json",
              lambda d: {**d, "test": [*d["test"], "99_99"]}, ("recordings_data_split_combined.json", "'99_99'")),
    "cycle": (f"{ANN}/task_graphs/coffee.json", _cycle, ("coffee.json", "cycle")),
    "edge": (f"{ANN}/task_graphs/coffee.json", lambda d: {**d, "edges": [*d["edges"], [1, 77]]},
             ("coffee.json", "[1, 77]")),
    "step": (f"{ANN}/annotation_json/error_annotations.json", _outside, ("error_annotations.json", "step 2")),
    "missing": (f"{ANN}/task_graphs/ramen.json", None, ("task_graphs/ramen.json", "not found")),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_the_file_and_the_item_exit_2_nothing_written(case, root_copy, tmp_path, cli):
    rel, change, words = BAD[case]
    if change is None:
        (root_copy / rel).unlink()
    else:
        _damage(root_copy, rel, change)
    out = tmp_path / "out"
    code, said, err = cli("evaluate", "--benchmark", "captaincook4d-complete", "--monitor", "all", "--data-root",
                          root_copy, "--out", out)
    assert code == 2 and said == "" and len(err.strip().splitlines()) == 1, err
    assert all(w in err for w in words), err
    assert not out.exists()


def test_a_fit_kept_in_the_cache_gives_the_same_bytes_as_a_fresh_fit(cc4d_root, tmp_path, cli):
    cache = tmp_path / "cache"
    args = ["evaluate", "--benchmark", "captaincook4d-o", "--monitor", "supervised", "--data-root", cc4d_root,
            "--cache-dir", cache, "--quiet", "--out"]
    assert cli(*args, tmp_path / "fresh")[0] == 0
    kept = list((cache / "captaincook4d-fits").glob("*/monitor.pkl"))
    assert len(kept) == 1
    assert cli(*args, tmp_path / "cached")[0] == 0
    for f in ("steps.jsonl", "validation_steps.jsonl", "metrics.json"):
        assert (tmp_path / "fresh" / f).read_bytes() == (tmp_path / "cached" / f).read_bytes(), f


def test_all_as_asked_a_monitor_that_joins_later_runs_and_nothing_else_is_redone(cc4d_root, tmp_path, cli,
                                                                                 monkeypatch):
    """Issue 46 item 1 on CaptainCook4D: the folder of ``--monitor all`` holds ``all`` as asked, so the same
    command after a package install (a monitor joins ``all``) is not refused. Here ``all`` is kept to a few cheap
    monitors by naming the rest unavailable, as a missing package does."""
    from ego_adr.captaincook4d import registry as CR

    few = {"flag-all", "never-alarm", "unseen-transition"}
    joins = "position"
    real = CR.unavailable
    monkeypatch.setattr(CR, "unavailable", lambda n: None if n in few else ("needs a package" if
                                                                             n != "procedure-official" else real(n)))
    # procedure-official is the room's own monitor (never unavailable): the headline's candidate
    out = tmp_path / "all"
    argv = ("evaluate", "--benchmark", "captaincook4d-o", "--monitor", "all", "--data-root", cc4d_root, "--out", out,
            "--jobs", "1", "--quiet")
    code, _, err = cli(*argv)
    assert code == 0, err
    ident = json.loads((out / "identity.json").read_text())
    assert ident["monitors"] == "all" and set(ident["resolved_monitors"]) == few | {"procedure-official"}
    kept = {p.relative_to(out): p.stat().st_mtime_ns for p in out.glob("*/*")}
    few.add(joins)  # its package installed: it joins all
    code, _, err = cli(*argv)
    assert code == 0, err
    assert {p: (out / p).stat().st_mtime_ns for p in kept} == kept  # nothing already done is redone
    assert (out / joins / "metrics.json").is_file()
    assert joins in {r["monitor"] for r in json.loads((out / "summary.json").read_text())["results"]}
    assert joins in json.loads((out / "identity.json").read_text())["resolved_monitors"]
