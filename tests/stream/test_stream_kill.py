"""`python -m ego_adr.stream` killed with SIGKILL half-way, then rerun: it resumes, every tick exactly once."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ego_adr.stream.runner import read_log, tick_times


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_sigkill_then_rerun_resumes(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "stream"
    cmd = [sys.executable, "-m", "ego_adr.stream", "--out", str(out), "--mode", "shallow", "--frames", "4",
           "--max-new-tokens", "24", "--no-cache", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = out / "ticks.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if len(read_log(log)) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "finished before it could be killed: " + proc.stderr.read().decode()[-500:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = len(read_log(log))
    # the rerun in this process: the same code as `python -m ego_adr.stream`, a torch start less (issue 46 item 12)
    from ego_adr.stream.cli import main

    capsys.readouterr()
    assert main(cmd[3:]) == 0
    assert f"resumed: {killed_at} ticks replayed" in capsys.readouterr().out
    recs = read_log(log)
    run = json.loads((out / "run.json").read_text())
    assert [x["t"] for x in recs[:-1]] == tick_times(run["duration_s"], 4.0) and recs[-1]["final"]
    assert run["n_ticks"] == len(recs) - 1 > killed_at >= 2
    alerts = [json.loads(x) for x in (out / "alerts.jsonl").read_text().splitlines()]
    assert len(alerts) == run["n_alerts"] and len({(a["t"], a["step_index"], a["error_type"]) for a in alerts}) == \
        len(alerts)
    assert (out / "timeline.png").stat().st_size > 0 and "<svg" in (out / "timeline.html").read_text()
