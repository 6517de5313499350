"""Issue 11: every user mistake stops before work starts with one line that says what to do (exit 2, no
traceback); Ctrl-C stops cleanly with one line and the rerun resumes; help texts show true defaults; each script
prints its own usage."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ego_adr.run.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_cli(capsys):
    def run(*args):
        capsys.readouterr()
        try:
            rc = main([*args, "--quiet"])
        except SystemExit as e:  # argparse errors
            rc = e.code
        return rc, capsys.readouterr().err.strip()

    return run


def _read_only_dir(tmp_path: Path) -> Path:
    """A folder this process cannot write: permission bits for a normal user; root ignores them, so there a
    path inside sysfs (a read-only filesystem) stands in."""
    if os.geteuid() == 0:
        return Path("/sys/ego_adr_read_only_test")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return d


def _mistakes(tmp_path: Path) -> dict[str, list[str]]:
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    typed = tmp_path / "typed.yaml"
    typed.write_text("frames: eight\nsources: captaincook4d\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("frames: [8\n")
    ro = _read_only_dir(tmp_path)
    out = ["--output-dir", str(tmp_path / "out")]
    return {
        "unknown model": ["--model", "qwen-vl-9000", *out],
        "model folder missing": ["--model", "./no/such/model", *out],
        "device gpu": ["--device", "gpu", *out],
        "bad dtype": ["--dtype", "half", *out],
        "bad gpu memory": ["--gpu-memory", "lots", *out],
        "typed yaml": ["--config", str(typed), *out],
        "broken yaml": ["--config", str(broken), *out],
        "missing yaml": ["--config", str(tmp_path / "none.yaml"), *out],
        "output is a file": ["--output-dir", str(a_file)],
        "read-only output": ["--output-dir", str(ro / "out")],
        "read-only cache": ["--cache-dir", str(ro / "cache"), *out],
        "bad base url": ["--backend", "openai", "--model", "m", "--base-url", "localhost:8000", *out],
        "limit zero": ["--limit", "0", *out],
        "limit not a number": ["--limit", "five", *out],
        "shard out of range": ["--num-shards", "2", "--shard-index", "2", *out],
    }


def test_each_mistake_is_one_line_and_exit_2(tmp_path, run_cli):
    for name, args in _mistakes(tmp_path).items():
        rc, err = run_cli(*args)
        assert rc == 2, (name, rc, err)
        assert len(err.splitlines()) == 1 and err.startswith("error: "), (name, err)
    assert not (tmp_path / "out").exists()  # nothing was started


def test_cuda_without_a_gpu_is_one_line(tmp_path, run_cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    rc, err = run_cli("--device", "cuda", "--output-dir", str(tmp_path / "o"))
    assert rc == 2 and len(err.splitlines()) == 1 and "--device cpu" in err


def test_memory_plan_refusal_is_one_line(tmp_path, run_cli, tiny_model_dir, demo_root):
    rc, err = run_cli("--gpu-memory", "0.01GB", "--limit", "1", "--output-dir", str(tmp_path / "o"))
    assert rc == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("error: could not load model") and "will not fit" in err


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_help_shows_true_defaults_and_scripts_their_own_usage():
    from ego_adr.run.cli import build_parser

    text = build_parser().format_help()
    assert "(default: None)" not in text and "(default: 256" in text
    for script in ("table5", "table6", "frames"):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), "--help"], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.startswith(f"usage: python scripts/{script}.py"), r.stdout[:200]
        assert "experiment" not in r.stdout.split("options:")[0]  # its YAML is fixed: no positional argument


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_ctrl_c_stops_with_one_line_and_the_rerun_resumes(tmp_path, tiny_model_dir, demo_root):
    out = tmp_path / "run"
    # the whole demo set, nothing from the stage cache: enough real work left after the first row that the
    # signal lands mid-run even on a fast machine (with 4 cached samples the run could finish first)
    n = 16
    cmd = [sys.executable, "-m", "ego_adr.run", "--mode", "shallow", "--limit", str(n), "--batch-size", "1",
           "--max-new-tokens", "4", "--no-cache", "--output-dir", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    preds = out / "predictions.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if preds.is_file() and preds.read_text().count("\n") >= 1:
            break
        time.sleep(0.1)
    if proc.poll() is not None:
        pytest.fail(f"run ended before it could be interrupted: {proc.stderr.read()[-1000:]}")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("interrupted:")
    saved = preds.read_text().count("\n")
    assert 1 <= saved < n
    # the rerun in this process: the same code as `python -m ego_adr.run`, a torch start less (issue 46 item 12)
    from ego_adr.run.cli import main

    assert main(cmd[3:]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["resumed_from"] == saved and run["n_rows"] == n
    ids = [json.loads(line)["sample_id"] for line in preds.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == n
