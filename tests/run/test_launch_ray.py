"""The shard launcher in --local mode (no Ray needed): real ego_adr.run shards on the demo set, merged and scored."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ego_adr.run.launch_ray import shard_command, split_run_args

RUN_ARGS = ["--limit", "3", "--mode", "direct", "--frames", "4", "--max-new-tokens", "8", "--no-cache"]


REPO = Path(__file__).resolve().parents[2]


def _launch(args):
    """Run from the repository root, so the shards import this checkout's ego_adr."""
    return subprocess.run(
        [sys.executable, "-m", "ego_adr.run.launch_ray", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )


def test_split_run_args_takes_output_dir_and_refuses_shard_flags(tmp_path):
    rest, out = split_run_args(["--limit", "2", "--output-dir", "runs/x", "--frames=8"])
    assert rest == ["--limit", "2", "--frames=8"] and out == "runs/x"
    assert split_run_args(["--output-dir=o"]) == ([], "o")
    with pytest.raises(SystemExit, match="--shard-index"):
        split_run_args(["--shard-index", "1"])
    cmd = shard_command(["--limit", "2"], tmp_path, 3, 2, python="py")
    assert cmd[:5] == ["py", "-m", "ego_adr.run", "--limit", "2"]
    assert cmd[cmd.index("--output-dir") + 1] == str(tmp_path / "shard-2")
    assert cmd[cmd.index("--num-shards") + 1] == "3" and cmd[cmd.index("--shard-index") + 1] == "2"


@pytest.mark.slow
def test_local_shards_cover_the_run_once_and_merge(tmp_path, demo_root, tiny_model_dir):
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import load_dataset

    out = tmp_path / "run"
    r = _launch(["--local", "--num-shards", "2", "--", *RUN_ARGS, "--output-dir", str(out)])
    assert r.returncode == 0, r.stdout + r.stderr
    shard_ids = []
    for i in range(2):
        rows = [json.loads(x) for x in (out / f"shard-{i}" / "predictions.jsonl").read_text().splitlines()]
        assert rows, f"shard {i} is empty"
        shard_ids.append([row["sample_id"] for row in rows])
    merged = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    merged_ids = [row["sample_id"] for row in merged]

    expected, _ = load_dataset(RunConfig(limit=3, mode="direct", frames=4))
    assert sorted(merged_ids) == sorted(s.sample_id for s in expected)  # every sample exactly once
    assert not set(shard_ids[0]) & set(shard_ids[1])
    assert sorted(shard_ids[0] + shard_ids[1]) == sorted(merged_ids)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_rows_read"] == 3 and metrics["n_duplicates_dropped"] == 0
    assert (out / "report.md").exists() and (out / "shard-0.log").exists()


def test_failed_shard_stops_before_merge(tmp_path):
    out = tmp_path / "bad"
    r = _launch(["--local", "--num-shards", "2", "--", "--frames", "not-a-number", "--output-dir", str(out)])
    assert r.returncode == 1
    assert "shard(s) 0, 1 failed" in r.stderr
    assert not (out / "predictions.jsonl").exists()


def test_ray_mode_without_ray_says_how_to_install(tmp_path):
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("ray is installed here")
    r = _launch(["--num-shards", "2", "--", "--output-dir", str(tmp_path / "o")])
    assert r.returncode != 0 and "pip install 'ego-adr[ray]'" in r.stderr and "--local" in r.stderr
