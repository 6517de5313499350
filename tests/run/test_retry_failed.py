"""Issue 11, done-when: a run against a dead port, then a live ``python -m ego_adr.models.serve`` over the tiny
model. The outage is recorded as retryable (exit 3 with a summary), the probe's connection error is never cached as
a verdict, and after the server is back ``--retry-failed`` ends identical to an uninterrupted run, with the probe
verdict a direct probe of the live server gives."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Result:
    def __init__(self, returncode: int, stderr: str) -> None:
        self.returncode, self.stderr = returncode, stderr


@pytest.fixture
def cli(capsys):
    """``python -m ego_adr.run`` in this process (its exit status and stderr), to keep the test short."""
    from ego_adr.run.cli import main

    def run(*args):
        capsys.readouterr()
        rc = main([*args, "--quiet"])
        return _Result(rc, capsys.readouterr().err)

    return run


def _rows(out):
    return {r["sample_id"]: r for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}


def _wait_for(port: int, proc, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited early: {proc.stderr.read()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    pytest.fail("server did not come up")


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_outage_then_live_server_retry_failed_equals_uninterrupted_run(tmp_path, tiny_model_dir, demo_root, cli):
    port = _free_port()
    cfg = tmp_path / "no_retries.yaml"
    cfg.write_text("extra: {max_retries: 0}\n")  # backend retries off: the outage is seen at once
    common = ["--model", "tiny", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "--limit", "4",
              "--max-new-tokens", "8", "--config", str(cfg)]
    cache, out, auto = tmp_path / "cache", tmp_path / "interrupted", tmp_path / "auto"

    r = cli(*common, "--mode", "shallow", "--output-dir", str(out), "--cache-dir", str(cache))
    assert r.returncode == 3, r.stderr
    assert "4 of 4 samples failed on infrastructure" in r.stderr and "--retry-failed" in r.stderr
    assert all(row["failure_kind"] == "infrastructure" for row in _rows(out).values())
    r = cli(*common, "--mode", "auto", "--output-dir", str(auto), "--cache-dir", str(cache))
    assert r.returncode == 3 and "routing probe could not reach" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not list((cache / "probe").glob("*.json"))

    server = subprocess.Popen([sys.executable, "-m", "ego_adr.models.serve", "--model", "tiny", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        _wait_for(port, server)
        r = cli(*common, "--mode", "shallow", "--output-dir", str(out), "--cache-dir", str(cache), "--retry-failed")
        assert r.returncode == 0, r.stderr
        whole = tmp_path / "whole"
        r = cli(*common, "--mode", "shallow", "--output-dir", str(whole), "--cache-dir", str(tmp_path / "cache2"))
        assert r.returncode == 0, r.stderr
        a, b = _rows(out), _rows(whole)
        key = lambda r: (r["prediction"], r["failure"], r["raw"], r["stages"])  # noqa: E731
        assert {k: key(v) for k, v in a.items()} == {k: key(v) for k, v in b.items()}
        assert all(v["failure"] is None or v["failure_kind"] == "sample" for v in a.values())

        r = cli(*common, "--mode", "auto", "--output-dir", str(auto), "--cache-dir", str(cache))
        assert r.returncode == 0, r.stderr
        probe = json.loads((auto / "run.json").read_text())["pipeline"]["probe"]
        from ego_adr.models.openai_api import OpenAIChatModel
        from ego_adr.reasoning.probe import run_probe

        direct = run_probe(OpenAIChatModel("tiny", base_url=f"http://127.0.0.1:{port}/v1"))
        assert probe["stage1"]["error"] is None and (probe["route"], probe["reason"]) == (direct.route, direct.reason)
    finally:
        server.kill()
        server.wait()
