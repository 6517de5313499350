"""Issue 28, item 9: ``scripts/download_annotations.py`` with no network exits 3 (infrastructure) in one line and
at once, a wrong ``--base-url``/``--ref`` exits 2, and nothing half-written is left. No test touches the network:
an unreachable host is a closed loopback port, a wrong URL a loopback server that answers 404, and the good case a
``file://`` copy of the real annotations (``../shared/egoerrorvqa``)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "download_annotations.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_no_network_is_exit_3_in_one_line_and_writes_nothing(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}"
    out = tmp_path / "ann"
    t0 = time.monotonic()
    r = _run("--out", str(out), "--base-url", url, "--source-base-url", url, "--timeout", "5")
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 3, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach ") and "check the network" in lines[0]
    assert time.monotonic() - t0 < 15  # the first unreachable file stops the rest
    assert not out.exists()


def test_a_url_that_serves_no_such_file_is_exit_2(tmp_path):
    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(404)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = _run("--out", str(tmp_path / "ann"), "--base-url", f"http://127.0.0.1:{srv.server_address[1]}/x",
                 "--no-source")
    finally:
        srv.shutdown()
        srv.server_close()
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and "HTTP 404" in lines[0] and "and 8 more" in lines[0] and "--ref" in lines[0]
    assert not (tmp_path / "ann").exists()


def test_a_local_copy_downloads_every_file(tmp_path, shared_data):
    out = tmp_path / "ann"
    r = _run("--out", str(out), "--base-url", shared_data.resolve().as_uri(), "--no-source")
    assert r.returncode == 0, r.stderr
    assert len(list(out.glob("*.json"))) == 9 and not list(out.glob("*.part"))
    r = _run("--out", str(out), "--base-url", (tmp_path / "nowhere").as_uri(), "--no-source", "--force")
    assert r.returncode == 2 and "no such file" in r.stderr  # a wrong local copy is a mistake, not an outage
