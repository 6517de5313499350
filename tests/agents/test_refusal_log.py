"""Issue 28, item 10: one log line per refused request, whichever layer of the a2a SDK refuses it.

Before, the 0.3 compat adapter logged a 12-15 line pydantic traceback for ``message/send`` with empty or missing
``params`` (620 tracebacks, 9,925 lines for 3,100 malformed requests), the 1.0 dispatcher one WARNING line per
refusal, its protobuf validation none at all, and the agent its own line for its own refusals. A real
``python -m ego_adr.agents.white`` (tiny model, CPU, loopback) gets each kind of malformed request below three
times; its log must grow by exactly one ``refused (...)`` line per request and hold no traceback. Bounded: a
fixed list, one client, loopback only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
V10 = {"A2A-Version": "1.0"}
#: (name, headers, body, the refusal's kind in the log line)
MALFORMED = [
    ("0.3 message/send, empty params", {}, {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}},
     "invalid request"),
    ("0.3 message/send, no params", {}, {"jsonrpc": "2.0", "id": 1, "method": "message/send"}, "invalid request"),
    ("0.3 params a list, no id", {}, {"jsonrpc": "2.0", "method": "message/send", "params": []}, "invalid request"),
    ("0.3 tasks/get, empty params", {}, {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {}},
     "invalid request"),
    ("0.3 message without tags", {}, {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}},
     "invalid"),
    ("unknown method", {}, {"jsonrpc": "2.0", "id": 1, "method": "nope", "params": {}}, "unknown method"),
    ("1.0 method without the version header", {}, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                                    "params": {}}, "version"),
    ("1.0 SendMessage, empty params", V10, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}},
     "invalid"),
    ("1.0 GetTask, empty params", V10, {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}, "invalid"),
    ("not JSON", {}, "garbage{", "not JSON"),
    ("a JSON array", {}, [1, 2], "invalid request"),
    ("over --max-request-bytes", {}, {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                      "params": {"pad": "x" * 5000}}, "too large"),
]


@pytest.mark.slow  # starts the agent (see tests/README.md)
def test_every_refusal_is_one_log_line_whichever_sdk_layer_refuses(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    log = tmp_path / "white.log"
    proc = subprocess.Popen([sys.executable, "-m", "ego_adr.agents.white", "--model", "tiny", "--video-root",
                             str(tmp_path), "--port", "0", "--device", "cpu", "--max-request-bytes", "4096"],
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=env)
    try:
        url = next(line.split()[-1] for line in proc.stdout if "http://127.0.0.1:" in line)
        with httpx.Client(timeout=60) as c:
            c.get(f"{url}/.well-known/agent-card.json").raise_for_status()
            start = len(log.read_text().splitlines())
            for _ in range(3):
                for _name, headers, body, _kind in MALFORMED:
                    content = body if isinstance(body, str) else json.dumps(body)
                    r = c.post(url, content=content, headers={"content-type": "application/json", **headers})
                    assert "error" in r.json(), r.text
        lines = log.read_text().splitlines()[start:]  # before the stop, whose own line is not a refusal
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in log.read_text(), log.read_text()
    assert len(lines) == 3 * len(MALFORMED), "\n".join(lines)
    for i, line in enumerate(lines):
        name, _, _, kind = MALFORMED[i % len(MALFORMED)]
        assert f" INFO refused ({kind}): " in line, (name, line)
        assert len(line) < 400  # what was sent is not copied into the log
