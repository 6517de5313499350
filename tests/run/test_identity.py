"""Issue 11, run identity: a folder written by one set of settings is never silently extended by another, and two
live runs never share a folder. The runs use a scripted model double (the code under test is the runner around the
model) on the embedded demo set with real decoded videos."""

import json
import os
from pathlib import Path

import pytest

from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.run.cli import main
from ego_adr.run.config import ConfigError, RunConfig
from ego_adr.run.identity import FolderBusy, FolderLock, IdentityMismatch, NotOurFolder, claim
from ego_adr.run.runner import execute


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def test_second_run_with_other_settings_stops_and_names_them(tmp_path, demo_root):
    out = tmp_path / "X"
    execute(RunConfig(output_dir=str(out), mode="shallow", limit=8), progress=False, model=ScriptedModelDouble())
    assert len(_rows(out)) == 8
    with pytest.raises(IdentityMismatch) as e:
        execute(RunConfig(output_dir=str(out), mode="direct", frames=16, limit=8), progress=False,
                model=ScriptedModelDouble())
    msg = str(e.value)
    assert "\n" not in msg and "mode" in msg and "frames" in msg and "--fresh" in msg and "--out" in msg
    assert len(_rows(out)) == 8  # nothing was appended
    # same settings resume (nothing to do), --fresh starts over with the new settings only
    execute(RunConfig(output_dir=str(out), mode="shallow", limit=8), progress=False, model=ScriptedModelDouble())
    execute(RunConfig(output_dir=str(out), mode="direct", frames=16, limit=8), progress=False,
            model=ScriptedModelDouble(), fresh=True)
    rows = _rows(out)
    assert len(rows) == 8 and {r["mode"] for r in rows} == {"direct"} and {r["frames"] for r in rows} == {16}
    ident = json.loads((out / "identity.json").read_text())
    assert ident["mode"] == "direct" and ident["frames"] == 16 and ident["route"] == "direct"
    assert json.loads((out / "run.json").read_text())["identity"] == ident


def test_cli_mismatch_is_one_line_and_exit_2(tmp_path, demo_root, capsys):
    out = tmp_path / "X"
    execute(RunConfig(output_dir=str(out), mode="shallow", limit=4), progress=False, model=ScriptedModelDouble())
    rc = main(["--output-dir", str(out), "--mode", "direct", "--limit", "4", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("error: ") and "mode" in err


def test_another_video_root_is_another_identity(tmp_path, demo_root):
    out = tmp_path / "X"
    execute(RunConfig(output_dir=str(out), mode="shallow", limit=4), progress=False, model=ScriptedModelDouble())
    other = tmp_path / "other_videos"
    other.mkdir()
    with pytest.raises(IdentityMismatch, match="videos"):
        execute(RunConfig(output_dir=str(out), mode="shallow", limit=4, video_root=str(other)), progress=False,
                model=ScriptedModelDouble())


def test_another_limit_or_model_fingerprint_is_another_identity(tmp_path, demo_root):
    out = tmp_path / "X"
    execute(RunConfig(output_dir=str(out), mode="shallow", limit=4), progress=False, model=ScriptedModelDouble())
    with pytest.raises(IdentityMismatch, match="limit"):
        execute(RunConfig(output_dir=str(out), mode="shallow", limit=6), progress=False, model=ScriptedModelDouble())
    # a folder half done by one model's weights is not finished by other weights under the same name
    (out / "predictions.jsonl").write_text("".join(line + "\n" for line in
                                                   (out / "predictions.jsonl").read_text().splitlines()[:2]))
    with pytest.raises(IdentityMismatch, match="model_fingerprint"):
        execute(RunConfig(output_dir=str(out), mode="shallow", limit=4), progress=False,
                model=ScriptedModelDouble(fingerprint="other-weights"))


def test_folder_with_results_but_no_identity_is_not_adopted(tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    (out / "predictions.jsonl").write_text('{"sample_id": "a"}\n')
    with pytest.raises(IdentityMismatch, match="holds results but no identity.json"):
        claim(out, {"mode": "auto"})
    with pytest.raises(NotOurFolder, match="no identity.json"):  # nor does --fresh take it (issue 46)
        claim(out, {"mode": "auto"}, fresh=True)
    assert (out / "predictions.jsonl").exists()


def test_a_live_run_locks_its_folder(tmp_path, demo_root):
    out = tmp_path / "X"
    with FolderLock(out):
        with pytest.raises(FolderBusy, match="another run"):
            execute(RunConfig(output_dir=str(out), mode="shallow", limit=2), progress=False,
                    model=ScriptedModelDouble())
    assert not (out / "predictions.jsonl").exists()
    execute(RunConfig(output_dir=str(out), mode="shallow", limit=2), progress=False, model=ScriptedModelDouble())
    assert len(_rows(out)) == 2  # the lock is gone with its holder


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_lock_held_by_another_process_stops_the_cli(tmp_path, demo_root):
    import subprocess
    import sys

    out = tmp_path / "X"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from ego_adr.run.identity import FolderLock;"
                               f"l = FolderLock({str(out)!r}).acquire(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=f"pid {holder.pid}"):
            execute(RunConfig(output_dir=str(out), mode="shallow", limit=2), progress=False,
                    model=ScriptedModelDouble())
    finally:
        holder.kill()
        holder.wait()


def test_experiment_grid_uses_the_same_rule_and_labels_the_model_used(tmp_path, demo_root):
    from ego_adr.run.experiments import load_experiment, run_experiment

    exp = load_experiment(Path(__file__).resolve().parents[2] / "configs" / "experiments" / "table5.yaml")
    exp["cells"] = exp["cells"][:2]
    over = {"model": "double-a", "limit": 2}
    table, _ = run_experiment(exp, over, tmp_path / "grid", progress=False, model=ScriptedModelDouble())
    assert "double-a" in table and "Qwen2-VL" not in table  # numbers of the double are not labelled Qwen2-VL
    with pytest.raises(IdentityMismatch, match="model"):
        run_experiment(exp, {**over, "model": "double-b"}, tmp_path / "grid", progress=False,
                       model=ScriptedModelDouble())


def test_edited_annotations_are_another_identity(tmp_path, shared_data):
    """A re-downloaded or hand-edited label file changes what the rows mean: resuming stops and says so."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(shared_data, data)
    cfg = dict(data_root=str(data), video_root=str(tmp_path), sources=["egooops"], limit=2, mode="shallow",
               output_dir=str(tmp_path / "X"))
    execute(RunConfig(**cfg), progress=False, model=ScriptedModelDouble())
    recs = json.loads((data / "egooops_answer.json").read_text())
    recs[0]["close_end_answer"] = "Wrong order" if recs[0]["close_end_answer"] != "Wrong order" else "Omission"
    (data / "egooops_answer.json").write_text(json.dumps(recs))
    with pytest.raises(IdentityMismatch, match="annotations"):
        execute(RunConfig(**cfg), progress=False, model=ScriptedModelDouble())


def test_every_run_setting_is_in_the_identity_or_named_as_not():
    # derived from RunConfig: a new setting joins the identity unless NOT_IDENTITY says why it must not
    from dataclasses import fields

    from ego_adr.run.identity import NOT_IDENTITY, OMITTED_AT_PAPER_VALUE, OPEN_END_ONLY, run_identity

    names = {f.name for f in fields(RunConfig)}
    assert set(NOT_IDENTITY) <= names and set(OPEN_END_ONLY) <= names and set(OMITTED_AT_PAPER_VALUE) <= names
    for task in ("multiple-choice", "open-end"):
        ident = run_identity(RunConfig(task=task), [], {"sources": ["demo"]})
        wanted = names - set(NOT_IDENTITY) - (set() if task == "open-end" else set(OPEN_END_ONLY))
        assert not set(OMITTED_AT_PAPER_VALUE) & set(ident)  # at the paper's value: left out (older folders resume)
        wanted -= set(OMITTED_AT_PAPER_VALUE)
        derived = {"base_url", "sources"}  # recorded in their own form (the served URL, the resolved sources)
        assert wanted <= set(ident) and not (set(NOT_IDENTITY) - derived) & set(ident)
    assert run_identity(RunConfig(seed=1), [], {}) != run_identity(RunConfig(seed=2), [], {})
    assert run_identity(RunConfig(scoring="likelihood"), [], {})["scoring"] == "likelihood"  # a deviation: named


def test_validate_returns_a_resolved_copy_and_leaves_the_config_as_given():
    cfg = RunConfig(mode="direct")  # (the public protocol would need ../shared's public source)
    before = dict(vars(cfg))
    got = cfg.validate()
    assert vars(cfg) == before  # nothing filled in place
    assert got is not cfg and got.batch_size == 1 and got.max_new_tokens == 256  # hf default, ego-adr budget
    assert got.extra["max_new_tokens_from"] == "protocol ego-adr" and got.gpu_memory == "24GB"
    assert got.validate() == got  # resolving twice changes nothing
    got.judges.append("x")
    assert "x" not in cfg.judges  # the copy's lists are its own
    assert RunConfig(max_new_tokens=40).validate().max_new_tokens == 40  # an explicit budget wins


def test_lock_file_goes_with_its_holder_and_a_removed_one_is_not_trusted(tmp_path, monkeypatch):
    from ego_adr import folders

    a = FolderLock(tmp_path).acquire()
    assert (tmp_path / ".lock").read_text() == str(os.getpid())
    with pytest.raises(FolderBusy):
        FolderLock(tmp_path).acquire()
    a.release()
    assert not (tmp_path / ".lock").exists()  # a finished run leaves no lock file behind

    # The race the check closes: a taker opened the file just before its holder removed it and let go. Locking
    # that removed file would let a third process lock a new one at the same time.
    holder = FolderLock(tmp_path).acquire()
    stale = os.open(tmp_path / ".lock", os.O_RDWR)
    holder.release()
    real_open, opened = os.open, []

    def open_first_the_stale_file(path, *args, **kw):  # the taker's first open happened before the removal
        opened.append(path)
        return stale if len(opened) == 1 else real_open(path, *args, **kw)

    monkeypatch.setattr(folders.os, "open", open_first_the_stale_file)
    taker = FolderLock(tmp_path).acquire()
    monkeypatch.undo()
    assert len(opened) == 2 and (tmp_path / ".lock").exists()  # retried on the file now at the path
    with pytest.raises(FolderBusy):
        FolderLock(tmp_path).acquire()  # and that one really is held
    taker.release()


def test_a_setting_inside_a_group_is_named_by_its_path(tmp_path):
    """Issue 38, item 2: a group of settings (the stream's window/stride/frames, a protocol's options) that differs
    in one key names that key with both values, not the whole group cut to 40 characters."""
    out = tmp_path / "G"
    group = {"window": 8.0, "stride": 4.0, "frames": 8, "policy": "bin-centre"}
    claim(out, {"model": "m", "settings": group})
    (out / "ticks.jsonl").write_text('{"t": 4.0}\n')  # the folder holds results
    with pytest.raises(IdentityMismatch) as e:
        claim(out, {"model": "m", "settings": {**group, "frames": 16}})
    msg = str(e.value)
    assert "settings.frames 8 -> 16" in msg and "settings.window" not in msg and "model" not in msg
    with pytest.raises(IdentityMismatch, match=r'settings.policy "bin-centre" -> null'):
        claim(out, {"model": "m", "settings": {k: v for k, v in group.items() if k != "policy"}})
