"""The chunk launcher on the demo set: a real local Ray cluster (2 CPUs) and --local processes run real
``ego_adr.run`` chunks, one of which is killed once through the launcher's test hook; the merged predictions and
metrics must equal those of one unsharded run (timings aside)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ego_adr.run.launch_ray import LaunchError, _check_plan, chunk_command, split_run_args

# shallow mode: the model narrates, the keyword classifier decides, so every row carries real model text;
# batch 1 and no stage cache, so each chunk really computes its rows (nothing is copied from the baseline)
RUN_ARGS = ["--limit", "3", "--mode", "shallow", "--frames", "4", "--max-new-tokens", "12", "--batch-size", "1",
            "--no-cache"]
REPO = Path(__file__).resolve().parents[2]


def _env() -> dict:
    """This checkout first on the path of the launcher, its Ray workers and chunk processes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _launch(args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "ego_adr.run.launch_ray", *args], capture_output=True, text=True,
                          cwd=cwd, env=_env(), timeout=300)


def _rows(path: Path) -> dict:
    rows = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        row.pop("timings")
        rows[row["sample_id"]] = row
    return rows


def _metrics(path: Path) -> dict:
    m = json.loads(path.read_text())
    return {k: m[k] for k in ("overall", "per_source", "simple_average", "per_type_accuracy", "confusion_matrix")}


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory, demo_root, tiny_model_dir) -> Path:
    from ego_adr.run.cli import config_from_args
    from ego_adr.run.runner import execute

    out = tmp_path_factory.mktemp("unsharded") / "run"
    cfg, _ = config_from_args([*RUN_ARGS, "--output-dir", str(out)])
    execute(cfg, progress=False)  # in this process: the same code as `python -m ego_adr.run`, one start less
    return out


def _assert_same_as_unsharded(out: Path, unsharded: Path, n_chunks: int) -> None:
    merged, single = _rows(out / "predictions.jsonl"), _rows(unsharded / "predictions.jsonl")
    assert len(single) == 3 and merged == single
    assert _metrics(out / "metrics.json") == _metrics(unsharded / "metrics.json")
    per_chunk = [_rows(out / f"chunk-{i}" / "predictions.jsonl") for i in range(n_chunks)]
    assert all(per_chunk), "every chunk holds samples"
    assert sum(len(c) for c in per_chunk) == len(single)  # each sample in exactly one chunk


def test_split_run_args_takes_output_dir_and_refuses_shard_flags(tmp_path):
    rest, out = split_run_args(["--limit", "2", "--output-dir", "runs/x", "--frames=8"])
    assert rest == ["--limit", "2", "--frames=8"] and out == "runs/x"
    assert split_run_args(["--output-dir=o"]) == ([], "o")
    with pytest.raises(LaunchError, match="--shard-index"):
        split_run_args(["--shard-index", "1"])
    cmd = chunk_command(["--limit", "2"], tmp_path, 3, 2, python="py")
    assert cmd[:5] == ["py", "-m", "ego_adr.run", "--limit", "2"]
    assert cmd[cmd.index("--out") + 1] == str(tmp_path / "chunk-2")
    assert cmd[cmd.index("--num-shards") + 1] == "3" and cmd[cmd.index("--shard-index") + 1] == "2"


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_bad_run_arguments_stop_before_any_chunk_with_one_line(tmp_path):
    out = tmp_path / "bad"
    r = _launch(["--local", "--num-chunks", "2", "--", "--frames", "not-a-number", "--output-dir", str(out)])
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().count("\n") == 0 and "--frames" in r.stderr
    assert not out.exists()


@pytest.mark.slow
def test_ray_cluster_runs_chunks_and_a_crashed_chunk_resumes(tmp_path, unsharded, missing_environment):
    """Two chunks on one Ray CPU (so they queue); chunk 1 (two samples) is SIGKILLed after its first prediction, Ray
    retries it and the retry resumes from that chunk's own predictions file, computing only the second sample.
    Ray comes with the test extra: without it this skips, and fails under CI=true."""
    if importlib.util.find_spec("ray") is None:
        missing_environment("ray", "pip install -e '.[test]' installs it")
    out = tmp_path / "ray"
    r = _launch(["--ray-cpus", "1", "--num-chunks", "2", "--test-crash-chunk", "1", "--",
                 *RUN_ARGS, "--output-dir", str(out)], cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "on Ray tasks (local Ray instance)" in r.stdout
    _assert_same_as_unsharded(out, unsharded, 2)
    assert (out / "chunk-1.attempts").read_text() == "2" and (out / "chunk-0.attempts").read_text() == "1"
    log = (out / "chunk-1.log").read_text()
    killed_with = int(log.split("killed on attempt 1 with ")[1].split()[0])
    run = json.loads((out / "chunk-1" / "run.json").read_text())
    assert killed_with == 1 and run["resumed_from"] == 1  # the retry kept what the killed attempt had written
    assert run["invocations"][-1]["processed"] == 1  # and computed only the sample that was left


@pytest.mark.slow
def test_local_processes_retry_a_crashed_chunk_and_equal_the_unsharded_run(tmp_path, unsharded, monkeypatch,
                                                                           capsys, caplog):
    """The launcher runs in this process (its chunks, merge and score are processes of their own, as always), so
    the four launches below start no interpreter of their own (issue 46: the test took minutes on a busy machine)."""
    import logging

    from ego_adr.run.launch_ray import main

    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])  # the chunks import this checkout, as _launch's do
    out = tmp_path / "local"
    assert main(["--local", "--num-chunks", "2", "--test-crash-chunk", "1", "--", *RUN_ARGS,
                 "--output-dir", str(out)]) == 0, capsys.readouterr()
    stdout = capsys.readouterr().out
    assert "chunk 1/2: ok" in stdout and "attempt 2" in stdout
    _assert_same_as_unsharded(out, unsharded, 2)
    run = json.loads((out / "chunk-1" / "run.json").read_text())  # chunk 1 holds two of the three samples
    assert run["resumed_from"] == 1 and run["invocations"][-1]["processed"] == 1
    (out / "notes.txt").write_text("mine")  # a user's file in the launch folder

    # other settings into that folder: refused in one line that names the launcher's own --fresh
    other = [a if a != "4" else "6" for a in RUN_ARGS]  # --frames 6
    assert main(["--local", "--num-chunks", "2", "--", *other, "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "frames" in err and "--fresh before '--'" in err
    assert main(["--local", "--num-chunks", "2", "--", *other, "--fresh", "--output-dir", str(out)]) == 2
    assert "put --fresh before '--'" in capsys.readouterr().err
    # --fresh before '--': the launch is discarded (said, file by file) and rerun with the new settings -- cut
    # another way, which only a discarded plan allows; the user's file stays
    with caplog.at_level(logging.WARNING, logger="ego_adr.folders"):
        assert main(["--local", "--num-chunks", "1", "--no-score", "--fresh", "--", *other,
                     "--output-dir", str(out)]) == 0
    said = caplog.text.split("--fresh: removed ")[1].split(" from ")[0].split(", ")
    assert {"predictions.jsonl", "metrics.json", "identity.json", "chunk-0", "chunk-1", "chunk-0.attempts",
            "chunk-1.log", "launch.json"} <= set(said) and "notes.txt" not in said
    assert json.loads((out / "launch.json").read_text())["run_args"] == other
    assert (out / "chunk-0.attempts").read_text() == "1" and not (out / "chunk-1").exists()
    rows = _rows(out / "predictions.jsonl")
    assert len(rows) == 3 and {len(r["frames_info"]["indices"]) for r in rows.values()} == {6}
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_chunks_that_keep_failing_stop_the_launch_before_the_merge(tmp_path):
    out = tmp_path / "blocked"
    out.mkdir()
    for i in range(2):  # a file where the chunk's folder should be: ego_adr.run fails at once, every attempt
        (out / f"chunk-{i}").write_text("in the way")
    r = _launch(["--local", "--num-chunks", "2", "--retries", "1", "--", "--limit", "2", "--output-dir", str(out)])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "chunk(s) 0, 1 failed after 2 attempt(s)" in r.stderr
    assert (out / "chunk-0.attempts").read_text() == "2" == (out / "chunk-1.attempts").read_text()
    assert not (out / "predictions.jsonl").exists() and not (out / "metrics.json").exists()


def test_a_chunk_failing_every_attempt_is_reported_and_the_rest_finish(tmp_path):
    from ego_adr.run.chunk_runner import run_local

    ok, bad = [sys.executable, "-c", "pass"], [sys.executable, "-c", "raise SystemExit(3)"]
    results = run_local([bad, ok, ok], tmp_path, 1, None, 2, {}, lambda res: None)
    assert [r["rc"] for r in results] == [3, 0, 0] and [r["attempt"] for r in results] == [3, 1, 1]
    assert (tmp_path / "chunk-0.log").read_text().count("--- attempt") == 3


def test_a_rerun_must_cut_the_run_the_same_way(tmp_path):
    _check_plan(tmp_path, {"num_chunks": 3, "n_samples": 3, "run_args": []})
    _check_plan(tmp_path, {"num_chunks": 3, "n_samples": 3, "run_args": []})  # same cut: resumes
    with pytest.raises(LaunchError, match="3 samples in 3 chunks, this one is 3 samples in 2 chunks"):
        _check_plan(tmp_path, {"num_chunks": 2, "n_samples": 3, "run_args": []})
    with pytest.raises(LaunchError, match="holds a launch of `ego_adr.run `, this one is `ego_adr.run --frames 4`"):
        _check_plan(tmp_path, {"num_chunks": 3, "n_samples": 3, "run_args": ["--frames", "4"]})


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_ray_mode_without_ray_says_how_to_install(tmp_path):
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("ray is installed here")
    r = _launch(["--num-chunks", "2", "--", "--output-dir", str(tmp_path / "o")])
    assert r.returncode == 2 and "pip install 'ego-adr[ray]'" in r.stderr and "--local" in r.stderr


def test_local_slots_take_the_next_chunk_while_a_slow_one_runs(tmp_path):
    """Scheduling alone, with plain processes as chunks: while chunk 0 runs, the other slot runs all the rest."""
    from ego_adr.run.chunk_runner import run_local

    show = "import os; print('GPU', os.environ['CUDA_VISIBLE_DEVICES'])"
    last = tmp_path / "chunk-4.log"  # the slow chunk runs until the last fast chunk has run (60 s at most)
    wait = (f"; import time, pathlib; p = pathlib.Path({str(last)!r}); t = time.time()\n"
            "while time.time() - t < 60 and 'GPU' not in (p.read_text() if p.exists() else ''): time.sleep(0.05)\n"
            "raise SystemExit(0 if 'GPU' in p.read_text() else 1)")
    slow = [sys.executable, "-c", show + wait]
    fast = [sys.executable, "-c", show]
    done: list[int] = []
    results = run_local([slow, fast, fast, fast, fast], tmp_path, 2, ["7", "9"], 0, {},
                        lambda res: done.append(res["index"]))
    assert [r["rc"] for r in results] == [0] * 5  # chunk 0 saw chunk 4 run while it was still running
    assert sorted(done) == [0, 1, 2, 3, 4] and done.index(0) >= 3 and [r["index"] for r in results] == [0, 1, 2, 3, 4]
    gpu = [(tmp_path / f"chunk-{i}.log").read_text().split("GPU ")[1].split()[0] for i in range(5)]
    assert gpu[0] in ("7", "9") and set(gpu[1:]) == {"7", "9"} - {gpu[0]}  # a running chunk's GPU is its own


def test_dry_run_through_the_launcher_prints_the_cut_and_the_preflight(tmp_path, capsys, demo_root):
    from ego_adr.run.launch_ray import main

    out = tmp_path / "never"
    assert main(["--num-chunks", "2", "--", "--limit", "3", "--output-dir", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert f"launch plan: 3 samples in 2 chunks of ~2 into {out}/chunk-*" in text and "| demo | 3 |" in text
    assert not out.exists()


def test_a_launch_with_other_settings_than_the_folder_refuses_before_any_chunk(tmp_path, unsharded, capsys):
    """Issue 18, item 1: a launch into a plain run's folder (the demo's default folder when no --output-dir
    follows '--') must not merge over its predictions, and a launch folder refuses a launch of other settings."""
    import shutil

    from ego_adr.run.launch_ray import main

    plain = tmp_path / "plain"
    shutil.copytree(unsharded, plain)
    before = (plain / "predictions.jsonl").read_bytes()
    direct = [a if a != "shallow" else "direct" for a in RUN_ARGS]
    assert main(["--local", "--num-chunks", "2", "--", *direct, "--output-dir", str(plain)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plain `python -m ego_adr.run`" in err
    assert (plain / "predictions.jsonl").read_bytes() == before and not list(plain.glob("chunk-*"))

    launched = tmp_path / "launched"
    from ego_adr.run.identity import claim
    from ego_adr.run.launch_ray import claim_folder, resolve_run

    ident = resolve_run(RUN_ARGS)[3]
    claim(launched, ident)
    (launched / "launch.json").write_text("{}")
    (launched / "predictions.jsonl").write_text('{"sample_id": "x"}\n')
    claim_folder(launched, ident)  # same settings: resumes
    from ego_adr.errors import UserError

    with pytest.raises(UserError, match=r"other settings \(mode \"shallow\" -> \"direct\""):
        claim_folder(launched, resolve_run(direct)[3])
    assert main(["--local", "--", *direct, "--output-dir", str(launched)]) == 2
    assert "other settings" in capsys.readouterr().err


def test_help_hides_the_test_hooks(capsys):
    from ego_adr.run.launch_ray import build_parser

    text = build_parser().format_help()
    assert "--test-crash" not in text and "--chunk-size" in text
