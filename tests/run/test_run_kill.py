"""Nothing lost: a run killed with SIGKILL half-way and restarted ends with every sample exactly once."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest


def _ids(path):
    ids = []
    for line in path.read_text().splitlines():
        try:
            ids.append(json.loads(line)["sample_id"])
        except (json.JSONDecodeError, KeyError):
            pass
    return ids


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_sigkill_half_way_then_resume_gives_every_sample_exactly_once(tmp_path, tiny_model_dir, demo_root):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "ego_adr.run", "--output-dir", str(out), "--mode", "shallow", "--batch-size", "1",
           "--max-new-tokens", "24", "--quiet", "--no-cache"]
    env = dict(os.environ)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    pred = out / "predictions.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if pred.exists() and len(_ids(pred)) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed: " + proc.stderr.read().decode()[-500:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = len(_ids(pred))
    # simulate a torn write as well: half a JSON line at the end of the file
    with pred.open("a") as f:
        f.write('{"sample_id": "torn-li')
    # the restart in this process: the same code as `python -m ego_adr.run`, a torch start less (issue 46 item 12)
    from ego_adr.run.cli import main

    assert main(cmd[3:]) == 0
    ids = _ids(pred)
    run = json.loads((out / "run.json").read_text())
    n = run["data"]["n_samples"]
    assert 3 <= killed_at < n
    assert len(ids) == n and len(set(ids)) == n
    assert run["resumed_from"] == killed_at
