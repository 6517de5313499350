"""Issue 28, item 7: with no network, a model that is not in the local cache is an outage found in about a second
and said in one line (exit 3), not 26-36 s of the hub client's retries ending in "user mistake" (exit 2).

No test touches the network: an unreachable hub is ``HF_ENDPOINT`` on a closed loopback port, a hub that never
answers is a loopback socket that is listening but never replies, a reachable one is a loopback HTTP server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from ego_adr.models import hub

REPO = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connecting is refused at once
    return port


@pytest.fixture(autouse=True)
def _fresh_answers():
    hub.forget()
    yield
    hub.forget()


@pytest.mark.slow  # starts a process (see tests/README.md)
def test_run_with_an_unreachable_hub_exits_3_in_one_line_within_seconds(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=f"http://127.0.0.1:{_closed_port()}",
               PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
    out = tmp_path / "run"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "ego_adr.run", "--model", "qwen2.5-vl", "--limit", "1",
                        "--output-dir", str(out)], capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - t0
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 3, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: Qwen/Qwen2.5-VL-7B-Instruct is not in the local"), lines
    assert "cannot be reached" in lines[0] and "Retrying" not in r.stderr
    assert took < 15, took  # interpreter start-up included; the hub client's retries took 26-36 s
    assert not out.exists()  # nothing written: an outage is never a result


def test_a_closed_endpoint_is_unreachable_at_once(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    t0 = time.monotonic()
    why = hub.unreachable()
    assert why and "refused" in why.lower()
    assert time.monotonic() - t0 < hub.TIMEOUT_S + 0.5
    with pytest.raises(hub.InfrastructureError) as e:
        hub.require_reachable("org/model")
    assert e.value.exit_code == 3 and "org/model" in str(e.value) and "\n" not in str(e.value)


def test_an_endpoint_that_never_answers_times_out_in_the_bound(monkeypatch):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the connection; nobody ever reads or replies
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        t0 = time.monotonic()
        why = hub.unreachable(timeout=0.5)
        took = time.monotonic() - t0
    finally:
        silent.close()
    assert why == "no answer within 0.5 s"
    assert took < 2.0, took


def test_any_http_answer_means_reachable_and_the_answer_is_kept(monkeypatch):
    asked = []

    class NotFound(BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 - the stdlib's name
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.server_address[1]}/")
        assert hub.unreachable() is None
        hub.require_reachable("org/model")  # no error
        assert hub.unreachable() is None and len(asked) == 1  # asked once per process and endpoint
    finally:
        srv.shutdown()
        srv.server_close()
