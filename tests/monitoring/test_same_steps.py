"""A learned monitor writes the same ``steps.jsonl``, byte for byte, whatever the thread count and the CPU
(issue 34 item 8). Two subprocesses run the one-class transformer (torch) on EPIC-Tent-O with a small grid: one
with 1 thread, one with 2 threads and the kernels of a CPU without AVX-512 or AVX2 (``ATEN_CPU_CAPABILITY``,
``MKL_ENABLE_INSTRUCTIONS``: how torch and MKL pick their code per CPU). In float32 the second choice alone
changed the chosen threshold and so the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(root, out: Path, threads: int, other_cpu: bool) -> bytes:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    env.update({k: str(threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    if other_cpu:
        env.update(ATEN_CPU_CAPABILITY="default", MKL_ENABLE_INSTRUCTIONS="SSE4_2")
    argv = [sys.executable, "-m", "ego_adr.monitoring", "evaluate", "--benchmark", "epic-tent-o", "--stream",
            "oracle", "--monitor", "sgt-oneclass", "--monitor-option", "hidden=8", "--monitor-option",
            "max_epochs=2", "--monitor-option", "folds=2", "--data-root", str(root), "--out", str(out), "--quiet"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return (out / "steps.jsonl").read_bytes()


@pytest.mark.slow  # two subprocesses, each importing torch (about 4 s of CPU each)
def test_a_learned_monitor_writes_the_same_bytes_on_1_and_2_threads_and_other_kernels(online_root, tmp_path):
    one = _run(online_root, tmp_path / "one", 1, False)
    two = _run(online_root, tmp_path / "two", 2, True)
    assert one == two
    m = json.loads((tmp_path / "one" / "metrics.json").read_text())
    assert m["options"] == {"folds": 2, "hidden": [8], "max_epochs": 2, "seed": 0} and m["cpu"] and m["versions"]
    ident = json.loads((tmp_path / "one" / "identity.json").read_text())
    assert ident["option.hidden"] == [8]
