"""Issue 46, item 1: a refusal names every differing setting whole, and ``--fresh`` starts a folder over only once
the folder's identity shows it is the command's own, removing only the files the command writes there and saying
which (``ego_adr/folders.py``, the rule of every command that writes a folder)."""

from __future__ import annotations

import importlib
import json
import logging

import pytest

from ego_adr.__main__ import ENTRY_POINTS
from ego_adr.folders import COMMAND_KEY, IdentityMismatch, NotOurFolder, claim, start_over

MONITORS = ["flag-all", "never-alarm", "position", "one-step-memory", "count-based", "dtgl-do", "prego",
            "ti-prego", "graph", "seq2seq-oneclass", "sgt-oneclass", "ngram-oneclass", "ngram-task", "stacked"]


def _results(out, name="predictions.jsonl"):
    (out / name).write_text('{"sample_id": "a"}\n')


def test_a_refusal_names_every_differing_setting_whole(tmp_path):
    """The issue's case: ``--monitor all`` gained a monitor; both lists were cut to 40 characters and the refusal
    showed six keys at most. Now every differing key is named, long values whole, a list by what changed."""
    out = tmp_path / "f"
    stored = {"monitors": MONITORS, "notes": "a long free text setting " * 4, **{f"k{i}": i for i in range(8)}}
    claim(out, stored)
    _results(out)
    current = {**stored, "monitors": [*MONITORS, "ngram-text"], "notes": stored["notes"] + "!",
               **{f"k{i}": i + 1 for i in range(8)}}
    with pytest.raises(IdentityMismatch) as e:
        claim(out, current)
    msg = str(e.value)
    assert "\n" not in msg and "more)" not in msg and "..." not in msg
    assert all(f"k{i} {i} -> {i + 1}" in msg for i in range(8))  # all eight, not six
    assert f"notes {json.dumps(stored['notes'])} -> {json.dumps(current['notes'])}" in msg  # whole
    assert f'monitors: "ngram-text" added ({len(MONITORS)} unchanged)' in msg
    with pytest.raises(IdentityMismatch, match=r'monitors: "flag-all" removed \(13 unchanged\)'):
        claim(out, {**stored, "monitors": MONITORS[1:]})


def test_fresh_removes_only_the_commands_files_and_says_which(tmp_path, caplog):
    out = tmp_path / "f"
    claim(out, {"mode": "shallow"}, kind="run")
    assert json.loads((out / "identity.json").read_text())[COMMAND_KEY] == "run"
    _results(out)
    (out / "metrics.json").write_text("{}")
    (out / "notes.txt").write_text("mine")  # a user's own file in the folder
    with caplog.at_level(logging.WARNING, logger="ego_adr.folders"):
        assert claim(out, {"mode": "direct"}, fresh=True, kind="run") == "new"
    assert (out / "notes.txt").read_text() == "mine" and not (out / "predictions.jsonl").exists()
    assert "--fresh: removed predictions.jsonl, metrics.json, identity.json from" in caplog.text
    assert json.loads((out / "identity.json").read_text()) == {"mode": "direct", COMMAND_KEY: "run"}


def test_fresh_refuses_a_folder_it_cannot_show_is_its_own_and_removes_nothing(tmp_path):
    other = tmp_path / "other"  # another command's folder, with a file of the same name as one a run writes
    claim(other, {"benchmark": "epic-tent-o"}, kind="monitoring evaluate")
    (other / "metrics.json").write_text("{}")
    _results(other, "ticks.jsonl")
    with pytest.raises(NotOurFolder, match="holds the results of `monitoring evaluate`, not of `run`"):
        claim(other, {"mode": "direct"}, fresh=True, kind="run")
    assert (other / "metrics.json").exists() and (other / "identity.json").exists()
    with pytest.raises(IdentityMismatch, match="holds the results of `monitoring evaluate`, not of `run`"):
        claim(other, {"mode": "direct"}, kind="run")  # a plain refusal says so too, not forty keys

    bare = tmp_path / "bare"  # results but no identity: nothing shows whose they are
    bare.mkdir()
    _results(bare)
    with pytest.raises(NotOurFolder, match="holds predictions.jsonl but no identity.json"):
        claim(bare, {"mode": "auto"}, fresh=True, kind="run")
    assert (bare / "predictions.jsonl").exists()


def test_a_folder_written_before_the_command_was_recorded_is_still_its_own(tmp_path, caplog):
    legacy = tmp_path / "legacy"  # identity.json without the command: same keys -> the run's, resumed or freshed
    legacy.mkdir()
    (legacy / "identity.json").write_text(json.dumps({"mode": "shallow", "frames": 8}))
    _results(legacy)
    assert claim(legacy, {"mode": "shallow", "frames": 8}, kind="run") == "resume"
    with pytest.raises(IdentityMismatch) as e:  # compared on what it records: the command it lacks is no difference
        claim(legacy, {"mode": "deep", "frames": 8}, kind="run")
    assert 'mode "shallow" -> "deep"' in str(e.value) and "command" not in str(e.value)
    with caplog.at_level(logging.WARNING, logger="ego_adr.folders"):
        claim(legacy, {"mode": "direct", "frames": 8}, fresh=True, kind="run")
    assert "removed predictions.jsonl, identity.json" in caplog.text
    foreign = tmp_path / "foreign"  # an old identity of other keys: another command's, left alone
    foreign.mkdir()
    (foreign / "identity.json").write_text(json.dumps({"benchmark": "x", "stream": "oracle", "seed": 0}))
    _results(foreign)
    with pytest.raises(NotOurFolder, match="another command's folder"):
        start_over(foreign, {"mode": "direct", COMMAND_KEY: "run"})
    assert (foreign / "predictions.jsonl").exists()


#: Commands that write a folder but take no --fresh, and why.
NO_FRESH = {
    "helpmeout summarize": "writes tables read off evaluate folders, which a rerun replaces whole",
    "eval merge": "writes one file, which a rerun replaces whole",
    "models.tiny": "a model folder: a rerun of the same model is refused, another --out is the way",
}


WRITERS = [ep for ep in ENTRY_POINTS if ep.flags.get("out")]


def test_the_exceptions_are_commands_that_write_a_folder():
    assert set(NO_FRESH) <= {ep.name for ep in WRITERS} and len(WRITERS) - len(NO_FRESH) >= 7


@pytest.mark.parametrize("ep", [ep for ep in WRITERS if ep.name not in NO_FRESH], ids=lambda ep: ep.name)
def test_every_command_that_writes_a_folder_takes_fresh(ep, capsys):
    argv = ([ep.argv[0]] if not ep.argv[0].startswith(("-", "{")) else []) + ["--help"]
    module, fn = ep.target.split(":")
    try:
        code = getattr(importlib.import_module(module), fn)(argv)
    except SystemExit as e:  # argparse's --help
        code = e.code
    assert code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--fresh" in text and "start the folder over" in text and "a user's other files stay" in text
