"""The step streams' output folders on the one harness (issue 43 stage 2, issue 46 item 1): a folder main wrote
before the move resumes (its identity is spelled key for key as main spelled it) and other settings are refused;
``--monitor all``'s folder holds ``all`` as asked, so a monitor that joins ``all`` later (its package installed)
runs into its own folder while the others are read back, not redone; ``--fresh`` starts a folder over."""

import json
import shutil

import pytest

from ego_adr.online_mistakes import registry

#: identity.json of one monitor's folder, as main wrote it before stage 2 of issue 43 (its keys, in its order)
MAIN_KEYS = ["command", "benchmark", "stream", "stream_sha256", "train_sha256", "test_sha256", "harness_version",
             "validation_noise", "monitor"]


def _argv(root, out, *flags, monitor="count-based"):
    return ("evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", monitor, "--data-root", root,
            "--out", out, "--quiet", *flags)


def test_a_monitor_folder_of_main_resumes_other_settings_refuse_and_fresh_starts_over(online_root, cli, tmp_path,
                                                                                     caplog):
    out = tmp_path / "count-based"
    code, _, err = cli(*_argv(online_root, out))
    assert code == 0, err
    ident = json.loads((out / "identity.json").read_text())
    assert [k for k in ident if not k.startswith("option.")] == MAIN_KEYS, list(ident)
    assert ident["command"] == "monitoring evaluate" and ident["monitor"] == "count-based"
    finished = {f: (out / f).stat().st_mtime_ns for f in ("steps.jsonl", "metrics.json", "report.md")}
    code, _, err = cli(*_argv(online_root, out))  # read back, not redone
    assert code == 0 and {f: (out / f).stat().st_mtime_ns for f in finished} == finished, err
    code, _, err = cli(*_argv(online_root, out)[:4], "oracle-merged", *_argv(online_root, out)[5:])
    assert code == 2 and len(err.strip().splitlines()) == 1 and 'stream "oracle" -> "oracle-merged"' in err, err
    (out / "mine.txt").write_text("a user's file")
    code, _, err = cli(*_argv(online_root, out)[:4], "oracle-merged", *_argv(online_root, out)[5:], "--fresh")
    removed = "--fresh: removed steps.jsonl, metrics.json, report.md, timing.json, identity.json"
    assert code == 0 and removed in caplog.text, err
    assert json.loads((out / "identity.json").read_text())["stream"] == "oracle-merged"
    assert (out / "mine.txt").read_text() == "a user's file"


@pytest.mark.slow
def test_all_as_asked_a_monitor_that_joins_later_runs_and_nothing_else_is_redone(online_root, cli, tent_all,
                                                                                 tent_all_args, tmp_path,
                                                                                 monkeypatch):
    out = tmp_path / "om"
    shutil.copytree(tent_all, out)
    ident = json.loads((out / "identity.json").read_text())
    assert ident["monitors"] == "all" and "never-alarm" in ident["resolved_monitors"]
    argv = _argv(online_root, out, *tent_all_args, monitor="all")
    # a monitor whose package is missing leaves all: the same command is not refused
    real = registry.unavailable
    monkeypatch.setattr(registry, "unavailable", lambda n: "needs a package" if n == "never-alarm" else real(n))
    code, _, err = cli(*argv)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert "never-alarm (needs a package)" in summary["not_run"]
    assert json.loads((out / "timing.json").read_text())["fold_cache"]["computed"] == 0
    assert "never-alarm" not in json.loads((out / "identity.json").read_text())["resolved_monitors"]
    # the package installed: the monitor joins all, runs into its own folder, and every other folder is read back
    monkeypatch.setattr(registry, "unavailable", real)
    shutil.rmtree(out / "never-alarm")
    others = {n: (out / n / "metrics.json").stat().st_mtime_ns for n in ident["resolved_monitors"]
              if n != "never-alarm"}
    code, _, err = cli(*argv)
    assert code == 0, err
    assert (out / "never-alarm" / "metrics.json").is_file()
    assert {n: (out / n / "metrics.json").stat().st_mtime_ns for n in others} == others
    again = json.loads((out / "summary.json").read_text())
    assert again["rows"] == json.loads((tent_all / "summary.json").read_text())["rows"]
    # a summary folder main wrote (the resolved list and every monitor's options) resumes and is re-labelled
    options = {n: json.loads((out / n / "metrics.json").read_text())["options"] for n in ident["resolved_monitors"]}
    former = {k: v for k, v in ident.items() if k != "resolved_monitors"} | {
        "monitors": ident["resolved_monitors"], "options": options}
    (out / "identity.json").write_text(json.dumps(former, indent=1))
    code, _, err = cli(*argv)
    assert code == 0, err
    assert json.loads((out / "identity.json").read_text())["monitors"] == "all"


def test_a_stacked_folder_from_before_its_grid_options_resumes_at_the_default_grid_only(online_root, cli, tent_all,
                                                                                         tmp_path):
    """``stacked`` took ``hidden`` and ``max_epochs`` (its GRU's grid, ``seq2seq-oneclass``'s) after folders of it
    were written: a folder whose identity lacks them is the run at the default grid, read back and re-labelled;
    asked with another grid it is refused and nothing is rewritten. ``--monitor all`` gave it the session's grid."""
    from ego_adr.monitoring.next_step_model import HIDDEN, MAX_EPOCHS

    out = tmp_path / "stacked"
    shutil.copytree(tent_all / "stacked", out)
    ident = json.loads((out / "identity.json").read_text())
    assert ident.pop("option.hidden") == [8, 16] and ident.pop("option.max_epochs") == 4  # tent_all's SMALL_GRID
    (out / "identity.json").write_text(json.dumps(ident))
    kept = (out / "metrics.json").stat().st_mtime_ns
    code, _, err = cli(*_argv(online_root, out, monitor="stacked"))
    assert code == 0, err
    assert (out / "metrics.json").stat().st_mtime_ns == kept
    again = json.loads((out / "identity.json").read_text())
    assert again["option.hidden"] == list(HIDDEN) and again["option.max_epochs"] == MAX_EPOCHS
    code, _, err = cli(*_argv(online_root, out, "--monitor-option", "hidden=8,16", monitor="stacked"))
    assert code == 2 and "hidden" in err, err
    assert (out / "metrics.json").stat().st_mtime_ns == kept
