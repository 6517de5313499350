"""Issue 18, item 7: the white agent under malformed traffic stays flat in memory and logs one line per refusal.

A real ``python -m ego_adr.agents.white`` (tiny model, CPU) on loopback gets 3,000 refused 50 KB requests (text
without the message tags); its resident memory after all of them must be within 10% of its memory after the
first 100 (the SDK's in-memory task store used to keep every refused request: 814 -> 1,060 MB), and its log must
hold one line per refusal and no traceback (it used to write two ERROR tracebacks each). Bounded: a fixed count,
loopback only, four client threads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads resident memory from /proc")
def test_white_agent_memory_and_log_stay_flat_under_3000_refused_requests(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    log = tmp_path / "white.log"
    proc = subprocess.Popen([sys.executable, "-m", "ego_adr.agents.white", "--model", "tiny", "--video-root",
                             str(tmp_path), "--port", "0", "--device", "cpu", "--max-request-bytes", "65536"],
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=env)
    try:
        url = next(line.split()[-1] for line in proc.stdout if "http://127.0.0.1:" in line)
        text = "x" * 50_000

        def send(n: int) -> None:
            with httpx.Client(timeout=60) as c:
                for _ in range(n):
                    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                            "params": {"message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                                                   "parts": [{"kind": "text", "text": text}]}}}
                    r = c.post(url, json=body)
                    assert r.status_code == 200 and r.json()["error"]["code"] == -32602  # refused: invalid

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(send, [25] * 4))
            after_100 = _rss_mb(proc.pid)
            list(pool.map(send, [725] * 4))
        after_3000 = _rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert after_3000 <= 1.10 * after_100, (after_100, after_3000)
    lines = log.read_text().splitlines()
    refusals = [x for x in lines if "refused (invalid)" in x]
    assert len(refusals) == 3000 and not any("Traceback" in x for x in lines)
    assert len(lines) - len(refusals) < 20  # startup lines only: nothing else per request
    assert max(len(x) for x in refusals) < 400  # the 50 KB text is not copied into the log
